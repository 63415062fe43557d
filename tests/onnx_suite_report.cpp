// Prints the ONNX backend suite's pass rate per op (and writes the list of
// failing cases with their messages, for maintaining the expected-failure file).
//   kestrel_suite_report [--failures FILE]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "onnx_suite.h"

using namespace kestrel::suite;

int main(int argc, char** argv) {
  std::string failures_path;
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--failures")) failures_path = argv[i + 1];
  std::map<std::string, std::pair<int, int>> per_op;  // op -> (passed, total)
  std::ofstream fails;
  if (!failures_path.empty()) fails.open(failures_path);
  int passed = 0, total = 0;
  auto cases = list_cases();
  for (const auto& c : cases) {
    CaseResult r = run_case(c);
    ++total;
    passed += r.passed;
    for (const auto& op : r.ops) {
      per_op[op].second++;
      per_op[op].first += r.passed;
    }
    if (!r.passed && fails) {
      std::string msg = r.message.substr(0, r.message.find('\n'));
      fails << c << "\t" << msg << "\n";
    }
  }
  std::printf("%-28s %8s %8s %7s\n", "op", "passed", "cases", "rate");
  for (auto& [op, pt] : per_op)
    std::printf("%-28s %8d %8d %6.1f%%\n", op.c_str(), pt.first, pt.second, 100.0 * pt.first / pt.second);
  std::printf("all cases: %d of %d passed (%.1f%%)\n", passed, total, 100.0 * passed / total);
  return 0;
}
