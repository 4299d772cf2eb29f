// SPDX-License-Identifier: Apache-2.0
// Singular value decomposition A = U * diag(S) * Vt: shapes, methods and what the iteration did.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "gcompute/kernels/dtype.hpp"
#include "gcompute/kernels/enum_table.hpp"

namespace gcompute::kernels {

/// How the SVD is computed. Every method returns the same outputs (see SvdShape).
enum class SvdMethod : std::uint8_t {
  /// The fastest method of the backend (CPU: LAPACK ?gesdd, divide and conquer; CUDA: kPolar
  /// where min(m, n) > 64, else the batched one-sided Jacobi). Singular values are accurate to
  /// about eps * sigma_1, so small ones may lose relative accuracy.
  kAuto,
  /// One-sided Jacobi (CPU: LAPACK ?gejsv, preconditioned by QR with full pivoting). Small
  /// singular values keep high relative accuracy when A = D1 * B * D2 with diagonal D1, D2 and
  /// a well-conditioned B (errors ~ eps * cond(B) * sigma_i instead of eps * sigma_1).
  kJacobi,
  /// Polar decomposition A = Up * H by QDWH (QR- and Cholesky-based iterations), then the
  /// symmetric eigensolver on H = V * diag(S) * V^T, and U = Up * V.
  kPolar,
};

/// Lower-case name as used in messages ("auto", "jacobi", "polar").
constexpr const char* svd_method_name(SvdMethod m) {
  return enum_name<SvdMethod::kPolar>(m, {"auto", "jacobi", "polar"});
}

/// Shape and options of a (batched) SVD of m x n matrices (f32 or f64), row-major.
/// With p = min(m, n), the outputs per matrix are:
///   S  : p values, descending, non-negative;
///   U  : m x p (thin) or m x m (full_matrices), orthonormal columns;
///   Vt : p x n (thin) or n x n (full_matrices), orthonormal rows.
/// U and Vt are neither read nor written when compute_uv is false (they may be null).
struct SvdShape {
  std::int64_t batch = 1;
  std::int64_t m = 0;
  std::int64_t n = 0;
  DType dtype = DType::kF64;
  bool compute_uv = true;
  bool full_matrices = false;
  /// Which algorithm (see SvdMethod).
  SvdMethod method = SvdMethod::kAuto;
  /// CUDA Jacobi convergence: a pair (i, j) is orthogonal once |a_i . a_j| <= tol * |a_i| * |a_j|.
  /// 0 selects the default, sqrt(max(m, n)) * machine epsilon of dtype (as LAPACK's xGESVJ).
  /// The CPU methods have their own stopping rules and ignore it.
  double tolerance = 0.0;
  /// Upper bound on sweeps of the CUDA Jacobi (a sweep visits every pair once) and on QDWH
  /// iterations of kPolar. 0 selects the default, 60. LAPACK's own iterations (CPU kAuto and
  /// kJacobi) have fixed limits and ignore it.
  int max_sweeps = 0;
};

/// What the iteration did. For a batch: the largest count and whether all converged.
/// sweeps counts Jacobi sweeps (CUDA) or QDWH iterations (kPolar); it is 0 where the routine
/// does not report one (CPU kAuto: ?gesdd; CPU kJacobi: ?gejsv keeps its count internal).
/// converged is false where LAPACK reported no convergence (info > 0) or the sweep or
/// iteration limit was reached; the outputs are written all the same.
struct SvdInfo {
  int sweeps = 0;
  bool converged = false;
};

constexpr int kSvdDefaultMaxSweeps = 60;

/// How the GPU drivers go about it (speed only: the contract above holds for every valid
/// setting; the CPU ignores it). The server reads it once at start-up from the environment
/// (cuda::tuning_from_environment, docs/dev/knobs.md); benchmarks and tests set it directly.
struct SvdTuning {
  /// Column block width of the blocked driver: 8..64, a multiple of 8; 0 picks by N and type (16
  /// up to N = 256 in f64 and N = 512 in f32, 32 above).
  int block = 0;
  /// Blocked driver: about how many products the round's Gram GEMM is split into, over row chunks
  /// of W (split-K; chunks of at least 256 rows, multiples of 32, but the last, which may be
  /// shorter; no split below 512 rows); 0 picks 256. 1..65536.
  int gram_products = 0;
  /// Jacobi sweeps on each block pair's Gram matrix, 1..30. Measured on the H200 (f32,
  /// n = 256..2048, ms): 4 sweeps 29.6 / 77.3 / 190 / 497, 2 sweeps 19.0 / 49.6 / 129 / 362,
  /// 1 sweep 12.0 / 31.1 / 81.9 / 259, at the cost of at most one more outer sweep (the inner
  /// solve is latency-bound). Outer sweeps after the 20th use at least 4: one converges only
  /// slowly on the clustered rounding noise of exactly rank-deficient inputs.
  int inner_sweeps = 1;
  /// The blocked driver's inner solver on each block pair's Gram matrix G.
  enum class InnerSolver {
    kAuto,      ///< one-sided above N = 256 and at block width 16, two-sided otherwise
    kTwoSided,  ///< two-sided Jacobi on G
    kOneSided,  ///< one-sided Jacobi on G's Cholesky factor (block widths up to 32, width 16
                ///< in one warp's registers; above 32, two-sided)
  };
  InnerSolver inner_solver = InnerSolver::kAuto;
  /// f32: the inner solvers compute in double (f64 always does; f32 otherwise computes in float,
  /// and its one-sided solvers switch to double after 20 outer sweeps).
  bool inner_double = false;
  /// De Rijk ordering: the blocked driver sorts the columns by norm before every sweep.
  bool sort_columns = true;
  /// Blocked driver: after a sweep that rotated, but no pair of columns with a cosine above
  /// tolerance^(1/5), test the whole W on one Gram GEMM instead of sweeping again only to find
  /// nothing to rotate (one sweep fewer when it passes; the same test at the same tolerance, on a
  /// Gram matrix rounded differently).
  bool settle_check = true;
  /// Splits the device time of a call by step (CUDA events) and prints the sums to stderr: the
  /// blocked Jacobi driver's Gram GEMM, inner Jacobi, update GEMMs and whole-Gram checks (with
  /// each sweep's largest cosine) once per call; the polar
  /// method's QR and Cholesky steps, convergence tests, eigensolver and factors once per matrix.
  bool profile = false;
};

/// INVALID_ARGUMENT naming the field unless block is 0 or a multiple of 8 in 8..64,
/// gram_products is in 0..65536 and inner_sweeps is in 1..30.
absl::Status validate(const SvdTuning& tuning);

/// The tolerance actually used (the default resolved).
double effective_tolerance(const SvdShape& shape);

/// INVALID_ARGUMENT for negative sizes, a dtype other than f32/f64, an unknown method,
/// tolerance < 0 or >= 1, or max_sweeps < 0.
absl::Status validate(const SvdShape& shape);

/// Columns of U and rows of Vt for this shape.
inline std::int64_t svd_u_cols(const SvdShape& s) {
  return s.full_matrices ? s.m : (s.m < s.n ? s.m : s.n);
}
inline std::int64_t svd_vt_rows(const SvdShape& s) {
  return s.full_matrices ? s.n : (s.m < s.n ? s.m : s.n);
}

}  // namespace gcompute::kernels
