#include "backends/vulkan/shader_index.h"

#include "core/error.h"

namespace kestrel::vulkan {

const ShaderBlob& find_shader(const std::string& name) {
  for (const ShaderBlob& s : all_shaders())
    if (name == s.name) return s;
  fail("Vulkan: no compute shader named '", name, "' in this build");
}

uint64_t shaders_hash() {
  static const uint64_t hash = [] {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](const void* p, size_t n) {
      for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
    };
    for (const ShaderBlob& s : all_shaders()) {
      mix(s.name, std::char_traits<char>::length(s.name));
      mix(s.f32, s.f32_bytes);
      mix(s.f16, s.f16_bytes);
    }
    return h;
  }();
  return hash;
}

}  // namespace kestrel::vulkan
