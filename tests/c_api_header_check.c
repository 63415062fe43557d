/* Compiled as C (not C++): the public header must stay valid C. */
#include "api/kestrel.h"

int kestrel_header_is_c(void) {
  kestrel_tensor t = {KESTREL_FLOAT32, 0, 0, 0};
  kestrel_options o = {0, 0, 1};
  return t.dtype + o.threads;
}
