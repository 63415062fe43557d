// `kestrel`: run, bench, inspect and check ONNX models.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "api/kestrel.h"
#include "apps/cli.h"

namespace {
const char* kUsage =
    "usage: kestrel <command> MODEL [options]\n"
    "  run MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--backend auto|cpu|vulkan] [--precision auto|fp32|fp16]\n"
    "      [--threads N] [--dim SYM=N]... [--shape NAME=D0,D1,...]... [--seed N] [--save-inputs DIR] [--runs N]\n"
    "      (missing inputs are seeded random, open dims 1 unless --dim or --shape sets them; DIR/i.npy is input i)\n"
    "      [--max-loop-iterations N]  (per Loop/Scan node and run; default 1000000, 0: no cap; bench takes it too)\n"
    "      [--cpu-kernels fast|reference]  (reference: the plain oracle kernels alone, slower; bench and parity take it too)\n"
    "  bench MODEL [--input NAME=FILE.npy]... [--backend ...] [--precision ...] [--threads N] [--runs N] [--warmup N]\n"
    "      [--dim SYM=N]... [--shape NAME=D0,D1,...]... [--json] [--profile]\n"
    "  inspect MODEL [--json] [--nodes] [--backend vulkan [--precision ...] [--run]]  (with --backend: the static GPU/CPU split;\n"
    "      --run: of one run, with --input, --dim, --shape and --threads as for run)\n"
    "  parity MODEL [--input NAME=FILE.npy]... [--backend ...] [--precision ...] [--threads N] [--dim SYM=N]...\n"
    "      [--shape NAME=D0,D1,...]... [--seed N] [--tol MAX_REL] [--min-cosine C]\n"
    "      (exit 1 when outputs differ in count or shape or pass a bound)\n"
    "  remove-bg ISNET_MODEL PHOTO OUT.png [--backend ...] [--precision ...] [--threads N]\n"
    "  probe  (JSON: CPU features and Vulkan devices)\n"
    "  --version  (the library's version); COMMAND --help: that command's usage\n"
    "environment: KESTREL_VK_DEVICE=index|name  KESTREL_PRECISION=fp32|fp16  KESTREL_TRACE=1|2 (per-op timing)\n"
    "  (the README lists every variable Kestrel reads)\n";

// `kestrel COMMAND --help`: the usage's lines for that command (its line and
// the indented ones under it), then the environment lines; "" for a word
// that is no command.
std::string command_usage(const std::string& cmd) {
  std::string lines, env, line;
  bool in = false;
  for (const char* p = kUsage; *p;) {
    const char* end = std::strchr(p, '\n');
    line.assign(p, end ? size_t(end - p) : std::strlen(p));
    p = end ? end + 1 : p + line.size();
    if (line.rfind("  " + cmd + " ", 0) == 0) in = true, lines += line.substr(2) + "\n";
    else if (in && line.rfind("      ", 0) == 0) lines += line + "\n";
    else in = false;
    if (line.rfind("environment:", 0) == 0 || line.rfind("  (the README", 0) == 0) env += line + "\n";
  }
  return lines.empty() ? "" : "usage: kestrel " + lines + env;
}

bool is_help(const char* a) { return !std::strcmp(a, "--help") || !std::strcmp(a, "-h"); }
}

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("kestrel %s\n", kestrel_version());
    return 0;
  }
  const char* cmd = argv[1];
  // COMMAND --help or -h anywhere among its arguments.
  for (int i = 2; i < argc; ++i)
    if (const std::string usage = command_usage(cmd); is_help(argv[i]) && !usage.empty()) {
      std::fputs(usage.c_str(), stdout);
      return 0;
    }
  try {
    if (!std::strcmp(cmd, "run")) return kestrel::cli::cmd_run(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "bench")) return kestrel::cli::cmd_bench(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "inspect")) return kestrel::cli::cmd_inspect(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "parity")) return kestrel::cli::cmd_parity(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "probe")) return kestrel::cli::cmd_probe(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "remove-bg")) return kestrel::cli::cmd_remove_bg(argc - 2, argv + 2);
    std::fprintf(stderr, "kestrel: unknown command '%s'\n%s", cmd, kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kestrel %s: error: %s\n", cmd, e.what());
    return 1;
  }
}
