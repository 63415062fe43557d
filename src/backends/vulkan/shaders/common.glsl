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

// Element-wise shaders start their push constants with {base, n}: the host
// splits long work into bounded dispatches (mobile drivers kill a dispatch
// past ~500 ms) and folds large counts into a 2-D grid.
#define KESTREL_ELEMENTWISE_PUSH uint base; uint n;
uint kestrel_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
