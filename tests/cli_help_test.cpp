// kestrel COMMAND --help (or -h anywhere among its arguments): that
// command's usage alone, exit status 0, naming every flag the command takes;
// an unknown command is still an error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_helpers.h"

namespace kestrel {
namespace {

struct HelpCase {
  std::string args;
  std::string command;
  std::vector<std::string> flags;  // what the command's parser takes (src/apps/cmd_*.cpp)
};

TEST(CliHelp, EachCommandPrintsItsOwnUsage) {
  const std::vector<HelpCase> cases = {
      {"run --help", "run",
       {"--input", "--inputs", "--output-dir", "--backend", "--precision", "--cpu-kernels", "--threads", "--dim", "--shape", "--seed",
        "--save-inputs", "--runs", "--max-loop-iterations", "--device", "--trace", "--gemm-tiles", "--attention",
        "--attention-chunk", "--encoder-heads", "--no-families", "--no-replay", "--exact-buffers", "--no-tensor-cores"}},
      {"bench model.onnx -h", "bench",
       {"--input", "--inputs", "--backend", "--precision", "--threads", "--runs", "--warmup", "--dim", "--shape", "--json", "--profile"}},
      {"parity --help", "parity",
       {"--input", "--inputs", "--backend", "--precision", "--threads", "--dim", "--shape", "--seed", "--tol", "--min-cosine", "--runs"}},
      {"inspect -h", "inspect", {"--json", "--nodes", "--backend", "--precision", "--run", "--input", "--inputs", "--dim", "--shape"}},
      {"remove-bg --help", "remove-bg", {"--backend", "--precision", "--threads"}},
      {"quantize --help", "quantize",
       {"--calib", "--out", "--method", "--percentile", "--per-channel", "--per-tensor", "--limit", "--check",
        "--min-cosine", "--size", "--scale", "--mean", "--std", "--bgr", "--layout", "--threads"}},
  };
  for (const HelpCase& c : cases) {
    test::CliResult r = test::run_kestrel(c.args + " 2>&1");
    EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << c.args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("usage: kestrel " + c.command + " ", 0), 0u) << c.args << ": " << r.out;
    for (const std::string& f : c.flags) EXPECT_NE(r.out.find(f), std::string::npos) << c.args << " lacks " << f;
    EXPECT_EQ(r.out.find("  probe"), std::string::npos) << c.args << " printed every command: " << r.out;
  }
  test::CliResult unknown = test::run_kestrel("frob --help 2>&1");
  EXPECT_TRUE(WIFEXITED(unknown.status) && WEXITSTATUS(unknown.status) == 2) << unknown.out;
  EXPECT_NE(unknown.out.find("unknown command 'frob'"), std::string::npos) << unknown.out;
}

// The session's tuning flags reach it, in run as in bench and parity: with
// --trace 1 each executed node writes a line, and the CLIP fixture on the GPU
// runs as a few nodes around its fused encoder unless --no-families; a value
// out of range is refused by the flag's name.
TEST(CliTuning, FlagsReachTheSession) {
  const std::string clip = std::string(KESTREL_SOURCE_DIR) + "/tests/models/clip/torchscript.onnx";
  auto trace_lines = [&](const std::string& extra) {
    test::CliResult r = test::run_kestrel("run " + clip + " --backend vulkan --trace 1 --no-replay " + extra + " 2>&1");
    EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.out;
    size_t n = 0;
    for (size_t at = r.out.find("[kestrel trace]"); at != std::string::npos; at = r.out.find("[kestrel trace]", at + 1)) ++n;
    return n;
  };
  const size_t fused = trace_lines(""), op_by_op = trace_lines("--no-families");
  EXPECT_GT(fused, 0u);
  EXPECT_GT(op_by_op, 3 * fused) << "fused " << fused << " lines, op by op " << op_by_op;
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--gemm-tiles huge", "unknown GEMM tiles 'huge'"},
           {"--attention fast", "unknown attention kernel 'fast'"},
           {"--trace 3", "--trace must be 0, 1 or 2, got 3"},
           {"--attention-chunk -2", "--attention-chunk must be 0 (automatic) or more, got -2"}}) {
    test::CliResult r = test::run_kestrel("bench " + clip + " --backend cpu " + args + " 2>&1");
    EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0) << args << ": " << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << args << ": " << r.out;
  }
}

}  // namespace
}  // namespace kestrel
