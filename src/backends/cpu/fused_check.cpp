// The first-run check of fused encoder nodes (see fused_check.h).
#include "backends/cpu/fused_check.h"

#include <algorithm>
#include <cstdio>

#include "core/compare.h"
#include "families/rope_spec.h"

namespace kestrel::backends::cpu {

namespace {

// A padding-free encoder's outputs read zero at padded tokens
// (families::EncoderSchedule::padding_free): the graph's own ops, which
// compute every token, are held to that where they stand in (a mask they
// cannot read as right padding leaves them as they are).
void zero_padded_tokens(ops::KernelContext& ctx, std::vector<Tensor>& outs) {
  if (ctx.node.attr_i("padding_free", 0) == 0 || !ctx.has_input(families::RopeSpec::kMaskInput)) return;
  const Shape& x = ctx.input(0).shape();  // [batch, tokens, width], as every output
  if (x.size() != 3) return;
  const int64_t batch = x[0], tokens = x[1];
  std::vector<int64_t> lengths;
  try {
    lengths = families::right_padded_lengths(ctx.node, ctx.input(families::RopeSpec::kMaskInput), batch, tokens);
  } catch (const Error&) {
    return;
  }
  for (Tensor& y : outs) {
    if (y.rank() != 3 || y.dtype() != DType::Float32 || y.dim(0) != batch || y.dim(1) != tokens) continue;
    const int64_t width = y.dim(2);
    Tensor z = y.clone();
    float* p = z.data<float>();
    for (int64_t b = 0; b < batch; ++b)
      std::fill(p + (b * tokens + lengths[size_t(b)]) * width, p + (b + 1) * tokens * width, 0.f);
    y = std::move(z);
  }
}

}  // namespace

void run_checked(ops::KernelContext& ctx, std::vector<Tensor> (*fused)(ops::KernelContext&)) {
  const ir::Attribute* original = ctx.node.attr("original");
  if (!original || !original->g) ctx.fail("has no original subgraph");
  const int64_t id = ctx.node.attr_i("claim_id", 0);
  const Shape shape = ctx.input(0).shape();
  // The original subgraph reads the encoder's input and its side inputs (a mask).
  std::vector<Tensor> original_inputs{ctx.input(0)};
  for (int64_t i = 1; i <= ctx.node.attr_i("side_inputs", 0); ++i)
    if (ctx.has_input(int(i))) original_inputs.push_back(ctx.input(int(i)));  // an absent mask slot is skipped
  ops::FusedChecks& checks = ctx.fused_checks();
  const ops::FusedChecks::State state = checks.state(id, shape);
  std::vector<Tensor> outs;
  if (state == ops::FusedChecks::State::Withdrawn) {
    outs = ctx.run_subgraph(*original->g, original_inputs);
    zero_padded_tokens(ctx, outs);
  } else if (state == ops::FusedChecks::State::Agreed) {
    outs = fused(ctx);
  } else {
    // A fused kernel that cannot run this shape (an error naming why) is a
    // disagreement too: the graph's own ops decide.
    std::string disagreement;
    try {
      outs = fused(ctx);
    } catch (const Error& e) {
      disagreement = e.what();
    }
    std::vector<Tensor> ref = ctx.run_subgraph(*original->g, original_inputs);
    zero_padded_tokens(ctx, ref);
    for (size_t i = 0; i < ref.size() && disagreement.empty(); ++i) {
      if (i >= outs.size() || outs[i].shape() != ref[i].shape()) {
        disagreement = "output " + std::to_string(i) + " has another shape";
        continue;
      }
      const Agreement a = agreement(outs[i], ref[i]);
      // Both sides compute in float32; only the order of sums differs.
      if (!(a.cosine >= 0.999999 && a.max_rel <= 1e-4))
        disagreement = "output " + std::to_string(i) + ": cosine " + std::to_string(a.cosine) + ", max error " +
                       std::to_string(a.max_rel) + " of its range";
    }
    checks.record(id, shape, disagreement.empty());
    if (!disagreement.empty()) {
      std::fprintf(stderr, "kestrel: withdrew the %s encoder claim (%s): the fused encoder disagrees with the graph's own ops (%s); running those ops instead\n",
                   ctx.node.attr_s("family", "?").c_str(), ctx.node.name.c_str(), disagreement.c_str());
      outs = ref;
    }
  }
  if (int(outs.size()) != ctx.num_outputs()) ctx.fail("computed ", outs.size(), " outputs for ", ctx.num_outputs());
  for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(int(i), std::move(outs[i]));
}


}  // namespace kestrel::backends::cpu
