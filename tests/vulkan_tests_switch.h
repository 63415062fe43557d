// KESTREL_VULKAN_TESTS=off skips the Vulkan tests (machines with no Vulkan
// device at all); otherwise a Vulkan test that finds no device fails.
#pragma once
#include <cstdlib>
#include <string>

namespace kestrel::test {

inline bool vulkan_tests_off() {
  const char* e = std::getenv("KESTREL_VULKAN_TESTS");
  return e && std::string(e) == "off";
}

}  // namespace kestrel::test
