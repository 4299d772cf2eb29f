// SPDX-License-Identifier: Apache-2.0
// The graph of an Apsp or ShortestPath request (dense matrix, stored matrix, edge list or
// stored graph) turned into a dense weight matrix, checked, and run; path tracing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/call.hpp"
#include "gcompute/v1/operations.pb.h"

namespace gcompute::server {

/// What a request named, validated but not yet densified (that runs on a worker).
struct ApspSource {
  std::optional<Matrix> dense;
  // An edge list (from_edges) or a stored graph (graph_id non-empty).
  bool from_edges = false;
  std::int64_t n = 0;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> src, dst;
  std::vector<double> weight;
  std::string graph_id;
};

/// Validates the request's graph; `prefix` is prepended to field names ("graph.").
absl::StatusOr<ApspSource> take_apsp_source(v1::ApspRequest* request, const std::string& prefix,
                                            ServiceContext& svc);

struct ApspRun {
  ApspOutput out;
  /// For stored graphs: row i of the matrices is vertex vertex_ids[i]. Empty otherwise.
  std::vector<std::uint64_t> vertex_ids;
};

/// Densifies, checks weights, runs the backend; a negative cycle is FAILED_PRECONDITION.
absl::StatusOr<ApspRun> run_apsp(ApspSource source, bool next_hop, ServiceContext& svc,
                                 Backend& backend, JobContext& job);

/// Follows the next-hop matrix from s to t. With vertex_ids, s and t are vertex ids and the
/// path is reported in ids; otherwise they are 0-based indices.
absl::Status trace_path(const Matrix& dist, const Matrix& next, std::int64_t s, std::int64_t t,
                        const std::vector<std::uint64_t>& vertex_ids,
                        v1::ShortestPathResponse* out);

}  // namespace gcompute::server
