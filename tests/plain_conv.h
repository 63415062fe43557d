// The convolution as ONNX defines it, in double, for the CPU kernels'
// tests (cpu_direct_conv_test.cpp, cpu_nhwc_conv_test.cpp,
// cpu_nhwc_depthwise_test.cpp): x [N, C, H, W], w [M, C / group, KH, KW],
// r (null: none) and the result [N, M, OH, OW]; the activation's parameters
// a, b as ops::activate takes them. Also the transposes between planar and
// channels-last tensors the channels-last kernels' tests compare through.
#pragma once
#include <vector>

#include "ops/activation.h"
#include "ops/conv.h"
#include "ops/conv_util.h"

namespace kestrel {

inline std::vector<double> plain_conv(const ops::ConvShape& s, const std::vector<float>& x, const std::vector<float>& w,
                                      const std::vector<float>& b, const std::vector<float>* r, ops::Activation act,
                                      float a = 0, float b_ = 0) {
  const ops::Window2D v(s.g);
  const int64_t OS = v.OH * v.OW, KS = v.KH * v.KW;
  std::vector<double> y(size_t(s.N * s.M * OS));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t oh = 0; oh < v.OH; ++oh)
        for (int64_t ow = 0; ow < v.OW; ++ow) {
          const int64_t gi = m / s.Mg, at = (n * s.M + m) * OS + oh * v.OW + ow;
          double sum = b[size_t(m)];
          for (int64_t c = 0; c < s.Cg; ++c)
            for (int64_t kh = 0; kh < v.KH; ++kh)
              for (int64_t kw = 0; kw < v.KW; ++kw) {
                const int64_t ih = oh * v.SH - v.PH + kh * v.DH, iw = ow * v.SW - v.PW + kw * v.DW;
                if (ih < 0 || iw < 0 || ih >= v.H || iw >= v.W) continue;
                sum += double(x[size_t(((n * s.C + gi * s.Cg + c) * v.H + ih) * v.W + iw)]) *
                       w[size_t((m * s.Cg + c) * KS + kh * v.KW + kw)];
              }
          if (r) sum += (*r)[size_t(at)];
          y[size_t(at)] = ops::activate(act, a, b_, float(sum));
        }
  return y;
}

// A 2-D layer's shape from its attributes, the output size computed.
inline ops::ConvShape conv_shape_2d(int64_t N, int64_t C, int64_t M, int64_t group, const std::vector<int64_t>& in,
                                    const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                                    const std::vector<int64_t>& dil, const std::vector<int64_t>& pad_begin,
                                    const std::vector<int64_t>& pad_end) {
  ops::ConvShape s{N, C, M, group, C / group, M / group, {}};
  ops::WindowGeom& g = s.g;
  g.nd = 2;
  g.in = in, g.kernel = kernel, g.stride = stride, g.dil = dil, g.pad_begin = pad_begin, g.pad_end = pad_end;
  for (size_t d = 0; d < 2; ++d)
    g.out.push_back((in[d] + pad_begin[d] + pad_end[d] - dil[d] * (kernel[d] - 1) - 1) / stride[d] + 1);
  return s;
}

// [N, H, W, C] as [N, C, H, W] (to_planar) and back.
inline std::vector<float> to_planar(const std::vector<float>& t, int64_t N, int64_t H, int64_t W, int64_t C) {
  std::vector<float> p(t.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < H * W; ++i)
      for (int64_t c = 0; c < C; ++c) p[size_t((n * C + c) * H * W + i)] = t[size_t((n * H * W + i) * C + c)];
  return p;
}
inline std::vector<double> to_channels_last(const std::vector<double>& p, int64_t N, int64_t H, int64_t W, int64_t C) {
  std::vector<double> t(p.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < H * W; ++i)
      for (int64_t c = 0; c < C; ++c) t[size_t((n * H * W + i) * C + c)] = p[size_t((n * C + c) * H * W + i)];
  return t;
}

}  // namespace kestrel
