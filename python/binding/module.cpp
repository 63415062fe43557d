// kestrel._kestrel: the native half of the Python package, over Kestrel's
// C++ API (kestrel.hpp, itself over the C API). The Python half
// (kestrel/__init__.py) shapes it like ONNX Runtime; this file only loads
// sessions, reads their metadata and runs them without copying: inputs are
// read where numpy keeps them, and outputs become numpy arrays over the
// memory Kestrel returned them in, freed with the last array that uses it.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "kestrel.hpp"

namespace nb = nanobind;
using namespace kestrel;

namespace {

// The numpy element type of a Kestrel output. bfloat16 has no numpy type:
// it comes back as its uint16 bits, which the Python half views as
// ml_dtypes.bfloat16 where that package is installed.
nb::dlpack::dtype numpy_dtype(int32_t code) {
  using C = nb::dlpack::dtype_code;
  auto t = [](C c, int bits) { return nb::dlpack::dtype{uint8_t(c), uint8_t(bits), 1}; };
  switch (code) {
    case KESTREL_FLOAT32: return t(C::Float, 32);
    case KESTREL_FLOAT16: return t(C::Float, 16);
    case KESTREL_FLOAT64: return t(C::Float, 64);
    case KESTREL_INT8: return t(C::Int, 8);
    case KESTREL_INT16: return t(C::Int, 16);
    case KESTREL_INT32: return t(C::Int, 32);
    case KESTREL_INT64: return t(C::Int, 64);
    case KESTREL_UINT8: return t(C::UInt, 8);
    case KESTREL_UINT16: return t(C::UInt, 16);
    case KESTREL_UINT32: return t(C::UInt, 32);
    case KESTREL_UINT64: return t(C::UInt, 64);
    case KESTREL_BOOL: return t(C::Bool, 8);
    case KESTREL_BFLOAT16: return t(C::UInt, 16);
  }
  throw api::Error("an output has element type " + std::to_string(code) + ", which numpy cannot hold",
                   KESTREL_NOT_IMPLEMENTED);
}

// (name, dtype code, dims with -1 where open, dim symbols, has_shape)
nb::list value_infos(const std::vector<api::ValueInfo>& infos) {
  nb::list out;
  for (const api::ValueInfo& v : infos)
    out.append(nb::make_tuple(v.name, v.dtype, v.dims, v.dim_names, v.has_shape));
  return out;
}

// The exception class the Python half defines for a KESTREL_* status.
void raise(const api::Error& e) {
  static const char* const kClass[] = {"Fail",           "Fail",      "InvalidArgument", "NoSuchFile",
                                       "InvalidModel",   "NotImplementedByKestrel", "Cancelled", "OutOfMemory"};
  const int32_t code = e.code() >= 0 && e.code() < int32_t(std::size(kClass)) ? e.code() : KESTREL_FAIL;
  nb::object cls = nb::module_::import_("kestrel._errors").attr(kClass[code]);
  PyErr_SetString(cls.ptr(), e.what());
}

class PySession {
 public:
  PySession(api::Session s) : s_(std::move(s)) {}

  nb::list inputs() const { return value_infos(s_.inputs()); }
  nb::list outputs() const { return value_infos(s_.outputs()); }
  std::string backend() const { return s_.backend(); }

  // names[i] is read from the `nbytes` bytes at address datas[i] (numpy arrays
  // the caller keeps alive and unchanged through the call) as dtype codes[i]
  // of shape shapes[i]. Returns every output, in the model's order.
  nb::list run(const std::vector<std::string>& names, const std::vector<int32_t>& codes,
               const std::vector<std::vector<int64_t>>& shapes, const std::vector<uintptr_t>& datas,
               const api::CancelFlag* cancel, double timeout_ms) const {
    if (codes.size() != names.size() || shapes.size() != names.size() || datas.size() != names.size())
      throw api::Error("run: names, codes, shapes and data differ in length", KESTREL_INVALID_ARGUMENT);
    std::vector<kestrel_tensor> views(names.size());
    for (size_t i = 0; i < names.size(); ++i)
      views[i] = kestrel_tensor{codes[i], int32_t(shapes[i].size()), shapes[i].data(),
                                reinterpret_cast<const void*>(datas[i])};
    std::shared_ptr<api::Outputs> outs;
    {
      nb::gil_scoped_release unlocked;  // other Python threads run (and may cancel) meanwhile
      outs = std::make_shared<api::Outputs>(s_.run(names, views, cancel, timeout_ms));
    }
    // One capsule per output, each holding the run's outputs: the memory goes
    // when the last array over it does.
    nb::list arrays;
    for (size_t i = 0; i < outs->size(); ++i) {
      const kestrel_tensor t = (*outs)[i];
      std::vector<size_t> shape(t.shape, t.shape + t.rank);
      auto* keep = new std::shared_ptr<api::Outputs>(outs);
      nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<api::Outputs>*>(p); });
      nb::ndarray<nb::numpy> a(const_cast<void*>(t.data), shape.size(), shape.data(), owner, nullptr,
                               numpy_dtype(t.dtype));
      arrays.append(a.cast());
    }
    return arrays;
  }

 private:
  api::Session s_;
};

// A session's options as kestrel.SessionOptions hands them over (its
// _native()), field by field; options() makes the C++ API's Options of them.
struct NativeOptions {
  std::string backend = "auto", precision = "auto", device, cpu_kernels = "fast", gemm_tiles = "auto",
              attention = "auto";
  int32_t threads = 0, trace = 0;
  int64_t max_loop_iterations = 0, device_memory_mb = 0, encoder_heads = 0, attention_chunk = 0;
  double device_wait_s = 0;
  bool families = true, replay = true, exact_buffers = false, tensor_cores = true, padding_free = false;
};

api::Options options(const NativeOptions& n) {
  return api::Options()
      .backend(n.backend)
      .precision(n.precision)
      .threads(n.threads)
      .max_loop_iterations(n.max_loop_iterations)
      .device_memory_mb(n.device_memory_mb)
      .device_wait_s(n.device_wait_s)
      .device(n.device)
      .families(n.families)
      .trace(n.trace)
      .encoder_heads(n.encoder_heads)
      .attention_chunk(n.attention_chunk)
      .cpu_kernels(n.cpu_kernels)
      .gemm_tiles(n.gemm_tiles)
      .replay(n.replay)
      .exact_buffers(n.exact_buffers)
      .tensor_cores(n.tensor_cores)
      .attention(n.attention)
      .padding_free(n.padding_free);
}

}  // namespace

NB_MODULE(_kestrel, m) {
  m.doc() = "Kestrel's native module; use the kestrel package.";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const api::Error& e) {
      raise(e);
    }
  });
  m.def("version", &api::version);
  m.def(
      "set_process_options",
      [](int64_t pool_mb, const std::string& cpu_isa, bool poison_outputs) {
        api::set_process_options({pool_mb, cpu_isa, poison_outputs});
      },
      nb::arg("pool_mb"), nb::arg("cpu_isa"), nb::arg("poison_outputs"));

  nb::class_<api::CancelFlag>(m, "CancelFlag").def(nb::init<>()).def("request", &api::CancelFlag::request);

  nb::class_<NativeOptions>(m, "Options")
      .def(nb::init<>())
      .def_rw("backend", &NativeOptions::backend)
      .def_rw("precision", &NativeOptions::precision)
      .def_rw("device", &NativeOptions::device)
      .def_rw("cpu_kernels", &NativeOptions::cpu_kernels)
      .def_rw("gemm_tiles", &NativeOptions::gemm_tiles)
      .def_rw("threads", &NativeOptions::threads)
      .def_rw("trace", &NativeOptions::trace)
      .def_rw("max_loop_iterations", &NativeOptions::max_loop_iterations)
      .def_rw("device_memory_mb", &NativeOptions::device_memory_mb)
      .def_rw("encoder_heads", &NativeOptions::encoder_heads)
      .def_rw("attention_chunk", &NativeOptions::attention_chunk)
      .def_rw("device_wait_s", &NativeOptions::device_wait_s)
      .def_rw("families", &NativeOptions::families)
      .def_rw("replay", &NativeOptions::replay)
      .def_rw("exact_buffers", &NativeOptions::exact_buffers)
      .def_rw("tensor_cores", &NativeOptions::tensor_cores)
      .def_rw("attention", &NativeOptions::attention)
      .def_rw("padding_free", &NativeOptions::padding_free);

  nb::class_<PySession>(m, "Session")
      .def_static(
          "load",
          [](const std::string& path, const NativeOptions& n) {
            api::Options o = options(n);
            nb::gil_scoped_release unlocked;
            return new PySession(api::Session(path, o));
          },
          nb::arg("path"), nb::arg("options"))
      .def_static(
          "from_bytes",
          [](nb::bytes data, const NativeOptions& n) {
            api::Options o = options(n);
            const void* bytes = data.c_str();
            const size_t size = data.size();
            nb::gil_scoped_release unlocked;  // (`data` stays referenced by the caller's frame)
            return new PySession(api::Session::from_bytes(bytes, size, o));
          },
          nb::arg("data"), nb::arg("options"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("backend", &PySession::backend)
      .def("run", &PySession::run, nb::arg("names"), nb::arg("codes"), nb::arg("shapes"), nb::arg("datas"),
           nb::arg("cancel").none(), nb::arg("timeout_ms"));

  // The vision pipelines: each result is the photo's JSON, which the Python
  // half parses. Pixels come as the address of an RGB uint8 array the caller
  // keeps alive through the call, with its width, height and row stride.
  nb::class_<api::Detector>(m, "Detector")
      .def(
          "__init__",
          [](api::Detector* self, const std::string& model, const std::string& arch, int32_t width, int32_t height,
             const NativeOptions& n) {
            api::Options o = options(n);
            nb::gil_scoped_release unlocked;
            new (self) api::Detector(model, arch, width, height, o);
          },
          nb::arg("model"), nb::arg("arch"), nb::arg("width"), nb::arg("height"), nb::arg("options"))
      .def(
          "detect_file",
          [](const api::Detector& d, const std::string& path, float conf, float iou) {
            nb::gil_scoped_release unlocked;
            return d.detect(path, conf, iou);
          },
          nb::arg("path"), nb::arg("conf"), nb::arg("iou"))
      .def(
          "detect_rgb8",
          [](const api::Detector& d, uintptr_t data, int32_t width, int32_t height, int64_t stride,
             const std::string& name, float conf, float iou) {
            nb::gil_scoped_release unlocked;
            return d.detect(reinterpret_cast<const uint8_t*>(data), width, height, stride, conf, iou, name);
          },
          nb::arg("data"), nb::arg("width"), nb::arg("height"), nb::arg("stride"), nb::arg("name"), nb::arg("conf"),
          nb::arg("iou"));

  nb::class_<api::TextReader>(m, "TextReader")
      .def(
          "__init__",
          [](api::TextReader* self, const std::string& det, const std::string& rec, const std::string& cls,
             const std::string& dictionary, const NativeOptions& n) {
            api::Options o = options(n);
            nb::gil_scoped_release unlocked;
            new (self) api::TextReader(det, rec, cls, dictionary, o);
          },
          nb::arg("det"), nb::arg("rec"), nb::arg("cls"), nb::arg("dictionary"), nb::arg("options"))
      .def(
          "read_file",
          [](const api::TextReader& r, const std::string& path, float min_score) {
            nb::gil_scoped_release unlocked;
            return r.read(path, min_score);
          },
          nb::arg("path"), nb::arg("min_score"))
      .def(
          "read_rgb8",
          [](const api::TextReader& r, uintptr_t data, int32_t width, int32_t height, int64_t stride,
             const std::string& name, float min_score) {
            nb::gil_scoped_release unlocked;
            return r.read(reinterpret_cast<const uint8_t*>(data), width, height, stride, min_score, name);
          },
          nb::arg("data"), nb::arg("width"), nb::arg("height"), nb::arg("stride"), nb::arg("name"),
          nb::arg("min_score"));
}
