// Shared by every Kestrel compute shader. Each shader is compiled twice:
// float tensors stored as float32, and (KESTREL_F16) as float16. Arithmetic is
// always float32: load with LD(), store with ST(). Integer tensors (indices,
// booleans) are int32 in both variants.
#ifdef KESTREL_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define T float16_t
#else
#define T float
#endif
#define LD(v) float(v)
#define ST(v) T(v)
// TS: the element of a buffer on the residual stream's side (a GEMM's
// output and residual, a LayerNorm's input). A shader's _stream32 variant
// (KESTREL_FLOAT32_STREAM) keeps it float32 under float16 storage: a fused
// encoder whose stream grows past what float16 resolves keeps its stream
// float32 while every other buffer is float16 (families/encoder_schedule.h).
#ifdef KESTREL_FLOAT32_STREAM
#define TS float
#else
#define TS T
#endif

// Element-wise shaders start their push constants with {base, n}: the host
// splits long work into bounded dispatches (mobile drivers kill a dispatch
// past ~500 ms) and folds large counts into a 2-D grid.
#define KESTREL_ELEMENTWISE_PUSH uint base; uint n;
uint kestrel_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

// Two-input shaders with NumPy broadcasting over up to 6 dims (binary,
// compare, logic) share this push block (BroadcastPush on the host): the
// output's dims and each input's strides, 0 along broadcast dims.
#define KESTREL_BROADCAST_PUSH KESTREL_ELEMENTWISE_PUSH int dims[6]; int sa[6]; int sb[6];
// Sets ia and ib to the elements of a and b that output element i reads.
#define KESTREL_BROADCAST_INDEX(i, ia, ib)        \
  {                                               \
    uint rest_ = (i);                             \
    ia = 0;                                       \
    ib = 0;                                       \
    for (int d_ = 5; d_ >= 0; --d_) {             \
      uint k_ = rest_ % uint(pc.dims[d_]);        \
      rest_ /= uint(pc.dims[d_]);                 \
      ia += k_ * uint(pc.sa[d_]);                 \
      ib += k_ * uint(pc.sb[d_]);                 \
    }                                             \
  }
