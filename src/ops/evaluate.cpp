#include "ops/evaluate.h"

namespace kestrel::ops {
namespace {

class StandaloneContext : public KernelContext {
 public:
  StandaloneContext(const ir::Node& n, const std::vector<Tensor>& in, int threads, size_t max_output_bytes)
      : KernelContext(n), in_(in), out_(n.outputs.size()), threads_(threads), max_output_bytes_(max_output_bytes) {}
  bool has_input(int i) const override { return i < int(in_.size()) && in_[size_t(i)].defined(); }
  const Tensor& input(int i) const override {
    if (!has_input(i)) fail("required input ", i, " is missing");
    return in_[size_t(i)];
  }
  Tensor& output(int i, DType dtype, Shape shape) override {
    const size_t bytes = tensor_nbytes(dtype, shape);
    if (bytes > max_output_bytes_)
      fail("output ", i, " ", shape_str(shape), " would take ", bytes, " bytes, more than the ", max_output_bytes_,
           " allowed here");
    return slot(i) = new_output_tensor(dtype, std::move(shape));
  }
  void set_output(int i, Tensor t) override { slot(i) = std::move(t); }
  int threads() const override { return threads_; }
  std::vector<Tensor> run_subgraph(const ir::Graph&, const std::vector<Tensor>&) override {
    fail("cannot run a subgraph outside a graph execution");
  }
  std::vector<Tensor> take() { return std::move(out_); }

 private:
  Tensor& slot(int i) {
    if (i >= int(out_.size())) fail("kernel wrote output ", i, " but the node has ", out_.size());
    return out_[size_t(i)];
  }
  const std::vector<Tensor>& in_;
  std::vector<Tensor> out_;
  int threads_;
  size_t max_output_bytes_;
};

}  // namespace

std::vector<Tensor> evaluate_node(const ir::Node& node, const std::vector<Tensor>& inputs, int threads,
                                  size_t max_output_bytes) {
  const OpDef* def = find_op(node.domain, node.op_type, node.opset);
  if (!def) fail(node.where(), ": ", why_unsupported(node.domain, node.op_type, node.opset));
  // Same half-precision rule as the executor: widen, run, round back.
  std::vector<Tensor> in = inputs;
  DType half = DType::Undefined;
  if (!def->half_native)
    for (auto& t : in)
      if (t.defined() && dtype_is_half(t.dtype())) {
        half = t.dtype();
        t = t.cast(DType::Float32);
      }
  StandaloneContext ctx(node, in, threads, max_output_bytes);
  def->run(ctx);
  std::vector<Tensor> out = ctx.take();
  if (half != DType::Undefined)
    for (auto& t : out)
      if (t.defined() && t.dtype() == DType::Float32) t = t.cast(half);
  return out;
}

}  // namespace kestrel::ops
