// Split's output sizes, shared by the CPU kernel and the Vulkan one.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/registry.h"

namespace kestrel::ops {

// Sizes of each output along an axis of size `dim`: the split list when the
// node gives one (input or attribute, read by the caller), else num_outputs
// (opset 18) or an equal division. `ctx` names the node in errors.
inline std::vector<int64_t> split_sizes(const KernelContext& ctx, int64_t dim,
                                        std::optional<std::vector<int64_t>> given) {
  int n = ctx.num_outputs();
  if (given) {
    const std::vector<int64_t>& sizes = *given;
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) ctx.fail("split ", shape_str(sizes), " has a negative size");
      if (!add_fits(total, s, total)) ctx.fail("split ", shape_str(sizes), ": the sizes' sum overflows int64");
    }
    if (int(sizes.size()) != n)
      ctx.fail("split ", shape_str(sizes), " has ", sizes.size(), " sizes for ", n, " outputs");
    if (total != dim) ctx.fail("split ", shape_str(sizes), " sums to ", total, " but the axis has size ", dim);
    return sizes;
  }
  if (ctx.node.opset >= 18 && ctx.node.has("num_outputs")) {
    int64_t k = ctx.node.attr_i("num_outputs", 0);
    if (k != n) ctx.fail("num_outputs is ", k, " but the node has ", n, " outputs");
  }
  if (n <= 0) ctx.fail("has no outputs");
  // Opset 18 allows a smaller last chunk; earlier opsets need an even split.
  int64_t chunk = (dim + n - 1) / n;
  if (ctx.node.opset < 18 && dim % n) ctx.fail("axis size ", dim, " cannot be split evenly into ", n, " outputs");
  std::vector<int64_t> sizes;
  for (int i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * i)));
  return sizes;
}

}  // namespace kestrel::ops
