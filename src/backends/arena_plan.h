// Static memory planning: a run's intermediate tensors laid out in one arena
// by their lifetimes, per shape signature, on the host (backends/cpu/
// host_arena.h) and on the device (backends/vulkan/graph_runner.cpp).
//
// When each value dies is fixed when the graph is compiled (the executor's
// release_after). Sizes are fixed only by a shape signature, and some only
// by the data (NonZero, NonMaxSuppression), so, as ONNX Runtime's memory
// pattern does, the first run of a signature records what each node
// allocates and which outputs share storage with others (Reshape, Identity,
// Split views, subgraph results); then greedy by size (core/lifetime_plan.h)
// gives every storage an offset, and later runs of that signature place
// their tensors there: one allocation per run instead of one per tensor,
// about the most bytes alive at once.
//
// Safety does not rest on the recording: a planned run places a tensor only
// where it fits its slot and allocates it as before otherwise, and each
// backend moves out any output it finds in the arena outside the region
// planned for it (an alias the recording did not see).
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "partition/signature_cache.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace kestrel::backends {

// Where a planned run puts each value of a graph.
struct ArenaPlan {
  size_t total = 0;  // the arena's bytes
  // value id -> the region its storage has in the arena (-1: not planned) and
  // the region's bytes; `owner` marks the value whose output allocates it
  // (the others are views of it).
  std::vector<int64_t> offset;
  std::vector<size_t> bytes;
  std::vector<char> owner;
  // value id -> the node at which its owner allocated it in the recording.
  // A run places an owner only at that node: one that makes it elsewhere (a
  // node the recording ran on the CPU runs on the GPU now, or the reverse,
  // and the value is made or uploaded at another node) would write its
  // region while the region still belongs to another value.
  std::vector<int> made_at;
  // Buffers alive during one node only, keyed by (node, position): on the
  // host, the float32 copies a kernel that computes in float32 reads and
  // writes for half values (input k at k, output o at the input count + o).
  std::map<std::pair<int, int>, std::pair<size_t, size_t>> temps;  // -> offset, bytes

  // The region of value v for an n-byte output of owner v at node `node`,
  // or -1 when it has none there.
  int64_t slot(int v, int node, size_t n) const {
    if (v < 0 || !owner[size_t(v)] || made_at[size_t(v)] != node || n == 0 || n > bytes[size_t(v)]) return -1;
    return offset[size_t(v)];
  }

  // Whether bytes [at, at + n) lie in the region planned for value v.
  bool holds(int v, size_t at, size_t n) const {
    const int64_t lo = offset[size_t(v)];
    return lo >= 0 && at >= size_t(lo) && at + n <= size_t(lo) + bytes[size_t(v)];
  }
};

// What the first run of a signature sees, turned into its ArenaPlan. A
// storage is identified by its control block (any shared_ptr to it), never
// by address: a freed address is soon another tensor's.
class ArenaRecorder {
 public:
  // release_after: node index -> the values freed after it (graph outputs
  // never are). outputs_leave: a graph output's storage is handed to the
  // caller (host tensors), so it and its views are never planned; otherwise
  // (device memory, read back at the end) it lives to the end of the run.
  ArenaRecorder(const ir::Graph& g, const std::vector<std::vector<int>>& release_after, bool outputs_leave);
  void input(const std::shared_ptr<const void>& storage);  // a graph input: the caller's storage
  // The storage the backend allocated for value v's output (its last, if several).
  void allocated(int v, const std::shared_ptr<const void>& storage);
  void temporary(int node, int position, size_t bytes);  // see ArenaPlan::temps
  // Node `node` left value v in `storage`, whose first `end` bytes hold it.
  void produced(int node, int v, const std::shared_ptr<const void>& storage, size_t end);
  // `align`: a power of two every offset is a multiple of.
  ArenaPlan finish(size_t align) const;

 private:
  struct Group {
    int owner = -1;  // the value that allocated it; -1: storage from elsewhere
    size_t bytes = 0;
    int first = 0, last = 0;
    bool escapes = false;  // holds a graph output that leaves the run
    std::vector<int> members;
  };
  size_t values_;
  bool outputs_leave_;
  int end_;                 // the last node
  std::vector<int> death_;  // value -> the node after which it is freed; -1: never
  std::vector<std::weak_ptr<const void>> allocation_;
  std::map<std::weak_ptr<const void>, int, std::owner_less<std::weak_ptr<const void>>> groups_by_storage_;
  std::vector<Group> groups_;
  std::map<std::pair<int, int>, size_t> temps_;
};

// The plans of one compiled graph by input signature, shared by runs on
// every thread.
using ArenaPlans = partition::SignatureCache<ArenaPlan>;

}  // namespace kestrel::backends
