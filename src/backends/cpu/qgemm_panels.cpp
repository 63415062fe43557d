#include "backends/cpu/qgemm_panels.h"

#include <cstddef>

namespace kestrel::backends::cpu {

template <typename W>
QGemmPanels pack_qgemm_panels(const W* w, int64_t K, int64_t N, int32_t c) {
  const int64_t K4 = qgemm_k4(K), NP = (N + 15) / 16;
  QGemmPanels p;
  p.panels.assign(std::size_t(NP * K4 * 64), 0);
  p.col_sums.assign(std::size_t(N), 0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      const int8_t v = int8_t(int32_t(w[k * N + n]) - c);
      p.panels[std::size_t(((n / 16 * K4 + k / 4) * 16 + n % 16) * 4 + k % 4)] = v;
      p.col_sums[std::size_t(n)] += v;
    }
  return p;
}

template QGemmPanels pack_qgemm_panels(const uint8_t*, int64_t, int64_t, int32_t);
template QGemmPanels pack_qgemm_panels(const int8_t*, int64_t, int64_t, int32_t);

}  // namespace kestrel::backends::cpu
