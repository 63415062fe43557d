// Padding-free text encoders (SessionOptions::padding_free): a fused
// ModernBERT given a right-padding mask computes its live tokens only. Its
// outputs at live tokens agree with ONNX Runtime's, at padded tokens they
// read exactly zero, on the CPU and on Vulkan (where a kept run replays only
// for masks of its lengths).
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "core/compare.h"
#include "core/npy.h"
#include "onnx/loader.h"
#include "runtime/session.h"
#include "runtime/session_options.h"

using namespace kestrel;

namespace {

std::string fixture(const std::string& file) {
  return std::string(KESTREL_SOURCE_DIR) + "/tests/models/modernbert/" + file;
}

bool vulkan_tests() {
  const char* off = std::getenv("KESTREL_VULKAN_TESTS");
  return !off || std::string(off) != "off";
}

std::unique_ptr<Session> load(BackendChoice backend, Precision precision, bool padding_free,
                              vulkan::AttentionKernel attention = vulkan::AttentionKernel::Auto) {
  SessionOptions o;
  o.backend = backend;
  o.precision = precision;
  o.threads = 2;
  o.padding_free = padding_free;
  o.attention_kernel = attention;
  return Session::load(fixture("torchscript.onnx"), o);
}

// A right-padding mask [2, 13] with these live lengths.
Tensor mask_of(int64_t a, int64_t b) {
  std::vector<int64_t> m(26, 0);
  for (int64_t t = 0; t < a; ++t) m[size_t(t)] = 1;
  for (int64_t t = 0; t < b; ++t) m[size_t(13 + t)] = 1;
  return Tensor::from_i64(m).reshaped({2, 13});
}

std::vector<float> row(const Tensor& y, int64_t b, int64_t t) {
  const int64_t tokens = y.dim(1), width = y.dim(2);
  const float* p = y.data<float>() + (b * tokens + t) * width;
  return std::vector<float>(p, p + width);
}

// Every live token of `ours` agrees with `theirs` (each on its own: cosine
// of `cosine` at least, max error within `max_rel` of that token's range);
// every padded token of `ours` is exactly zero.
void expect_live_agree_padded_zero(const Tensor& ours, const Tensor& theirs, const Tensor& mask, double cosine,
                                   double max_rel, const std::string& what) {
  ASSERT_EQ(ours.shape(), theirs.shape()) << what;
  const int64_t batch = ours.dim(0), tokens = ours.dim(1), width = ours.dim(2);
  int live = 0, padded = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < tokens; ++t) {
      const std::vector<float> y = row(ours, b, t);
      if (mask.data<int64_t>()[b * tokens + t] == 0) {
        ++padded;
        for (int64_t i = 0; i < width; ++i)
          ASSERT_EQ(y[size_t(i)], 0.f) << what << ": sequence " << b << " padded token " << t << " channel " << i;
        continue;
      }
      ++live;
      const Agreement a = agreement(Tensor::from_f32({width}, y), Tensor::from_f32({width}, row(theirs, b, t)));
      EXPECT_GE(a.cosine, cosine) << what << ": sequence " << b << " token " << t;
      EXPECT_LE(a.max_rel, max_rel) << what << ": sequence " << b << " token " << t;
    }
  std::printf("%s: %d live tokens agree, %d padded tokens read zero\n", what.c_str(), live, padded);
}

}  // namespace

// The fixture's batch (13 and 9 live tokens) against ONNX Runtime's outputs.
// Bars as Families.FusedEncodersMatchOnnxRuntime...: cosine 0.99999 and
// 1e-4 of the range in float32, where only the order of sums differs
// (seen <= 1e-6); 0.9999 and 1e-2 in float16 storage, where every stored
// activation keeps 11 significant bits.
TEST(PaddingFree, LiveTokensMatchOnnxRuntimeAndPaddedOnesReadZero) {
  const Tensor ids = read_npy(fixture("input_0.npy")), mask = read_npy(fixture("input_1.npy"));
  const Tensor ort = read_npy(fixture("torchscript_output_0.npy"));
  std::vector<std::pair<BackendChoice, Precision>> cases = {{BackendChoice::Cpu, Precision::Fp32}};
  if (vulkan_tests()) cases.insert(cases.end(), {{BackendChoice::Vulkan, Precision::Fp32}, {BackendChoice::Vulkan, Precision::Fp16}});
  for (const auto& [backend, precision] : cases) {
    const std::string what = std::string(name_of(precision)) + (backend == BackendChoice::Cpu ? " cpu" : " vulkan");
    auto s = load(backend, precision, true);
    ASSERT_EQ(s->families().claims.size(), 1u) << what;
    int64_t claim = 0;
    for (const auto& n : s->model().graph.nodes)
      if (n.op_type == "RopeEncoder") {
        EXPECT_EQ(n.attr_i("padding_free", 0), 1) << what;
        claim = n.attr_i("claim_id", 0);
      }
    // The first run checks the claim on the CPU (against the graph's ops,
    // held to zero at padded tokens), the second runs the fused kernels; on
    // Vulkan the third is kept and the fourth replays it.
    std::vector<Tensor> out;
    for (int run = 0; run < 4; ++run) {
      out = s->run({{"input_ids", ids}, {"attention_mask", mask}});
      const bool half = precision == Precision::Fp16;
      expect_live_agree_padded_zero(out[0], ort, mask, half ? 0.9999 : 0.99999, half ? 1e-2 : 1e-4,
                                    what + " run " + std::to_string(run));
    }
    EXPECT_FALSE(s->fused_checks().withdrawn(claim)) << what << ": the padding-free encoder disagreed with the graph";
    const char* exact = std::getenv("KESTREL_VK_EXACT_BUFFERS");
    if (backend == BackendChoice::Vulkan && !(exact && std::string(exact) == "1"))
      EXPECT_TRUE(s->placement()->replayed) << what << ": " << s->placement()->summary();
  }
}

// Without the option the padded tokens hold what the graph computes there
// (ONNX Runtime's values, not zeros), and the node is not marked.
TEST(PaddingFree, IsOffByDefault) {
  auto s = load(BackendChoice::Cpu, Precision::Fp32, false);
  for (const auto& n : s->model().graph.nodes)
    if (n.op_type == "RopeEncoder") EXPECT_EQ(n.attr_i("padding_free", 0), 0);
  const Tensor mask = read_npy(fixture("input_1.npy"));
  const std::vector<Tensor> out = s->run({{"input_ids", read_npy(fixture("input_0.npy"))}, {"attention_mask", mask}});
  const Tensor ort = read_npy(fixture("torchscript_output_0.npy"));
  const std::vector<float> padded = row(out[0], 1, 12), theirs = row(ort, 1, 12);  // sequence 1 has 9 live tokens
  const Agreement a = agreement(Tensor::from_f32({int64_t(padded.size())}, padded),
                                Tensor::from_f32({int64_t(theirs.size())}, theirs));
  EXPECT_GE(a.cosine, 0.99999);
}

// Other lengths on a session that kept a run: the kept run does not serve
// them (its work was recorded for the first lengths), so they are recorded
// again, agree with a session computing every token, and are then kept and
// replayed in turn. A sequence with no live token reads zero throughout,
// and so does a batch with none.
TEST(PaddingFree, OtherLengthsRecordAgainAndAgree) {
  const Tensor ids = read_npy(fixture("input_0.npy"));
  auto every = load(BackendChoice::Cpu, Precision::Fp32, false);
  std::vector<BackendChoice> backends = {BackendChoice::Cpu};
  if (vulkan_tests()) backends.push_back(BackendChoice::Vulkan);
  const char* exact = std::getenv("KESTREL_VK_EXACT_BUFFERS");
  const bool keeps = !(exact && std::string(exact) == "1");
  for (BackendChoice backend : backends) {
    const std::string what = backend == BackendChoice::Cpu ? "cpu" : "vulkan";
    auto s = load(backend, Precision::Fp32, true);
    for (const auto& [a, b] : std::vector<std::pair<int64_t, int64_t>>{{13, 9}, {13, 5}, {4, 13}, {13, 0}, {0, 0}}) {
      const Tensor mask = mask_of(a, b);
      const std::string lengths = what + " lengths " + std::to_string(a) + "," + std::to_string(b);
      const Tensor ref = every->run({{"input_ids", ids}, {"attention_mask", mask}})[0];
      for (int run = 0; run < 4; ++run) {
        const std::vector<Tensor> out = s->run({{"input_ids", ids}, {"attention_mask", mask}});
        expect_live_agree_padded_zero(out[0], ref, mask, 0.99999, 1e-4, lengths + " run " + std::to_string(run));
        if (backend != BackendChoice::Vulkan || !keeps || a + b == 0) continue;
        // The first run at new lengths records again; by the third a run at
        // them is kept, and the fourth replays it.
        if (run == 0 && !(a == 13 && b == 9))
          EXPECT_FALSE(s->placement()->replayed) << lengths << ": a run kept for other lengths was replayed";
        if (run == 3) EXPECT_TRUE(s->placement()->replayed) << lengths << ": " << s->placement()->summary();
      }
    }
  }
}

// In a padding-free run flash attention leaves out the key tiles past a
// sequence's live tokens (their scores would all be -inf) and the query
// tiles past them (nobody reads their rows): 150 tokens make several tiles
// of each (64 queries, 16 keys on the plain kernel lavapipe runs). Against
// a CPU session computing every token: the live tokens agree (padded ones
// zero) when padding-free, and every token when all are computed. Bars as
// above.
TEST(PaddingFree, FlashAttentionLeavesOutPaddedTilesExactly) {
  if (!vulkan_tests()) GTEST_SKIP() << "KESTREL_VULKAN_TESTS=off";
  const int64_t tokens = 150;
  std::vector<int64_t> id_values(size_t(2 * tokens));
  for (size_t i = 0; i < id_values.size(); ++i) id_values[i] = 5 + int64_t(i * 37 % 90);  // the fixture's vocabulary is 97
  const Tensor ids = Tensor::from_i64(id_values).reshaped({2, tokens});
  auto every = load(BackendChoice::Cpu, Precision::Fp32, false);
  for (const Precision precision : {Precision::Fp32, Precision::Fp16})
    for (const bool padding_free : {false, true}) {
      auto s = load(BackendChoice::Vulkan, precision, padding_free, vulkan::AttentionKernel::Flash);
      const bool half = precision == Precision::Fp16;
      for (const auto& [a, b] : std::vector<std::pair<int64_t, int64_t>>{{150, 20}, {70, 3}, {150, 150}}) {
        std::vector<int64_t> m(size_t(2 * tokens), 0);
        for (int64_t t = 0; t < a; ++t) m[size_t(t)] = 1;
        for (int64_t t = 0; t < b; ++t) m[size_t(tokens + t)] = 1;
        const Tensor mask = Tensor::from_i64(m).reshaped({2, tokens});
        const std::string what = std::string(name_of(precision)) + (padding_free ? " padding-free" : " every token") +
                                 " lengths " + std::to_string(a) + "," + std::to_string(b);
        const Tensor ref = every->run({{"input_ids", ids}, {"attention_mask", mask}})[0];
        for (int run = 0; run < 2; ++run) {  // the second run is the fused kernels' (the first checks the claim)
          const Tensor out = s->run({{"input_ids", ids}, {"attention_mask", mask}})[0];
          if (padding_free) {
            expect_live_agree_padded_zero(out, ref, mask, half ? 0.9999 : 0.99999, half ? 1e-2 : 1e-4, what);
            continue;
          }
          const Agreement ag = agreement(out, ref);
          EXPECT_GE(ag.cosine, half ? 0.9999 : 0.99999) << what;
          EXPECT_LE(ag.max_rel, half ? 1e-2 : 1e-4) << what;
        }
      }
    }
}
