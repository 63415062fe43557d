// kestrel parity's exit status: 0 within the bounds given (--tol on max_rel,
// --min-cosine), 1 past them with the output and bound named, and a bound
// that is not a number refused by its flag. ONNX Runtime runs through node,
// as in every parity check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_helpers.h"
#include "core/npy.h"
#include "core/tensor.h"

namespace kestrel {
namespace {

// Runs `kestrel parity` on the CLIP fixture with `flags`; expects exit status
// `code` and `text` in what it printed.
void expect_parity(const std::string& flags, int code, const std::string& text) {
  const std::string model = std::string(KESTREL_SOURCE_DIR) + "/tests/models/clip/torchscript.onnx";
  test::CliResult r = test::run_kestrel("parity " + model + " --backend cpu --threads 2 " + flags + " 2>&1");
  EXPECT_EQ(WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1, code) << flags << ": " << r.out;
  EXPECT_NE(r.out.find(text), std::string::npos) << flags << ": " << r.out;
  if (code == 0) EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << flags << ": " << r.out;
}

TEST(CliParity, ExitStatusFollowsTheBounds) {
  expect_parity("--tol 1e-3 --min-cosine 0.99999", 0, "output 1 'pooler_output'");
  // No two GEMM libraries agree to 1e-30 of the range on a transformer's outputs.
  expect_parity("--tol 1e-30", 1, "is over --tol 1e-30");
  expect_parity("--tol abc", 1, "--tol expects a number, got 'abc'");
  expect_parity("--min-cosine 2", 1, "--min-cosine expects a cosine from -1 to 1, got 2");
}

// A padded query whose window holds only padding sees no key and gets what
// its graph gives it (this export masks with -inf and zeroes the NaN: 0; a
// kernel that gives it anything else fails here, checked by breaking the
// flash kernel's answer for it). ModernBERT's fixture with a second sequence of 2 live
// tokens out of 13 (window +-4: queries 7 to 12 see only padding), on the
// GPU through flash attention and through the scores buffer, float32 and
// float16, every run held to ONNX Runtime's answer: the fused encoder's own
// bars (tests/families_test.cpp).
TEST(CliParity, AQueryThatSeesNoKeyGetsTheGraphsAnswerOnTheGpu) {
  const std::string dir = std::string(KESTREL_SOURCE_DIR) + "/tests/models/modernbert/";
  const std::string mask = (std::filesystem::temp_directory_path() / ("kestrel_unseen_mask_" + std::to_string(getpid()) + ".npy")).string();
  std::vector<int64_t> m(2 * 13, 0);
  for (int t = 0; t < 13; ++t) m[size_t(t)] = 1;
  m[13] = m[14] = 1;
  Tensor t = Tensor::from_i64(m);
  write_npy(mask, Tensor(DType::Int64, {2, 13}, t.storage()));
  for (const std::string attention : {"flash", "chunked"})
    for (const auto& [precision, bounds] : std::vector<std::pair<std::string, std::string>>{
             {"fp32", "--tol 1e-4 --min-cosine 0.99999"}, {"fp16", "--tol 1e-2 --min-cosine 0.9999"}}) {
      const std::string args = "parity " + dir + "torchscript.onnx --input input_ids=" + dir + "input_0.npy --input attention_mask=" +
                               mask + " --backend vulkan --threads 2 --runs 3 --precision " + precision + " --attention " +
                               attention + " " + bounds;
      test::CliResult r = test::run_kestrel(args + " 2>&1");
      EXPECT_EQ(WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1, 0) << args << ": " << r.out;
      EXPECT_NE(r.out.find("output 0 'last_hidden_state'"), std::string::npos) << args << ": " << r.out;
    }
  std::filesystem::remove(mask);
}

}  // namespace
}  // namespace kestrel
