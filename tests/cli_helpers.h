// What the tests that drive the `kestrel` CLI share: a model written to a
// temporary file, and one run of the CLI with its wait status and output.
#pragma once
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "onnx_builders.h"

namespace kestrel::test {

// A model file under the temporary directory, named by `tag` and the process,
// removed with this object.
struct ModelFile {
  std::string path;
  ModelFile(const std::string& bytes, const std::string& tag)
      : path((std::filesystem::temp_directory_path() /
              ("kestrel_" + tag + "_" + std::to_string(getpid()) + ".onnx")).string()) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ModelFile(const onnx::ModelProto& m, const std::string& tag) : ModelFile(bytes_of(m), tag) {}
  ModelFile(const ModelFile&) = delete;
  ModelFile& operator=(const ModelFile&) = delete;
  ~ModelFile() { std::filesystem::remove(path); }
};

struct CliResult {
  int status = -1;  // as pclose gives it (WIFEXITED, WEXITSTATUS); -1: the shell did not start
  std::string out;  // stdout (and stderr where `args` ends with 2>&1)
};

// build/kestrel with `args`, as the shell reads them.
inline CliResult run_kestrel(const std::string& args) {
  CliResult r;
  FILE* p = popen((std::string(KESTREL_BINARY_DIR) + "/kestrel " + args).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  r.status = pclose(p);
  return r;
}

}  // namespace kestrel::test
