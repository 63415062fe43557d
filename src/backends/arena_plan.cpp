#include "backends/arena_plan.h"

#include <algorithm>

#include "core/lifetime_plan.h"

namespace kestrel::backends {
namespace {

bool same_storage(const std::shared_ptr<const void>& a, const std::shared_ptr<const void>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

}  // namespace

ArenaRecorder::ArenaRecorder(const ir::Graph& g, const std::vector<std::vector<int>>& release_after,
                             bool outputs_leave)
    : values_(g.values.size()),
      outputs_leave_(outputs_leave),
      end_(int(release_after.size()) - 1),
      death_(g.values.size(), -1),
      allocation_(g.values.size()) {
  for (size_t i = 0; i < release_after.size(); ++i)
    for (int v : release_after[i]) death_[size_t(v)] = int(i);
}

void ArenaRecorder::input(const std::shared_ptr<const void>& storage) {
  if (storage) groups_by_storage_.emplace(storage, -1);  // never planned
}

void ArenaRecorder::allocated(int v, const std::shared_ptr<const void>& storage) { allocation_[size_t(v)] = storage; }

void ArenaRecorder::temporary(int node, int position, size_t bytes) {
  size_t& b = temps_[{node, position}];
  b = std::max(b, bytes);
}

void ArenaRecorder::produced(int node, int v, const std::shared_ptr<const void>& storage, size_t end) {
  if (!storage) return;
  auto [it, fresh] = groups_by_storage_.emplace(storage, int(groups_.size()));
  if (it->second < 0) return;  // a view of a graph input
  if (fresh) {  // storage first seen here: this node made it
    Group g;
    g.first = g.last = node;
    std::shared_ptr<const void> mine = allocation_[size_t(v)].lock();
    if (mine && same_storage(mine, storage)) g.owner = v, g.bytes = end;
    groups_.push_back(std::move(g));
  }
  Group& g = groups_[size_t(it->second)];
  g.members.push_back(v);
  if (death_[size_t(v)] >= 0) g.last = std::max(g.last, death_[size_t(v)]);
  else if (outputs_leave_) g.escapes = true;  // a graph output
  else g.last = end_;
}

ArenaPlan ArenaRecorder::finish(size_t align) const {
  std::vector<LifetimeBuffer> buffers;
  std::vector<const Group*> planned;
  for (const Group& g : groups_)
    if (g.owner >= 0 && !g.escapes && g.bytes > 0) {
      buffers.push_back({g.bytes, g.first, g.last});
      planned.push_back(&g);
    }
  for (const auto& [key, bytes] : temps_)
    if (bytes) buffers.push_back({bytes, key.first, key.first});
  ArenaLayout layout = plan_arena(buffers, align);
  ArenaPlan p;
  p.offset.assign(values_, -1);
  p.bytes.assign(values_, 0);
  p.owner.assign(values_, 0);
  p.made_at.assign(values_, -1);
  p.total = layout.total;
  for (size_t k = 0; k < planned.size(); ++k) {
    for (int m : planned[k]->members) {
      p.offset[size_t(m)] = int64_t(layout.offsets[k]);
      p.bytes[size_t(m)] = planned[k]->bytes;
    }
    p.owner[size_t(planned[k]->owner)] = 1;
    p.made_at[size_t(planned[k]->owner)] = planned[k]->first;
  }
  size_t k = planned.size();
  for (const auto& [key, bytes] : temps_)
    if (bytes) p.temps[key] = {layout.offsets[k++], bytes};
  return p;
}

}  // namespace kestrel::backends
