// Device memory lives until the device is done with it: a run whose wait
// for the GPU gives up (a slow device, a loaded machine) fails with a clear
// error, and neither that run's buffers nor the session's weights are freed
// while the device may still write them. On lavapipe the device is a pool of
// CPU threads, so memory freed too early is a segfault in JIT-compiled shader
// code; on a GPU it is memory handed to the next tensor while still written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backends/vulkan/context.h"
#include "backends/vulkan/graph_runner.h"
#include "onnx/loader.h"
#include "runtime/session.h"
#include "vulkan_test_models.h"
#include "runtime/config.h"

using namespace kestrel;
using kestrel::test::matmul_chain;
using kestrel::test::matmul_chain_input;

namespace {

std::unique_ptr<Session> load(const std::string& bytes, const std::string& backend, double wait_s) {
  SessionOptions o;
  o.backend = parse_backend(backend);
  o.precision = Precision::Fp32;
  o.threads = 1;
  o.device_wait_s = wait_s;
  return Session::load_bytes(bytes.data(), bytes.size(), o);
}

// The chains' width: eight products of 512 x 512, 2 GFLOP, a fraction of a
// second on lavapipe and hundreds of times the impatient sessions' 1 ms wait
// (768 took over a minute of CI's two cores for the same checks).
constexpr int64_t kChainWidth = 512;

}  // namespace

TEST(VulkanLifetime, AWaitThatGivesUpFreesNothingTheDeviceStillWrites) {
  const int64_t n = kChainWidth;
  const std::string model = matmul_chain(n, 8);
  std::vector<Tensor> want = load(model, "cpu", 120)->run({{"x", matmul_chain_input(n)}});

  for (int attempt = 0; attempt < 3; ++attempt) {
    auto impatient = load(model, "vulkan", 1e-3);
    try {
      impatient->run({{"x", matmul_chain_input(n)}});
      ADD_FAILURE() << "a 1 ms wait for 2 GFLOP of GPU work did not give up";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("did not finish within"));
    }
    // The session goes (weights and all) while its work may still run.
    impatient.reset();
  }
  // The device is still usable, and a patient session gets the right answer
  // (its wait also lets the abandoned work's memory go).
  auto patient = load(model, "vulkan", 120);
  std::vector<Tensor> got = patient->run({{"x", matmul_chain_input(n)}});
  ASSERT_EQ(got.size(), 1u);
  const float* a = got[0].data<float>();
  const float* b = want[0].data<float>();
  double worst = 0;
  for (int64_t i = 0; i < n * n; ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  // Eight float32 products of length 512 summed in another order: a few ulps
  // of values near 1 per product.
  EXPECT_LT(worst, 1e-4);
}

// What a failed wait leaves in flight is held by the context, and let go as
// soon as a later wait shows the device has moved past it.
TEST(VulkanLifetime, AbandonedWorkIsHeldUntilALaterWaitFinishes) {
  const int64_t n = kChainWidth;
  const std::string bytes = matmul_chain(n, 8);
  auto model = onnx_io::load_model_bytes(bytes.data(), bytes.size(), "");
  auto ctx = vulkan::Context::open(runtime::Config::of({}).vulkan.device);
  backends::VulkanOptions impatient_opts, patient_opts;
  impatient_opts.device_wait_s = 1e-3;
  {
    vulkan::VulkanCompiled impatient(ctx, model.graph, false, impatient_opts);
    EXPECT_EQ(ctx->retired_count(), 0u) << "weights uploaded within the wait leave nothing behind";
    EXPECT_THROW(impatient.run({matmul_chain_input(n)}, backends::RunOptions{}), Error);
    EXPECT_EQ(ctx->retired_count(), 1u) << "the failed run's buffers";
  }
  // Unless the device already finished, the session's weights joined them.
  EXPECT_GE(ctx->retired_count(), 1u);
  vulkan::VulkanCompiled patient(ctx, model.graph, false, patient_opts);
  patient.run({matmul_chain_input(n)}, backends::RunOptions{});
  EXPECT_EQ(ctx->retired_count(), 0u);
}
