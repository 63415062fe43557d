// Every case of ONNX's backend test suite is a test. A case listed in
// onnx_suite_expected_failures.txt must fail (so the list never hides a case
// that now passes); every other case must pass.
#include <gtest/gtest.h>

#include <map>

#include "onnx_suite.h"

using namespace kestrel::suite;

namespace {
const std::map<std::string, std::string>& expected_failures() {
  static const auto m = [] {
    std::map<std::string, std::string> r;
    for (auto& [k, v] : read_expected_failures(KESTREL_SOURCE_DIR "/tests/onnx_suite_expected_failures.txt"))
      r[k] = v;
    return r;
  }();
  return m;
}

class OnnxSuite : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxSuite, MatchesExpectedOutputs) {
  CaseResult r = run_case(GetParam());
  auto it = expected_failures().find(GetParam());
  if (it != expected_failures().end()) {
    EXPECT_FALSE(r.passed) << GetParam() << " now passes: remove it from onnx_suite_expected_failures.txt";
  } else {
    EXPECT_TRUE(r.passed) << GetParam() << ": " << r.message;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Cases, OnnxSuite, ::testing::ValuesIn(list_cases()), test_name);

// The reference kernels alone (the oracle the fast CPU kernels and Vulkan
// are checked against) meet ONNX's expected outputs on every case the fast
// kernels do, and fail exactly the listed ones. One test, not one per case:
// the cases above already name the case that fails.
TEST(OnnxSuiteReference, TheReferenceKernelsPassWhatTheFastOnesPass) {
  std::string wrong;
  size_t passed = 0;
  for (const std::string& c : list_cases()) {
    CaseResult r = run_case(c, kestrel::CpuKernels::Reference);
    const bool expected_to_fail = expected_failures().count(c) > 0;
    if (r.passed == expected_to_fail) wrong += "\n  " + c + (r.passed ? ": passes" : ": " + r.message);
    passed += r.passed;
  }
  std::printf("reference kernels: %zu of %zu cases pass\n", passed, list_cases().size());
  EXPECT_EQ(wrong, "") << "cases where the reference kernels disagree with the expected-failure list:" << wrong;
}

TEST(OnnxSuiteData, IsInstalled) { EXPECT_GT(list_cases().size(), 1000u) << "install libonnx-testdata"; }
}  // namespace
