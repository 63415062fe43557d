// Vulkan device discovery. CI has Mesa's lavapipe, so finding no device is a
// failure; only KESTREL_VULKAN_TESTS=off (set on purpose) skips these tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "backends/vulkan/context.h"
#include "backends/vulkan/device.h"
#include "core/error.h"
#include "runtime/config.h"
#include "cli_helpers.h"
#include "scoped_env.h"
#include "vulkan_tests_switch.h"

using kestrel::test::vulkan_tests_off;

using namespace kestrel;


TEST(VulkanDevice, FindsAtLeastOneDeviceWithComputeLimits) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  auto devices = vulkan::enumerate_devices();
  ASSERT_FALSE(devices.empty()) << "no Vulkan device: install mesa-vulkan-drivers (lavapipe)";
  for (const auto& d : devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.max_workgroup_count[0], 65535u) << d.name;  // the Vulkan minimum
    EXPECT_GE(d.max_workgroup_invocations, 128u) << d.name;
    EXPECT_FALSE(d.heaps.empty()) << d.name;
    EXPECT_EQ(d.device_uuid.size(), 32u) << d.name;
  }
}

TEST(VulkanDevice, PicksByIndexNameOrScoreAndNamesDevicesOnAMiss) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  test::ScopedEnv env("KESTREL_VK_DEVICE", nullptr);  // restored after the test
  auto devices = vulkan::enumerate_devices();
  ASSERT_FALSE(devices.empty());
  // The selector a session's configuration carries: its option, else KESTREL_VK_DEVICE.
  auto pick = [&](const std::string& option = "") {
    SessionOptions o;
    o.vulkan_device = option;
    return vulkan::pick_device(devices, runtime::Config::of(o).vulkan.device.device);
  };
  size_t best = pick();
  for (const auto& d : devices) EXPECT_LE(d.score, devices[best].score);
  const auto& last = devices.back();
  env.set(std::to_string(last.index).c_str());
  EXPECT_EQ(pick(), devices.size() - 1);
  env.set(last.name.substr(0, 4).c_str());  // a name prefix, any case
  EXPECT_EQ(devices[pick()].name.substr(0, 4), last.name.substr(0, 4));
  env.set("no-such-device");
  EXPECT_EQ(pick(std::to_string(last.index)), devices.size() - 1);  // the option wins over the variable
  try {
    pick();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no-such-device"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(last.name));
  }
}

TEST(VulkanDevice, NoDevicesIsAnErrorNotAPick) {
  EXPECT_THROW(vulkan::pick_device({}), Error);
}

TEST(VulkanGrid, FoldsPastTheWorkgroupLimitIntoTwoDimensions) {
  uint32_t x, y;
  vulkan::grid_for(100, 65535, x, y);
  EXPECT_EQ(x, 100u);
  EXPECT_EQ(y, 1u);
  vulkan::grid_for(200000, 65535, x, y);
  EXPECT_LE(x, 65535u);
  EXPECT_GE(uint64_t(x) * y, 200000u);
}


// The devices `kestrel probe` lists (none where it fails).
nlohmann::json probed_devices() {
  const auto [status, out] = kestrel::test::run_kestrel("probe");
  EXPECT_EQ(status, 0) << out;
  return status == 0 ? nlohmann::json::parse(out)["vulkan"]["devices"] : nlohmann::json::array();
}

// `kestrel probe` lists every cooperative-matrix product a device offers, and
// claims the one the tensor-core GEMM needs only where that product is listed.
TEST(VulkanDevice, ProbeListsTheCooperativeMatrixProducts) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const nlohmann::json devices = probed_devices();
  ASSERT_FALSE(devices.empty());
  for (const auto& d : devices) {
    ASSERT_TRUE(d["coop_matrix_shapes"].is_array()) << d.dump();
    const auto shapes = d["coop_matrix_shapes"].get<std::vector<std::string>>();
    if (!d["cooperative_matrix_khr"].get<bool>()) EXPECT_TRUE(shapes.empty()) << d["name"];
    if (d["coop_matrix_fp16_16x16x16"].get<bool>())
      EXPECT_THAT(shapes, testing::Contains("16x16x16 f16*f16+f32=f32 subgroup")) << d["name"];
  }
}

// `kestrel probe` says whether each device runs int8 dot products in shaders
// (a feature Vulkan 1.3 requires) and whether its driver calls them faster
// than the arithmetic spelled out; the second implies the first.
TEST(VulkanDevice, ProbeReportsIntegerDotProducts) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const nlohmann::json devices = probed_devices();
  ASSERT_FALSE(devices.empty());
  for (const auto& d : devices) {
    ASSERT_TRUE(d["integer_dot_product"].is_boolean()) << d.dump();
    ASSERT_TRUE(d["integer_dot_product_accelerated"].is_boolean()) << d.dump();
    if (d["integer_dot_product_accelerated"].get<bool>()) EXPECT_TRUE(d["integer_dot_product"].get<bool>()) << d["name"];
    const std::string api = d["api_version"].get<std::string>();
    const int major = std::stoi(api), minor = std::stoi(api.substr(api.find('.') + 1));
    if (major > 1 || minor >= 3) EXPECT_TRUE(d["integer_dot_product"].get<bool>()) << d["name"] << " " << api;
  }
}

// Compute units come from the vendors' extensions (NVIDIA's SMs, AMD's CUs)
// and are 0 where none reports them: lavapipe, Mali, Adreno, Intel. A GPU
// that reports them has at least one.
TEST(VulkanDevice, ProbeReportsComputeUnitsWhereTheDriverDoes) {
  if (vulkan_tests_off()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const nlohmann::json devices = probed_devices();
  ASSERT_FALSE(devices.empty());
  for (const auto& d : devices) {
    ASSERT_TRUE(d["compute_units"].is_number_unsigned()) << d.dump();
    const uint32_t units = d["compute_units"].get<uint32_t>();
    const uint32_t vendor = d["vendor_id"].get<uint32_t>();
    if (vendor != 0x10de && vendor != 0x1002) EXPECT_EQ(units, 0u) << d["name"];
    if (d["type"] == "cpu") EXPECT_EQ(units, 0u) << d["name"];
  }
}
