// SPDX-License-Identifier: Apache-2.0
// Device kernel of cuda::eigh for n <= 32: parallel cyclic two-sided Jacobi (see eigh.cu).
//
// One group of threads per matrix (a warp for n <= 16, a block of 128 threads for n <= 32)
// keeps A (the full symmetric matrix, padded to even order np with a zero row and column) and V
// in shared memory, with an odd row stride so that the elements of a column fall in distinct
// banks. A sweep has np - 1 steps of a round-robin tournament; each step rotates np / 2
// disjoint index pairs at once, in two phases: one thread per pair computes its rotation from
// the current A, then every thread applies the rotations to its 2 x 2 blocks of A (rows of one
// pair, columns of another: J_K^T B J_L, written to both triangles, so A stays exactly
// symmetric) and to its row pieces of V (V J). Disjoint pairs commute, so the step is the
// product of its rotations whatever order the threads run in.
#pragma once

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "jacobi_angle.cuh"

namespace gcompute::kernels::cuda::detail {

inline constexpr int kEighBlockThreads = 128;

/// Thread and shared-memory geometry of eigh_jacobi_kernel for matrices up to kMaxN.
template <int kMaxN>
struct EighJacobiGeometry {
  static_assert(kMaxN == 16 || kMaxN == 32, "the kernel is built for n <= 16 and n <= 32");
  static constexpr int kGroup = kMaxN <= 16 ? 32 : kEighBlockThreads;  // threads per matrix
  static constexpr int kPerBlock = kEighBlockThreads / kGroup;         // matrices per block
  static constexpr int kLd = kMaxN + 1;                                // odd row stride
  static constexpr int kPairs = kMaxN / 2;
  static constexpr int kBlockTasks = kPairs * (kPairs + 1) / 2;  // 2 x 2 blocks with K >= L
  static constexpr int kBlockTasksPerThread = (kBlockTasks + kGroup - 1) / kGroup;
  static constexpr int kVectorTasksPerThread = (kMaxN * kPairs + kGroup - 1) / kGroup;
};

template <typename T>
struct EighLimits {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  static constexpr T kEps = std::is_same_v<T, float> ? FLT_EPSILON : DBL_EPSILON;
};

/// Pair k of step r of a round-robin tournament on `players` (even) indices: index
/// players - 1 stays put and meets r; the others sit on a ring of players - 1 and k > 0 pairs
/// the indices k places either side of r.
__device__ inline void eigh_pair(int players, int r, int k, int* p, int* q) {
  const int ring = players - 1;
  *p = k == 0 ? ring : (r + k) % ring;
  *q = k == 0 ? r : (r + ring - k) % ring;
}

/// The rotation J (J_pp = J_qq = c, J_pq = s, J_qp = -s) that zeroes a_pq in J^T A J, with
/// Rutishauser's t = tan = sign(theta) / (|theta| + sqrt(1 + theta^2)),
/// theta = (a_qq - a_pp) / (2 a_pq): then a_pp' = a_pp - t a_pq and a_qq' = a_qq + t a_pq.
/// Returns false (and the identity) when a_pq is negligible: |a_pq| <= tol sqrt(|a_pp a_qq|)
/// (the relative test, which keeps the small eigenvalues of a graded matrix) or
/// |a_pq| <= floor (an absolute level far below the accuracy asked for: without it rounding
/// noise next to a zero diagonal could keep rotating). *cm1 = c - 1, computed without
/// cancellation as -t^2 / (r (1 + r)), r = sqrt(1 + t^2), for rotate_pair.
template <typename T>
__device__ inline bool eigh_rotation(T app, T aqq, T apq, T tol, T floor, T* cm1, T* s, T* t) {
  const T off = fabs(apq);
  if (!(off > floor) || !(off > tol * sqrt(fabs(app)) * sqrt(fabs(aqq)))) {
    *cm1 = T(0);
    *s = T(0);
    *t = T(0);
    return false;
  }
  // Halves first: a_qq - a_pp could overflow near the largest finite value.
  const JacobiAngle<T> angle = jacobi_angle((T(0.5) * aqq - T(0.5) * app) / apq);
  *cm1 = angle.cm1;
  *s = angle.t / angle.r;
  *t = angle.t;
  return true;
}

/// (x, y) <- (c x - s y, s x + c y), as x + ((c - 1) x - s y): for |t| below sqrt(eps) c rounds
/// to 1, and the plain form would lengthen both vectors by t^2 / 2 at every such rotation,
/// always upwards (V drifts away from orthogonal over the sweeps); this form is unbiased.
template <typename T>
__device__ inline void rotate_pair(T& x, T& y, T cm1, T s) {
  const T x0 = x;
  const T y0 = y;
  x = x0 + (cm1 * x0 - s * y0);
  y = y0 + (s * x0 + cm1 * y0);
}

template <int kGroup>
__device__ inline void eigh_group_sync() {
  if constexpr (kGroup == 32) {
    __syncwarp();
  } else {
    __syncthreads();
  }
}

template <int kGroup>
__device__ inline bool eigh_group_any(bool x) {
  if constexpr (kGroup == 32) {
    return __any_sync(0xffffffffu, x) != 0;
  } else {
    return __syncthreads_or(x ? 1 : 0) != 0;
  }
}

/// Maximum over the group; `scratch` holds kGroup / 32 values (unused for a warp).
template <typename T, int kGroup>
__device__ inline T eigh_group_max(T x, T* scratch, int lane) {
  for (int offset = 16; offset > 0; offset /= 2) {
    x = fmax(x, __shfl_xor_sync(0xffffffffu, x, offset));
  }
  if constexpr (kGroup > 32) {
    if (lane % 32 == 0) scratch[lane / 32] = x;
    __syncthreads();
    x = scratch[0];
    for (int i = 1; i < kGroup / 32; ++i) x = fmax(x, scratch[i]);
  }
  return x;
}

/// Eigenvalues (ascending) and, when `vectors`, eigenvectors of `count` row-major n x n
/// symmetric matrices (n <= kMaxN, the lower triangle read) from `a` into w (count x n) and v
/// (count x n x n, row-major, vectors as columns). Sweeps until one rotates no pair, at most
/// `max_sweeps`; a matrix still rotating then clears *converged (which the caller set nonzero).
/// Launch with kEighBlockThreads threads and ceil(count / kPerBlock) blocks.
template <typename T, int kMaxN>
__global__ void __launch_bounds__(kEighBlockThreads)
    eigh_jacobi_kernel(const T* __restrict__ a, T* __restrict__ w, T* __restrict__ v, int n,
                       std::int64_t count, bool vectors, int max_sweeps,
                       int* __restrict__ converged) {
  using G = EighJacobiGeometry<kMaxN>;
  constexpr int kGroup = G::kGroup;
  constexpr int kLd = G::kLd;
  __shared__ T s_a[G::kPerBlock][kMaxN * kLd];
  __shared__ T s_v[G::kPerBlock][kMaxN * kLd];
  __shared__ T s_cm1[G::kPerBlock][G::kPairs];
  __shared__ T s_sin[G::kPerBlock][G::kPairs];
  __shared__ T s_tan[G::kPerBlock][G::kPairs];
  // p | q << 8 | active << 16 of each pair of the current step.
  __shared__ int s_pair[G::kPerBlock][G::kPairs];
  __shared__ int s_perm[G::kPerBlock][kMaxN];
  __shared__ T s_scratch[G::kPerBlock][kGroup / 32];

  const int g = static_cast<int>(threadIdx.x) / kGroup;
  const int lane = static_cast<int>(threadIdx.x) % kGroup;
  const std::int64_t mat = static_cast<std::int64_t>(blockIdx.x) * G::kPerBlock + g;
  // Whole groups leave together: a warp (kGroup 32, which syncs per warp) or, for kGroup 128,
  // never (one matrix a block, ceil(count) blocks).
  if (mat >= count) return;

  const int np = n + (n & 1);
  const int pairs = np / 2;
  T* A = s_a[g];
  T* V = s_v[g];
  int* pair_code = s_pair[g];

  // Load: A from the lower triangle, zero padding; V = I.
  const T* ag = a + mat * n * n;
  T amax = T(0);
  for (int e = lane; e < np * np; e += kGroup) {
    const int i = e / np;
    const int j = e - i * np;
    T x = T(0);
    if (i < n && j < n) x = i >= j ? ag[i * n + j] : ag[j * n + i];
    A[i * kLd + j] = x;
    amax = fmax(amax, fabs(x));
    if (vectors) V[i * kLd + j] = i == j ? T(1) : T(0);
  }
  amax = eigh_group_max<T, kGroup>(amax, s_scratch[g], lane);
  const T tol = EighLimits<T>::kEps;
  // Off-diagonal elements left at or below this add at most n * floor = eps max|a| to the
  // Frobenius norm of what the decomposition leaves out.
  const T floor = EighLimits<T>::kEps * amax / static_cast<T>(n);

  // This thread's tasks, the same at every step: 2 x 2 blocks (pair K rows, pair L columns,
  // K >= L) of A, and (row, pair) pieces of V.
  int blk_k[G::kBlockTasksPerThread], blk_l[G::kBlockTasksPerThread];
#pragma unroll
  for (int i = 0; i < G::kBlockTasksPerThread; ++i) {
    const int task = lane + i * kGroup;
    blk_k[i] = -1;
    blk_l[i] = 0;
    if (task < pairs * (pairs + 1) / 2) {
      int k = 0;
      while ((k + 1) * (k + 2) / 2 <= task) ++k;
      blk_k[i] = k;
      blk_l[i] = task - k * (k + 1) / 2;
    }
  }
  int vec_row[G::kVectorTasksPerThread], vec_pair[G::kVectorTasksPerThread];
#pragma unroll
  for (int i = 0; i < G::kVectorTasksPerThread; ++i) {
    const int task = lane + i * kGroup;
    vec_row[i] = -1;
    vec_pair[i] = 0;
    if (vectors && task < n * pairs) {
      vec_pair[i] = task / n;  // consecutive lanes: consecutive rows of one column pair
      vec_row[i] = task - vec_pair[i] * n;
    }
  }
  eigh_group_sync<kGroup>();

  bool done = false;
  for (int sweep = 0; sweep < max_sweeps && !done; ++sweep) {
    bool rotated = false;
    for (int r = 0; r < np - 1; ++r) {
      if (lane < pairs) {
        int p, q;
        eigh_pair(np, r, lane, &p, &q);
        T cm1 = T(0), sn = T(0), tn = T(0);
        bool active = false;
        if (p < n && q < n) {
          active = eigh_rotation(A[p * kLd + p], A[q * kLd + q], A[p * kLd + q], tol, floor, &cm1,
                                 &sn, &tn);
        }
        s_cm1[g][lane] = cm1;
        s_sin[g][lane] = sn;
        s_tan[g][lane] = tn;
        pair_code[lane] = p | (q << 8) | (active ? 1 << 16 : 0);
        rotated = rotated || active;
      }
      eigh_group_sync<kGroup>();

#pragma unroll
      for (int i = 0; i < G::kBlockTasksPerThread; ++i) {
        const int kk = blk_k[i];
        if (kk < 0) continue;
        const int ll = blk_l[i];
        const int ck = pair_code[kk];
        const int p = ck & 0xff;
        const int q = (ck >> 8) & 0xff;
        if (kk == ll) {
          if ((ck >> 16) == 0) continue;
          const T t = s_tan[g][kk];
          const T apq = A[p * kLd + q];
          A[p * kLd + p] -= t * apq;
          A[q * kLd + q] += t * apq;
          A[p * kLd + q] = T(0);
          A[q * kLd + p] = T(0);
          continue;
        }
        const int cl = pair_code[ll];
        if (((ck | cl) >> 16) == 0) continue;
        const int c0 = cl & 0xff;
        const int c1 = (cl >> 8) & 0xff;
        T bp0 = A[p * kLd + c0], bp1 = A[p * kLd + c1];
        T bq0 = A[q * kLd + c0], bq1 = A[q * kLd + c1];
        // Columns (A J_L), then rows (J_K^T A).
        const T cm1_l = s_cm1[g][ll], s_l = s_sin[g][ll];
        rotate_pair(bp0, bp1, cm1_l, s_l);
        rotate_pair(bq0, bq1, cm1_l, s_l);
        const T cm1_k = s_cm1[g][kk], s_k = s_sin[g][kk];
        rotate_pair(bp0, bq0, cm1_k, s_k);
        rotate_pair(bp1, bq1, cm1_k, s_k);
        A[p * kLd + c0] = bp0;
        A[p * kLd + c1] = bp1;
        A[q * kLd + c0] = bq0;
        A[q * kLd + c1] = bq1;
        A[c0 * kLd + p] = bp0;
        A[c1 * kLd + p] = bp1;
        A[c0 * kLd + q] = bq0;
        A[c1 * kLd + q] = bq1;
      }
#pragma unroll
      for (int i = 0; i < G::kVectorTasksPerThread; ++i) {
        if (vec_row[i] < 0) continue;
        const int code = pair_code[vec_pair[i]];
        if ((code >> 16) == 0) continue;
        T* row = V + vec_row[i] * kLd;
        const int p = code & 0xff;
        const int q = (code >> 8) & 0xff;
        T x = row[p], y = row[q];
        rotate_pair(x, y, s_cm1[g][vec_pair[i]], s_sin[g][vec_pair[i]]);
        row[p] = x;
        row[q] = y;
      }
      eigh_group_sync<kGroup>();
    }
    done = !eigh_group_any<kGroup>(rotated);
  }
  if (!done && lane == 0) atomicExch(converged, 0);

  // Ascending order, ties by index (s_perm starts as the identity, so that even NaN
  // diagonals, which compare unordered, leave valid indices).
  int* perm = s_perm[g];
  if (lane < n) perm[lane] = lane;
  eigh_group_sync<kGroup>();
  if (lane < n) {
    const T d = A[lane * kLd + lane];
    int rank = 0;
    for (int j = 0; j < n; ++j) {
      const T e = A[j * kLd + j];
      rank += (e < d || (e == d && j < lane)) ? 1 : 0;
    }
    perm[rank] = lane;
  }
  eigh_group_sync<kGroup>();
  T* wg = w + mat * n;
  for (int c = lane; c < n; c += kGroup) {
    const int i = perm[c];
    wg[c] = A[i * kLd + i];
  }
  if (vectors) {
    T* vg = v + mat * n * n;
    for (int e = lane; e < n * n; e += kGroup) {
      const int row = e / n;
      const int col = e - row * n;
      vg[e] = V[row * kLd + perm[col]];
    }
  }
}

}  // namespace gcompute::kernels::cuda::detail
