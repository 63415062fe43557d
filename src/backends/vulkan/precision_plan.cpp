#include "backends/vulkan/precision_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kestrel::vulkan {
namespace {

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float16; }

std::string node_label(const ir::Node& n) { return "node '" + n.name + "' (" + n.op_type + ")"; }

std::string fmt(const char* f, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The largest finite magnitude of value v: from the run's sample, or, for
// an initializer the run did not sample, from the graph.
double range_of(const ir::Graph& g, const std::vector<ValueSample>& s, int v) {
  if (s[size_t(v)].seen) return s[size_t(v)].max_abs;
  auto it = g.initializers.find(v);
  if (it == g.initializers.end() || !is_float(it->second.dtype())) return 0;
  double m = 0;
  for (float x : it->second.to_f32())
    if (std::isfinite(x)) m = std::max(m, double(std::abs(x)));
  return m;
}

}  // namespace

ValueSample sample_of(const Tensor& t) {
  ValueSample s;
  if (!t.defined() || !is_float(t.dtype()) || (t.raw() == nullptr && t.numel() > 0)) return s;
  std::vector<float> v = t.to_f32();
  s.seen = true;
  s.numel = int64_t(v.size());
  for (float x : v)
    if (std::isfinite(x)) s.max_abs = std::max(s.max_abs, double(std::abs(x)));
  const int64_t stride = std::max<int64_t>(1, (s.numel + kSampleSize - 1) / kSampleSize);
  for (int64_t i = 0; i < s.numel; i += stride) s.sample.push_back(v[size_t(i)]);
  return s;
}

double relative_error(const ValueSample& ref, const ValueSample& got) {
  if (!ref.seen || !got.seen || ref.sample.size() != got.sample.size()) return 0;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.sample.size(); ++i) {
    const float a = ref.sample[i], b = got.sample[i];
    const bool fa = std::isfinite(a), fb = std::isfinite(b);
    if (!fa || !fb) {
      if (fa != fb || (std::isnan(a) != std::isnan(b)) || (!std::isnan(a) && a != b))
        return std::numeric_limits<double>::infinity();
      continue;
    }
    diff += (double(a) - b) * (double(a) - b);
    norm += double(a) * a;
  }
  if (norm == 0) return diff == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / norm);
}

size_t PrecisionPlan::half_nodes() const { return size_t(std::count(half.begin(), half.end(), uint8_t(1))); }

PrecisionPlan plan_from_ranges(const ir::Graph& g, const std::vector<HalfEligibility>& eligible,
                               const std::vector<ValueSample>& fp32) {
  PrecisionPlan p;
  p.half.assign(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (eligible[i] == HalfEligibility::No) continue;
    const ir::Node& n = g.nodes[i];
    int widest = -1;
    double widest_range = 0;
    std::vector<const std::vector<int>*> stored_half = {&n.inputs};
    if (eligible[i] == HalfEligibility::Yes) stored_half.push_back(&n.outputs);
    for (const std::vector<int>* vs : stored_half)
      for (int v : *vs) {
        if (v < 0 || !is_float(g.values[size_t(v)].dtype)) continue;
        const double r = range_of(g, fp32, v);
        if (r > widest_range) widest_range = r, widest = v;
      }
    if (widest_range <= kHalfRange) {
      p.half[i] = 1;
    } else {
      p.kept_fp32.push_back(node_label(n) + ": '" + g.values[size_t(widest)].name + "' reaches " +
                            fmt("%.3g", widest_range));
    }
  }
  return p;
}

bool promote(const ir::Graph& g, PrecisionPlan& plan, const std::vector<ValueSample>& fp32,
             const std::vector<ValueSample>& mixed) {
  auto err = [&](int v) { return v < 0 ? 0.0 : relative_error(fp32[size_t(v)], mixed[size_t(v)]); };
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs)
      if (v >= 0) producer[size_t(v)] = int(i);

  std::vector<uint8_t> go(g.nodes.size(), 0);
  std::vector<std::string> why(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    double in = 0, out = 0;
    for (int v : n.inputs) in = std::max(in, err(v));
    for (int v : n.outputs) out = std::max(out, err(v));
    if (!(out > kNodeError && out > 2 * in)) continue;
    const std::string seen = fmt("%.3g", out) + " from inputs at " + fmt("%.3g", in);
    if (plan.half[i]) {
      go[i] = 1;
      why[i] = node_label(n) + ": float16 error " + seen;
    }
    for (int v : n.inputs) {
      const int p = v >= 0 ? producer[size_t(v)] : -1;
      if (p >= 0 && plan.half[size_t(p)] && !go[size_t(p)]) {
        go[size_t(p)] = 1;
        why[size_t(p)] = node_label(g.nodes[size_t(p)]) + ": its reader " + node_label(n) + " turns it into error " + seen;
      }
    }
  }
  if (std::none_of(go.begin(), go.end(), [](uint8_t x) { return x != 0; })) return false;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (go[i]) {
      plan.half[i] = 0;
      plan.kept_fp32.push_back(why[i]);
    }
  return true;
}

std::string output_disagreement(const Tensor& a, const Tensor& b, double* cosine) {
  if (!is_float(a.dtype())) return a.same_as(b) ? "" : "an integer output differs";
  std::vector<float> x = a.to_f32(), y = b.to_f32();
  if (x.size() != y.size()) return "the shapes differ";
  double dot = 0, nx = 0, ny = 0, maxabs = 0, range = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isfinite(x[i]) != std::isfinite(y[i])) return "a non-finite value where float32 has none, or the reverse";
    if (!std::isfinite(x[i])) continue;
    dot += double(x[i]) * y[i];
    nx += double(x[i]) * x[i];
    ny += double(y[i]) * y[i];
    maxabs = std::max(maxabs, std::abs(double(x[i]) - y[i]));
    range = std::max(range, std::abs(double(x[i])));
  }
  const double cos = nx == 0 && ny == 0 ? 1 : dot / std::sqrt(nx * ny + 1e-300);
  if (cosine) *cosine = cos;
  if (cos < kMinCosine || maxabs > kMaxAbsOfRange * range + 1e-6)
    return "cosine " + fmt("%.6f", cos) + ", max abs " + fmt("%.3g", maxabs) + " of " + fmt("%.3g", range);
  return "";
}

}  // namespace kestrel::vulkan
