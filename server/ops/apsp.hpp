// SPDX-License-Identifier: Apache-2.0
// The graph of an Apsp or ShortestPath request (dense matrix, stored matrix, edge list or
// stored graph) turned into a dense weight matrix, checked and run, with the APSP cache of
// stored graphs in front; and path tracing over next-hop matrices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "engine/backend.hpp"
#include "ops/prepared_op.hpp"

namespace gcompute::server::ops {

/// What a request named, validated but not yet densified (that runs on a worker).
struct ApspSource {
  std::optional<Matrix> dense;
  std::optional<EdgeListInput> edges;
  std::string graph_id;   ///< a stored graph when non-empty, as the caller named it
  std::string graph_key;  ///< its key in the graph store (the caller's namespace)
};

/// Validates the request's graph; `prefix` is prepended to field names ("graph.").
absl::StatusOr<ApspSource> take_apsp_source(GraphInput graph, const std::string& prefix, OpEnv& env,
                                            const Caller& caller);

/// INVALID_ARGUMENT, naming `field`, unless src, dst and weight have equal lengths.
absl::Status check_edge_list_lengths(const EdgeListInput& e, const std::string& field);

/// FAILED_PRECONDITION naming `vertex`, on a negative cycle (with `from_source`, one the
/// source of a single-source search reaches: others do not matter there).
absl::Status negative_cycle_error(std::int64_t vertex, bool from_source = false);

/// RESOURCE_EXHAUSTED when an APSP of `n` vertices (weights, distances, next hops and work
/// space) would need more memory than one request may take.
absl::Status admit_apsp(std::int64_t n, DType dtype, bool next_hop, const std::string& what,
                        const OpEnv& env);

/// admit_apsp for the graph `source` names (a stored graph at its current size).
absl::Status admit_apsp_source(const ApspSource& source, bool next_hop, const OpEnv& env);

struct ApspRun {
  ApspOutput out;
  /// For stored graphs: row i of the matrices is vertex vertex_ids[i]. Empty otherwise.
  std::vector<std::uint64_t> vertex_ids;
};

/// Called once n is known and before the backend runs; returns whether the results may stay
/// on the device (they will be stored).
using BeforeApsp = absl::FunctionRef<absl::StatusOr<bool>(std::int64_t n, DType dtype)>;

/// Densifies (or answers from the APSP cache), checks weights, runs the backend; a negative
/// cycle is FAILED_PRECONDITION naming a vertex on it.
absl::StatusOr<ApspRun> run_apsp(ApspSource source, bool next_hop, OpEnv& env, Backend& backend,
                                 JobContext& job, BeforeApsp before_run);

/// Follows the next-hop matrix from s to t. With vertex_ids, s and t are vertex ids and the
/// path is reported in ids; otherwise they are 0-based indices.
absl::StatusOr<ShortestPathResult> trace_path(const Matrix& dist, const Matrix& next,
                                              std::int64_t s, std::int64_t t,
                                              const std::vector<std::uint64_t>& vertex_ids);

}  // namespace gcompute::server::ops
