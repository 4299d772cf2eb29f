// SPDX-License-Identifier: Apache-2.0
// The graph store as tenants see it: each in a namespace of its own (GraphStore keys), so a
// graph of another tenant is NOT_FOUND and its id is free to be used again.
#include "absl/strings/str_cat.h"
#include "common/quote.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "ops/admission.hpp"
#include "ops/operations.hpp"

namespace gcompute::server::ops {
namespace {

/// The caller's key for a graph id it sent. Ids that no graph can have (a '/' would reach
/// into another namespace) are NOT_FOUND, as an unknown id is.
absl::StatusOr<std::string> lookup_key(const Caller& caller, const std::string& graph_id) {
  if (!GraphStore::validate_graph_id(graph_id).ok()) {
    return absl::NotFoundError(absl::StrCat("graph ", quote_id(graph_id), " not found"));
  }
  return GraphStore::key(caller.tenant, graph_id);
}

/// A summary as its owner knows it (the id without the namespace).
GraphInfo visible(GraphInfo info) {
  info.graph_id = GraphStore::graph_id_of(info.graph_id);
  return info;
}

}  // namespace

std::string graph_key(const Caller& caller, const std::string& graph_id) {
  return GraphStore::key(caller.tenant, graph_id);
}

absl::StatusOr<GraphInfo> Operations::create_graph(const Caller& caller,
                                                   const std::string& graph_id,
                                                   std::uint64_t num_vertices,
                                                   std::vector<Hyperedge> edges) {
  if (!graph_id.empty()) GC_RETURN_IF_ERROR(GraphStore::validate_graph_id(graph_id));
  // Each vertex costs the store about this much (ids, adjacency, index), measured: 2^22
  // vertices took 712 MB.
  constexpr std::uint64_t kBytesPerVertex = 176;
  GC_RETURN_IF_ERROR(admit(mul_bytes(num_vertices, kBytesPerVertex),
                           absl::StrCat("CreateGraph (num_vertices = ", num_vertices, ")"),
                           env_.limits, /*on_device=*/false));
  GraphStore::CreateOptions options;
  options.ns = caller.tenant;
  if (env_.tenant_quotas) options.max_graphs_in_ns = env_.tenant_quotas(caller.tenant).graphs;
  GC_ASSIGN_OR_RETURN(GraphInfo info,
                      env_.graphs.create(graph_id.empty() ? "" : graph_key(caller, graph_id),
                                         num_vertices, std::move(edges), options));
  return visible(std::move(info));
}

absl::StatusOr<GraphSnapshot> Operations::get_graph(const Caller& caller,
                                                    const std::string& graph_id) {
  GC_ASSIGN_OR_RETURN(const std::string key, lookup_key(caller, graph_id));
  GC_ASSIGN_OR_RETURN(GraphSnapshot graph, env_.graphs.get(key));
  graph.info = visible(std::move(graph.info));
  return graph;
}

std::vector<GraphInfo> Operations::list_graphs(const Caller& caller) {
  std::vector<GraphInfo> out = env_.graphs.list(caller.tenant);
  for (GraphInfo& info : out) info = visible(std::move(info));
  return out;
}

absl::Status Operations::delete_graph(const Caller& caller, const std::string& graph_id) {
  GC_ASSIGN_OR_RETURN(const std::string key, lookup_key(caller, graph_id));
  return env_.graphs.remove(key);
}

absl::StatusOr<ApplyResult> Operations::apply_edits(const Caller& caller,
                                                    const std::string& graph_id,
                                                    std::optional<std::uint64_t> expected_version,
                                                    std::span<const Edit> edits) {
  GC_ASSIGN_OR_RETURN(const std::string key, lookup_key(caller, graph_id));
  return env_.graphs.apply(key, expected_version, edits);
}

}  // namespace gcompute::server::ops
