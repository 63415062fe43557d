// `kestrel`: run, bench, inspect and check ONNX models.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "api/kestrel.h"
#include "apps/cli.h"

namespace {
namespace cli = kestrel::cli;

// Each command: its handler and its lines of the usage (from its name on;
// continuation lines indented six spaces), which `kestrel COMMAND --help`
// prints alone and `kestrel --help` prints with the others.
struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* usage;
};
const Command kCommands[] = {
    {"run", cli::cmd_run,
     "run MODEL [--input NAME=FILE.npy|FILE.pb]... [--inputs FILE.npz]... [--output-dir DIR] [--backend auto|cpu|vulkan] [--precision auto|fp32|fp16]\n"
     "      [--threads N] [--dim SYM=N]... [--shape NAME=D0,D1,...]... [--seed N] [--save-inputs DIR] [--runs N]\n"
     "      (missing inputs are seeded random, open dims 1 unless --dim or --shape sets them; DIR/i.npy is input i)\n"
     "      [--max-loop-iterations N]  (per Loop/Scan node and run; default 1000000, 0: no cap; bench takes it too)\n"
     "      [--cpu-kernels fast|reference]  (reference: the plain oracle kernels alone, slower; bench and parity take it too)\n"
     "      [--padding-free]  (a fused text encoder computes the live tokens of a right-padded batch only; its outputs\n"
     "      read zero at padded tokens, where ONNX Runtime computes values; bench and parity take it too)\n"
     "      tuning and diagnosis (bench and parity take them too; each also an environment variable, README):\n"
     "      [--device INDEX|NAME] [--trace 1|2] [--gemm-tiles auto|tiny|small|wide|large] [--attention auto|flash|chunked]\n"
     "      [--attention-chunk ROWS] [--encoder-heads N] [--no-families] [--no-replay] [--exact-buffers] [--no-tensor-cores]\n"},
    {"bench", cli::cmd_bench,
     "bench MODEL [--input NAME=FILE.npy|FILE.pb]... [--inputs FILE.npz]... [--backend ...] [--precision ...] [--threads N] [--runs N] [--warmup N]\n"
     "      [--dim SYM=N]... [--shape NAME=D0,D1,...]... [--json] [--profile]\n"},
    {"inspect", cli::cmd_inspect,
     "inspect MODEL [--json] [--nodes] [--backend vulkan [--precision ...] [--run]]  (with --backend: the static GPU/CPU split;\n"
     "      --run: of one run, with --input, --inputs, --dim, --shape and --threads as for run)\n"},
    {"parity", cli::cmd_parity,
     "parity MODEL [--input NAME=FILE.npy|FILE.pb]... [--inputs FILE.npz]... [--backend ...] [--precision ...] [--threads N] [--dim SYM=N]...\n"
     "      [--shape NAME=D0,D1,...]... [--seed N] [--tol MAX_REL] [--min-cosine C] [--runs N]\n"
     "      (exit 1 when outputs differ in count or shape or pass a bound in any of N runs, default 4: a session's\n"
     "      first runs check fused encoders on the CPU, calibrate float16 and record the work later runs replay)\n"},
    {"detect", cli::cmd_detect,
     "detect MODEL IMAGE|DIR... [--out DIR] [--json] [--conf T] [--iou T] [--arch auto|yolov8|yolox|yolov5|scrfd|yunet|ultraface|blazeface]\n"
     "      [--size WxH] [--batch N] [--save-inputs DIR] [--backend ...] [--precision ...] [--threads N]  (boxes in the\n"
     "      photo's pixels; --size: the input size of a model that leaves it open, default 640x640; --batch: photos a run\n"
     "      where the model's batch dimension is open, default 8; --out: an annotated PNG per photo; --json: one object\n"
     "      per photo and line; --save-inputs: DIR/i.npy is photo i as the model took it)\n"},
    {"ocr", cli::cmd_ocr,
     "ocr DET REC IMAGE|DIR... [--cls CLS] [--dict FILE] [--out DIR] [--json] [--min-score S] [--limit-side N]\n"
     "      [--backend ...] [--precision ...] [--threads N]  (PP-OCR: DB text detection, the optional direction classifier,\n"
     "      CTC recognition over --dict, default ppocr_keys_v1.txt beside REC; --json: one object per photo and line, its\n"
     "      lines as {text, score, box: four [x, y] corners}; --limit-side: the detector's longest side, default 960)\n"},
    {"quantize", cli::cmd_quantize,
     "quantize MODEL --calib DIR --out Q.onnx [--method minmax|percentile|entropy] [--percentile P] [--per-channel|--per-tensor]\n"
     "      [--limit N] [--check N] [--min-cosine C] [--size WxH] [--scale S] [--mean M[,M,M]] [--std S[,S,S]] [--bgr] [--layout nchw|nhwc]\n"
     "      [--int4-weights] [--reduce-range] [--threads N]  (static int8: DIR holds .npz samples keyed by input name, .npy for a\n"
     "      one-input model, or photos, resized to the input's size (or --size) as (pixel * scale - mean) / std, scale\n"
     "      1/255, RGB unless --bgr; writes a QDQ model ONNX Runtime also runs, weights per channel where the opset allows,\n"
     "      and prints each output's cosine against the float model on --check samples, default 8; the nodes nearest the\n"
     "      outputs stay in float where quantizing them would take an output below --min-cosine, default 0.99, 0: quantize\n"
     "      all; --int4-weights: MatMuls' weights in 4-bit blocks of 32 as com.microsoft MatMulNBits, activations float;\n"
     "      --reduce-range: int8 weights within [-64, 64], which ONNX Runtime multiplies exactly on x86 CPUs without VNNI)\n"},
    {"remove-bg", cli::cmd_remove_bg, "remove-bg ISNET_MODEL PHOTO OUT.png [--backend ...] [--precision ...] [--threads N]\n"},
    {"probe", cli::cmd_probe, "probe  (JSON: CPU features and Vulkan devices)\n"},
};
const char* kEnvironment =
    "environment: KESTREL_VK_DEVICE=index|name  KESTREL_PRECISION=fp32|fp16  KESTREL_TRACE=1|2 (per-op timing)\n"
    "  (the README lists every variable Kestrel reads)\n";

std::string usage() {
  std::string u = "usage: kestrel <command> MODEL [options]\n";
  for (const Command& c : kCommands) u += std::string("  ") + c.usage;
  return u + "  --version  (the library's version); COMMAND --help: that command's usage\n" + kEnvironment;
}

bool is_help(const char* a) { return !std::strcmp(a, "--help") || !std::strcmp(a, "-h"); }
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || is_help(argv[1])) {
    std::fputs(usage().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("kestrel %s\n", kestrel_version());
    return 0;
  }
  const char* name = argv[1];
  const Command* cmd = nullptr;
  for (const Command& c : kCommands)
    if (!std::strcmp(c.name, name)) cmd = &c;
  if (!cmd) {
    std::fprintf(stderr, "kestrel: unknown command '%s'\n%s", name, usage().c_str());
    return 2;
  }
  // COMMAND --help or -h anywhere among its arguments: that command's usage.
  for (int i = 2; i < argc; ++i)
    if (is_help(argv[i])) {
      std::printf("usage: kestrel %s%s", cmd->usage, kEnvironment);
      return 0;
    }
  try {
    return cmd->run(argc - 2, argv + 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kestrel %s: error: %s\n", name, e.what());
    return 1;
  }
}
