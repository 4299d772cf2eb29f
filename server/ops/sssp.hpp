// SPDX-License-Identifier: Apache-2.0
// Single-source shortest paths of an edge list or a stored graph: the graph in CSR form, sized
// against the limits, run by the backend. Sssp and ShortestPath of a stored graph use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend.hpp"
#include "ops/prepared_op.hpp"

namespace gcompute::server::ops {

/// The row of vertex id `v` in a stored graph's ascending `vertex_ids`; NOT_FOUND naming
/// `field` when the graph has no such vertex.
absl::StatusOr<std::int64_t> row_of_vertex(const std::vector<std::uint64_t>& vertex_ids,
                                           std::int64_t v, const char* field);

struct SsspRun {
  SsspOutput out;
  /// Row i is vertex vertex_ids[i] (a stored graph); empty when row i is vertex i.
  std::vector<std::uint64_t> vertex_ids;
};

/// Shortest paths from vertex id `source` of the stored graph `graph_key` (`graph_id` as the
/// caller named it). A negative cycle reachable from the source is FAILED_PRECONDITION naming a
/// vertex id on it. A `target` is checked to be a vertex (NOT_FOUND) before the run.
absl::StatusOr<SsspRun> run_stored_sssp(const std::string& graph_key, const std::string& graph_id,
                                        std::int64_t source, const char* source_field, OpEnv& env,
                                        Backend& backend, JobContext& job,
                                        std::optional<std::int64_t> target);

}  // namespace gcompute::server::ops
