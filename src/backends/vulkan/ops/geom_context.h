// A kernel context over just a node, so the Vulkan kernels can call the CPU
// kernels' shape and parameter helpers (ops::window_geom, ops::split_sizes,
// ...) and both backends agree on shapes and fail with the same messages.
#pragma once
#include "backends/vulkan/op.h"
#include "ops/registry.h"

namespace kestrel::vulkan {

// Just enough of a kernel context for shape helpers: the node and fail().
class GeomContext final : public ops::KernelContext {
 public:
  explicit GeomContext(const ir::Node& n) : KernelContext(n) {}
  bool has_input(int) const override { return false; }
  const Tensor& input(int) const override { fail("shape helpers read no inputs"); }
  Tensor& output(int, DType, Shape) override { fail("shape helpers write no outputs"); }
  void set_output(int, Tensor) override { fail("shape helpers write no outputs"); }
  int threads() const override { return 1; }
  std::vector<Tensor> run_subgraph(const ir::Graph&, const std::vector<Tensor>&) override {
    fail("shape helpers run no subgraphs");
  }
};

}  // namespace kestrel::vulkan
