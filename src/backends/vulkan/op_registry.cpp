#include "backends/vulkan/op.h"
#include "core/error.h"
#include "ops/kernel_table.h"

namespace kestrel::vulkan {
namespace {

ops::KernelTable<VkOpDef>& table() {
  static ops::KernelTable<VkOpDef> t;
  return t;
}

}  // namespace

bool register_vk_op(VkOpDef def) {
  table().add(std::move(def));
  return true;
}

const VkOpDef* find_vk_op(const std::string& domain, const std::string& op, int opset) {
  return table().find(domain, op, opset);
}

std::vector<const VkOpDef*> all_vk_ops() { return table().all(); }

Dims6 dims6(const Shape& s) {
  KESTREL_CHECK(s.size() <= size_t(kMaxRank), "rank ", s.size(), " is past the Vulkan kernels' ", kMaxRank);
  Dims6 r;
  size_t pad = kMaxRank - s.size();
  for (size_t i = 0; i < size_t(kMaxRank); ++i) r.d[i] = i < pad ? 1 : int32_t(s[i - pad]);
  return r;
}

Dims6 broadcast_strides6(const Shape& s, const Shape& out) {
  Dims6 r;
  size_t pad = kMaxRank - out.size();
  size_t off = out.size() - s.size();
  int64_t stride = 1;
  for (int i = kMaxRank - 1; i >= 0; --i) {
    size_t od = size_t(i);
    if (od < pad || od - pad < off) {
      r.d[i] = 0;
      continue;
    }
    int64_t dim = s[od - pad - off];
    r.d[i] = dim == 1 ? 0 : int32_t(stride);
    stride *= dim;
  }
  return r;
}

}  // namespace kestrel::vulkan
