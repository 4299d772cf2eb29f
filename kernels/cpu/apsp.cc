// SPDX-License-Identifier: Apache-2.0
// Blocked Floyd-Warshall on the host.
//
// The matrix is cut into kBlock x kBlock tiles. Round kb (one per block row) runs the classic
// three phases: (1) the diagonal tile kb relaxes through its own vertices, (2) the tiles of
// block row and block column kb relax through them using the finished diagonal tile,
// (3) every other tile relaxes through block kb using its row/column tiles from phase 2.
// Tiles within phase 2 and within phase 3 are independent, so they are shared among worker
// threads that meet at a barrier between phases. The next-hop matrix is updated in the same
// pass: whenever going through k shortens i -> j, N[i][j] = N[i][k]. Where the weights allow
// it, next hops come from the distances instead (apsp_next_hop.cc; both backends' rule).
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
#include "detail/apsp_next_hop.hpp"

namespace gcompute::kernels::cpu {
namespace {

constexpr std::int64_t kBlock = 64;
constexpr int kMaxThreads = 256;

std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// "No edge" per distance type. int64 holds the sums of i32 weights in apsp_i32_wide.
template <typename T>
constexpr T kNone = std::numeric_limits<float>::infinity();
template <>
constexpr std::int32_t kNone<std::int32_t> = kI32NoEdge;
template <>
constexpr std::int64_t kNone<std::int64_t> = std::numeric_limits<std::int64_t>::max();

// Path sums d_ik + b for a fixed d_ik, written without branches on b so that the row loops
// below vectorise. f32: +inf absorbs (weights are never -inf).
struct AddF32 {
  float a;
  float operator()(float b) const { return a + b; }
};
// Integers, saturating: a sum at or above kNone is "no edge"; below -kNone it sticks there
// (reachable only through a negative cycle, or in i32 when i32_apsp_fits is false). The
// thresholds are precomputed so that no sum that is used can overflow. Together:
// a (+) b = kNone if either is kNone, else clamp(a + b, -kNone, kNone), monotone in each
// argument (the proof at i32_apsp_fits relies on it).
template <typename T>
struct AddIntNonNegative {  // a >= 0: only the top can be passed (b = kNone included)
  T a, top;                 // top = kNone - a
  T operator()(T b) const { return b >= top ? kNone<T> : a + b; }
};
template <typename T>
struct AddIntNegative {  // a < 0: only the bottom can be passed; b = kNone stays so
  T a, bottom;           // bottom = -kNone - a
  T operator()(T b) const {
    const T s = b <= bottom ? -kNone<T> : a + b;
    return b == kNone<T> ? kNone<T> : s;
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
      row(AddIntNonNegative<T>{dik, kNone<T> - dik});
    } else {
      row(AddIntNegative<T>{dik, -kNone<T> - dik});
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
        stop.report_steps(kb, nb);
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
      // Tiles are polled for a stop (a round of a large graph is seconds of work); a stopped
      // round leaves its remaining tiles and the next round's start reports the cancel.
      for (std::int64_t t = phase2_next++; t < 2 * others && !stop.stop_requested();
           t = phase2_next++) {
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
      for (std::int64_t t = phase3_next++; t < others * others && !stop.stop_requested();
           t = phase3_next++) {
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
  stop.report_steps(nb, nb);
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

// N from W: j for an edge i -> j, i on the diagonal, -1 where there is no edge.
template <typename T>
void init_next(const T* w, std::int32_t* nx, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      nx[i * n + j] = i == j                     ? static_cast<std::int32_t>(i)
                      : w[i * n + j] == kNone<T> ? -1
                                                 : static_cast<std::int32_t>(j);
    }
  }
}

// D from W (already in D's type) with D[i][i] = min(0, W[i][i]), then the rounds.
template <typename T>
absl::StatusOr<ApspInfo> solve(T* d, std::int32_t* nx, std::int64_t n, StopToken stop,
                               int threads) {
  for (std::int64_t i = 0; i < n; ++i) d[i * n + i] = std::min(d[i * n + i], T(0));
  if (nx != nullptr) return run<T, true>(d, nx, n, stop, threads);
  return run<T, false>(d, nullptr, n, stop, threads);
}

template <typename T>
absl::StatusOr<ApspInfo> apsp_typed(const T* w, T* d, std::int32_t* nx, std::int64_t n,
                                    StopToken stop, int threads) {
  // Next hops from the distances where the weights allow it (the GPU's rule, so both backends
  // agree); W must survive the distances.
  if (nx != nullptr && d != w && detail::next_hops_from_distances_allowed(w, n)) {
    std::copy(w, w + n * n, d);
    absl::StatusOr<ApspInfo> info = solve(d, static_cast<std::int32_t*>(nullptr), n, stop, threads);
    if (!info.ok() || info->negative_cycle) return info;
    if (detail::next_hops_from_distances(w, d, nx, n, threads)) {
      info->next_hop_from_distances = true;
      return info;
    }
  }
  // N from W first, then D: W and D may be the same buffer.
  if (nx != nullptr) init_next(w, nx, n);
  if (d != w) std::copy(w, w + n * n, d);
  return solve(d, nx, n, stop, threads);
}

// apsp_i32_wide on validated input.
absl::StatusOr<ApspInfo> apsp_wide(const std::int32_t* w, std::int32_t* d, std::int32_t* nx,
                                   std::int64_t n, StopToken stop, int threads) {
  std::vector<std::int64_t> wide(static_cast<std::size_t>(n * n));
  for (std::int64_t e = 0; e < n * n; ++e) {
    wide[e] = w[e] == kI32NoEdge ? kNone<std::int64_t> : w[e];
  }
  // The next-hop rule where it applies, as apsp_typed does, so that both give the same next hops
  // (it implies i32_apsp_fits, so no distance leaves the i32 range below).
  const bool by_rule = nx != nullptr &&
                       static_cast<const void*>(d) != static_cast<const void*>(w) &&
                       detail::next_hops_from_distances_allowed(w, n);
  std::int32_t* fused_nx = by_rule ? nullptr : nx;
  if (fused_nx != nullptr) init_next(w, fused_nx, n);  // W is read in full before D is written
  absl::StatusOr<ApspInfo> info = solve(wide.data(), fused_nx, n, stop, threads);
  if (!info.ok() || info->negative_cycle) return info;
  // Without a negative cycle every finite value is an exact distance: narrow, and name the
  // first one that i32 cannot hold.
  for (std::int64_t e = 0; e < n * n; ++e) {
    const std::int64_t v = wide[e];
    if (v == kNone<std::int64_t>) {
      d[e] = kI32NoEdge;
    } else if (v < kI32MinDistance || v > kI32MaxDistance) {
      if (!info->out_of_range) {
        info->out_of_range = true;
        info->range_row = e / n;
        info->range_col = e % n;
        info->range_value = v;
      }
      d[e] = v < 0 ? kI32MinDistance : kI32MaxDistance;
    } else {
      d[e] = static_cast<std::int32_t>(v);
    }
  }
  if (by_rule) {
    if (detail::next_hops_from_distances(w, d, nx, n, threads)) {
      info->next_hop_from_distances = true;
    } else {  // a row with too many candidates: the fused Floyd-Warshall, as apsp_typed
      init_next(w, nx, n);
      for (std::int64_t e = 0; e < n * n; ++e) {
        wide[e] = w[e] == kI32NoEdge ? kNone<std::int64_t> : w[e];
      }
      absl::StatusOr<ApspInfo> again = solve(wide.data(), nx, n, stop, threads);
      if (!again.ok()) return again;
    }
  }
  return info;
}

absl::Status check_apsp_args(const void* weights, const void* dist, const std::int32_t* next,
                             const ApspShape& shape) {
  if (absl::Status st = validate(shape); !st.ok()) return st;
  if (shape.n > std::numeric_limits<std::int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("apsp: n=", shape.n, " does not fit the int32 next-hop matrix"));
  }
  if (shape.n > 0 &&
      (weights == nullptr || dist == nullptr || (shape.next_hop && next == nullptr))) {
    return absl::InvalidArgumentError("apsp: null weight, distance or next-hop buffer");
  }
  return absl::OkStatus();
}

}  // namespace

// Why i32_apsp_fits makes saturating i32 exact. Let M be the largest |finite off-diagonal
// weight| and R = kI32MaxDistance = 2^31 - 2, with (n - 1) M <= R. Write a (+) b for the
// kernel's sum: kI32NoEdge if either is, else a + b clamped to [-(2^31 - 1), 2^31 - 1]; it is
// monotone in each argument and equals a + b whenever a, b and a + b lie in [-R, R].
// A simple path has at most n - 1 edges, none a self loop, so its length lies in [-R, R].
//  (1) Upper bound. Blocked Floyd-Warshall (like plain Floyd-Warshall) ends with D[i][j] <=
//      len(P) for every simple path P = i ~> j: split P at its highest intermediate k into the
//      simple paths P1 = i ~> k and P2 = k ~> j; by induction D[i][k] <= len(P1) and D[k][j] <=
//      len(P2) when D[i][j] is relaxed through k, so by monotonicity D[i][j] <= len(P1) (+)
//      len(P2) = len(P), because all three lie in [-R, R]. Only this monotone step is used, so
//      the argument holds for (+) as for exact sums.
//  (2) Without negative cycles, lower bound. Every value ever stored in D[i][j] is the exact
//      length of a walk i ~> j, hence >= the distance d(i, j) >= -R: by induction it is a sum
//      of two such lengths; a clamp at the top yields kI32NoEdge, which never replaces a value
//      (it is not smaller), and a clamp at the bottom would need an exact walk shorter than
//      -(2^31 - 1) < d(i, j), which does not exist. With (1), D[i][j] = d(i, j) for i != j,
//      D[i][i] = 0, and the next hops follow the same comparisons as in exact arithmetic.
//  (3) With a negative cycle values may run away below any bound; they stick at -(2^31 - 1)
//      instead of overflowing, and the outputs are unspecified. Detection is still exact: a
//      negative self loop makes D[v][v] < 0 from the start; otherwise take a negative simple
//      cycle C, its highest vertex k and another vertex i on it: by (1) at the relaxation
//      through k, D[i][i] <= len(C_i~>k) (+) len(C_k~>i), both simple paths in [-R, R], whose
//      exact sum len(C) < 0 clamps to a negative value. Without negative cycles D[v][v] = 0
//      by (2). So negative_cycle is set exactly when the graph has a negative cycle.
// apsp_i32_wide runs the same argument in int64 with R = (n - 1) * kI32MaxAbsWeight < 2^61
// (n < 2^31), far inside +-(2^63 - 1): exact for every valid i32 input.
bool i32_apsp_fits(const std::int32_t* weights, std::int64_t n) {
  std::int64_t max_abs = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t w = weights[i * n + j];
      if (i != j && w != kI32NoEdge) max_abs = std::max(max_abs, w < 0 ? -w : w);
    }
  }
  // max_abs <= 2^31 and n <= 2^31 - 1 (else apsp rejects n): the product fits int64.
  return n <= 1 || (n - 1) * max_abs <= kI32MaxDistance;
}

absl::StatusOr<ApspInfo> apsp(const void* weights, void* dist, std::int32_t* next,
                              const ApspShape& shape, StopToken stop, int threads) {
  if (absl::Status st = check_apsp_args(weights, dist, next, shape); !st.ok()) return st;
  if (shape.n == 0) return ApspInfo{};
  std::int32_t* nx = shape.next_hop ? next : nullptr;
  if (shape.dtype == DType::kF32) {
    const auto* w = static_cast<const float*>(weights);
    if (absl::Status st = check_weights(w, shape.n); !st.ok()) return st;
    return apsp_typed(w, static_cast<float*>(dist), nx, shape.n, stop, threads);
  }
  const auto* w = static_cast<const std::int32_t*>(weights);
  if (absl::Status st = check_weights(w, shape.n); !st.ok()) return st;
  if (!i32_apsp_fits(w, shape.n)) {
    return apsp_wide(w, static_cast<std::int32_t*>(dist), nx, shape.n, stop, threads);
  }
  return apsp_typed(w, static_cast<std::int32_t*>(dist), nx, shape.n, stop, threads);
}

absl::StatusOr<ApspInfo> apsp_i32_wide(const std::int32_t* weights, std::int32_t* dist,
                                       std::int32_t* next, const ApspShape& shape, StopToken stop,
                                       int threads) {
  if (absl::Status st = check_apsp_args(weights, dist, next, shape); !st.ok()) return st;
  if (shape.dtype != DType::kI32) {
    return absl::InvalidArgumentError(
        absl::StrCat("apsp_i32_wide: dtype is ", dtype_name(shape.dtype), ", not i32"));
  }
  if (shape.n == 0) return ApspInfo{};
  if (absl::Status st = check_weights(weights, shape.n); !st.ok()) return st;
  return apsp_wide(weights, dist, shape.next_hop ? next : nullptr, shape.n, stop, threads);
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
