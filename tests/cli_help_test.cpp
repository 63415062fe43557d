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
        "--save-inputs", "--runs", "--max-loop-iterations"}},
      {"bench model.onnx -h", "bench",
       {"--input", "--inputs", "--backend", "--precision", "--threads", "--runs", "--warmup", "--dim", "--shape", "--json", "--profile"}},
      {"parity --help", "parity",
       {"--input", "--inputs", "--backend", "--precision", "--threads", "--dim", "--shape", "--seed", "--tol", "--min-cosine"}},
      {"inspect -h", "inspect", {"--json", "--nodes", "--backend", "--precision", "--run", "--input", "--inputs", "--dim", "--shape"}},
      {"remove-bg --help", "remove-bg", {"--backend", "--precision", "--threads"}},
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

}  // namespace
}  // namespace kestrel
