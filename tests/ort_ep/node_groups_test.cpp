// The groups the plugin hands ONNX Runtime to fuse: connected, and closed
// under paths (a path out of a group never comes back into it).
#include "ort_ep/node_groups.h"

#include <gtest/gtest.h>

namespace {
using kestrel::ort_ep::fusable_groups;
using kestrel::ort_ep::NodeGraph;
using Groups = std::vector<std::vector<size_t>>;

NodeGraph graph(size_t n, std::vector<std::pair<size_t, size_t>> edges, std::vector<size_t> ineligible) {
  NodeGraph g;
  g.consumers.resize(n);
  g.eligible.assign(n, true);
  for (auto [from, to] : edges) g.consumers[from].push_back(to);
  for (size_t i : ineligible) g.eligible[i] = false;
  return g;
}

TEST(NodeGroups, AChainIsOneGroup) {
  EXPECT_EQ(fusable_groups(graph(4, {{0, 1}, {1, 2}, {2, 3}}, {})), (Groups{{0, 1, 2, 3}}));
}

TEST(NodeGroups, AnIneligibleNodeInAChainSplitsIt) {
  EXPECT_EQ(fusable_groups(graph(5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}}, {2})), (Groups{{0, 1}, {3, 4}}));
}

TEST(NodeGroups, ADetourThroughAnIneligibleNodeKeepsItsEndsApart) {
  // 0 -> 1 -> 3 and 0 -> 2 (ineligible) -> 3: fusing 0 and 3 would make a cycle with 2.
  const Groups groups = fusable_groups(graph(4, {{0, 1}, {1, 3}, {0, 2}, {2, 3}}, {2}));
  for (const auto& g : groups) {
    const bool has0 = std::find(g.begin(), g.end(), 0) != g.end();
    const bool has3 = std::find(g.begin(), g.end(), 3) != g.end();
    EXPECT_FALSE(has0 && has3) << "0 and 3 in one group around ineligible node 2";
  }
  size_t members = 0;
  for (const auto& g : groups) members += g.size();
  EXPECT_EQ(members, 3u);
}

TEST(NodeGroups, ANodeRefusedFirstJoinsOnceThePathBetweenHasJoined) {
  // 0 -> 2 -> 3 and 0 -> 1 -> 3, all eligible: one group whatever the order of growth.
  EXPECT_EQ(fusable_groups(graph(4, {{0, 2}, {2, 3}, {0, 1}, {1, 3}}, {})), (Groups{{0, 1, 2, 3}}));
}

TEST(NodeGroups, UnconnectedNodesAreSeparateGroups) {
  EXPECT_EQ(fusable_groups(graph(3, {}, {1})), (Groups{{0}, {2}}));
}

TEST(NodeGroups, ACycleIsRefused) {
  EXPECT_THROW(fusable_groups(graph(2, {{0, 1}, {1, 0}}, {})), std::invalid_argument);
}
}  // namespace
