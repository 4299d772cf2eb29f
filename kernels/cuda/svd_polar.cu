// SPDX-License-Identifier: Apache-2.0
// cuda::svd_polar: SVD through the polar decomposition on the GPU, the algorithm of
// kernels/cpu/svd_polar.cc built from cuBLAS and cuSOLVER calls.
//
// The factored matrix is W (M x N, M >= N, column-major): A when m >= n, A^T when m < n (a plain
// copy of the row-major buffer). W is scaled by a power of two that brings max|w| into [1, 2),
// and a tall W is reduced to its triangular factor (W = Q R). QDWH then computes the polar
// factor Up of A0 (W, or R) with X0 = A0 / ||A0||_F and the lower bound l0 = eps on
// sigma_min(X0): while c_k > 100 a step takes the QR factorization of [sqrt(c_k) X; I]
// (geqrf, orgqr, one GEMM while c_k eps > 1e-3; below that by CholeskyQR2: two passes of syrk,
// potrf and trsm), afterwards the Cholesky factor of I + c_k X^T X (syrk, potrf, two trsm). H =
// Up^T A0 is symmetrised and diagonalised by syevd: H = V diag(lambda) V^T, and sigma = |lambda| in
// descending order, U = Up V (Q [Up V; 0] for a tall W, with Q's further columns for a full U). The
// left factor is re-orthonormalised (geqrf, orgqr) only where rounding-level singular values leave
// Up without an isometry on their directions, as on the host. For m < n the roles of the two
// factors swap.
//
// Every GEMM computes in the element precision (no TF32). The host polls `stop` before every
// iteration and synchronises where a result decides: potrf's info (the Cholesky step or the QR
// one), and once l_k = 1 the orthogonality of X and the step size (converged or not). A batch
// is solved one matrix after another.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "detail/cusolver_params.hpp"
#include "detail/launch_helpers.hpp"
#include "detail/phase_profile.hpp"
#include "detail/workspace_carver.hpp"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/svd.hpp"
#include "gcompute/kernels/cuda/unique_handle.hpp"
#include "gcompute/kernels/qdwh.hpp"

namespace gcompute::kernels::cuda {
namespace {

constexpr const char* kOp = "svd";

/// SvdTuning::profile: a polar SVD's device time by step, printed once per matrix.
enum PolarPhase {
  kPrepare,
  kQrStep,
  kCholeskyQrStep,
  kCholeskyStep,
  kConvergenceTest,
  kEigen,
  kFactors
};
detail::PhaseProfile polar_profile(StreamView stream, bool on) {
  return detail::PhaseProfile(
      stream, on,
      {"prepare (copy, scale, reduce)", "qr steps", "cholesky-qr2 steps", "cholesky steps",
       "convergence tests", "H and syevd", "factors and outputs"});
}

using detail::cuda_type;
using detail::CusolverParams;
using detail::grid_1d;

// ---- kernels ---------------------------------------------------------------------------------

/// Z (2n x n, column-major) <- [root_c * X; I].
template <typename T>
__global__ void stack_with_identity_kernel(const T* x, std::int64_t n, T root_c, T* z) {
  const std::int64_t total = 2 * n * n;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % (2 * n), j = e / (2 * n);
    z[e] = i < n ? root_c * x[i + j * n] : (i - n == j ? T(1) : T(0));
  }
}

/// The n x n identity (column-major, leading dimension n).
template <typename T>
__global__ void identity_kernel(T* z, std::int64_t n) {
  const std::int64_t total = n * n;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    z[e] = e % n == e / n ? T(1) : T(0);
  }
}

/// Ones on the diagonal of a zeroed rows x cols matrix (row- and column-major alike).
template <typename T>
__global__ void unit_diagonal_kernel(T* out, std::int64_t cols, std::int64_t count) {
  for (std::int64_t k = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[k * cols + k] = T(1);
  }
}

/// R (n x n) <- the upper triangle of the first n rows of w (leading dimension ldw), zeros below.
template <typename T>
__global__ void upper_triangle_kernel(const T* w, std::int64_t ldw, std::int64_t n, T* r) {
  const std::int64_t total = n * n;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % n, j = e / n;
    r[e] = i <= j ? w[i + j * ldw] : T(0);
  }
}

/// out(:, k) = in(:, order[k]) for rows x cols column-major matrices (leading dimension rows).
template <typename T>
__global__ void permute_columns_kernel(const T* in, std::int64_t rows, std::int64_t cols,
                                       const int* order, T* out) {
  const std::int64_t total = rows * cols;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % rows, k = e / rows;
    out[e] = in[i + static_cast<std::int64_t>(order[k]) * rows];
  }
}

/// deviation[0] = max over the first `cols` columns of | ||u(:, j)||_2 - 1 | (one block per
/// column; deviation must hold 0 before the launch: it is combined with atomicMax on the bits of
/// a non-negative double).
template <typename T>
__global__ void column_unit_deviation_kernel(const T* u, std::int64_t rows,
                                             unsigned long long* deviation) {
  __shared__ double partial[32];
  const T* col = u + blockIdx.x * rows;
  double sum = 0;
  for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    const double v = static_cast<double>(col[i]);
    sum += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += partial[w];
    const double dev = fabs(sqrt(total) - 1.0);
    atomicMax(deviation, static_cast<unsigned long long>(__double_as_longlong(dev)));
  }
}

/// sum[0] += the squares of the elements of the symmetric n x n matrix whose upper triangle z
/// holds (off-diagonal ones twice); sum must hold 0 before the launch.
template <typename T>
__global__ void symmetric_sum_of_squares_kernel(const T* z, std::int64_t n, double* sum) {
  double local = 0;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < n * n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % n, j = e / n;
    if (i > j) continue;
    const double v = static_cast<double>(z[e]);
    local += (i == j ? 1.0 : 2.0) * v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    local += __shfl_down_sync(0xffffffffu, local, offset);
  }
  if (threadIdx.x % 32 == 0) atomicAdd(sum, local);
}

/// negative[j] = (diag_j < 0) for the diagonal of the column-major matrix a (leading dimension
/// lda), before orgqr overwrites it.
template <typename T>
__global__ void negative_diagonal_kernel(const T* a, std::int64_t lda, std::int64_t n,
                                         int* negative) {
  for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    negative[j] = a[j + j * lda] < T(0) ? 1 : 0;
  }
}

/// Columns j < cols of u (leading dimension rows) with negative[j] != 0 negated.
template <typename T>
__global__ void negate_columns_kernel(T* u, std::int64_t rows, std::int64_t cols,
                                      const int* negative) {
  const std::int64_t total = rows * cols;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if (negative[e / rows] != 0) u[e] = -u[e];
  }
}

// ---- plan and workspace ----------------------------------------------------------------------

/// Sizes of one matrix's problem.
struct Plan {
  std::int64_t M = 0, N = 0;  // W is M x N, M >= N
  bool transposed = false;    // W = A^T
  bool tall = false;          // M > N: QR-reduce first
  std::int64_t L = 0;         // columns of the left factor (N, or M for a full one)
  bool vectors = false;
};

Plan make_plan(const SvdShape& s) {
  Plan p;
  p.transposed = s.m < s.n;
  p.M = std::max(s.m, s.n);
  p.N = std::min(s.m, s.n);
  p.tall = p.M > p.N;
  p.vectors = s.compute_uv;
  p.L = s.compute_uv && s.full_matrices ? p.M : p.N;
  return p;
}

/// Bytes of cuSOLVER scratch (device, host) the plan's calls need.
struct SolverScratch {
  std::size_t device = 0;
  std::size_t host = 0;
  void take(std::size_t d, std::size_t h) {
    device = std::max(device, d);
    host = std::max(host, h);
  }
};

template <typename T>
absl::Status orgqr_buffer(cusolverDnHandle_t h, std::int64_t m, std::int64_t n, std::int64_t k,
                          int* lwork) {
  if constexpr (sizeof(T) == 4) {
    GC_CUSOLVER_TRY(cusolverDnSorgqr_bufferSize(h, static_cast<int>(m), static_cast<int>(n),
                                                static_cast<int>(k), nullptr, static_cast<int>(m),
                                                nullptr, lwork));
  } else {
    GC_CUSOLVER_TRY(cusolverDnDorgqr_bufferSize(h, static_cast<int>(m), static_cast<int>(n),
                                                static_cast<int>(k), nullptr, static_cast<int>(m),
                                                nullptr, lwork));
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<SolverScratch> solver_scratch(const Context& ctx, cusolverDnParams_t params,
                                             const Plan& p) {
  const cusolverDnHandle_t h = ctx.cusolver;
  const cudaDataType_t t = cuda_type<T>();
  SolverScratch sc;
  std::size_t d = 0, hb = 0;
  auto geqrf = [&](std::int64_t m, std::int64_t n) -> absl::Status {
    GC_CUSOLVER_TRY(
        cusolverDnXgeqrf_bufferSize(h, params, m, n, t, nullptr, m, t, nullptr, t, &d, &hb));
    sc.take(d, hb);
    return absl::OkStatus();
  };
  auto orgqr = [&](std::int64_t m, std::int64_t n, std::int64_t k) -> absl::Status {
    int lwork = 0;
    GC_RETURN_IF_ERROR(orgqr_buffer<T>(h, m, n, k, &lwork));
    sc.take(static_cast<std::size_t>(lwork) * sizeof(T), 0);
    return absl::OkStatus();
  };
  const std::int64_t M = p.M, N = p.N;
  GC_RETURN_IF_ERROR(geqrf(2 * N, N));
  GC_RETURN_IF_ERROR(orgqr(2 * N, N, N));
  GC_CUSOLVER_TRY(
      cusolverDnXpotrf_bufferSize(h, params, CUBLAS_FILL_MODE_UPPER, N, t, nullptr, N, t, &d, &hb));
  sc.take(d, hb);
  const cusolverEigMode_t jobz = p.vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  GC_CUSOLVER_TRY(cusolverDnXsyevd_bufferSize(h, params, jobz, CUBLAS_FILL_MODE_UPPER, N, t,
                                              nullptr, N, t, nullptr, t, &d, &hb));
  sc.take(d, hb);
  if (p.tall) {
    GC_RETURN_IF_ERROR(geqrf(M, N));
    if (p.vectors) GC_RETURN_IF_ERROR(orgqr(M, p.L, N));
  }
  if (p.vectors) {  // re-orthonormalising the left factor
    GC_RETURN_IF_ERROR(geqrf(M, p.L));
    GC_RETURN_IF_ERROR(orgqr(M, p.L, p.L));
  }
  return sc;
}

/// The device workspace of one matrix, carved in this order (each piece 256-byte aligned).
template <typename T>
struct Buffers {
  T* w = nullptr;        // M x N: the scaled input; a tall one's QR reflectors
  T* tau = nullptr;      // max(N, L): the QR steps' and the re-orthonormalisation's
  T* tau_w = nullptr;    // N: a tall W's reflectors
  T* r = nullptr;        // N x N: R (tall only)
  T* x = nullptr;        // N x N: the iterate, then Up
  T* prev = nullptr;     // N x N: the previous iterate; then Up V
  T* z = nullptr;        // 2N x N: the QR step's stack, the Cholesky factor; then H (twice)
  T* lambda = nullptr;   // N
  T* left = nullptr;     // M x L: the left factor before the output transposes
  T* q = nullptr;        // M x L: the explicit Q of a tall W (vectors only)
  T* right = nullptr;    // N x N: the right factor (vectors only)
  int* order = nullptr;  // N
  int* flip = nullptr;   // max(N, L)
  int* info = nullptr;
  unsigned long long* deviation = nullptr;
  double* sum = nullptr;
  void* solver = nullptr;
  std::size_t solver_bytes = 0;
};

template <typename T>
Buffers<T> carve(const Plan& p, std::size_t solver_bytes, detail::WorkspaceCarver& c) {
  Buffers<T> b;
  const std::int64_t M = p.M, N = p.N, nn = N * N;
  b.w = c.take<T>(M * N);
  b.tau = c.take<T>(std::max(N, p.L));
  b.tau_w = c.take<T>(N);
  if (p.tall) b.r = c.take<T>(nn);
  b.x = c.take<T>(nn);
  b.prev = c.take<T>(nn);
  b.z = c.take<T>(2 * nn);
  b.lambda = c.take<T>(N);
  if (p.vectors) {
    b.left = c.take<T>(M * p.L);
    if (p.tall) b.q = c.take<T>(M * p.L);
    b.right = c.take<T>(nn);
  }
  b.order = c.take<int>(N);
  b.flip = c.take<int>(std::max(N, p.L));
  b.info = c.take<int>(1);
  b.deviation = c.take<unsigned long long>(1);
  b.sum = c.take<double>(1);
  b.solver = c.take<char>(static_cast<std::int64_t>(solver_bytes));
  b.solver_bytes = solver_bytes;
  return b;
}

// ---- the solver ------------------------------------------------------------------------------

/// One matrix's solve: the cuBLAS and cuSOLVER calls in order, on ctx.stream.
template <typename T>
class PolarSolver {
 public:
  PolarSolver(const Context& ctx, cusolverDnParams_t params, const Plan& p, const Buffers<T>& b,
              std::vector<char>& host_scratch, detail::PhaseProfile& profile)
      : ctx_(ctx), params_(params), p_(p), b_(b), host_(host_scratch), prof_(profile) {}

  /// Solves matrix `a` (row-major m x n) into s, u, vt (row-major, as SvdShape describes), and
  /// reports its profile (SvdTuning::profile) when it succeeds.
  absl::StatusOr<SvdInfo> solve(const SvdShape& s, const T* a, T* s_out, T* u, T* vt,
                                int max_iterations, StopToken stop) {
    absl::StatusOr<SvdInfo> info = solve_marked(s, a, s_out, u, vt, max_iterations, stop);
    if (info.ok()) {
      prof_.report(absl::StrCat("svd polar profile: N=", p_.N, " iterations=", info->sweeps));
    }
    return info;
  }

 private:
  absl::StatusOr<SvdInfo> solve_marked(const SvdShape& s, const T* a, T* s_out, T* u, T* vt,
                                       int max_iterations, StopToken stop) {
    const std::int64_t M = p_.M, N = p_.N;
    prof_.mark(kPrepare);
    GC_RETURN_IF_ERROR(load(s, a));
    // Scale by a power of two (exact) so that max |w_ij| is in [1, 2).
    GC_ASSIGN_OR_RETURN(const double max_abs, amax(b_.w, M * N));
    if (max_abs == 0) return zero_matrix(s, s_out, u, vt);
    const int exponent = std::ilogb(max_abs);
    GC_RETURN_IF_ERROR(scale(b_.w, M * N, std::ldexp(1.0, -exponent)));

    // A0: W itself when square, else R of W = Q R (Q kept as reflectors in w and tau).
    const T* a0 = b_.w;
    if (p_.tall) {
      GC_RETURN_IF_ERROR(geqrf(b_.w, M, N, M, b_.tau_w));
      upper_triangle_kernel<T><<<grid_1d(N * N, 256), 256, 0, stream()>>>(b_.w, M, N, b_.r);
      GC_CUDA_CHECK_LAUNCH("upper_triangle_kernel");
      a0 = b_.r;
    }
    GC_ASSIGN_OR_RETURN(const double alpha, nrm2(a0, N * N));
    GC_CUDA_TRY(cudaMemcpyAsync(b_.x, a0, bytes(N * N), cudaMemcpyDeviceToDevice, stream()));
    GC_RETURN_IF_ERROR(scale(b_.x, N * N, 1.0 / alpha));

    // sigma_min(X0) >= l0 = eps for cond(A0) <= 1 / eps; a smaller sigma_min costs iterations
    // only.
    const double eps = std::numeric_limits<T>::epsilon();
    GC_ASSIGN_OR_RETURN(SvdInfo info, qdwh_iterate(*this, N, eps, eps, max_iterations, stop, kOp));

    // H = Up^T A0, symmetrised into the second half of z, then H = V diag(lambda) V^T.
    prof_.mark(kEigen);
    T* h = b_.z;
    T* hs = b_.z + N * N;
    GC_RETURN_IF_ERROR(gemm(CUBLAS_OP_T, CUBLAS_OP_N, N, N, N, 1.0, b_.x, N, a0, N, 0.0, h, N));
    GC_RETURN_IF_ERROR(geam(CUBLAS_OP_N, CUBLAS_OP_T, N, N, 0.5, h, N, 0.5, h, N, hs, N));
    GC_RETURN_IF_ERROR(syevd(hs, N));
    GC_ASSIGN_OR_RETURN(const int syevd_info, read_info());
    if (syevd_info < 0) {
      return absl::InternalError(absl::StrCat(kOp, ": syevd rejected argument ", -syevd_info));
    }
    if (syevd_info > 0) info.converged = false;

    // sigma_k = |lambda| in descending order (lambda < 0 only by rounding; U takes the sign).
    std::vector<T> lambda(static_cast<std::size_t>(N));
    GC_RETURN_IF_ERROR(to_host(lambda.data(), b_.lambda, bytes(N)));
    std::vector<int> order(static_cast<std::size_t>(N));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int i, int j) { return std::abs(lambda[i]) > std::abs(lambda[j]); });
    std::vector<T> sigma(static_cast<std::size_t>(N));
    std::vector<int> flip(static_cast<std::size_t>(N));
    for (std::int64_t k = 0; k < N; ++k) {
      const double v = std::abs(static_cast<double>(lambda[order[k]]));
      sigma[k] = saturate(std::ldexp(v, exponent));
      flip[k] = lambda[order[k]] < 0 ? 1 : 0;
    }
    // Pageable sources are staged before cudaMemcpyAsync returns: the vectors may go.
    GC_CUDA_TRY(cudaMemcpyAsync(s_out, sigma.data(), bytes(N), cudaMemcpyHostToDevice, stream()));
    if (!p_.vectors) return info;
    prof_.mark(kFactors);
    GC_CUDA_TRY(
        cudaMemcpyAsync(b_.order, order.data(), N * sizeof(int), cudaMemcpyHostToDevice, stream()));
    GC_CUDA_TRY(
        cudaMemcpyAsync(b_.flip, flip.data(), N * sizeof(int), cudaMemcpyHostToDevice, stream()));

    GC_RETURN_IF_ERROR(factors(hs));
    const double top = std::abs(static_cast<double>(lambda[order[0]]));
    const double bottom = std::abs(static_cast<double>(lambda[order[N - 1]]));
    GC_RETURN_IF_ERROR(orthonormalize_if_needed(bottom, top));
    GC_RETURN_IF_ERROR(write_outputs(u, vt));
    return info;
  }

  cudaStream_t stream() const { return ctx_.stream.value(); }
  static std::size_t bytes(std::int64_t count) {
    return static_cast<std::size_t>(count) * sizeof(T);
  }
  static T saturate(double v) {
    const double top = static_cast<double>(std::numeric_limits<T>::max());
    return static_cast<T>(std::min(v, top));
  }

  /// W (M x N, column-major) <- A (m >= n: a transpose) or A^T (m < n: a copy).
  absl::Status load(const SvdShape& s, const T* a) {
    if (p_.transposed) {
      GC_CUDA_TRY(cudaMemcpyAsync(b_.w, a, bytes(s.m * s.n), cudaMemcpyDeviceToDevice, stream()));
      return absl::OkStatus();
    }
    // The row-major m x n buffer is the column-major n x m matrix A^T.
    return transpose(a, s.n, s.m, b_.w);
  }

  absl::StatusOr<SvdInfo> zero_matrix(const SvdShape& s, T* s_out, T* u, T* vt) {
    GC_CUDA_TRY(cudaMemsetAsync(s_out, 0, bytes(p_.N), stream()));
    if (p_.vectors) {
      const std::int64_t ucols = svd_u_cols(s), vtrows = svd_vt_rows(s);
      GC_RETURN_IF_ERROR(identity_rect(u, s.m, ucols));
      GC_RETURN_IF_ERROR(identity_rect(vt, vtrows, s.n));
    }
    GC_CUDA_TRY(cudaStreamSynchronize(stream()));
    return SvdInfo{0, true};
  }

  /// A rows x cols matrix with ones on the diagonal (row- and column-major alike).
  absl::Status identity_rect(T* out, std::int64_t rows, std::int64_t cols) {
    GC_CUDA_TRY(cudaMemsetAsync(out, 0, bytes(rows * cols), stream()));
    const std::int64_t d = std::min(rows, cols);
    unit_diagonal_kernel<T><<<grid_1d(d, 256), 256, 0, stream()>>>(out, cols, d);
    GC_CUDA_CHECK_LAUNCH("unit_diagonal_kernel");
    return absl::OkStatus();
  }

  // The steps of qdwh_iterate, on X in x (public for it).
 public:
  absl::Status keep_previous() {
    GC_CUDA_TRY(
        cudaMemcpyAsync(b_.prev, b_.x, bytes(p_.N * p_.N), cudaMemcpyDeviceToDevice, stream()));
    return absl::OkStatus();
  }

  /// |X - X_prev|_F, through prev (X_prev is not needed after it).
  absl::StatusOr<double> step_size() {
    prof_.mark(kConvergenceTest);
    const std::int64_t N = p_.N;
    GC_RETURN_IF_ERROR(
        geam(CUBLAS_OP_N, CUBLAS_OP_N, N, N, 1.0, b_.x, N, -1.0, b_.prev, N, b_.prev, N));
    return nrm2(b_.prev, N * N);
  }

  /// |X^T X - I|_F, through z (free between steps).
  absl::StatusOr<double> orthogonality_error() {
    prof_.mark(kConvergenceTest);
    const std::int64_t N = p_.N;
    T* g = b_.z;
    identity_kernel<T><<<grid_1d(N * N, 256), 256, 0, stream()>>>(g, N);
    GC_CUDA_CHECK_LAUNCH("identity_kernel");
    GC_RETURN_IF_ERROR(syrk(1.0, b_.x, N, N, -1.0, g));
    GC_CUDA_TRY(cudaMemsetAsync(b_.sum, 0, sizeof(double), stream()));
    symmetric_sum_of_squares_kernel<T><<<grid_1d(N * N, 256), 256, 0, stream()>>>(g, N, b_.sum);
    GC_CUDA_CHECK_LAUNCH("symmetric_sum_of_squares_kernel");
    double sum = 0;
    GC_RETURN_IF_ERROR(to_host(&sum, b_.sum, sizeof(sum)));
    return std::sqrt(sum);
  }

  // X <- (b/c) X + (a - b/c)/sqrt(c) * Q1 Q2^T with [sqrt(c) X; I] = [Q1; Q2] R.
  absl::Status qr_step(const QdwhWeights& w) {
    prof_.mark(kQrStep);
    const std::int64_t N = p_.N;
    stack_with_identity_kernel<T><<<grid_1d(2 * N * N, 256), 256, 0, stream()>>>(
        b_.x, N, static_cast<T>(std::sqrt(w.c)), b_.z);
    GC_CUDA_CHECK_LAUNCH("stack_with_identity_kernel");
    GC_RETURN_IF_ERROR(geqrf(b_.z, 2 * N, N, 2 * N, b_.tau));
    GC_RETURN_IF_ERROR(orgqr(b_.z, 2 * N, N, N, 2 * N, b_.tau));
    return update_from_stack(w);
  }

  // The QR step's update with [Q1; Q2] from CholeskyQR2 (Yamamoto, Nakatsukasa, Yanagisawa and
  // Fukaya 2015): R1 from G1 = Z^T Z = I + c X^T X (the Cholesky step's Gram), Q = Z R1^-1, then
  // once more on Q to restore its orthogonality, which the first pass leaves at about
  // cond(Z)^2 eps <= (1 + c) eps (qdwh_iterate says why that is safe). GEMM-shaped work where geqrf
  // and orgqr are panel-bound. False, X untouched, when a Gram is not numerically positive definite
  // (the caller then takes the QR step). G goes through prev, which gets X_prev back before
  // returning.
  absl::StatusOr<bool> cholesky_qr_step(const QdwhWeights& w) {
    prof_.mark(kCholeskyQrStep);
    const absl::StatusOr<bool> factored = cholesky_qr_stack(w, b_.prev);
    GC_RETURN_IF_ERROR(keep_previous());
    if (!factored.ok() || !*factored) return factored;
    GC_RETURN_IF_ERROR(update_from_stack(w));
    return true;
  }

  // X <- (b/c) X_prev + (a - b/c) X_prev Z^-1 with Z = I + c X^T X = R^T R. False, X untouched,
  // when Z is not numerically positive definite (the caller then takes the QR step).
  absl::StatusOr<bool> cholesky_step(const QdwhWeights& w) {
    prof_.mark(kCholeskyStep);
    const std::int64_t N = p_.N;
    T* z = b_.z;
    GC_ASSIGN_OR_RETURN(const bool definite, factor_step_gram(w.c, z));
    if (!definite) return false;
    GC_RETURN_IF_ERROR(trsm(CUBLAS_OP_N, z, b_.x, N));
    GC_RETURN_IF_ERROR(trsm(CUBLAS_OP_T, z, b_.x, N));
    const double bc = w.b / w.c;
    GC_RETURN_IF_ERROR(
        geam(CUBLAS_OP_N, CUBLAS_OP_N, N, N, w.a - bc, b_.x, N, bc, b_.prev, N, b_.x, N));
    return true;
  }

 private:
  /// left (M x L) and right (N x N) factors of W = left diag(sigma) right^T, from H's
  /// eigenvectors in hs.
  absl::Status factors(const T* hs) {
    const std::int64_t M = p_.M, N = p_.N, L = p_.L;
    // right = V with its columns in sigma order; prev = Up right is then in that order too, and
    // takes the signs of lambda.
    permute_columns_kernel<T>
        <<<grid_1d(N * N, 256), 256, 0, stream()>>>(hs, N, N, b_.order, b_.right);
    GC_CUDA_CHECK_LAUNCH("permute_columns_kernel");
    GC_RETURN_IF_ERROR(
        gemm(CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, 1.0, b_.x, N, b_.right, N, 0.0, b_.prev, N));
    negate_columns_kernel<T><<<grid_1d(N * N, 256), 256, 0, stream()>>>(b_.prev, N, N, b_.flip);
    GC_CUDA_CHECK_LAUNCH("negate_columns_kernel");
    if (!p_.tall) {
      GC_CUDA_TRY(
          cudaMemcpyAsync(b_.left, b_.prev, bytes(N * N), cudaMemcpyDeviceToDevice, stream()));
      return absl::OkStatus();
    }
    // left = Q [Up V; 0] (its first N columns) and Q's further columns, from the explicit Q.
    GC_CUDA_TRY(cudaMemcpyAsync(b_.q, b_.w, bytes(M * N), cudaMemcpyDeviceToDevice, stream()));
    GC_RETURN_IF_ERROR(orgqr(b_.q, M, L, N, M, b_.tau_w));
    GC_RETURN_IF_ERROR(
        gemm(CUBLAS_OP_N, CUBLAS_OP_N, M, N, N, 1.0, b_.q, M, b_.prev, N, 0.0, b_.left, M));
    if (L > N) {
      GC_CUDA_TRY(cudaMemcpyAsync(b_.left + M * N, b_.q + M * N, bytes(M * (L - N)),
                                  cudaMemcpyDeviceToDevice, stream()));
    }
    return absl::OkStatus();
  }

  /// Rounding-level singular values (<= sqrt(N) eps sigma_1) leave Up without an isometry on
  /// their directions, so those columns of the left factor are neither unit nor orthogonal to
  /// the rest. Where such values exist, or a column is not unit, the columns are
  /// orthonormalised in order (largest sigma first), as on the host.
  absl::Status orthonormalize_if_needed(double smallest, double largest) {
    const std::int64_t M = p_.M, L = p_.L;
    const double eps = std::numeric_limits<T>::epsilon();
    bool needed = smallest <= std::sqrt(static_cast<double>(p_.N)) * eps * largest;
    if (!needed) {
      GC_CUDA_TRY(cudaMemsetAsync(b_.deviation, 0, sizeof(*b_.deviation), stream()));
      column_unit_deviation_kernel<T>
          <<<static_cast<unsigned>(L), 256, 0, stream()>>>(b_.left, M, b_.deviation);
      GC_CUDA_CHECK_LAUNCH("column_unit_deviation_kernel");
      unsigned long long bits = 0;
      GC_RETURN_IF_ERROR(to_host(&bits, b_.deviation, sizeof(bits)));
      double deviation = 0;
      static_assert(sizeof(bits) == sizeof(deviation));
      std::memcpy(&deviation, &bits, sizeof(bits));
      needed = deviation > 10 * static_cast<double>(p_.N) * eps;
    }
    if (!needed) return absl::OkStatus();
    // Householder QR signed so that R's diagonal is non-negative: columns that already were
    // orthonormal stay (up to rounding).
    GC_RETURN_IF_ERROR(geqrf(b_.left, M, L, M, b_.tau));
    negative_diagonal_kernel<T><<<grid_1d(L, 256), 256, 0, stream()>>>(b_.left, M, L, b_.flip);
    GC_CUDA_CHECK_LAUNCH("negative_diagonal_kernel");
    GC_RETURN_IF_ERROR(orgqr(b_.left, M, L, L, M, b_.tau));
    negate_columns_kernel<T><<<grid_1d(M * L, 256), 256, 0, stream()>>>(b_.left, M, L, b_.flip);
    GC_CUDA_CHECK_LAUNCH("negate_columns_kernel");
    return absl::OkStatus();
  }

  /// U and Vt (row-major) from left (M x L) and right (N x N), both column-major.
  absl::Status write_outputs(T* u, T* vt) {
    const std::int64_t M = p_.M, N = p_.N, L = p_.L;
    if (!p_.transposed) {
      // U[i][k] = left(i, k): U is the transpose. Vt[k][j] = right(j, k): right as it is.
      GC_RETURN_IF_ERROR(transpose(b_.left, M, L, u));
      GC_CUDA_TRY(cudaMemcpyAsync(vt, b_.right, bytes(N * N), cudaMemcpyDeviceToDevice, stream()));
    } else {
      // A = right diag(sigma) left^T: U[i][k] = right(i, k), Vt[k][j] = left(j, k).
      GC_RETURN_IF_ERROR(transpose(b_.right, N, N, u));
      GC_CUDA_TRY(cudaMemcpyAsync(vt, b_.left, bytes(M * L), cudaMemcpyDeviceToDevice, stream()));
    }
    return absl::OkStatus();
  }

  // ---- library calls ----

  /// Copies device bytes to the host once the stream's work so far is done.
  absl::Status to_host(void* dst, const void* src, std::size_t count) {
    GC_CUDA_TRY(cudaMemcpyAsync(dst, src, count, cudaMemcpyDeviceToHost, stream()));
    GC_CUDA_TRY(cudaStreamSynchronize(stream()));
    return absl::OkStatus();
  }

  absl::StatusOr<double> amax(const T* x, std::int64_t count) {
    std::int64_t index = 0;  // 1-based
    if constexpr (sizeof(T) == 4) {
      GC_CUBLAS_TRY(cublasIsamax_64(ctx_.cublas, count, x, 1, &index));
    } else {
      GC_CUBLAS_TRY(cublasIdamax_64(ctx_.cublas, count, x, 1, &index));
    }
    T value{};
    GC_RETURN_IF_ERROR(to_host(&value, x + (index - 1), sizeof(T)));
    return std::abs(static_cast<double>(value));
  }

  absl::StatusOr<double> nrm2(const T* x, std::int64_t count) {
    T result{};
    if constexpr (sizeof(T) == 4) {
      GC_CUBLAS_TRY(cublasSnrm2_64(ctx_.cublas, count, x, 1, &result));
    } else {
      GC_CUBLAS_TRY(cublasDnrm2_64(ctx_.cublas, count, x, 1, &result));
    }
    return static_cast<double>(result);
  }

  absl::Status scale(T* x, std::int64_t count, double factor) {
    const T f = static_cast<T>(factor);
    if constexpr (sizeof(T) == 4) {
      GC_CUBLAS_TRY(cublasSscal_64(ctx_.cublas, count, &f, x, 1));
    } else {
      GC_CUBLAS_TRY(cublasDscal_64(ctx_.cublas, count, &f, x, 1));
    }
    return absl::OkStatus();
  }

  absl::Status gemm(cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
                    std::int64_t k, double alpha, const T* a, std::int64_t lda, const T* b,
                    std::int64_t ldb, double beta, T* c, std::int64_t ldc) {
    const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
    if constexpr (sizeof(T) == 4) {
      GC_CUBLAS_TRY(cublasSgemm_64(ctx_.cublas, ta, tb, m, n, k, &al, a, lda, b, ldb, &be, c, ldc));
    } else {
      GC_CUBLAS_TRY(cublasDgemm_64(ctx_.cublas, ta, tb, m, n, k, &al, a, lda, b, ldb, &be, c, ldc));
    }
    return absl::OkStatus();
  }

  /// out (cols x rows, leading dimension cols) <- in^T for in rows x cols (leading dimension
  /// rows), all column-major.
  absl::Status transpose(const T* in, std::int64_t rows, std::int64_t cols, T* out) {
    // beta = 0: B is the output itself (cuBLAS allows B == C with the same leading dimension).
    return geam(CUBLAS_OP_T, CUBLAS_OP_N, cols, rows, 1.0, in, rows, 0.0, out, cols, out, cols);
  }

  absl::Status geam(cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
                    double alpha, const T* a, std::int64_t lda, double beta, const T* b,
                    std::int64_t ldb, T* c, std::int64_t ldc) {
    const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
    if constexpr (sizeof(T) == 4) {
      GC_CUBLAS_TRY(cublasSgeam_64(ctx_.cublas, ta, tb, m, n, &al, a, lda, &be, b, ldb, c, ldc));
    } else {
      GC_CUBLAS_TRY(cublasDgeam_64(ctx_.cublas, ta, tb, m, n, &al, a, lda, &be, b, ldb, c, ldc));
    }
    return absl::OkStatus();
  }

  /// X <- X R^-1 (op = N) or X R^-T (op = T) with R the upper triangle of r (N x N) and X
  /// rows x N (leading dimension rows).
  absl::Status trsm(cublasOperation_t op, const T* r, T* x, std::int64_t rows) {
    const std::int64_t N = p_.N;
    const T one = T(1);
    if constexpr (sizeof(T) == 4) {
      GC_CUBLAS_TRY(cublasStrsm_64(ctx_.cublas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, op,
                                   CUBLAS_DIAG_NON_UNIT, rows, N, &one, r, N, x, rows));
    } else {
      GC_CUBLAS_TRY(cublasDtrsm_64(ctx_.cublas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, op,
                                   CUBLAS_DIAG_NON_UNIT, rows, N, &one, r, N, x, rows));
    }
    return absl::OkStatus();
  }

  /// The upper triangle of g (N x N) <- alpha A^T A + beta g, for A rows x N (leading dimension
  /// lda).
  absl::Status syrk(double alpha, const T* a, std::int64_t rows, std::int64_t lda, double beta,
                    T* g) {
    const std::int64_t N = p_.N;
    const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
    if constexpr (sizeof(T) == 4) {
      GC_CUBLAS_TRY(cublasSsyrk_64(ctx_.cublas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, N, rows, &al,
                                   a, lda, &be, g, N));
    } else {
      GC_CUBLAS_TRY(cublasDsyrk_64(ctx_.cublas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, N, rows, &al,
                                   a, lda, &be, g, N));
    }
    return absl::OkStatus();
  }

  /// g (N x N) <- its Cholesky factor R (upper); false when g is not numerically positive
  /// definite.
  absl::StatusOr<bool> potrf(T* g) {
    GC_CUSOLVER_TRY(cusolverDnXpotrf(ctx_.cusolver, params_, CUBLAS_FILL_MODE_UPPER, p_.N,
                                     cuda_type<T>(), g, p_.N, cuda_type<T>(), b_.solver,
                                     b_.solver_bytes, host_.data(), host_.size(), b_.info));
    GC_ASSIGN_OR_RETURN(const int info, read_info());
    if (info < 0)
      return absl::InternalError(absl::StrCat(kOp, ": potrf rejected argument ", -info));
    return info == 0;
  }

  /// g (N x N) <- R (upper) with R^T R = I + c X^T X, the Gram of [sqrt(c) X; I] that both the
  /// Cholesky and the CholeskyQR2 step factor; false when it is not numerically positive definite.
  absl::StatusOr<bool> factor_step_gram(double c, T* g) {
    const std::int64_t N = p_.N;
    identity_kernel<T><<<grid_1d(N * N, 256), 256, 0, stream()>>>(g, N);
    GC_CUDA_CHECK_LAUNCH("identity_kernel");
    GC_RETURN_IF_ERROR(syrk(c, b_.x, N, N, 1.0, g));
    return potrf(g);
  }

  /// z (2N x N) <- [Q1; Q2], the Q of [sqrt(c) X; I], by CholeskyQR2 with g (N x N) as the
  /// Gram's scratch; false when a Gram is not numerically positive definite.
  absl::StatusOr<bool> cholesky_qr_stack(const QdwhWeights& w, T* g) {
    const std::int64_t N = p_.N;
    GC_ASSIGN_OR_RETURN(const bool first, factor_step_gram(w.c, g));
    if (!first) return false;
    stack_with_identity_kernel<T><<<grid_1d(2 * N * N, 256), 256, 0, stream()>>>(
        b_.x, N, static_cast<T>(std::sqrt(w.c)), b_.z);
    GC_CUDA_CHECK_LAUNCH("stack_with_identity_kernel");
    GC_RETURN_IF_ERROR(trsm(CUBLAS_OP_N, g, b_.z, 2 * N));
    GC_RETURN_IF_ERROR(syrk(1.0, b_.z, 2 * N, 2 * N, 0.0, g));
    GC_ASSIGN_OR_RETURN(const bool second, potrf(g));
    if (!second) return false;
    GC_RETURN_IF_ERROR(trsm(CUBLAS_OP_N, g, b_.z, 2 * N));
    return true;
  }

  /// X <- (b/c) X + (a - b/c)/sqrt(c) Q1 Q2^T for [Q1; Q2] in z (2N x N).
  absl::Status update_from_stack(const QdwhWeights& w) {
    const std::int64_t N = p_.N;
    const double bc = w.b / w.c;
    return gemm(CUBLAS_OP_N, CUBLAS_OP_T, N, N, N, (w.a - bc) / std::sqrt(w.c), b_.z, 2 * N,
                b_.z + N, 2 * N, bc, b_.x, N);
  }

  // geqrf and orgqr report through info only invalid arguments, which the plan rules out: their
  // info is not read (that would cost a synchronisation per call).
  absl::Status geqrf(T* a, std::int64_t m, std::int64_t n, std::int64_t lda, T* tau) {
    GC_CUSOLVER_TRY(cusolverDnXgeqrf(ctx_.cusolver, params_, m, n, cuda_type<T>(), a, lda,
                                     cuda_type<T>(), tau, cuda_type<T>(), b_.solver,
                                     b_.solver_bytes, host_.data(), host_.size(), b_.info));
    return absl::OkStatus();
  }

  absl::Status orgqr(T* a, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda,
                     const T* tau) {
    const int lwork = static_cast<int>(b_.solver_bytes / sizeof(T));
    T* work = static_cast<T*>(b_.solver);
    if constexpr (sizeof(T) == 4) {
      GC_CUSOLVER_TRY(cusolverDnSorgqr(ctx_.cusolver, static_cast<int>(m), static_cast<int>(n),
                                       static_cast<int>(k), a, static_cast<int>(lda), tau, work,
                                       lwork, b_.info));
    } else {
      GC_CUSOLVER_TRY(cusolverDnDorgqr(ctx_.cusolver, static_cast<int>(m), static_cast<int>(n),
                                       static_cast<int>(k), a, static_cast<int>(lda), tau, work,
                                       lwork, b_.info));
    }
    return absl::OkStatus();
  }

  absl::Status syevd(T* a, std::int64_t n) {
    const cusolverEigMode_t jobz =
        p_.vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    GC_CUSOLVER_TRY(cusolverDnXsyevd(ctx_.cusolver, params_, jobz, CUBLAS_FILL_MODE_UPPER, n,
                                     cuda_type<T>(), a, n, cuda_type<T>(), b_.lambda,
                                     cuda_type<T>(), b_.solver, b_.solver_bytes, host_.data(),
                                     host_.size(), b_.info));
    return absl::OkStatus();
  }

  absl::StatusOr<int> read_info() {
    int value = 0;
    GC_RETURN_IF_ERROR(to_host(&value, b_.info, sizeof(int)));
    return value;
  }

  const Context& ctx_;
  cusolverDnParams_t params_;
  const Plan& p_;
  const Buffers<T>& b_;
  std::vector<char>& host_;
  detail::PhaseProfile& prof_;  // SvdTuning::profile's, reported once per matrix
};

template <typename T>
absl::StatusOr<std::size_t> workspace_for(const Context& ctx, cusolverDnParams_t params,
                                          const Plan& p) {
  GC_ASSIGN_OR_RETURN(const SolverScratch scratch, solver_scratch<T>(ctx, params, p));
  detail::WorkspaceCarver c(nullptr);
  carve<T>(p, scratch.device, c);
  return c.bytes();
}

template <typename T>
absl::StatusOr<SvdInfo> run(const Context& ctx, const SvdShape& s, const void* a, void* s_out,
                            void* u, void* vt, void* workspace, std::size_t workspace_bytes,
                            StopToken stop, const SvdTuning& tuning) {
  const Plan p = make_plan(s);
  GC_ASSIGN_OR_RETURN(CusolverParams params, detail::create_cusolver_params());
  GC_ASSIGN_OR_RETURN(const SolverScratch scratch, solver_scratch<T>(ctx, params.value(), p));
  detail::WorkspaceCarver c(workspace);
  const Buffers<T> b = carve<T>(p, scratch.device, c);
  if (c.bytes() > workspace_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": workspace of ", workspace_bytes,
                                                   " bytes is smaller than the ", c.bytes(),
                                                   " needed"));
  }
  std::vector<char> host_scratch(std::max<std::size_t>(scratch.host, 1));
  // The handle is the lane's: host scalars, and the default math mode (no TF32).
  GC_CUBLAS_TRY(cublasSetPointerMode(ctx.cublas, CUBLAS_POINTER_MODE_HOST));
  GC_CUBLAS_TRY(cublasSetMathMode(ctx.cublas, CUBLAS_DEFAULT_MATH));
  const int max_iterations = s.max_sweeps > 0 ? s.max_sweeps : kSvdDefaultMaxSweeps;
  detail::PhaseProfile profile = polar_profile(ctx.stream, tuning.profile);
  PolarSolver<T> solver(ctx, params.value(), p, b, host_scratch, profile);
  const std::int64_t u_stride = s.m * svd_u_cols(s), vt_stride = svd_vt_rows(s) * s.n;
  SvdInfo all{0, true};
  for (std::int64_t i = 0; i < s.batch; ++i) {
    if (stop.stop_requested()) {
      return absl::CancelledError(
          absl::StrCat(kOp, ": cancelled after ", i, " of ", s.batch, " matrices"));
    }
    const T* ai = static_cast<const T*>(a) + i * s.m * s.n;
    T* si = static_cast<T*>(s_out) + i * p.N;
    T* ui = p.vectors ? static_cast<T*>(u) + i * u_stride : nullptr;
    T* vti = p.vectors ? static_cast<T*>(vt) + i * vt_stride : nullptr;
    absl::StatusOr<SvdInfo> one = solver.solve(s, ai, si, ui, vti, max_iterations, stop);
    if (!one.ok()) {
      // Finished when it returns, errors included: nothing may still use the caller's buffers.
      GC_CUDA_TRY_NO_THROW(cudaStreamSynchronize(ctx.stream.value()));
      return one.status();
    }
    all.sweeps = std::max(all.sweeps, one->sweeps);
    all.converged = all.converged && one->converged;
  }
  GC_CUDA_TRY(cudaStreamSynchronize(ctx.stream.value()));
  return all;
}

}  // namespace

absl::StatusOr<std::size_t> svd_polar_workspace_bytes(const Context& ctx, const SvdShape& shape) {
  GC_RETURN_IF_ERROR(validate(shape));
  if (shape.batch == 0 || std::min(shape.m, shape.n) == 0) return std::size_t{0};
  if (ctx.cusolver == nullptr || ctx.cublas == nullptr) {
    return absl::FailedPreconditionError(
        "svd: the GPU polar method needs ctx.cublas and ctx.cusolver");
  }
  const Plan p = make_plan(shape);
  GC_ASSIGN_OR_RETURN(CusolverParams params, detail::create_cusolver_params());
  return shape.dtype == DType::kF32 ? workspace_for<float>(ctx, params.value(), p)
                                    : workspace_for<double>(ctx, params.value(), p);
}

absl::StatusOr<SvdInfo> svd_polar(const Context& ctx, const void* a, void* s, void* u, void* vt,
                                  const SvdShape& shape, void* workspace,
                                  std::size_t workspace_bytes, StopToken stop,
                                  const SvdTuning& tuning) {
  GC_RETURN_IF_ERROR(validate(shape));
  // orgqr (the legacy API) takes 32-bit sizes, and a QR step stacks 2 min(m, n) rows.
  constexpr std::int64_t kMaxSide = std::numeric_limits<int>::max() / 2;
  if (shape.m > kMaxSide || shape.n > kMaxSide) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": the GPU polar method takes m and n up to ", kMaxSide,
                     ", got m = ", shape.m, ", n = ", shape.n));
  }
  const std::int64_t p = std::min(shape.m, shape.n);
  if (shape.batch > 0 && p > 0) {
    if (a == nullptr || s == nullptr || (shape.compute_uv && (u == nullptr || vt == nullptr))) {
      return absl::InvalidArgumentError("svd: null input or output pointer");
    }
  }
  if (stop.stop_requested()) {
    return absl::CancelledError("svd: cancelled before the first QDWH iteration");
  }
  if (shape.batch == 0 || p == 0) {
    // An empty side: no values; a full U (m x m) or Vt (n x n) is the identity, which the
    // Jacobi driver writes without a workspace.
    return svd_jacobi(ctx, a, s, u, vt, shape, nullptr, 0, stop);
  }
  if (ctx.cusolver == nullptr || ctx.cublas == nullptr) {
    return absl::FailedPreconditionError(
        "svd: the GPU polar method needs ctx.cublas and ctx.cusolver");
  }
  if (shape.dtype == DType::kF32) {
    return run<float>(ctx, shape, a, s, u, vt, workspace, workspace_bytes, stop, tuning);
  }
  return run<double>(ctx, shape, a, s, u, vt, workspace, workspace_bytes, stop, tuning);
}

}  // namespace gcompute::kernels::cuda
