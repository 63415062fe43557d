#include "backends/cpu/nbits_rows.h"

#include <algorithm>

namespace kestrel::backends::cpu {
namespace {

int64_t whole_groups(int64_t live) { return live / 16 * 16; }

}  // namespace

void NbitsRows::prepare() {
  const int64_t blocks = (K + block - 1) / block;
  pairs.assign(size_t(M * K), 0.f);
  sums.assign(size_t(M * blocks), 0.f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t k0 = blk * block, whole = whole_groups(std::min(block, K - k0));
      float s = 0;
      for (int64_t j = 0; j < whole; ++j) {
        const float v = a[m * K + k0 + j];
        const int64_t g = j / 16 * 16, i = j % 16;
        pairs[size_t(m * K + k0 + g + (i % 2) * 8 + i / 2)] = v;
        s += v;
      }
      sums[size_t(m * blocks + blk)] = s;
    }
}

void nbits4_rows(const NbitsRows& r, int64_t n0, int64_t n1, float* y, int64_t ldy, CpuIsa isa) {
  const int64_t blocks = (r.K + r.block - 1) / r.block;
  for (int64_t n = n0; n < n1; ++n) {
    float acc[kNbitsRowsAtMost] = {};
    bool vector = false;
#if KESTREL_X86
    if (isa >= CpuIsa::Avx2) {
      nbits_avx2::rows(r.M, r.K, r.block, r.pairs.data(), r.sums.data(), r.b, r.scales, r.zp, n, acc);
      vector = true;
    }
#else
    (void)isa;
#endif
    // (Blocks are whole groups of 16 but the last, which K may cut short.)
    for (int64_t blk = vector ? blocks - 1 : 0; blk < blocks; ++blk) {
      const int64_t k0 = blk * r.block, live = std::min(r.block, r.K - k0);
      const int32_t z = nbits4_zero_point(r.zp, n, blk, blocks);
      const float s = r.scales[n * blocks + blk];
      const uint8_t* q = r.b + (n * blocks + blk) * (r.block / 2);
      // The vector kernel took the whole groups; this loop the rest (all of
      // it on other CPUs), factored the same way.
      const int64_t from = vector ? whole_groups(live) : 0;
      float dot[kNbitsRowsAtMost] = {}, sum[kNbitsRowsAtMost] = {};
      for (int64_t j = from; j < live; ++j) {
        const float v = float((q[j / 2] >> (4 * (j % 2))) & 15);
        for (int64_t m = 0; m < r.M; ++m) {
          dot[m] += r.a[m * r.K + k0 + j] * v;
          sum[m] += r.a[m * r.K + k0 + j];
        }
      }
      for (int64_t m = 0; m < r.M; ++m) acc[m] += s * (dot[m] - float(z) * sum[m]);
    }
    for (int64_t m = 0; m < r.M; ++m) y[m * ldy + n] = acc[m];
  }
}

}  // namespace kestrel::backends::cpu
