// The CPU backend's Transpose of float tensors for the permutations where
// oneDNN's reorder (the input read through permuted strides into a dense
// output) beat the reference's strided copy on one Zen 4 core: into
// channels-last (0 2 3 1: the layout pass's entry, channels_last.h; an
// image's 3 channels were a short innermost walk, [1, 3, 240, 320] 0.43 ->
// 0.05 ms) and a swap of the last two dimensions of a matrix or a batch of
// them ([1, 85, 3549], YOLOX-nano's output, 0.17 -> 0.07 ms; [768, 3072]
// 2.7 -> 2.4). Elsewhere neither won throughout: back from channels-last
// (0 3 1 2) oneDNN took 0.095 ms for the reference's 0.048 at 32 channels
// and 0.069 for 0.059 at 256, but 0.043 for 0.094 at 16, so the rest runs
// the reference, as do other dtypes. Small tensors run the reference too:
// making the reorder costs more than their copy (UltraFace's eight head
// transposes into channels-last, 1,200 to 57,600 floats: 0.022 ms in all
// on the reference, 0.038-0.049 through oneDNN).
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/fast_kernels.h"
#include "backends/cpu/onednn_engine.h"
#include "core/cpu_isa.h"

namespace kestrel::backends::cpu {
namespace {

// Elements from which oneDNN's reorder pays for its making.
constexpr int64_t kReorderFrom = 1 << 16;

void run_transpose(ops::KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const int r = X.rank();
  std::vector<int64_t> perm = ctx.node.attr_ints("perm");
  if (perm.empty())
    for (int k = r - 1; k >= 0; --k) perm.push_back(k);
  if (X.dtype() != DType::Float32 || r < 1 || r > 6 || X.numel() == 0 || int(perm.size()) != r)
    return run_reference_kernel(ctx);  // (which also names a bad perm)
  const bool to_channels_last = perm == std::vector<int64_t>{0, 2, 3, 1};
  const bool last_two = (r == 2 && perm == std::vector<int64_t>{1, 0}) || (r == 3 && perm == std::vector<int64_t>{0, 2, 1});
  // (Measured on x86-64 only: elsewhere the strided copy stays.)
  if (!KESTREL_X86 || (!to_channels_last && !last_two) || X.numel() < kReorderFrom) return run_reference_kernel(ctx);
  std::vector<bool> seen(size_t(r), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[size_t(p)]) return run_reference_kernel(ctx);
    seen[size_t(p)] = true;
  }
  // Output dims, and where each steps in the input.
  std::vector<int64_t> in_strides(size_t(r), 1);
  for (int k = r - 2; k >= 0; --k) in_strides[size_t(k)] = in_strides[size_t(k + 1)] * X.dim(k + 1);
  dnnl::memory::dims dims, strides;
  Shape out;
  for (int k = 0; k < r; ++k) {
    dims.push_back(X.dim(int(perm[size_t(k)])));
    strides.push_back(in_strides[size_t(perm[size_t(k)])]);
    out.push_back(X.dim(int(perm[size_t(k)])));
  }
  Tensor& Y = ctx.output(0, DType::Float32, out);
  using dt = dnnl::memory::data_type;
  dnnl::memory src({dims, dt::f32, strides}, onednn_engine(), const_cast<float*>(X.data<float>()));
  std::vector<int64_t> dense(size_t(r), 1);
  for (int k = r - 2; k >= 0; --k) dense[size_t(k)] = dense[size_t(k + 1)] * out[size_t(k + 1)];
  dnnl::memory to({dims, dt::f32, dnnl::memory::dims(dense.begin(), dense.end())}, onednn_engine(), Y.data<float>());
  dnnl::reorder(src, to).execute(onednn_stream(), src, to);
  onednn_stream().wait();
}

}  // namespace

KESTREL_CPU_KERNEL(Transpose, {.run = run_transpose});

}  // namespace kestrel::backends::cpu
