#include "backends/cpu/qconv_weights.h"

#include <cstddef>

#include "core/cpu_isa.h"

namespace kestrel::backends::cpu {

bool qconv_packed_product() { return cpu_isa() >= CpuIsa::Avx2 || cpu_arm_dotprod(); }

bool qconv_needs_sums(const std::vector<int32_t>& wz, int32_t c) {
  for (int32_t z : wz)
    if (z != c) return true;
  return false;
}

QConvWeights pack_qconv_weights(const std::vector<int32_t>& w, const std::vector<int32_t>& wz, int64_t M, int64_t group,
                                int64_t Cg, int64_t taps, int32_t c) {
  const int64_t Mg = M / group, K = Cg * taps, K4 = (Cg + 3) / 4 * taps;
  const bool sums = qconv_needs_sums(wz, c);
  const int64_t M8 = qconv_rows8(Mg, sums);
  QConvWeights p;
  p.rows.assign(std::size_t(group * M8 * K4 * 4), 0);
  p.row_sums.assign(std::size_t(M), 0);
  auto at = [&](int64_t k) { return (k / taps / 4 * taps + k % taps) * 4 + k / taps % 4; };
  for (int64_t m = 0; m < M; ++m) {
    int8_t* row = p.rows.data() + ((m / Mg) * M8 + m % Mg) * K4 * 4;
    int32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const int8_t v = int8_t(w[std::size_t(m * K + k)] - c);
      row[at(k)] = v;
      sum += v;
    }
    p.row_sums[std::size_t(m)] = sum;
  }
  if (sums)
    for (int64_t gi = 0; gi < group; ++gi)
      for (int64_t k = 0; k < K; ++k) p.rows[std::size_t((gi * M8 + Mg) * K4 * 4 + at(k))] = 1;
  return p;
}

}  // namespace kestrel::backends::cpu
