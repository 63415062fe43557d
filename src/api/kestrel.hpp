// Kestrel's C++ API: RAII classes over the C API (kestrel.h), in this header
// alone. The library exports only the C functions, so a program built
// against this header keeps working with later libraries of the same major
// version, whatever compiler or standard library either was built with.
//
//   kestrel::api::Session s("model.onnx", kestrel::api::Options().backend("cpu").threads(4));
//   std::vector<int64_t> shape{1, 3, 224, 224};
//   kestrel::api::Outputs out = s.run({"images"}, {kestrel::api::view(pixels.data(), shape)});
//   kestrel_tensor y = out[0];   // valid while `out` lives
//
// Failures throw kestrel::api::Error, whose code() is a KESTREL_* status.
#pragma once
#include "kestrel.h"  // (beside this header, in the source tree and installed)

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kestrel::api {

class Error : public std::runtime_error {
 public:
  Error(const std::string& what, int32_t code) : std::runtime_error(what), code_(code) {}
  int32_t code() const { return code_; }  // KESTREL_INVALID_ARGUMENT ...

 private:
  int32_t code_;
};

// Throws the calling thread's latest C API failure.
[[noreturn]] inline void throw_last_error() { throw Error(kestrel_last_error(), kestrel_last_error_code()); }

inline std::string version() { return kestrel_version(); }

// The process's settings (kestrel_process_options): set before the first
// session; a field left at its default keeps the environment's value.
struct ProcessOptions {
  int64_t pool_mb = 0;          // the most idle tensor memory kept, MiB; 0: default; -1: none
  std::string cpu_isa;          // "baseline", "avx2" or "avx512"; "": default
  bool poison_outputs = false;  // kernel outputs start as NaN bytes
};
inline void set_process_options(const ProcessOptions& p) {
  kestrel_process_options o{};
  o.struct_size = sizeof o;
  o.pool_mb = p.pool_mb;
  o.cpu_isa = p.cpu_isa.empty() ? nullptr : p.cpu_isa.c_str();
  o.poison_outputs = p.poison_outputs ? 1 : 0;
  if (kestrel_set_process_options(&o) != 0) throw_last_error();
}

// A caller's array as a kestrel_tensor (the shape must outlive the run).
template <typename T>
kestrel_tensor view(const T* data, const std::vector<int64_t>& shape, int32_t dtype) {
  return kestrel_tensor{dtype, int32_t(shape.size()), shape.data(), data};
}
inline kestrel_tensor view(const float* data, const std::vector<int64_t>& shape) {
  return view(data, shape, KESTREL_FLOAT32);
}

// kestrel_session_options, set field by field.
class Options {
 public:
  Options() { o_.struct_size = sizeof o_; }
  Options& backend(std::string b) { return keep(backend_, std::move(b), o_.backend); }
  Options& precision(std::string p) { return keep(precision_, std::move(p), o_.precision); }
  Options& threads(int32_t n) { o_.threads = n; return *this; }
  Options& max_loop_iterations(int64_t n) { o_.max_loop_iterations = n; return *this; }
  Options& device_memory_mb(int64_t mb) { o_.device_memory_mb = mb; return *this; }
  Options& device_wait_s(double s) { o_.device_wait_s = s; return *this; }
  Options& device(std::string d) { return keep(device_, std::move(d), o_.device); }
  // Tuning and diagnosis (kestrel_session_options' fields of the same names).
  Options& families(bool on) { o_.families = on ? 0 : -1; return *this; }
  Options& trace(int32_t level) { o_.trace = level; return *this; }
  Options& encoder_heads(int64_t n) { o_.encoder_heads = n; return *this; }
  Options& attention_chunk(int64_t rows) { o_.attention_chunk = rows; return *this; }
  Options& cpu_kernels(std::string k) { return keep(cpu_kernels_, std::move(k), o_.cpu_kernels); }
  Options& gemm_tiles(std::string t) { return keep(gemm_tiles_, std::move(t), o_.gemm_tiles); }
  Options& replay(bool on) { o_.replay = on ? 0 : -1; return *this; }
  Options& exact_buffers(bool on) { o_.exact_buffers = on ? 1 : 0; return *this; }
  Options& tensor_cores(bool on) { o_.tensor_cores = on ? 0 : -1; return *this; }
  Options& attention(std::string a) { return keep(attention_, std::move(a), o_.attention); }
  Options& padding_free(bool on) { o_.padding_free = on ? 1 : 0; return *this; }
  // Valid while this Options lives and is not changed.
  const kestrel_session_options* c() const { return &o_; }

 private:
  Options& keep(std::shared_ptr<std::string>& slot, std::string v, const char*& field) {
    slot = std::make_shared<std::string>(std::move(v));  // (stays put when Options is copied)
    field = slot->c_str();
    return *this;
  }
  kestrel_session_options o_{};
  std::shared_ptr<std::string> backend_, precision_, device_, cpu_kernels_, gemm_tiles_, attention_;
};

// A model input's or output's declared name, element type and shape.
struct ValueInfo {
  std::string name;
  int32_t dtype = 0;                   // KESTREL_* type; 0: not declared
  bool has_shape = false;              // false: the rank is unknown
  std::vector<int64_t> dims;           // -1 where the dim is open
  std::vector<std::string> dim_names;  // an open dim's symbol ("batch"), else ""
};

// Sets runs going with it to stop, from any thread.
class CancelFlag {
 public:
  CancelFlag() : c_(kestrel_cancel_new(), kestrel_cancel_free) {
    if (!c_) throw_last_error();
  }
  void request() { kestrel_cancel_request(c_.get()); }
  kestrel_cancel* c() const { return c_.get(); }

 private:
  std::unique_ptr<kestrel_cancel, void (*)(kestrel_cancel*)> c_;
};

// One run's outputs, in the model's order; each view is valid while this lives.
class Outputs {
 public:
  explicit Outputs(kestrel_outputs* o) : o_(o, kestrel_outputs_free) {}
  size_t size() const { return size_t(kestrel_outputs_count(o_.get())); }
  kestrel_tensor operator[](size_t i) const {
    kestrel_tensor t{};
    if (kestrel_outputs_get(o_.get(), int32_t(i), &t) != 0) throw_last_error();
    return t;
  }

 private:
  std::unique_ptr<kestrel_outputs, void (*)(kestrel_outputs*)> o_;
};

class Session {
 public:
  explicit Session(const std::string& path, const Options& options = Options())
      : s_(kestrel_session_create(path.c_str(), options.c()), kestrel_session_free) {
    if (!s_) throw_last_error();
  }
  // A model from its bytes (which may be freed once this returns).
  static Session from_bytes(const void* data, size_t size, const Options& options = Options()) {
    kestrel_session* s = kestrel_session_create_from_bytes(data, size, options.c());
    if (!s) throw_last_error();
    return Session(s);
  }

  std::vector<ValueInfo> inputs() const { return infos(kestrel_session_input_count, kestrel_session_input_info); }
  std::vector<ValueInfo> outputs() const { return infos(kestrel_session_output_count, kestrel_session_output_info); }
  // "vulkan on <device>: ..." or "cpu".
  std::string backend() const { return kestrel_session_backend(s_.get()); }

  // Runs with every model input by name. Inputs are read in place and must
  // stay unchanged until this returns. May be called from several threads.
  Outputs run(const std::vector<std::string>& names, const std::vector<kestrel_tensor>& inputs,
              const CancelFlag* cancel = nullptr, double timeout_ms = 0) const {
    if (names.size() != inputs.size())
      throw Error("Session::run: " + std::to_string(names.size()) + " names for " + std::to_string(inputs.size()) +
                      " inputs",
                  KESTREL_INVALID_ARGUMENT);
    std::vector<const char*> c_names;
    for (const std::string& n : names) c_names.push_back(n.c_str());
    kestrel_run_options ro{cancel ? cancel->c() : nullptr, timeout_ms};
    kestrel_outputs* o = kestrel_session_run_with(s_.get(), names.size(), c_names.data(), inputs.data(), &ro);
    if (!o) throw_last_error();
    return Outputs(o);
  }

 private:
  explicit Session(kestrel_session* s) : s_(s, kestrel_session_free) {}

  template <typename Count, typename Info>
  std::vector<ValueInfo> infos(Count count, Info info) const {
    std::vector<ValueInfo> out(size_t(count(s_.get())));
    for (size_t i = 0; i < out.size(); ++i) {
      kestrel_value_info c{};
      if (info(s_.get(), int32_t(i), &c) != 0) throw_last_error();
      out[i].name = c.name;
      out[i].dtype = c.dtype;
      out[i].has_shape = c.rank >= 0;
      for (int32_t d = 0; d < c.rank; ++d) {
        out[i].dims.push_back(c.dims[d]);
        out[i].dim_names.push_back(c.dim_names[d]);
      }
    }
    return out;
  }

  std::unique_ptr<kestrel_session, void (*)(kestrel_session*)> s_;
};

// The C API's JSON string as a std::string, freed.
inline std::string take_json(char* c) {
  if (!c) throw_last_error();
  std::string out(c);
  kestrel_string_free(c);
  return out;
}

// Photos to boxes (kestrel detect): each result is the photo's JSON object,
// {"image", "width", "height", "detections": [...]} (README: detect).
//   kestrel::api::Detector d("yolox_nano.onnx");
//   std::string json = d.detect("dog.jpg");
class Detector {
 public:
  explicit Detector(const std::string& model, const std::string& arch = "auto", int32_t width = 0,
                    int32_t height = 0, const Options& options = Options())
      : d_(kestrel_detector_create(model.c_str(), arch.c_str(), width, height, options.c()), kestrel_detector_free) {
    if (!d_) throw_last_error();
  }
  std::string detect(const std::string& image_path, float conf = 0.25f, float iou = 0.45f) const {
    return take_json(kestrel_detector_detect_file(d_.get(), image_path.c_str(), conf, iou));
  }
  // 8-bit RGB rows `stride` bytes apart (0: width * 3).
  std::string detect(const uint8_t* rgb, int32_t width, int32_t height, int64_t stride = 0, float conf = 0.25f,
                     float iou = 0.45f, const std::string& name = "") const {
    return take_json(kestrel_detector_detect_rgb8(d_.get(), rgb, width, height, stride, name.c_str(), conf, iou));
  }

 private:
  std::unique_ptr<kestrel_detector, void (*)(kestrel_detector*)> d_;
};

// Photos to text (kestrel ocr) with PP-OCR's models: each result is the
// photo's JSON object, {"image", "width", "height", "lines": [...]}.
class TextReader {
 public:
  // classifier and dictionary may be "": no direction classifier; PP-OCR's
  // dictionary beside the recognizer.
  TextReader(const std::string& detector, const std::string& recognizer, const std::string& classifier = "",
             const std::string& dictionary = "", const Options& options = Options())
      : r_(kestrel_text_reader_create(detector.c_str(), recognizer.c_str(),
                                      classifier.empty() ? nullptr : classifier.c_str(),
                                      dictionary.empty() ? nullptr : dictionary.c_str(), options.c()),
           kestrel_text_reader_free) {
    if (!r_) throw_last_error();
  }
  std::string read(const std::string& image_path, float min_score = 0.5f) const {
    return take_json(kestrel_text_reader_read_file(r_.get(), image_path.c_str(), min_score));
  }
  std::string read(const uint8_t* rgb, int32_t width, int32_t height, int64_t stride = 0, float min_score = 0.5f,
                   const std::string& name = "") const {
    return take_json(kestrel_text_reader_read_rgb8(r_.get(), rgb, width, height, stride, name.c_str(), min_score));
  }

 private:
  std::unique_ptr<kestrel_text_reader, void (*)(kestrel_text_reader*)> r_;
};

}  // namespace kestrel::api
