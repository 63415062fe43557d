#include "backends/cpu/onednn_engine.h"

namespace kestrel::backends::cpu {

dnnl::engine& onednn_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& onednn_stream() {
  static thread_local dnnl::stream s(onednn_engine());
  return s;
}

}  // namespace kestrel::backends::cpu
