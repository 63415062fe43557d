#version 450
#extension GL_GOOGLE_include_directive : require
// Batched 2-D transpose [B, R, C] -> [B, C, R] through a 32x32 shared tile
// (one padding column against bank conflicts): both the loads and the stores
// walk memory contiguously. Workgroup (x, y) covers columns 32x.., rows 32y..;
// z is the batch (from zbase).
#include "common.glsl"
layout(local_size_x = 32, local_size_y = 8) in;
layout(constant_id = 0) const int WIDE = 0;
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 0) readonly buffer Xi { int xi[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(std430, binding = 1) writeonly buffer Yi { int yi[]; };
layout(push_constant) uniform Push { uint rows; uint cols; uint zbase; } pc;
shared float tile[32][33];
shared int tilei[32][33];

void main() {
  uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
  uint c0 = gl_WorkGroupID.x * 32, r0 = gl_WorkGroupID.y * 32;
  uint plane = (pc.zbase + gl_WorkGroupID.z) * pc.rows * pc.cols;
  for (uint j = ly; j < 32; j += 8) {
    uint r = r0 + j, c = c0 + lx;
    if (r < pc.rows && c < pc.cols) {
      if (WIDE != 0) tilei[j][lx] = xi[plane + r * pc.cols + c];
      else tile[j][lx] = LD(x[plane + r * pc.cols + c]);
    }
  }
  barrier();
  for (uint j = ly; j < 32; j += 8) {
    uint c = c0 + j, r = r0 + lx;
    if (r < pc.rows && c < pc.cols) {
      if (WIDE != 0) yi[plane + c * pc.rows + r] = tilei[lx][j];
      else y[plane + c * pc.rows + r] = ST(tile[lx][j]);
    }
  }
}
