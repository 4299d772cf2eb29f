// SPDX-License-Identifier: Apache-2.0
// Device kernels of cuda::eigh: for n <= 32 Jacobi in registers on a shifted matrix (see eigh.cu);
// for larger n the ordering of syevd's results (at the end).
//
// One group of P lanes per matrix (P = 8, 16 or 32; 32 / P matrices a warp), lane l holding
// column l in registers, no shared memory and no barriers: the register one-sided Jacobi of the
// SVD (warp_jacobi_sweeps) applied to B = A / 2^e + shift I, where 2^e scales max|a| into
// [0.5, 1) and shift = 2 |A / 2^e|_inf. B's eigenvalues then lie in [|A/2^e|_inf,
// 3 |A/2^e|_inf]: B is positive definite with condition number at most 3, so its singular values
// are its eigenvalues, its left and right singular vectors coincide (u_i = B v_i / sigma_i =
// v_i), and the converged columns b_i are sigma_i times the eigenvectors. Hence
// lambda_i = (|b_i| - shift) 2^e and v_i = b_i / |b_i|, with no accumulation of V at all: half
// the shuffles of an SVD with vectors, and a quarter of a two-sided Jacobi in registers (which
// needs the partner's column, the rotations of every pair for the row update and a permutation
// of lanes and registers a round). The small condition number also lets the sweeps track column
// norms instead of recomputing them (warp_jacobi_sweeps' kTrackNorms). The price is absolute
// accuracy of eps |A|_inf ( <= sqrt(n) eps |A|_2) on every eigenvalue, the normwise contract of
// syevd and syevj; the relative accuracy a two-sided Jacobi keeps for graded positive definite
// matrices is given up. A column whose off-diagonal entries are all exactly zero is an exact
// eigenvector: its lane reports a_ll itself (a diagonal matrix comes back exactly).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "svd_kernels.cuh"

namespace gcompute::kernels::cuda::detail {

inline constexpr int kEighWarpThreads = 128;

/// Maximum of x over the P lanes of a group (P divides 32).
template <typename T, int P>
__device__ inline T group_max(T x) {
#pragma unroll
  for (int o = P / 2; o > 0; o >>= 1) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

/// Strict total order of (value, index): ascending values, NaN after every number, ties (and
/// NaN against NaN) by index, so that the ranks of a group are a permutation whatever comes out.
template <typename T>
__device__ inline bool eigen_precedes(T a, int i, T b, int j) {
  const bool a_nan = isnan(a), b_nan = isnan(b);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && a != b) return a < b;
  return i < j;
}

/// Eigenvalues (ascending) and, when `vectors`, eigenvectors of `count` row-major n x n
/// symmetric matrices (n <= P, the lower triangle read) from `a` into w (count x n) and v
/// (count x n x n, row-major, vectors as columns). Sweeps until one rotates nothing, at most
/// `max_sweeps`; a matrix still rotating then clears *converged (which the caller set nonzero).
/// Launch with kEighWarpThreads threads and ceil(count / (kEighWarpThreads / P)) blocks.
template <typename T, int P>
__global__ void __launch_bounds__(kEighWarpThreads)
    warp_eigh_kernel(const T* __restrict__ a, T* __restrict__ w, T* __restrict__ v, int n,
                     std::int64_t count, bool vectors, int max_sweeps,
                     int* __restrict__ converged) {
  const LaneGroup<P> at;
  const int lane = at.lane, l = at.l;
  const std::int64_t mat = at.mat;
  const bool active = mat < count;
  const bool column = active && l < n;  // this lane holds a column of the matrix

  // Column l from the lower triangle (row k >= l: a[k][l]; above: the mirror a[l][k]).
  T x[P];
  const T* ga = a + mat * n * n;
  T amax = T(0);
  bool off_diagonal_zero = true;
#pragma unroll
  for (int k = 0; k < P; ++k) {
    T e = T(0);
    if (column && k < n) e = k >= l ? ga[static_cast<std::int64_t>(k) * n + l] : ga[l * n + k];
    x[k] = e;
    if (k != l && e != T(0)) off_diagonal_zero = false;
    amax = fmax(amax, fabs(e));
  }
  T a_ll = T(0);  // x[l] by a static scan: a dynamic register index would go to local memory
#pragma unroll
  for (int k = 0; k < P; ++k) a_ll = k == l ? x[k] : a_ll;

  // Scale by a power of two (exact) and shift: B = A / 2^e + shift I.
  amax = group_max<T, P>(amax);
  int e = 0;
  if (amax > T(0)) (void)frexp(amax, &e);
  T row_sum = T(0);
#pragma unroll
  for (int k = 0; k < P; ++k) {
    x[k] = ldexp(x[k], -e);
    row_sum += fabs(x[k]);
  }
  const T inf_norm = group_max<T, P>(row_sum);
  const T shift = inf_norm > T(0) ? T(2) * inf_norm : T(1);
#pragma unroll
  for (int k = 0; k < P; ++k) {
    if (k == l && column) x[k] += shift;
  }

  const T tol = sqrt(static_cast<T>(n)) * SvdLimits<T>::kEps;
  bool done = false;
  (void)warp_jacobi_sweeps<T, P, false, true>(x, x, active, tol, max_sweeps, &done);
  if (__any_sync(0xffffffffu, active && !done) && lane == 0) atomicExch(converged, 0);

  T norm2 = T(0);
#pragma unroll
  for (int k = 0; k < P; ++k) norm2 = fma(x[k], x[k], norm2);
  const T sigma = sqrt(norm2);
  const T lambda = off_diagonal_zero ? a_ll : ldexp(sigma - shift, e);

  // Rank among the group's columns: the position of this eigenpair in ascending order.
  int rank = 0;
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const T other = __shfl_sync(0xffffffffu, lambda, j, P);
    rank += (j < n && eigen_precedes(other, j, lambda, l)) ? 1 : 0;
  }
  if (!column) return;
  w[mat * n + rank] = lambda;
  if (!vectors) return;
  T* gv = v + mat * n * n + rank;
#pragma unroll
  for (int k = 0; k < P; ++k) {
    if (k < n) {
      gv[static_cast<std::int64_t>(k) * n] =
          off_diagonal_zero ? (k == l ? T(1) : T(0)) : x[k] / sigma;
    }
  }
}

// ------------------------------------------------------------------------------------------
// After cusolverDnXsyevd (n > 32).

inline constexpr int kOrderThreads = 1024;

/// w_sorted (n) = `values` in ascending order and perm[c] = the index of the c-th (ties by index).
/// cuSOLVER's syevd can leave neighbours inside a cluster of equal eigenvalues out of order by an
/// ulp (seen at n = 48 and 130 in f32), which breaks the contract's ascending W; an input already
/// in order (the usual case) costs one pass. One block of kOrderThreads per matrix.
template <typename T>
__global__ void __launch_bounds__(kOrderThreads)
    ascending_order_kernel(const T* __restrict__ values, int n, int* __restrict__ perm,
                           T* __restrict__ w_sorted) {
  bool inversion = false;
  for (int i = static_cast<int>(threadIdx.x) + 1; i < n; i += blockDim.x) {
    inversion |= !(values[i - 1] <= values[i]);
  }
  const bool unsorted = __syncthreads_or(inversion ? 1 : 0) != 0;
  for (int i = static_cast<int>(threadIdx.x); i < n; i += blockDim.x) {
    const T value = values[i];
    int rank = i;
    if (unsorted) {
      rank = 0;
      for (int j = 0; j < n; ++j) rank += eigen_precedes(values[j], j, value, i) ? 1 : 0;
    }
    perm[rank] = i;
    w_sorted[rank] = value;
  }
}

inline constexpr int kGatherTile = 32;
inline constexpr int kGatherRows = 8;

/// V (n x n row-major, eigenvectors as columns) from syevd's column-major Z, its columns taken in
/// the order perm: V[r][c] = Z[r + perm[c] n]. A tiled transpose through shared memory (reads run
/// down Z's columns, writes along V's rows). Grid (ceil(n / 32), ceil(n / 32)), block (32, 8).
template <typename T>
__global__ void __launch_bounds__(kGatherTile* kGatherRows)
    gather_transpose_kernel(const T* __restrict__ z, const int* __restrict__ perm, int n,
                            T* __restrict__ v) {
  __shared__ T tile[kGatherTile][kGatherTile + 1];
  const int c0 = static_cast<int>(blockIdx.x) * kGatherTile;
  const int r0 = static_cast<int>(blockIdx.y) * kGatherTile;
  for (int dy = static_cast<int>(threadIdx.y); dy < kGatherTile; dy += kGatherRows) {
    const int c = c0 + dy, r = r0 + static_cast<int>(threadIdx.x);
    if (c < n && r < n) tile[dy][threadIdx.x] = z[static_cast<std::int64_t>(perm[c]) * n + r];
  }
  __syncthreads();
  for (int dy = static_cast<int>(threadIdx.y); dy < kGatherTile; dy += kGatherRows) {
    const int r = r0 + dy, c = c0 + static_cast<int>(threadIdx.x);
    if (c < n && r < n) v[static_cast<std::int64_t>(r) * n + c] = tile[threadIdx.x][dy];
  }
}

}  // namespace gcompute::kernels::cuda::detail
