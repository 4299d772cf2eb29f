// SPDX-License-Identifier: Apache-2.0
#include "api/apsp_input.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "api/convert.hpp"
#include "gcompute/kernels/cpu/apsp.hpp"

namespace gcompute::server {
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
/// +-kI32MaxAbsWeight so that sums cannot overflow.
absl::Status check_weights(const Matrix& w, const std::string& field) {
  const std::int64_t n = w.desc.rows;
  if (w.desc.dtype == DType::kF32) {
    const float* p = w.as<float>();
    for (std::int64_t i = 0; i < n * n; ++i) {
      if (std::isnan(p[i]) || p[i] == -std::numeric_limits<float>::infinity()) {
        return absl::FailedPreconditionError(absl::StrCat(
            field, "[", i / n, "][", i % n, "] is ", p[i], "; weights must be finite or +inf"));
      }
    }
  } else {
    const std::int32_t* p = w.as<std::int32_t>();
    for (std::int64_t i = 0; i < n * n; ++i) {
      if (p[i] != kernels::kI32NoEdge &&
          (p[i] > kernels::kI32MaxAbsWeight || p[i] < -kernels::kI32MaxAbsWeight)) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, "[", i / n, "][", i % n, "] = ", p[i], " is outside +-",
                         kernels::kI32MaxAbsWeight, " (", kernels::kI32NoEdge, " means no edge)"));
      }
    }
  }
  return absl::OkStatus();
}

// ---- [graph persistence: APSP cache] docs/graphs.md, "Incremental APSP" ---------------

/// The cached (possibly incrementally updated) result for the graph as it is now, or
/// nullopt on a miss; `snap` gets the snapshot looked at, for caching the recomputed result.
absl::StatusOr<std::optional<ApspRun>> cached_apsp(const std::string& graph_id, bool next_hop,
                                                   ServiceContext& svc,
                                                   std::optional<GraphSnapshot>& snap) {
  auto got = svc.graphs.get(graph_id);
  if (!got.ok()) {
    if (absl::IsNotFound(got.status())) svc.apsp_cache->erase(graph_id);
    return got.status();
  }
  auto answer = svc.apsp_cache->lookup(*got, next_hop);
  if (!answer.ok()) return answer.status();
  if (answer->outcome == ApspCache::Outcome::kMiss) {
    snap = *std::move(got);
    return std::nullopt;
  }
  // Copies: the handlers move results into responses or the matrix store.
  const ApspResult& r = *answer->result;
  const auto n = static_cast<std::int64_t>(r.vertex_ids.size());
  ApspRun run;
  run.vertex_ids = r.vertex_ids;
  run.out.distances =
      Matrix{MatrixDesc{DType::kF32, 1, n, n},
             std::make_shared<std::string>(reinterpret_cast<const char*>(r.distances.data()),
                                           r.distances.size() * sizeof(float))};
  if (next_hop) {
    run.out.next_hop =
        Matrix{MatrixDesc{DType::kI32, 1, n, n},
               std::make_shared<std::string>(reinterpret_cast<const char*>(r.next_hop.data()),
                                             r.next_hop.size() * sizeof(std::int32_t))};
  }
  return run;
}

/// Caches a freshly computed result of `graph`. Failures only cost the cache entry.
void remember_apsp(GraphSnapshot graph, ApspRun& run, Backend& backend, ServiceContext& svc) {
  if (!backend.ensure_on_host(run.out.distances).ok()) return;
  if (run.out.next_hop && !backend.ensure_on_host(*run.out.next_hop).ok()) return;
  ApspResult r;
  r.version = graph.info.version;
  r.vertex_ids = run.vertex_ids;
  const std::string& d = *run.out.distances.data;
  r.distances.resize(d.size() / sizeof(float));
  std::memcpy(r.distances.data(), d.data(), r.distances.size() * sizeof(float));
  if (run.out.next_hop) {
    const std::string& nh = *run.out.next_hop->data;
    r.next_hop.resize(nh.size() / sizeof(std::int32_t));
    std::memcpy(r.next_hop.data(), nh.data(), r.next_hop.size() * sizeof(std::int32_t));
  }
  svc.apsp_cache->put(std::move(graph), std::move(r));
}

}  // namespace

absl::StatusOr<ApspSource> take_apsp_source(v1::ApspRequest* request, const std::string& prefix,
                                            ServiceContext& svc) {
  ApspSource src;
  switch (request->graph_case()) {
    case v1::ApspRequest::kDense: {
      auto m = take_matrix(request->mutable_dense(), prefix + "dense", svc.limits);
      if (!m.ok()) return m.status();
      if (auto st = check_square(m->desc, prefix + "dense"); !st.ok()) return st;
      src.dense = *std::move(m);
      return src;
    }
    case v1::ApspRequest::kDenseRef: {
      auto m = svc.matrices.get(request->dense_ref().id(), (prefix + "dense_ref.id").c_str());
      if (!m.ok()) return m.status();
      if (auto st = check_square(m->desc, prefix + "dense_ref"); !st.ok()) return st;
      src.dense = *std::move(m);
      return src;
    }
    case v1::ApspRequest::kEdges: {
      v1::EdgeList* e = request->mutable_edges();
      const std::string f = prefix + "edges";
      if (e->num_vertices() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(f, ".num_vertices = ", e->num_vertices(), " is negative"));
      }
      if (e->src_size() != e->dst_size() || e->src_size() != e->weight_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(f, ": src, dst and weight have ", e->src_size(), ", ", e->dst_size(),
                         " and ", e->weight_size(), " entries; they must be equal"));
      }
      const v1::DType dt = e->dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_F32 : e->dtype();
      auto desc = decode_desc(1, e->num_vertices(), e->num_vertices(), dt, f, svc.limits);
      if (!desc.ok()) return desc.status();
      if (auto st = check_square(*desc, f); !st.ok()) return st;
      src.from_edges = true;
      src.n = e->num_vertices();
      src.dtype = desc->dtype;
      src.src.assign(e->src().begin(), e->src().end());
      src.dst.assign(e->dst().begin(), e->dst().end());
      src.weight.assign(e->weight().begin(), e->weight().end());
      return src;
    }
    case v1::ApspRequest::kGraphId:
      src.graph_id = request->graph_id();
      if (src.graph_id.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(prefix, "graph_id is empty"));
      }
      return src;
    case v1::ApspRequest::GRAPH_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(prefix, "graph is missing: set dense, dense_ref, edges or graph_id"));
}

absl::StatusOr<ApspRun> run_apsp(ApspSource source, bool next_hop, ServiceContext& svc,
                                 Backend& backend, JobContext& job) {
  ApspRun run;
  Matrix weights;
  std::string field = "dense";
  std::optional<GraphSnapshot> cache_from;  // [APSP cache] the graph the result will be of
  if (source.dense) {
    weights = *std::move(source.dense);
    if (auto st = backend.ensure_on_host(weights); !st.ok()) return st;
  } else if (source.from_edges) {
    field = "edges";
    auto w = allocate_matrix(MatrixDesc{source.dtype, 1, source.n, source.n});
    if (!w.ok()) return w.status();
    const kernels::EdgeListView view{source.n, static_cast<std::int64_t>(source.src.size()),
                                     source.src.data(), source.dst.data(), source.weight.data()};
    if (auto st = kernels::cpu::edge_list_to_dense(view, source.dtype, w->mutable_bytes());
        !st.ok()) {
      return absl::Status(st.code(), absl::StrCat("edges: ", st.message()));
    }
    weights = *std::move(w);
  } else {
    field = absl::StrCat("graph ", source.graph_id);
    // [graph persistence: APSP cache] Reuse or incrementally update the last result.
    std::optional<GraphSnapshot> snap;
    if (svc.apsp_cache != nullptr) {
      auto cached = cached_apsp(source.graph_id, next_hop, svc, snap);
      if (!cached.ok() || cached->has_value()) {
        if (!cached.ok()) return cached.status();
        return **std::move(cached);
      }
    }
    auto dense = svc.graphs.to_dense(source.graph_id, DType::kF32, svc.limits.max_matrix_elements);
    if (!dense.ok()) return dense.status();
    // Cache only a result of the version the snapshot shows (a batch may come in between).
    if (snap && snap->info.version != dense->version) snap.reset();
    cache_from = std::move(snap);
    const auto n = static_cast<std::int64_t>(dense->vertex_ids.size());
    weights = Matrix{MatrixDesc{DType::kF32, 1, n, n},
                     std::make_shared<std::string>(std::move(dense->weights))};
    run.vertex_ids = std::move(dense->vertex_ids);
  }
  if (auto st = check_weights(weights, field); !st.ok()) return st;

  const kernels::ApspShape shape{weights.desc.rows, weights.desc.dtype, next_hop};
  auto out = backend.apsp(weights, shape, job);
  if (!out.ok()) return out.status();
  if (out->info.negative_cycle) {
    const std::int64_t v = out->info.cycle_vertex;
    return absl::FailedPreconditionError(
        absl::StrCat("the graph has a negative cycle through vertex ",
                     run.vertex_ids.empty() ? v : static_cast<std::int64_t>(run.vertex_ids[v]),
                     "; shortest paths are undefined"));
  }
  run.out = *std::move(out);
  if (cache_from) remember_apsp(*std::move(cache_from), run, backend, svc);
  return run;
}

absl::Status trace_path(const Matrix& dist, const Matrix& next, std::int64_t s, std::int64_t t,
                        const std::vector<std::uint64_t>& vertex_ids,
                        v1::ShortestPathResponse* out) {
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
  auto si = to_index(s, "source");
  if (!si.ok()) return si.status();
  auto ti = to_index(t, "target");
  if (!ti.ok()) return ti.status();

  const std::int64_t at = *si * n + *ti;
  bool reachable;
  double length;
  if (dist.desc.dtype == DType::kF32) {
    const float d = dist.as<float>()[at];
    reachable = std::isfinite(d);
    length = d;
  } else {
    const std::int32_t d = dist.as<std::int32_t>()[at];
    reachable = d != kernels::kI32NoEdge;
    length = d;
  }
  out->set_reachable(reachable);
  if (!reachable) return absl::OkStatus();
  out->set_length(length);
  const std::int32_t* nx = next.as<std::int32_t>();
  std::int64_t u = *si;
  auto report = [&](std::int64_t idx) {
    out->add_vertices(vertex_ids.empty() ? idx : static_cast<std::int64_t>(vertex_ids[idx]));
  };
  report(u);
  for (std::int64_t steps = 0; u != *ti; ++steps) {
    const std::int32_t v = nx[u * n + *ti];
    if (v < 0 || v >= n || steps >= n) {
      return absl::FailedPreconditionError(
          absl::StrCat("next_hop does not lead from ", s, " to ", t, " (at vertex ", u,
                       "); it does not belong to these distances"));
    }
    u = v;
    report(u);
  }
  return absl::OkStatus();
}

}  // namespace gcompute::server
