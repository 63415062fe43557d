// TensorProto -> Tensor, including external data, with every size checked so
// a corrupt file gives an Error rather than a crash or a huge allocation.
#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

// An external data file, open for reading, and its size.
struct ExternalFile {
  std::string path;  // as resolved, for messages
  int fd = -1;
  int64_t size = 0;
  ExternalFile() = default;
  ExternalFile(const ExternalFile&) = delete;
  ExternalFile& operator=(const ExternalFile&) = delete;
  ~ExternalFile() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens `location` under the model's folder. The file must really lie inside
// that folder: ".." as a path component and absolute paths are refused, and
// symbolic links are resolved first, so neither "weights.bin -> /etc/passwd"
// nor a linked folder can make a model read (and output) a file from
// elsewhere. Only a regular file is read; a FIFO or a device is refused
// without blocking on it.
void open_external(const std::string& base_dir, const std::string& location, ExternalFile& f) {
  namespace fs = std::filesystem;
  const fs::path rel(location);
  bool climbs = std::any_of(rel.begin(), rel.end(), [](const fs::path& part) { return part == ".."; });
  KESTREL_CHECK(location.find('\0') == std::string::npos && !rel.has_root_path() && !climbs,
                "external data location '", location, "' must be a relative path inside the model's folder");
  KESTREL_CHECK(!base_dir.empty(), "external data '", location,
                "' cannot be read: the model was not loaded from a file");
  std::error_code ec;
  const fs::path folder = fs::canonical(base_dir, ec);
  KESTREL_CHECK(!ec, "the model's folder '", base_dir, "' cannot be resolved: ", ec.message());
  const fs::path named = fs::path(base_dir) / rel;
  const fs::path real = fs::canonical(named, ec);
  KESTREL_CHECK_AS(ErrorKind::NoSuchFile, !ec, "external data file '", named.string(), "' does not exist or is not a regular file (",
                ec.message(), ")");
  // Inside means the folder's real path is a prefix of the file's, by components.
  auto diverge = std::mismatch(folder.begin(), folder.end(), real.begin(), real.end());
  KESTREL_CHECK(diverge.first == folder.end() && diverge.second != real.end(), "external data location '",
                location, "' resolves to '", real.string(), "', which lies outside the model's folder '",
                folder.string(), "' (through a symbolic link)");
  f.path = real.string();
  // O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: the
  // resolved path has no link left, so one appearing now is refused.
  f.fd = ::open(real.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  KESTREL_CHECK(f.fd >= 0, "external data file '", f.path, "' cannot be opened: ", std::strerror(errno));
  struct stat st {};
  KESTREL_CHECK(::fstat(f.fd, &st) == 0 && S_ISREG(st.st_mode), "external data file '", f.path,
                "' is not a regular file");
  f.size = int64_t(st.st_size);
}

Tensor read_external(const onnx::TensorProto& p, const std::string& base_dir, DType dt, const Shape& shape) {
  std::string location;
  int64_t offset = 0, length = -1;
  bool has_length = false;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse_i64(kv.key(), kv.value());
    else if (kv.key() == "length") length = parse_i64(kv.key(), kv.value()), has_length = true;
  }
  KESTREL_CHECK(!location.empty(), "external data has no 'location'");
  KESTREL_CHECK(offset >= 0, "external data 'offset' must not be negative, got ", offset);
  KESTREL_CHECK(!has_length || length >= 0, "external data 'length' must not be negative, got ", length);
  ExternalFile f;
  open_external(base_dir, location, f);
  int64_t want = shape_numel(shape) * int64_t(dtype_size(dt));
  if (!has_length) length = want;
  KESTREL_CHECK(length == want, "external data length ", length, " does not match ", want, " bytes for shape ",
                shape_str(shape));
  // Written so that a huge offset cannot overflow.
  KESTREL_CHECK(offset <= f.size && length <= f.size - offset, "external data at offset ", offset, " with length ",
                length, " lies outside '", f.path, "' (", f.size, " bytes)");
  Tensor t(dt, shape);
  auto* dst = reinterpret_cast<char*>(t.raw());
  for (int64_t done = 0; done < length;) {
    ssize_t got = ::pread(f.fd, dst + done, size_t(length - done), off_t(offset + done));
    if (got < 0 && errno == EINTR) continue;
    KESTREL_CHECK(got > 0, "reading external data from '", f.path, "' failed at byte ", offset + done,
                  got < 0 ? std::string(": ") + std::strerror(errno) : std::string(": the file ended"));
    done += got;
  }
  return t;
}

// 4-bit values, packed two a byte (the first in the low nibble) in raw or
// external data, or two an int32 in int32_data: unpacked one a byte, Int4
// sign-extended.
Tensor four_bit(const onnx::TensorProto& p, const std::string& base_dir, DType dt, const Shape& shape) {
  const int64_t n = shape_numel(shape), bytes = (n + 1) / 2;
  std::vector<uint8_t> packed;
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    const Tensor raw = read_external(p, base_dir, DType::UInt8, {bytes});
    packed.assign(raw.data<uint8_t>(), raw.data<uint8_t>() + bytes);
  } else if (p.has_raw_data()) {
    KESTREL_CHECK(int64_t(p.raw_data().size()) == bytes, "has ", p.raw_data().size(), " bytes of raw data, but shape ",
                  shape_str(shape), " of ", dtype_name(dt), " packs into ", bytes);
    packed.assign(p.raw_data().begin(), p.raw_data().end());
  } else {
    KESTREL_CHECK(int64_t(p.int32_data_size()) == bytes, "has ", p.int32_data_size(),
                  " int32_data values, but shape ", shape_str(shape), " of ", dtype_name(dt), " packs into ", bytes);
    for (int32_t v : p.int32_data()) packed.push_back(uint8_t(v));
  }
  Tensor t(dt, shape);
  uint8_t* out = t.raw();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t nibble = (packed[size_t(i / 2)] >> (4 * (i % 2))) & 0xF;
    out[i] = dt == DType::Int4 && nibble >= 8 ? uint8_t(nibble | 0xF0) : nibble;
  }
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
    if (dt == DType::Int4 || dt == DType::UInt4) return four_bit(p, base_dir, dt, shape);
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
