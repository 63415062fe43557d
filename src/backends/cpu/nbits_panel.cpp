#include "backends/cpu/nbits_panel.h"

#include <algorithm>

#include "backends/cpu/nbits_rows.h"

namespace kestrel::backends::cpu {

void nbits4_panel(const Nbits4Weights& w, int64_t n0, int64_t n1, float* panel, int64_t ldp, CpuIsa isa) {
  const int64_t blocks = (w.K + w.block - 1) / w.block;
  int64_t n = n0;
  bool vector = false;
#if KESTREL_X86
  if (isa >= CpuIsa::Avx2) {
    for (; n + 8 <= n1; n += 8) nbits_avx2::panel8(w, n, panel + (n - n0), ldp);
    vector = true;
  }
#else
  (void)isa;
#endif
  // The columns the vector kernel did not take, and in its columns each
  // block's part past its whole groups of 16 (only a last block cut short
  // by K has one).
  for (int64_t c = n0; c < n1; ++c) {
    const bool done = vector && c < n;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t k0 = blk * w.block, live = std::min(w.block, w.K - k0);
      const int64_t from = done ? live / 16 * 16 : 0;
      if (from == live) continue;
      const float s = w.scales[c * blocks + blk];
      const int32_t z = nbits4_zero_point(w.zp, c, blk, blocks);
      const uint8_t* q = w.b + (c * blocks + blk) * (w.block / 2);
      for (int64_t j = from; j < live; ++j)
        panel[(k0 + j) * ldp + (c - n0)] = float(((q[j / 2] >> (4 * (j % 2))) & 15) - z) * s;
    }
  }
}

}  // namespace kestrel::backends::cpu
