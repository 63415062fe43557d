// One workgroup of 256 per row: the row index and workgroup-wide reductions
// through shared memory. The including shader starts its push constants with
// KESTREL_ROW_PUSH. The local size is declared here, before the functions
// that read gl_WorkGroupSize (declared later, they would see 1).
layout(local_size_x = 256) in;
#define KESTREL_ROW_PUSH uint row_base; uint row_end;
uint kestrel_row() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

#define KESTREL_NEG_INF uintBitsToFloat(0xff800000u)
shared float kestrel_red[256];

// The maximum (take_max), else the sum, of v over the workgroup (returned to all).
float kestrel_wg_reduce(float v, bool take_max) {
  uint t = gl_LocalInvocationID.x;
  kestrel_red[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      float o = kestrel_red[t + s];
      kestrel_red[t] = take_max ? max(kestrel_red[t], o) : kestrel_red[t] + o;
    }
    barrier();
  }
  float r = kestrel_red[0];
  barrier();  // the array is reused by the next reduction
  return r;
}
float kestrel_wg_sum(float v) { return kestrel_wg_reduce(v, false); }
float kestrel_wg_max(float v) { return kestrel_wg_reduce(v, true); }

// A row of at most KESTREL_ROW_CACHE * 256 elements is read from memory once
// into each thread's registers (element t + 256 c in slot c), not once per
// pass: the Softmax shaders' rows of attention scores (4,096 for SAM's
// global layers) are memory-bound.
#define KESTREL_ROW_CACHE 16
