// TensorProto -> Tensor, including external data, with every size checked so
// a corrupt file gives an Error rather than a crash or a huge allocation.
#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "onnx/loader.h"

namespace kestrel::onnx_io {
namespace {

constexpr int64_t kMaxElements = int64_t(1) << 36;  // 64 Gi elements: beyond any real model

template <typename Src, typename Dst>
void copy_field(const google::protobuf::RepeatedField<Src>& f, Tensor& t) {
  KESTREL_CHECK(f.size() == t.numel(), "has ", f.size(), " values for shape ", shape_str(t.shape()));
  Dst* d = t.data<Dst>();
  for (int i = 0; i < f.size(); ++i) d[i] = static_cast<Dst>(f.Get(i));
}

void read_external(const onnx::TensorProto& p, const std::string& base_dir, Tensor& t) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::stoll(kv.value());
    else if (kv.key() == "length") length = std::stoll(kv.value());
  }
  KESTREL_CHECK(!location.empty(), "external data has no 'location'");
  KESTREL_CHECK(location.find("..") == std::string::npos && location[0] != '/',
                "external data location '", location, "' must be a relative path inside the model's folder");
  KESTREL_CHECK(!base_dir.empty(), "external data '", location, "' cannot be read: the model was not loaded from a file");
  std::string path = base_dir + "/" + location;
  std::ifstream f(path, std::ios::binary);
  KESTREL_CHECK(f, "external data file '", path, "' cannot be opened");
  f.seekg(0, std::ios::end);
  int64_t file_size = f.tellg();
  int64_t want = int64_t(t.nbytes());
  if (length < 0) length = want;
  KESTREL_CHECK(length == want, "external data length ", length, " does not match ", want, " bytes for shape ",
                shape_str(t.shape()));
  KESTREL_CHECK(offset >= 0 && offset + length <= file_size, "external data [", offset, ", ", offset + length,
                ") lies outside '", path, "' (", file_size, " bytes)");
  f.seekg(offset);
  f.read(reinterpret_cast<char*>(t.raw()), length);
  KESTREL_CHECK(f, "reading external data from '", path, "' failed");
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  const std::string who = "tensor '" + p.name() + "'";
  try {
    DType dt = static_cast<DType>(p.data_type());
    KESTREL_CHECK(dtype_supported(dt), "has element type ", p.data_type(), " (", dtype_name(dt),
                  "), which Kestrel does not support");
    Shape shape;
    int64_t n = 1;
    for (int64_t d : p.dims()) {
      KESTREL_CHECK(d >= 0, "has a negative dimension ", d);
      KESTREL_CHECK(d == 0 || n <= kMaxElements / d, "is too large (more than 2^36 elements)");
      n *= d;
      shape.push_back(d);
    }
    Tensor t(dt, shape);
    if (p.data_location() == onnx::TensorProto::EXTERNAL) {
      read_external(p, base_dir, t);
      return t;
    }
    if (p.has_raw_data()) {
      KESTREL_CHECK(p.raw_data().size() == t.nbytes(), "has ", p.raw_data().size(), " bytes of raw data, but shape ",
                    shape_str(shape), " of ", dtype_name(dt), " needs ", t.nbytes());
      if (t.nbytes()) std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
      return t;
    }
    switch (dt) {
      case DType::Float32: copy_field<float, float>(p.float_data(), t); break;
      case DType::Float64: copy_field<double, double>(p.double_data(), t); break;
      case DType::Int64: copy_field<int64_t, int64_t>(p.int64_data(), t); break;
      case DType::UInt32: copy_field<uint64_t, uint32_t>(p.uint64_data(), t); break;
      case DType::UInt64: copy_field<uint64_t, uint64_t>(p.uint64_data(), t); break;
      case DType::Int32: copy_field<int32_t, int32_t>(p.int32_data(), t); break;
      case DType::Int16: copy_field<int32_t, int16_t>(p.int32_data(), t); break;
      case DType::UInt16: copy_field<int32_t, uint16_t>(p.int32_data(), t); break;
      case DType::Int8: copy_field<int32_t, int8_t>(p.int32_data(), t); break;
      case DType::UInt8: copy_field<int32_t, uint8_t>(p.int32_data(), t); break;
      case DType::Bool: copy_field<int32_t, bool>(p.int32_data(), t); break;
      // float16/bfloat16 values are stored as their bit patterns in int32_data.
      case DType::Float16: case DType::BFloat16: copy_field<int32_t, uint16_t>(p.int32_data(), t); break;
      default: fail("has an unsupported element type");
    }
    return t;
  } catch (const Error& e) {
    fail(who, " ", e.what());
  } catch (const std::bad_alloc&) {
    fail(who, " does not fit in memory");
  }
}

Tensor read_tensor_pb_file(const std::string& path, std::string* name) {
  std::ifstream f(path, std::ios::binary);
  KESTREL_CHECK(f, "cannot open '", path, "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  onnx::TensorProto p;
  KESTREL_CHECK(p.ParseFromString(bytes), "'", path, "' is not a TensorProto");
  if (name) *name = p.name();
  return tensor_from_proto(p, "");
}

}  // namespace kestrel::onnx_io
