#include "backends/vulkan/replay.h"

#include <algorithm>
#include <chrono>

#include "backends/vulkan/run_state.h"
#include "backends/vulkan/transfer.h"

namespace kestrel::vulkan {

bool replay_run(RunResources& res, const Replay& r, const std::vector<Tensor>& inputs, std::vector<Tensor>& outs,
                int threads, const backends::OutputSink* sink, double& transfer_ms) {
  for (const Replay::Check& c : r.checks)
    if (!c.fn(inputs[c.index])) return false;
  for (const Replay::Input& in : r.inputs)
    if (!storable(inputs[in.index]).empty()) return false;
  const auto t0 = std::chrono::steady_clock::now();
  for (const Replay::Input& in : r.inputs) {
    write_storage(inputs[in.index], in.half, in.staging->a.mapped(), threads);
    res.host.host_wrote(in.staging->a);
  }
  const auto t1 = std::chrono::steady_clock::now();
  res.rec.replay();
  const auto t2 = std::chrono::steady_clock::now();
  outs.clear();
  for (const Replay::Output& o : r.outputs) {
    if (o.input >= 0) {
      outs.push_back(inputs[size_t(o.input)]);
      continue;
    }
    const DeviceMemory& m = o.staging ? *o.staging : *o.tensor.memory;
    m.owner->host_will_read(m.a);
    const size_t i = outs.size();
    outs.push_back(read_storage(o.tensor, m.a.mapped() + (o.staging ? 0 : o.tensor.view_offset), threads,
                                output_destination(sink, i, o.tensor)));
  }
  transfer_ms = std::chrono::duration<double, std::milli>(t1 - t0 + (std::chrono::steady_clock::now() - t2)).count();
  return true;
}

void keep_for_replay(RunState& st, ReplayCapture& capture, partition::Signature sig, uint64_t weights_generation,
                     size_t withdrawals) {
  Replay& r = capture.replay;
  const ir::Graph& g = st.g();
  for (int v : g.outputs) {
    Replay::Output o;
    auto d = std::find_if(capture.downloads.begin(), capture.downloads.end(),
                          [&](const ReplayCapture::Download& x) { return x.value == v; });
    if (d != capture.downloads.end()) {
      o.tensor = d->tensor;
      o.staging = d->staging;
    } else if (st.c.input_index(v) >= 0) {
      o.input = st.c.input_index(v);
    } else {
      capture.refuse("output '" + st.name(v) + "' was computed on the host");
    }
    r.outputs.push_back(std::move(o));
  }
  if (!capture.refused.empty()) {
    st.report.not_replayable = capture.refused;
    return;
  }
  r.sig = std::move(sig);
  r.plan = &st.precision;
  r.weights_generation = weights_generation;
  r.withdrawals = withdrawals;
  r.held = std::move(st.staging);
  if (st.arena) r.held.push_back(st.arena);
  r.report = st.report;
  st.res.replay = std::make_unique<Replay>(std::move(r));
  st.res.rec.keep();
}

}  // namespace kestrel::vulkan
