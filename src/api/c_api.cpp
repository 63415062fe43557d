// The C API (api/kestrel.h) over kestrel::Session: C++ exceptions become
// NULL / nonzero returns with the message kept per thread.
#include "api/kestrel.h"

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"

struct kestrel_session {
  std::unique_ptr<kestrel::Session> session;
};

struct kestrel_outputs {
  std::vector<kestrel::Tensor> tensors;
};

namespace {

thread_local std::string last_error;

// Runs f; on an exception keeps its message and returns `failed`.
template <typename F, typename R>
R guarded(R failed, F&& f) {
  try {
    last_error.clear();
    return f();
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return failed;
}

kestrel::Tensor copy_input(const char* name, const kestrel_tensor& t) {
  using kestrel::fail;
  auto dtype = kestrel::DType(t.dtype);
  size_t elem = kestrel::dtype_size(dtype);
  if (elem == 0 || t.dtype == int32_t(kestrel::DType::String))
    fail("input '", name, "': element type ", t.dtype, " is not one Kestrel takes (see KESTREL_FLOAT32 ...)");
  if (t.rank < 0 || (t.rank > 0 && !t.shape)) fail("input '", name, "': rank ", t.rank, " without a shape array");
  kestrel::Shape shape(t.shape, t.shape + t.rank);
  for (int64_t d : shape)
    if (d < 0) fail("input '", name, "': negative dimension in shape ", kestrel::shape_str(shape));
  auto tensor = kestrel::Tensor::uninitialized(dtype, shape);
  if (tensor.nbytes() > 0) {
    if (!t.data) fail("input '", name, "': no data for shape ", kestrel::shape_str(shape));
    std::memcpy(tensor.raw(), t.data, tensor.nbytes());
  }
  return tensor;
}

kestrel_tensor view_of(const kestrel::Tensor& t) {
  return {int32_t(t.dtype()), int32_t(t.rank()), t.shape().data(), t.raw()};
}

}  // namespace

extern "C" {

const char* kestrel_last_error(void) { return last_error.c_str(); }

kestrel_session* kestrel_session_load(const char* path, const kestrel_options* options) {
  return guarded<>(static_cast<kestrel_session*>(nullptr), [&] {
    if (!path) kestrel::fail("kestrel_session_load: path is NULL");
    kestrel::SessionOptions o;
    if (options) {
      if (options->backend) o.backend = options->backend;
      if (options->precision) o.precision = options->precision;
      o.threads = options->threads;
    }
    auto s = std::make_unique<kestrel_session>();
    s->session = kestrel::Session::load(path, o);
    return s.release();
  });
}

void kestrel_session_free(kestrel_session* session) { delete session; }

int32_t kestrel_session_input_count(const kestrel_session* s) {
  return s ? int32_t(s->session->inputs().size()) : -1;
}

const char* kestrel_session_input_name(const kestrel_session* s, int32_t i) {
  if (!s || i < 0 || size_t(i) >= s->session->inputs().size()) return nullptr;
  return s->session->inputs()[size_t(i)].name.c_str();
}

int32_t kestrel_session_output_count(const kestrel_session* s) {
  return s ? int32_t(s->session->outputs().size()) : -1;
}

const char* kestrel_session_output_name(const kestrel_session* s, int32_t i) {
  if (!s || i < 0 || size_t(i) >= s->session->outputs().size()) return nullptr;
  return s->session->outputs()[size_t(i)].name.c_str();
}

const char* kestrel_session_backend(const kestrel_session* s) {
  return s ? s->session->backend_name().c_str() : nullptr;
}

kestrel_outputs* kestrel_session_run(kestrel_session* s, size_t input_count, const char* const* names,
                                     const kestrel_tensor* inputs) {
  return guarded<>(static_cast<kestrel_outputs*>(nullptr), [&] {
    if (!s) kestrel::fail("kestrel_session_run: session is NULL");
    if (input_count > 0 && (!names || !inputs)) kestrel::fail("kestrel_session_run: names or inputs is NULL");
    std::map<std::string, kestrel::Tensor> feeds;
    for (size_t i = 0; i < input_count; ++i) {
      if (!names[i]) kestrel::fail("kestrel_session_run: input name ", i, " is NULL");
      if (!feeds.emplace(names[i], copy_input(names[i], inputs[i])).second)
        kestrel::fail("input '", names[i], "' is given twice");
    }
    auto out = std::make_unique<kestrel_outputs>();
    out->tensors = s->session->run(feeds);
    return out.release();
  });
}

int32_t kestrel_outputs_count(const kestrel_outputs* o) { return o ? int32_t(o->tensors.size()) : -1; }

int32_t kestrel_outputs_get(const kestrel_outputs* o, int32_t i, kestrel_tensor* out) {
  if (!o || !out || i < 0 || size_t(i) >= o->tensors.size()) {
    last_error = "kestrel_outputs_get: no output " + std::to_string(i);
    return 1;
  }
  *out = view_of(o->tensors[size_t(i)]);
  return 0;
}

int32_t kestrel_outputs_get_all(const kestrel_outputs* o, kestrel_tensor* views, int32_t capacity) {
  if (!o || (!views && capacity > 0)) {
    last_error = "kestrel_outputs_get_all: outputs or views is NULL";
    return -1;
  }
  for (size_t i = 0; i < o->tensors.size() && int64_t(i) < capacity; ++i) views[i] = view_of(o->tensors[i]);
  return int32_t(o->tensors.size());
}

void kestrel_outputs_free(kestrel_outputs* o) { delete o; }

}  // extern "C"
