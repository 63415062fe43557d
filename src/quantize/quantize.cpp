#include "quantize/quantize.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <cmath>
#include <set>

#include "core/compare.h"
#include "core/error.h"
#include "quantize/qdq_graph.h"
#include "runtime/session.h"

namespace kestrel::quantize {
namespace {

// How many values of each tensor percentile and entropy calibration keep in
// all (a strided sample of every run): enough for a 99.999th percentile or a
// 2048-bin histogram to mean something, small enough for a hundred tensors
// over a hundred samples.
constexpr size_t kPercentileSample = size_t(1) << 20;

struct Stats {
  Range range{INFINITY, -INFINITY};
  std::vector<float> sample;
  bool is_float = true;
};

void observe(Stats& s, const Tensor& t, size_t budget) {
  if (t.dtype() != DType::Float32) {
    s.is_float = false;
    return;
  }
  const float* v = t.data<float>();
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(v[i])) s.range.lo = std::min(s.range.lo, v[i]), s.range.hi = std::max(s.range.hi, v[i]);
  if (budget == 0 || n == 0) return;
  const int64_t stride = std::max<int64_t>(1, n / int64_t(budget));
  for (int64_t i = 0; i < n; i += stride)
    if (std::isfinite(v[i])) s.sample.push_back(v[i]);
}

// Relative RMS error of a tensor's rounding: ||q - x|| / ||x||.
double relative_error(const float* x, const std::vector<float>& q) {
  double num = 0, den = 0;
  for (size_t i = 0; i < q.size(); ++i) num += double(q[i] - x[i]) * double(q[i] - x[i]), den += double(x[i]) * x[i];
  return den > 0 ? std::sqrt(num / den) : 0;
}

// Per target: the rounding error of its activation on one sample plus that
// of its weight, each relative to the tensor's RMS.
std::vector<double> rounding_errors(const Session& probe, const std::map<std::string, size_t>& out_index,
                                    const std::map<std::string, Tensor>& sample,
                                    const std::vector<QuantTarget>& targets,
                                    const std::map<std::string, Range>& ranges, const onnx::ModelProto& model,
                                    bool per_channel, int weight_limit) {
  const std::vector<Tensor> outs = probe.run(sample);
  std::vector<double> err;
  for (const QuantTarget& t : targets) {
    const Tensor& x = outs[out_index.at(t.activation)];
    const ActivationParams p = activation_params(ranges.at(t.activation));
    std::vector<float> q(size_t(x.numel()));
    const float* xv = x.data<float>();
    for (size_t i = 0; i < q.size(); ++i)
      q[i] = (std::clamp(std::nearbyint(xv[i] / p.scale) + float(p.zero_point), 0.0f, 255.0f) - float(p.zero_point)) * p.scale;
    const Tensor w = weight_tensor(model, t.weight);
    const QuantizedWeight qw = quantize_weight(w, per_channel ? t.weight_axis : -1, weight_limit);
    std::vector<float> wq(size_t(w.numel()));
    int64_t inner = 1;
    for (int d = qw.axis + 1; qw.axis >= 0 && d < w.rank(); ++d) inner *= w.dim(d);
    const int64_t channels = int64_t(qw.scales.size());
    for (size_t i = 0; i < wq.size(); ++i)
      wq[i] = float(qw.q.data<int8_t>()[i]) * qw.scales[qw.axis < 0 ? 0 : size_t((int64_t(i) / inner) % channels)];
    err.push_back(relative_error(xv, q) + relative_error(w.data<float>(), wq));
  }
  return err;
}

}  // namespace

Method parse_method(const std::string& name) {
  if (name == "minmax") return Method::MinMax;
  if (name == "percentile") return Method::Percentile;
  if (name == "entropy") return Method::Entropy;
  throw Error("unknown calibration method '" + name + "' (minmax, percentile or entropy)", ErrorKind::InvalidArgument);
}

const char* name_of(Method m) {
  switch (m) {
    case Method::MinMax: return "minmax";
    case Method::Percentile: return "percentile";
    case Method::Entropy: return "entropy";
  }
  return "?";
}

Report quantize_model(const std::string& path, size_t samples, const SampleSource& sample, const Options& opt,
                      const Progress& progress) {
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, samples > 0, "quantization needs at least one calibration sample");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, opt.percentile > 50 && opt.percentile <= 100,
                   "the percentile must lie in (50, 100], got ", opt.percentile);
  const std::shared_ptr<onnx::ModelProto> model = read_model(path);
  const std::string original_bytes = model->SerializeAsString();
  Report rep;
  rep.opset = default_opset(*model);
  // QuantizeLinear needs opset 10, a per-channel DequantizeLinear 13, and
  // ONNX Runtime's QDQ fusion inserts a Round (opset 11) beside a quantized
  // bias, so its loader refuses such a model at opset 10: 11 at least. An
  // older model is first converted by ONNX's own version converter (which
  // rewrites the ops whose signature changed, such as Squeeze's axes), never
  // by relabelling its opset.
  const bool want_channels = opt.per_channel.value_or(true);
  for (int needed : {want_channels ? 13 : 11, 11}) {
    if (rep.opset >= needed) break;
    try {
      onnx::ModelProto converted = *model;
      convert_opset(converted, needed);
      *model = std::move(converted);
      rep.converted_from = rep.opset;
      rep.opset = needed;
      break;
    } catch (const std::exception& e) {
      const std::string why = std::string("converting '") + path + "' from opset " + std::to_string(rep.opset) +
                              " to " + std::to_string(needed) + " failed: " + e.what();
      // Per channel was asked for, or even opset 11 is out of reach.
      KESTREL_CHECK_AS(ErrorKind::NotImplemented, !opt.per_channel.value_or(false) && needed == 13, why);
      rep.notes.push_back(why + "; weights are quantized per tensor");
    }
  }
  rep.per_channel = want_channels && rep.opset >= 13;
  const int weight_limit = opt.reduce_range ? kReducedRange : kFullRange;
  std::vector<QuantTarget> targets = find_targets(*model, &rep.skipped);
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, !targets.empty(), "'", path,
                   "' has no Conv, MatMul or Gemm with a constant float weight to quantize");

  const std::vector<std::string> sums = find_residual_sums(*model);

  // Calibration: every quantized value as an extra output.
  std::vector<std::string> names;
  for (const QuantTarget& t : targets)
    for (const std::string& v : {t.activation, t.output})
      if (!v.empty() && std::find(names.begin(), names.end(), v) == names.end()) names.push_back(v);
  for (const std::string& v : sums)
    if (std::find(names.begin(), names.end(), v) == names.end()) names.push_back(v);
  const std::string probe_bytes = with_outputs(*model, names);
  SessionOptions so = opt.session;
  const auto probe = Session::load_bytes(probe_bytes.data(), probe_bytes.size(), so);
  std::map<std::string, size_t> out_index;
  for (size_t i = 0; i < probe->outputs().size(); ++i) out_index[probe->outputs()[i].name] = i;
  std::map<std::string, Stats> stats;
  const size_t budget = opt.method == Method::MinMax ? 0 : std::max<size_t>(1024, kPercentileSample / samples);
  for (size_t s = 0; s < samples; ++s) {
    const std::vector<Tensor> outs = probe->run(sample(s));
    for (const std::string& n : names) observe(stats[n], outs[out_index.at(n)], budget);
    if (progress) progress("calibrating", s + 1, samples);
  }
  std::map<std::string, Range> ranges;
  for (auto& [n, st] : stats) {
    if (!st.is_float) continue;
    Range r = st.range;
    if (!(r.lo <= r.hi)) r = {0, 0};  // no finite value seen
    if (opt.method != Method::MinMax && !st.sample.empty()) {
      r = opt.method == Method::Percentile ? percentile_range(st.sample, (100.0 - opt.percentile) / 100.0)
                                           : entropy_range(st.sample, r);
      st.sample.clear();
      st.sample.shrink_to_fit();
    }
    ranges[n] = r;
  }
  std::vector<QuantTarget> kept;
  for (QuantTarget t : targets)
    if (ranges.count(t.activation)) {
      if (!ranges.count(t.output)) t.output.clear();  // not float32: left as it is
      kept.push_back(t);
    } else
      rep.skipped.push_back("node '" + t.name + "': its input '" + t.activation + "' is not float32");
  KESTREL_CHECK_AS(ErrorKind::InvalidArgument, !kept.empty(), "no quantizable node of '", path, "' has a float32 input");
  // What it cost: quantized models beside the original on the first samples.
  const auto original = Session::load_bytes(original_bytes.data(), original_bytes.size(), so);
  rep.checked_samples = std::min(samples, size_t(std::max(1, opt.check_samples)));
  std::vector<std::map<std::string, Tensor>> check_in;
  std::vector<std::vector<Tensor>> check_ref;
  for (size_t s = 0; s < rep.checked_samples; ++s) {
    check_in.push_back(sample(s));
    check_ref.push_back(original->run(check_in.back()));
  }
  // The model with the targets in `chosen` quantized, and its agreement.
  auto evaluate = [&](const std::vector<QuantTarget>& chosen, std::string* bytes, std::vector<OutputAgreement>* outs) {
    *bytes = qdq_model(*model, chosen, sums, ranges, rep.per_channel, opt.int4_weights, weight_limit);
    const auto quantized = Session::load_bytes(bytes->data(), bytes->size(), so);
    outs->assign(original->outputs().size(), {});
    std::vector<double> cosine_sum(outs->size(), 0.0);
    for (size_t s = 0; s < check_in.size(); ++s) {
      const std::vector<Tensor> b = quantized->run(check_in[s]);
      const std::vector<Tensor>& a = check_ref[s];
      for (size_t o = 0; o < a.size(); ++o) {
        // Non-float outputs (class ids, counts) are compared as numbers too; a
        // data-dependent output whose size changed (NMS's boxes) counts as 0.
        const Agreement ag =
            a[o].numel() == b[o].numel() ? agreement(b[o], a[o]) : Agreement{0, INFINITY, INFINITY};
        OutputAgreement& g = (*outs)[o];
        g.name = original->outputs()[o].name;
        g.min_cosine = std::min(g.min_cosine, ag.cosine);
        g.max_rel = std::max(g.max_rel, ag.max_rel);
        cosine_sum[o] += ag.cosine;
      }
    }
    double worst = 1;
    for (size_t o = 0; o < outs->size(); ++o) {
      (*outs)[o].mean_cosine = cosine_sum[o] / double(check_in.size());
      worst = std::min(worst, (*outs)[o].min_cosine);
    }
    return worst;
  };
  std::vector<QuantTarget> chosen = kept;
  rep.worst_cosine = evaluate(chosen, &rep.model, &rep.outputs);
  rep.full_cosine = rep.worst_cosine;
  if (progress) progress("checking", 1, 1);
  if (rep.worst_cosine < opt.min_cosine && kept.size() > 1) {
    // Some nodes lose too much: typically an activation whose range is set
    // by rare large values while most of it is small (YOLOX's first
    // activations span 0..120 and mostly hold single digits), so a step of
    // its range is coarse. Each node's own rounding error (activation and
    // weight, relative RMS on the first sample) ranks them; the fewest of
    // the worst are left in float that keep every output within min_cosine,
    // found by bisection (leaving more nodes in float is taken not to cost
    // agreement, as it does not in practice).
    const std::vector<double> error = rounding_errors(*probe, out_index, check_in[0], kept, ranges, *model,
                                                      rep.per_channel, weight_limit);
    std::vector<size_t> order(kept.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return error[a] > error[b]; });
    auto without_worst = [&](size_t m) {
      std::vector<bool> drop(kept.size(), false);
      for (size_t i = 0; i < m; ++i) drop[order[i]] = true;
      std::vector<QuantTarget> c;
      for (size_t t = 0; t < kept.size(); ++t)
        if (!drop[t]) c.push_back(kept[t]);
      return c;
    };
    size_t lo = 0, hi = kept.size();  // leaving lo out misses the bound, leaving hi out (all) meets it
    std::string best_bytes;
    std::vector<OutputAgreement> best_outs;
    double best = 1;
    const int steps = int(std::ceil(std::log2(double(kept.size()))));
    int step = 0;
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      std::string bytes;
      std::vector<OutputAgreement> outs;
      const double c = evaluate(without_worst(mid), &bytes, &outs);
      if (c >= opt.min_cosine)
        hi = mid, best_bytes = std::move(bytes), best_outs = std::move(outs), best = c;
      else
        lo = mid;
      if (progress) progress("searching", size_t(++step), size_t(std::max(step, steps)));
    }
    if (hi < kept.size()) {
      chosen = without_worst(hi);
      rep.model = std::move(best_bytes);
      rep.outputs = std::move(best_outs);
      rep.worst_cosine = best;
      for (size_t i = 0; i < hi; ++i) {
        const QuantTarget& t = kept[order[i]];
        char buf[160];
        std::snprintf(buf, sizeof buf, "'): left in float (rounding error %.3g of its RMS) to keep every output within cosine %g",
                      error[order[i]], opt.min_cosine);
        rep.skipped.push_back("node '" + t.name + "' (reading '" + t.activation + buf);
      }
    } else {
      rep.notes.push_back("only the float model keeps every output within cosine " + std::to_string(opt.min_cosine) +
                          "; every node is quantized, at cosine " + std::to_string(rep.full_cosine));
    }
  }
  const size_t k = chosen.size();
  rep.quantized_nodes = int(k);
  if (opt.int4_weights)
    for (const QuantTarget& t : chosen) rep.int4_nodes += model->graph().node(t.node).op_type() == "MatMul";
  return rep;
}

}  // namespace kestrel::quantize
