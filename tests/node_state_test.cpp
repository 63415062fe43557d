// ops/node_state.h: what a kernel prepares once for a node, kept per node
// and key, the least recently used of a node's entries going first.
#include <gtest/gtest.h>

#include "ops/node_state.h"

using namespace kestrel;

namespace {

std::shared_ptr<int> get(ops::NodeStateCache& c, const ir::Node* n, const std::string& key, int value, int* made) {
  return c.get<int>(n, key, [&] {
    ++*made;
    return std::make_shared<int>(value);
  });
}

}  // namespace

TEST(NodeStateCache, BuildsOncePerNodeAndKey) {
  ops::NodeStateCache c;
  ir::Node a, b;
  int made = 0;
  EXPECT_EQ(*get(c, &a, "k", 1, &made), 1);
  EXPECT_EQ(*get(c, &a, "k", 2, &made), 1);  // kept, not rebuilt
  EXPECT_EQ(*get(c, &b, "k", 3, &made), 3);  // another node, its own entry
  EXPECT_EQ(*get(c, &a, "j", 4, &made), 4);  // another key
  EXPECT_EQ(made, 3);
  EXPECT_EQ(c.size(), 3u);
}

TEST(NodeStateCache, DropsANodesLeastRecentlyUsedPastItsLimit) {
  ops::NodeStateCache c;
  ir::Node a, b;
  int made = 0;
  get(c, &b, "other", 0, &made);
  for (size_t i = 0; i < ops::NodeStateCache::kPerNode; ++i) get(c, &a, std::to_string(i), int(i), &made);
  get(c, &a, "0", -1, &made);       // "0" used again: "1" is now the oldest
  get(c, &a, "new", 99, &made);     // past the limit: "1" goes
  EXPECT_EQ(made, int(ops::NodeStateCache::kPerNode) + 2);
  EXPECT_EQ(*get(c, &a, "0", -1, &made), 0);    // kept
  EXPECT_EQ(*get(c, &a, "1", 100, &made), 100);  // rebuilt
  EXPECT_EQ(*get(c, &b, "other", 5, &made), 0);  // another node's entries untouched
  EXPECT_EQ(c.size(), ops::NodeStateCache::kPerNode + 1);
}

TEST(StateKey, RawValuesMakeDistinctKeys) {
  const std::vector<int64_t> s1{1, 20, 20, 8}, s2{1, 20, 8, 20};
  EXPECT_EQ(ops::StateKey().add_all(s1).add(2).str(), ops::StateKey().add_all(s1).add(2).str());
  EXPECT_NE(ops::StateKey().add_all(s1).add(2).str(), ops::StateKey().add_all(s2).add(2).str());
  EXPECT_NE(ops::StateKey().add_all(s1).add(2).str(), ops::StateKey().add_all(s1).add(1).str());
  EXPECT_NE(ops::StateKey().tag("a").add(1).str(), ops::StateKey().tag("b").add(1).str());
}
