// kestrel run / kestrel bench
#include <algorithm>
#include <cmath>
#include <chrono>
#include <map>
#include <cstdio>
#include <filesystem>

#include "apps/cli.h"
#include "apps/json_report.h"
#include "core/buffer_pool.h"
#include "core/npy.h"
#include "onnx/loader.h"

namespace kestrel::cli {

int cmd_run(int argc, char** argv) {
  Args a = parse_args(argc, argv,
                      with_session_flags({"--input", "--inputs", "--output-dir", "--dim", "--shape", "--seed", "--save-inputs", "--runs"}),
                      with_session_switches({}));
  KESTREL_CHECK(a.positional.size() == 1, "run expects one MODEL argument");
  auto s = Session::load(a.positional[0], session_options(a));
  auto inputs = make_inputs(*s, a, unsigned(a.get_int("--seed", 1234)));
  if (std::string dir = a.get("--save-inputs", ""); !dir.empty()) {
    // Lets other tools (ONNX Runtime, benchmarks) run on exactly these inputs.
    std::filesystem::create_directories(dir);
    for (size_t i = 0; i < s->inputs().size(); ++i)
      write_npy(dir + "/" + std::to_string(i) + ".npy", inputs.at(s->inputs()[i].name));
  }
  // --runs N: the last of N runs is reported (a fused encoder's first run of
  // each input shape is checked against its original ops on the CPU).
  const int runs = a.get_int("--runs", 1);
  KESTREL_CHECK(runs >= 1, "--runs must be at least 1");
  RunStats st;
  std::vector<Tensor> outs;
  for (int r = 0; r < runs; ++r) {
    outs = s->run(inputs, &st);
    if (runs > 1) progress("run", r + 1, runs);
  }
  for (size_t i = 0; i < outs.size(); ++i)
    std::printf("output %zu '%s': %s\n", i, s->outputs()[i].name.c_str(), summarize(outs[i]).c_str());
  std::printf("time: %.3f ms (backend %s, %d threads)\n", st.ms, s->backend_name().c_str(), s->threads());
  if (s->placement()) std::printf("%s\n", s->placement_summary().c_str());
  std::string dir = a.get("--output-dir", "");
  if (!dir.empty()) {
    std::filesystem::create_directories(dir);
    for (size_t i = 0; i < outs.size(); ++i) write_npy(dir + "/" + std::to_string(i) + ".npy", outs[i]);
    std::printf("wrote %zu outputs to %s\n", outs.size(), dir.c_str());
  }
  return 0;
}

namespace {
// Per-op-type time over the measured runs, for `bench --profile`.
struct Profile {
  std::map<std::string, std::pair<double, int>> by_op;  // op -> (ms, nodes run)
  std::map<std::string, double> by_node;                // "name (op)" -> ms
  std::map<std::string, std::pair<size_t, double>> per_node;  // node name -> (order first run, ms)
  // Vulkan: device time by kernel, from timestamps (PlacementReport::kernels).
  std::map<std::string, std::pair<double, int>> kernels;  // shader -> (ms, dispatches)
  void add_kernels(const std::optional<backends::PlacementReport>& p) {
    if (!p) return;
    for (auto& [shader, e] : p->kernels) {
      kernels[shader].first += e.first;
      kernels[shader].second += e.second;
    }
  }
  static void record(void* self, const backends::NodeTiming& t) {
    auto* p = static_cast<Profile*>(self);
    auto& e = p->by_op[t.node->op_type];
    e.first += t.ms;
    e.second += 1;
    p->per_node.try_emplace(t.node->name, p->per_node.size(), 0.0).first->second.second += t.ms;
    std::string shapes;
    for (const Shape& s : t.input_shapes) shapes += (shapes.empty() ? "" : " ") + shape_str(s);
    p->by_node[t.node->name + " (" + t.node->op_type + ") " + shapes] += t.ms;
  }
  // {"ops": {op: ms per run}, "nodes": [{"node", "ms"} per run, in run order]}.
  Json json(int runs) const {
    Json ops = Json::object(), nodes = Json::array();
    for (auto& [op, e] : by_op) ops[op] = e.first / runs;
    std::vector<std::pair<size_t, std::string>> order;
    for (auto& [name, e] : per_node) order.emplace_back(e.first, name);
    std::sort(order.begin(), order.end());
    for (auto& [pos, name] : order) nodes.push_back({{"node", name}, {"ms", per_node.at(name).second / runs}});
    Json j{{"ops", ops}, {"nodes", nodes}};
    if (!kernels.empty()) {
      Json k = Json::object();
      for (auto& [shader, e] : kernels) k[shader] = {{"device_ms", e.first / runs}, {"dispatches", e.second / runs}};
      j["kernels"] = k;
    }
    return j;
  }
  // (ms per run, name), slowest first, and their sum in `total`.
  static std::vector<std::pair<double, std::string>> per_run(const std::map<std::string, std::pair<double, int>>& m,
                                                             int runs, double& total) {
    std::vector<std::pair<double, std::string>> rows;
    total = 0;
    for (auto& [name, e] : m) {
      rows.push_back({e.first / runs, name});
      total += e.first / runs;
    }
    std::sort(rows.rbegin(), rows.rend());
    return rows;
  }
  void print(int runs) const {
    double total = 0;
    std::vector<std::pair<double, std::string>> rows = per_run(by_op, runs, total);
    std::printf("%-24s %10s %7s %7s\n", "op", "ms/run", "share", "nodes");
    for (auto& [ms, op] : rows)
      std::printf("%-24s %10.3f %6.1f%% %7d\n", op.c_str(), ms, 100 * ms / total, by_op.at(op).second / runs);
    std::vector<std::pair<double, std::string>> nodes;
    for (auto& [name, t] : by_node) nodes.push_back({t / runs, name});
    std::sort(nodes.rbegin(), nodes.rend());
    std::printf("slowest nodes:\n");
    for (size_t i = 0; i < nodes.size() && i < 12; ++i)
      std::printf("  %10.3f ms  %s\n", nodes[i].first, nodes[i].second.c_str());
    if (kernels.empty()) return;
    // Inside the nodes (a fused encoder is one node): where the device's time went.
    double device = 0;
    std::vector<std::pair<double, std::string>> ks = per_run(kernels, runs, device);
    std::printf("device time by kernel (Vulkan timestamps; %.3f ms a run):\n%-28s %10s %7s %10s\n", device, "kernel",
                "ms/run", "share", "dispatches");
    for (auto& [ms, shader] : ks)
      std::printf("%-28s %10.3f %6.1f%% %10d\n", shader.c_str(), ms, 100 * ms / device, kernels.at(shader).second / runs);
  }
};
}  // namespace

namespace {
// The process's resident set at its largest (VmHWM), in bytes; 0 if unknown.
size_t peak_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %zu kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}
}  // namespace

int cmd_bench(int argc, char** argv) {
  Args a = parse_args(argc, argv, with_session_flags({"--input", "--inputs", "--runs", "--warmup", "--dim", "--shape"}),
                      with_session_switches({"--json", "--profile"}));
  KESTREL_CHECK(a.positional.size() == 1, "bench expects one MODEL argument");
  int runs = a.get_int("--runs", 20), warmup = a.get_int("--warmup", 3);
  KESTREL_CHECK(runs >= 1 && warmup >= 0, "--runs must be at least 1 and --warmup at least 0");
  const std::string& path = a.positional[0];
  const auto load_start = std::chrono::steady_clock::now();
  auto s = Session::load(path, session_options(a));
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
  auto inputs = make_inputs(*s, a);
  std::vector<double> ms;
  Profile profile;
  for (int i = 0; i < warmup + runs; ++i) {
    RunStats st;
    if (a.has("--profile") && i >= warmup) {
      // Timed node by node: the total includes the observer's small overhead.
      auto t0 = std::chrono::steady_clock::now();
      s->run_traced(inputs, &Profile::record, &profile);
      st.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      profile.add_kernels(s->placement());
    } else {
      s->run(inputs, &st);
    }
    if (i >= warmup) ms.push_back(st.ms);
    progress("bench", i + 1, warmup + runs);
  }
  std::sort(ms.begin(), ms.end());
  double med = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  double mean = 0;
  for (double m : ms) mean += m / double(ms.size());
  // Nearest rank: the smallest time at least q of the runs took no longer than.
  auto percentile = [&](double q) { return ms[size_t(std::max(1.0, std::ceil(q * double(ms.size())))) - 1]; };
  const double p90 = percentile(0.9), p99 = percentile(0.99), per_s = mean > 0 ? 1000.0 / mean : 0;
  // Memory: tensor bytes in use at once at most (weights included), the
  // process's resident high-water mark, and the Vulkan memory the session
  // holds (weights, tensors and staging; host memory too on lavapipe).
  const size_t peak_host = pool_peak_bytes(), peak_rss = peak_rss_bytes();
  // Of the device memory, the tensors in use at once in the latest run and
  // the static plan's arena among them.
  const auto placed = s->placement();
  const size_t peak_device = placed ? placed->device_bytes : 0;
  const size_t device_tensors = placed ? placed->device_tensor_peak_bytes : 0;
  const size_t device_arena = placed ? placed->device_arena_bytes : 0;
  if (a.has("--json")) {
    const Json j{{"model", path},
                 {"backend", s->backend_name()},
                 {"threads", s->threads()},
                 {"runs", runs},
                 {"load_ms", load_ms},
                 {"min_ms", ms.front()},
                 {"median_ms", med},
                 {"mean_ms", mean},
                 {"p90_ms", p90},
                 {"p99_ms", p99},
                 {"max_ms", ms.back()},
                 {"runs_per_s", per_s},
                 {"peak_host_bytes", peak_host},
                 {"peak_rss_bytes", peak_rss},
                 {"peak_device_bytes", peak_device},
                 {"device_tensor_bytes", device_tensors},
                 {"device_arena_bytes", device_arena}};
    if (a.has("--profile")) {
      Json with = j;
      with["profile"] = profile.json(runs);  // each node timed on its own: the device waited for after it
      std::printf("%s\n", json_line(with).c_str());
      return 0;
    }
    std::printf("%s\n", json_line(j).c_str());
  } else {
    std::printf("%s: backend %s, %d threads, %d runs: min %.3f ms, median %.3f ms, max %.3f ms\n", path.c_str(),
                s->backend_name().c_str(), s->threads(), runs, ms.front(), med, ms.back());
    std::printf("mean %.3f ms, p90 %.3f ms, p99 %.3f ms, %.1f runs/s; loaded in %.1f ms\n", mean, p90, p99, per_s,
                load_ms);
    if (s->placement()) std::printf("last run: %s\n", s->placement_summary().c_str());
    std::printf("memory: peak tensor bytes %.1f MiB, peak resident %.1f MiB, device %.1f MiB\n", peak_host / 1048576.0,
                peak_rss / 1048576.0, peak_device / 1048576.0);
  }
  if (a.has("--profile")) profile.print(runs);
  return 0;
}

}  // namespace kestrel::cli
