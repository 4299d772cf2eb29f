// SPDX-License-Identifier: Apache-2.0
// Apsp and ShortestPath.
#include "ops/apsp.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/quote.hpp"
#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/cpu/apsp.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "ops/admission.hpp"
#include "ops/inputs.hpp"
#include "ops/placement.hpp"
#include "ops/sssp.hpp"

namespace gcompute::server::ops {
namespace {

absl::Status check_square(const MatrixDesc& d, const std::string& field) {
  if (d.batch != 1 || d.rows != d.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", describe(d), "; APSP needs one square n x n weight matrix"));
  }
  if (d.dtype != DType::kF32 && d.dtype != DType::kI32) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", describe(d), "; APSP weights are f32 or i32"));
  }
  return absl::OkStatus();
}

/// f32: NaN and -inf are refused; i32: values other than the no-edge value must be within
/// +-kI32MaxAbsWeight so that sums cannot overflow. Scanned where the weights live.
absl::Status check_weights(Backend& backend, const Matrix& w, const std::string& field) {
  GC_ASSIGN_OR_RETURN(const kernels::ScanResult bad,
                      backend.first_violation(w, kernels::ValueCheck::kApspWeight));
  if (!bad.found()) return absl::OkStatus();
  const std::int64_t n = w.desc.rows;
  const std::string at = absl::StrCat(field, "[", bad.index / n, "][", bad.index % n, "]");
  if (w.desc.dtype == DType::kF32) {
    return absl::FailedPreconditionError(absl::StrCat(at, " is ", static_cast<float>(bad.value),
                                                      "; weights must be finite or +inf"));
  }
  return absl::InvalidArgumentError(absl::StrCat(at, " = ", static_cast<std::int64_t>(bad.value),
                                                 " is outside +-", kernels::kI32MaxAbsWeight, " (",
                                                 kernels::kI32NoEdge, " means no edge)"));
}

/// The graph as a host matrix built from an edge list.
absl::StatusOr<Matrix> densify_edges(const EdgeListInput& e) {
  GC_ASSIGN_OR_RETURN(Matrix w,
                      allocate_matrix(MatrixDesc{e.dtype, 1, e.num_vertices, e.num_vertices}));
  const kernels::EdgeListView view{e.num_vertices, static_cast<std::int64_t>(e.src.size()),
                                   e.src.data(), e.dst.data(), e.weight.data()};
  if (absl::Status st = kernels::cpu::edge_list_to_dense(view, e.dtype, w.mutable_bytes());
      !st.ok()) {
    return absl::Status(st.code(), absl::StrCat("edges: ", st.message()));
  }
  return w;
}

/// A handle on a cached matrix that callers may move into a response or the store: host bytes
/// are copied (encoding swaps them out of the string); device memory is shared, since nothing
/// writes a result in place.
Matrix detach(const Matrix& m) {
  if (!m.on_host()) return m;
  return Matrix{m.desc, std::make_shared<std::string>(*m.data), nullptr};
}

ApspRun from_cache(const CachedApsp& r, bool next_hop) {
  ApspRun run;
  run.vertex_ids = r.vertex_ids;
  run.out.distances = detach(r.distances);
  if (next_hop) run.out.next_hop = detach(*r.next_hop);
  return run;
}

/// Caches a result of version `version` of a stored graph.
void remember(const std::string& graph_id, std::uint64_t version, const ApspRun& run,
              ApspCache& cache) {
  CachedApsp r;
  r.version = version;
  r.vertex_ids = run.vertex_ids;
  r.distances = detach(run.out.distances);
  if (run.out.next_hop) r.next_hop = detach(*run.out.next_hop);
  cache.put(graph_id, std::move(r));
}

/// A stored graph's weight matrix built on the device from its copy (DeviceGraphMirror), or
/// none: then the host densifies it, which also names what the device path refuses (a graph
/// too large for a dense matrix, an edge weight beyond f32).
std::optional<MirrorDense> dense_on_device(const std::string& graph_key, OpEnv& env) {
  absl::StatusOr<GraphInfo> info = env.graphs.info(graph_key);
  if (!info.ok() || info->num_vertices == 0) return std::nullopt;
  const std::uint64_t n = info->num_vertices;
  if (n > env.limits.max_matrix_elements / n) return std::nullopt;
  absl::StatusOr<MirrorDense> dense = env.graph_mirror->dense_weights(graph_key);
  if (!dense.ok()) return std::nullopt;
  return *std::move(dense);
}

/// Brings a cached result up to date on the backend (ApspCache::Outcome::kUpdate) and caches
/// the new one.
absl::StatusOr<ApspRun> update_cached(const std::string& graph_key, std::uint64_t version,
                                      ApspCache::Answer answer, bool next_hop, OpEnv& env,
                                      Backend& backend, JobContext& job, BeforeApsp before_run) {
  const CachedApsp& base = *answer.result;
  const auto n = static_cast<std::int64_t>(answer.vertex_ids.size());
  GC_ASSIGN_OR_RETURN(const bool keep, before_run(n, DType::kF32));
  // The new result stays where the backend computes it (the cache keeps it there); placement
  // copies to the host what goes into the response.
  job.results_stay_on_server = true;
  const kernels::ApspUpdateShape shape{static_cast<std::int64_t>(base.vertex_ids.size()), n,
                                       base.next_hop.has_value()};
  ApspOutput cached{base.distances, base.next_hop, {}};
  GC_ASSIGN_OR_RETURN(ApspOutput updated, backend.apsp_add_edges(cached, shape, answer.edges, job));
  job.results_stay_on_server = keep;
  if (updated.info.negative_cycle) {
    return negative_cycle_error(
        static_cast<std::int64_t>(answer.vertex_ids[updated.info.cycle_vertex]));
  }
  ApspRun run;
  run.vertex_ids = std::move(answer.vertex_ids);
  run.out.distances = std::move(updated.distances);
  if (updated.next_hop) run.out.next_hop = std::move(updated.next_hop);
  remember(graph_key, version, run, *env.apsp_cache);
  if (!next_hop) run.out.next_hop.reset();
  return run;
}

/// ShortestPath of a stored graph: one SSSP from the source over the graph in CSR form, with no
/// APSP (O(m) work and memory instead of O(n^3) and O(n^2)), then the parents walked back from
/// the target. Only negative cycles reachable from the source matter (others cannot shorten a
/// path from it).
absl::StatusOr<ShortestPathResult> stored_graph_path(const std::string& graph_key,
                                                     const std::string& graph_id, std::int64_t s,
                                                     std::int64_t t, OpEnv& env, Backend& backend,
                                                     JobContext& job) {
  GC_ASSIGN_OR_RETURN(const SsspRun run,
                      run_stored_sssp(graph_key, graph_id, s, "source", env, backend, job, t));
  const std::vector<std::uint64_t>& ids = run.vertex_ids;
  const SsspOutput& out = run.out;
  const auto n = static_cast<std::int64_t>(ids.size());
  GC_ASSIGN_OR_RETURN(const std::int64_t si, row_of_vertex(ids, s, "source"));
  GC_ASSIGN_OR_RETURN(const std::int64_t ti, row_of_vertex(ids, t, "target"));
  ShortestPathResult result;
  const float d = out.dist[ti];
  result.reachable = std::isfinite(d);
  if (!result.reachable) return result;
  result.length = d;
  for (std::int64_t at = ti, steps = 0;; at = out.parent[at], ++steps) {
    if (at < 0 || at >= n || steps > n) {
      return absl::InternalError(absl::StrCat("shortest path from ", s, " to ", t,
                                              ": the parent pointers do not lead back (at row ", at,
                                              ")"));
    }
    result.vertices.push_back(static_cast<std::int64_t>(ids[at]));
    if (at == si) break;
  }
  std::reverse(result.vertices.begin(), result.vertices.end());
  return result;
}

}  // namespace

absl::Status check_edge_list_lengths(const EdgeListInput& e, const std::string& field) {
  if (e.src.size() != e.dst.size() || e.src.size() != e.weight.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": src, dst and weight have ", e.src.size(), ", ", e.dst.size(),
                     " and ", e.weight.size(), " entries; they must be equal"));
  }
  return absl::OkStatus();
}

absl::Status negative_cycle_error(std::int64_t vertex, bool from_source) {
  return absl::FailedPreconditionError(absl::StrCat(
      "the graph has a negative cycle through vertex ", vertex,
      from_source ? ", reachable from the source" : "", "; shortest paths are undefined"));
}

absl::Status admit_apsp(std::int64_t n, DType dtype, bool next_hop, const std::string& what,
                        const OpEnv& env) {
  const std::uint64_t cells =
      mul_bytes(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(n));
  const std::uint64_t value = kernels::dtype_size(dtype);
  // Weights and distances; i32 may run on 64-bit copies. Next hops: their plane, and scratch for
  // the larger of the fused kernel's hop counts and the candidate first hops (8-byte keys, up to
  // kApspNextHopCandidates per row) of next hops from the distances.
  std::uint64_t per_cell = 2 * value;
  if (dtype == DType::kI32) per_cell += 8;
  if (next_hop) per_cell += sizeof(std::int32_t);
  std::uint64_t bytes = mul_bytes(cells, per_cell);
  if (next_hop) {
    const auto rows = static_cast<std::uint64_t>(n);
    const std::uint64_t keys =
        mul_bytes(rows, 8 * std::min<std::uint64_t>(rows, kernels::kApspNextHopCandidates));
    bytes = add_bytes(bytes, std::max(mul_bytes(cells, sizeof(std::int32_t)), keys));
  }
  return admit(bytes, absl::StrCat(what, " (APSP of ", n, " vertices)"), env.limits,
               /*on_device=*/true);
}

absl::Status admit_apsp_source(const ApspSource& source, bool next_hop, const OpEnv& env) {
  if (source.dense) {
    return admit_apsp(source.dense->desc.rows, source.dense->desc.dtype, next_hop, "dense", env);
  }
  if (source.edges) {
    return admit_apsp(source.edges->num_vertices, source.edges->dtype, next_hop, "edges", env);
  }
  // A stored graph: checked at its size now, and again on the worker before densifying.
  auto info = env.graphs.info(source.graph_key);
  if (!info.ok()) return absl::OkStatus();  // NOT_FOUND is reported where the graph is read
  return admit_apsp(static_cast<std::int64_t>(info->num_vertices), DType::kF32, next_hop,
                    absl::StrCat("graph ", quote_id(source.graph_id)), env);
}

absl::StatusOr<ApspSource> take_apsp_source(GraphInput graph, const std::string& prefix, OpEnv& env,
                                            const Caller& caller) {
  ApspSource src;
  if (auto* dense = std::get_if<MatrixInput>(&graph)) {
    GC_ASSIGN_OR_RETURN(Matrix m, take_matrix(std::move(*dense), prefix + "dense", env.limits));
    GC_RETURN_IF_ERROR(check_square(m.desc, prefix + "dense"));
    src.dense = std::move(m);
    return src;
  }
  if (auto* ref = std::get_if<RefInput>(&graph)) {
    GC_ASSIGN_OR_RETURN(Matrix m, env.matrices.read(caller.tenant, ref->id, ref->release,
                                                    (prefix + "dense_ref.id").c_str()));
    GC_RETURN_IF_ERROR(check_square(m.desc, prefix + "dense_ref"));
    src.dense = std::move(m);
    return src;
  }
  if (auto* e = std::get_if<EdgeListInput>(&graph)) {
    const std::string f = prefix + "edges";
    if (e->num_vertices < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(f, ".num_vertices = ", e->num_vertices, " is negative"));
    }
    GC_RETURN_IF_ERROR(check_edge_list_lengths(*e, f));
    GC_ASSIGN_OR_RETURN(const MatrixDesc desc,
                        check_desc(1, e->num_vertices, e->num_vertices, e->dtype, f, env.limits));
    GC_RETURN_IF_ERROR(check_square(desc, f));
    src.edges = std::move(*e);
    return src;
  }
  if (auto* g = std::get_if<GraphIdInput>(&graph)) {
    if (g->graph_id.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "graph_id is empty"));
    }
    if (!GraphStore::validate_graph_id(g->graph_id).ok()) {
      return absl::NotFoundError(absl::StrCat("graph ", quote_id(g->graph_id), " not found"));
    }
    src.graph_key = graph_key(caller, g->graph_id);
    src.graph_id = std::move(g->graph_id);
    return src;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(prefix, "graph is missing: set dense, dense_ref, edges or graph_id"));
}

absl::StatusOr<ApspRun> run_apsp(ApspSource source, bool next_hop, OpEnv& env, Backend& backend,
                                 JobContext& job, BeforeApsp before_run) {
  ApspRun run;
  Matrix weights;
  std::string field = "dense";
  std::optional<std::uint64_t> cache_version;  // of the stored graph a fresh result is of
  if (source.dense) {
    weights = *std::move(source.dense);
  } else if (source.edges) {
    field = "edges";
    GC_ASSIGN_OR_RETURN(weights, densify_edges(*source.edges));
  } else {
    field = absl::StrCat("graph ", source.graph_id);
    GC_RETURN_IF_ERROR(admit_apsp_source(source, next_hop, env));
    if (env.apsp_cache != nullptr) {
      GC_ASSIGN_OR_RETURN(const GraphInfo info, env.graphs.info(source.graph_key));
      ApspCache::Answer answer = env.apsp_cache->lookup(source.graph_key, info.version, next_hop);
      if (answer.outcome == ApspCache::Outcome::kHit) {
        ApspRun hit = from_cache(*answer.result, next_hop);
        GC_RETURN_IF_ERROR(before_run(hit.out.distances.desc.rows, DType::kF32).status());
        return hit;
      }
      if (answer.outcome == ApspCache::Outcome::kUpdate) {
        return update_cached(source.graph_key, info.version, std::move(answer), next_hop, env,
                             backend, job, before_run);
      }
    }
    std::optional<MirrorDense> on_device;
    if (env.graph_mirror != nullptr) on_device = dense_on_device(source.graph_key, env);
    if (on_device) {
      if (env.apsp_cache != nullptr) cache_version = on_device->version;
      weights = std::move(on_device->weights);
      run.vertex_ids = std::move(on_device->vertex_ids);
    } else {
      GC_ASSIGN_OR_RETURN(DenseGraph dense, env.graphs.to_dense(source.graph_key, DType::kF32,
                                                                env.limits.max_matrix_elements));
      if (env.apsp_cache != nullptr) cache_version = dense.version;
      const auto n = static_cast<std::int64_t>(dense.vertex_ids.size());
      weights = Matrix{MatrixDesc{DType::kF32, 1, n, n},
                       std::make_shared<std::string>(std::move(dense.weights)), nullptr};
      run.vertex_ids = std::move(dense.vertex_ids);
    }
  }
  GC_RETURN_IF_ERROR(check_weights(backend, weights, field));
  GC_ASSIGN_OR_RETURN(const bool keep, before_run(weights.desc.rows, weights.desc.dtype));
  // A result the cache keeps stays where the backend computes it; placement copies to the host
  // what goes into the response.
  job.results_stay_on_server = keep || cache_version.has_value();

  const kernels::ApspShape shape{weights.desc.rows, weights.desc.dtype, next_hop};
  GC_ASSIGN_OR_RETURN(run.out, backend.apsp(weights, shape, job));
  job.results_stay_on_server = keep;
  if (run.out.info.negative_cycle) {
    const std::int64_t v = run.out.info.cycle_vertex;
    return negative_cycle_error(
        run.vertex_ids.empty() ? v : static_cast<std::int64_t>(run.vertex_ids[v]));
  }
  if (run.out.info.out_of_range) {
    const auto id = [&](std::int64_t i) {
      return run.vertex_ids.empty() ? i : static_cast<std::int64_t>(run.vertex_ids[i]);
    };
    return absl::OutOfRangeError(absl::StrCat(
        "the shortest distance from vertex ", id(run.out.info.range_row), " to vertex ",
        id(run.out.info.range_col), " is ", run.out.info.range_value, ", outside the i32 range [",
        kernels::kI32MinDistance, ", ", kernels::kI32MaxDistance, "] (", kernels::kI32NoEdge,
        " means unreachable); send f32 weights for such graphs"));
  }
  if (cache_version) remember(source.graph_key, *cache_version, run, *env.apsp_cache);
  return run;
}

absl::StatusOr<ShortestPathResult> trace_path(const Matrix& dist, const Matrix& next,
                                              std::int64_t s, std::int64_t t,
                                              const std::vector<std::uint64_t>& vertex_ids) {
  const std::int64_t n = dist.desc.rows;
  if (dist.desc.batch != 1 || dist.desc.cols != n ||
      (dist.desc.dtype != DType::kF32 && dist.desc.dtype != DType::kI32)) {
    return absl::InvalidArgumentError(absl::StrCat("distances is ", describe(dist.desc),
                                                   "; expected n x n f32 or i32 from Apsp"));
  }
  if (next.desc.batch != 1 || next.desc.rows != n || next.desc.cols != n ||
      next.desc.dtype != DType::kI32) {
    return absl::InvalidArgumentError(absl::StrCat("next_hop is ", describe(next.desc),
                                                   "; expected ", n, "x", n, " i32 from Apsp"));
  }
  auto to_index = [&](std::int64_t v, const char* field) -> absl::StatusOr<std::int64_t> {
    if (!vertex_ids.empty()) {
      auto it =
          std::lower_bound(vertex_ids.begin(), vertex_ids.end(), static_cast<std::uint64_t>(v));
      if (v < 0 || it == vertex_ids.end() || *it != static_cast<std::uint64_t>(v)) {
        return absl::NotFoundError(absl::StrCat(field, " = ", v, ": no such vertex in the graph"));
      }
      return it - vertex_ids.begin();
    }
    if (v < 0 || v >= n) {
      return absl::InvalidArgumentError(absl::StrCat(field, " = ", v, " is outside 0..", n - 1,
                                                     " (the graph has ", n, " vertices)"));
    }
    return v;
  };
  GC_ASSIGN_OR_RETURN(const std::int64_t si, to_index(s, "source"));
  GC_ASSIGN_OR_RETURN(const std::int64_t ti, to_index(t, "target"));

  ShortestPathResult out;
  const std::int64_t at = si * n + ti;
  if (dist.desc.dtype == DType::kF32) {
    const float d = dist.as<float>()[at];
    out.reachable = std::isfinite(d);
    out.length = d;
  } else {
    const std::int32_t d = dist.as<std::int32_t>()[at];
    out.reachable = d != kernels::kI32NoEdge;
    out.length = d;
  }
  if (!out.reachable) {
    out.length = 0;
    return out;
  }
  const std::int32_t* nx = next.as<std::int32_t>();
  std::int64_t u = si;
  auto report = [&](std::int64_t idx) {
    out.vertices.push_back(vertex_ids.empty() ? idx : static_cast<std::int64_t>(vertex_ids[idx]));
  };
  report(u);
  for (std::int64_t steps = 0; u != ti; ++steps) {
    const std::int32_t v = nx[u * n + ti];
    if (v < 0 || v >= n || steps >= n) {
      return absl::FailedPreconditionError(
          absl::StrCat("next_hop does not lead from ", s, " to ", t, " (at vertex ", u,
                       "); it does not belong to these distances"));
    }
    u = v;
    report(u);
  }
  return out;
}

absl::StatusOr<PreparedOp> prepare_apsp(ApspRequest request, OpEnv& env, const Caller& caller) {
  GC_ASSIGN_OR_RETURN(ApspSource source, take_apsp_source(std::move(request.graph),
                                                          request.field_prefix, env, caller));
  GC_RETURN_IF_ERROR(admit_apsp_source(source, request.next_hop, env));
  return PreparedOp{
      "Apsp",
      [source = std::move(source), next_hop = request.next_hop, output = request.output, &env,
       caller](Backend& backend, JobContext& job) mutable -> absl::StatusOr<OpResult> {
        std::optional<ResultPlan> plan;
        auto before_run = [&](std::int64_t n, DType dtype) -> absl::StatusOr<bool> {
          std::vector<ResultPlan::Output> outputs = {{MatrixDesc{dtype, 1, n, n}, "distances"}};
          if (next_hop) outputs.push_back({MatrixDesc{DType::kI32, 1, n, n}, "next_hop"});
          GC_ASSIGN_OR_RETURN(
              plan, ResultPlan::make(output, std::move(outputs), env, env.limits, caller));
          return plan->keeps_any();
        };
        GC_ASSIGN_OR_RETURN(ApspRun run,
                            run_apsp(std::move(source), next_hop, env, backend, job, before_run));
        ApspResult result;
        GC_ASSIGN_OR_RETURN(result.distances,
                            plan->place(0, std::move(run.out.distances), backend));
        if (run.out.next_hop) {
          GC_ASSIGN_OR_RETURN(result.next_hop,
                              plan->place(1, *std::move(run.out.next_hop), backend));
        }
        return result;
      }};
}

absl::StatusOr<PreparedOp> prepare_shortest_path(ShortestPathRequest request, OpEnv& env,
                                                 const Caller& caller) {
  const std::int64_t s = request.source, t = request.target;
  if (auto* stored = std::get_if<StoredApspInput>(&request.from)) {
    // Answered from matrices an earlier Apsp call stored: no recomputation.
    GC_ASSIGN_OR_RETURN(
        Matrix dist, env.matrices.get(caller.tenant, stored->distances_id, "stored.distances.id"));
    GC_ASSIGN_OR_RETURN(Matrix next,
                        env.matrices.get(caller.tenant, stored->next_hop_id, "stored.next_hop.id"));
    return PreparedOp{"ShortestPath",
                      [s, t, dist = std::move(dist), next = std::move(next)](
                          Backend& backend, JobContext&) mutable -> absl::StatusOr<OpResult> {
                        GC_RETURN_IF_ERROR(backend.ensure_on_host(dist));
                        GC_RETURN_IF_ERROR(backend.ensure_on_host(next));
                        return trace_path(dist, next, s, t, {});
                      }};
  }
  auto* graph = std::get_if<ApspRequest>(&request.from);
  if (graph == nullptr) {
    return absl::InvalidArgumentError("from is missing: set graph or stored");
  }
  GC_ASSIGN_OR_RETURN(ApspSource source,
                      take_apsp_source(std::move(graph->graph), "graph.", env, caller));
  if (!source.graph_key.empty()) {
    return PreparedOp{"ShortestPath",
                      [s, t, key = source.graph_key, id = source.graph_id, &env](
                          Backend& backend, JobContext& job) -> absl::StatusOr<OpResult> {
                        return stored_graph_path(key, id, s, t, env, backend, job);
                      }};
  }
  GC_RETURN_IF_ERROR(admit_apsp_source(source, /*next_hop=*/true, env));
  return PreparedOp{
      "ShortestPath",
      [s, t, source = std::move(source), &env](
          Backend& backend, JobContext& job) mutable -> absl::StatusOr<OpResult> {
        auto host_results = [](std::int64_t, DType) -> absl::StatusOr<bool> { return false; };
        GC_ASSIGN_OR_RETURN(ApspRun run, run_apsp(std::move(source), /*next_hop=*/true, env,
                                                  backend, job, host_results));
        return trace_path(run.out.distances, *run.out.next_hop, s, t, run.vertex_ids);
      }};
}

}  // namespace gcompute::server::ops
