// SPDX-License-Identifier: Apache-2.0
// cuda::svd_jacobi: one-sided (Hestenes) Jacobi SVD.
//
// The factored matrix is W (M x N, M >= N, column-major in the workspace): A when m >= n,
// A^T when m < n (a row-major m x n matrix is a column-major n x m one, so that case is a plain
// copy). A is first scaled by a power of two that brings max|a| into [0.5, 1) (exact, undone on
// the singular values). Columns of W are then rotated pairwise until every pair passes
// |w_i . w_j| <= tol |w_i| |w_j|; V accumulates the rotations. Singular values are the column
// norms (sorted descending), the left vectors the normalised columns, the right ones V's columns;
// for m < n the roles of U and V swap. Left vectors of (numerically) zero singular values and
// the extra columns of a full U (Vt for m < n) complete an orthonormal basis.
//
// Three drivers:
//  * tiny (M <= 32): a group of P = 8, 16 or 32 lanes per matrix, lane l holding column l of W
//    and of V in registers; a round-robin round exchanges columns with shuffles; no shared
//    memory, no barriers, all sweeps in one kernel;
//  * small (N <= 64 and W, V fit in shared memory): one block per matrix, all sweeps in one
//    kernel, one warp per column pair of a round-robin round;
//  * blocked (everything else): columns in blocks of nb; block pairs of a round-robin round are
//    orthogonalised together: G = [Wi Wj]^T [Wi Wj] (one batched GEMM for the round, split over
//    row chunks of W, or formed by the inner solver's own block at width 16), G diagonalised by
//    one-sided Jacobi on its Cholesky factor (by default; at block width 16, the default up to N =
//    256 in f64 and 512 in f32, one warp per pair in registers; one block per pair in shared memory
//    above), then [Wi Wj] Q and [Vi Vj] Q (batched GEMMs, FP32 for f32 and FP64 for f64, never
//    TF32). W and V are double-buffered: the update GEMMs write each block to its slot of the next
//    round, so that the pairs of every round are adjacent. After a full
//    sweep (k - 1 rounds for k blocks) the blocks are back in their original order. One flag read
//    per sweep decides convergence; after a sweep whose rotations were all small, one GEMM of the
//    whole W^T W tests it instead of a sweep that would only confirm it (whole_gram_passes). After
//    kEscalateAfterSweeps outer sweeps the inner solver takes more sweeps (see there).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "detail/launch_helpers.hpp"
#include "detail/phase_profile.hpp"
#include "detail/stop_pacer.hpp"
#include "detail/svd_kernels.cuh"
#include "detail/workspace_carver.hpp"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/event.hpp"
#include "gcompute/kernels/cuda/svd.hpp"

namespace gcompute::kernels::cuda {
namespace {

constexpr int kSmallMaxN = 64;
constexpr std::size_t kSmallMaxSmem = 96 * 1024;
constexpr int kDefaultBlock = 32;
// Block width 16 up to this N (half the inner Gram size, twice the rounds), where a block pair
// fits the register form of the inner solver (gram_warp_jacobi_kernel). f32 keeps it up to
// kNarrowBlockMaxNF32. H200, ms width 16 / 32: f64 19.2 / 19.4 at n = 512 and 62.7 / 51.4 at
// 1024 (its solve in double costs twice the shuffles, and the rounds double); f32, with the
// 64-column solver in float and the Gram GEMM split, 12.3 / 12.3 at 512 and 35.4 / 31.1 at 1024
// (one call, both with a trial update kernel since dropped), and 13.6 and 14.3 / 13.5 and 13.4
// at 512 in another (two runs each, the committed code).
constexpr std::int64_t kNarrowBlockMaxN = 256;
constexpr std::int64_t kNarrowBlockMaxNF32 = 512;
constexpr int kNarrowBlock = 16;
constexpr std::int64_t kSmallChunk = 1 << 16;  // most matrices per launch (see small_chunk)
constexpr int kWarpMaxM = 32;                  // tiny driver: max(m, n) <= 32, one lane per column
constexpr int kWarpThreads = 128;
// Blocked driver: outer sweeps from this one on (0-based) give the inner Gram solver at least
// kEscalatedInnerSweeps sweeps (and f32's one-sided solvers double arithmetic). One inner sweep
// converges only linearly on clustered singular values, and exactly rank-deficient inputs (integer
// outer products, repeated rows) have such clusters at every scale: the rounding noise that stands
// in for their zero singular values is itself rank-deficient, its own noise is about eps smaller,
// and so on down to the negligible threshold of jacobi_rotation (about nine such levels in f64).
// At one inner sweep a level took six to twelve outer sweeps (host emulation of this driver on
// (i + 1)(j + 1), 100 x 150, f64: not converged after 60 sweeps; 34 with this rule). Random inputs
// need at most 16 sweeps (n = 4096, docs/performance.md), so their results and times do not
// change.
constexpr int kEscalateAfterSweeps = 20;
// Widest block pair (2 nb columns) of the one-sided inner solver: 4 nb2 threads (a 4 x 4 tile of
// the lower triangle each in the factorization), its factor and Q in shared memory.
constexpr int kOneSidedMaxNb2 = 64;
// SvdTuning::InnerSolver::kAuto: the two-sided inner solver up to this N (see
// configure_gram_solver).
constexpr std::int64_t kTwoSidedMaxN = 256;
constexpr int kEscalatedInnerSweeps = 4;
// The register form forms each pair's Gram matrix in its own block (one SM) up to this many rows
// of W in f64; taller f64 W gets the Gram GEMM. H200, same call, ms with the Gram in the block /
// from the GEMM: f64 16384 x 256 71.7 / 32.0, 65536 x 256 264 / 105-116 (at n = 256 square the
// block was the faster, 6.8 / 7.2, in two calls of the same day); f32 16384 x 256 33.5 / 48.3,
// 65536 x 256 125 / 235-269 (cuBLAS's FP32 batched GEMM of 32 x 32 results over that many rows
// is the slower one), so f32 always forms it in the block. 1024 lies between the measured f64
// points; the crossover itself was not measured.
constexpr std::int64_t kFusedGramMaxRowsF64 = 1024;

// The round's Gram GEMM is split over row chunks of W (split-K: a pointer-batched GEMM of pairs x
// chunks products, which the inner solver adds in chunk order) so that it has about
// kGramGemmProducts products (SvdTuning::gram_products) of at least kGramMinChunkRows rows: one
// product per pair ran one 64 x 64 tile per pair down all of W's rows (H200, f32 N = 2048: 68 us a
// round, 32 tiles on 132 SMs). Chunks are multiples of 32 rows (aligned operands); the last may be
// shorter.
constexpr std::int64_t kGramGemmProducts = 256;
constexpr std::int64_t kGramMinChunkRows = 256;

/// SvdTuning::profile: the blocked driver's device time split into the Gram GEMM, the inner
/// Jacobi and the update GEMMs of every round and the whole-Gram checks, printed once per call
/// with each sweep's largest cosine.
enum RoundPhase { kGramGemm, kInnerJacobi, kUpdateGemms, kWholeGramCheck };
detail::PhaseProfile round_profile(StreamView stream, bool on) {
  return detail::PhaseProfile(stream, on,
                              {"gram gemm", "inner jacobi", "update gemms", "whole-gram checks"});
}

struct Plan {
  bool transposed = false;  // m < n: W = A^T
  std::int64_t M = 0, N = 0, p = 0;
  bool small = false;
  int nb = 0;              // blocked: block width
  std::int64_t npad = 0;   // blocked: N rounded up to a multiple of 2 nb
  std::int64_t k = 0;      // blocked: number of blocks (even)
  std::int64_t lcols = 0;  // columns of the left factor L (from W)
  int inner_sweeps = 0;
  bool inner_one_sided = false;  // blocked: the one-sided inner solver (else the two-sided one)
  bool gram_in_block = false;    // blocked: its register form forms each pair's G (no Gram GEMM)
  // blocked, Gram GEMM: W's rows in gram_splits chunks of gram_chunk_rows (the last one shorter
  // where gram_chunk_rows does not divide M)
  std::int64_t gram_chunk_rows = 0;
  int gram_splits = 1;
  /// Chunks of exactly gram_chunk_rows rows.
  std::int64_t gram_full_chunks() const { return M / gram_chunk_rows; }
};

Plan make_plan(const SvdShape& s, const SvdTuning& tuning) {
  Plan pl;
  pl.transposed = s.m < s.n;
  pl.M = std::max(s.m, s.n);
  pl.N = std::min(s.m, s.n);
  pl.p = pl.N;
  pl.lcols = s.full_matrices ? pl.M : pl.N;
  const std::size_t el = dtype_size(s.dtype);
  const std::size_t smem =
      static_cast<std::size_t>(pl.M * pl.N + (s.compute_uv ? pl.N * pl.N : 0)) * el;
  pl.small = pl.N <= kSmallMaxN && smem <= kSmallMaxSmem;
  if (!pl.small) {
    const std::int64_t narrow_max = s.dtype == DType::kF32 ? kNarrowBlockMaxNF32 : kNarrowBlockMaxN;
    const int nb =
        tuning.block != 0 ? tuning.block : (pl.N <= narrow_max ? kNarrowBlock : kDefaultBlock);
    pl.nb = nb;
    pl.npad = (pl.N + 2 * nb - 1) / (2 * nb) * (2 * nb);
    pl.k = pl.npad / nb;
    pl.inner_sweeps = tuning.inner_sweeps;
    // Auto: one-sided above N = 256 and wherever a pair fits one warp. On the H200 with the
    // shared-memory solvers (same run, ms one-sided / two-sided) f32 512 21.2 / 22.5, 1024 47.9 /
    // 60.0, 2048 179 / 200; f64 512 23.3 / 25.2, 1024 52.4 / 75.3, 2048 171 / 210; at 256 (width
    // 16) it took one outer sweep more (f32 8.7 / 7.9, f64 9.9 / 9.6), which the warp solver's
    // cheaper rounds repay.
    using Inner = SvdTuning::InnerSolver;
    const bool in_warp = 2 * nb == detail::kWarpPairColumns;
    pl.inner_one_sided =
        (tuning.inner_solver == Inner::kOneSided ||
         (tuning.inner_solver == Inner::kAuto && (pl.N > kTwoSidedMaxN || in_warp))) &&
        2 * nb <= kOneSidedMaxNb2;
    pl.gram_in_block =
        pl.inner_one_sided && in_warp && (s.dtype == DType::kF32 || pl.M <= kFusedGramMaxRowsF64);
    if (pl.gram_in_block) return pl;  // no Gram GEMM to split
    const std::int64_t pairs = pl.k / 2;
    const std::int64_t products =
        tuning.gram_products != 0 ? tuning.gram_products : kGramGemmProducts;
    const std::int64_t chunks = std::clamp<std::int64_t>(
        (products + pairs - 1) / pairs, 1, std::max<std::int64_t>(1, pl.M / kGramMinChunkRows));
    pl.gram_chunk_rows = ((pl.M + chunks - 1) / chunks + 31) / 32 * 32;
    pl.gram_splits = static_cast<int>((pl.M + pl.gram_chunk_rows - 1) / pl.gram_chunk_rows);
  }
  return pl;
}

/// Operand lists of a round's update GEMMs in Buffers::ptrs, k pointers each, in this order: the
/// pairs' W and V, Q's halves (twice), the slots' places in the next round's W and V.
enum RoundOperand { kPairW, kPairV, kQForW, kQForV, kNextW, kNextV, kRoundOperands };
// run_round's single update GEMM for W and V reads each list pair as one list of 2k.
static_assert(kPairV == kPairW + 1 && kQForV == kQForW + 1 && kNextV == kNextW + 1);

template <typename T>
struct Buffers {
  using Bits = typename detail::BitsOf<T>::Type;
  Bits* max_bits = nullptr;  // batch
  int* info = nullptr;       // 2: sweeps, converged
  int* nonzero = nullptr;    // batch
  T* w[2] = {nullptr, nullptr};
  T* v[2] = {nullptr, nullptr};
  T* sigma = nullptr;
  int* order = nullptr;
  T* scratch = nullptr;  // completion of the basis
  T* g = nullptr;
  T* q = nullptr;
  int* flag = nullptr;  // detail::kSweepFlags: rotated, largest cosine
  const void** ptrs = nullptr;
  const void** gram_ptrs = nullptr;  // split Gram GEMM: per parity, its A and C lists
  T* sort_norm = nullptr;            // blocked: npad column norms for the de Rijk ordering
  int* sort_order = nullptr;
};

template <typename T>
Buffers<T> carve(const Plan& pl, const SvdShape& s, detail::WorkspaceCarver& c) {
  Buffers<T> b;
  const bool uv = s.compute_uv;
  b.max_bits = c.take<typename Buffers<T>::Bits>(s.batch);
  b.info = c.take<int>(2);
  b.nonzero = c.take<int>(s.batch);
  if (pl.small) {
    b.w[0] = c.take<T>(s.batch * pl.M * pl.N);
    if (uv) b.v[0] = c.take<T>(s.batch * pl.N * pl.N);
    b.sigma = c.take<T>(s.batch * pl.N);
    b.order = c.take<int>(s.batch * pl.N);
    if (uv) b.scratch = c.take<T>(std::min(s.batch, kSmallChunk) * 3 * pl.M);
  } else {
    b.w[0] = c.take<T>(pl.M * pl.npad);
    b.w[1] = c.take<T>(pl.M * pl.npad);
    if (uv) {
      b.v[0] = c.take<T>(pl.npad * pl.npad);
      b.v[1] = c.take<T>(pl.npad * pl.npad);
    }
    b.sigma = c.take<T>(pl.N);
    b.order = c.take<int>(pl.N);
    if (uv) b.scratch = c.take<T>(3 * pl.M);
    const std::int64_t nb2 = 2 * pl.nb;
    b.g = c.take<T>(pl.gram_splits * pl.k / 2 * nb2 * nb2);
    b.q = c.take<T>(pl.k / 2 * nb2 * nb2);
    b.flag = c.take<int>(detail::kSweepFlags);
    b.ptrs = c.take<const void*>(2 * (pl.k - 1) * kRoundOperands * pl.k);
    if (pl.gram_splits > 1)
      b.gram_ptrs = c.take<const void*>(2 * 2 * pl.k / 2 * pl.gram_full_chunks());
    b.sort_norm = c.take<T>(pl.npad);
    b.sort_order = c.take<int>(pl.npad);
  }
  return b;
}

std::size_t workspace_for(const Plan& pl, const SvdShape& s) {
  detail::WorkspaceCarver c(nullptr);
  if (s.dtype == DType::kF32) {
    carve<float>(pl, s, c);
  } else {
    carve<double>(pl, s, c);
  }
  return c.bytes();
}

/// Sets host pointer mode for the call and restores the caller's mode afterwards.
class PointerModeGuard {
 public:
  explicit PointerModeGuard(cublasHandle_t h) : h_(h) {
    if (cublasGetPointerMode(h_, &saved_) != CUBLAS_STATUS_SUCCESS) h_ = nullptr;
  }
  ~PointerModeGuard() {
    if (h_ != nullptr) cublasSetPointerMode(h_, saved_);
  }
  PointerModeGuard(const PointerModeGuard&) = delete;
  PointerModeGuard& operator=(const PointerModeGuard&) = delete;

 private:
  cublasHandle_t h_;
  cublasPointerMode_t saved_ = CUBLAS_POINTER_MODE_HOST;
};

using detail::cuda_type;
using detail::grid_1d;
template <typename T>
constexpr cublasComputeType_t compute_type() {
  return detail::pedantic_compute_type<T>();
}

/// max|a| per matrix of `count` matrices starting at `a`.
template <typename T>
absl::Status max_abs(cudaStream_t st, const T* a, std::int64_t elems, std::int64_t count,
                     typename Buffers<T>::Bits* out) {
  GC_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<std::size_t>(count) * sizeof(*out), st));
  if (elems == 0) return absl::OkStatus();
  const int per = static_cast<int>(std::clamp<std::int64_t>(elems / (256 * 16), 1, 64));
  detail::max_abs_kernel<T><<<static_cast<unsigned>(count * per), 256, 0, st>>>(a, elems, per, out);
  GC_CUDA_CHECK_LAUNCH("max_abs_kernel");
  return absl::OkStatus();
}

/// W (M x N, leading dimension ldw) <- scaled A (or A^T), for `count` matrices.
template <typename T>
absl::Status load_working(cudaStream_t st, const Plan& pl, const SvdShape& s, const T* a,
                          std::int64_t count, const typename Buffers<T>::Bits* max_bits, T* w,
                          std::int64_t ldw, std::int64_t w_batch_stride) {
  const int ti = static_cast<int>((pl.M + 31) / 32);
  const int tj = static_cast<int>((pl.N + 31) / 32);
  // m >= n: W(i, j) = A[i][j] = a[i * n + j]; m < n: W(i, j) = A[j][i] = a[j * n + i].
  const std::int64_t si = pl.transposed ? 1 : s.n;
  const std::int64_t sj = pl.transposed ? s.n : 1;
  detail::load_working_kernel<T><<<static_cast<unsigned>(count * ti * tj), dim3(32, 8), 0, st>>>(
      a, s.m * s.n, si, sj, pl.transposed, static_cast<int>(pl.M), static_cast<int>(pl.N), max_bits,
      w, ldw, w_batch_stride, ti, tj);
  GC_CUDA_CHECK_LAUNCH("load_working_kernel");
  return absl::OkStatus();
}

template <typename T>
absl::Status identity(cudaStream_t st, T* v, std::int64_t n, std::int64_t ld,
                      std::int64_t batch_stride, std::int64_t count) {
  const std::int64_t total = count * n * n;
  if (total == 0) return absl::OkStatus();
  detail::identity_kernel<T><<<grid_1d(total, 256), 256, 0, st>>>(v, n, ld, batch_stride, total);
  GC_CUDA_CHECK_LAUNCH("identity_kernel");
  return absl::OkStatus();
}

/// Singular values, U and Vt of matrices [first, first + count) from their converged W and V.
template <typename T>
absl::Status finish(cudaStream_t st, const Plan& pl, const SvdShape& s, const Buffers<T>& b,
                    const T* w, std::int64_t ldw, std::int64_t w_bs, const T* v, std::int64_t ldv,
                    std::int64_t v_bs, std::int64_t first, std::int64_t count, T* s_out, T* u,
                    T* vt) {
  const int n = static_cast<int>(pl.N);
  const std::int64_t cols = count * n;
  // sigma/order hold `count` matrices: the whole batch (small driver) or one (blocked).
  detail::column_norms_kernel<T><<<static_cast<unsigned>((cols * 32 + 255) / 256), 256, 0, st>>>(
      w, pl.M, ldw, w_bs, n, cols, b.sigma);
  GC_CUDA_CHECK_LAUNCH("column_norms_kernel");
  detail::rank_kernel<T><<<static_cast<unsigned>(count), 256, 0, st>>>(
      b.sigma, n, b.max_bits + first, b.order, s_out + first * pl.p, b.nonzero + first);
  GC_CUDA_CHECK_LAUNCH("rank_kernel");
  if (!s.compute_uv) return absl::OkStatus();

  const std::int64_t ucols = svd_u_cols(s);
  const std::int64_t vtrows = svd_vt_rows(s);
  const std::int64_t u_bs = s.m * ucols;
  const std::int64_t vt_bs = vtrows * s.n;
  // L (from W, M x lcols) and R (from V, N x N) in the outputs, as (row stride, column stride).
  T* l_base;
  std::int64_t l_di, l_dk, l_bs;
  T* r_base;
  std::int64_t r_di, r_dk, r_bs;
  if (!pl.transposed) {
    l_base = u + first * u_bs, l_di = ucols, l_dk = 1, l_bs = u_bs;
    r_base = vt + first * vt_bs, r_di = 1, r_dk = s.n, r_bs = vt_bs;
  } else {
    l_base = vt + first * vt_bs, l_di = 1, l_dk = s.n, l_bs = vt_bs;
    r_base = u + first * u_bs, r_di = ucols, r_dk = 1, r_bs = u_bs;
  }
  const int ti_l = static_cast<int>((pl.M + 31) / 32);
  const int ti_r = static_cast<int>((pl.N + 31) / 32);
  const int tk = static_cast<int>((pl.N + 31) / 32);
  detail::scatter_columns_kernel<T>
      <<<static_cast<unsigned>(count * ti_l * tk), dim3(32, 8), 0, st>>>(
          w, ldw, w_bs, b.order, b.sigma, n, true, b.nonzero + first, static_cast<int>(pl.M), n,
          l_base, l_di, l_dk, l_bs, l_dk == 1, ti_l, tk);
  GC_CUDA_CHECK_LAUNCH("scatter_columns_kernel(L)");
  detail::scatter_columns_kernel<T>
      <<<static_cast<unsigned>(count * ti_r * tk), dim3(32, 8), 0, st>>>(
          v, ldv, v_bs, b.order, b.sigma, n, false, nullptr, n, n, r_base, r_di, r_dk, r_bs,
          r_dk == 1, ti_r, tk);
  GC_CUDA_CHECK_LAUNCH("scatter_columns_kernel(R)");
  for (std::int64_t c0 = 0; c0 < count; c0 += kSmallChunk) {
    const std::int64_t cn = std::min(kSmallChunk, count - c0);
    detail::complete_basis_kernel<T><<<static_cast<unsigned>(cn), 256, 0, st>>>(
        l_base + c0 * l_bs, l_di, l_dk, l_bs, static_cast<int>(pl.M), static_cast<int>(pl.lcols),
        b.nonzero + first + c0, b.scratch, 0);
    GC_CUDA_CHECK_LAUNCH("complete_basis_kernel");
  }
  return absl::OkStatus();
}

/// Lets `kernel` launch with as much dynamic shared memory as the device allows. The value is
/// the same for every call, so requests on concurrent lanes may set it in any order: an exact
/// per-call size let one request lower the limit between another's set and its launch
/// (cudaErrorInvalidValue, seen in the GPU soak).
template <typename Kernel>
absl::Status allow_max_dynamic_smem(Kernel* kernel) {
  int device = 0;
  int optin = 0;
  GC_CUDA_TRY(cudaGetDevice(&device));
  GC_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attributes{};
  GC_CUDA_TRY(cudaFuncGetAttributes(&attributes, kernel));
  GC_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   optin - static_cast<int>(attributes.sharedSizeBytes)));
  return absl::OkStatus();
}

/// Matrices per launch of the small drivers: about 2^29 multiply-adds of sweeps (about 10 ms),
/// so that the cancellation checks between launches come often enough, and at least 1024
/// blocks to fill the GPU.
std::int64_t small_chunk(const Plan& pl) {
  const std::int64_t per_matrix = std::max<std::int64_t>(1, pl.M * pl.N * pl.N);
  return std::clamp<std::int64_t>((std::int64_t{1} << 29) / per_matrix, 1024, kSmallChunk);
}

/// Polls `pacer` after a launch of matrices [.., done) of `batch`.
absl::Status check_small_stop(detail::StopPacer& pacer, std::int64_t done, std::int64_t batch) {
  const absl::StatusOr<bool> stopping = pacer.stop_after_step();
  if (!stopping.ok()) return stopping.status();
  if (*stopping) {
    return absl::CancelledError(
        absl::StrCat("svd: cancelled after ", done, " of ", batch, " matrices"));
  }
  return absl::OkStatus();
}

/// Outputs of the small drivers (W, V in b.w[0], b.v[0]) and their info.
template <typename T>
absl::StatusOr<SvdInfo> finish_small(cudaStream_t st, const Plan& pl, const SvdShape& s,
                                     const Buffers<T>& b, T* s_out, T* u, T* vt) {
  const std::int64_t mn = pl.M * pl.N;
  if (auto st_ = finish<T>(st, pl, s, b, b.w[0], pl.M, mn, b.v[0], pl.N, pl.N * pl.N, 0, s.batch,
                           s_out, u, vt);
      !st_.ok()) {
    return st_;
  }
  int info[2] = {0, 0};
  GC_CUDA_TRY(cudaMemcpyAsync(info, b.info, sizeof(info), cudaMemcpyDeviceToHost, st));
  GC_CUDA_TRY(cudaStreamSynchronize(st));
  return SvdInfo{info[0], info[1] != 0};
}

template <typename T>
absl::StatusOr<SvdInfo> run_small(const Context& ctx, const Plan& pl, const SvdShape& s, const T* a,
                                  T* s_out, T* u, T* vt, const Buffers<T>& b, T tol, int max_sweeps,
                                  StopToken stop) {
  cudaStream_t st = ctx.stream;
  const bool uv = s.compute_uv;
  const std::int64_t mn = pl.M * pl.N;
  if (auto st_ = max_abs<T>(st, a, s.m * s.n, s.batch, b.max_bits); !st_.ok()) return st_;
  if (auto st_ = load_working<T>(st, pl, s, a, s.batch, b.max_bits, b.w[0], pl.M, mn); !st_.ok()) {
    return st_;
  }
  GC_CUDA_TRY(cudaMemsetAsync(b.info, 0, sizeof(int), st));
  GC_CUDA_TRY(cudaMemsetAsync(b.info + 1, 1, sizeof(int), st));  // nonzero: converged
  const std::int64_t chunk = small_chunk(pl);
  detail::StopPacer pacer(st, ctx.events[3], 1, stop);
  if (pl.M <= kWarpMaxM) {
    // Registers only: a group of P lanes per matrix (V = I is set up in the kernel).
    const int P = pl.M <= 8 ? 8 : (pl.M <= 16 ? 16 : 32);
    const std::int64_t per_block = kWarpThreads / 32 * (32 / P);
    for (std::int64_t c0 = 0; c0 < s.batch; c0 += chunk) {
      const std::int64_t cn = std::min(chunk, s.batch - c0);
      const unsigned grid = static_cast<unsigned>((cn + per_block - 1) / per_block);
      T* w0 = b.w[0] + c0 * mn;
      T* v0 = uv ? b.v[0] + c0 * pl.N * pl.N : nullptr;
      const int M = static_cast<int>(pl.M), N = static_cast<int>(pl.N);
      if (P == 8) {
        detail::warp_jacobi_kernel<T, 8>
            <<<grid, kWarpThreads, 0, st>>>(w0, v0, M, N, cn, uv, tol, max_sweeps, b.info);
      } else if (P == 16) {
        detail::warp_jacobi_kernel<T, 16>
            <<<grid, kWarpThreads, 0, st>>>(w0, v0, M, N, cn, uv, tol, max_sweeps, b.info);
      } else {
        detail::warp_jacobi_kernel<T, 32>
            <<<grid, kWarpThreads, 0, st>>>(w0, v0, M, N, cn, uv, tol, max_sweeps, b.info);
      }
      GC_CUDA_CHECK_LAUNCH("warp_jacobi_kernel");
      if (auto st_ = check_small_stop(pacer, c0 + cn, s.batch); !st_.ok()) return st_;
    }
    return finish_small<T>(st, pl, s, b, s_out, u, vt);
  }
  if (uv) {
    if (auto st_ = identity<T>(st, b.v[0], pl.N, pl.N, pl.N * pl.N, s.batch); !st_.ok()) return st_;
  }
  const std::size_t smem = static_cast<std::size_t>(mn + (uv ? pl.N * pl.N : 0)) * sizeof(T);
  if (auto st_ = allow_max_dynamic_smem(detail::small_jacobi_kernel<T>); !st_.ok()) return st_;
  const int pairs = static_cast<int>((pl.N + 1) / 2);
  const int threads = 32 * std::clamp(pairs, 1, 16);
  for (std::int64_t c0 = 0; c0 < s.batch; c0 += chunk) {
    const std::int64_t cn = std::min(chunk, s.batch - c0);
    detail::small_jacobi_kernel<T><<<static_cast<unsigned>(cn), threads, smem, st>>>(
        b.w[0] + c0 * mn, uv ? b.v[0] + c0 * pl.N * pl.N : nullptr, static_cast<int>(pl.M),
        static_cast<int>(pl.N), uv, tol, max_sweeps, b.info);
    GC_CUDA_CHECK_LAUNCH("small_jacobi_kernel");
    if (auto st_ = check_small_stop(pacer, c0 + cn, s.batch); !st_.ok()) return st_;
  }
  return finish_small<T>(st, pl, s, b, s_out, u, vt);
}

// ------------------------------------------------------------------------------------------
// Blocked driver, in the order run_blocked takes its steps.

/// What every step of the blocked driver reads.
template <typename T>
struct Blocked {
  const Context& ctx;
  const Plan& pl;
  const SvdShape& s;
  const Buffers<T>& b;
  T tol;
};

/// The blocked driver's preconditions: a cuBLAS handle, and sizes the int GEMM arguments and
/// 64-bit offsets hold.
absl::Status check_blocked(const Context& ctx, const Plan& pl, const SvdShape& s) {
  if (ctx.cublas == nullptr) {
    return absl::FailedPreconditionError("svd: the blocked GPU Jacobi needs ctx.cublas");
  }
  if (pl.M > std::numeric_limits<int>::max() / 2 || pl.M * pl.npad > (std::int64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("svd: matrix too large, ", s.m, " x ", s.n));
  }
  return absl::OkStatus();
}

/// Copies to b.ptrs the operand pointers of every round's batched update GEMMs, for both
/// parities of the double-buffered W and V: per slot, the pair's [Wi Wj], its half of Q, the
/// slot's place in the next round's W, and the same for V, in RoundOperand's order (k entries
/// each), so that where W and V have the same shape one GEMM of 2k products updates both. Slots
/// follow a round-robin arrangement relabelled so that round 0 is the identity (pairs (0,1), (2,3),
/// ...), which is also the order after each full sweep.
template <typename T>
absl::Status upload_round_pointers(const Blocked<T>& x) {
  const Plan& pl = x.pl;
  const Buffers<T>& b = x.b;
  const bool uv = x.s.compute_uv;
  const std::int64_t M = pl.M, npad = pl.npad, k = pl.k, nb = pl.nb, nb2 = 2 * pl.nb;
  const std::int64_t rounds = k - 1;
  std::vector<int> label(k), arr(rounds * k), pos(rounds * k);
  for (int p = 0; p < k / 2; ++p) {
    int i, j;
    detail::round_robin_pair(static_cast<int>(k), 0, p, &i, &j);
    label[i] = 2 * p;
    label[j] = 2 * p + 1;
  }
  for (int r = 0; r < rounds; ++r) {
    for (int p = 0; p < k / 2; ++p) {
      int i, j;
      detail::round_robin_pair(static_cast<int>(k), r, p, &i, &j);
      arr[r * k + 2 * p] = label[i];
      arr[r * k + 2 * p + 1] = label[j];
    }
    for (int slot = 0; slot < k; ++slot) pos[r * k + arr[r * k + slot]] = slot;
  }
  std::vector<const void*> ptrs(2 * rounds * kRoundOperands * k);
  for (int par = 0; par < 2; ++par) {
    const T* wc = b.w[par];
    T* wn = b.w[1 - par];
    const T* vc = b.v[par];
    T* vn = b.v[1 - par];
    for (int r = 0; r < rounds; ++r) {
      const void** e = ptrs.data() + (par * rounds + r) * kRoundOperands * k;
      const int next = static_cast<int>((r + 1) % rounds);
      for (int slot = 0; slot < k; ++slot) {
        const int pair = slot / 2;
        const int dest = pos[next * k + arr[r * k + slot]];
        const void* q_half = b.q + pair * nb2 * nb2 + (slot % 2) * nb * nb2;
        e[kPairW * k + slot] = wc + pair * nb2 * M;
        e[kPairV * k + slot] = uv ? vc + pair * nb2 * npad : nullptr;
        e[kQForW * k + slot] = q_half;
        e[kQForV * k + slot] = q_half;
        e[kNextW * k + slot] = wn + dest * nb * M;
        e[kNextV * k + slot] = uv ? vn + dest * nb * npad : nullptr;
      }
    }
  }
  // From pageable memory: the copy has read `ptrs` when the call returns.
  GC_CUDA_TRY(cudaMemcpyAsync(b.ptrs, ptrs.data(), ptrs.size() * sizeof(void*),
                              cudaMemcpyHostToDevice, x.ctx.stream));
  return absl::OkStatus();
}

/// Copies to b.gram_ptrs the operands of the split Gram GEMM's full chunks, for both parities of
/// W: per parity the list of [Wi Wj]'s chunks, then the list of their partial products (chunk c
/// of pair p at entry c pairs + p, as load_split_gram reads them).
template <typename T>
absl::Status upload_gram_pointers(const Blocked<T>& x) {
  const Plan& pl = x.pl;
  if (pl.gram_splits == 1) return absl::OkStatus();
  const std::int64_t pairs = pl.k / 2, nb2 = 2 * pl.nb, full = pl.gram_full_chunks();
  const std::int64_t n = pairs * full;
  std::vector<const void*> ptrs(2 * 2 * n);
  for (int par = 0; par < 2; ++par) {
    for (std::int64_t c = 0; c < full; ++c) {
      for (std::int64_t p = 0; p < pairs; ++p) {
        ptrs[(2 * par) * n + c * pairs + p] = x.b.w[par] + p * nb2 * pl.M + c * pl.gram_chunk_rows;
        ptrs[(2 * par + 1) * n + c * pairs + p] = x.b.g + (c * pairs + p) * nb2 * nb2;
      }
    }
  }
  // From pageable memory: the copy has read `ptrs` when the call returns.
  GC_CUDA_TRY(cudaMemcpyAsync(x.b.gram_ptrs, ptrs.data(), ptrs.size() * sizeof(void*),
                              cudaMemcpyHostToDevice, x.ctx.stream));
  return absl::OkStatus();
}

/// The round's Gram matrices into b.g from W's buffer `par`: one strided-batched GEMM, or with
/// the rows split, one pointer-batched GEMM over the full chunks and one strided-batched GEMM
/// over the shorter last chunk.
template <typename T>
absl::Status gram_gemm(const Blocked<T>& x, int par) {
  const Plan& pl = x.pl;
  const cublasHandle_t h = x.ctx.cublas;
  const std::int64_t pairs = pl.k / 2, nb2 = 2 * pl.nb, M = pl.M;
  const std::int64_t full = pl.gram_splits == 1 ? 0 : pl.gram_full_chunks();
  const std::int64_t done_rows = full * pl.gram_chunk_rows;
  const T one = 1, zero = 0;
  const cudaDataType_t ty = cuda_type<T>();
  const cublasComputeType_t ct = compute_type<T>();
  const int ni = static_cast<int>(nb2), ldw = static_cast<int>(M);
  if (full > 0) {
    const std::int64_t n = pairs * full;
    const void* const* list = x.b.gram_ptrs + 2 * par * n;
    GC_CUBLAS_TRY(cublasGemmBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, ni, ni,
                                      static_cast<int>(pl.gram_chunk_rows), &one, list, ty, ldw,
                                      list, ty, ldw, &zero, const_cast<void* const*>(list + n), ty,
                                      ni, static_cast<int>(n), ct, CUBLAS_GEMM_DEFAULT));
  }
  if (done_rows < M) {
    const T* w = x.b.w[par] + done_rows;
    GC_CUBLAS_TRY(cublasGemmStridedBatchedEx(
        h, CUBLAS_OP_T, CUBLAS_OP_N, ni, ni, static_cast<int>(M - done_rows), &one, w, ty, ldw,
        nb2 * M, w, ty, ldw, nb2 * M, &zero, x.b.g + full * pairs * nb2 * nb2, ty, ni, nb2 * nb2,
        static_cast<int>(pairs), ct, CUBLAS_GEMM_DEFAULT));
  }
  return absl::OkStatus();
}

/// The inner Gram solver, chosen once: kernel and launch configuration. Either it solves G from
/// the round's Gram GEMM (`kernel`), or it forms G itself from the pair's columns of W (`fused`,
/// the register form: the round then has no Gram GEMM; in f64 above kFusedGramMaxRowsF64 rows it
/// too takes G from the GEMM).
template <typename T>
struct GramSolver {
  /// gram_cholesky_jacobi_kernel<T, arithmetic type, rows a lane> or gram_jacobi_kernel<T,
  /// arithmetic type>.
  using Kernel = void (*)(const T*, int, T*, int, double, int, int*);
  /// gram_warp_jacobi_kernel<T, arithmetic type>.
  using FusedKernel = void (*)(const T*, std::int64_t, int, T*, double, int, int*);
  Kernel kernel = nullptr;
  /// From outer sweep kEscalateAfterSweeps on: the one-sided solver in double where `kernel` is
  /// that solver in float, else `kernel` itself.
  Kernel kernel_escalated = nullptr;
  FusedKernel fused = nullptr;
  /// From outer sweep kEscalateAfterSweeps on: the register form in double where `fused` is that
  /// form in float, else `fused` itself.
  FusedKernel fused_escalated = nullptr;
  std::size_t smem = 0;
  std::size_t smem_escalated = 0;  // kernel_escalated's
  int threads = 0;
};

/// The one-sided solver on the Cholesky factor where the block allows it: at 32 columns a pair in
/// one warp's registers, up to 64 with eight lanes per column pair (4 nb2 threads) in shared
/// memory, both in the element type unless tuning.inner_double (f32 escalates to double as
/// kEscalateAfterSweeps says). The two-sided one computes in the element type (f32: half the
/// shared-memory traffic and single-precision sqrt/divide on its latency-bound path) unless
/// tuning.inner_double.
template <typename T>
absl::StatusOr<GramSolver<T>> configure_gram_solver(const Plan& pl, const SvdTuning& tuning) {
  GramSolver<T> g;
  const std::int64_t nb2 = 2 * pl.nb;
  const bool one_sided = pl.inner_one_sided;
  if (one_sided && nb2 == detail::kWarpPairColumns) {
    g.smem = 0;
    g.threads = detail::kWarpGramThreads;
    // f32 in float rounds the factor of a nearly dependent column pair more coarsely: on the
    // rank-one noise of integer outer products (150 x 100) the float form stalled for 60 sweeps,
    // so stalled inputs get the double form from kEscalateAfterSweeps on.
    g.fused = tuning.inner_double ? detail::gram_warp_jacobi_kernel<T, double>
                                  : detail::gram_warp_jacobi_kernel<T, T>;
    g.fused_escalated = detail::gram_warp_jacobi_kernel<T, double>;
    return g;
  }
  if (one_sided) {
    // R and Q (leading dimension nb2 + 8), G's diagonal, its square roots and the pivot
    // reciprocals, in the arithmetic type.
    const bool in_double = sizeof(T) == 8 || tuning.inner_double;
    const std::size_t elems = 2 * static_cast<std::size_t>(nb2) * (nb2 + 8) + 3 * nb2;
    g.smem_escalated = elems * sizeof(double);
    g.smem = in_double ? g.smem_escalated : elems * sizeof(T);
    g.threads = static_cast<int>(4 * nb2);
    // f32 in float: as the register form, it may stall on rank-one noise, hence the escalation.
    g.kernel_escalated = nb2 <= 32 ? detail::gram_cholesky_jacobi_kernel<T, double, 4>
                                   : detail::gram_cholesky_jacobi_kernel<T, double, 8>;
    g.kernel = in_double   ? g.kernel_escalated
               : nb2 <= 32 ? detail::gram_cholesky_jacobi_kernel<T, T, 4>
                           : detail::gram_cholesky_jacobi_kernel<T, T, 8>;
    if (absl::Status st = allow_max_dynamic_smem(g.kernel_escalated); !st.ok()) return st;
  } else {
    const bool inner_double = sizeof(T) == 8 || tuning.inner_double;
    const std::size_t ti_size = inner_double ? sizeof(double) : sizeof(T);
    g.smem = (2 * static_cast<std::size_t>(nb2) * (nb2 + 1) + nb2) * ti_size + nb2 * sizeof(int);
    // Update items of a round: (nb2/2)^2 blocks of G and nb2^2/2 row pieces of Q; about three a
    // thread (1024 threads at nb2 = 64: few pairs run at once, so each wants its SM's warps).
    const std::int64_t gram_items = nb2 * nb2 / 4 + nb2 * nb2 / 2;
    g.threads =
        static_cast<int>(std::clamp<std::int64_t>((gram_items / 3 + 31) / 32 * 32, 32, 1024));
    g.kernel =
        inner_double ? detail::gram_jacobi_kernel<T, double> : detail::gram_jacobi_kernel<T, T>;
    g.kernel_escalated = g.kernel;
    g.smem_escalated = g.smem;
  }
  if (absl::Status st = allow_max_dynamic_smem(g.kernel); !st.ok()) return st;
  return g;
}

/// How the inner solver runs in an outer sweep: its sweeps, and whether it is escalated.
struct InnerRun {
  int sweeps = 1;
  bool escalated = false;
};

/// One launch of the configured inner solver over the k / 2 block pairs of a round.
template <typename T>
void launch_gram_solver(const GramSolver<T>& gram, const Plan& pl, cudaStream_t st, const T* g,
                        T* q, T tol, InnerRun inner, int* flag) {
  const auto pairs = static_cast<unsigned>(pl.k / 2);
  const typename GramSolver<T>::Kernel kernel =
      inner.escalated ? gram.kernel_escalated : gram.kernel;
  const std::size_t smem = inner.escalated ? gram.smem_escalated : gram.smem;
  kernel<<<pairs, gram.threads, smem, st>>>(g, pl.gram_splits, q, 2 * pl.nb, tol, inner.sweeps,
                                            flag);
}

/// One launch of the fused solver over the k / 2 block pairs of a round: on W's buffer `src`
/// with `rows` rows, or on the round's Gram matrices `src` where rows is 0.
template <typename T>
void launch_fused_gram_solver(const GramSolver<T>& gram, const Plan& pl, cudaStream_t st,
                              const T* src, std::int64_t rows, T* q, T tol, InnerRun inner,
                              int* flag) {
  const auto pairs = static_cast<unsigned>(pl.k / 2);
  const typename GramSolver<T>::FusedKernel kernel =
      inner.escalated ? gram.fused_escalated : gram.fused;
  kernel<<<pairs, gram.threads, gram.smem, st>>>(src, rows, pl.gram_splits, q, tol, inner.sweeps,
                                                 flag);
}

/// Matrix `bi` into W (buffer 0; the padding columns zero) and V = I.
template <typename T>
absl::Status load_blocked(const Blocked<T>& x, const T* a, std::int64_t bi) {
  const Plan& pl = x.pl;
  const cudaStream_t st = x.ctx.stream;
  GC_CUDA_TRY(cudaMemsetAsync(x.b.w[0], 0, pl.M * pl.npad * sizeof(T), st));
  SvdShape one_shape = x.s;
  one_shape.batch = 1;
  if (auto st_ = load_working<T>(st, pl, one_shape, a + bi * x.s.m * x.s.n, 1, x.b.max_bits + bi,
                                 x.b.w[0], pl.M, pl.M * pl.npad);
      !st_.ok()) {
    return st_;
  }
  if (!x.s.compute_uv) return absl::OkStatus();
  return identity<T>(st, x.b.v[0], pl.npad, pl.npad, pl.npad * pl.npad, 1);
}

/// De Rijk: the columns of W (and V's) in descending norm order, from buffer `cur` into the
/// other one, which the sweep then starts from. Padding columns (zero) stay last.
template <typename T>
absl::Status sort_columns(const Blocked<T>& x, int cur) {
  const Plan& pl = x.pl;
  const Buffers<T>& b = x.b;
  const cudaStream_t st = x.ctx.stream;
  const std::int64_t M = pl.M, npad = pl.npad;
  const int ncols = static_cast<int>(npad);
  detail::column_norms_kernel<T><<<static_cast<unsigned>((npad * 32 + 255) / 256), 256, 0, st>>>(
      b.w[cur], M, M, 0, ncols, npad, b.sort_norm);
  GC_CUDA_CHECK_LAUNCH("column_norms_kernel(sort)");
  detail::sort_order_kernel<T>
      <<<grid_1d(npad, 256), 256, 0, st>>>(b.sort_norm, ncols, b.sort_order);
  GC_CUDA_CHECK_LAUNCH("sort_order_kernel");
  detail::gather_columns_kernel<T>
      <<<dim3(grid_1d(M, 256), static_cast<unsigned>(npad)), 256, 0, st>>>(b.w[cur], b.w[1 - cur],
                                                                           M, M, b.sort_order);
  GC_CUDA_CHECK_LAUNCH("gather_columns_kernel(W)");
  if (x.s.compute_uv) {
    detail::gather_columns_kernel<T>
        <<<dim3(grid_1d(npad, 256), static_cast<unsigned>(npad)), 256, 0, st>>>(
            b.v[cur], b.v[1 - cur], npad, npad, b.sort_order);
    GC_CUDA_CHECK_LAUNCH("gather_columns_kernel(V)");
  }
  return absl::OkStatus();
}

/// Round r of a sweep, from buffer `par`: G = [Wi Wj]^T [Wi Wj] for every block pair (gram_gemm,
/// or in the register form's own launch), diagonalised by up to
/// `inner_sweeps` sweeps of the inner solver into Q (raising b.flag if it rotated), then [Wi Wj] Q
/// and [Vi Vj] Q into the slots of the other buffer (batched GEMMs through the pointer table).
template <typename T>
absl::Status run_round(const Blocked<T>& x, const GramSolver<T>& gram, InnerRun inner, int par,
                       int r, detail::PhaseProfile& prof) {
  const Plan& pl = x.pl;
  const Buffers<T>& b = x.b;
  const cudaStream_t st = x.ctx.stream;
  const cublasHandle_t h = x.ctx.cublas;
  const std::int64_t M = pl.M, npad = pl.npad, k = pl.k, nb = pl.nb, nb2 = 2 * pl.nb;
  const std::int64_t rounds = k - 1;
  const T one = 1, zero = 0;
  const cudaDataType_t ty = cuda_type<T>();
  const cublasComputeType_t ct = compute_type<T>();
  const void* const* e =
      reinterpret_cast<const void* const*>(b.ptrs) + (par * rounds + r) * kRoundOperands * k;
  if (pl.gram_in_block) {
    prof.mark(kInnerJacobi);
    launch_fused_gram_solver<T>(gram, pl, st, b.w[par], M, b.q, x.tol, inner, b.flag);
  } else {
    prof.mark(kGramGemm);
    if (absl::Status st_ = gram_gemm<T>(x, par); !st_.ok()) return st_;
    prof.mark(kInnerJacobi);
    if (gram.fused != nullptr) {
      launch_fused_gram_solver<T>(gram, pl, st, b.g, 0, b.q, x.tol, inner, b.flag);
    } else {
      launch_gram_solver<T>(gram, pl, st, b.g, b.q, x.tol, inner, b.flag);
    }
  }
  GC_CUDA_CHECK_LAUNCH("inner Gram solver");
  prof.mark(kUpdateGemms);
  // `batch` products of rows x nb from the lists starting at `pair`, `q` and `next`.
  const auto update = [&](RoundOperand pair, RoundOperand q, RoundOperand next, std::int64_t rows,
                          std::int64_t batch) {
    return cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(rows),
                               static_cast<int>(nb), static_cast<int>(nb2), &one, e + pair * k, ty,
                               static_cast<int>(rows), e + q * k, ty, static_cast<int>(nb2), &zero,
                               const_cast<void* const*>(e + next * k), ty, static_cast<int>(rows),
                               static_cast<int>(batch), ct, CUBLAS_GEMM_DEFAULT);
  };
  if (x.s.compute_uv && M == npad) {
    // W and V of the same shape (square N, a multiple of 2 nb): one launch for both.
    GC_CUBLAS_TRY(update(kPairW, kQForW, kNextW, M, 2 * k));
  } else {
    GC_CUBLAS_TRY(update(kPairW, kQForW, kNextW, M, k));
    if (x.s.compute_uv) GC_CUBLAS_TRY(update(kPairV, kQForV, kNextV, npad, k));
  }
  prof.mark(detail::PhaseProfile::kUntimed);
  return absl::OkStatus();
}

/// Whether every pair of W's N columns (buffer `cur`) passes the inner solvers' test at the
/// outer tolerance: G = W^T W (one GEMM in the element type, never TF32, into the other W
/// buffer, free between sweeps: M npad >= N^2) tested by gram_unconverged_kernel. This is the
/// test that a sweep rotating nothing would make, pair set by pair set, on the same W, at the
/// same tolerance; only G's rounding differs (one GEMM over all rows, where the rounds sum row
/// chunks in double or form G in the solver's block), so a pair within rounding of the tolerance
/// may be decided either way, as it may from one sweep to the next.
template <typename T>
absl::StatusOr<bool> whole_gram_passes(const Blocked<T>& x, int cur) {
  const Plan& pl = x.pl;
  const cudaStream_t st = x.ctx.stream;
  const int n = static_cast<int>(pl.N), m = static_cast<int>(pl.M);
  const T one = 1, zero = 0;
  T* g = x.b.w[1 - cur];
  GC_CUDA_TRY(cudaMemsetAsync(x.b.flag, 0, sizeof(int), st));
  GC_CUBLAS_TRY(cublasGemmEx(x.ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, n, n, m, &one, x.b.w[cur],
                             cuda_type<T>(), m, x.b.w[cur], cuda_type<T>(), m, &zero, g,
                             cuda_type<T>(), n, compute_type<T>(), CUBLAS_GEMM_DEFAULT));
  const std::int64_t entries = static_cast<std::int64_t>(n) * n;
  detail::gram_unconverged_kernel<T>
      <<<static_cast<unsigned>(std::clamp<std::int64_t>((entries + 255) / 256, 1, 4096)), 256, 0,
         st>>>(g, n, x.tol, x.b.flag);
  GC_CUDA_CHECK_LAUNCH("gram_unconverged_kernel");
  int flag = 0;
  GC_CUDA_TRY(cudaMemcpyAsync(&flag, x.b.flag, sizeof(int), cudaMemcpyDeviceToHost, st));
  GC_CUDA_TRY(cudaStreamSynchronize(st));
  return flag == 0;
}

/// Sweeps of the loaded matrix until it has converged or max_sweeps: each an optional column sort
/// and k - 1 rounds, then one flag read. A sweep that rotated nothing has converged; one that
/// rotated, but no pair with a cosine past settle_cosine, is followed by whole_gram_passes, which
/// saves the sweep that would only confirm convergence when it passes (tuning.settle_check). Sweeps
/// from kEscalateAfterSweeps on give the inner solver more sweeps. `done_rounds` counts the steps
/// that switched buffers so far: its parity says which buffer holds W and V.
struct SweepResult {
  int sweeps = 0;
  bool converged = false;
  int whole_gram_checks = 0;
  std::vector<float> cosines;  // per sweep, the largest cosine rotated (0: none)
};

/// Largest cosine of a sweep after which whole_gram_passes is first tried: tol^(1/5).
/// Convergence is quadratic, but with a spread constant: on the H200 (24 random solves, n =
/// 256..2048, default tol; docs/img/svd_settle_cosines_h200_2026-11-29.txt) the last sweep that
/// rotated anything had largest cosines up to 6.1e-2 in f32 (tol^(1/5): 0.07..0.09) and 2.7e-5
/// in f64 (1.3e-3..1.6e-3): tol^(1/5) catches all 24, sqrt(tol) caught half. In 10 of them the
/// sweep before was below it too, and that check failed. A failed check costs one GEMM (0.1 ms
/// at n = 1024, 0.45 ms at f32 2048, about a tenth of a sweep at f32 8192); a passed one saves a
/// sweep. After a failed check at cosine c the next waits for a sweep below c / 4
/// (kSettleBackoff), so that an input converging only linearly does not pay one every sweep.
template <typename T>
float settle_cosine(T tol) {
  return static_cast<float>(std::pow(static_cast<double>(tol), 0.2));
}
constexpr float kSettleBackoff = 0.25f;
/// Rounds between cancellation checks: about 5 ms of work each, from the round's GEMM flops
/// (Gram matrices and the updates of W and V of k / 2 block pairs) at 10 TFLOP/s.
std::int64_t rounds_per_check(const Plan& pl) {
  const double round_flops = 4.0 * static_cast<double>(pl.npad) * pl.nb *
                             (2.0 * static_cast<double>(pl.M) + static_cast<double>(pl.npad));
  return static_cast<std::int64_t>(std::clamp(5e-3 * 1e13 / round_flops, 1.0, 64.0));
}

template <typename T>
absl::StatusOr<SweepResult> sweep_until_converged(const Blocked<T>& x, const GramSolver<T>& gram,
                                                  bool sort, bool settle_check, int max_sweeps,
                                                  StopToken stop, detail::PhaseProfile& prof,
                                                  std::int64_t& done_rounds) {
  const cudaStream_t st = x.ctx.stream;
  const std::int64_t rounds = x.pl.k - 1;
  detail::StopPacer pacer(st, x.ctx.events[3], rounds_per_check(x.pl), stop);
  SweepResult out;
  float check_below = settle_cosine(x.tol);  // the largest cosine that triggers a check
  while (!out.converged && out.sweeps < max_sweeps) {
    if (stop.stop_requested()) {
      GC_CUDA_TRY(cudaStreamSynchronize(st));
      return absl::CancelledError(absl::StrCat("svd: cancelled after ", out.sweeps, " sweeps"));
    }
    GC_CUDA_TRY(cudaMemsetAsync(x.b.flag, 0, detail::kSweepFlags * sizeof(int), st));
    if (sort) {
      if (auto st_ = sort_columns<T>(x, static_cast<int>(done_rounds % 2)); !st_.ok()) return st_;
      ++done_rounds;
    }
    const bool escalated = out.sweeps >= kEscalateAfterSweeps;
    const InnerRun inner{
        escalated ? std::max(x.pl.inner_sweeps, kEscalatedInnerSweeps) : x.pl.inner_sweeps,
        escalated};
    for (int r = 0; r < rounds; ++r, ++done_rounds) {
      if (auto st_ = run_round<T>(x, gram, inner, static_cast<int>(done_rounds % 2), r, prof);
          !st_.ok()) {
        return st_;
      }
      const absl::StatusOr<bool> stopping = pacer.stop_after_step();
      if (!stopping.ok()) return stopping.status();
      if (*stopping) {
        return absl::CancelledError(absl::StrCat("svd: cancelled in sweep ", out.sweeps + 1,
                                                 " after round ", r + 1, " of ", rounds));
      }
    }
    int flags[detail::kSweepFlags] = {};
    GC_CUDA_TRY(cudaMemcpyAsync(flags, x.b.flag, sizeof(flags), cudaMemcpyDeviceToHost, st));
    GC_CUDA_TRY(cudaStreamSynchronize(st));
    ++out.sweeps;
    out.converged = flags[detail::kRotatedFlag] == 0;
    const float largest_cosine =
        out.converged ? 0.0f : std::bit_cast<float>(flags[detail::kLargestCosineFlag]);
    out.cosines.push_back(largest_cosine);
    if (!out.converged && settle_check && largest_cosine <= check_below) {
      prof.mark(kWholeGramCheck);
      const absl::StatusOr<bool> passed =
          whole_gram_passes<T>(x, static_cast<int>(done_rounds % 2));
      prof.mark(detail::PhaseProfile::kUntimed);
      if (!passed.ok()) return passed.status();
      ++out.whole_gram_checks;
      out.converged = *passed;
      check_below = kSettleBackoff * largest_cosine;
    }
    prof.collect();
    stop.report_steps(out.sweeps, max_sweeps);  // after the flag read the sweep waits on anyway
  }
  return out;
}

/// Columns in blocks of nb; block pairs of a round orthogonalised together (see the top of
/// this file). The matrices of a batch go one after another.
template <typename T>
absl::StatusOr<SvdInfo> run_blocked(const Context& ctx, const Plan& pl, const SvdShape& s,
                                    const T* a, T* s_out, T* u, T* vt, const Buffers<T>& b, T tol,
                                    int max_sweeps, const SvdTuning& tuning, StopToken stop) {
  if (absl::Status st_ = check_blocked(ctx, pl, s); !st_.ok()) return st_;
  const Blocked<T> x{ctx, pl, s, b, tol};
  const cudaStream_t st = ctx.stream;
  PointerModeGuard guard(ctx.cublas);
  GC_CUBLAS_TRY(cublasSetPointerMode(ctx.cublas, CUBLAS_POINTER_MODE_HOST));
  if (absl::Status st_ = upload_round_pointers<T>(x); !st_.ok()) return st_;
  if (absl::Status st_ = upload_gram_pointers<T>(x); !st_.ok()) return st_;
  const absl::StatusOr<GramSolver<T>> gram = configure_gram_solver<T>(pl, tuning);
  if (!gram.ok()) return gram.status();
  detail::PhaseProfile prof = round_profile(ctx.stream, tuning.profile);
  // gather_columns_kernel has a grid column (y) per matrix column: at most 65535.
  const bool sort = tuning.sort_columns && pl.npad <= 65535;
  if (auto st_ = max_abs<T>(st, a, s.m * s.n, s.batch, b.max_bits); !st_.ok()) return st_;
  SvdInfo info{0, true};
  int whole_gram_checks = 0;
  std::string cosines;  // profile: each sweep's largest cosine, matrix after matrix
  for (std::int64_t bi = 0; bi < s.batch; ++bi) {
    if (absl::Status st_ = load_blocked<T>(x, a, bi); !st_.ok()) return st_;
    std::int64_t done_rounds = 0;
    const absl::StatusOr<SweepResult> swept = sweep_until_converged<T>(
        x, *gram, sort, tuning.settle_check, max_sweeps, stop, prof, done_rounds);
    if (!swept.ok()) return swept.status();
    const int fin = static_cast<int>(done_rounds % 2);
    if (auto st_ = finish<T>(st, pl, s, b, b.w[fin], pl.M, pl.M * pl.npad, b.v[fin], pl.npad,
                             pl.npad * pl.npad, bi, 1, s_out, u, vt);
        !st_.ok()) {
      return st_;
    }
    info.sweeps = std::max(info.sweeps, swept->sweeps);
    info.converged = info.converged && swept->converged;
    whole_gram_checks += swept->whole_gram_checks;
    if (tuning.profile) {
      for (const float c : swept->cosines) absl::StrAppend(&cosines, absl::StrFormat("%.1e ", c));
    }
  }
  GC_CUDA_TRY(cudaStreamSynchronize(st));
  prof.report(absl::StrCat("svd profile: N=", pl.N, " nb=", pl.nb, " sweeps=", info.sweeps,
                           " whole-gram checks=", whole_gram_checks, " largest cosines ", cosines,
                           "(settle at ", settle_cosine(tol), ")"));
  return info;
}

template <typename T>
absl::StatusOr<SvdInfo> run(const Context& ctx, const SvdShape& s, const SvdTuning& tuning,
                            const void* a, void* s_out, void* u, void* vt, void* workspace,
                            StopToken stop) {
  const Plan pl = make_plan(s, tuning);
  detail::WorkspaceCarver c(workspace);
  const Buffers<T> b = carve<T>(pl, s, c);
  const T tol = static_cast<T>(effective_tolerance(s));
  const int max_sweeps = s.max_sweeps > 0 ? s.max_sweeps : kSvdDefaultMaxSweeps;
  const T* ta = static_cast<const T*>(a);
  T* ts = static_cast<T*>(s_out);
  T* tu = static_cast<T*>(u);
  T* tvt = static_cast<T*>(vt);
  if (pl.small) return run_small<T>(ctx, pl, s, ta, ts, tu, tvt, b, tol, max_sweeps, stop);
  return run_blocked<T>(ctx, pl, s, ta, ts, tu, tvt, b, tol, max_sweeps, tuning, stop);
}

/// p = 0 (an empty side): no values; full U (m x m) and Vt (n x n) are identities.
template <typename T>
absl::Status empty_case(const Context& ctx, const SvdShape& s, void* u, void* vt) {
  if (!s.compute_uv || !s.full_matrices) return absl::OkStatus();
  if (auto st = identity<T>(ctx.stream, static_cast<T*>(u), s.m, s.m, s.m * s.m, s.batch);
      !st.ok()) {
    return st;
  }
  return identity<T>(ctx.stream, static_cast<T*>(vt), s.n, s.n, s.n * s.n, s.batch);
}

}  // namespace

std::size_t svd_workspace_bytes(const SvdShape& shape, const SvdTuning& tuning) {
  if (!validate(shape).ok() || !validate(tuning).ok() || shape.batch == 0 ||
      std::min(shape.m, shape.n) == 0) {
    return 0;
  }
  return workspace_for(make_plan(shape, tuning), shape);
}

absl::StatusOr<SvdInfo> svd_jacobi(const Context& ctx, const void* a, void* s, void* u, void* vt,
                                   const SvdShape& shape, void* workspace,
                                   std::size_t workspace_bytes, StopToken stop,
                                   const SvdTuning& tuning) {
  if (absl::Status st = validate(shape); !st.ok()) return st;
  if (absl::Status st = validate(tuning); !st.ok()) return st;
  if (shape.m > std::numeric_limits<int>::max() || shape.n > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError("svd: m and n must fit in 32 bits");
  }
  const std::size_t need = svd_workspace_bytes(shape, tuning);
  if (workspace_bytes < need || (need > 0 && workspace == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat("svd: workspace of ", workspace_bytes,
                                                   " bytes is smaller than the ", need, " needed"));
  }
  const std::int64_t p = std::min(shape.m, shape.n);
  if (shape.batch > 0 && p > 0) {
    if (a == nullptr || s == nullptr || (shape.compute_uv && (u == nullptr || vt == nullptr))) {
      return absl::InvalidArgumentError("svd: null input or output pointer");
    }
  }
  if (stop.stop_requested()) return absl::CancelledError("svd: cancelled before the first sweep");
  if (shape.batch == 0) return SvdInfo{0, true};
  if (p == 0) {
    absl::Status st = shape.dtype == DType::kF32 ? empty_case<float>(ctx, shape, u, vt)
                                                 : empty_case<double>(ctx, shape, u, vt);
    if (!st.ok()) return st;
    GC_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
    return SvdInfo{0, true};
  }
  if (shape.dtype == DType::kF32) {
    return run<float>(ctx, shape, tuning, a, s, u, vt, workspace, stop);
  }
  return run<double>(ctx, shape, tuning, a, s, u, vt, workspace, stop);
}

}  // namespace gcompute::kernels::cuda
