// The CPU backend: every registered op, run by the executor with the fast
// kernels where they exist (or the reference kernels only, on request).
#include "backends/backend.h"
#include "backends/cpu/channels_last.h"
#include "backends/cpu/conv_weight_packing.h"
#include "backends/cpu/executor.h"
#include "backends/cpu/qmatmul_weight_packing.h"
#include "backends/cpu/residual_fusion.h"

#include <optional>

namespace kestrel::backends {
namespace {

// The fast kernels' own copy of the graph, with the fusions only they run
// (residual_fusion.h), convolution chains channels-last (channels_last.h),
// and the Conv weights packed for them
// (conv_weight_packing.h, after the fusion, which moves Convs), and the
// quantized MatMuls' (qmatmul_weight_packing.h); nullopt where the graph is
// run as given. (MatMulNBits reads its packed blocks as the file holds them:
// matmul_nbits.cpp.)
std::optional<ir::Graph> fused_for_fast_kernels(const ir::Graph& g, CpuKernels kernels) {
  if (kernels != CpuKernels::Fast) return std::nullopt;
  ir::Graph copy = g;  // (tensors share their storage)
  const int fused = cpu::fuse_residual_adds(copy);
  // (After the residual fusion, whose Convs it moves; before the packing,
  // which is for the planar kernels.)
  const int moved = cpu::channels_last_suits_cpu() ? cpu::channels_last_chains(copy) : 0;
  if (fused + moved + cpu::pack_conv_weights(copy) + cpu::pack_qmatmul_weights(copy) == 0)
    return std::nullopt;
  return copy;
}

class CpuCompiled : public CompiledGraph {
 public:
  CpuCompiled(const ir::Graph& g, CpuKernels kernels)
      : fused_(fused_for_fast_kernels(g, kernels)), plan_(cpu::Plan::build(fused_ ? *fused_ : g, kernels)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& opts) const override {
    return cpu::execute(plan_, inputs, nullptr, with_checks(opts), &arenas_);
  }

 private:
  std::optional<ir::Graph> fused_;  // (before plan_, which points into it)
  cpu::Plan plan_;
  mutable ArenaPlans arenas_;  // thread-safe: runs on any thread share it
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(CpuKernels kernels) : kernels_(kernels) {}
  std::string name() const override { return "cpu"; }
  std::vector<NodeVerdict> capability(const ir::Graph& g) const override {
    std::vector<NodeVerdict> v;
    for (const ir::Node& n : g.nodes) {
      bool ok = ops::find_op(n.domain, n.op_type, n.opset) != nullptr;
      v.push_back({ok, ok ? "" : ops::why_unsupported(n.domain, n.op_type, n.opset)});
    }
    return v;
  }
  std::unique_ptr<CompiledGraph> compile(const ir::Graph& g) const override {
    return std::make_unique<CpuCompiled>(g, kernels_);
  }

 private:
  CpuKernels kernels_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(CpuKernels kernels) { return std::make_unique<CpuBackend>(kernels); }

}  // namespace kestrel::backends
