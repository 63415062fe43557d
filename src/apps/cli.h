// Shared pieces of the `kestrel` subcommands.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace kestrel::cli {

// argv after the subcommand: positional arguments and --flag value pairs.
struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> flags;  // "--input" -> "x=a.npy" (repeatable)
  std::vector<std::string> switches;              // flags without values: "--json"
  bool has(const std::string& s) const;
  std::string get(const std::string& flag, const std::string& def) const;
  int get_int(const std::string& flag, int def) const;
  // A finite number (def when the flag is absent); anything else fails naming the flag.
  double get_double(const std::string& flag, double def) const;
};
// `value_flags` take a value; any other --flag is a switch. Unknown flags fail.
Args parse_args(int argc, char** argv, const std::vector<std::string>& value_flags,
                const std::vector<std::string>& switch_flags);

// A command's own flags with the session's (backend, precision, threads and
// the tuning of SessionOptions: --device, --trace, --gemm-tiles, ...), which
// session_options() reads.
std::vector<std::string> with_session_flags(std::vector<std::string> own);
std::vector<std::string> with_session_switches(std::vector<std::string> own);
SessionOptions session_options(const Args& a);
// Inputs from --input NAME=FILE.npy; the rest filled with seeded random data
// that fits each input (symbolic dims default to 1, see --dim).
std::map<std::string, Tensor> make_inputs(const Session& s, const Args& a, unsigned seed = 1234);
// "float32 [1,3,224,224] min -1.2 max 3.4 mean 0.01 std 0.9"
std::string summarize(const Tensor& t);
// A progress line on stderr when it is a terminal.
void progress(const std::string& what, int done, int total);

int cmd_run(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_parity(int argc, char** argv);
int cmd_probe(int argc, char** argv);
int cmd_remove_bg(int argc, char** argv);
int cmd_detect(int argc, char** argv);
int cmd_ocr(int argc, char** argv);
int cmd_quantize(int argc, char** argv);

}  // namespace kestrel::cli
