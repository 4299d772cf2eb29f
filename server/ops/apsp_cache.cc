// SPDX-License-Identifier: Apache-2.0
#include "ops/apsp_cache.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gcompute::server {
namespace {

std::uint64_t graph_bytes(const GraphSnapshot& g) {
  std::uint64_t b = g.vertices.size() * 8;
  for (const Hyperedge& e : g.edges) b += sizeof(Hyperedge) + 8 * (e.tails.size() + e.heads.size());
  return b;
}

std::uint64_t result_bytes(const CachedApsp& r) {
  return r.vertex_ids.size() * 8 + r.distances.size() * 4 + r.next_hop.size() * 4;
}

/// A new or changed (tail, head, weight) to relax.
struct Relax {
  const Hyperedge* edge;
  float weight;
};

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

absl::StatusOr<ApspCache::Answer> ApspCache::lookup(const GraphSnapshot& current,
                                                    bool need_next_hop) {
  Answer answer;
  std::shared_ptr<const Entry> entry;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(current.info.graph_id);
    if (it != entries_.end()) {
      entry = it->second;
      last_used_[it->first] = ++tick_;
    }
  }
  auto miss = [&](std::string why) {
    absl::MutexLock lock(&mu_);
    ++stats_.misses;
    answer.why = std::move(why);
    return answer;
  };
  if (entry == nullptr) return miss("not cached");
  if (need_next_hop && entry->result->next_hop.empty()) return miss("next hops not cached");
  if (entry->result->version == current.info.version && entry->graph == current) {
    absl::MutexLock lock(&mu_);
    ++stats_.hits;
    answer.outcome = Outcome::kHit;
    answer.result = entry->result;
    return answer;
  }

  // Is `current` a superset of the cached graph?
  const GraphSnapshot& old = entry->graph;
  if (current.vertices.size() < old.vertices.size() ||
      !std::equal(old.vertices.begin(), old.vertices.end(), current.vertices.begin())) {
    return miss("vertices were deleted");
  }
  constexpr double kF32Max = std::numeric_limits<float>::max();
  std::vector<Relax> relax;
  std::size_t pairs = 0;
  std::size_t k = 0;  // position in old.edges
  for (const Hyperedge& e : current.edges) {
    if (std::abs(e.weight) > kF32Max) return miss("a weight is beyond f32");
    if (k < old.edges.size() && old.edges[k].id < e.id) return miss("edges were deleted");
    const float w = static_cast<float>(e.weight);
    if (k < old.edges.size() && old.edges[k].id == e.id) {
      const Hyperedge& o = old.edges[k++];
      if (o.tails != e.tails || o.heads != e.heads) return miss("an edge changed its vertices");
      const float old_w = static_cast<float>(o.weight);
      if (w > old_w) return miss("a weight was raised");
      if (w == old_w) continue;
    }
    relax.push_back({&e, w});
    pairs += e.tails.size() * e.heads.size();
  }
  if (k != old.edges.size()) return miss("edges were deleted");
  const std::size_t n = current.vertices.size();
  if (static_cast<double>(pairs) > options_.max_pairs_per_vertex * static_cast<double>(n) &&
      pairs > 1) {
    return miss(absl::StrCat(pairs, " (tail, head) pairs changed: recomputing is cheaper"));
  }

  // Grow the matrices by the new vertices (rows and columns at the end), then relax.
  auto next = std::make_shared<CachedApsp>();
  next->version = current.info.version;
  next->vertex_ids = current.vertices;
  const std::size_t n_old = old.vertices.size();
  const CachedApsp& prev = *entry->result;
  const bool with_next = !prev.next_hop.empty();
  next->distances.assign(n * n, std::numeric_limits<float>::infinity());
  if (with_next) next->next_hop.assign(n * n, -1);
  for (std::size_t i = 0; i < n_old; ++i) {
    std::copy_n(&prev.distances[i * n_old], n_old, &next->distances[i * n]);
    if (with_next) std::copy_n(&prev.next_hop[i * n_old], n_old, &next->next_hop[i * n]);
  }
  for (std::size_t i = n_old; i < n; ++i) {
    next->distances[i * n + i] = 0;
    if (with_next) next->next_hop[i * n + i] = static_cast<std::int32_t>(i);
  }
  auto row = [&](std::uint64_t id) {
    return static_cast<std::size_t>(
        std::lower_bound(current.vertices.begin(), current.vertices.end(), id) -
        current.vertices.begin());
  };
  for (const Relax& r : relax) {
    for (std::uint64_t t : r.edge->tails) {
      for (std::uint64_t h : r.edge->heads) {
        if (!relax_edge(next->distances, next->next_hop, n, row(t), row(h), r.weight)) {
          return absl::FailedPreconditionError(
              absl::StrCat("the graph has a negative cycle through vertex ", t,
                           "; shortest paths are undefined"));
        }
      }
    }
  }
  answer.outcome = Outcome::kIncremental;
  answer.result = next;
  {
    absl::MutexLock lock(&mu_);
    ++stats_.incremental;
  }
  put(current, *next);
  return answer;
}

void ApspCache::put(GraphSnapshot graph, CachedApsp result) {
  if (options_.max_bytes == 0) return;
  auto entry = std::make_shared<Entry>();
  entry->bytes = graph_bytes(graph) + result_bytes(result);
  entry->graph = std::move(graph);
  entry->result = std::make_shared<const CachedApsp>(std::move(result));
  if (entry->bytes > options_.max_bytes) return;
  const std::string id = entry->graph.info.graph_id;
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(id);
  // The newest put wins: a racing request may replace a newer entry by an older one, which
  // costs a later update or recomputation, never a wrong answer (lookup compares contents).
  if (it != entries_.end()) bytes_ -= it->second->bytes;
  bytes_ += entry->bytes;
  entries_[id] = std::move(entry);
  last_used_[id] = ++tick_;
  evict_locked();
}

void ApspCache::evict_locked() {
  while (bytes_ > options_.max_bytes && !entries_.empty()) {
    auto oldest =
        std::min_element(last_used_.begin(), last_used_.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    auto it = entries_.find(oldest->first);
    bytes_ -= it->second->bytes;
    entries_.erase(it);
    last_used_.erase(oldest);
  }
}

void ApspCache::erase(const std::string& graph_id) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(graph_id);
  if (it == entries_.end()) return;
  bytes_ -= it->second->bytes;
  entries_.erase(it);
  last_used_.erase(graph_id);
}

ApspCache::Stats ApspCache::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = stats_;
  s.entries = entries_.size();
  s.bytes = bytes_;
  return s;
}

}  // namespace gcompute::server
