#include "backends/backend.h"

namespace kestrel::backends {

double node_flops(const ir::Node& n, const std::vector<Shape>& in, const std::vector<Shape>& out) {
  double out_elems = 0;
  for (const Shape& s : out) out_elems += double(shape_numel(s));
  auto has = [&](size_t i) { return i < in.size() && !in[i].empty(); };
  if ((n.op_type == "Conv" || n.op_type == "ConvInteger") && has(1) && in[1].size() >= 2 && !out.empty()) {
    // Each output element sums C/group * kernel taps products.
    double taps = 1;
    for (size_t d = 1; d < in[1].size(); ++d) taps *= double(in[1][d]);
    return 2 * double(shape_numel(out[0])) * taps;
  }
  if (n.op_type == "ConvTranspose" && has(0) && has(1) && in[1].size() >= 2) {
    double taps = 1;
    for (size_t d = 1; d < in[1].size(); ++d) taps *= double(in[1][d]);
    return 2 * double(shape_numel(in[0])) * taps;
  }
  if ((n.op_type == "MatMul" || n.op_type == "MatMulInteger" || n.op_type == "Gemm") && has(0) && !out.empty()) {
    double k = double(in[0].back());
    if (n.op_type == "Gemm") {
      auto it = n.attrs.find("transA");
      if (it != n.attrs.end() && it->second.i && in[0].size() == 2) k = double(in[0][0]);
    }
    return 2 * double(shape_numel(out[0])) * k;
  }
  if (n.op_type == "RopeEncoder" && has(0) && in[0].size() == 3) {
    // Per layer: QKV and output projections, scores and context, the gated MLP
    // (fc1 is 2F wide). fc2's weight [F, D] is layer 0's slot 14.
    const double b = double(in[0][0]), t = double(in[0][1]), d = double(in[0][2]);
    const int64_t side = n.attrs.count("side_inputs") ? n.attrs.at("side_inputs").i : 0;
    const size_t fc2 = size_t(1 + side + 14);  // families::kFc2Weight
    const double f = fc2 < in.size() && in[fc2].size() == 2 ? double(in[fc2][0]) : 4 * d;
    const double layers = n.attrs.count("layers") ? double(n.attrs.at("layers").i) : 0;
    return layers * (2 * b * t * d * (4 * d + 3 * f) + 4 * b * t * t * d);
  }
  if (n.op_type == "ViTDetEncoder" && has(0) && in[0].size() == 4 && n.attrs.count("windows")) {
    // Per layer: the QKV projection over the windows' tokens (padding
    // included), scores, the relative-position terms and the context per
    // window, the output projection and the MLP over the grid.
    const int64_t b = in[0][0], h = in[0][1], w = in[0][2];
    const double d = double(in[0][3]), rows = double(b * h * w);
    const size_t fc1 = size_t(1 + 12);  // families::kFc1Weight of layer 0
    const double f = fc1 < in.size() && in[fc1].size() == 2 ? double(in[fc1][1]) : 4 * d;
    double total = 0;
    for (int64_t win : n.attrs.at("windows").ints) {
      const int64_t gr = win > 0 ? win : h, gc = win > 0 ? win : w;
      const double windows = win > 0 ? double(b * ((h + win - 1) / win) * ((w + win - 1) / win)) : double(b);
      const double t = double(gr * gc), wrows = windows * t;
      total += 2 * wrows * d * 3 * d + 4 * wrows * t * d + 2 * wrows * double(gr + gc) * d + 2 * rows * d * (d + 2 * f);
    }
    return total;
  }
  if (n.op_type == "TransformerEncoder" && has(0) && in[0].size() == 3) {
    // Per layer: Q, K, V and output projections, scores and context, the MLP.
    const double b = double(in[0][0]), t = double(in[0][1]), d = double(in[0][2]);
    // families::EncoderSpec: x, side inputs (at least the mask slot), [pre-norm scale, bias], layers
    const int64_t side = n.attrs.count("side_inputs") ? n.attrs.at("side_inputs").i : 1;
    const int first = int(1 + side + (n.attrs.count("pre_norm") && n.attrs.at("pre_norm").i ? 2 : 0));
    const size_t fc1 = size_t(first + 12);  // families::kFc1Weight
    const double f = fc1 < in.size() && in[fc1].size() == 2 ? double(in[fc1][1]) : 4 * d;
    const double layers = n.attrs.count("layers") ? double(n.attrs.at("layers").i) : 0;
    return layers * (2 * b * t * d * (4 * d + 2 * f) + 4 * b * t * t * d);
  }
  return out_elems;
}

}  // namespace kestrel::backends
