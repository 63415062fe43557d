// Real models on real inputs: Kestrel must agree with ONNX Runtime (CPU).
// Needs the models from scripts/fetch_models.sh, node and onnxruntime-node
// (scripts/setup.sh); a missing model fails the test, it is never skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <filesystem>

#include "real_models.h"
#include "core/compare.h"
#include "runtime/ort_reference.h"
#include "runtime/session.h"

namespace kestrel {
namespace {

// ONNX Runtime gets two threads: enough to be quick, and it matches the
// machines these tests run on.
constexpr int kOrtThreads = 2;

// Each model runs on the CPU backend, on its reference kernels alone (the
// oracle the fast kernels are checked against must itself agree with ONNX
// Runtime, to the same bounds), and on the Vulkan backend (lavapipe in CI)
// in float32 and float16 storage.
struct Config {
  const char* name;
  const char* backend;
  const char* precision;
  CpuKernels cpu_kernels = CpuKernels::Fast;
};
constexpr Config kConfigs[] = {{"cpu", "cpu", "auto"},
                               {"cpu_reference", "cpu", "auto", CpuKernels::Reference},
                               {"vulkan_fp32", "vulkan", "fp32"},
                               {"vulkan_fp16", "vulkan", "fp16"}};

// ONNX Runtime's outputs per table entry (one model may appear with several
// inputs), computed once for all configurations.
const OrtResult& reference(const std::string& name, const std::string& path,
                           const std::map<std::string, Tensor>& inputs) {
  static std::map<std::string, OrtResult> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, run_onnxruntime(find_ort_script(KESTREL_SOURCE_DIR), path, inputs, kOrtThreads)).first;
  return it->second;
}

class RealModelTest : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(RealModelTest, AgreesWithOnnxRuntime) {
  const real_models::RealModel& m = real_models::all()[std::get<0>(GetParam())];
  const Config& config = kConfigs[std::get<1>(GetParam())];
  const bool half = std::string(config.precision) == "fp16";
  if (const char* off = std::getenv("KESTREL_VULKAN_TESTS"); off && std::string(off) == "off" && config.backend != std::string("cpu"))
    GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const char* long_tests = std::getenv("KESTREL_LONG_TESTS");
  if (!(long_tests && std::string(long_tests) == "1")) {
    if (config.backend != std::string("cpu") && !m.vulkan_not_run.empty())
      GTEST_SKIP() << "not run on Vulkan without KESTREL_LONG_TESTS=1: " << m.vulkan_not_run;
    if (half && !m.fp16_not_run.empty())
      GTEST_SKIP() << "float16 storage not run without KESTREL_LONG_TESTS=1: " << m.fp16_not_run;
    if (config.cpu_kernels == CpuKernels::Reference && !m.reference_kernels_not_run.empty())
      GTEST_SKIP() << "reference kernels not run without KESTREL_LONG_TESTS=1: " << m.reference_kernels_not_run;
  }
  std::string dir = real_models::models_dir();
  std::string path = dir + "/" + m.file;
  ASSERT_TRUE(std::filesystem::is_regular_file(path))
      << path << " is missing: run scripts/fetch_models.sh to download the models and photos";
  std::printf("%s: input %s\n", m.name.c_str(), m.preprocessing.c_str());
  auto inputs = m.inputs(dir);

  // ONNX Runtime first, so its side is checked even where Kestrel lacks an op.
  const OrtResult& ref = reference(m.name, path, inputs);
  for (size_t i = 0; i < ref.outputs.size(); ++i)
    std::printf("  ONNX Runtime output %zu: %s %s\n", i, dtype_name(ref.outputs[i].dtype()),
                shape_str(ref.outputs[i].shape()).c_str());
  SessionOptions opts;
  opts.backend = parse_backend(config.backend);
  opts.precision = parse_precision(config.precision);
  opts.cpu_kernels = config.cpu_kernels;
  auto s = Session::load(path, opts);
  ASSERT_EQ(s->outputs().size(), ref.outputs.size());
  // (In float16 storage the first run also decides which nodes keep it,
  // and answers with the mixed run that agreed with float32.)
  auto ours = s->run(inputs);
  if (s->placement()) std::printf("  %s\n", s->placement_summary().c_str());
  ASSERT_EQ(ours.size(), ref.outputs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    const std::string& name = s->outputs()[i].name;
    ASSERT_EQ(ours[i].shape(), ref.outputs[i].shape())
        << "output '" << name << "': Kestrel " << shape_str(ours[i].shape()) << ", ONNX Runtime "
        << shape_str(ref.outputs[i].shape());
    Agreement g = agreement(ours[i], ref.outputs[i]);
    double max_ref = 0;
    for (float v : ref.outputs[i].to_f32()) max_ref = std::max(max_ref, double(std::abs(v)));
    double rel = half ? m.fp16_rel : m.rel, min_cosine = half ? m.fp16_min_cosine : m.min_cosine;
    if (std::string(config.backend) == "vulkan" && m.gpu_rel >= 0) rel = m.gpu_rel, min_cosine = m.gpu_min_cosine;
    double atol = half && m.fp16_atol >= 0 ? m.fp16_atol : m.atol;
    double bound = rel * max_ref + atol;
    std::printf("  output %zu '%s' %s: cosine %.9f max_abs %.3g (bound %.3g) max_rel %.3g\n", i, name.c_str(),
                shape_str(ours[i].shape()).c_str(), g.cosine, g.max_abs, bound, g.max_rel);
    EXPECT_GE(g.cosine, min_cosine) << "output '" << name << "'";
    EXPECT_LE(g.max_abs, bound) << "output '" << name << "' (max|ref| " << max_ref << ")";
  }
  // On the CPU the first run of a shape signature records its allocations
  // and the next runs lay their tensors out in one planned arena: a second
  // run must give the same bits. (Checked with the fast kernels: the plan is
  // the executor's, whichever kernels run, and the reference's second run
  // of IS-Net would cost 40 s.)
  if (std::string(config.backend) == "cpu" && config.cpu_kernels == CpuKernels::Fast) {
    auto again = s->run(inputs);
    ASSERT_EQ(again.size(), ours.size());
    for (size_t i = 0; i < ours.size(); ++i)
      EXPECT_TRUE(again[i].same_as(ours[i])) << "output '" << s->outputs()[i].name << "' changed in the planned run";
  }
}

INSTANTIATE_TEST_SUITE_P(Real, RealModelTest,
                         ::testing::Combine(::testing::Range<size_t>(0, real_models::all().size()),
                                            ::testing::Range<size_t>(0, std::size(kConfigs))),
                         [](const ::testing::TestParamInfo<std::tuple<size_t, size_t>>& info) {
                           return real_models::all()[std::get<0>(info.param)].name + "_" +
                                  kConfigs[std::get<1>(info.param)].name;
                         });

}  // namespace
}  // namespace kestrel
