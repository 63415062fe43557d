#include <cstdio>
#include <sstream>

#include "partition/placement_report.h"

namespace kestrel::partition {

std::string PlacementReport::summary() const {
  std::ostringstream os;
  os << device << ": " << gpu_nodes << " of " << (gpu_nodes + cpu_nodes) << " nodes";
  if (ran) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%", 100.0 * gpu_flops_share());
    os << " and " << share << " of FLOPs on the GPU; " << dispatches << " dispatches, " << barriers << " barriers, "
       << submits << " submits; host: ";
    if (replayed) os << "replayed the recorded work, ";
    else os << record_ms << " ms recording, ";
    os << cpu_ms << " ms on CPU nodes, " << transfer_ms << " ms moving inputs and outputs, " << wait_ms
       << " ms waiting for the device (at most " << longest_wait_ms << " ms for one submit)";
  } else {
    os << " have a GPU kernel (before a run: one may still keep small host tensors, or shapes past the device's "
          "limits, on the CPU)";
  }
  if (!not_replayable.empty()) os << "\nrecorded again each run: " << not_replayable;
  if (!precision_note.empty()) os << "\n" << precision_note;
  if (!cpu_reasons.empty()) {
    os << "\non the CPU (" << cpu_nodes << " nodes):";
    for (auto& [why, n] : cpu_reasons) os << "\n  " << n << "  " << why;
  }
  return os.str();
}

}  // namespace kestrel::partition
