// What a fast kernel prepares once for a node and reuses on later runs
// (oneDNN's convolution primitive and its reordered weights, for the CPU
// backend's channels-last Conv): kept per compiled graph, so a node's
// address names it for as long as the entry lives, and dropped with the
// graph. Reached through the run's options as the fused-node checks are; a
// kernel run outside a compiled graph gets none and prepares on every run.
#pragma once
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace kestrel::ops {

class NodeStateCache {
 public:
  // Entries kept per node: one per input shape and thread count a node meets
  // (a model with dynamic shapes meets several); the least recently used
  // goes first past it.
  static constexpr size_t kPerNode = 8;

  // The state `make()` built for (node, key), built now when absent. make
  // runs outside the lock: two runs may both build one, and one is kept.
  template <class T, class Make>
  std::shared_ptr<T> get(const ir::Node* node, const std::string& key, Make&& make) {
    if (auto hit = find(node, key)) return std::static_pointer_cast<T>(hit);
    std::shared_ptr<T> made = make();
    return std::static_pointer_cast<T>(insert(node, key, made));
  }
  size_t size();

 private:
  std::shared_ptr<void> find(const ir::Node* node, const std::string& key);
  // The entry kept for (node, key): `made`, or one another run put first.
  std::shared_ptr<void> insert(const ir::Node* node, const std::string& key, std::shared_ptr<void> made);

  struct Entry {
    std::string key;
    std::shared_ptr<void> state;
  };
  std::mutex mu_;
  // Looked up on every run of every such node: by the node first, so a
  // lookup reads only that node's few entries (most recently used first).
  std::unordered_map<const ir::Node*, std::vector<Entry>> entries_;
};

// A state key from raw values (pointers, sizes, shapes): built on every run,
// so without formatting.
class StateKey {
 public:
  StateKey() { bytes_.reserve(96); }
  template <class T>
  StateKey& add(const T& v) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
    return *this;
  }
  template <class T>
  StateKey& add_all(const std::vector<T>& v) {
    add(v.size());
    for (const T& x : v) add(x);
    return *this;
  }
  StateKey& tag(const char* t) {
    bytes_ += t;
    bytes_ += '\0';
    return *this;
  }
  const std::string& str() const { return bytes_; }

 private:
  std::string bytes_;
};

}  // namespace kestrel::ops
