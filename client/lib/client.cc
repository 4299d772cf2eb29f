// SPDX-License-Identifier: Apache-2.0
// The operations of Client: each fills its request and reads its response; routing, staging
// of operands, deadlines and failover are Client::Impl's (client_impl.hpp).
#include "gcompute/client/client.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <random>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "client_impl.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "proto_convert.hpp"
#include "results.hpp"

namespace gcompute::client {
namespace {

using Stub = pb::Compute::Stub;

ClientOptions with_clamped_chunk_bytes(ClientOptions options) {
  if (options.chunk_bytes == 0) options.chunk_bytes = 4 * kMiB;
  // A chunk plus its framing must fit in one message on both sides.
  options.chunk_bytes =
      std::max<uint64_t>(1, std::min(options.chunk_bytes, options.max_message_bytes / 2));
  return options;
}

grpc::ChannelArguments channel_arguments(const ClientOptions& options) {
  grpc::ChannelArguments args;
  const int max_bytes = static_cast<int>(std::min<uint64_t>(options.max_message_bytes, INT_MAX));
  args.SetMaxReceiveMessageSize(max_bytes);
  args.SetMaxSendMessageSize(max_bytes);
  // Connections of its own: gRPC would otherwise share one connection among the clients of a
  // process that reach the same server, and a server authenticates one credential per
  // connection (docs/security.md), so a second client with another token would be refused.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

// Svd and BatchedSvd share request and response.
absl::StatusOr<SvdResult> svd_rpc(Client::Impl& impl,
                                  UnaryMethod<pb::SvdRequest, pb::SvdResponse> method,
                                  const Operand& a, const SvdOptions& options,
                                  const CallOptions& call) {
  const CallScope scope = impl.call_scope(call);
  return impl.rpc_with_operands(
      impl.replicas.route_for_refs(stored_operands({&a})), scope, method,
      [&](OperandStager& stager, pb::SvdRequest& request) {
        fill_svd(stager, a, options, &request);
      },
      [&](pb::SvdResponse& response, const Attempt& attempt) {
        return svd_result_from(response, attempt, options.compute_uv);
      },
      /*use_shared_memory=*/true);
}

// Apsp with its results inline, or kept on the server for `stored_ttl_seconds`.
template <typename Read>
auto apsp_rpc(Client::Impl& impl, const ApspGraph& graph, bool next_hop,
              std::optional<int64_t> stored_ttl_seconds, const CallOptions& call, Read read) {
  const CallScope scope = impl.call_scope(call);
  return impl.rpc_with_operands(
      route_for(impl.replicas, graph), scope, &Stub::Apsp,
      [&](OperandStager& stager, pb::ApspRequest& request) {
        fill_apsp(stager, graph, next_hop, &request);
        if (stored_ttl_seconds) {
          request.mutable_output()->set_placement(pb::OutputOptions::PLACEMENT_STORED);
          request.mutable_output()->set_ttl_seconds(*stored_ttl_seconds);
        }
      },
      read);
}

// The result matrix `what`, or none where it was not asked for.
absl::StatusOr<std::optional<HostMatrix>> result_matrix_if(bool wanted, const Attempt& attempt,
                                                           pb::MatrixResult* result,
                                                           const char* what) {
  if (!wanted) return std::nullopt;
  return take_result_matrix(attempt.transfer, result, what);
}

}  // namespace

// The stored-matrix operands among `operands` (nullptr: an absent optional operand).
std::vector<const MatrixRef*> stored_operands(std::initializer_list<const Operand*> operands) {
  std::vector<const MatrixRef*> refs;
  for (const Operand* operand : operands) {
    if (operand != nullptr && operand->ref() != nullptr) refs.push_back(operand->ref());
  }
  return refs;
}

// The route of a call on `graph`: its owner for a stored graph id, else by its dense ref.
absl::StatusOr<Route> route_for(ReplicaSet& replicas, const ApspGraph& graph) {
  if (const auto* id = std::get_if<std::string>(&graph.source)) {
    return replicas.route_for_graph(*id);
  }
  return replicas.route_for_refs(stored_operands({std::get_if<Operand>(&graph.source)}));
}

absl::StatusOr<Route> route_for(ReplicaSet& replicas, const SsspGraph& graph) {
  if (const auto* id = std::get_if<std::string>(&graph.source)) {
    return replicas.route_for_graph(*id);
  }
  return replicas.route_for_refs({});
}

absl::StatusOr<MatrixResultWithStats> matrix_with_stats(const Attempt& attempt,
                                                        pb::MatrixResult* result, const char* what,
                                                        const pb::ExecutionStats& stats) {
  GC_ASSIGN_OR_RETURN(HostMatrix m, take_result_matrix(attempt.transfer, result, what));
  return MatrixResultWithStats{std::move(m), from_proto(stats)};
}

absl::StatusOr<EighResult> eigh_result_from(pb::EighResponse& response, const Attempt& attempt,
                                            bool vectors) {
  EighResult out;
  GC_ASSIGN_OR_RETURN(out.w, take_result_matrix(attempt.transfer, response.mutable_w(), "w"));
  GC_ASSIGN_OR_RETURN(out.v, result_matrix_if(vectors, attempt, response.mutable_v(), "v"));
  out.converged = response.converged();
  out.stats = from_proto(response.stats());
  return out;
}

absl::StatusOr<SvdResult> svd_result_from(pb::SvdResponse& response, const Attempt& attempt,
                                          bool compute_uv) {
  SvdResult out;
  GC_ASSIGN_OR_RETURN(out.s, take_result_matrix(attempt.transfer, response.mutable_s(), "s"));
  GC_ASSIGN_OR_RETURN(out.u, result_matrix_if(compute_uv, attempt, response.mutable_u(), "u"));
  GC_ASSIGN_OR_RETURN(out.vt, result_matrix_if(compute_uv, attempt, response.mutable_vt(), "vt"));
  out.sweeps = response.sweeps();
  out.converged = response.converged();
  out.stats = from_proto(response.stats());
  return out;
}

absl::StatusOr<ApspResult> apsp_result_from(pb::ApspResponse& response, const Attempt& attempt,
                                            bool next_hop) {
  ApspResult out;
  GC_ASSIGN_OR_RETURN(out.distances, take_result_matrix(attempt.transfer,
                                                        response.mutable_distances(), "distances"));
  GC_ASSIGN_OR_RETURN(out.next_hop,
                      result_matrix_if(next_hop, attempt, response.mutable_next_hop(), "next_hop"));
  out.stats = from_proto(response.stats());
  return out;
}

absl::StatusOr<SsspResult> sssp_result_from(pb::SsspResponse& response, const Attempt& attempt) {
  SsspResult out;
  GC_ASSIGN_OR_RETURN(out.distances, take_result_matrix(attempt.transfer,
                                                        response.mutable_distances(), "distances"));
  GC_ASSIGN_OR_RETURN(out.parents,
                      take_result_matrix(attempt.transfer, response.mutable_parents(), "parents"));
  if (out.distances.dtype != DType::kF32 || out.parents.dtype != DType::kI32 ||
      out.distances.elements() != out.parents.elements() ||
      (response.vertex_ids_size() != 0 && response.vertex_ids_size() != out.parents.elements())) {
    return absl::InternalError("Sssp: the response's distances, parents and vertex_ids disagree");
  }
  out.vertex_ids.assign(response.vertex_ids().begin(), response.vertex_ids().end());
  out.reachable = response.reachable();
  out.stats = from_proto(response.stats());
  return out;
}

void fill_matmul(OperandStager& stager, const Operand& a, const Operand& b,
                 const MatMulOptions& options, pb::MatMulRequest* request) {
  stager.add(a, request->mutable_a());
  stager.add(b, request->mutable_b());
  if (options.c) stager.add(*options.c, request->mutable_c());
  if (a.matrix() != nullptr && b.matrix() != nullptr) {
    const HostMatrix& ma = *a.matrix();
    const HostMatrix& mb = *b.matrix();
    const auto m = static_cast<uint64_t>(options.transpose_a ? ma.cols : ma.rows);
    const auto n = static_cast<uint64_t>(options.transpose_b ? mb.rows : mb.cols);
    const auto batch = static_cast<uint64_t>(std::max(ma.batch, mb.batch));
    stager.expect_outputs(shared_memory_slot_bytes(batch * m * n * dtype_size(ma.dtype)),
                          request->mutable_output());
  }
  request->set_transpose_a(options.transpose_a);
  request->set_transpose_b(options.transpose_b);
  request->set_precision(static_cast<pb::Precision>(options.precision));
  if (options.alpha) request->set_alpha(*options.alpha);
  if (options.beta) request->set_beta(*options.beta);
}

void fill_svd(OperandStager& stager, const Operand& a, const SvdOptions& options,
              pb::SvdRequest* request) {
  stager.add(a, request->mutable_a());
  to_proto(options, request);
  if (const HostMatrix* m = a.matrix()) {
    const uint64_t size = dtype_size(m->dtype), b = static_cast<uint64_t>(m->batch),
                   r = static_cast<uint64_t>(m->rows), c = static_cast<uint64_t>(m->cols);
    const uint64_t p = std::min(r, c);
    uint64_t bytes = shared_memory_slot_bytes(b * p * size);
    if (options.compute_uv) {
      bytes += shared_memory_slot_bytes(b * r * (options.full_matrices ? r : p) * size) +
               shared_memory_slot_bytes(b * (options.full_matrices ? c : p) * c * size);
    }
    stager.expect_outputs(bytes, request->mutable_output());
  }
}

void fill_apsp(OperandStager& stager, const ApspGraph& graph, bool next_hop,
               pb::ApspRequest* request) {
  stager.add_graph(graph, request);
  request->set_next_hop(next_hop);
}

void fill_shortest_path(OperandStager& stager, const ApspGraph& graph, int64_t source,
                        int64_t target, pb::ShortestPathRequest* request) {
  stager.add_graph(graph, request->mutable_graph());
  request->set_source(source);
  request->set_target(target);
}

void fill_sssp(const SsspGraph& graph, int64_t source, pb::SsspRequest* request) {
  if (const auto* edges = std::get_if<EdgeList>(&graph.source)) {
    to_proto(*edges, request->mutable_edges());
  } else {
    request->set_graph_id(std::get<std::string>(graph.source));
  }
  request->set_source(source);
}

absl::StatusOr<std::vector<int64_t>> SsspResult::path_to(int64_t v) const {
  const int64_t n = parents.elements();
  int64_t row = v;
  if (!vertex_ids.empty()) {
    auto it = std::lower_bound(vertex_ids.begin(), vertex_ids.end(), v);
    row = it != vertex_ids.end() && *it == v ? it - vertex_ids.begin() : -1;
  }
  if (row < 0 || row >= n) {
    return absl::NotFoundError(absl::StrCat("vertex ", v, " is not in the graph"));
  }
  const auto* parent = reinterpret_cast<const int32_t*>(parents.data.data());
  std::vector<int64_t> path;
  if (parent[row] < 0) return path;
  for (int64_t at = row, steps = 0;; at = parent[at], ++steps) {
    if (at < 0 || at >= n || steps > n) {
      return absl::InternalError(
          absl::StrCat("the parents do not lead from vertex ", v, " back to the source"));
    }
    path.push_back(vertex_ids.empty() ? at : vertex_ids[static_cast<std::size_t>(at)]);
    if (parent[at] == at) break;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

Client::Impl::Impl(ClientOptions client_options)
    : options(with_clamped_chunk_bytes(std::move(client_options))),
      replicas(options.target, channel_arguments(options), channel_security(options),
               options.tls_server_name),
      shared_memory(replicas.size()) {}

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

const ClientOptions& Client::options() const {
  return impl_->options;
}

const std::vector<std::string>& Client::replicas() const {
  return impl_->replicas.names();
}

std::size_t Client::replica_for_graph(const std::string& graph_id) const {
  return graph_owner(impl_->replicas.names(), graph_id);
}

std::optional<std::size_t> Client::replica_for_matrix(const MatrixRef& ref) const {
  return impl_->replicas.matrix_owner(ref.id);
}

absl::StatusOr<MatrixResultWithStats> Client::transpose(const Operand& a, const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  return impl_->rpc_with_operands(
      impl_->replicas.route_for_refs(stored_operands({&a})), scope, &Stub::Transpose,
      [&](OperandStager& stager, pb::TransposeRequest& request) {
        stager.add(a, request.mutable_a());
        if (const HostMatrix* m = a.matrix()) {
          stager.expect_outputs(shared_memory_slot_bytes(m->data.size()), request.mutable_output());
        }
      },
      [](pb::TransposeResponse& response, const Attempt& attempt) {
        return matrix_with_stats(attempt, response.mutable_at(), "at", response.stats());
      },
      /*use_shared_memory=*/true);
}

absl::StatusOr<MatrixResultWithStats> Client::matmul(const Operand& a, const Operand& b,
                                                     const MatMulOptions& options,
                                                     const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  const Operand* c = options.c ? &*options.c : nullptr;
  return impl_->rpc_with_operands(
      impl_->replicas.route_for_refs(stored_operands({&a, &b, c})), scope, &Stub::MatMul,
      [&](OperandStager& stager, pb::MatMulRequest& request) {
        fill_matmul(stager, a, b, options, &request);
      },
      [](pb::MatMulResponse& response, const Attempt& attempt) {
        return matrix_with_stats(attempt, response.mutable_c(), "c", response.stats());
      },
      /*use_shared_memory=*/true);
}

absl::StatusOr<SvdResult> Client::svd(const Operand& a, const SvdOptions& options,
                                      const CallOptions& call) {
  return svd_rpc(*impl_, &Stub::Svd, a, options, call);
}

absl::StatusOr<SvdResult> Client::batched_svd(const Operand& a, const SvdOptions& options,
                                              const CallOptions& call) {
  return svd_rpc(*impl_, &Stub::BatchedSvd, a, options, call);
}

absl::StatusOr<EighResult> Client::eigh(const Operand& a, const EighOptions& options,
                                        const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  return impl_->rpc_with_operands(
      impl_->replicas.route_for_refs(stored_operands({&a})), scope, &Stub::Eigh,
      [&](OperandStager& stager, pb::EighRequest& request) {
        stager.add(a, request.mutable_a());
        request.set_compute_vectors(options.compute_vectors);
        request.set_symmetry_tolerance(options.symmetry_tolerance);
        if (const HostMatrix* m = a.matrix()) {
          const uint64_t size = dtype_size(m->dtype), b = static_cast<uint64_t>(m->batch),
                         n = static_cast<uint64_t>(m->rows);
          stager.expect_outputs(
              shared_memory_slot_bytes(b * n * size) +
                  (options.compute_vectors ? shared_memory_slot_bytes(b * n * n * size) : 0),
              request.mutable_output());
        }
      },
      [&](pb::EighResponse& response, const Attempt& attempt) {
        return eigh_result_from(response, attempt, options.compute_vectors);
      },
      /*use_shared_memory=*/true);
}

absl::StatusOr<ApspResult> Client::apsp(const ApspGraph& graph, bool next_hop,
                                        const CallOptions& call) {
  return apsp_rpc(*impl_, graph, next_hop, std::nullopt, call,
                  [&](pb::ApspResponse& response, const Attempt& attempt) {
                    return apsp_result_from(response, attempt, next_hop);
                  });
}

absl::StatusOr<StoredApsp> Client::apsp_stored(const ApspGraph& graph, int64_t ttl_seconds,
                                               const CallOptions& call) {
  return apsp_rpc(
      *impl_, graph, /*next_hop=*/true, ttl_seconds, call,
      [&](pb::ApspResponse& response, const Attempt& attempt) -> absl::StatusOr<StoredApsp> {
        if (!response.distances().has_stored() || !response.next_hop().has_stored()) {
          return absl::InternalError(
              "server returned APSP results inline despite PLACEMENT_STORED");
        }
        StoredApsp out{from_proto(response.distances().stored()),
                       from_proto(response.next_hop().stored())};
        impl_->replicas.remember_matrix(out.distances.ref.id, attempt.replica_index,
                                        out.distances.expires_at_unix_ms);
        impl_->replicas.remember_matrix(out.next_hop.ref.id, attempt.replica_index,
                                        out.next_hop.expires_at_unix_ms);
        return out;
      });
}

absl::StatusOr<PathResult> Client::shortest_path(const ApspGraph& graph, int64_t source,
                                                 int64_t target, const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  return impl_->rpc_with_operands(
      route_for(impl_->replicas, graph), scope, &Stub::ShortestPath,
      [&](OperandStager& stager, pb::ShortestPathRequest& request) {
        fill_shortest_path(stager, graph, source, target, &request);
      },
      path_result_from);
}

absl::StatusOr<PathResult> Client::shortest_path(const StoredApsp& stored, int64_t source,
                                                 int64_t target, const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  pb::ShortestPathRequest request;
  request.mutable_stored()->mutable_distances()->set_id(stored.distances.ref.id);
  request.mutable_stored()->mutable_next_hop()->set_id(stored.next_hop.ref.id);
  request.set_source(source);
  request.set_target(target);
  return impl_->rpc(impl_->replicas.route_for_refs({&stored.distances.ref, &stored.next_hop.ref}),
                    scope, &Stub::ShortestPath, request, path_result_from);
}

absl::StatusOr<SsspResult> Client::sssp(const SsspGraph& graph, int64_t source,
                                        const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  return impl_->rpc_with_operands(
      route_for(impl_->replicas, graph), scope, &Stub::Sssp,
      [&](OperandStager&, pb::SsspRequest& request) { fill_sssp(graph, source, &request); },
      sssp_result_from);
}

absl::StatusOr<StoredMatrix> Client::upload_matrix(const HostMatrix& matrix, int64_t ttl_seconds,
                                                   const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  return impl_->replicas.run(Route{}, scope.deadline, [&](Replica& replica, std::size_t index) {
    absl::StatusOr<StoredMatrix> stored =
        upload_in_chunks(impl_->transfer_on(replica, scope), matrix, ttl_seconds);
    if (stored.ok()) {
      impl_->replicas.remember_matrix(stored->ref.id, index, stored->expires_at_unix_ms);
    }
    return stored;
  });
}

absl::StatusOr<HostMatrix> Client::download_matrix(const MatrixRef& ref, const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  absl::StatusOr<Route> route = impl_->replicas.route_for_refs({&ref});
  if (!route.ok()) return route.status();
  return impl_->replicas.run(*route, scope.deadline, [&](Replica& replica, std::size_t) {
    return download_in_chunks(impl_->transfer_on(replica, scope), ref);
  });
}

absl::Status Client::download_matrix_into(const MatrixRef& ref, HostMatrix& out,
                                          const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  absl::StatusOr<Route> route = impl_->replicas.route_for_refs({&ref});
  if (!route.ok()) return route.status();
  return impl_->replicas.run(*route, scope.deadline, [&](Replica& replica, std::size_t) {
    return download_in_chunks(impl_->transfer_on(replica, scope), ref, out);
  });
}

absl::Status Client::delete_matrix(const MatrixRef& ref, const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  absl::StatusOr<Route> route = impl_->replicas.route_for_refs({&ref});
  if (!route.ok()) return route.status();
  absl::Status s = impl_->replicas.run(*route, scope.deadline, [&](Replica& replica, std::size_t) {
    return delete_stored_matrix(replica, ref, scope.deadline);
  });
  if (s.ok() || s.code() == absl::StatusCode::kNotFound) impl_->replicas.forget_matrix(ref.id);
  return s;
}

absl::StatusOr<GraphInfo> Client::create_graph(const std::string& graph_id, uint64_t num_vertices,
                                               const std::vector<Hyperedge>& edges,
                                               const CallOptions& call) {
  std::string id = graph_id;
  if (id.empty() && impl_->replicas.size() > 1) {
    // The owner follows from the id, so the client names the graph (the server's format).
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[32];
    std::snprintf(buf, sizeof buf, "g-%016llx", static_cast<unsigned long long>(rng()));
    id = buf;
  }
  pb::CreateGraphRequest request;
  request.set_graph_id(id);
  request.set_num_vertices(num_vertices);
  request.mutable_edges()->Reserve(static_cast<int>(edges.size()));
  for (const Hyperedge& e : edges) to_proto(e, request.add_edges());
  const CallScope scope = impl_->call_scope(call);
  return impl_->rpc(impl_->replicas.route_for_graph(id), scope, &Stub::CreateGraph, request,
                    [](pb::CreateGraphResponse& response) { return from_proto(response.info()); });
}

absl::StatusOr<GraphSnapshot> Client::get_graph(const std::string& graph_id,
                                                const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  pb::GetGraphRequest request;
  request.set_graph_id(graph_id);
  // Pages are of one version; a change between pages (ABORTED) starts over, a few times.
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    request.clear_page_token();
    GraphSnapshot out;
    for (;;) {
      absl::StatusOr<pb::GetGraphResponse> page =
          impl_->rpc(impl_->replicas.route_for_graph(graph_id), scope, &Stub::GetGraph, request,
                     [](pb::GetGraphResponse& r) { return std::move(r); });
      if (!page.ok()) {
        last = page.status();
        break;
      }
      append_graph_page(*page, out);
      if (page->next_page_token().empty()) return out;
      request.set_page_token(page->next_page_token());
    }
    if (!absl::IsAborted(last)) return last;
  }
  return last;
}

absl::StatusOr<std::vector<GraphInfo>> Client::list_graphs(const CallOptions& call) {
  if (!impl_->replicas.init_error().ok()) return impl_->replicas.init_error();
  const CallScope scope = impl_->call_scope(call);
  std::vector<GraphInfo> out;
  for (std::size_t i = 0; i < impl_->replicas.size(); ++i) {
    Replica& replica = impl_->replicas.at(i);
    absl::StatusOr<pb::ListGraphsResponse> response =
        unary_rpc(replica, &Stub::ListGraphs, pb::ListGraphsRequest(), scope.deadline);
    if (!response.ok()) {
      const absl::Status& s = response.status();
      if (impl_->replicas.size() == 1) return s;
      return absl::Status(s.code(), absl::StrCat(replica.name, ": ", s.message()));
    }
    for (const pb::GraphInfo& g : response->graphs()) out.push_back(from_proto(g));
  }
  std::sort(out.begin(), out.end(),
            [](const GraphInfo& a, const GraphInfo& b) { return a.graph_id < b.graph_id; });
  return out;
}

absl::Status Client::delete_graph(const std::string& graph_id, const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  pb::DeleteGraphRequest request;
  request.set_graph_id(graph_id);
  return impl_->rpc(impl_->replicas.route_for_graph(graph_id), scope, &Stub::DeleteGraph, request,
                    [](pb::DeleteGraphResponse&) { return absl::OkStatus(); });
}

absl::StatusOr<ApplyEditsResult> Client::apply_edits(const std::string& graph_id,
                                                     const std::vector<GraphEdit>& edits,
                                                     std::optional<uint64_t> expected_version,
                                                     const CallOptions& call) {
  pb::ApplyEditsRequest request;
  request.set_graph_id(graph_id);
  if (expected_version) request.set_expected_version(*expected_version);
  for (const GraphEdit& edit : edits) to_proto(edit, request.add_edits());
  const CallScope scope = impl_->call_scope(call);
  return impl_->rpc(impl_->replicas.route_for_graph(graph_id), scope, &Stub::ApplyEdits, request,
                    apply_edits_result_from);
}

absl::StatusOr<ServerInfo> Client::server_info(const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  return impl_->rpc(Route{}, scope, &Stub::GetServerInfo, pb::GetServerInfoRequest(),
                    server_info_from);
}

absl::StatusOr<ServerInfo> Client::server_info_at(std::size_t replica, const CallOptions& call) {
  if (replica >= impl_->replicas.size()) {
    return absl::OutOfRangeError(absl::StrCat("replica ", replica, " of ", impl_->replicas.size()));
  }
  const CallScope scope = impl_->call_scope(call);
  return impl_->rpc(Route{replica}, scope, &Stub::GetServerInfo, pb::GetServerInfoRequest(),
                    server_info_from);
}

}  // namespace gcompute::client
