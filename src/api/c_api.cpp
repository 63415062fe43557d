// The C API (api/kestrel.h) over kestrel::Session: C++ exceptions become
// NULL / nonzero returns with the message kept per thread.
#include "api/kestrel.h"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"

// The C view of one input's or output's declared type and shape (kestrel_value_info
// points into it), made once when the session loads.
struct CValueInfo {
  std::vector<int64_t> dims;
  std::vector<const char*> dim_names;  // into the session's TensorInfo
};

struct kestrel_session {
  std::unique_ptr<kestrel::Session> session;
  std::vector<CValueInfo> inputs, outputs;
};

struct kestrel_outputs {
  std::vector<kestrel::Tensor> tensors;
};

struct kestrel_cancel {
  std::atomic<bool> requested{false};
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

// The most dims a caller's tensor may have. The rank says how far the shape
// array is read, so it is bounded before reading; 64 is numpy's own limit,
// far beyond any model's.
constexpr int32_t kMaxRank = 64;

// A caller's tensor as Kestrel takes it: a known element type, a rank of 0 to
// kMaxRank with a shape array, dims >= 0, and an element count and byte size
// that fit (see tensor_nbytes). `what` ("input 'x'") names it in errors.
struct CheckedTensor {
  kestrel::DType dtype;
  kestrel::Shape shape;
  size_t nbytes;
};
CheckedTensor check_tensor(const std::string& what, const kestrel_tensor& t) {
  using kestrel::fail;
  auto dtype = kestrel::DType(t.dtype);
  if (kestrel::dtype_size(dtype) == 0 || t.dtype == int32_t(kestrel::DType::String))
    fail(what, ": element type ", t.dtype, " is not one Kestrel takes (see KESTREL_FLOAT32 ...)");
  if (t.rank < 0 || t.rank > kMaxRank) fail(what, ": rank ", t.rank, " is not 0 to ", kMaxRank);
  if (t.rank > 0 && !t.shape) fail(what, ": rank ", t.rank, " without a shape array");
  kestrel::Shape shape(t.shape, t.shape + t.rank);
  try {
    size_t nbytes = kestrel::tensor_nbytes(dtype, shape);
    return {dtype, std::move(shape), nbytes};
  } catch (const kestrel::Error& e) {
    fail(what, ": ", e.what());
  }
}

kestrel::Tensor copy_input(const char* name, const kestrel_tensor& t) {
  CheckedTensor c = check_tensor("input '" + std::string(name) + "'", t);
  auto tensor = kestrel::Tensor::uninitialized(c.dtype, c.shape);
  if (c.nbytes > 0) {
    if (!t.data) kestrel::fail("input '", name, "': no data for shape ", kestrel::shape_str(c.shape));
    std::memcpy(tensor.raw(), t.data, c.nbytes);
  }
  return tensor;
}

kestrel_tensor view_of(const kestrel::Tensor& t) {
  return {int32_t(t.dtype()), int32_t(t.rank()), t.shape().data(), t.raw()};
}

}  // namespace

extern "C" {

const char* kestrel_last_error(void) { return last_error.c_str(); }

const char* kestrel_version(void) { return KESTREL_VERSION; }

int64_t kestrel_tensor_nbytes(const kestrel_tensor* t) {
  return guarded<>(int64_t(-1), [&] {
    if (!t) kestrel::fail("kestrel_tensor_nbytes: tensor is NULL");
    return int64_t(check_tensor("tensor", *t).nbytes);
  });
}

namespace {
std::vector<CValueInfo> c_value_infos(const std::vector<kestrel::TensorInfo>& infos) {
  static const char* const kUnnamed = "";
  std::vector<CValueInfo> out(infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    if (!infos[i].shape) continue;
    for (const kestrel::ir::Dim& d : *infos[i].shape) {
      out[i].dims.push_back(d.known() ? d.value : -1);
      out[i].dim_names.push_back(d.known() || d.symbol.empty() ? kUnnamed : d.symbol.c_str());
    }
  }
  return out;
}

int32_t value_info(const kestrel_session* s, int32_t i, kestrel_value_info* info, bool input) {
  return guarded<>(int32_t(1), [&] {
    const char* call = input ? "kestrel_session_input_info" : "kestrel_session_output_info";
    if (!s) kestrel::fail(call, ": session is NULL");
    if (!info) kestrel::fail(call, ": info is NULL");
    const auto& infos = input ? s->session->inputs() : s->session->outputs();
    if (i < 0 || size_t(i) >= infos.size())
      kestrel::fail(call, ": index ", i, " is not 0 to ", int64_t(infos.size()) - 1);
    const kestrel::TensorInfo& t = infos[size_t(i)];
    const CValueInfo& c = (input ? s->inputs : s->outputs)[size_t(i)];
    info->name = t.name.c_str();
    info->dtype = int32_t(t.dtype);
    info->rank = t.shape ? int32_t(t.shape->size()) : -1;
    info->dims = c.dims.data();
    info->dim_names = c.dim_names.data();
    return int32_t(0);
  });
}

// `limits` null: the SessionOptions defaults.
kestrel_session* load_session(const char* path, const kestrel_options* options, const kestrel_limits* limits) {
  return guarded<>(static_cast<kestrel_session*>(nullptr), [&] {
    if (!path) kestrel::fail("kestrel_session_load: path is NULL");
    kestrel::SessionOptions o;
    if (options) {
      if (options->backend) o.backend = kestrel::parse_backend(options->backend);
      if (options->precision) o.precision = kestrel::parse_precision(options->precision);
      o.threads = options->threads;
    }
    if (limits) {
      // Read only the fields the caller's struct has (an older header's is shorter).
      if (limits->struct_size < offsetof(kestrel_limits, max_loop_iterations) + sizeof(int64_t))
        kestrel::fail("kestrel_session_load_with_limits: struct_size ", limits->struct_size,
                      " is too small; set it to sizeof(kestrel_limits)");
      auto has = [&](size_t end) { return limits->struct_size >= end; };
      if (limits->max_loop_iterations < -1)
        kestrel::fail("kestrel_limits.max_loop_iterations must be -1 (no cap), 0 (default) or more, got ",
                      limits->max_loop_iterations);
      if (limits->max_loop_iterations == -1) o.max_loop_iterations = 0;
      else if (limits->max_loop_iterations > 0) o.max_loop_iterations = limits->max_loop_iterations;
      if (has(offsetof(kestrel_limits, device_memory_mb) + sizeof(int64_t)))
        o.device_memory_mb = limits->device_memory_mb;
      if (has(offsetof(kestrel_limits, device_wait_s) + sizeof(double)) && limits->device_wait_s != 0)
        o.device_wait_s = limits->device_wait_s;
    }
    auto s = std::make_unique<kestrel_session>();
    s->session = kestrel::Session::load(path, o);
    s->inputs = c_value_infos(s->session->inputs());
    s->outputs = c_value_infos(s->session->outputs());
    return s.release();
  });
}
}  // namespace

kestrel_session* kestrel_session_load(const char* path, const kestrel_options* options) {
  return load_session(path, options, nullptr);
}

kestrel_session* kestrel_session_load_with_limits(const char* path, const kestrel_options* options,
                                                  const kestrel_limits* limits) {
  return load_session(path, options, limits);
}

void kestrel_session_free(kestrel_session* session) { delete session; }

int32_t kestrel_session_input_count(const kestrel_session* s) {
  return s ? int32_t(s->session->inputs().size()) : -1;
}

const char* kestrel_session_input_name(const kestrel_session* s, int32_t i) {
  if (!s || i < 0 || size_t(i) >= s->session->inputs().size()) return nullptr;
  return s->session->inputs()[size_t(i)].name.c_str();
}

int32_t kestrel_session_input_info(const kestrel_session* s, int32_t i, kestrel_value_info* info) {
  return value_info(s, i, info, true);
}

int32_t kestrel_session_output_info(const kestrel_session* s, int32_t i, kestrel_value_info* info) {
  return value_info(s, i, info, false);
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
  return kestrel_session_run_with(s, input_count, names, inputs, nullptr);
}

kestrel_cancel* kestrel_cancel_new(void) {
  return guarded<>(static_cast<kestrel_cancel*>(nullptr), [] { return new kestrel_cancel; });
}

void kestrel_cancel_request(kestrel_cancel* c) {
  if (c) c->requested.store(true);
}

void kestrel_cancel_free(kestrel_cancel* c) { delete c; }

kestrel_outputs* kestrel_session_run_with(kestrel_session* s, size_t input_count, const char* const* names,
                                          const kestrel_tensor* inputs, const kestrel_run_options* options) {
  return guarded<>(static_cast<kestrel_outputs*>(nullptr), [&] {
    kestrel::RunControl control;
    if (options) {
      control.cancel = options->cancel ? &options->cancel->requested : nullptr;
      control.timeout_ms = options->timeout_ms;
    }
    if (!s) kestrel::fail("kestrel_session_run: session is NULL");
    if (input_count > 0 && (!names || !inputs)) kestrel::fail("kestrel_session_run: names or inputs is NULL");
    std::map<std::string, kestrel::Tensor> feeds;
    for (size_t i = 0; i < input_count; ++i) {
      if (!names[i]) kestrel::fail("kestrel_session_run: input name ", i, " is NULL");
      if (!feeds.emplace(names[i], copy_input(names[i], inputs[i])).second)
        kestrel::fail("input '", names[i], "' is given twice");
    }
    auto out = std::make_unique<kestrel_outputs>();
    out->tensors = s->session->run(feeds, control);
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
