// SPDX-License-Identifier: Apache-2.0
// Single-source shortest paths on the host: Dijkstra for non-negative weights, SPFA otherwise.
#include "gcompute/kernels/cpu/sssp.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gcompute::kernels::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
// Scanned vertices between polls of the stop token.
constexpr std::int64_t kPollEvery = 1 << 14;

absl::Status cancelled(std::int64_t scanned) {
  return absl::CancelledError(absl::StrCat("sssp cancelled after ", scanned, " scanned vertices"));
}

// A vertex on a cycle of the parent pointers, or -1. The source is a root while its distance
// is still 0 (parent[source] = source); any improvement of it is caught before this is called.
std::int64_t find_parent_cycle(const std::int32_t* parent, std::int64_t n, std::int64_t source) {
  // walk_of[v]: 0 unvisited, else the 1-based index of the walk that first reached v.
  std::vector<std::int64_t> walk_of(static_cast<std::size_t>(n), 0);
  std::int64_t walk = 0;
  for (std::int64_t start = 0; start < n; ++start) {
    if (walk_of[start] != 0 || parent[start] < 0) continue;
    ++walk;
    std::int64_t v = start;
    while (v != source && parent[v] >= 0 && walk_of[v] == 0) {
      walk_of[v] = walk;
      v = parent[v];
    }
    if (v != source && parent[v] >= 0 && walk_of[v] == walk) return v;
  }
  return -1;
}

SsspInfo dijkstra(const CsrView& g, std::int64_t source, float* dist, std::int32_t* parent,
                  const StopToken& stop, absl::Status& status) {
  SsspInfo info;
  using Item = std::pair<float, std::uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  heap.emplace(0.0f, static_cast<std::uint32_t>(source));
  while (!heap.empty()) {
    const auto [d, u] = heap.top();
    heap.pop();
    if (d > dist[u]) continue;  // superseded by a later, shorter entry
    if (++info.rounds % kPollEvery == 0 && stop.stop_requested()) {
      status = cancelled(info.rounds);
      return info;
    }
    for (std::uint64_t e = g.row_offsets[u]; e < g.row_offsets[u + 1]; ++e) {
      const std::uint32_t v = g.cols[e];
      const float cand = d + g.weights[e];
      if (cand < dist[v]) {
        dist[v] = cand;
        parent[v] = static_cast<std::int32_t>(u);
        ++info.relaxations;
        heap.emplace(cand, v);
      }
    }
  }
  return info;
}

SsspInfo spfa(const CsrView& g, std::int64_t source, float* dist, std::int32_t* parent,
              const StopToken& stop, absl::Status& status) {
  SsspInfo info;
  const std::int64_t n = g.n;
  // Edges on the path that gave each distance; n or more means that path repeats a vertex whose
  // distance shrank in between, so the repeated stretch is a negative cycle.
  std::vector<std::int32_t> hops(static_cast<std::size_t>(n), 0);
  std::vector<char> queued(static_cast<std::size_t>(n), 0);
  std::deque<std::uint32_t> queue{static_cast<std::uint32_t>(source)};
  queued[source] = 1;
  std::int64_t next_cycle_search = 0;  // relaxations before the parent pointers are searched again
  std::int64_t witness = -1;           // a vertex whose path reached n edges
  while (!queue.empty()) {
    const std::uint32_t u = queue.front();
    queue.pop_front();
    queued[u] = 0;
    if (++info.rounds % kPollEvery == 0 && stop.stop_requested()) {
      status = cancelled(info.rounds);
      return info;
    }
    const float du = dist[u];
    const std::int32_t hu = hops[u];
    for (std::uint64_t e = g.row_offsets[u]; e < g.row_offsets[u + 1]; ++e) {
      const std::uint32_t v = g.cols[e];
      const float cand = du + g.weights[e];
      if (!(cand < dist[v])) continue;
      dist[v] = cand;
      parent[v] = static_cast<std::int32_t>(u);
      ++info.relaxations;
      if (v == source) {  // a path back to the source shorter than 0: a negative closed walk
        info.negative_cycle = true;
        info.cycle_vertex = source;
        return info;
      }
      hops[v] = static_cast<std::int32_t>(std::min<std::int64_t>(hu + 1, n));
      if (hops[v] >= n) {
        witness = v;
        // The parent pointers close the cycle soon after; searching them costs O(n), so
        // searches are spaced by a growing number of relaxations.
        if (info.relaxations >= next_cycle_search) {
          if (const std::int64_t c = find_parent_cycle(parent, n, source); c >= 0) {
            info.negative_cycle = true;
            info.cycle_vertex = c;
            return info;
          }
          next_cycle_search = 2 * info.relaxations + n;
        }
      }
      if (!queued[v]) {
        queued[v] = 1;
        queue.push_back(v);
      }
    }
  }
  if (witness >= 0) {
    // Only when f32 rounding stalls the descent (the distances stop shrinking) before the
    // parent pointers close the cycle: a last search, else the vertex whose path reached n edges.
    info.negative_cycle = true;
    const std::int64_t c = find_parent_cycle(parent, n, source);
    info.cycle_vertex = c >= 0 ? c : witness;
  }
  return info;
}

}  // namespace

absl::StatusOr<SsspInfo> sssp(const CsrView& graph, std::int64_t source, float* dist,
                              std::int32_t* parent, StopToken stop) {
  if (absl::Status s = validate_sssp(graph, source); !s.ok()) return s;
  if (dist == nullptr || parent == nullptr) {
    return absl::InvalidArgumentError("sssp: dist and parent must not be null");
  }
  std::fill(dist, dist + graph.n, kInf);
  std::fill(parent, parent + graph.n, -1);
  dist[source] = 0.0f;
  parent[source] = static_cast<std::int32_t>(source);
  const bool non_negative =
      std::all_of(graph.weights, graph.weights + graph.m, [](float w) { return w >= 0.0f; });
  absl::Status status;
  const SsspInfo info = non_negative ? dijkstra(graph, source, dist, parent, stop, status)
                                     : spfa(graph, source, dist, parent, stop, status);
  if (!status.ok()) return status;
  return info;
}

}  // namespace gcompute::kernels::cpu
