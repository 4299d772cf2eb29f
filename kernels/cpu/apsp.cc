// SPDX-License-Identifier: Apache-2.0
// Blocked Floyd-Warshall on the host.
//
// The matrix is cut into kBlock x kBlock tiles. Round kb (one per block row) runs the classic
// three phases: (1) the diagonal tile kb relaxes through its own vertices, (2) the tiles of
// block row and block column kb relax through them using the finished diagonal tile,
// (3) every other tile relaxes through block kb using its row/column tiles from phase 2.
// Tiles within phase 2 and within phase 3 are independent, so they are shared among worker
// threads that meet at a barrier between phases. The next-hop matrix is updated in the same
// pass: whenever going through k shortens i -> j, N[i][j] = N[i][k].
#include "gcompute/kernels/cpu/apsp.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gcompute::kernels::cpu {
namespace {

constexpr std::int64_t kBlock = 64;
constexpr int kMaxThreads = 256;

std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// "No edge" per weight type.
template <typename T>
constexpr T kNone = std::numeric_limits<float>::infinity();
template <>
constexpr std::int32_t kNone<std::int32_t> = kI32NoEdge;

// Path sums d_ik + b for a fixed d_ik, written without branches on b so that the row loops
// below vectorise. f32: +inf absorbs (weights are never -inf).
struct AddF32 {
  float a;
  float operator()(float b) const { return a + b; }
};
// i32, saturating: a sum at or above kI32NoEdge is "no edge"; below -kI32NoEdge it sticks
// there (reachable only through a negative cycle, or with true distances outside i32). The
// thresholds are precomputed so that no sum that is used can overflow.
struct AddI32NonNegative {  // a >= 0: only the top can be passed (b = kI32NoEdge included)
  std::int32_t a, top;      // top = kI32NoEdge - a
  std::int32_t operator()(std::int32_t b) const { return b >= top ? kI32NoEdge : a + b; }
};
struct AddI32Negative {    // a < 0: only the bottom can be passed; b = kI32NoEdge stays so
  std::int32_t a, bottom;  // bottom = -kI32NoEdge - a
  std::int32_t operator()(std::int32_t b) const {
    const std::int32_t s = b <= bottom ? -kI32NoEdge : a + b;
    return b == kI32NoEdge ? kI32NoEdge : s;
  }
};

// Hop counts are capped so that the sum of two never overflows: 2 * (2^30 - 1) < 2^31 (they
// only grow past n through a negative cycle, when the outputs are unspecified anyway; a cap
// of 2^30 itself overflowed there, found by UBSan on a random graph).
constexpr std::int32_t kHopCap = (1 << 30) - 1;

// One relaxation row: D[i][j] = min(D[i][j], D[i][k] + D[k][j]) over a tile's columns.
// kWidth > 0 fixes the trip count (a full tile) so that the compiler vectorises it at -O2.
// Rows i and k differ (the caller skips k == i), hence __restrict__.
template <int kWidth, typename T, typename Add>
inline void relax_row_dist(T* __restrict__ di, const T* __restrict__ dk, Add add,
                           std::int64_t len) {
  const std::int64_t count = kWidth > 0 ? kWidth : len;
  for (std::int64_t j = 0; j < count; ++j) {
    const T s = add(dk[j]);
    di[j] = s < di[j] ? s : di[j];
  }
}

// The same with next hops. Paths are compared by (length, hops) lexicographically: with
// zero-weight cycles, plain "shorter wins" lets the blocked order leave next-hop pointers
// that chase each other around a zero cycle forever. Every cycle has >= 1 hop, so under the
// lexicographic order all cycles are positive and the pointers always form simple paths.
template <int kWidth, typename T, typename Add>
inline void relax_row_next(T* __restrict__ di, std::int32_t* __restrict__ hi,
                           std::int32_t* __restrict__ ni, const T* __restrict__ dk,
                           const std::int32_t* __restrict__ hk, Add add, std::int32_t hik,
                           std::int32_t nik, std::int64_t len) {
  const std::int64_t count = kWidth > 0 ? kWidth : len;
  for (std::int64_t j = 0; j < count; ++j) {
    const T s = add(dk[j]);
    const std::int32_t hs = std::min(hik + hk[j], kHopCap);
    const T d = di[j];
    const std::int32_t h = hi[j];
    const bool better = (s < d) | ((s == d) & (s != kNone<T>)&(hs < h));
    di[j] = better ? s : d;
    hi[j] = better ? hs : h;
    ni[j] = better ? nik : ni[j];
  }
}

struct Range {
  std::int64_t lo, hi;
};

template <typename T, bool kNext>
struct Solver {
  T* d;
  std::int32_t* nx;   // next hops (kNext)
  std::int32_t* hop;  // hop counts of the current paths (kNext)
  std::int64_t n;

  Range block(std::int64_t b) const { return {b * kBlock, std::min(n, (b + 1) * kBlock)}; }

  // Row i of tile (I, J) through vertex k. k == i is skipped: it changes nothing unless
  // D[i][i] < 0, which is a negative cycle (reported from the diagonal, that stays < 0).
  void relax(std::int64_t i, std::int64_t k, Range J) const {
    const T dik = d[i * n + k];
    if (dik == kNone<T> || i == k) return;
    const std::int64_t len = J.hi - J.lo;
    auto row = [&](auto add) {
      if constexpr (kNext) {
        T* di = d + i * n + J.lo;
        std::int32_t* hi = hop + i * n + J.lo;
        std::int32_t* ni = nx + i * n + J.lo;
        const T* dk = d + k * n + J.lo;
        const std::int32_t* hk = hop + k * n + J.lo;
        const std::int32_t hik = hop[i * n + k], nik = nx[i * n + k];
        if (len == kBlock) {
          relax_row_next<kBlock>(di, hi, ni, dk, hk, add, hik, nik, len);
        } else {
          relax_row_next<0>(di, hi, ni, dk, hk, add, hik, nik, len);
        }
      } else {
        if (len == kBlock) {
          relax_row_dist<kBlock>(d + i * n + J.lo, d + k * n + J.lo, add, len);
        } else {
          relax_row_dist<0>(d + i * n + J.lo, d + k * n + J.lo, add, len);
        }
      }
    };
    if constexpr (std::is_same_v<T, float>) {
      row(AddF32{dik});
    } else if (dik >= 0) {
      row(AddI32NonNegative{dik, kI32NoEdge - dik});
    } else {
      row(AddI32Negative{dik, -kI32NoEdge - dik});
    }
  }

  // Tile (I, J) through the vertices of K, k outermost: needed when the tile being updated
  // is also one of the operands (phases 1 and 2), so that k runs in order as in plain FW.
  void relax_k_outer(Range I, Range J, Range K) const {
    for (std::int64_t k = K.lo; k < K.hi; ++k) {
      for (std::int64_t i = I.lo; i < I.hi; ++i) relax(i, k, J);
    }
  }

  // Tile (I, J) through K when the operands are other tiles (phase 3): i outermost keeps
  // row i of the tile in cache while the k rows stream past.
  void relax_i_outer(Range I, Range J, Range K) const {
    for (std::int64_t i = I.lo; i < I.hi; ++i) {
      for (std::int64_t k = K.lo; k < K.hi; ++k) relax(i, k, J);
    }
  }

  // Smallest v with D[v][v] < 0, or -1.
  std::int64_t negative_diagonal() const {
    for (std::int64_t v = 0; v < n; ++v) {
      if (d[v * n + v] < T(0)) return v;
    }
    return -1;
  }
};

template <typename T, bool kNext>
absl::StatusOr<ApspInfo> run(T* d, std::int32_t* nx, std::int64_t n, StopToken stop, int threads) {
  std::vector<std::int32_t> hops;
  if constexpr (kNext) {  // 0 on the diagonal, 1 for an edge (unused where there is none)
    hops.assign(static_cast<std::size_t>(n * n), 1);
    for (std::int64_t v = 0; v < n; ++v) hops[v * n + v] = 0;
  }
  const Solver<T, kNext> solver{d, nx, kNext ? hops.data() : nullptr, n};
  const std::int64_t nb = (n + kBlock - 1) / kBlock;
  const std::int64_t others = nb - 1;
  const std::int64_t useful = std::max<std::int64_t>(1, others * others);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int team = static_cast<int>(std::min<std::int64_t>({threads, kMaxThreads, useful}));

  ApspInfo info;
  bool cancelled = false;
  bool done = false;  // written by thread 0 before a barrier, read by all after it
  std::int64_t cancelled_round = 0;
  // Tiles of phases 2 and 3 are claimed from counters (reset by thread 0 before the barrier
  // that opens the phase), so the work gets done by however many threads are running.
  std::atomic<std::int64_t> phase2_next{0}, phase3_next{0};
  std::barrier sync(team);

  auto worker = [&](int tid) {
    for (std::int64_t kb = 0; kb < nb; ++kb) {
      if (tid == 0) {
        phase2_next = 0;
        phase3_next = 0;
        if (stop.stop_requested()) {
          cancelled = true;
          cancelled_round = kb;
          done = true;
        } else if (const std::int64_t v = solver.negative_diagonal(); v >= 0) {
          info = ApspInfo{true, v};  // the outputs are unspecified from here on: stop early
          done = true;
        } else {
          const Range K = solver.block(kb);
          solver.relax_k_outer(K, K, K);
        }
      }
      sync.arrive_and_wait();
      if (done) return;
      const Range K = solver.block(kb);
      // Phase 2: tasks 0..others-1 are row tiles (kb, jb), the rest column tiles (ib, kb).
      for (std::int64_t t = phase2_next++; t < 2 * others; t = phase2_next++) {
        const std::int64_t b = t % others;
        const Range other = solver.block(b < kb ? b : b + 1);
        if (t < others) {
          solver.relax_k_outer(K, other, K);
        } else {
          solver.relax_k_outer(other, K, K);
        }
      }
      sync.arrive_and_wait();
      // Phase 3: every tile outside block row and column kb.
      for (std::int64_t t = phase3_next++; t < others * others; t = phase3_next++) {
        const std::int64_t ib = t / others, jb = t % others;
        solver.relax_i_outer(solver.block(ib < kb ? ib : ib + 1),
                             solver.block(jb < kb ? jb : jb + 1), K);
      }
      sync.arrive_and_wait();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(team - 1));
  for (int t = 1; t < team; ++t) {
    try {
      pool.emplace_back(worker, t);
    } catch (const std::system_error&) {
      // Out of threads: carry on with those running; the missing ones leave the barrier.
      for (int missing = t; missing < team; ++missing) sync.arrive_and_drop();
      break;
    }
  }
  worker(0);
  for (std::thread& t : pool) t.join();

  if (cancelled) {
    return absl::CancelledError(
        absl::StrCat("apsp: cancelled after ", cancelled_round, " of ", nb, " rounds"));
  }
  if (!info.negative_cycle) {
    if (const std::int64_t v = solver.negative_diagonal(); v >= 0) info = ApspInfo{true, v};
  }
  return info;
}

// Rejects weights that have no meaning as edge lengths; reads W only.
template <typename T>
absl::Status check_weights(const T* w, std::int64_t n) {
  for (std::int64_t e = 0; e < n * n; ++e) {
    const T v = w[e];
    bool bad;
    if constexpr (std::is_same_v<T, float>) {
      bad = std::isnan(v) || v == -std::numeric_limits<float>::infinity();
    } else {
      bad = v != kI32NoEdge && (v > kI32MaxAbsWeight || v < -kI32MaxAbsWeight);
    }
    if (bad) {
      return absl::InvalidArgumentError(absl::StrCat(
          "apsp: weight W[", e / n, "][", e % n, "] = ", format_double(static_cast<double>(v)),
          std::is_same_v<T, float>
              ? " is not a length (use +inf for no edge)"
              : absl::StrCat(" is outside +-", kI32MaxAbsWeight, " and not kI32NoEdge")));
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<ApspInfo> apsp_typed(const T* w, T* d, std::int32_t* nx, std::int64_t n,
                                    StopToken stop, int threads) {
  if (absl::Status st = check_weights(w, n); !st.ok()) return st;
  // N from W first, then D: W and D may be the same buffer.
  if (nx != nullptr) {
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        nx[i * n + j] = i == j                     ? static_cast<std::int32_t>(i)
                        : w[i * n + j] == kNone<T> ? -1
                                                   : static_cast<std::int32_t>(j);
      }
    }
  }
  if (d != w) std::copy(w, w + n * n, d);
  for (std::int64_t i = 0; i < n; ++i) d[i * n + i] = std::min(d[i * n + i], T(0));
  if (nx != nullptr) return run<T, true>(d, nx, n, stop, threads);
  return run<T, false>(d, nullptr, n, stop, threads);
}

}  // namespace

absl::StatusOr<ApspInfo> apsp(const void* weights, void* dist, std::int32_t* next,
                              const ApspShape& shape, StopToken stop, int threads) {
  if (absl::Status st = validate(shape); !st.ok()) return st;
  if (shape.n > std::numeric_limits<std::int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("apsp: n=", shape.n, " does not fit the int32 next-hop matrix"));
  }
  if (shape.n == 0) return ApspInfo{};
  if (weights == nullptr || dist == nullptr || (shape.next_hop && next == nullptr)) {
    return absl::InvalidArgumentError("apsp: null weight, distance or next-hop buffer");
  }
  std::int32_t* nx = shape.next_hop ? next : nullptr;
  if (shape.dtype == DType::kF32) {
    return apsp_typed(static_cast<const float*>(weights), static_cast<float*>(dist), nx, shape.n,
                      stop, threads);
  }
  return apsp_typed(static_cast<const std::int32_t*>(weights), static_cast<std::int32_t*>(dist), nx,
                    shape.n, stop, threads);
}

absl::Status edge_list_to_dense(const EdgeListView& edges, DType dtype, void* weights) {
  if (absl::Status st = validate(ApspShape{edges.n, dtype, false}); !st.ok()) return st;
  if (edges.edges < 0) {
    return absl::InvalidArgumentError(absl::StrCat("edge list: negative edge count ", edges.edges));
  }
  if (edges.edges > 0 &&
      (edges.src == nullptr || edges.dst == nullptr || edges.weight == nullptr)) {
    return absl::InvalidArgumentError("edge list: null src, dst or weight array");
  }
  if (edges.n > 0 && weights == nullptr) {
    return absl::InvalidArgumentError("edge list: null weight matrix");
  }
  const std::int64_t n = edges.n;
  // Validate everything before writing, so a rejected list leaves the output untouched.
  for (std::int64_t e = 0; e < edges.edges; ++e) {
    const std::int64_t s = edges.src[e], t = edges.dst[e];
    if (s < 0 || s >= n || t < 0 || t >= n) {
      return absl::InvalidArgumentError(absl::StrCat("edge ", e, ": endpoint ",
                                                     s < 0 || s >= n ? s : t, " is outside 0..",
                                                     n - 1, " (", s, " -> ", t, ")"));
    }
    const double w = edges.weight[e];
    if (std::isnan(w)) {
      return absl::InvalidArgumentError(absl::StrCat("edge ", e, ": weight is NaN"));
    }
    if (dtype == DType::kF32) {
      constexpr double kMax = std::numeric_limits<float>::max();
      if (w == -std::numeric_limits<double>::infinity() ||
          (std::isfinite(w) && std::abs(w) > kMax)) {
        return absl::InvalidArgumentError(
            absl::StrCat("edge ", e, ": weight ", format_double(w), " is outside the f32 range"));
      }
    } else if (!(std::isfinite(w) && w == std::trunc(w) && std::abs(w) <= kI32MaxAbsWeight)) {
      return absl::InvalidArgumentError(absl::StrCat("edge ", e, ": weight ", format_double(w),
                                                     " is not an integer in [", -kI32MaxAbsWeight,
                                                     ", ", kI32MaxAbsWeight, "]"));
    }
  }
  if (dtype == DType::kF32) {
    auto* out = static_cast<float*>(weights);
    std::fill(out, out + n * n, std::numeric_limits<float>::infinity());
    for (std::int64_t e = 0; e < edges.edges; ++e) {
      float& slot = out[edges.src[e] * n + edges.dst[e]];
      slot = std::min(slot, static_cast<float>(edges.weight[e]));
    }
  } else {
    auto* out = static_cast<std::int32_t*>(weights);
    std::fill(out, out + n * n, kI32NoEdge);
    for (std::int64_t e = 0; e < edges.edges; ++e) {
      std::int32_t& slot = out[edges.src[e] * n + edges.dst[e]];
      slot = std::min(slot, static_cast<std::int32_t>(edges.weight[e]));
    }
  }
  return absl::OkStatus();
}

}  // namespace gcompute::kernels::cpu
