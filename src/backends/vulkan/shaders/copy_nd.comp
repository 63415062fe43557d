#version 450
#extension GL_GOOGLE_include_directive : require
// Strided copy over up to 6 dims: element i of the view (dims) reads
// x[sbase + sum c_k * ss_k] and writes y[dbase + sum c_k * ds_k]. Serves
// Transpose, Slice (negative strides), Concat/Split (offset slices), Expand
// (zero strides), Tile (TILE: the source coordinate wraps at smod) and
// DepthToSpace/SpaceToDepth. Data movement only: WIDE moves 32-bit words
// (integer tensors, stored as int32 in both variants), else T elements.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const int WIDE = 0;
layout(constant_id = 1) const int TILE = 0;
layout(constant_id = 2) const int RANK = 6;  // dims before 6 - RANK are 1
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 0) readonly buffer Xi { int xi[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(std430, binding = 1) writeonly buffer Yi { int yi[]; };
layout(push_constant) uniform Push {
  KESTREL_ELEMENTWISE_PUSH
  int sbase;
  int dbase;
  int dims[6];
  int ss[6];
  int ds[6];
  int smod[6];
} pc;

void main() {
  uint i = pc.base + kestrel_index();
  if (i >= pc.n) return;
  int rest = int(i), s = pc.sbase, d = pc.dbase;
  for (int k = 5; k >= 6 - RANK; --k) {
    int c = rest % pc.dims[k];
    rest /= pc.dims[k];
    d += c * pc.ds[k];
    if (TILE != 0) c %= pc.smod[k];
    s += c * pc.ss[k];
  }
  if (WIDE != 0) yi[d] = xi[s];
  else y[d] = x[s];
}
