// TensorProto -> Tensor, including external data, with every size checked so
// a corrupt file gives an Error rather than a crash or a huge allocation.
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "onnx/loader.h"

namespace kestrel::onnx_io {
namespace {

constexpr int64_t kMaxElements = int64_t(1) << 36;  // 64 Gi elements: beyond any real model

// Every reader checks the stored size against the shape before allocating, so
// a tiny file declaring a huge shape is an Error, not a huge allocation.
template <typename Src, typename Dst>
Tensor from_field(const google::protobuf::RepeatedField<Src>& f, DType dt, const Shape& shape) {
  KESTREL_CHECK(f.size() == shape_numel(shape), "has ", f.size(), " values for shape ", shape_str(shape));
  Tensor t(dt, shape);
  Dst* d = t.data<Dst>();
  for (int i = 0; i < f.size(); ++i) d[i] = static_cast<Dst>(f.Get(i));
  return t;
}

int64_t parse_i64(const std::string& key, const std::string& v) {
  size_t used = 0;
  int64_t r = 0;
  try {
    r = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  KESTREL_CHECK(used == v.size() && used > 0, "external data '", key, "' is not an integer: '", v, "'");
  return r;
}

Tensor read_external(const onnx::TensorProto& p, const std::string& base_dir, DType dt, const Shape& shape) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse_i64(kv.key(), kv.value());
    else if (kv.key() == "length") length = parse_i64(kv.key(), kv.value());
  }
  KESTREL_CHECK(!location.empty(), "external data has no 'location'");
  KESTREL_CHECK(location.find("..") == std::string::npos && location[0] != '/',
                "external data location '", location, "' must be a relative path inside the model's folder");
  KESTREL_CHECK(!base_dir.empty(), "external data '", location, "' cannot be read: the model was not loaded from a file");
  std::string path = base_dir + "/" + location;
  std::error_code ec;
  KESTREL_CHECK(std::filesystem::is_regular_file(path, ec), "external data file '", path,
                "' does not exist or is not a regular file");
  std::ifstream f(path, std::ios::binary);
  KESTREL_CHECK(f, "external data file '", path, "' cannot be opened");
  f.seekg(0, std::ios::end);
  int64_t file_size = f.tellg();
  int64_t want = shape_numel(shape) * int64_t(dtype_size(dt));
  if (length < 0) length = want;
  KESTREL_CHECK(length == want, "external data length ", length, " does not match ", want, " bytes for shape ",
                shape_str(shape));
  // Written so that a huge offset cannot overflow.
  KESTREL_CHECK(offset >= 0 && offset <= file_size && length <= file_size - offset, "external data at offset ", offset,
                " with length ", length, " lies outside '", path, "' (", file_size, " bytes)");
  Tensor t(dt, shape);
  f.seekg(offset);
  f.read(reinterpret_cast<char*>(t.raw()), length);
  KESTREL_CHECK(f, "reading external data from '", path, "' failed");
  return t;
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
    if (p.data_location() == onnx::TensorProto::EXTERNAL) return read_external(p, base_dir, dt, shape);
    if (p.has_raw_data()) {
      size_t want = size_t(n) * dtype_size(dt);
      KESTREL_CHECK(p.raw_data().size() == want, "has ", p.raw_data().size(), " bytes of raw data, but shape ",
                    shape_str(shape), " of ", dtype_name(dt), " needs ", want);
      Tensor t(dt, shape);
      if (want) std::memcpy(t.raw(), p.raw_data().data(), want);
      return t;
    }
    switch (dt) {
      case DType::Float32: return from_field<float, float>(p.float_data(), dt, shape);
      case DType::Float64: return from_field<double, double>(p.double_data(), dt, shape);
      case DType::Int64: return from_field<int64_t, int64_t>(p.int64_data(), dt, shape);
      case DType::UInt32: return from_field<uint64_t, uint32_t>(p.uint64_data(), dt, shape);
      case DType::UInt64: return from_field<uint64_t, uint64_t>(p.uint64_data(), dt, shape);
      case DType::Int32: return from_field<int32_t, int32_t>(p.int32_data(), dt, shape);
      case DType::Int16: return from_field<int32_t, int16_t>(p.int32_data(), dt, shape);
      case DType::UInt16: return from_field<int32_t, uint16_t>(p.int32_data(), dt, shape);
      case DType::Int8: return from_field<int32_t, int8_t>(p.int32_data(), dt, shape);
      case DType::UInt8: return from_field<int32_t, uint8_t>(p.int32_data(), dt, shape);
      case DType::Bool: return from_field<int32_t, bool>(p.int32_data(), dt, shape);
      // float16/bfloat16 values are stored as their bit patterns in int32_data.
      case DType::Float16: case DType::BFloat16: return from_field<int32_t, uint16_t>(p.int32_data(), dt, shape);
      default: fail("has an unsupported element type");
    }
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
