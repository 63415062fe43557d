// The body of the implicit-GEMM convolution kernels (conv_gemm.comp for
// float, conv_integer.comp for 8-bit integers). The including shader declares
// buffers x, w, y and the push block pc, and defines:
//   ACC_T            the type of tiles and accumulators (float or int)
//   LOAD_X(i)        input element i as ACC_T (zero point subtracted)
//   LOAD_W(i, m)     weight element i of output channel m as ACC_T
//   MADD(a, b, acc)  acc + a * b
//   STORE_Y(i, m, v) writes accumulator v of output channel m to y[i]
//
// Convolution as an implicit GEMM, per (batch, group):
//   Y[Mg, P] = W[Mg, K] * col(X)[K, P],  K = Cg*KH*KW, P = OH*OW,
// where col(X) is never materialised: each K-chunk of it is gathered from X
// straight into shared memory. A workgroup of 256 threads computes a
// BM x BN output tile (BM = 16*TM channels, BN = 16*TN pixels); thread
// (tm, tn) owns channels tm + 16i and pixels tn + 16j, so its stores of
// neighbouring pixels are coalesced with its neighbours'. The next chunk is
// fetched into registers while the current one is multiplied.
layout(local_size_x = 256) in;
layout(constant_id = 0) const int TM = 4;  // 1, 2 or 4
layout(constant_id = 1) const int TN = 4;  // 1, 2 or 4
layout(constant_id = 2) const int KH = 1;
layout(constant_id = 3) const int KW = 1;
const int BK = 16;
const int BM = 16 * TM;
const int BN = 16 * TN;
const int KHW = KH * KW;
const int AS = BM + 1;  // As row stride: padded so the transposing stores hit distinct banks

shared ACC_T As[BK * AS];  // As[k][m]
shared ACC_T Bs[BK * BN];  // Bs[k][p]

void main() {
  const int t = int(gl_LocalInvocationID.x);
  const int z = int(gl_WorkGroupID.z);
  const int n = z / pc.groups, g = z % pc.groups;
  const int m0 = int(gl_WorkGroupID.y) * BM;
  const int p0 = (int(gl_WorkGroupID.x) + pc.tile0) * BN;
  const int P = pc.OH * pc.OW;
  const int HW = pc.H * pc.W;
  const int xbase = (n * pc.C + g * pc.Cg) * HW;
  const int wbase = g * pc.Mg * pc.K;

  // This thread's gather assignment: one pixel, TN rows of the K-chunk.
  const int bn = t % BN, bk0 = t / BN, bstep = 256 / BN;
  const int bp = p0 + bn;
  const bool bp_in = bp < P;
  const int oh = bp_in ? bp / pc.OW : 0;
  const int ih0 = oh * pc.SH - pc.PH, iw0 = (bp - oh * pc.OW) * pc.SW - pc.PW;
  // Weight assignment: one k of the chunk, TM channels.
  const int ak = t % BK, am0 = t / BK;

  ACC_T ra[4], rb[4];
  // Fetches the chunk starting at k0 into ra/rb (zeros outside the problem).
  #define FETCH(k0)                                                              \
    for (int i = 0; i < TM; ++i) {                                              \
      int m = m0 + am0 + 16 * i, k = (k0) + ak;                                 \
      ra[i] = (m < pc.Mg && k < pc.K) ? LOAD_W(wbase + m * pc.K + k, m) : ACC_T(0);  \
    }                                                                           \
    for (int j = 0; j < TN; ++j) {                                              \
      int k = (k0) + bk0 + j * bstep;                                           \
      ACC_T v = ACC_T(0);                                                       \
      if (bp_in && k < pc.K) {                                                  \
        int c = k / KHW, r = k - c * KHW;                                       \
        int kh = r / KW, kw = r - kh * KW;                                      \
        int ih = ih0 + kh * pc.DH, iw = iw0 + kw * pc.DW;                       \
        if (ih >= 0 && ih < pc.H && iw >= 0 && iw < pc.W)                       \
          v = LOAD_X(xbase + c * HW + ih * pc.W + iw);                          \
      }                                                                         \
      rb[j] = v;                                                                \
    }

  ACC_T acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = ACC_T(0);
  const int tm = t / 16, tn = t % 16;

  FETCH(0)
  for (int k0 = 0; k0 < pc.K; k0 += BK) {
    for (int i = 0; i < TM; ++i) As[ak * AS + am0 + 16 * i] = ra[i];
    for (int j = 0; j < TN; ++j) Bs[(bk0 + j * bstep) * BN + bn] = rb[j];
    barrier();
    if (k0 + BK < pc.K) {
      FETCH(k0 + BK)
    }
    for (int kk = 0; kk < BK; ++kk) {
      ACC_T av[4], bv[4];
      for (int i = 0; i < TM; ++i) av[i] = As[kk * AS + tm + 16 * i];
      for (int j = 0; j < TN; ++j) bv[j] = Bs[kk * BN + tn + 16 * j];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] = MADD(av[i], bv[j], acc[i][j]);
    }
    barrier();
  }

  for (int i = 0; i < TM; ++i) {
    int m = m0 + tm + 16 * i;
    if (m >= pc.Mg) continue;
    int mo = g * pc.Mg + m;
    int ybase = (n * pc.groups * pc.Mg + mo) * P;
    for (int j = 0; j < TN; ++j) {
      int p = p0 + tn + 16 * j;
      if (p < P) STORE_Y(ybase + p, mo, acc[i][j]);
    }
  }
}
