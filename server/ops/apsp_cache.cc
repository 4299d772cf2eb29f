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
  return r.vertex_ids.size() * 8 + r.distances.size() * 4 + r.next_hop.size() * 4;
}

constexpr double kF32Max = std::numeric_limits<float>::max();

}  // namespace

bool relax_edge(std::vector<float>& dist, std::vector<std::int32_t>& next, std::size_t n,
                std::size_t u, std::size_t v, float w) {
  // A new negative cycle must run through the new edge: v ~> u -> v.
  if (dist[v * n + u] + w < 0) return false;
  const bool with_next = !next.empty();
  const float* row_v = &dist[v * n];
  for (std::size_t i = 0; i < n; ++i) {
    const float diu = dist[i * n + u];
    if (diu == std::numeric_limits<float>::infinity()) continue;
    const float via = diu + w;
    // Column u and row v never improve here (that would need a negative cycle through the
    // new edge, excluded above), so reading them while writing row i is safe, i = v too.
    float* row_i = &dist[i * n];
    const std::int32_t hop =
        with_next ? (i == u ? static_cast<std::int32_t>(v) : next[i * n + u]) : 0;
    for (std::size_t j = 0; j < n; ++j) {
      const float cand = via + row_v[j];
      if (cand < row_i[j]) {
        row_i[j] = cand;
        if (with_next) next[i * n + j] = hop;
      }
    }
  }
  return true;
}

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

absl::StatusOr<ApspCache::Answer> ApspCache::lookup(const std::string& graph_id,
                                                    std::uint64_t version, bool need_next_hop) {
  Answer answer;
  std::shared_ptr<const CachedApsp> base;
  std::vector<std::uint64_t> added;
  std::vector<Relax> pending;
  {
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
    if (need_next_hop && e.result->next_hop.empty()) return miss("next hops not cached");
    if (e.pending.empty() && e.added_vertices.empty()) {
      ++stats_.hits;
      answer.outcome = Outcome::kHit;
      answer.result = e.result;
      return answer;
    }
    base = e.result;
    added = e.added_vertices;
    pending = e.pending;
  }

  // Grow the matrices by the new vertices (rows and columns at the end), then relax, outside
  // the lock (O(n^2) per pair).
  auto next = std::make_shared<CachedApsp>();
  next->version = version;
  next->vertex_ids = base->vertex_ids;
  next->vertex_ids.insert(next->vertex_ids.end(), added.begin(), added.end());
  const std::size_t n = next->vertex_ids.size();
  const std::size_t n_old = base->vertex_ids.size();
  const bool with_next = !base->next_hop.empty();
  next->distances.assign(n * n, std::numeric_limits<float>::infinity());
  if (with_next) next->next_hop.assign(n * n, -1);
  for (std::size_t i = 0; i < n_old; ++i) {
    std::copy_n(&base->distances[i * n_old], n_old, &next->distances[i * n]);
    if (with_next) std::copy_n(&base->next_hop[i * n_old], n_old, &next->next_hop[i * n]);
  }
  for (std::size_t i = n_old; i < n; ++i) {
    next->distances[i * n + i] = 0;
    if (with_next) next->next_hop[i * n + i] = static_cast<std::int32_t>(i);
  }
  auto row = [&](std::uint64_t id) {
    return static_cast<std::size_t>(
        std::lower_bound(next->vertex_ids.begin(), next->vertex_ids.end(), id) -
        next->vertex_ids.begin());
  };
  for (const Relax& r : pending) {
    if (!relax_edge(next->distances, next->next_hop, n, row(r.tail), row(r.head), r.weight)) {
      return absl::FailedPreconditionError(
          absl::StrCat("the graph has a negative cycle through vertex ", r.tail,
                       "; shortest paths are undefined"));
    }
  }
  answer.outcome = Outcome::kIncremental;
  answer.result = next;
  {
    absl::MutexLock lock(&mu_);
    ++stats_.incremental;
  }
  install(graph_id, next);
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

ApspCache::Stats ApspCache::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = stats_;
  s.entries = entries_.size();
  s.bytes = bytes_;
  return s;
}

}  // namespace gcompute::server
