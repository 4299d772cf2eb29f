// SPDX-License-Identifier: Apache-2.0
// What the operations of Client share with its jobs (jobs.cc): routes for operands and the
// conversion of each operation's response into the client's result types.
#pragma once

#include <initializer_list>
#include <vector>

#include "absl/status/statusor.h"
#include "client_impl.hpp"
#include "proto_convert.hpp"

namespace gcompute::client {

/// The stored-matrix operands among `operands` (nullptr: an absent optional operand).
std::vector<const MatrixRef*> stored_operands(std::initializer_list<const Operand*> operands);
/// The route of a call on `graph`: its owner for a stored graph id, else by its dense ref.
absl::StatusOr<Route> route_for(ReplicaSet& replicas, const ApspGraph& graph);
absl::StatusOr<Route> route_for(ReplicaSet& replicas, const SsspGraph& graph);

// Each operation's operands and options into `request` (the unary call's and a job's).
void fill_matmul(OperandStager& stager, const Operand& a, const Operand& b,
                 const MatMulOptions& options, pb::MatMulRequest* request);
void fill_svd(OperandStager& stager, const Operand& a, const SvdOptions& options,
              pb::SvdRequest* request);
void fill_apsp(OperandStager& stager, const ApspGraph& graph, bool next_hop,
               pb::ApspRequest* request);
void fill_shortest_path(OperandStager& stager, const ApspGraph& graph, int64_t source,
                        int64_t target, pb::ShortestPathRequest* request);
void fill_sssp(const SsspGraph& graph, int64_t source, pb::SsspRequest* request);

absl::StatusOr<MatrixResultWithStats> matrix_with_stats(const Attempt& attempt,
                                                        pb::MatrixResult* result, const char* what,
                                                        const pb::ExecutionStats& stats);
absl::StatusOr<EighResult> eigh_result_from(pb::EighResponse& response, const Attempt& attempt,
                                            bool vectors);
absl::StatusOr<SvdResult> svd_result_from(pb::SvdResponse& response, const Attempt& attempt,
                                          bool compute_uv);
absl::StatusOr<ApspResult> apsp_result_from(pb::ApspResponse& response, const Attempt& attempt,
                                            bool next_hop);
absl::StatusOr<SsspResult> sssp_result_from(pb::SsspResponse& response, const Attempt& attempt);

}  // namespace gcompute::client
