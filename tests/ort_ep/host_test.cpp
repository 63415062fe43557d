// A C++ host of ONNX Runtime, as an application would be: it dlopens
// onnxruntime-node's libonnxruntime.so.1 (1.30), registers Kestrel's plugin
// library, and runs models with the Kestrel EP on its Vulkan device (lavapipe
// in CI) and with the CPU EP alone, comparing outputs and where the nodes went.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <onnxruntime_c_api.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/npy.h"

namespace {
namespace fs = std::filesystem;

const OrtApi* g_ort = nullptr;

void ok(OrtStatus* s) {
  if (!s) return;
  const std::string message = g_ort->GetErrorMessage(s);
  g_ort->ReleaseStatus(s);
  FAIL() << message;
}
#define ORT_OK(call) ASSERT_NO_FATAL_FAILURE(ok(call))

std::string onnxruntime_library() {
  const fs::path bin = fs::path(KESTREL_SOURCE_DIR) / ".deps/npm/node_modules/onnxruntime-node/bin";
  if (fs::exists(bin))
    for (const auto& e : fs::recursive_directory_iterator(bin))
      if (e.path().filename() == "libonnxruntime.so.1" && e.path().string().find("/linux/x64/") != std::string::npos)
        return e.path().string();
  return "";
}

class OrtHost : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string lib = onnxruntime_library();
    ASSERT_FALSE(lib.empty()) << "onnxruntime-node's libonnxruntime.so.1 is missing: run scripts/setup.sh";
    handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto get_base = reinterpret_cast<const OrtApiBase* (*)()>(dlsym(handle_, "OrtGetApiBase"));
    ASSERT_NE(get_base, nullptr);
    version_ = get_base()->GetVersionString();
    g_ort = get_base()->GetApi(ORT_API_VERSION);
    ASSERT_NE(g_ort, nullptr) << "ONNX Runtime " << version_ << " has no API version " << ORT_API_VERSION;
    ORT_OK(g_ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "kestrel_host", &env_));
    ORT_OK(g_ort->RegisterExecutionProviderLibrary(env_, "Kestrel", KESTREL_ORT_EP_LIBRARY));
    const OrtEpDevice* const* devices = nullptr;
    size_t count = 0;
    ORT_OK(g_ort->GetEpDevices(env_, &devices, &count));
    for (size_t i = 0; i < count; ++i) {
      if (std::string(g_ort->EpDevice_EpName(devices[i])) != "Kestrel") continue;
      const char* backend = g_ort->GetKeyValue(g_ort->EpDevice_EpMetadata(devices[i]), "kestrel.backend");
      kestrel_[backend ? backend : ""] = devices[i];
    }
  }
  static void TearDownTestSuite() {
    if (env_) {
      ok(g_ort->UnregisterExecutionProviderLibrary(env_, "Kestrel"));
      g_ort->ReleaseEnv(env_);
    }
  }

  // A session with the Kestrel device (or the CPU EP alone when null).
  static OrtSession* session(const std::string& model, const OrtEpDevice* device) {
    OrtSessionOptions* so = nullptr;
    ok(g_ort->CreateSessionOptions(&so));
    ok(g_ort->AddSessionConfigEntry(so, "session.record_ep_graph_assignment_info", "1"));
    if (device) ok(g_ort->SessionOptionsAppendExecutionProvider_V2(so, env_, &device, 1, nullptr, nullptr, 0));
    OrtSession* s = nullptr;
    ok(g_ort->CreateSession(env_, model.c_str(), so, &s));
    g_ort->ReleaseSessionOptions(so);
    return s;
  }

  static std::map<std::string, size_t> nodes_per_ep(OrtSession* s) {
    const OrtEpAssignedSubgraph* const* subgraphs = nullptr;
    size_t n = 0;
    std::map<std::string, size_t> count;
    ok(g_ort->Session_GetEpGraphAssignmentInfo(s, &subgraphs, &n));
    for (size_t i = 0; i < n; ++i) {
      const char* ep = nullptr;
      const OrtEpAssignedNode* const* nodes = nullptr;
      size_t k = 0;
      ok(g_ort->EpAssignedSubgraph_GetEpName(subgraphs[i], &ep));
      ok(g_ort->EpAssignedSubgraph_GetNodes(subgraphs[i], &nodes, &k));
      count[ep] += k;
    }
    return count;
  }

  // Runs a one-input float model; returns each output's values.
  static std::vector<std::vector<float>> run(OrtSession* s, const std::string& input, std::vector<float>& data,
                                             const std::vector<int64_t>& shape) {
    OrtMemoryInfo* mem = nullptr;
    ok(g_ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
    OrtValue* x = nullptr;
    ok(g_ort->CreateTensorWithDataAsOrtValue(mem, data.data(), data.size() * sizeof(float), shape.data(), shape.size(),
                                             ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &x));
    size_t n_out = 0;
    ok(g_ort->SessionGetOutputCount(s, &n_out));
    OrtAllocator* alloc = nullptr;
    ok(g_ort->GetAllocatorWithDefaultOptions(&alloc));
    std::vector<char*> names(n_out);
    for (size_t i = 0; i < n_out; ++i) ok(g_ort->SessionGetOutputName(s, i, alloc, &names[i]));
    std::vector<OrtValue*> outs(n_out, nullptr);
    const char* in_name = input.c_str();
    ok(g_ort->Run(s, nullptr, &in_name, &x, 1, names.data(), n_out, outs.data()));
    std::vector<std::vector<float>> result;
    for (size_t i = 0; i < n_out; ++i) {
      OrtTensorTypeAndShapeInfo* info = nullptr;
      size_t count = 0;
      float* p = nullptr;
      ok(g_ort->GetTensorTypeAndShape(outs[i], &info));
      ok(g_ort->GetTensorShapeElementCount(info, &count));
      g_ort->ReleaseTensorTypeAndShapeInfo(info);
      ok(g_ort->GetTensorMutableData(outs[i], reinterpret_cast<void**>(&p)));
      result.emplace_back(p, p + count);
      g_ort->ReleaseValue(outs[i]);
      alloc->Free(alloc, names[i]);
    }
    g_ort->ReleaseValue(x);
    g_ort->ReleaseMemoryInfo(mem);
    return result;
  }

  // Float32 on both sides: the EPs differ in summation order only, under 1e-4
  // of an output's range (tests/real_models.cpp), with a 1e-5 floor.
  static void expect_close(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                           const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t o = 0; o < got.size(); ++o) {
      ASSERT_EQ(got[o].size(), want[o].size()) << what << " output " << o;
      float lo = INFINITY, hi = -INFINITY, err = 0;
      for (size_t i = 0; i < want[o].size(); ++i) {
        lo = std::min(lo, want[o][i]);
        hi = std::max(hi, want[o][i]);
        err = std::max(err, std::fabs(got[o][i] - want[o][i]));
      }
      EXPECT_LE(err, 1e-4f * (hi - lo) + 1e-5f) << what << " output " << o << " (range " << lo << " to " << hi << ")";
    }
  }

  void compare(const std::string& model, const std::string& input, std::vector<float> data,
               const std::vector<int64_t>& shape, const std::map<std::string, size_t>& expected_nodes) {
    ASSERT_TRUE(kestrel_.count("vulkan")) << "no Kestrel Vulkan EP device (is a Vulkan driver installed?)";
    OrtSession* with_kestrel = session(model, kestrel_["vulkan"]);
    OrtSession* cpu_only = session(model, nullptr);
    ASSERT_TRUE(with_kestrel && cpu_only);
    expect_close(run(with_kestrel, input, data, shape), run(cpu_only, input, data, shape), model);
    EXPECT_EQ(nodes_per_ep(with_kestrel), expected_nodes) << model;
    g_ort->ReleaseSession(with_kestrel);
    g_ort->ReleaseSession(cpu_only);
  }

  static inline void* handle_ = nullptr;
  static inline OrtEnv* env_ = nullptr;
  static inline std::string version_;
  static inline std::map<std::string, const OrtEpDevice*> kestrel_;
};

std::vector<float> noise(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TEST_F(OrtHost, OffersAKestrelDevicePerVulkanDeviceAndOneForTheCpu) {
  EXPECT_EQ(version_.substr(0, 5), "1.30.");
  EXPECT_TRUE(kestrel_.count("vulkan"));
  EXPECT_TRUE(kestrel_.count("cpu"));
}

TEST_F(OrtHost, RunsClipWithItsEncoderOnKestrel) {
  const std::string dir = std::string(KESTREL_SOURCE_DIR) + "/tests/models/clip/";
  kestrel::Tensor x = kestrel::read_npy(dir + "input_0.npy");
  std::vector<float> data(x.data<float>(), x.data<float>() + x.numel());
  compare(dir + "torchscript.onnx", "pixel_values", data, x.shape(), {{"Kestrel", 76}});
}

TEST_F(OrtHost, RunsRealDetectorsOnKestrel) {
  compare(std::string(KESTREL_SOURCE_DIR) + "/models/ultraface_320.onnx", "input", noise(3 * 240 * 320, 1),
          {1, 3, 240, 320}, {{"Kestrel", 125}});
  compare(std::string(KESTREL_SOURCE_DIR) + "/models/blazeface_back_256.onnx", "input:0", noise(256 * 256 * 3, 2),
          {1, 256, 256, 3}, {{"Kestrel", 147}});
}

}  // namespace
