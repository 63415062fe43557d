// What every file of the C API shares: the per-thread error its functions
// report through kestrel_last_error(), the wrapper that turns C++ exceptions
// into it, and the caller's session options read into SessionOptions.
#pragma once
#include <cstddef>
#include <new>
#include <string>

#include "api/kestrel.h"
#include "core/error.h"
#include "runtime/session.h"

namespace kestrel::capi {

extern thread_local std::string last_error;
extern thread_local int32_t last_error_code;

int32_t status_of(ErrorKind kind);
void set_error(int32_t code, std::string message);

// Runs f; on an exception keeps its message and status and returns `failed`.
template <typename F, typename R>
R guarded(R failed, F&& f) {
  try {
    set_error(KESTREL_OK, "");
    return f();
  } catch (const Error& e) {
    set_error(status_of(e.kind()), e.what());
  } catch (const std::bad_alloc& e) {
    set_error(KESTREL_OUT_OF_MEMORY, std::string("out of host memory (") + e.what() + ")");
  } catch (const std::exception& e) {
    set_error(KESTREL_FAIL, e.what());
  } catch (...) {
    set_error(KESTREL_FAIL, "unknown error");
  }
  return failed;
}

// A caller's mistake at the C boundary (a NULL pointer, a bad index or size).
template <typename... A>
[[noreturn]] void misuse(const A&... parts) {
  fail_as(ErrorKind::InvalidArgument, parts...);
}

// The caller's options as SessionOptions, reading only the fields its
// struct_size covers (a program built with an older header passes a shorter
// struct and keeps the defaults of the fields it does not know). NULL: the
// defaults. `call` names the C function in errors.
SessionOptions session_options(const char* call, const kestrel_session_options* o);

}  // namespace kestrel::capi

// Whether the caller's struct (its struct_size, from the header it was built
// with) reaches to the end of `field`.
#define KESTREL_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)nullptr)->field))
