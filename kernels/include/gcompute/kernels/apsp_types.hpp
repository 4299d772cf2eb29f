// SPDX-License-Identifier: Apache-2.0
// All-pairs shortest paths (Floyd-Warshall) over a dense weight matrix.
#pragma once

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "gcompute/kernels/dtype.hpp"

namespace gcompute::kernels {

/// i32 weights: this value means "no edge" on input and "unreachable" on output.
/// Path sums saturate: anything that would reach or pass it stays "no edge".
constexpr std::int32_t kI32NoEdge = std::numeric_limits<std::int32_t>::max();
/// Largest |finite i32 weight| accepted, so that intermediate sums never overflow.
constexpr std::int32_t kI32MaxAbsWeight = (1 << 30) - 1;

/// Problem description. The input W is n x n, row-major; W[i][j] is the weight of the edge
/// i -> j: +inf (f32) or kI32NoEdge (i32) where there is none. Negative weights are allowed.
/// Output D is n x n: D[i][j] is the length of a shortest path i -> j (+inf / kI32NoEdge if
/// none); D[i][i] = min(0, shortest cycle through i). With next_hop, N is n x n int32:
/// N[i][j] is the vertex after i on a shortest path to j, N[i][i] = i, -1 when unreachable.
struct ApspShape {
  std::int64_t n = 0;
  DType dtype = DType::kF32;  ///< kF32 or kI32
  bool next_hop = false;
};

/// Outcome. With a negative cycle the outputs are unspecified and cycle_vertex is a vertex
/// on (or reaching into) a negative cycle: D[v][v] < 0.
struct ApspInfo {
  bool negative_cycle = false;
  std::int64_t cycle_vertex = -1;
};

/// INVALID_ARGUMENT for n < 0 or a dtype other than f32/i32.
absl::Status validate(const ApspShape& shape);

/// How the GPU APSP goes about it (speed only; the CPU ignores it). The server reads it once at
/// start-up (cuda::tuning_from_environment, docs/dev/knobs.md).
struct ApspTuning {
  /// Pivot blocks (of 128 vertices) a round of the distance-only kernel takes: 1 or 2; 0 picks
  /// by size (2 from 48 blocks on, 1 below). The next-hop kernel always takes 1.
  int depth = 0;
};

/// INVALID_ARGUMENT unless depth is 0, 1 or 2.
absl::Status validate(const ApspTuning& tuning);

/// An edge list to be turned into a dense weight matrix: edge e goes src[e] -> dst[e] with
/// weight[e]. Parallel edges keep the minimum weight. Vertices are 0..n-1.
struct EdgeListView {
  std::int64_t n = 0;
  std::int64_t edges = 0;
  const std::int64_t* src = nullptr;
  const std::int64_t* dst = nullptr;
  const double* weight = nullptr;
};

}  // namespace gcompute::kernels
