// libFuzzer target for the model loader: any byte string must either load or
// throw kestrel::Error. Any other exception, a crash, a leak, a hang or a huge
// allocation (libFuzzer's -rss_limit_mb / -malloc_limit_mb) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/error.h"
#include "runtime/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto s = kestrel::Session::load_bytes(data, size);
  } catch (const kestrel::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load_bytes threw a non-Kestrel exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
