// SPDX-License-Identifier: Apache-2.0
// Sssp, and the single-source run that ShortestPath of a stored graph shares with it.
#include "ops/sssp.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/quote.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "ops/admission.hpp"
#include "ops/apsp.hpp"
#include "ops/graph_mirror.hpp"
#include "ops/placement.hpp"

namespace gcompute::server::ops {
namespace {

/// RESOURCE_EXHAUSTED when the graph's arrays, the distances and parents and the kernels'
/// per-vertex words would take more than one request may.
absl::Status admit_sssp(std::int64_t n, std::int64_t m, const std::string& what,
                        const Limits& limits) {
  const std::uint64_t bytes = add_bytes(mul_bytes(static_cast<std::uint64_t>(n), 8 + 8 + 24),
                                        mul_bytes(static_cast<std::uint64_t>(m), 8));
  return admit(bytes,
               absl::StrCat(what, " (shortest paths from one vertex over ", n, " vertices and ", m,
                            " edges)"),
               limits, /*on_device=*/true);
}

/// Checks an edge list's fields for Sssp (f32 weights); `f` names it ("edges").
absl::Status check_edges(const EdgeListInput& e, const std::string& f) {
  if (e.num_vertices <= 0 || e.num_vertices > kernels::kSsspMaxVertices) {
    return absl::InvalidArgumentError(absl::StrCat(f, ".num_vertices = ", e.num_vertices,
                                                   " is outside 1..", kernels::kSsspMaxVertices));
  }
  if (e.dtype != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat(f, ".dtype = ", kernels::dtype_name(e.dtype), "; Sssp weights are f32"));
  }
  GC_RETURN_IF_ERROR(check_edge_list_lengths(e, f));
  const std::int64_t n = e.num_vertices;
  for (std::size_t i = 0; i < e.src.size(); ++i) {
    for (const auto& [name, v] : {std::pair{".src", e.src[i]}, std::pair{".dst", e.dst[i]}}) {
      if (v < 0 || v >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat(f, name, "[", i, "] = ", v, " is outside 0..", n - 1));
      }
    }
    const double w = e.weight[i];
    constexpr double kMax = std::numeric_limits<float>::max();
    if (std::isnan(w) || w == -std::numeric_limits<double>::infinity() ||
        (std::isfinite(w) && std::abs(w) > kMax)) {
      return absl::InvalidArgumentError(absl::StrCat(
          f, ".weight[", i, "] = ", w, "; weights must be f32 numbers or +inf (no edge)"));
    }
  }
  return absl::OkStatus();
}

/// The edge list in CSR form (a counting sort by source; parallel edges kept, the kernels
/// take the least).
CsrGraph csr_of_edges(const EdgeListInput& e) {
  CsrGraph g;
  const auto n = static_cast<std::size_t>(e.num_vertices);
  g.row_offsets.assign(n + 1, 0);
  for (std::int64_t s : e.src) ++g.row_offsets[static_cast<std::size_t>(s) + 1];
  for (std::size_t v = 0; v < n; ++v) g.row_offsets[v + 1] += g.row_offsets[v];
  std::vector<std::uint64_t> next(g.row_offsets.begin(), g.row_offsets.end() - 1);
  g.cols.resize(e.src.size());
  g.weights.resize(e.src.size());
  for (std::size_t i = 0; i < e.src.size(); ++i) {
    const std::uint64_t at = next[static_cast<std::size_t>(e.src[i])]++;
    g.cols[at] = static_cast<std::uint32_t>(e.dst[i]);
    g.weights[at] = static_cast<float>(e.weight[i]);
  }
  return g;
}

/// Runs the backend over `csr`; `ids` maps rows to vertex ids for the error (empty: rows).
absl::StatusOr<SsspOutput> run_csr(const CsrGraph& csr, std::int64_t n, std::int64_t source_row,
                                   const std::vector<std::uint64_t>& ids, Backend& backend,
                                   JobContext& job) {
  const kernels::CsrView view{n, static_cast<std::int64_t>(csr.cols.size()), csr.row_offsets.data(),
                              csr.cols.data(), csr.weights.data()};
  GC_ASSIGN_OR_RETURN(SsspOutput out, backend.sssp(view, source_row, job));
  if (out.info.negative_cycle) {
    const std::int64_t v = out.info.cycle_vertex;
    return negative_cycle_error(ids.empty() ? v : static_cast<std::int64_t>(ids[v]),
                                /*from_source=*/true);
  }
  return out;
}

/// Whether row i is vertex i for every row (then the response carries no ids).
bool rows_are_ids(const std::vector<std::uint64_t>& ids) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != i) return false;
  }
  return true;
}

/// Bytes the vertex ids take in a response at most (a varint of up to 10 bytes each).
std::uint64_t vertex_id_bytes(const std::vector<std::uint64_t>& ids) {
  return mul_bytes(ids.size(), 10) + 16;
}

template <class T>
absl::StatusOr<Matrix> row_matrix(const std::vector<T>& values, DType dtype) {
  GC_ASSIGN_OR_RETURN(
      Matrix m, allocate_matrix(MatrixDesc{dtype, 1, 1, static_cast<std::int64_t>(values.size())}));
  std::memcpy(m.mutable_bytes(), values.data(), values.size() * sizeof(T));
  return m;
}

}  // namespace

absl::StatusOr<std::int64_t> row_of_vertex(const std::vector<std::uint64_t>& vertex_ids,
                                           std::int64_t v, const char* field) {
  auto it = std::lower_bound(vertex_ids.begin(), vertex_ids.end(), static_cast<std::uint64_t>(v));
  if (v < 0 || it == vertex_ids.end() || *it != static_cast<std::uint64_t>(v)) {
    return absl::NotFoundError(absl::StrCat(field, " = ", v, ": no such vertex in the graph"));
  }
  return it - vertex_ids.begin();
}

absl::StatusOr<SsspRun> run_stored_sssp(const std::string& graph_key, const std::string& graph_id,
                                        std::int64_t source, const char* source_field, OpEnv& env,
                                        Backend& backend, JobContext& job,
                                        std::optional<std::int64_t> target) {
  if (env.graph_mirror != nullptr && source >= 0) {
    // On the device copy: the CSR is built there, only the results come back.
    // The check runs under the mirror's lock: it must not take the store's (whose writers
    // call the mirror), so the edge count is read first.
    absl::StatusOr<GraphInfo> info = env.graphs.info(graph_key);
    const std::int64_t edges = info.ok() ? static_cast<std::int64_t>(info->num_edges) : 0;
    absl::Status refused;  // the request's own fault, found before the search
    const auto check = [&](const std::vector<std::uint64_t>& ids) -> absl::Status {
      refused = row_of_vertex(ids, source, source_field).status();
      if (refused.ok() && target) refused = row_of_vertex(ids, *target, "target").status();
      if (refused.ok()) {
        refused = admit_sssp(static_cast<std::int64_t>(ids.size()), edges,
                             absl::StrCat("graph ", quote_id(graph_id)), env.limits);
      }
      return refused;
    };
    absl::StatusOr<MirrorSssp> found = env.graph_mirror->sssp(
        graph_key, static_cast<std::uint64_t>(source), job.stop_token(), check);
    if (!refused.ok()) return refused;
    if (found.ok()) {
      job.device = found->where;
      job.times.compute_seconds += found->seconds;
      if (found->info.negative_cycle) {
        return negative_cycle_error(found->info.cycle_vertex, /*from_source=*/true);
      }
      SsspRun run;
      run.out.dist = std::move(found->dist);
      run.out.parent = std::move(found->parent);
      run.out.info = found->info;
      run.vertex_ids = std::move(found->vertex_ids);
      return run;
    }
    if (found.status().code() == absl::StatusCode::kCancelled ||
        found.status().code() == absl::StatusCode::kDeadlineExceeded) {
      return found.status();
    }
    // Otherwise (no copy, a weight beyond f32, no device memory): the host path, which names
    // what it refuses.
  }
  GC_ASSIGN_OR_RETURN(CsrGraph csr, env.graphs.to_csr(graph_key, env.limits.max_matrix_elements));
  const auto n = static_cast<std::int64_t>(csr.vertex_ids.size());
  GC_ASSIGN_OR_RETURN(const std::int64_t row, row_of_vertex(csr.vertex_ids, source, source_field));
  if (target) {
    GC_RETURN_IF_ERROR(row_of_vertex(csr.vertex_ids, *target, "target").status());
  }
  GC_RETURN_IF_ERROR(admit_sssp(n, static_cast<std::int64_t>(csr.cols.size()),
                                absl::StrCat("graph ", quote_id(graph_id)), env.limits));
  SsspRun run;
  GC_ASSIGN_OR_RETURN(run.out, run_csr(csr, n, row, csr.vertex_ids, backend, job));
  run.vertex_ids = std::move(csr.vertex_ids);
  return run;
}

absl::StatusOr<PreparedOp> prepare_sssp(SsspRequest request, OpEnv& env, const Caller& caller) {
  const std::int64_t source = request.source;
  std::optional<EdgeListInput> edges;
  std::string key, graph_id;
  if (auto* e = std::get_if<EdgeListInput>(&request.graph)) {
    GC_RETURN_IF_ERROR(check_edges(*e, "edges"));
    if (source < 0 || source >= e->num_vertices) {
      return absl::InvalidArgumentError(
          absl::StrCat("source = ", source, " is outside 0..", e->num_vertices - 1));
    }
    GC_RETURN_IF_ERROR(
        admit_sssp(e->num_vertices, static_cast<std::int64_t>(e->src.size()), "edges", env.limits));
    edges = std::move(*e);
  } else if (std::holds_alternative<GraphIdInput>(request.graph)) {
    GC_ASSIGN_OR_RETURN(ApspSource src,
                        take_apsp_source(std::move(request.graph), "", env, caller));
    key = std::move(src.graph_key);
    graph_id = std::move(src.graph_id);
  } else {
    return absl::InvalidArgumentError("graph is missing: set edges or graph_id");
  }
  return PreparedOp{
      "Sssp",
      [source, edges = std::move(edges), key = std::move(key), graph_id = std::move(graph_id),
       output = request.output, &env,
       caller](Backend& backend, JobContext& job) mutable -> absl::StatusOr<OpResult> {
        SsspRun run;
        if (edges) {
          const CsrGraph csr = csr_of_edges(*edges);
          GC_ASSIGN_OR_RETURN(run.out, run_csr(csr, edges->num_vertices, source, {}, backend, job));
        } else {
          GC_ASSIGN_OR_RETURN(
              run, run_stored_sssp(key, graph_id, source, "source", env, backend, job, {}));
          if (rows_are_ids(run.vertex_ids)) run.vertex_ids.clear();
        }
        const auto n = static_cast<std::int64_t>(run.out.dist.size());
        // The ids travel inline beside the results: their bytes come off the message budget.
        Limits limits = env.limits;
        const std::uint64_t id_bytes = vertex_id_bytes(run.vertex_ids);
        if (!run.vertex_ids.empty() &&
            add_bytes(id_bytes, limits.response_overhead_bytes) > limits.max_message_bytes) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "the ", n, " vertex ids of graph ", quote_id(graph_id),
              " do not fit in one response under the max message size (", limits.max_message_bytes,
              " bytes); only a graph whose vertices are 0..n-1 can be answered at this size"));
        }
        if (!run.vertex_ids.empty()) limits.response_overhead_bytes += id_bytes;
        GC_ASSIGN_OR_RETURN(ResultPlan plan,
                            ResultPlan::make(output,
                                             {{MatrixDesc{DType::kF32, 1, 1, n}, "distances"},
                                              {MatrixDesc{DType::kI32, 1, 1, n}, "parents"}},
                                             env, limits, caller));
        SsspResult result;
        result.reachable = std::count_if(run.out.dist.begin(), run.out.dist.end(),
                                         [](float d) { return std::isfinite(d); });
        GC_ASSIGN_OR_RETURN(Matrix dist, row_matrix(run.out.dist, DType::kF32));
        GC_ASSIGN_OR_RETURN(Matrix parents, row_matrix(run.out.parent, DType::kI32));
        GC_ASSIGN_OR_RETURN(result.distances, plan.place(0, std::move(dist), backend));
        GC_ASSIGN_OR_RETURN(result.parents, plan.place(1, std::move(parents), backend));
        result.vertex_ids = std::move(run.vertex_ids);
        return result;
      }};
}

}  // namespace gcompute::server::ops
