// Kestrel's one exception type. Every message says what failed and where
// (node, op, tensor, shape) so a user can act on it.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace kestrel {

// What kind of failure an Error is, for callers that act on the kind rather
// than the message: the C API's status codes and Python's exception classes
// (FileNotFoundError, ValueError, NotImplementedError ...) are read off it.
enum class ErrorKind {
  Failure,          // anything else: a kernel's or the device's failure during a run
  InvalidArgument,  // the caller's input: unknown, missing or mistyped tensors, bad options
  NoSuchFile,       // a model or external-data file that does not exist
  InvalidModel,     // the file is not a model Kestrel can read (protobuf, IR version, graph)
  NotImplemented,   // a valid model using an op, opset or type Kestrel does not run
  Cancelled,        // stopped by its caller: a cancel flag or a timeout
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ErrorKind kind = ErrorKind::Failure)
      : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... R>
void append(std::ostringstream& os, const T& v, const R&... rest) {
  os << v;
  append(os, rest...);
}
}  // namespace detail

// Throws an Error of `kind` whose message is built from any streamable pieces:
// fail_as(ErrorKind::InvalidArgument, "input '", n, "' ...").
template <typename... A>
[[noreturn]] void fail_as(ErrorKind kind, const A&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(os.str(), kind);
}

// The same for a failure of no particular kind: fail("node ", name, ": bad axis ", axis).
template <typename... A>
[[noreturn]] void fail(const A&... parts) {
  fail_as(ErrorKind::Failure, parts...);
}

// Runs f; an Error of no particular kind (Failure) that it throws is thrown
// again as `kind`, message unchanged. For a stage whose every failure is of
// one kind (checking a caller's options or inputs, reading a model), so each
// check inside keeps its plain KESTREL_CHECK.
template <typename F>
auto with_kind(ErrorKind kind, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Failure) throw;
    throw Error(e.what(), kind);
  }
}

#define KESTREL_CHECK_AS(kind, cond, ...)              \
  do {                                                \
    if (!(cond)) ::kestrel::fail_as(kind, __VA_ARGS__); \
  } while (0)

#define KESTREL_CHECK(cond, ...)            \
  do {                                      \
    if (!(cond)) ::kestrel::fail(__VA_ARGS__); \
  } while (0)

}  // namespace kestrel
