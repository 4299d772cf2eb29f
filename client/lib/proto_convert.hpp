// SPDX-License-Identifier: Apache-2.0
// Conversion between the gcompute.v1 messages and the client's plain host types. No network.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "gcompute/client/client.hpp"
#include "gcompute/v1/service.pb.h"

namespace gcompute::client {

namespace pb = ::gcompute::v1;

/// "BATCHxROWSxCOLS DTYPE", the shape as error messages print it.
std::string shape_string(int64_t batch, int64_t rows, int64_t cols, DType dtype);

void to_proto(const HostMatrix& m, pb::Matrix* out);
void to_proto(const EdgeList& e, pb::EdgeList* out);
void to_proto(const Hyperedge& e, pb::Hyperedge* out);
void to_proto(const GraphEdit& edit, pb::Edit* out);
void to_proto(const SvdOptions& o, pb::SvdRequest* request);

/// Moves the data out of `m`; INTERNAL if the server's shape or byte count is inconsistent.
absl::StatusOr<HostMatrix> from_proto(pb::Matrix* m);
StoredMatrix from_proto(const pb::StoredMatrix& s);
ExecutionStats from_proto(const pb::ExecutionStats& s);
GraphInfo from_proto(const pb::GraphInfo& g);

/// Adds one GetGraph page to `out` (info is the page's).
void append_graph_page(const pb::GetGraphResponse& page, GraphSnapshot& out);
ApplyEditsResult apply_edits_result_from(const pb::ApplyEditsResponse& response);
ServerInfo server_info_from(const pb::GetServerInfoResponse& response);
PathResult path_result_from(const pb::ShortestPathResponse& response);

}  // namespace gcompute::client
