/* Compiled as C99 (not C++) with -pedantic -Werror: the public header must
 * stay valid C. The layout checks below are its ABI: a struct field that
 * moves breaks every program built against an older header, so the build
 * fails here first (LP64: x86-64 and arm64 Linux). */
#include <stddef.h>

#include "api/kestrel.h"

#define KESTREL_LAYOUT(name, cond) typedef char kestrel_layout_##name[(cond) ? 1 : -1]

KESTREL_LAYOUT(tensor_size, sizeof(kestrel_tensor) == 24);
KESTREL_LAYOUT(tensor_data, offsetof(kestrel_tensor, data) == 16);
KESTREL_LAYOUT(options_struct_size_first, offsetof(kestrel_session_options, struct_size) == 0);
KESTREL_LAYOUT(options_backend, offsetof(kestrel_session_options, backend) == 8);
KESTREL_LAYOUT(options_precision, offsetof(kestrel_session_options, precision) == 16);
KESTREL_LAYOUT(options_threads, offsetof(kestrel_session_options, threads) == 24);
KESTREL_LAYOUT(options_max_loop_iterations, offsetof(kestrel_session_options, max_loop_iterations) == 32);
KESTREL_LAYOUT(options_device_memory_mb, offsetof(kestrel_session_options, device_memory_mb) == 40);
KESTREL_LAYOUT(options_device_wait_s, offsetof(kestrel_session_options, device_wait_s) == 48);
KESTREL_LAYOUT(options_device, offsetof(kestrel_session_options, device) == 56);
KESTREL_LAYOUT(options_families, offsetof(kestrel_session_options, families) == 64);
KESTREL_LAYOUT(options_trace, offsetof(kestrel_session_options, trace) == 68);
KESTREL_LAYOUT(options_encoder_heads, offsetof(kestrel_session_options, encoder_heads) == 72);
KESTREL_LAYOUT(options_attention_chunk, offsetof(kestrel_session_options, attention_chunk) == 80);
KESTREL_LAYOUT(options_cpu_kernels, offsetof(kestrel_session_options, cpu_kernels) == 88);
KESTREL_LAYOUT(options_gemm_tiles, offsetof(kestrel_session_options, gemm_tiles) == 96);
KESTREL_LAYOUT(options_replay, offsetof(kestrel_session_options, replay) == 104);
KESTREL_LAYOUT(options_exact_buffers, offsetof(kestrel_session_options, exact_buffers) == 108);
KESTREL_LAYOUT(options_tensor_cores, offsetof(kestrel_session_options, tensor_cores) == 112);
KESTREL_LAYOUT(options_attention, offsetof(kestrel_session_options, attention) == 120);
KESTREL_LAYOUT(options_padding_free, offsetof(kestrel_session_options, padding_free) == 128);
KESTREL_LAYOUT(options_size, sizeof(kestrel_session_options) == 136);
KESTREL_LAYOUT(limits_device_wait_s, offsetof(kestrel_limits, device_wait_s) == 24);
KESTREL_LAYOUT(value_info_dim_names, offsetof(kestrel_value_info, dim_names) == 24);
KESTREL_LAYOUT(run_options_timeout, offsetof(kestrel_run_options, timeout_ms) == 8);
/* Status codes are part of the ABI too. */
KESTREL_LAYOUT(status_codes, KESTREL_OK == 0 && KESTREL_FAIL == 1 && KESTREL_INVALID_ARGUMENT == 2 &&
                                 KESTREL_NO_SUCH_FILE == 3 && KESTREL_INVALID_MODEL == 4 &&
                                 KESTREL_NOT_IMPLEMENTED == 5 && KESTREL_CANCELLED == 6 &&
                                 KESTREL_OUT_OF_MEMORY == 7);

int kestrel_header_is_c(void) {
  kestrel_tensor t = {KESTREL_FLOAT32, 0, 0, 0};
  kestrel_options o = {0, 0, 1};
  kestrel_value_info v = {0, KESTREL_FLOAT32, -1, 0, 0};
  kestrel_session_options so = {sizeof(kestrel_session_options), 0, 0, 1, 0, 0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  return t.dtype + o.threads + v.dtype + v.rank + so.threads;
}
