// SPDX-License-Identifier: Apache-2.0
// GraphState::to_csr: a stored graph as the CSR graph the SSSP kernels take.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/status_macros.hpp"
#include "store/graphs/graph_state.hpp"

namespace gcompute::server {

absl::StatusOr<CsrGraph> GraphState::to_csr(std::uint64_t max_edges) const {
  CsrGraph out;
  out.version = version_;
  out.vertex_ids = sorted_vertex_ids();
  const std::size_t n = out.vertex_ids.size();
  // Rows by id: a table where ids are dense enough (ids 0..n-1 above all), else a binary
  // search. The search cost 3 per pair dominated at 10^7 pairs (about 12 s for 10^6 vertices).
  std::vector<std::uint32_t> table;
  if (n != 0 && out.vertex_ids.back() < 4 * static_cast<std::uint64_t>(n) + 1024) {
    table.assign(out.vertex_ids.back() + 1, 0);
    for (std::size_t r = 0; r < n; ++r) table[out.vertex_ids[r]] = static_cast<std::uint32_t>(r);
  }
  const auto row = [&ids = out.vertex_ids, &table](std::uint64_t v) -> std::size_t {
    if (!table.empty()) return table[v];
    return static_cast<std::size_t>(std::lower_bound(ids.begin(), ids.end(), v) - ids.begin());
  };
  // Count each row's pairs (checking the weights on the way), then place them (every tail ->
  // every head of every hyperedge).
  std::vector<std::uint64_t> count(n + 1, 0);
  std::uint64_t pairs = 0;
  for (const auto& [id, edge] : edges_) {
    if (std::abs(edge.weight) > std::numeric_limits<float>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("edge ", id, " has weight ",
                                                     format_weight(edge.weight),
                                                     ", which is beyond the range of f32"));
    }
    const std::uint64_t per_tail = edge.heads.size();
    for (std::uint64_t t : edge.tails) count[row(t) + 1] += per_tail;
    pairs += edge.tails.size() * per_tail;
  }
  if (pairs > max_edges) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the graph has ", pairs, " (tail, head) pairs, more than the limit of ", max_edges));
  }
  for (std::size_t v = 0; v < n; ++v) count[v + 1] += count[v];
  out.row_offsets = count;
  out.cols.resize(pairs);
  out.weights.resize(pairs);
  for (const auto& [id, edge] : edges_) {
    const auto w = static_cast<float>(edge.weight);
    for (std::uint64_t t : edge.tails) {
      std::uint64_t& at = count[row(t)];
      for (std::uint64_t h : edge.heads) {
        out.cols[at] = static_cast<std::uint32_t>(row(h));
        out.weights[at] = w;
        ++at;
      }
    }
  }
  return out;
}

}  // namespace gcompute::server
