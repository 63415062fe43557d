// What a compiled graph learns from its first run at an input signature (the
// inputs' dtypes and shapes), kept for later runs at that signature: the
// partition's per-node verdicts (partition.h) and the static memory plans
// (backends/arena_plan.h). Shared by runs on every thread; bounded: the
// least recently used goes past `kept`, so a stream of new shapes cannot
// grow it.
#pragma once
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace kestrel::partition {

using Signature = std::vector<std::pair<DType, Shape>>;

inline Signature signature_of(const std::vector<Tensor>& inputs) {
  Signature s;
  for (const Tensor& t : inputs) s.emplace_back(t.dtype(), t.shape());
  return s;
}

template <typename T, size_t kKept = 8>
class SignatureCache {
 public:
  static constexpr size_t kept = kKept;

  std::shared_ptr<const T> find(const Signature& sig) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->first == sig) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().second;
      }
    return nullptr;
  }
  std::shared_ptr<const T> find(const std::vector<Tensor>& inputs) { return find(signature_of(inputs)); }

  void add(Signature sig, T value) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : entries_)
      if (e.first == sig) return;  // another thread learned it first
    entries_.emplace_front(std::move(sig), std::make_shared<const T>(std::move(value)));
    if (entries_.size() > kKept) entries_.pop_back();
  }
  void add(const std::vector<Tensor>& inputs, T value) { add(signature_of(inputs), std::move(value)); }

  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }
  // Forgets every signature (what was learned no longer holds: the graph's
  // float precisions changed).
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.clear();
  }

 private:
  std::mutex mu_;
  std::list<std::pair<Signature, std::shared_ptr<const T>>> entries_;  // most recently used first
};

}  // namespace kestrel::partition
