// The CLI's input files (apps/input_files.h): a .npz archive, stored or
// deflated, and an ONNX TensorProto .pb give the same outputs as the same
// arrays in .npy files, and unreadable files are refused naming them.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <zip.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_helpers.h"
#include "core/npy.h"
#include "real_models.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kestrel_inputs_" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// An archive of the given members (name -> bytes), each deflated or stored, as numpy.savez(_compressed) writes.
void write_zip(const std::string& path, const std::map<std::string, std::string>& members, bool deflate) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  ASSERT_NE(z, nullptr) << "zip_open " << error;
  for (const auto& [name, bytes] : members) {
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    zip_int64_t i = zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE);
    ASSERT_GE(i, 0) << zip_strerror(z);
    zip_set_file_compression(z, zip_uint64_t(i), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  ASSERT_EQ(zip_close(z), 0);  // (writes the archive; the buffers must live until here)
}

std::map<std::string, Tensor> silero_feeds() {
  for (const auto& m : real_models::all())
    if (m.name == "silero_vad") return m.inputs(real_models::models_dir());
  ADD_FAILURE() << "silero_vad is not in the real model table";
  return {};
}

std::string run_outputs(const std::string& model, const std::string& inputs, const std::string& dir) {
  fs::create_directories(dir);
  test::CliResult r = test::run_kestrel("run " + model + " --backend cpu --threads 1 " + inputs + " --output-dir " +
                                        dir + " 2>&1");
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out;
  return file_bytes(dir + "/0.npy") + file_bytes(dir + "/1.npy");
}

TEST(CliInputFiles, NpzAndPbGiveTheSameOutputsAsNpy) {
  const std::string model = real_models::models_dir() + "/silero_vad.onnx";
  ASSERT_TRUE(fs::exists(model)) << model << " is missing: run scripts/fetch_models.sh";
  TempDir d;
  std::string npy_flags;
  std::map<std::string, std::string> members;
  for (const auto& [name, t] : silero_feeds()) {
    write_npy(d / (name + ".npy"), t);
    npy_flags += " --input " + name + "=" + (d / (name + ".npy"));
    members[name + ".npy"] = file_bytes(d / (name + ".npy"));
  }
  const std::string expected = run_outputs(model, npy_flags, d / "npy");
  ASSERT_FALSE(expected.empty());

  write_zip(d / "stored.npz", members, false);
  write_zip(d / "deflated.npz", members, true);
  EXPECT_EQ(run_outputs(model, "--inputs " + (d / "stored.npz"), d / "stored"), expected);
  EXPECT_EQ(run_outputs(model, "--inputs " + (d / "deflated.npz"), d / "deflated"), expected);

  // 'input' as an ONNX TensorProto, the rest from the archive.
  const Tensor input = silero_feeds().at("input");
  onnx::TensorProto p;
  p.set_name("input");
  p.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : input.shape()) p.add_dims(dim);
  p.set_raw_data(std::string(reinterpret_cast<const char*>(input.raw()), input.nbytes()));
  std::ofstream(d / "input_0.pb", std::ios::binary) << p.SerializeAsString();
  EXPECT_EQ(run_outputs(model, "--inputs " + (d / "stored.npz") + " --input input=" + (d / "input_0.pb"), d / "pb"),
            expected);
}

TEST(CliInputFiles, UnreadableFilesAreNamed) {
  const std::string model = real_models::models_dir() + "/silero_vad.onnx";
  TempDir d;
  std::ofstream(d / "x.txt") << "1 2 3";
  std::ofstream(d / "not.npz") << "not a zip archive";
  write_zip(d / "odd.npz", {{"notes.txt", "hello"}}, false);
  auto expect_error = [&](const std::string& flags, const std::string& message) {
    test::CliResult r = test::run_kestrel("run " + model + " --backend cpu " + flags + " 2>&1");
    EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << "expected '" << message << "' in: " << r.out;
  };
  expect_error("--input input=" + (d / "x.txt"), "input file '" + (d / "x.txt") + "': Kestrel reads .npy");
  expect_error("--inputs " + (d / "not.npz"), "--inputs '" + (d / "not.npz") + "': not a readable .npz archive");
  expect_error("--inputs " + (d / "odd.npz"), "member 'notes.txt' is not a .npy array");
  expect_error("--inputs " + (d / "missing.npz"), "--inputs '" + (d / "missing.npz") + "': not a readable .npz");
}

}  // namespace
}  // namespace kestrel
