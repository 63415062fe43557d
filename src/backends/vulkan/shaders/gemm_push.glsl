// The GEMM kernels' push constants, the layout of the host's GemmPush
// (ops/gemm_record.h): the float kernels (gemm_interface.glsl) and the
// integer one (gemm_integer.comp) include it.
layout(push_constant) uniform Push {
  uint M, N, K;
  uint batch_base, mtile_base;
  uint sam, sak, sbk, sbn;  // element strides of A along m, k and of B along k, n
  uint scm, scn;            // C's strides along m, n (0 where it broadcasts)
  float alpha, beta, act_a, act_b;
  uint bdims[4];            // output batch dims (leading ones padded with 1)
  uint sab[4], sbb[4];      // A's and B's element strides along them (0: broadcast)
  uint sym;                 // Y's row stride (0: N, dense)
  uint syb[4];              // Y's batch strides when sym is set
} pc;
