#include "onnx_suite.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "onnx/loader.h"
#include "runtime/session.h"

namespace fs = std::filesystem;

namespace kestrel::suite {
namespace {

void collect_ops(const ir::Graph& g, std::set<std::string>& ops) {
  for (const auto& n : g.nodes) {
    ops.insert(n.op_type);
    for (const auto& [k, a] : n.attrs)
      if (a.g) collect_ops(*a.g, ops);
  }
}

std::vector<std::string> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) v.push_back(e.path().string());
  // input_10.pb must follow input_9.pb
  std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return v;
}

std::string compare(const Tensor& got, const Tensor& want, const std::string& name) {
  std::ostringstream os;
  if (got.shape() != want.shape()) {
    os << "output '" << name << "' has shape " << shape_str(got.shape()) << ", expected " << shape_str(want.shape());
    return os.str();
  }
  if (got.dtype() != want.dtype()) {
    os << "output '" << name << "' has type " << dtype_name(got.dtype()) << ", expected " << dtype_name(want.dtype());
    return os.str();
  }
  if (!dtype_is_float(want.dtype())) {
    if (!got.same_as(want)) os << "output '" << name << "' differs (exact match required for " << dtype_name(want.dtype()) << ")";
    return os.str();
  }
  std::vector<float> g = got.to_f32(), w = want.to_f32();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (std::isinf(w[i]) && g[i] == w[i]) continue;
    double err = std::fabs(double(g[i]) - double(w[i]));
    if (!(err <= kAtol + kRtol * std::fabs(double(w[i])))) {
      os << "output '" << name << "' element " << i << " is " << g[i] << ", expected " << w[i];
      return os.str();
    }
  }
  return "";
}

}  // namespace

std::vector<std::string> list_cases() {
  std::vector<std::string> cases;
  for (const char* group : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    fs::path root = fs::path(kSuiteRoot) / group;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::directory_iterator(root))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(std::string(group) + "/" + e.path().filename().string());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

CaseResult run_case(const std::string& case_dir, CpuKernels kernels) {
  CaseResult r;
  fs::path dir = fs::path(kSuiteRoot) / case_dir;
  try {
    onnx_io::Model m = onnx_io::load_model_file((dir / "model.onnx").string());
    collect_ops(m.graph, r.ops);
    SessionOptions opts;
    opts.threads = 2;
    opts.cpu_kernels = kernels;
    auto s = Session::load((dir / "model.onnx").string(), opts);
    for (const auto& set : sorted_files(dir, "test_data_set_")) {
      std::map<std::string, Tensor> inputs;
      auto in_files = sorted_files(set, "input_");
      for (size_t i = 0; i < in_files.size() && i < s->inputs().size(); ++i) {
        std::string pb_name;
        Tensor t = onnx_io::read_tensor_pb_file(in_files[i], &pb_name);
        inputs[pb_name.empty() ? s->inputs()[i].name : pb_name] = t;
      }
      auto outs = s->run(inputs);
      auto out_files = sorted_files(set, "output_");
      if (out_files.size() != outs.size()) {
        r.message = "expected " + std::to_string(out_files.size()) + " outputs, got " + std::to_string(outs.size());
        return r;
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        Tensor want = onnx_io::read_tensor_pb_file(out_files[i]);
        std::string diff = compare(outs[i], want, s->outputs()[i].name);
        if (!diff.empty()) {
          r.message = fs::path(set).filename().string() + ": " + diff;
          return r;
        }
      }
    }
    r.passed = true;
  } catch (const std::exception& e) {
    r.message = e.what();
  }
  return r;
}

std::vector<std::pair<std::string, std::string>> read_expected_failures(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> v;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    v.emplace_back(line.substr(0, tab), tab == std::string::npos ? "" : line.substr(tab + 1));
  }
  return v;
}

}  // namespace kestrel::suite
