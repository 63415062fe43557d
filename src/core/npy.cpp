#include "core/npy.h"

#include <cstring>
#include <fstream>
#include <map>
#include <optional>

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

// The header of a .npy file is a Python literal dict, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// numpy reads it with ast.literal_eval and requires exactly the keys descr,
// fortran_order and shape. This reads the part of Python's literal grammar
// those values use (strings, True/False, tuples of integers) and refuses
// anything else, naming the file and what is wrong.
struct NpyHeader {
  std::optional<std::string> descr;  // nullopt until seen; a non-string descr is refused
  std::optional<bool> fortran_order;
  std::optional<Shape> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), s_(text) {}

  NpyHeader parse() {
    NpyHeader h;
    expect('{');
    while (!peek('}')) {
      std::string key = string_literal("a key");
      expect(':');
      // A key given twice takes its last value, as Python's dict literal does.
      if (key == "descr") {
        if (!peek('\'') && !peek('"'))
          bad("its 'descr' is not a plain type string (structured and object arrays are not read)");
        h.descr = string_literal("'descr'");
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
      } else if (key == "shape") {
        h.shape = tuple_of_dims();
      } else {
        bad("its header has the key '", key, "'; a .npy header has only 'descr', 'fortran_order' and 'shape'");
      }
      if (!accept(',')) break;
    }
    expect('}');
    skip_space();
    if (pos_ != s_.size()) bad("its header has text after the closing '}'");
    if (!h.descr) bad("its header has no 'descr'");
    if (!h.fortran_order) bad("its header has no 'fortran_order'");
    if (!h.shape) bad("its header has no 'shape'");
    return h;
  }

 private:
  template <typename... A>
  [[noreturn]] void bad(const A&... parts) const {
    fail("'", path_, "' is not a valid .npy file: ", parts...);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c))
      bad("its header should have '", c, "' at character ", pos_, " of \"", s_, "\"");
  }
  // A quoted string without escapes (numpy writes none in these values).
  std::string string_literal(const char* what) {
    skip_space();
    char q = pos_ < s_.size() ? s_[pos_] : '\0';
    if (q != '\'' && q != '"') bad("its header should have a quoted string for ", what, " at character ", pos_);
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) bad("its header has an unterminated string at character ", pos_);
    std::string v = s_.substr(pos_ + 1, end - pos_ - 1);
    if (v.find('\\') != std::string::npos) bad("its header has an escaped string (", v, ")");
    pos_ = end + 1;
    return v;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      size_t n = std::strlen(word);
      if (s_.compare(pos_, n, word) == 0) {
        pos_ += n;
        return value;
      }
    }
    bad("its 'fortran_order' is not True or False (at character ", pos_, ")");
  }
  // (d0, d1, ...) with a trailing comma allowed, "()" for a scalar; each dim a
  // non-negative decimal integer that fits int64.
  Shape tuple_of_dims() {
    if (!accept('(')) bad("its 'shape' is not a tuple (at character ", pos_, ")");
    Shape shape;
    bool comma = false;  // after the last dim: "(3,)" is a tuple, "(3)" a number
    while (!peek(')')) {
      size_t start = pos_;
      int64_t d = 0;
      bool overflow = false;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        overflow = overflow || __builtin_mul_overflow(d, 10, &d) || __builtin_add_overflow(d, s_[pos_] - '0', &d);
        ++pos_;
      }
      // Python 2's numpy wrote longs with an L suffix: (3L, 4L).
      if (pos_ > start && pos_ < s_.size() && s_[pos_] == 'L') ++pos_;
      if (pos_ == start || !(peek(',') || peek(')'))) {
        size_t end = s_.find_first_of(",)", start);
        bad("its 'shape' has the dimension ", s_.substr(start, end == std::string::npos ? end : end - start),
            ", which is not a non-negative integer");
      }
      if (overflow) bad("its 'shape' has the dimension ", s_.substr(start, pos_ - start), ", beyond int64");
      shape.push_back(d);
      comma = accept(',');
      if (!comma) break;
    }
    expect(')');
    if (shape.size() == 1 && !comma) bad("its 'shape' (", shape[0], ") is a number, not a tuple: write (", shape[0], ",)");
    return shape;
  }

  const std::string& path_;
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  KESTREL_CHECK(f, "cannot open '", path, "'");
  return read_npy(f, path);
}

Tensor read_npy(std::istream& f, const std::string& path) {
  char magic[8];
  f.read(magic, 8);
  KESTREL_CHECK(f && std::memcmp(magic, "\x93NUMPY", 6) == 0, "'", path, "' is not a .npy file");
  // Version 1.0 has a 2-byte header length; 2.0 and 3.0 (UTF-8 header) 4 bytes.
  const int major = static_cast<unsigned char>(magic[6]), minor = static_cast<unsigned char>(magic[7]);
  KESTREL_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, "'", path, "' is .npy format version ", major,
                ".", minor, "; Kestrel reads 1.0, 2.0 and 3.0");
  uint32_t hlen = 0;
  if (major == 1) {
    uint16_t h = 0;
    f.read(reinterpret_cast<char*>(&h), 2);
    hlen = h;
  } else {
    f.read(reinterpret_cast<char*>(&hlen), 4);
  }
  // A header is a few hundred bytes; the bound keeps a corrupt length from
  // sizing a huge read.
  KESTREL_CHECK(f && hlen <= (1u << 20), "'", path, "' has a corrupt .npy header length (", hlen, " bytes)");
  std::string header(hlen, '\0');
  f.read(header.data(), hlen);
  KESTREL_CHECK(f, "'", path, "' ends inside its .npy header");
  NpyHeader h = HeaderParser(path, header).parse();
  DType dt = dtype_of_descr(*h.descr);
  KESTREL_CHECK(dt != DType::Undefined, "'", path, "' has element type '", *h.descr, "', which Kestrel does not read");
  KESTREL_CHECK(!*h.fortran_order, "'", path, "' is in Fortran order; save it in C order");
  size_t want = 0;
  try {
    want = tensor_nbytes(dt, *h.shape);  // the count and byte size, checked before anything is allocated
  } catch (const Error& e) {
    fail("'", path, "': ", e.what());
  }
  // The data must be exactly the header's byte count: a shorter file is
  // truncated, a longer one is not what its header says. A regular file's
  // size is checked before allocating (16 bytes cannot claim a terabyte); a
  // pipe is checked as it is read.
  const std::streamoff data_at = f.tellg();
  if (data_at >= 0 && f.seekg(0, std::ios::end)) {
    const std::streamoff data_bytes = f.tellg() - data_at;
    KESTREL_CHECK(uint64_t(data_bytes) == want, "'", path, "' has ", data_bytes, " bytes of data, but its shape ",
                  shape_str(*h.shape), " of ", dtype_name(dt), " needs ", want);
    f.seekg(data_at);
  } else {
    f.clear();
  }
  Tensor t = Tensor::uninitialized(dt, *h.shape);
  f.read(reinterpret_cast<char*>(t.raw()), std::streamsize(want));
  KESTREL_CHECK(f || want == 0, "'", path, "' is truncated: its shape ", shape_str(*h.shape), " of ", dtype_name(dt),
                " needs ", want, " bytes of data");
  KESTREL_CHECK(f.peek() == std::char_traits<char>::eof(), "'", path, "' has more data than its shape ",
                shape_str(*h.shape), " of ", dtype_name(dt), " needs (", want, " bytes)");
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
