#include "apps/input_files.h"

#include <zip.h>

#include <memory>
#include <sstream>
#include <string>

#include "core/npy.h"
#include "onnx/loader.h"

namespace kestrel::cli {

namespace {
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

Tensor read_input_file(const std::string& path) {
  if (ends_with(path, ".npy")) return read_npy(path);
  if (ends_with(path, ".pb")) return onnx_io::read_tensor_pb_file(path);
  fail("input file '", path, "': Kestrel reads .npy (numpy.save) and .pb (ONNX TensorProto) files; for a .npz ",
       "archive use --inputs FILE.npz");
}

// An .npz is a zip archive of .npy files, stored or deflated: libzip reads
// both (and checks each member's CRC).
std::map<std::string, Tensor> read_npz(const std::string& path) {
  int error = 0;
  std::unique_ptr<zip_t, int (*)(zip_t*)> archive(zip_open(path.c_str(), ZIP_RDONLY, &error), zip_close);
  if (!archive) {
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    fail("--inputs '", path, "': not a readable .npz archive (", why, ")");
  }
  std::map<std::string, Tensor> out;
  const zip_int64_t count = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    KESTREL_CHECK(zip_stat_index(archive.get(), zip_uint64_t(i), 0, &st) == 0 && (st.valid & ZIP_STAT_NAME) &&
                      (st.valid & ZIP_STAT_SIZE),
                  "--inputs '", path, "': member ", i, " cannot be read (", zip_strerror(archive.get()), ")");
    const std::string member = st.name;
    KESTREL_CHECK(ends_with(member, ".npy"), "--inputs '", path, "': member '", member, "' is not a .npy array");
    KESTREL_CHECK(st.size <= kMaxTensorBytes + 4096, "--inputs '", path, "': member '", member, "' is too large");
    std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(zip_fopen_index(archive.get(), zip_uint64_t(i), 0),
                                                          zip_fclose);
    KESTREL_CHECK(file, "--inputs '", path, "': member '", member, "' cannot be opened (", zip_strerror(archive.get()),
                  ")");
    std::string bytes(size_t(st.size), '\0');
    const zip_int64_t got = zip_fread(file.get(), bytes.data(), st.size);
    KESTREL_CHECK(got == zip_int64_t(st.size), "--inputs '", path, "': member '", member, "' is truncated or corrupt (",
                  zip_file_strerror(file.get()), ")");
    std::istringstream in(bytes);
    const std::string name = member.substr(0, member.size() - 4);
    out[name] = read_npy(in, path + ":" + member);
  }
  return out;
}

}  // namespace kestrel::cli
