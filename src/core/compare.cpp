#include "core/compare.h"

#include <cmath>
#include <limits>

namespace kestrel {

Agreement agreement(const Tensor& ours, const Tensor& ref) {
  KESTREL_CHECK(ours.numel() == ref.numel(), "agreement: ", shape_str(ours.shape()), " and ", shape_str(ref.shape()),
                " hold different numbers of elements");
  std::vector<float> a = ours.to_f32(), b = ref.to_f32();
  double dot = 0, na = 0, nb = 0, max_abs = 0, max_ref = 0;
  bool mismatch = false;
  for (size_t i = 0; i < a.size(); ++i) {
    double x = a[i], y = b[i];
    if (!std::isfinite(x) || !std::isfinite(y)) {
      bool same = (std::isnan(x) && std::isnan(y)) || x == y;
      mismatch |= !same;
      continue;
    }
    dot += x * y;
    na += x * x;
    nb += y * y;
    max_abs = std::max(max_abs, std::abs(x - y));
    max_ref = std::max(max_ref, std::abs(y));
  }
  Agreement r;
  if (mismatch) {
    double inf = std::numeric_limits<double>::infinity();
    return {std::numeric_limits<double>::quiet_NaN(), inf, inf};
  }
  if (na == 0 && nb == 0) r.cosine = 1;
  else if (na == 0 || nb == 0) r.cosine = 0;
  else r.cosine = dot / (std::sqrt(na) * std::sqrt(nb));
  r.max_abs = max_abs;
  r.max_rel = max_abs / (max_ref + 1e-12);
  return r;
}

}  // namespace kestrel
