// Kestrel's one exception type. Every message says what failed and where
// (node, op, tensor, shape) so a user can act on it.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace kestrel {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... R>
void append(std::ostringstream& os, const T& v, const R&... rest) {
  os << v;
  append(os, rest...);
}
}  // namespace detail

// Builds a message from any streamable pieces: fail("node ", name, ": bad axis ", axis).
template <typename... A>
[[noreturn]] void fail(const A&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(os.str());
}

#define KESTREL_CHECK(cond, ...)            \
  do {                                      \
    if (!(cond)) ::kestrel::fail(__VA_ARGS__); \
  } while (0)

}  // namespace kestrel
