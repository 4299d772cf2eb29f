// SPDX-License-Identifier: Apache-2.0
// GraphState::to_csr: a stored graph as the CSR graph the SSSP kernels take.
#include "absl/strings/str_cat.h"
#include "gcompute/kernels/status_macros.hpp"
#include "store/graphs/graph_state.hpp"
#include "store/graphs/vertex_rows.hpp"

namespace gcompute::server {

absl::StatusOr<CsrGraph> GraphState::to_csr(std::uint64_t max_edges) const {
  GC_RETURN_IF_ERROR(check_export_weights(kernels::DType::kF32));
  CsrGraph out;
  out.version = version_;
  out.vertex_ids = sorted_vertex_ids();
  const std::size_t n = out.vertex_ids.size();
  const VertexRows row(out.vertex_ids);
  // Count each row's pairs, then place them (every tail -> every head of every hyperedge).
  std::vector<std::uint64_t> count(n + 1, 0);
  std::uint64_t pairs = 0;
  for (const auto& [id, edge] : edges_) {
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
