// SPDX-License-Identifier: Apache-2.0
// GraphState::to_dense: a stored graph as the dense weight matrix the APSP kernels take.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/apsp_types.hpp"
#include "store/graphs/graph_state.hpp"
#include "store/graphs/vertex_rows.hpp"

namespace gcompute::server {
namespace {

// The weights string is the wire format (little-endian); it is filled with memcpy.
static_assert(std::endian::native == std::endian::little, "to_dense assumes a little-endian host");

/// Fills W (n x n elements of T, stored in `bytes`) with `none`, then with the least weight per
/// (tail, head) pair. `row` maps a vertex id to its row; `convert` turns a checked weight into
/// T. Elements go through memcpy: the bytes of a std::string are not T objects.
template <typename T, typename Edges, typename Row, typename Convert>
void fill(std::string& bytes, std::size_t n, T none, const Edges& edges, Row row, Convert convert) {
  bytes.resize(n * n * sizeof(T));
  char* w = bytes.data();
  for (std::size_t i = 0; i < n * n; ++i) std::memcpy(w + i * sizeof(T), &none, sizeof(T));
  for (const auto& [id, edge] : edges) {
    const T value = convert(edge.weight);
    for (std::uint64_t t : edge.tails) {
      char* out = w + row(t) * n * sizeof(T);
      for (std::uint64_t h : edge.heads) {
        char* cell = out + row(h) * sizeof(T);
        T old;
        std::memcpy(&old, cell, sizeof(T));
        if (value < old) std::memcpy(cell, &value, sizeof(T));
      }
    }
  }
}

}  // namespace

absl::Status GraphState::check_export_weights(kernels::DType dtype) const {
  for (const auto& [id, edge] : edges_) {
    if (dtype == kernels::DType::kF32) {
      if (std::abs(edge.weight) > std::numeric_limits<float>::max()) {
        return absl::InvalidArgumentError(absl::StrCat("edge ", id, " has weight ",
                                                       format_weight(edge.weight),
                                                       ", which is beyond the range of f32"));
      }
    } else if (edge.weight != std::trunc(edge.weight) ||
               std::abs(edge.weight) > kernels::kI32MaxAbsWeight) {
      return absl::InvalidArgumentError(
          absl::StrCat("edge ", id, " has weight ", format_weight(edge.weight),
                       ", which is not an i32 weight (an integer of magnitude at most ",
                       kernels::kI32MaxAbsWeight, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DenseGraph> GraphState::to_dense(kernels::DType dtype,
                                                std::uint64_t max_elements) const {
  if (dtype != kernels::DType::kF32 && dtype != kernels::DType::kI32) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype = ", kernels::dtype_name(dtype), ": a dense graph is f32 or i32"));
  }
  const std::uint64_t n = vertices_.size();
  if (n != 0 && n > max_elements / n) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the graph has ", n, " vertices: its dense matrix would have ", n, "x", n,
                     " elements, more than the limit of ", max_elements));
  }
  // Every weight is checked before anything is allocated, so a bad edge costs nothing.
  if (absl::Status s = check_export_weights(dtype); !s.ok()) return s;

  DenseGraph out;
  out.version = version_;
  out.vertex_ids = sorted_vertex_ids();
  // Ids are sparse after deletions; rows are positions in the ascending id list.
  const VertexRows rows(out.vertex_ids);
  const auto row = [&rows](std::uint64_t v) { return rows(v); };
  const std::size_t count = static_cast<std::size_t>(n);
  if (dtype == kernels::DType::kF32) {
    fill(out.weights, count, std::numeric_limits<float>::infinity(), edges_, row,
         [](double x) { return static_cast<float>(x); });
  } else {
    fill(out.weights, count, kernels::kI32NoEdge, edges_, row,
         [](double x) { return static_cast<std::int32_t>(x); });
  }
  return out;
}

}  // namespace gcompute::server
