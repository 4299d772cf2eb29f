// SPDX-License-Identifier: Apache-2.0
// cpu::apsp_add_edges: an APSP result brought up to date after edge insertions, one O(n^2)
// pass per edge (the reference the GPU's batched update is tested against).
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/cpu/apsp.hpp"

namespace gcompute::kernels::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// Inserts u -> v of weight w; false (nothing changed) when it closes a negative cycle.
bool insert_edge(float* dist, std::int32_t* next, std::int64_t n, std::int64_t u, std::int64_t v,
                 float w) {
  // A new negative cycle must run through the new edge: v ~> u -> v.
  if (dist[v * n + u] + w < 0) return false;
  const float* row_v = dist + v * n;
  for (std::int64_t i = 0; i < n; ++i) {
    const float diu = dist[i * n + u];
    if (diu == kInf) continue;
    const float via = diu + w;
    // Column u and row v never improve here (that would need a negative cycle through the
    // new edge, excluded above), so reading them while writing row i is safe, i = v too.
    float* row_i = dist + i * n;
    const std::int32_t hop =
        next == nullptr ? 0 : (i == u ? static_cast<std::int32_t>(v) : next[i * n + u]);
    for (std::int64_t j = 0; j < n; ++j) {
      const float cand = via + row_v[j];
      if (cand < row_i[j]) {
        row_i[j] = cand;
        if (next != nullptr) next[i * n + j] = hop;
      }
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<ApspInfo> apsp_add_edges(const float* dist_old, const std::int32_t* next_old,
                                        float* dist, std::int32_t* next,
                                        const ApspUpdateShape& shape,
                                        std::span<const GraphEdge> edges) {
  if (absl::Status s = validate(shape); !s.ok()) return s;
  const std::int64_t n = shape.n, n_old = shape.n_old;
  if ((n_old != 0 && dist_old == nullptr) || (n != 0 && dist == nullptr) ||
      (shape.next_hop && ((n_old != 0 && next_old == nullptr) || (n != 0 && next == nullptr)))) {
    return absl::InvalidArgumentError("apsp update: null dist or (with next_hop) next");
  }
  for (const GraphEdge& e : edges) {
    if (e.src >= n || e.dst >= n || e.weight != e.weight || e.weight == -kInf) {
      return absl::InvalidArgumentError(absl::StrCat("apsp update: edge ", e.src, " -> ", e.dst,
                                                     " of weight ", e.weight, " with n = ", n));
    }
  }
  std::fill_n(dist, n * n, kInf);
  if (shape.next_hop) std::fill_n(next, n * n, -1);
  for (std::int64_t i = 0; i < n_old; ++i) {
    std::copy_n(dist_old + i * n_old, n_old, dist + i * n);
    if (shape.next_hop) std::copy_n(next_old + i * n_old, n_old, next + i * n);
  }
  for (std::int64_t i = n_old; i < n; ++i) {
    dist[i * n + i] = 0;
    if (shape.next_hop) next[i * n + i] = static_cast<std::int32_t>(i);
  }
  ApspInfo info;
  for (const GraphEdge& e : edges) {
    if (!insert_edge(dist, shape.next_hop ? next : nullptr, n, e.src, e.dst, e.weight)) {
      info.negative_cycle = true;
      info.cycle_vertex = e.src;
      return info;
    }
  }
  return info;
}

}  // namespace gcompute::kernels::cpu
