// libFuzzer target for the .npy reader: any byte string must either read as
// a tensor whose bytes are exactly the file's data, or throw kestrel::Error.
// Any other exception, a crash, an out-of-bounds access, a leak or a huge
// allocation (libFuzzer's -rss_limit_mb / -malloc_limit_mb) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size), std::ios::binary);
  try {
    kestrel::Tensor t = kestrel::read_npy(in, "fuzz.npy");
    // What was read is the file's tail: its data, byte for byte.
    if (t.nbytes() > size || std::memcmp(t.raw(), data + size - t.nbytes(), t.nbytes()) != 0) {
      std::fprintf(stderr, "read_npy returned %zu bytes that are not the file's last bytes\n", t.nbytes());
      std::abort();
    }
  } catch (const kestrel::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "read_npy threw a non-Kestrel exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
