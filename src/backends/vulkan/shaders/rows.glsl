// One workgroup per row: the row index and workgroup-wide reductions. The
// including shader starts its push constants with KESTREL_ROW_PUSH. The
// local size is declared here, before the functions that read
// gl_WorkGroupSize (declared later, they would see 1): 256, or 32 under
// KESTREL_SUBGROUP_ROWS, where the sums and maxima are the subgroups'
// (GL_KHR_shader_subgroup_arithmetic) and only their partials cross shared
// memory. A 768-wide row on 256 threads spent its time in the tree's
// barriers: a CLIP batch of 64 ran 26 LayerNorms of 12608 rows at 59 us each
// on an H100, four times what their bytes take.
#ifdef KESTREL_SUBGROUP_ROWS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 32) in;
#else
layout(local_size_x = 256) in;
#endif
#define KESTREL_ROW_PUSH uint row_base; uint row_end;
uint kestrel_row() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

#define KESTREL_NEG_INF uintBitsToFloat(0xff800000u)
#ifdef KESTREL_SUBGROUP_ROWS
shared float kestrel_red[32];  // a partial per subgroup (subgroups of at least 1 lane)

// The workgroup's maximum (take_max), else sum, of v: each subgroup's, then,
// where the workgroup spans several (lavapipe's 8 lanes, Mali's 16), theirs.
float kestrel_wg_reduce(float v, bool take_max) {
  float s = take_max ? subgroupMax(v) : subgroupAdd(v);
  if (gl_NumSubgroups == 1) return s;
  if (subgroupElect()) kestrel_red[gl_SubgroupID] = s;
  barrier();
  float r = kestrel_red[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) r = take_max ? max(r, kestrel_red[i]) : r + kestrel_red[i];
  barrier();  // the array is reused by the next reduction
  return r;
}
#else
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
#endif
float kestrel_wg_sum(float v) { return kestrel_wg_reduce(v, false); }
float kestrel_wg_max(float v) { return kestrel_wg_reduce(v, true); }

// A row of at most KESTREL_ROW_CACHE * 256 elements is read from memory once
// into each thread's registers (element t + 256 c in slot c), not once per
// pass: the Softmax shaders' rows of attention scores (4,096 for SAM's
// global layers) are memory-bound.
#define KESTREL_ROW_CACHE 16
