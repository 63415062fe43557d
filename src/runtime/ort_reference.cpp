#include "runtime/ort_reference.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/npy.h"

namespace kestrel {
namespace fs = std::filesystem;

namespace {

// Single-quoted for /bin/sh.
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A fresh folder under the system temp dir, removed with its contents on scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kestrel-ort-XXXXXX").string();
    KESTREL_CHECK(mkdtemp(tmpl.data()), "cannot create a temporary folder under ", fs::temp_directory_path());
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The number after "key": in a one-line JSON object.
double json_number(const std::string& line, const std::string& key) {
  auto at = line.find("\"" + key + "\":");
  KESTREL_CHECK(at != std::string::npos, "ONNX Runtime benchmark line lacks ", key, ": ", line);
  return std::strtod(line.c_str() + at + key.size() + 3, nullptr);
}

}  // namespace

std::string find_ort_script(const std::string& source_dir) {
  std::vector<fs::path> tried;
  if (const char* home = std::getenv("KESTREL_HOME"); home && *home) tried.push_back(fs::path(home) / "tools/ort_reference.js");
  tried.push_back(fs::path(source_dir) / "tools/ort_reference.js");
  for (const auto& p : tried)
    if (fs::is_regular_file(p)) return p.string();
  fail("cannot find tools/ort_reference.js (looked at ", tried.front().string(),
       tried.size() > 1 ? " and " + tried.back().string() : std::string(), "): set KESTREL_HOME to the Kestrel source tree");
}

OrtResult run_onnxruntime(const std::string& script, const std::string& model,
                          const std::map<std::string, Tensor>& inputs, int threads, int bench_runs) {
  TempDir tmp;
  fs::path out = tmp.path / "out";
  std::string cmd = "node " + shell_quote(script) + " " + shell_quote(model) + " " + shell_quote(out.string());
  int i = 0;
  for (const auto& [name, t] : inputs) {
    fs::path file = tmp.path / ("in" + std::to_string(i++) + ".npy");
    write_npy(file.string(), t);
    cmd += " " + shell_quote(name + "=" + file.string());
  }
  cmd += " --threads " + std::to_string(threads);
  if (bench_runs > 0) cmd += " --bench " + std::to_string(bench_runs);

  FILE* p = popen(cmd.c_str(), "r");
  KESTREL_CHECK(p, "cannot start node to run ONNX Runtime");
  std::string stdout_text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) stdout_text.append(buf, n);
  int status = pclose(p);
  KESTREL_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "ONNX Runtime reference failed (exit status ", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                ") running: ", cmd);

  OrtResult r;
  for (int k = 0; fs::exists(out / (std::to_string(k) + ".npy")); ++k)
    r.outputs.push_back(read_npy((out / (std::to_string(k) + ".npy")).string()));
  if (bench_runs > 0) {
    auto at = stdout_text.rfind("{\"min_ms\"");
    KESTREL_CHECK(at != std::string::npos, "ONNX Runtime printed no benchmark line: ", stdout_text);
    std::string line = stdout_text.substr(at);
    r.times = OrtTimes{json_number(line, "min_ms"), json_number(line, "median_ms"), json_number(line, "max_ms")};
  }
  return r;
}

}  // namespace kestrel
