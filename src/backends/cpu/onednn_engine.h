// oneDNN's CPU engine, one per process, and a stream per calling thread
// (a stream is not to be shared between threads; making one per call cost
// microseconds that small layers notice).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

namespace kestrel::backends::cpu {

dnnl::engine& onednn_engine();
dnnl::stream& onednn_stream();

}  // namespace kestrel::backends::cpu
