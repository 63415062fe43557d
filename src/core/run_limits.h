// What bounds one run of a model: a flag another thread may set to cancel
// it, a deadline, and a cap on the iterations of any one Loop or Scan node.
// Executors check them between nodes and kernels between loop iterations, so
// a run that would otherwise never end (a Loop whose condition stays true, a
// trip count of 2^62) ends with a clear Error instead.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "core/error.h"

namespace kestrel {

// A run stopped by its caller (cancel flag or timeout), not by a fault in the
// model or its inputs. A type of its own so callers can tell the two apart,
// and so enclosing Loop/If nodes pass it on without prefixing themselves.
class RunCancelled : public Error {
 public:
  explicit RunCancelled(const std::string& what) : Error(what, ErrorKind::Cancelled) {}
};

struct RunLimits {
  using Clock = std::chrono::steady_clock;

  // Set to true from any thread to stop the run. Null: not cancellable.
  // It must outlive the run.
  const std::atomic<bool>* cancel = nullptr;
  // The run stops once this time has passed; max(): no deadline.
  Clock::time_point deadline = Clock::time_point::max();
  double timeout_ms = 0;  // what `deadline` was made from, for the message
  // The most iterations one Loop or Scan node may run within one run; 0: no cap.
  int64_t max_loop_iterations = 0;

  // Cheap enough to call before every node: an atomic load and, only when a
  // deadline is set, a clock read.
  bool stop_requested() const {
    if (cancel && cancel->load(std::memory_order_relaxed)) return true;
    return deadline != Clock::time_point::max() && Clock::now() >= deadline;
  }
  // Throws RunCancelled saying why the run stopped and `where` ("before node
  // 'x' (Add)", "at iteration 12 of node 'loop' (Loop)").
  [[noreturn]] void stop(const std::string& where) const {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw RunCancelled("run cancelled " + where);
    std::string ms = std::to_string(timeout_ms);
    ms.erase(ms.find_last_not_of('0') + 1);  // "50.000000" -> "50."
    if (!ms.empty() && ms.back() == '.') ms.pop_back();
    throw RunCancelled("run cancelled: its " + ms + " ms timeout passed " + where);
  }
};

}  // namespace kestrel
