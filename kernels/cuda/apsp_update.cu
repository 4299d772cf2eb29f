// SPDX-License-Identifier: Apache-2.0
// cuda::apsp_add_edges: edge insertions into an APSP result.
//
// Distances only: the whole batch in one pass. With S the batch's endpoints, T its tails and H
// its heads (T, H within S), a shortest walk that uses a new edge runs i ~> t (old distances),
// t ~> h through S (old distances and new edges alternating), h ~> j (old distances). So:
//   1. G_S = old distances among S, lowered by the new edges; C = its closure (cuda::apsp on
//      |S| vertices; a negative diagonal there is a negative cycle through a new edge);
//   2. X[i][h] = min over t of D[i][t] + C[t][h]     (n x |H|, depth |T|);
//   3. D[i][j] = min(D[i][j], min over h of X[i][h] + D[h][j]) (n x n, depth |H|), with rows
//      D[h][:] gathered first so that the pass reads only old values.
// Every term is the length of a walk, so the result is the per-edge update's (cpu::
// apsp_add_edges) up to the order of float additions.
// With next hops: one pass per edge, the per-edge update itself, so that the next hops are the
// CPU's (whose paths are provably loop-free even through zero-weight cycles; the first-hop rule
// of a batched walk is not: measured, it looped on a graph with zero-weight cycles).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "detail/launch_helpers.hpp"
#include "detail/workspace_carver.hpp"
#include "gcompute/kernels/cuda/apsp.hpp"
#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::kernels::cuda {
namespace detail {

constexpr int kUpdateBk = 32;     ///< depth of one shared-memory stage of the pass
constexpr int kUpdateCols = 128;  ///< columns of a block's tile
constexpr int kUpdateThreads = 256;

__device__ __forceinline__ float inf_f32() {
  return __int_as_float(0x7f800000);
}

/// dist (n x n) = dist_old (n_old x n_old) with rows/columns n_old.. isolated; next likewise.
__global__ void grow_kernel(const float* __restrict__ d_old, const int* __restrict__ nx_old,
                            long long n_old, float* __restrict__ d, int* __restrict__ nx,
                            long long n) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < n * n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = e / n, j = e - i * n;
    const bool old = i < n_old && j < n_old;
    d[e] = old ? d_old[i * n_old + j] : (i == j ? 0.0f : inf_f32());
    if (nx != nullptr) nx[e] = old ? nx_old[i * n_old + j] : (i == j ? static_cast<int>(i) : -1);
  }
}

/// The old distances as the grown graph's (new vertices isolated), read in place, so that the
/// batched pass needs no copy of the old matrix: it reads this and writes the new one.
struct GrownView {
  const float* d;
  long long n_old;
  __device__ __forceinline__ float at(long long i, long long j) const {
    if (i < n_old && j < n_old) return d[i * n_old + j];
    return i == j ? 0.0f : inf_f32();
  }
};

/// G_S[a][b] = D[S[a]][S[b]].
__global__ void gather_s_kernel(GrownView d, const int* __restrict__ s_rows, int s,
                                float* __restrict__ gs) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       e < static_cast<long long>(s) * s; e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long a = e / s, b = e - a * s;
    gs[e] = d.at(s_rows[a], s_rows[b]);
  }
}

/// Lowers G_S by the new edges (in S indices), one thread per edge: the plan keeps one edge,
/// the lightest, per (tail, head) pair, so no two threads write one element.
__global__ void lower_by_edges_kernel(float* gs, int s, const int* __restrict__ ea,
                                      const int* __restrict__ eb, const float* __restrict__ ew,
                                      int count) {
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < count; e += gridDim.x * blockDim.x) {
    float& x = gs[static_cast<long long>(ea[e]) * s + eb[e]];
    x = fminf(x, ew[e]);
  }
}

/// X[i][c] = min over tails a of D[i][S[a]] + C[a][h_c]; inf for padding columns c >= h.
__global__ void tails_kernel(GrownView d, long long n, const int* __restrict__ s_rows, int s,
                             const int* __restrict__ tails, int t, const int* __restrict__ heads,
                             int h, int hp, const float* __restrict__ closure,
                             float* __restrict__ x) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < n * hp;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = e / hp;
    const int c = static_cast<int>(e - i * hp);
    float best = inf_f32();
    if (c < h) {
      const int hb = heads[c];
      for (int k = 0; k < t; ++k) {
        const int a = tails[k];
        best = fminf(best, d.at(i, s_rows[a]) + closure[static_cast<long long>(a) * s + hb]);
      }
    }
    x[e] = best;
  }
}

/// The per-edge update for u -> v of weight w (cpu::apsp_add_edges's), one block per row:
/// D[i][j] = min(D[i][j], D[i][u] + w + D[v][j]), next[i][j] = next[i][u] (v when i = u) where it
/// strictly improves. Column u and row v never improve (that needs a negative cycle through the
/// edge, D[v][u] + w < 0, which every block tests first and then leaves everything as it is),
/// so updating in place is safe. flags[0] != 0: an earlier edge closed a cycle; skip.
__global__ void insert_edge_kernel(float* __restrict__ d, int* __restrict__ nx, long long n,
                                   long long u, long long v, float w, int* flags) {
  if (*reinterpret_cast<volatile int*>(flags) != 0) return;
  if (d[v * n + u] + w < 0) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      flags[0] = 1;
      flags[1] = static_cast<int>(u);
    }
    return;
  }
  const float* row_v = d + v * n;
  for (long long i = blockIdx.x; i < n; i += gridDim.x) {
    const float diu = d[i * n + u];
    if (diu == inf_f32()) continue;
    const float via = diu + w;
    const int hop = i == u ? static_cast<int>(v) : nx[i * n + u];
    float* row_i = d + i * n;
    int* next_i = nx + i * n;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const float cand = via + row_v[j];
      if (cand < row_i[j]) {
        row_i[j] = cand;
        next_i[j] = hop;
      }
    }
  }
}

/// B[c][j] = D[S[heads[c]]][j] for c < h, inf for padding rows and columns j >= n (row stride
/// ldb, a multiple of kUpdateCols).
__global__ void gather_heads_kernel(GrownView d, long long n, const int* __restrict__ s_rows,
                                    const int* __restrict__ heads, int h, int hp, long long ldb,
                                    float* __restrict__ b) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < hp * ldb;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long c = e / ldb, j = e - c * ldb;
    b[e] = c < h && j < n ? d.at(s_rows[heads[c]], j) : inf_f32();
  }
}

/// D[i][j] = min(D_old[i][j], min_c X[i][c] + B[c][j]) into d (every element of n x n) on tiles
/// of (16 kRm) x 128 outputs, kRm x 8 a thread.
template <int kRm>
__global__ void __launch_bounds__(kUpdateThreads)
    heads_pass_kernel(GrownView old, float* __restrict__ d, long long n,
                      const float* __restrict__ x, int hp, const float* __restrict__ b,
                      long long ldb) {
  constexpr int kRows = 16 * kRm;
  __shared__ __align__(16) float as[kRows][kUpdateBk + 4];
  __shared__ __align__(16) float bs[kUpdateBk][kUpdateCols + 4];
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const long long r0 = static_cast<long long>(blockIdx.y) * kRows;
  const long long c0 = static_cast<long long>(blockIdx.x) * kUpdateCols;

  float c[kRm][8];
  auto col = [&](int jj) { return c0 + (jj < 4 ? tx * 4 + jj : 64 + tx * 4 + (jj - 4)); };
#pragma unroll
  for (int q = 0; q < kRm; ++q) {
    const long long i = r0 + ty * kRm + q;
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) {
      const long long j = col(jj);
      c[q][jj] = i < n && j < n ? old.at(i, j) : inf_f32();
    }
  }

  for (int kc = 0; kc < hp; kc += kUpdateBk) {
    // A: kRows x 32 from X (rows of hp floats, 16-byte aligned); B: 32 x 128 from B.
    for (int p = tid; p < kRows * (kUpdateBk / 4); p += kUpdateThreads) {
      const int r = p / (kUpdateBk / 4), q4 = (p % (kUpdateBk / 4)) * 4;
      const long long i = r0 + r;
      float4 v = make_float4(inf_f32(), inf_f32(), inf_f32(), inf_f32());
      if (i < n) v = *reinterpret_cast<const float4*>(x + i * hp + kc + q4);
      *reinterpret_cast<float4*>(&as[r][q4]) = v;
    }
    for (int p = tid; p < kUpdateBk * (kUpdateCols / 4); p += kUpdateThreads) {
      const int r = p / (kUpdateCols / 4), q4 = (p % (kUpdateCols / 4)) * 4;
      *reinterpret_cast<float4*>(&bs[r][q4]) =
          *reinterpret_cast<const float4*>(b + (kc + r) * ldb + c0 + q4);
    }
    __syncthreads();
#pragma unroll 4
    for (int k = 0; k < kUpdateBk; ++k) {
      float a[kRm];
#pragma unroll
      for (int q = 0; q < kRm; ++q) a[q] = as[ty * kRm + q][k];
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[k][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[k][64 + tx * 4]);
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int q = 0; q < kRm; ++q) {
#pragma unroll
        for (int jj = 0; jj < 8; ++jj) c[q][jj] = fminf(c[q][jj], a[q] + bv[jj]);
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int q = 0; q < kRm; ++q) {
    const long long i = r0 + ty * kRm + q;
    if (i >= n) continue;
#pragma unroll
    for (int jj = 0; jj < 8; ++jj) {
      const long long j = col(jj);
      if (j < n) d[i * n + j] = c[q][jj];
    }
  }
}

}  // namespace detail

namespace {

constexpr int kThreads = 256;

/// The batch in S indices: endpoints (rows), tails and heads (indices into S), edges.
struct UpdatePlan {
  std::vector<int> s_rows, tails, heads, ea, eb;
  std::vector<float> ew;
  int s() const { return static_cast<int>(s_rows.size()); }
  int t() const { return static_cast<int>(tails.size()); }
  int h() const { return static_cast<int>(heads.size()); }
  int hp() const { return (h() + detail::kUpdateBk - 1) / detail::kUpdateBk * detail::kUpdateBk; }
};

UpdatePlan make_plan(std::span<const GraphEdge> edges) {
  UpdatePlan p;
  for (const GraphEdge& e : edges) {
    p.s_rows.push_back(static_cast<int>(e.src));
    p.s_rows.push_back(static_cast<int>(e.dst));
  }
  std::sort(p.s_rows.begin(), p.s_rows.end());
  p.s_rows.erase(std::unique(p.s_rows.begin(), p.s_rows.end()), p.s_rows.end());
  auto index = [&](std::uint32_t row) {
    return static_cast<int>(std::lower_bound(p.s_rows.begin(), p.s_rows.end(), row) -
                            p.s_rows.begin());
  };
  // One entry per (tail, head) pair, the lightest of its edges: the pairs then lower G_S in
  // parallel without two threads writing one element.
  struct Lowering {
    int a, b;
    float w;
  };
  std::vector<Lowering> lowerings;
  lowerings.reserve(edges.size());
  for (const GraphEdge& e : edges) {
    lowerings.push_back({index(e.src), index(e.dst), e.weight});
    p.tails.push_back(lowerings.back().a);
    p.heads.push_back(lowerings.back().b);
  }
  std::sort(lowerings.begin(), lowerings.end(), [](const Lowering& x, const Lowering& y) {
    return x.a != y.a ? x.a < y.a : x.b != y.b ? x.b < y.b : x.w < y.w;
  });
  for (std::size_t i = 0; i < lowerings.size(); ++i) {
    if (i > 0 && lowerings[i].a == lowerings[i - 1].a && lowerings[i].b == lowerings[i - 1].b) {
      continue;  // heavier than the one kept
    }
    p.ea.push_back(lowerings[i].a);
    p.eb.push_back(lowerings[i].b);
    p.ew.push_back(lowerings[i].w);
  }
  for (std::vector<int>* v : {&p.tails, &p.heads}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  return p;
}

/// The plan a batch needs: none for an empty one or with next hops (the per-edge passes work
/// from the edges themselves and need only the flags).
UpdatePlan plan_for(const ApspUpdateShape& shape, std::span<const GraphEdge> edges) {
  return edges.empty() || shape.next_hop ? UpdatePlan{} : make_plan(edges);
}

/// The workspace's pieces; with a null base only the size. With next hops only the flags
/// (the per-edge passes need nothing else).
struct UpdateWorkspace {
  int* flags = nullptr;  ///< [0]: a negative cycle was found, [1]: its vertex
  int *s_rows = nullptr, *tails = nullptr, *heads = nullptr, *ea = nullptr, *eb = nullptr;
  float* ew = nullptr;
  float *gs = nullptr, *closure = nullptr;
  void* apsp_ws = nullptr;
  std::size_t apsp_ws_bytes = 0;
  float* x = nullptr;
  float* b = nullptr;
  long long ldb = 0;
  std::size_t bytes = 0;

  UpdateWorkspace(void* base, const UpdatePlan& p, const ApspUpdateShape& shape) {
    detail::WorkspaceCarver w(base);
    flags = w.take<int>(2);
    if (!shape.next_hop) {
      const long long s = p.s(), count = static_cast<long long>(p.ea.size());
      s_rows = w.take<int>(s);
      tails = w.take<int>(p.t());
      heads = w.take<int>(p.h());
      ea = w.take<int>(count);
      eb = w.take<int>(count);
      ew = w.take<float>(count);
      gs = w.take<float>(s * s);
      closure = w.take<float>(s * s);
      apsp_ws_bytes = apsp_workspace_bytes(ApspShape{s, DType::kF32, false});
      apsp_ws = w.take<unsigned char>(static_cast<long long>(apsp_ws_bytes));
      x = w.take<float>(shape.n * p.hp());
      ldb = (shape.n + detail::kUpdateCols - 1) / detail::kUpdateCols * detail::kUpdateCols;
      b = w.take<float>(p.hp() * ldb);
    }
    bytes = w.bytes();
  }
};

template <typename T>
absl::Status upload(T* dst, const std::vector<T>& src, cudaStream_t stream) {
  if (src.empty()) return absl::OkStatus();
  GC_CUDA_TRY(
      cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
  return absl::OkStatus();
}

/// The per-edge update for each edge in order, on dist/next in place; stops (on the device)
/// at the first edge that closes a negative cycle.
absl::StatusOr<ApspInfo> insert_one_by_one(const Context& ctx, float* dist, int* next, long long n,
                                           std::span<const GraphEdge> edges, int* flags) {
  const cudaStream_t stream = ctx.stream;
  GC_CUDA_TRY(cudaMemsetAsync(flags, 0, 2 * sizeof(int), stream));
  const unsigned blocks = static_cast<unsigned>(std::min<long long>(n, 8192));
  for (const GraphEdge& e : edges) {
    detail::insert_edge_kernel<<<blocks, kThreads, 0, stream>>>(dist, next, n, e.src, e.dst,
                                                                e.weight, flags);
    GC_CUDA_CHECK_LAUNCH("insert_edge_kernel");
  }
  int host_flags[2] = {0, 0};
  GC_CUDA_TRY(
      cudaMemcpyAsync(host_flags, flags, sizeof(host_flags), cudaMemcpyDeviceToHost, stream));
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  ApspInfo info;
  info.negative_cycle = host_flags[0] != 0;
  if (info.negative_cycle) info.cycle_vertex = host_flags[1];
  return info;
}

/// Distances only, a non-empty batch: the batched pass (see the file comment), reading the old
/// matrix in place and writing every element of the new one.
absl::StatusOr<ApspInfo> add_edges_batched(const Context& ctx, const float* dist_old,
                                           long long n_old, float* dist, long long n,
                                           const UpdatePlan& p, void* workspace) {
  const cudaStream_t stream = ctx.stream;
  const UpdateWorkspace w(workspace, p, ApspUpdateShape{n_old, n, false});
  const detail::GrownView old{dist_old, n_old};
  ApspInfo info;

  const int s = p.s(), hp = p.hp();
  if (absl::Status st = upload(w.s_rows, p.s_rows, stream); !st.ok()) return st;
  if (absl::Status st = upload(w.tails, p.tails, stream); !st.ok()) return st;
  if (absl::Status st = upload(w.heads, p.heads, stream); !st.ok()) return st;
  if (absl::Status st = upload(w.ea, p.ea, stream); !st.ok()) return st;
  if (absl::Status st = upload(w.eb, p.eb, stream); !st.ok()) return st;
  if (absl::Status st = upload(w.ew, p.ew, stream); !st.ok()) return st;

  // 1. The closure among the endpoints.
  const long long ss = static_cast<long long>(s) * s;
  detail::gather_s_kernel<<<detail::grid_1d(ss, kThreads), kThreads, 0, stream>>>(old, w.s_rows, s,
                                                                                  w.gs);
  GC_CUDA_CHECK_LAUNCH("gather_s_kernel");
  const long long pairs = static_cast<long long>(p.ea.size());
  detail::lower_by_edges_kernel<<<detail::grid_1d(pairs, kThreads), kThreads, 0, stream>>>(
      w.gs, s, w.ea, w.eb, w.ew, static_cast<int>(pairs));
  GC_CUDA_CHECK_LAUNCH("lower_by_edges_kernel");
  absl::StatusOr<ApspInfo> closed = apsp(
      ctx, w.gs, w.closure, nullptr, ApspShape{s, DType::kF32, false}, w.apsp_ws, w.apsp_ws_bytes);
  if (!closed.ok()) return closed.status();
  if (closed->negative_cycle) {
    info.negative_cycle = true;
    info.cycle_vertex = p.s_rows[static_cast<std::size_t>(closed->cycle_vertex)];
    return info;
  }

  // 2. Through the tails; 3. the pass over the matrix through the heads.
  detail::tails_kernel<<<detail::grid_1d(n * hp, kThreads), kThreads, 0, stream>>>(
      old, n, w.s_rows, s, w.tails, p.t(), w.heads, p.h(), hp, w.closure, w.x);
  GC_CUDA_CHECK_LAUNCH("tails_kernel");
  detail::gather_heads_kernel<<<detail::grid_1d(hp * w.ldb, kThreads), kThreads, 0, stream>>>(
      old, n, w.s_rows, w.heads, p.h(), hp, w.ldb, w.b);
  GC_CUDA_CHECK_LAUNCH("gather_heads_kernel");
  constexpr int kRm = 8;
  const dim3 grid(static_cast<unsigned>(w.ldb / detail::kUpdateCols),
                  static_cast<unsigned>((n + 16 * kRm - 1) / (16 * kRm)));
  detail::heads_pass_kernel<kRm>
      <<<grid, detail::kUpdateThreads, 0, stream>>>(old, dist, n, w.x, hp, w.b, w.ldb);
  GC_CUDA_CHECK_LAUNCH("heads_pass_kernel");
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  return info;
}

}  // namespace

std::size_t apsp_add_edges_workspace_bytes(const ApspUpdateShape& shape,
                                           std::span<const GraphEdge> edges) {
  if (!validate(shape).ok() || edges.empty()) return 0;
  return UpdateWorkspace(nullptr, plan_for(shape, edges), shape).bytes;
}

absl::StatusOr<ApspInfo> apsp_add_edges(const Context& ctx, const float* dist_old,
                                        const std::int32_t* next_old, float* dist,
                                        std::int32_t* next, const ApspUpdateShape& shape,
                                        std::span<const GraphEdge> edges, void* workspace,
                                        std::size_t workspace_bytes) {
  if (absl::Status s = validate(shape); !s.ok()) return s;
  const long long n = shape.n, n_old = shape.n_old;
  if (n > (std::int64_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrCat("apsp update: n=", n, " is too large"));
  }
  if ((n_old != 0 && dist_old == nullptr) || (n != 0 && dist == nullptr) ||
      (shape.next_hop && ((n_old != 0 && next_old == nullptr) || (n != 0 && next == nullptr)))) {
    return absl::InvalidArgumentError("apsp update: null dist or (with next_hop) next");
  }
  for (const GraphEdge& e : edges) {
    if (e.src >= n || e.dst >= n || e.weight != e.weight ||
        e.weight == -std::numeric_limits<float>::infinity()) {
      return absl::InvalidArgumentError(absl::StrCat("apsp update: edge ", e.src, " -> ", e.dst,
                                                     " of weight ", e.weight, " with n = ", n));
    }
  }
  // The plan (sorting the batch's endpoints) is made once here, to check the workspace and to
  // run (a caller sizing the workspace first makes its own).
  const UpdatePlan p = plan_for(shape, edges);
  const std::size_t need = edges.empty() ? 0 : UpdateWorkspace(nullptr, p, shape).bytes;
  if (workspace_bytes < need || (need != 0 && workspace == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("apsp update: workspace of ", workspace_bytes, " bytes, needs ", need));
  }
  const cudaStream_t stream = ctx.stream;
  ApspInfo info;
  if (n == 0) return info;
  int* nx = shape.next_hop ? next : nullptr;
  if (!shape.next_hop && !edges.empty())
    return add_edges_batched(ctx, dist_old, n_old, dist, n, p, workspace);
  if (n == n_old) {
    GC_CUDA_TRY(
        cudaMemcpyAsync(dist, dist_old, n * n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    if (nx != nullptr) {
      GC_CUDA_TRY(
          cudaMemcpyAsync(nx, next_old, n * n * sizeof(int), cudaMemcpyDeviceToDevice, stream));
    }
  } else {
    detail::grow_kernel<<<detail::grid_1d(n * n, kThreads), kThreads, 0, stream>>>(
        dist_old, shape.next_hop ? next_old : nullptr, n_old, dist, nx, n);
    GC_CUDA_CHECK_LAUNCH("grow_kernel");
  }
  if (edges.empty()) {
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    return info;
  }

  const UpdateWorkspace w(workspace, p, shape);
  return insert_one_by_one(ctx, dist, nx, n, edges, w.flags);
}

}  // namespace gcompute::kernels::cuda
