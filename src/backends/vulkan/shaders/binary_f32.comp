#version 450
// Elementwise binary op on two same-length float32 buffers: c = a OP b.
// OP is a specialization constant (0 add, 1 sub, 2 mul, 3 div). Element
// counts past 65535 workgroups use a 2-D grid: the index folds in y.
layout(local_size_x = 256) in;
layout(constant_id = 0) const int OP = 0;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (i >= pc.n) return;
  float x = a[i], y = b[i];
  c[i] = OP == 0 ? x + y : OP == 1 ? x - y : OP == 2 ? x * y : x / y;
}
