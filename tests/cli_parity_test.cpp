// kestrel parity's exit status: 0 within the bounds given (--tol on max_rel,
// --min-cosine), 1 past them with the output and bound named, and a bound
// that is not a number refused by its flag. ONNX Runtime runs through node,
// as in every parity check.
#include <gtest/gtest.h>

#include <string>

#include "cli_helpers.h"

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

}  // namespace
}  // namespace kestrel
