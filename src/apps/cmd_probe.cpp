// kestrel probe: what this machine offers Kestrel, as one JSON object: the
// CPU's features and every Vulkan device with the one Kestrel would pick.
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

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
    if ((key == "flags" || key == "Features") && flags.empty()) {  // x86-64's name, arm64's
      std::istringstream in(value);
      for (std::string w; in >> w;) flags.insert(w);
    }
  }
#if defined(__aarch64__)
  // The kernel's own word (the hardware capabilities it gives the process),
  // which also holds under qemu-user, whose /proc/cpuinfo is the host's.
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  flags.clear();
  if (hw & HWCAP_ASIMD) flags.insert("asimd");
  if (hw & HWCAP_ASIMDDP) flags.insert("asimddp");
  if (hw & HWCAP_ASIMDHP) flags.insert("asimdhp");
  if (hw & HWCAP_SVE) flags.insert("sve");
  if (hw2 & HWCAP2_SVE2) flags.insert("sve2");
  if (hw2 & HWCAP2_I8MM) flags.insert("i8mm");
  if (hw2 & HWCAP2_BF16) flags.insert("bf16");
  if (model.empty()) model = "arm64";
#endif
  // The features Kestrel's kernels and libraries care about: x86-64's levels
  // (core/cpu_isa.h), and on arm64 NEON (asimd), its 8-bit dot product
  // (asimddp), half-precision arithmetic (asimdhp), the 8-bit matrix multiply
  // (i8mm), bfloat16 and SVE.
  const char* wanted[] = {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                          "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
                          "asimd", "asimddp", "asimdhp", "i8mm", "bf16", "sve", "sve2"};
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
