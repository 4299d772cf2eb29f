// SPDX-License-Identifier: Apache-2.0
// Graph store RPCs. They run inline in the reaction: each is a short critical section of the
// store (no device work), so queueing them behind compute jobs would only add latency.
#include "absl/strings/str_cat.h"
#include "api/compute_service.hpp"

namespace gcompute::server {
namespace {

void encode_info(const GraphInfo& info, v1::GraphInfo* out) {
  out->set_graph_id(info.graph_id);
  out->set_version(info.version);
  out->set_num_vertices(info.num_vertices);
  out->set_num_edges(info.num_edges);
}

Hyperedge decode_edge(const v1::Hyperedge& e) {
  return Hyperedge{
      0, {e.tails().begin(), e.tails().end()}, {e.heads().begin(), e.heads().end()}, e.weight()};
}

absl::StatusOr<Edit> decode_edit(const v1::Edit& e, int index) {
  switch (e.op_case()) {
    case v1::Edit::kAddVertex:
      return Edit{AddVertex{}};
    case v1::Edit::kDeleteVertex:
      return Edit{DeleteVertex{e.delete_vertex().vertex_id()}};
    case v1::Edit::kAddEdge: {
      const auto& a = e.add_edge();
      return Edit{AddEdge{
          {a.tails().begin(), a.tails().end()}, {a.heads().begin(), a.heads().end()}, a.weight()}};
    }
    case v1::Edit::kDeleteEdge:
      return Edit{DeleteEdge{e.delete_edge().edge_id()}};
    case v1::Edit::kSetWeight:
      return Edit{SetWeight{e.set_weight().edge_id(), e.set_weight().weight()}};
    case v1::Edit::kDecomposeVertex: {
      const auto& d = e.decompose_vertex();
      return Edit{DecomposeVertex{
          d.vertex_id(), {d.move_edge_ids().begin(), d.move_edge_ids().end()}, d.joining_weight()}};
    }
    case v1::Edit::OP_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("edits[", index, "] has no operation set"));
}

}  // namespace

grpc::ServerUnaryReactor* ComputeService::CreateGraph(grpc::CallbackServerContext* ctx,
                                                      const v1::CreateGraphRequest* request,
                                                      v1::CreateGraphResponse* response) {
  auto* call = new UnaryCall(svc_, "CreateGraph", ctx, *request, response);
  if (auto st = call->check_accepting(); !st.ok()) return call->complete(st), call;
  std::vector<Hyperedge> edges;
  edges.reserve(request->edges_size());
  for (const auto& e : request->edges()) edges.push_back(decode_edge(e));
  auto info = svc_.graphs.create(request->graph_id(), request->num_vertices(), std::move(edges));
  if (info.ok()) encode_info(*info, response->mutable_info());
  call->complete(info.status());
  return call;
}

grpc::ServerUnaryReactor* ComputeService::GetGraph(grpc::CallbackServerContext* ctx,
                                                   const v1::GetGraphRequest* request,
                                                   v1::GetGraphResponse* response) {
  auto* call = new UnaryCall(svc_, "GetGraph", ctx, *request, response);
  auto snap = svc_.graphs.get(request->graph_id());
  if (snap.ok()) {
    encode_info(snap->info, response->mutable_info());
    response->mutable_vertices()->Assign(snap->vertices.begin(), snap->vertices.end());
    response->mutable_edges()->Reserve(static_cast<int>(snap->edges.size()));
    for (const Hyperedge& e : snap->edges) {
      v1::Hyperedge* out = response->add_edges();
      out->set_id(e.id);
      out->mutable_tails()->Assign(e.tails.begin(), e.tails.end());
      out->mutable_heads()->Assign(e.heads.begin(), e.heads.end());
      out->set_weight(e.weight);
    }
  }
  call->complete(snap.status());
  return call;
}

grpc::ServerUnaryReactor* ComputeService::ListGraphs(grpc::CallbackServerContext* ctx,
                                                     const v1::ListGraphsRequest* request,
                                                     v1::ListGraphsResponse* response) {
  auto* call = new UnaryCall(svc_, "ListGraphs", ctx, *request, response);
  for (const GraphInfo& info : svc_.graphs.list()) encode_info(info, response->add_graphs());
  call->complete(absl::OkStatus());
  return call;
}

grpc::ServerUnaryReactor* ComputeService::DeleteGraph(grpc::CallbackServerContext* ctx,
                                                      const v1::DeleteGraphRequest* request,
                                                      v1::DeleteGraphResponse* response) {
  auto* call = new UnaryCall(svc_, "DeleteGraph", ctx, *request, response);
  call->complete(svc_.graphs.remove(request->graph_id()));
  return call;
}

grpc::ServerUnaryReactor* ComputeService::ApplyEdits(grpc::CallbackServerContext* ctx,
                                                     const v1::ApplyEditsRequest* request,
                                                     v1::ApplyEditsResponse* response) {
  auto* call = new UnaryCall(svc_, "ApplyEdits", ctx, *request, response);
  if (auto st = call->check_accepting(); !st.ok()) return call->complete(st), call;
  std::vector<Edit> edits;
  edits.reserve(request->edits_size());
  for (int i = 0; i < request->edits_size(); ++i) {
    auto edit = decode_edit(request->edits(i), i);
    if (!edit.ok()) return call->complete(edit.status()), call;
    edits.push_back(*std::move(edit));
  }
  std::optional<std::uint64_t> expected;
  if (request->has_expected_version()) expected = request->expected_version();
  auto result = svc_.graphs.apply(request->graph_id(), expected, edits);
  if (result.ok()) {
    response->set_version(result->version);
    for (const EditResult& r : result->results) {
      v1::EditResult* out = response->add_results();
      out->set_vertex_id(r.vertex_id);
      out->set_edge_id(r.edge_id);
      out->mutable_deleted_edge_ids()->Assign(r.deleted_edge_ids.begin(), r.deleted_edge_ids.end());
    }
  }
  call->complete(result.status());
  return call;
}

}  // namespace gcompute::server
