// SPDX-License-Identifier: Apache-2.0
#include "proto_convert.hpp"

#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "gcompute/client/grpc_status.hpp"

namespace gcompute::client {
namespace {

struct EditToProto {
  pb::Edit* out;
  void operator()(const AddVertex&) const { out->mutable_add_vertex(); }
  void operator()(const DeleteVertex& e) const {
    out->mutable_delete_vertex()->set_vertex_id(e.vertex_id);
  }
  void operator()(const AddEdge& e) const {
    auto* a = out->mutable_add_edge();
    a->mutable_tails()->Add(e.tails.begin(), e.tails.end());
    a->mutable_heads()->Add(e.heads.begin(), e.heads.end());
    a->set_weight(e.weight);
  }
  void operator()(const DeleteEdge& e) const { out->mutable_delete_edge()->set_edge_id(e.edge_id); }
  void operator()(const SetWeight& e) const {
    auto* s = out->mutable_set_weight();
    s->set_edge_id(e.edge_id);
    s->set_weight(e.weight);
  }
  void operator()(const DecomposeVertex& e) const {
    auto* d = out->mutable_decompose_vertex();
    d->set_vertex_id(e.vertex_id);
    d->mutable_move_edge_ids()->Add(e.move_edge_ids.begin(), e.move_edge_ids.end());
    d->set_joining_weight(e.joining_weight);
  }
};

}  // namespace

absl::Status from_grpc_status(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string shape_string(int64_t batch, int64_t rows, int64_t cols, DType dtype) {
  return absl::StrCat(batch, "x", rows, "x", cols, " ", dtype_name(dtype));
}

void to_proto(const HostMatrix& m, pb::Matrix* out) {
  out->set_batch(m.batch);
  out->set_rows(m.rows);
  out->set_cols(m.cols);
  out->set_dtype(static_cast<pb::DType>(m.dtype));
  out->set_data(m.data);
}

void to_proto(const EdgeList& e, pb::EdgeList* out) {
  out->set_num_vertices(e.num_vertices);
  out->mutable_src()->Add(e.src.begin(), e.src.end());
  out->mutable_dst()->Add(e.dst.begin(), e.dst.end());
  out->mutable_weight()->Add(e.weight.begin(), e.weight.end());
  out->set_dtype(static_cast<pb::DType>(e.dtype));
}

void to_proto(const Hyperedge& e, pb::Hyperedge* out) {
  out->mutable_tails()->Add(e.tails.begin(), e.tails.end());
  out->mutable_heads()->Add(e.heads.begin(), e.heads.end());
  out->set_weight(e.weight);
}

void to_proto(const GraphEdit& edit, pb::Edit* out) {
  std::visit(EditToProto{out}, edit);
}

void to_proto(const SvdOptions& o, pb::SvdRequest* request) {
  request->set_compute_uv(o.compute_uv);
  request->set_full_matrices(o.full_matrices);
  request->set_tolerance(o.tolerance);
  request->set_max_sweeps(o.max_sweeps);
  switch (o.method) {
    case SvdMethod::kAuto:
      request->set_method(pb::SVD_METHOD_AUTO);
      break;
    case SvdMethod::kJacobi:
      request->set_method(pb::SVD_METHOD_JACOBI);
      break;
    case SvdMethod::kPolar:
      request->set_method(pb::SVD_METHOD_POLAR);
      break;
  }
}

absl::StatusOr<HostMatrix> from_proto(pb::Matrix* m) {
  HostMatrix out;
  out.batch = m->batch() == 0 ? 1 : m->batch();
  out.rows = m->rows();
  out.cols = m->cols();
  out.dtype = static_cast<DType>(m->dtype());
  if (out.batch < 0 || out.rows < 0 || out.cols < 0 || dtype_size(out.dtype) == 0) {
    return absl::InternalError(
        absl::StrCat("server returned an invalid matrix: ",
                     shape_string(out.batch, out.rows, out.cols, out.dtype)));
  }
  if (m->data().size() != out.expected_bytes()) {
    return absl::InternalError(absl::StrCat("server returned ", m->data().size(), " bytes for a ",
                                            shape_string(out.batch, out.rows, out.cols, out.dtype),
                                            " matrix; expected ", out.expected_bytes()));
  }
  out.data = std::move(*m->mutable_data());
  return out;
}

StoredMatrix from_proto(const pb::StoredMatrix& s) {
  StoredMatrix out;
  out.ref.id = s.ref().id();
  out.batch = s.shape().batch() == 0 ? 1 : s.shape().batch();
  out.rows = s.shape().rows();
  out.cols = s.shape().cols();
  out.dtype = static_cast<DType>(s.shape().dtype());
  out.expires_at_unix_ms = s.expires_at_unix_ms();
  out.size_bytes = s.size_bytes();
  return out;
}

ExecutionStats from_proto(const pb::ExecutionStats& s) {
  return ExecutionStats{s.queue_seconds(), s.h2d_seconds(),   s.compute_seconds(),
                        s.d2h_seconds(),   s.total_seconds(), s.device()};
}

GraphInfo from_proto(const pb::GraphInfo& g) {
  return GraphInfo{g.graph_id(), g.version(), g.num_vertices(), g.num_edges()};
}

void append_graph_page(const pb::GetGraphResponse& page, GraphSnapshot& out) {
  out.info = from_proto(page.info());
  out.vertices.insert(out.vertices.end(), page.vertices().begin(), page.vertices().end());
  out.edges.reserve(out.edges.size() + static_cast<std::size_t>(page.edges_size()));
  for (const pb::Hyperedge& e : page.edges()) {
    out.edges.push_back(Hyperedge{e.id(),
                                  {e.tails().begin(), e.tails().end()},
                                  {e.heads().begin(), e.heads().end()},
                                  e.weight()});
  }
}

ApplyEditsResult apply_edits_result_from(const pb::ApplyEditsResponse& response) {
  ApplyEditsResult out;
  out.version = response.version();
  for (const pb::EditResult& e : response.results()) {
    out.results.push_back(EditResult{
        e.vertex_id(), e.edge_id(), {e.deleted_edge_ids().begin(), e.deleted_edge_ids().end()}});
  }
  return out;
}

ServerInfo server_info_from(const pb::GetServerInfoResponse& response) {
  ServerInfo out;
  out.version = response.version();
  out.backend = response.backend();
  out.backend_note = response.backend_note();
  for (const pb::Device& d : response.devices()) {
    out.devices.push_back(
        DeviceInfo{d.index(), d.name(), d.memory_bytes(), d.compute_capability()});
  }
  const pb::Limits& l = response.limits();
  out.limits = ServerLimits{l.max_message_bytes(),         l.max_matrix_elements(), l.queue_depth(),
                            l.stored_matrix_quota_bytes(), l.default_ttl_seconds(), l.workers()};
  return out;
}

PathResult path_result_from(const pb::ShortestPathResponse& response) {
  PathResult out;
  out.reachable = response.reachable();
  out.length = response.length();
  out.vertices.assign(response.vertices().begin(), response.vertices().end());
  out.stats = from_proto(response.stats());
  return out;
}

}  // namespace gcompute::client
