// Activations by number, shared by the unary shader and the fused epilogues
// of Conv/Gemm/MatMul (backends/vulkan/ops/activation_kinds.h lists them).
// a, b are the op's parameters (alpha, beta, min, max ...).
float kestrel_erf(float x) {
  // Numerical Recipes' erfc (fractional error < 1.2e-7 everywhere).
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

float kestrel_tanh(float x) {
  // tanh() of large |x| overflows exp inside some drivers: clamp first.
  float c = clamp(x, -15.0, 15.0);
  float e = exp(2.0 * c);
  return (e - 1.0) / (e + 1.0);
}

float kestrel_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

float activate(int kind, float x, float a, float b) {
  switch (kind) {
    case 0: return x;                                        // none / Identity
    case 1: return x < 0.0 ? 0.0 : x;                        // Relu (NaN passes)
    case 2: return x < a ? a : (x > b ? b : x);              // Clip
    case 3: return x < 0.0 ? x * a : x;                      // LeakyRelu
    case 4: return clamp(a * x + b, 0.0, 1.0);               // HardSigmoid
    case 5: return kestrel_sigmoid(x);                       // Sigmoid
    case 6: return kestrel_tanh(x);                          // Tanh
    case 7: return exp(x);                                   // Exp
    case 8: return log(x);                                   // Log
    case 9: return sqrt(x);                                  // Sqrt
    case 10: return abs(x);                                  // Abs
    case 11: return -x;                                      // Neg
    case 12: return 1.0 / x;                                 // Reciprocal
    case 13: return floor(x);                                // Floor
    case 14: return ceil(x);                                 // Ceil
    case 15: return roundEven(x);                            // Round (half to even)
    case 16: return kestrel_erf(x);                          // Erf
    case 17: return sin(x);                                  // Sin
    case 18: return cos(x);                                  // Cos
    case 19: return x < 0.0 ? a * (exp(x) - 1.0) : x;        // Elu
    case 20: return x <= 0.0 ? b * a * (exp(x) - 1.0) : b * x;  // Selu (a alpha, b gamma)
    case 21: return x * clamp(x / 6.0 + 0.5, 0.0, 1.0);      // HardSwish
    case 22: return x > 20.0 ? x : log(1.0 + exp(x));        // Softplus
    case 23: return x / (1.0 + abs(x));                      // Softsign
    case 24: return 0.5 * x * (1.0 + kestrel_erf(x * 0.70710678118654752));  // Gelu (erf)
    case 25: return 0.5 * x * (1.0 + kestrel_tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));  // Gelu tanh
    case 26: return x * kestrel_sigmoid(x);                  // SiLU (x * Sigmoid(x))
    case 27: return x * kestrel_tanh(x > 20.0 ? x : log(1.0 + exp(x)));  // Mish
    case 28: return x > a ? x : 0.0;                         // ThresholdedRelu
    case 29: return sign(x);                                 // Sign
    case 30: return max(0.0, x) + min(0.0, a * (exp(x / a) - 1.0));  // Celu
    case 31: return tan(x);                                  // Tan
    // asin and acos through atan: lavapipe's asin is off by 4e-4 near +-1,
    // where (1 - x)(1 + x) keeps the cosine's digits and atan stays exact
    // to 1.5e-6 (tests/backend_ops, Asin and Acos cases). Past +-1 the
    // answer is NaN, as on the CPU (GLSL leaves sqrt of a negative undefined).
    case 32: return abs(x) > 1.0 ? uintBitsToFloat(0x7fc00000u) : atan(x, sqrt((1.0 - x) * (1.0 + x)));  // Asin
    case 33: return abs(x) > 1.0 ? uintBitsToFloat(0x7fc00000u) : atan(sqrt((1.0 - x) * (1.0 + x)), x);  // Acos
    case 34: return atan(x);                                 // Atan
    case 35: return x * kestrel_sigmoid(a * x);              // x * Sigmoid(a x) (quick GELU a=1.702)
    case 36: return x * clamp(a * x + b, 0.0, 1.0);          // x * HardSigmoid(x)
    case 37: return (x * clamp(x + 3.0, 0.0, 6.0)) / 6.0;    // x * Clip(x + 3, 0, 6) / 6
  }
  return x;
}
