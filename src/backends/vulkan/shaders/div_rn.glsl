// x / y rounded to the nearest float, ties to even: IEEE division, as the
// CPU divides. Vulkan lets a driver's division be off by up to 2.5 ulp
// (NVIDIA's is), and the quantizers round x / scale to an integer: a quotient
// a bit off at .5 moves a quantized value one step from the CPU's (and ONNX
// Runtime's), which then carries through every layer after. So the driver's
// quotient q is corrected here: the remainder r = x - q y is exact in float
// (Dekker's product of q and y, split by Veltkamp, then two exact
// subtractions), and q moves one float at a time while r says the exact
// quotient q + r / y lies past half of q's spacing. Adds, subtractions and
// multiplications are correctly rounded in Vulkan; `precise` keeps them from
// fusing. Quotients and divisors far from 1 (outside 2^-30 to 2^30, where
// the product's low parts could fall below float's normal range, which a
// driver may flush) keep the driver's value: a quantizer's quotient there
// rounds to zero or saturates either way, and scales are not that small.
float div_rn(float x, float y) {
  precise float q = x / y;
  const float lo = 9.31322575e-10, hi = 1073741824.0;  // 2^-30, 2^30
  float aq = abs(q), ay = abs(y);
  if (!(aq > lo && aq < hi && ay > lo && ay < hi)) return q;
  for (int step = 0; step < 4; ++step) {
    // q y = p + e exactly.
    precise float cq = 4097.0 * q, qh = cq - (cq - q), ql = q - qh;
    precise float cy = 4097.0 * y, yh = cy - (cy - y), yl = y - yh;
    precise float p = q * y;
    precise float e = ((qh * yh - p) + qh * yl + ql * yh) + ql * yl;
    precise float r = (x - p) - e;
    if (r == 0.0) return q;
    // Half of q's spacing above and below its magnitude, times |y|: below a
    // power of two the spacing halves.
    int ex;
    float m = frexp(abs(q), ex);
    float half_up = ldexp(abs(y), ex - 25), half_down = m == 0.5 ? 0.5 * half_up : half_up;
    bool larger = (r > 0.0) == (y > 0.0) == (q > 0.0);  // the exact quotient's magnitude is past |q|
    float bound = larger ? half_up : half_down;
    if (abs(r) < bound || (abs(r) == bound && (floatBitsToUint(q) & 1u) == 0u)) return q;
    q = uintBitsToFloat(floatBitsToUint(q) + (larger ? 1u : 0xffffffffu));  // the next float in magnitude
  }
  return q;
}
