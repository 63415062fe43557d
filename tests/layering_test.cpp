// The folders of src/ are stages in the order data flows through them
// (README, Layout): a file includes headers from its own folder and the
// folders before it, never from one after it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

const std::vector<std::string> kStages = {"core",     "ir",      "ops",    "onnx",     "passes", "families", "partition",
                                          "backends", "runtime", "vision", "quantize", "api",    "apps",   "ort_ep"};

int stage_of(const std::string& path) {  // path relative to src/
  const std::string top = path.substr(0, path.find('/'));
  for (size_t i = 0; i < kStages.size(); ++i)
    if (kStages[i] == top) return int(i);
  return -1;
}

}  // namespace

TEST(Layering, NoIncludeRunsBackwardsBetweenFolders) {
  namespace fs = std::filesystem;
  const fs::path src = fs::path(KESTREL_SOURCE_DIR) / "src";
  const std::regex include(R"(^\s*#\s*include\s*"([a-z_]+)/([^"]+)\")");
  int files = 0, includes = 0;
  std::string backwards, unknown;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".h" && ext != ".cpp" && ext != ".inc") continue;
    const std::string rel = fs::relative(e.path(), src).string();
    const int from = stage_of(rel);
    if (from < 0) {
      unknown += " " + rel;
      continue;
    }
    ++files;
    std::ifstream f(e.path());
    std::string line;
    while (std::getline(f, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const int to = stage_of(m[1].str() + "/");
      if (to < 0) continue;  // a library's header ("onnx/onnx_pb.h" is <>-included)
      ++includes;
      if (to > from) backwards += "\n  " + rel + " includes " + m[1].str() + "/" + m[2].str();
    }
  }
  EXPECT_GT(files, 200);     // the walk saw the tree
  EXPECT_GT(includes, 300);  // and read its includes
  EXPECT_EQ(unknown, "") << "files outside the known stages (add the folder to kStages in its place):" << unknown;
  EXPECT_EQ(backwards, "") << "includes of a later stage:" << backwards;
}
