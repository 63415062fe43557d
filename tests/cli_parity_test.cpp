// kestrel parity's exit status: 0 within the bounds given (--tol on max_rel,
// --min-cosine), 1 past them with the output and bound named, and a bound
// that is not a number refused by its flag. ONNX Runtime runs through node,
// as in every parity check.
#include <gtest/gtest.h>

#include <string>

#include "cli_helpers.h"

namespace kestrel {
namespace {

int exit_code(const test::CliResult& r) { return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1; }

TEST(CliParity, ExitStatusFollowsTheBounds) {
  const std::string model =
      std::string(KESTREL_SOURCE_DIR) + "/tests/models/clip/torchscript.onnx --backend cpu --threads 2";
  test::CliResult within = test::run_kestrel("parity " + model + " --tol 1e-3 --min-cosine 0.99999 2>&1");
  EXPECT_EQ(exit_code(within), 0) << within.out;
  EXPECT_EQ(within.out.find("FAIL"), std::string::npos) << within.out;
  // No two GEMM libraries agree to 1e-30 of the range on a transformer's outputs.
  test::CliResult past = test::run_kestrel("parity " + model + " --tol 1e-30 2>&1");
  EXPECT_EQ(exit_code(past), 1) << past.out;
  EXPECT_NE(past.out.find("FAIL: max_rel"), std::string::npos) << past.out;
  EXPECT_NE(past.out.find("is over --tol 1e-30"), std::string::npos) << past.out;
  test::CliResult word = test::run_kestrel("parity " + model + " --tol abc 2>&1");
  EXPECT_EQ(exit_code(word), 1) << word.out;
  EXPECT_NE(word.out.find("--tol expects a number, got 'abc'"), std::string::npos) << word.out;
  test::CliResult range = test::run_kestrel("parity " + model + " --min-cosine 2 2>&1");
  EXPECT_EQ(exit_code(range), 1) << range.out;
  EXPECT_NE(range.out.find("--min-cosine expects a cosine from -1 to 1, got 2"), std::string::npos) << range.out;
}

}  // namespace
}  // namespace kestrel
