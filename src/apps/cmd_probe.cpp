// kestrel probe: what this machine offers Kestrel, as one JSON object: the
// CPU's features and every Vulkan device with the one Kestrel would pick.
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "apps/cli.h"
#include "apps/json_report.h"
#include "backends/vulkan/device.h"
#include "runtime/config.h"

namespace kestrel::cli {
namespace {

Json cpu_json() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model;
  std::set<std::string> flags;
  while (std::getline(f, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && model.empty()) model = value;
    if (key == "flags" && flags.empty()) {
      std::istringstream in(value);
      for (std::string w; in >> w;) flags.insert(w);
    }
  }
  // The features Kestrel's kernels and libraries care about.
  const char* wanted[] = {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                          "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "asimd", "sve"};
  Json feats = Json::array();
  for (const char* w : wanted)
    if (flags.count(w)) feats.push_back(w);
  return {{"model", model}, {"logical_cores", std::thread::hardware_concurrency()}, {"features", feats}};
}

}  // namespace

int cmd_probe(int argc, char** argv) {
  parse_args(argc, argv, {}, {});
  Json vk{{"devices", Json::array()}};
  try {
    auto devices = vulkan::enumerate_devices();
    for (const auto& d : devices) vk["devices"].push_back(to_json(d));
    vk["selected"] = nullptr;
    if (!devices.empty()) {
      try {
        const runtime::Config c = runtime::Config::of(SessionOptions{});
        vk["selected"] = devices[vulkan::pick_device(devices, c.vulkan.device.device)].index;
      } catch (const Error& e) {
        vk["selection_error"] = e.what();
      }
    }
  } catch (const Error& e) {
    vk["error"] = e.what();
  }
  std::printf("%s\n", json_line({{"cpu", cpu_json()}, {"vulkan", vk}}).c_str());
  return 0;
}

}  // namespace kestrel::cli
