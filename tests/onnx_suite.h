// Runs one case of ONNX's backend test suite (Debian's libonnx-testdata):
// the case's model on Kestrel's CPU backend (its fast kernels, or the
// reference kernels alone) with the case's own inputs, compared with the
// case's expected outputs.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "runtime/session_options.h"

namespace kestrel::suite {

constexpr const char* kSuiteRoot = "/usr/share/libonnx-testdata/data";

struct CaseResult {
  bool passed = false;
  std::string message;          // why it failed
  std::set<std::string> ops;    // op types in the case's model
};

// Every case folder: "node/test_abs", "simple/test_sign_model", ... sorted.
std::vector<std::string> list_cases();
// case_dir is relative to kSuiteRoot.
CaseResult run_case(const std::string& case_dir, CpuKernels kernels = CpuKernels::Fast);

// Float outputs must satisfy |got - want| <= atol + rtol * |want| (NaN matches
// NaN); integer and bool outputs must match exactly. ONNX's own runner uses
// rtol 1e-3; atol is 1e-5 rather than its 1e-7 because the expected values
// were computed in float64 by NumPy and sums of float32 products near zero
// differ from them by more than 1e-7 in every implementation.
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;

// "test_name<TAB>reason" lines of tests/onnx_suite_expected_failures.txt.
std::vector<std::pair<std::string, std::string>> read_expected_failures(const std::string& path);

}  // namespace kestrel::suite
