// SPDX-License-Identifier: Apache-2.0
// Graph store RPCs. They run on the store executor, not in the reaction: a change appends to
// the write-ahead log (and may fsync), a read copies a whole graph.
#include "absl/strings/str_cat.h"
#include "api/compute_service.hpp"
#include "api/convert.hpp"

namespace gcompute::server {

grpc::ServerUnaryReactor* ComputeService::CreateGraph(grpc::CallbackServerContext* ctx,
                                                      const v1::CreateGraphRequest* request,
                                                      v1::CreateGraphResponse* response) {
  return UnaryCall::start(svc_, "CreateGraph", ctx, *request, response, [&](UnaryCall& call) {
    call.run_on_store([this, &call, request, response] {
      auto info = svc_.ops.create_graph(call.caller(), request->graph_id(), request->num_vertices(),
                                        decode_edges(*request));
      if (info.ok()) encode(*info, response->mutable_info());
      return info.status();
    });
  });
}

grpc::ServerUnaryReactor* ComputeService::GetGraph(grpc::CallbackServerContext* ctx,
                                                   const v1::GetGraphRequest* request,
                                                   v1::GetGraphResponse* response) {
  return UnaryCall::start(svc_, "GetGraph", ctx, *request, response, [&](UnaryCall& call) {
    call.run_on_store([this, &call, request, response]() -> absl::Status {
      auto graph = svc_.ops.get_graph(call.caller(), request->graph_id());
      if (!graph.ok()) return graph.status();
      auto first = decode_page_token(request->page_token(), *graph);
      if (!first.ok()) return first.status();
      const std::uint64_t budget =
          svc_.limits.max_message_bytes - svc_.limits.response_overhead_bytes;
      const std::uint64_t next =
          encode_page(*graph, *first, request->page_size(), budget, response);
      if (next < graph->vertices.size() + graph->edges.size()) {
        response->set_next_page_token(absl::StrCat(graph->info.version, ".", next));
      }
      return absl::OkStatus();
    });
  });
}

grpc::ServerUnaryReactor* ComputeService::ListGraphs(grpc::CallbackServerContext* ctx,
                                                     const v1::ListGraphsRequest* request,
                                                     v1::ListGraphsResponse* response) {
  return UnaryCall::start(svc_, "ListGraphs", ctx, *request, response, [&](UnaryCall& call) {
    for (const GraphInfo& info : svc_.ops.list_graphs(call.caller())) {
      encode(info, response->add_graphs());
    }
    call.complete(absl::OkStatus());
  });
}

grpc::ServerUnaryReactor* ComputeService::DeleteGraph(grpc::CallbackServerContext* ctx,
                                                      const v1::DeleteGraphRequest* request,
                                                      v1::DeleteGraphResponse* response) {
  return UnaryCall::start(svc_, "DeleteGraph", ctx, *request, response, [&](UnaryCall& call) {
    call.run_on_store([this, &call, request] {
      return svc_.ops.delete_graph(call.caller(), request->graph_id());
    });
  });
}

grpc::ServerUnaryReactor* ComputeService::ApplyEdits(grpc::CallbackServerContext* ctx,
                                                     const v1::ApplyEditsRequest* request,
                                                     v1::ApplyEditsResponse* response) {
  return UnaryCall::start(svc_, "ApplyEdits", ctx, *request, response, [&](UnaryCall& call) {
    auto edits = decode_edits(*request);
    if (!edits.ok()) return call.complete(edits.status());
    call.run_on_store([this, &call, request, response, edits = *std::move(edits)] {
      std::optional<std::uint64_t> expected;
      if (request->has_expected_version()) expected = request->expected_version();
      auto result = svc_.ops.apply_edits(call.caller(), request->graph_id(), expected, edits);
      if (result.ok()) encode(*result, response);
      return result.status();
    });
  });
}

}  // namespace gcompute::server
