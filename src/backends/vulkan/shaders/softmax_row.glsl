// The body every attention and Softmax shader shares (softmax.comp,
// masked_softmax.comp, relpos_softmax.comp): one row per workgroup
// (rows.glsl), the maximum subtracted before exp, float32 sums. The
// includer defines, before including this:
//   float score(uint j)                     the row's element j (-inf: left out)
//   void put(uint j, float e, float m, float s)   writes element j's result
//                                           from its score e, the row's
//                                           maximum m and sum of exp(e - m) s
// A row of at most KESTREL_ROW_CACHE * 256 elements is read once, into
// registers; a longer one once per pass (score is called again).

// Softmax of the row's n elements. A row with no finite maximum (every
// element left out, or an infinity) writes nothing and returns false,
// unless shift_empty: then it is shifted by 0 and written (Softmax's NaN).
bool softmax_row(uint n, bool shift_empty) {
  uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const bool cached = n <= KESTREL_ROW_CACHE * wg;
  float v[KESTREL_ROW_CACHE];
  float m = KESTREL_NEG_INF;
  if (cached) {
    [[unroll]] for (uint c = 0; c < KESTREL_ROW_CACHE; ++c) {
      uint j = t + c * wg;
      v[c] = j < n ? score(j) : KESTREL_NEG_INF;
      m = max(m, v[c]);
    }
  } else {
    for (uint j = t; j < n; j += wg) m = max(m, score(j));
  }
  m = kestrel_wg_max(m);
  if (isinf(m)) {
    if (!shift_empty) return false;
    m = 0.0;
  }
  float s = 0.0;
  if (cached) {
    [[unroll]] for (uint c = 0; c < KESTREL_ROW_CACHE; ++c)
      if (t + c * wg < n) s += exp(v[c] - m);
  } else {
    for (uint j = t; j < n; j += wg) s += exp(score(j) - m);
  }
  s = kestrel_wg_sum(s);
  if (cached) {
    [[unroll]] for (uint c = 0; c < KESTREL_ROW_CACHE; ++c) {
      uint j = t + c * wg;
      if (j < n) put(j, v[c], m, s);
    }
  } else {
    for (uint j = t; j < n; j += wg) put(j, score(j), m, s);
  }
  return true;
}
