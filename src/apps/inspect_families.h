// What `kestrel inspect` says about transformer families: the fused nodes
// with their spec and share of the model's FLOPs, the nodes left outside
// them, and encoder-like stacks no family took.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "apps/cli.h"
#include "families/families.h"

namespace kestrel::cli {

struct OutsideNode {
  std::string name, op, where;  // where: "before" or "after" the first fused node
};

struct FamiliesView {
  families::ClaimReport report;
  bool measured = false;  // FLOPs come from one CPU run on synthesized inputs
  double total_flops = 0;
  std::vector<double> fused_flops;  // per claim
  std::vector<OutsideNode> outside;
  std::string note;  // why FLOPs could not be measured
};

// Claims families on a copy of `g` as a session would; with a claim, runs the
// model once on the CPU (synthesized inputs, see --dim) for the FLOPs split.
FamiliesView inspect_families(const Args& a, const ir::Graph& g);
void print_families(const FamiliesView& v);
// Adds "families", "unclaimed_encoders" and "outside_fused" to j.
void add_families_json(const FamiliesView& v, nlohmann::ordered_json& j);

}  // namespace kestrel::cli
