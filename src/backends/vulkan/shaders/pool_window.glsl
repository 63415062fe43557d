// What pool.comp and qlinear_average_pool.comp share: the window's geometry
// in push constants (ops/window.h's Window2DPush, then the kernel's extent
// and end pads) and the taps AveragePool counts with count_include_pad.
#define KESTREL_POOL_WINDOW_PUSH \
  int H, W, OH, OW, SH, SW, DH, DW, PH, PW; \
  int KH, KW, PEH, PEW;  // kernel and end pads

// Taps of a window along one dim that lie inside the padded extent.
int padded_taps(int start, int k, int d, int pb, int len) {
  int c = 0;
  for (int i = 0; i < k; ++i) {
    int v = start + i * d;
    c += (v >= -pb && v < len) ? 1 : 0;
  }
  return c;
}
// The taps of the window from (ih0, iw0) inside the padded input.
#define KESTREL_PADDED_WINDOW_TAPS(ih0, iw0) \
  (padded_taps(ih0, pc.KH, pc.DH, pc.PH, pc.H + pc.PEH) * padded_taps(iw0, pc.KW, pc.DW, pc.PW, pc.W + pc.PEW))
