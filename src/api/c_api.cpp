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

#include "api/c_api_support.h"
#include "runtime/session.h"

// The C view of one input's or output's declared type and shape (kestrel_value_info
// points into it), made once when the session loads.
struct CValueInfo {
  std::vector<int64_t> dims;
  std::vector<const char*> dim_names;  // into the session's TensorInfo
};

using kestrel::capi::guarded;
using kestrel::capi::last_error;
using kestrel::capi::last_error_code;
using kestrel::capi::misuse;
using kestrel::capi::session_options;
using kestrel::capi::set_error;

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
  auto dtype = kestrel::DType(t.dtype);
  if (kestrel::dtype_size(dtype) == 0 || t.dtype == int32_t(kestrel::DType::String))
    misuse(what, ": element type ", t.dtype, " is not one Kestrel takes (see KESTREL_FLOAT32 ...)");
  if (t.rank < 0 || t.rank > kMaxRank) misuse(what, ": rank ", t.rank, " is not 0 to ", kMaxRank);
  if (t.rank > 0 && !t.shape) misuse(what, ": rank ", t.rank, " without a shape array");
  kestrel::Shape shape(t.shape, t.shape + t.rank);
  try {
    size_t nbytes = kestrel::tensor_nbytes(dtype, shape);
    return {dtype, std::move(shape), nbytes};
  } catch (const kestrel::Error& e) {
    misuse(what, ": ", e.what());
  }
}

// The caller's input as a tensor over its own bytes: a run only reads its
// inputs and the caller keeps them alive until the run returns, so they are
// not copied (an output that would share them is copied instead, below).
kestrel::Tensor borrow_input(const char* name, const kestrel_tensor& t) {
  CheckedTensor c = check_tensor("input '" + std::string(name) + "'", t);
  if (c.nbytes == 0) return kestrel::Tensor(c.dtype, c.shape);
  if (!t.data) misuse("input '", name, "': no data for shape ", kestrel::shape_str(c.shape));
  std::shared_ptr<uint8_t[]> bytes(static_cast<uint8_t*>(const_cast<void*>(t.data)), [](uint8_t*) {});
  return kestrel::Tensor(c.dtype, std::move(c.shape), std::move(bytes));
}

// Outputs outlive the run, and the caller's inputs need not: an output that
// is an input's own bytes (an Identity or Reshape of an input) is copied.
void own_outputs(std::vector<kestrel::Tensor>& outputs, const std::map<std::string, kestrel::Tensor>& feeds) {
  for (kestrel::Tensor& out : outputs) {
    for (const auto& [name, in] : feeds) {
      if (out.storage() && out.storage().get() == in.storage().get()) {
        out = out.clone();
        break;
      }
    }
  }
}

kestrel_tensor view_of(const kestrel::Tensor& t) {
  return {int32_t(t.dtype()), int32_t(t.rank()), t.shape().data(), t.raw()};
}

}  // namespace

// (Outside extern "C": these return C++ types.)
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
    if (!s) misuse(call, ": session is NULL");
    if (!info) misuse(call, ": info is NULL");
    const auto& infos = input ? s->session->inputs() : s->session->outputs();
    if (i < 0 || size_t(i) >= infos.size())
      misuse(call, ": index ", i, " is not 0 to ", int64_t(infos.size()) - 1);
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

kestrel_session* wrap(std::unique_ptr<kestrel::Session> loaded) {
  auto s = std::make_unique<kestrel_session>();
  s->session = std::move(loaded);
  s->inputs = c_value_infos(s->session->inputs());
  s->outputs = c_value_infos(s->session->outputs());
  return s.release();
}

// The older pair of structs, as one kestrel_session_options.
kestrel_session_options combined(const kestrel_options* options, const kestrel_limits* limits) {
  kestrel_session_options o{};
  o.struct_size = sizeof o;
  if (options) {
    o.backend = options->backend;
    o.precision = options->precision;
    o.threads = options->threads;
  }
  if (limits) {
    if (limits->struct_size < offsetof(kestrel_limits, max_loop_iterations) + sizeof(int64_t))
      misuse("kestrel_session_load_with_limits: struct_size ", limits->struct_size,
             " is too small; set it to sizeof(kestrel_limits)");
    o.max_loop_iterations = limits->max_loop_iterations;
    if (KESTREL_HAS_FIELD(limits, kestrel_limits, device_memory_mb)) o.device_memory_mb = limits->device_memory_mb;
    if (KESTREL_HAS_FIELD(limits, kestrel_limits, device_wait_s)) o.device_wait_s = limits->device_wait_s;
  }
  return o;
}
}  // namespace

// The error state and the options conversion every C API file shares (c_api_support.h).
namespace kestrel::capi {
thread_local std::string last_error;
thread_local int32_t last_error_code = KESTREL_OK;

int32_t status_of(kestrel::ErrorKind kind) {
  using K = kestrel::ErrorKind;
  switch (kind) {
    case K::InvalidArgument: return KESTREL_INVALID_ARGUMENT;
    case K::NoSuchFile: return KESTREL_NO_SUCH_FILE;
    case K::InvalidModel: return KESTREL_INVALID_MODEL;
    case K::NotImplemented: return KESTREL_NOT_IMPLEMENTED;
    case K::Cancelled: return KESTREL_CANCELLED;
    case K::Failure: break;
  }
  return KESTREL_FAIL;
}

void set_error(int32_t code, std::string message) {
  last_error_code = code;
  last_error = std::move(message);
}
}  // namespace kestrel::capi

kestrel::SessionOptions kestrel::capi::session_options(const char* call, const kestrel_session_options* o) {
  kestrel::SessionOptions so;
  if (!o) return so;
  if (o->struct_size < offsetof(kestrel_session_options, threads) + sizeof(int32_t))
    misuse(call, ": struct_size ", o->struct_size, " is too small; set it to sizeof(kestrel_session_options)");
  if (o->backend) so.backend = kestrel::parse_backend(o->backend);
  if (o->precision) so.precision = kestrel::parse_precision(o->precision);
  so.threads = o->threads;
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, max_loop_iterations)) {
    if (o->max_loop_iterations < -1)
      misuse("kestrel_session_options.max_loop_iterations must be -1 (no cap), 0 (default) or more, got ",
             o->max_loop_iterations);
    if (o->max_loop_iterations == -1) so.max_loop_iterations = 0;
    else if (o->max_loop_iterations > 0) so.max_loop_iterations = o->max_loop_iterations;
  }
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, device_memory_mb))
    so.device_memory_mb = o->device_memory_mb;
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, device_wait_s) && o->device_wait_s != 0)
    so.device_wait_s = o->device_wait_s;
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, device) && o->device) so.vulkan_device = o->device;
  // The tuning fields: 0 (or NULL) keeps the default, -1 turns a default-on switch off.
  const auto off_switch = [](const char* field, int32_t v) {
    if (v != 0 && v != -1) misuse("kestrel_session_options.", field, " must be 0 (default) or -1 (off), got ", v);
    return v == 0;
  };
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, families)) so.families = off_switch("families", o->families);
  // (trace, encoder_heads and attention_chunk keep SessionOptions' meaning
  // and range, which runtime::Config checks for every edge.)
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, trace)) so.trace = o->trace;
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, encoder_heads)) so.encoder_heads = o->encoder_heads;
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, attention_chunk)) so.attention_chunk = o->attention_chunk;
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, cpu_kernels) && o->cpu_kernels)
    so.cpu_kernels = kestrel::parse_cpu_kernels(o->cpu_kernels);
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, gemm_tiles) && o->gemm_tiles)
    so.gemm_tiles = kestrel::parse_gemm_tiles(o->gemm_tiles);
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, replay)) so.replay = off_switch("replay", o->replay);
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, exact_buffers)) {
    if (o->exact_buffers != 0 && o->exact_buffers != 1)
      misuse("kestrel_session_options.exact_buffers must be 0 or 1, got ", o->exact_buffers);
    so.exact_buffers = o->exact_buffers == 1;
  }
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, tensor_cores))
    so.tensor_cores = off_switch("tensor_cores", o->tensor_cores);
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, attention) && o->attention)
    so.attention_kernel = kestrel::parse_attention_kernel(o->attention);
  if (KESTREL_HAS_FIELD(o, kestrel_session_options, padding_free)) {
    if (o->padding_free != 0 && o->padding_free != 1)
      misuse("kestrel_session_options.padding_free must be 0 or 1, got ", o->padding_free);
    so.padding_free = o->padding_free == 1;
  }
  return so;
}


extern "C" {

const char* kestrel_last_error(void) { return last_error.c_str(); }

int32_t kestrel_last_error_code(void) { return last_error_code; }

const char* kestrel_version(void) { return KESTREL_VERSION; }

int32_t kestrel_set_process_options(const kestrel_process_options* o) {
  return guarded<>(int32_t(1), [&] {
    if (!o) misuse("kestrel_set_process_options: options is NULL");
    if (o->struct_size < offsetof(kestrel_process_options, pool_mb) + sizeof(int64_t))
      misuse("kestrel_set_process_options: struct_size ", o->struct_size,
             " is too small; set it to sizeof(kestrel_process_options)");
    kestrel::ProcessOptions p;
    if (o->pool_mb < -1) misuse("kestrel_process_options.pool_mb must be -1 (none), 0 (default) or more, got ", o->pool_mb);
    if (o->pool_mb != 0) p.pool_mb = o->pool_mb == -1 ? 0 : o->pool_mb;  // -1: keep none
    if (KESTREL_HAS_FIELD(o, kestrel_process_options, cpu_isa) && o->cpu_isa)
      p.cpu_isa = kestrel::parse_cpu_isa(o->cpu_isa);
    if (KESTREL_HAS_FIELD(o, kestrel_process_options, poison_outputs)) {
      if (o->poison_outputs != 0 && o->poison_outputs != 1)
        misuse("kestrel_process_options.poison_outputs must be 0 (default) or 1, got ", o->poison_outputs);
      if (o->poison_outputs == 1) p.poison_outputs = true;
    }
    kestrel::set_process_options(p);
    return int32_t(0);
  });
}

int64_t kestrel_tensor_nbytes(const kestrel_tensor* t) {
  return guarded<>(int64_t(-1), [&] {
    if (!t) misuse("kestrel_tensor_nbytes: tensor is NULL");
    return int64_t(check_tensor("tensor", *t).nbytes);
  });
}


kestrel_session* kestrel_session_create(const char* path, const kestrel_session_options* options) {
  return guarded<>(static_cast<kestrel_session*>(nullptr), [&] {
    if (!path) misuse("kestrel_session_create: path is NULL");
    return wrap(kestrel::Session::load(path, session_options("kestrel_session_create", options)));
  });
}

kestrel_session* kestrel_session_create_from_bytes(const void* data, size_t size,
                                                   const kestrel_session_options* options) {
  return guarded<>(static_cast<kestrel_session*>(nullptr), [&] {
    if (!data && size > 0) misuse("kestrel_session_create_from_bytes: data is NULL");
    return wrap(kestrel::Session::load_bytes(data, size,
                                             session_options("kestrel_session_create_from_bytes", options)));
  });
}

kestrel_session* kestrel_session_load(const char* path, const kestrel_options* options) {
  return kestrel_session_load_with_limits(path, options, nullptr);
}

kestrel_session* kestrel_session_load_with_limits(const char* path, const kestrel_options* options,
                                                  const kestrel_limits* limits) {
  return guarded<>(static_cast<kestrel_session*>(nullptr), [&] {
    if (!path) misuse("kestrel_session_load: path is NULL");
    const kestrel_session_options o = combined(options, limits);
    return wrap(kestrel::Session::load(path, session_options("kestrel_session_load", &o)));
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
    if (!s) misuse("kestrel_session_run: session is NULL");
    if (input_count > 0 && (!names || !inputs)) misuse("kestrel_session_run: names or inputs is NULL");
    std::map<std::string, kestrel::Tensor> feeds;
    for (size_t i = 0; i < input_count; ++i) {
      if (!names[i]) misuse("kestrel_session_run: input name ", i, " is NULL");
      if (!feeds.emplace(names[i], borrow_input(names[i], inputs[i])).second)
        misuse("input '", names[i], "' is given twice");
    }
    auto out = std::make_unique<kestrel_outputs>();
    out->tensors = s->session->run(feeds, control);
    own_outputs(out->tensors, feeds);
    return out.release();
  });
}

int32_t kestrel_outputs_count(const kestrel_outputs* o) { return o ? int32_t(o->tensors.size()) : -1; }

int32_t kestrel_outputs_get(const kestrel_outputs* o, int32_t i, kestrel_tensor* out) {
  if (!o || !out || i < 0 || size_t(i) >= o->tensors.size()) {
    set_error(KESTREL_INVALID_ARGUMENT, "kestrel_outputs_get: no output " + std::to_string(i));
    return 1;
  }
  *out = view_of(o->tensors[size_t(i)]);
  return 0;
}

int32_t kestrel_outputs_get_all(const kestrel_outputs* o, kestrel_tensor* views, int32_t capacity) {
  if (!o || (!views && capacity > 0)) {
    set_error(KESTREL_INVALID_ARGUMENT, "kestrel_outputs_get_all: outputs or views is NULL");
    return -1;
  }
  for (size_t i = 0; i < o->tensors.size() && int64_t(i) < capacity; ++i) views[i] = view_of(o->tensors[i]);
  return int32_t(o->tensors.size());
}

void kestrel_outputs_free(kestrel_outputs* o) { delete o; }

}  // extern "C"
