// How closely one output agrees with a reference output (ONNX Runtime's, or
// the original nodes' for a fused encoder's first-run check). `kestrel
// parity`, the fused-node check and the tests share this so they judge alike.
#pragma once
#include "core/tensor.h"

namespace kestrel {

struct Agreement {
  double cosine = 1;   // of the flattened tensors; 1 when both are all zeros
  double max_abs = 0;  // max |ours - ref|
  // max |ours - ref| / (max |ref| + 1e-12): the worst error relative to the
  // output's range, not elementwise (elementwise ratios explode near zero).
  double max_rel = 0;
};

// Both tensors must hold the same number of elements (shapes are the caller's
// to check). Matching non-finite values (inf == inf, NaN with NaN) agree; any
// other non-finite mismatch makes max_abs and max_rel infinite and cosine NaN.
Agreement agreement(const Tensor& ours, const Tensor& ref);

}  // namespace kestrel
