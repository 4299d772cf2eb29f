// SPDX-License-Identifier: Apache-2.0
#include "ops/apsp_cache.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gcompute::server {
namespace {

std::uint64_t result_bytes(const CachedApsp& r) {
  return r.vertex_ids.size() * 8 + r.distances.desc.bytes() +
         (r.next_hop ? r.next_hop->desc.bytes() : 0);
}

constexpr double kF32Max = std::numeric_limits<float>::max();

}  // namespace

std::string ApspCache::queue(Entry& e, const GraphDelta& delta) const {
  if (!delta.removed_vertices.empty()) return "vertices were deleted";
  // New vertices follow the old ones: ids only grow.
  std::uint64_t last = e.added_vertices.empty()
                           ? (e.result->vertex_ids.empty() ? 0 : e.result->vertex_ids.back())
                           : e.added_vertices.back();
  bool any = !e.result->vertex_ids.empty() || !e.added_vertices.empty();
  for (std::uint64_t v : delta.added_vertices) {
    if (any && v <= last) return "a new vertex id is not above the old ones";
    e.added_vertices.push_back(v);
    last = v;
    any = true;
  }
  for (const EdgeDelta& d : delta.edges) {
    if (!d.after) return "edges were deleted";
    if (std::abs(d.after->weight) > kF32Max) return "a weight is beyond f32";
    const float w = static_cast<float>(d.after->weight);
    if (d.before) {
      if (d.before->tails != d.after->tails || d.before->heads != d.after->heads) {
        return "an edge changed its vertices";
      }
      const float old_w = static_cast<float>(d.before->weight);
      if (w > old_w) return "a weight was raised";
      if (w == old_w) continue;
    }
    for (std::uint64_t t : d.after->tails) {
      for (std::uint64_t h : d.after->heads) e.pending.push_back(Relax{t, h, w});
    }
  }
  const std::size_t n = e.result->vertex_ids.size() + e.added_vertices.size();
  if (static_cast<double>(e.pending.size()) >
          options_.max_pairs_per_vertex * static_cast<double>(n) &&
      e.pending.size() > 1) {
    return absl::StrCat(e.pending.size(), " (tail, head) pairs changed: recomputing is cheaper");
  }
  return "";
}

void ApspCache::on_change(const GraphChange& change) {
  absl::MutexLock lock(&mu_);
  if (change.kind == GraphChange::Kind::kRemove) {
    erase_locked(change.graph_id);
    announced_.erase(change.graph_id);
    dropped_.erase(change.graph_id);
    return;
  }
  announced_[change.graph_id] = change.version;
  auto it = entries_.find(change.graph_id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  std::string why;
  if (change.kind != GraphChange::Kind::kApply) {
    why = "the graph was created again";
  } else if (e.version + 1 != change.version) {
    why = absl::StrCat("cached version ", e.version, ", then version ", change.version);
  } else {
    why = queue(e, *change.delta);
  }
  if (!why.empty()) {
    erase_locked(change.graph_id);
    dropped_[change.graph_id] = std::move(why);
    return;
  }
  e.version = change.version;
  bytes_ -= e.bytes;
  e.bytes = result_bytes(*e.result) + e.pending.size() * sizeof(Relax) +
            e.added_vertices.size() * sizeof(std::uint64_t);
  bytes_ += e.bytes;
  evict_locked();
}

ApspCache::Answer ApspCache::lookup(const std::string& graph_id, std::uint64_t version,
                                    bool need_next_hop) {
  Answer answer;
  absl::MutexLock lock(&mu_);
  auto miss = [&](std::string why) {
    ++stats_.misses;
    answer.why = std::move(why);
    return answer;
  };
  auto it = entries_.find(graph_id);
  if (it == entries_.end()) {
    auto dropped = dropped_.find(graph_id);
    return miss(dropped == dropped_.end() ? "not cached" : dropped->second);
  }
  Entry& e = it->second;
  e.last_used = ++tick_;
  if (e.version != version) {
    return miss(absl::StrCat("cached version ", e.version, ", graph at ", version));
  }
  if (need_next_hop && !e.result->next_hop) return miss("next hops not cached");
  answer.result = e.result;
  if (e.pending.empty() && e.added_vertices.empty()) {
    ++stats_.hits;
    answer.outcome = Outcome::kHit;
    return answer;
  }
  // The new vertices come last (ids only grow); pairs become rows of the new version.
  ++stats_.incremental;
  answer.outcome = Outcome::kUpdate;
  answer.vertex_ids = e.result->vertex_ids;
  answer.vertex_ids.insert(answer.vertex_ids.end(), e.added_vertices.begin(),
                           e.added_vertices.end());
  auto row = [&ids = answer.vertex_ids](std::uint64_t id) {
    return static_cast<std::uint32_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
  };
  answer.edges.reserve(e.pending.size());
  for (const Relax& r : e.pending) {
    answer.edges.push_back(kernels::GraphEdge{row(r.tail), row(r.head), r.weight});
  }
  return answer;
}

void ApspCache::put(const std::string& graph_id, CachedApsp result) {
  install(graph_id, std::make_shared<const CachedApsp>(std::move(result)));
}

void ApspCache::install(const std::string& graph_id, std::shared_ptr<const CachedApsp> result) {
  if (options_.max_bytes == 0) return;
  const std::uint64_t bytes = result_bytes(*result);
  if (bytes > options_.max_bytes) return;
  absl::MutexLock lock(&mu_);
  auto announced = announced_.find(graph_id);
  if (announced != announced_.end() && announced->second != result->version) return;
  erase_locked(graph_id);
  dropped_.erase(graph_id);
  Entry& e = entries_[graph_id];
  e.version = result->version;
  e.result = std::move(result);
  e.bytes = bytes;
  e.last_used = ++tick_;
  bytes_ += bytes;
  evict_locked();
}

void ApspCache::erase_locked(const std::string& graph_id) {
  auto it = entries_.find(graph_id);
  if (it == entries_.end()) return;
  bytes_ -= it->second.bytes;
  entries_.erase(it);
}

void ApspCache::evict_locked() {
  while (bytes_ > options_.max_bytes && !entries_.empty()) {
    auto oldest = std::min_element(
        entries_.begin(), entries_.end(),
        [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
    bytes_ -= oldest->second.bytes;
    entries_.erase(oldest);
  }
}

std::uint64_t ApspCache::release_device_memory() {
  // Declared before the lock: the released results are freed after it is let go.
  std::vector<std::shared_ptr<const CachedApsp>> released;
  std::uint64_t bytes = 0;
  absl::MutexLock lock(&mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    const CachedApsp& r = *it->second.result;
    if (r.distances.device == nullptr && !(r.next_hop && r.next_hop->device != nullptr)) {
      ++it;
      continue;
    }
    bytes += it->second.bytes;
    bytes_ -= it->second.bytes;
    dropped_[it->first] = "the cached result was dropped to free device memory for a request";
    released.push_back(std::move(it->second.result));
    it = entries_.erase(it);
  }
  return bytes;
}

ApspCache::Stats ApspCache::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = stats_;
  s.entries = entries_.size();
  s.bytes = bytes_;
  return s;
}

}  // namespace gcompute::server
