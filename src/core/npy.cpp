#include "core/npy.h"

#include <cstring>
#include <fstream>
#include <regex>

namespace kestrel {
namespace {

const char* descr_of(DType t) {
  switch (t) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Float16: return "<f2";
    case DType::Int8: return "|i1";
    case DType::UInt8: return "|u1";
    case DType::Int16: return "<i2";
    case DType::UInt16: return "<u2";
    case DType::Int32: return "<i4";
    case DType::UInt32: return "<u4";
    case DType::Int64: return "<i8";
    case DType::UInt64: return "<u8";
    case DType::Bool: return "|b1";
    default: return nullptr;
  }
}

DType dtype_of_descr(const std::string& d) {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::UInt8, DType::Int16,
                  DType::UInt16, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Bool}) {
    std::string mine = descr_of(t);
    if (d == mine || (d.size() == 3 && mine.substr(1) == d.substr(1) && (d[0] == '=' || d[0] == '|' || d[0] == '<')))
      return t;
  }
  return DType::Undefined;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  KESTREL_CHECK(f, "cannot open '", path, "'");
  char magic[8];
  f.read(magic, 8);
  KESTREL_CHECK(f && std::memcmp(magic, "\x93NUMPY", 6) == 0, "'", path, "' is not a .npy file");
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    uint16_t h;
    f.read(reinterpret_cast<char*>(&h), 2);
    hlen = h;
  } else {
    f.read(reinterpret_cast<char*>(&hlen), 4);
  }
  KESTREL_CHECK(f && hlen < (1u << 20), "'", path, "' has a corrupt .npy header");
  std::string header(hlen, '\0');
  f.read(header.data(), hlen);
  std::smatch m;
  KESTREL_CHECK(std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'")), "'", path, "': no descr in header");
  std::string descr = m[1];
  DType dt = dtype_of_descr(descr);
  KESTREL_CHECK(dt != DType::Undefined, "'", path, "' has element type '", descr, "', which Kestrel does not read");
  KESTREL_CHECK(std::regex_search(header, m, std::regex("'fortran_order':\\s*(True|False)")) && m[1] == "False", "'",
                path, "' is in Fortran order; save it in C order");
  KESTREL_CHECK(std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")), "'", path, "': no shape in header");
  Shape shape;
  std::string dims = m[1];
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it)
    shape.push_back(std::stoll(it->str()));
  Tensor t(dt, shape);
  f.read(reinterpret_cast<char*>(t.raw()), std::streamsize(t.nbytes()));
  KESTREL_CHECK(f || t.nbytes() == 0, "'", path, "' is truncated: expected ", t.nbytes(), " bytes of data for shape ",
                shape_str(shape));
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  Tensor src = t;
  if (t.dtype() == DType::BFloat16) src = t.cast(DType::Float32);  // numpy has no bfloat16
  const char* descr = descr_of(src.dtype());
  KESTREL_CHECK(descr, "cannot write a ", dtype_name(t.dtype()), " tensor as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < src.shape().size(); ++i) shape += std::to_string(src.shape()[i]) + ",";
  if (src.shape().size() > 1) shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  KESTREL_CHECK(f, "cannot write '", path, "'");
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t hlen = uint16_t(header.size());
  f.write(reinterpret_cast<const char*>(&hlen), 2);
  f.write(header.data(), std::streamsize(header.size()));
  f.write(reinterpret_cast<const char*>(src.raw()), std::streamsize(src.nbytes()));
  KESTREL_CHECK(f, "writing '", path, "' failed");
}

}  // namespace kestrel
