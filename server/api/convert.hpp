// SPDX-License-Identifier: Apache-2.0
// Protos <-> ops types. Decoding checks only what the wire format defines (enum values, which
// oneof case is set) and moves matrix bytes out of requests without copying; every other check
// belongs to ops/. Encoding moves result bytes into responses without copying when possible.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend.hpp"
#include "gcompute/v1/graphs.pb.h"
#include "gcompute/v1/jobs.pb.h"
#include "gcompute/v1/matrices.pb.h"
#include "gcompute/v1/operations.pb.h"
#include "gcompute/v1/types.pb.h"
#include "ops/jobs.hpp"
#include "ops/requests.hpp"
#include "ops/upload.hpp"
#include "store/graphs/graph_model.hpp"

namespace gcompute::server {

absl::StatusOr<DType> decode_dtype(v1::DType dtype, const std::string& field);
v1::DType encode_dtype(DType dtype);

// ---- requests (the request's matrix bytes are moved out: requests are not shared) ----------
absl::StatusOr<ops::TransposeRequest> decode(v1::TransposeRequest& request);
absl::StatusOr<ops::MatMulRequest> decode(v1::MatMulRequest& request);
absl::StatusOr<ops::SvdRequest> decode(v1::SvdRequest& request, bool batched);
absl::StatusOr<ops::EighRequest> decode(v1::EighRequest& request);
/// `prefix` is prepended to field names ("graph." inside a ShortestPathRequest).
absl::StatusOr<ops::ApspRequest> decode(v1::ApspRequest& request, const std::string& prefix);
absl::StatusOr<ops::ShortestPathRequest> decode(v1::ShortestPathRequest& request);
absl::StatusOr<ops::SsspRequest> decode(v1::SsspRequest& request);
absl::StatusOr<ops::UploadHeader> decode(const v1::UploadMatrixRequest::Header& header);
absl::StatusOr<std::vector<Edit>> decode_edits(const v1::ApplyEditsRequest& request);

/// A job's state on the wire (GetJob, and the job records of --data-dir).
v1::JobState encode_job_state(ops::JobState state);
/// Empty for a value that is no job state.
std::optional<ops::JobState> decode_job_state(v1::JobState state);

/// A SubmitJob request: the operation (moved out as its unary RPC's decode does) and options.
struct JobSubmission {
  ops::OpRequest op;
  ops::JobOptions options;
};
absl::StatusOr<JobSubmission> decode(v1::SubmitJobRequest& request);
std::vector<Hyperedge> decode_edges(const v1::CreateGraphRequest& request);
/// The first item of the GetGraph page `token` names ("VERSION.INDEX"; empty: the first
/// page). INVALID_ARGUMENT for a token this graph's pages never had; ABORTED when the graph
/// changed since the token was issued.
absl::StatusOr<std::uint64_t> decode_page_token(const std::string& token,
                                                const GraphSnapshot& graph);

// ---- results ---------------------------------------------------------------------------
/// Inline host bytes (moved when not shared) or a stored matrix.
void encode(ops::ResultMatrix result, v1::MatrixResult* out);
void encode_stored(const StoredMatrixInfo& info, v1::StoredMatrix* out);
void encode_stats(const JobContext& job, double total_seconds, v1::ExecutionStats* out);
/// An operation's response, as its unary RPC and a finished job return it.
void encode(ops::TransposeResult r, const JobContext& job, double seconds,
            v1::TransposeResponse* out);
void encode(ops::MatMulResult r, const JobContext& job, double seconds, v1::MatMulResponse* out);
void encode(ops::SvdResult r, const JobContext& job, double seconds, v1::SvdResponse* out);
void encode(ops::EighResult r, const JobContext& job, double seconds, v1::EighResponse* out);
void encode(ops::ApspResult r, const JobContext& job, double seconds, v1::ApspResponse* out);
void encode(ops::ShortestPathResult r, const JobContext& job, double seconds,
            v1::ShortestPathResponse* out);
void encode(ops::SsspResult r, const JobContext& job, double seconds, v1::SsspResponse* out);
/// A job as GetJob returns it (the result, inline bytes copied, when the view holds one).
void encode(const ops::JobView& job, v1::Job* out);
void encode(const GraphInfo& info, v1::GraphInfo* out);
/// One page of `graph`: items (vertices, then edges) from index `first`, at most `page_size`
/// of them (0: no count limit) and about `max_bytes` of encoded items, at least one. Returns
/// the index after the page's last item (the item count when the page ends the graph).
std::uint64_t encode_page(const GraphSnapshot& graph, std::uint64_t first, std::uint64_t page_size,
                          std::uint64_t max_bytes, v1::GetGraphResponse* out);
void encode(const ApplyResult& result, v1::ApplyEditsResponse* out);

}  // namespace gcompute::server
