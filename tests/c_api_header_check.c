/* Compiled as C (not C++): the public header must stay valid C. */
#include "api/kestrel.h"

int kestrel_header_is_c(void) {
  kestrel_tensor t = {KESTREL_FLOAT32, 0, 0, 0};
  kestrel_options o = {0, 0, 1};
  kestrel_value_info v = {0, KESTREL_FLOAT32, -1, 0, 0};
  return t.dtype + o.threads + v.dtype + v.rank;
}
