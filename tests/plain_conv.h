// The convolution as ONNX defines it, in double, for the CPU kernels'
// tests (cpu_direct_conv_test.cpp, cpu_nhwc_conv_test.cpp): x [N, C, H, W],
// w [M, C / group, KH, KW], r (null: none) and the result [N, M, OH, OW].
#pragma once
#include <vector>

#include "ops/activation.h"
#include "ops/conv.h"
#include "ops/conv_util.h"

namespace kestrel {

inline std::vector<double> plain_conv(const ops::ConvShape& s, const std::vector<float>& x, const std::vector<float>& w,
                                      const std::vector<float>& b, const std::vector<float>* r, ops::Activation act) {
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
          y[size_t(at)] = ops::activate(act, 0, 0, float(sum));
        }
  return y;
}

}  // namespace kestrel
