// SPDX-License-Identifier: Apache-2.0
// Device kernels of the one-sided Jacobi SVD (see svd.cu for the algorithm and the layouts).
//
// Working layout: the matrix being orthogonalised is W (M x N, M >= N, column-major), i.e. A
// itself when m >= n and A^T when m < n, so a column of W is contiguous and every column-pair
// operation is coalesced. V (N x N, column-major) accumulates the rotations: A_w V = W.
#pragma once

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "jacobi_angle.cuh"

namespace gcompute::kernels::cuda::detail {

/// Thresholds of the Jacobi rotations for float and double.
template <typename T>
struct SvdLimits {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  static constexpr bool kSingle = std::is_same_v<T, float>;
  static constexpr T kEps = kSingle ? FLT_EPSILON : DBL_EPSILON;
  // A squared column norm at or below this (the smallest normal number) marks a negligible
  // column: see jacobi_rotation.
  static constexpr T kNegligible = kSingle ? FLT_MIN : DBL_MIN;
  // Below this (after scaling A so that max|a| is in [0.5, 1)) a column norm is treated as
  // zero: its square would not be a normal number with a margin of 1/eps.
  static constexpr T kZero = kSingle ? 1.0e-12f : 1.0e-138;
};

/// The pairing of a round-robin tournament (circle method) on `players` (even) players:
/// round r in [0, players - 1), pair p in [0, players / 2).
__host__ __device__ inline void round_robin_pair(int players, int r, int p, int* a, int* b) {
  const int ring = players - 1;
  if (p == 0) {
    *a = r;
    *b = ring;
  } else {
    *a = (r + p) % ring;
    *b = (r - p + ring) % ring;
  }
}

/// Hestenes rotation that makes columns with Gram entries (alpha, beta, gamma) orthogonal:
/// a_i' = c a_i - s a_j, a_j' = s a_i + c a_j. Returns false (c = 1, s = 0) when the pair
/// already passes |gamma| <= tol * |a_i| * |a_j| (this includes zero columns), or when alpha or
/// beta is at or below `negligible` (SvdLimits<data type>::kNegligible, as in cpu::svd): such a
/// column is rounding noise of a (numerically) zero singular value, orthogonal to everything
/// for our purposes. Without that rule a noise column that is an exact multiple of another
/// (all-equal or integer rank-1 matrices: rotating two equal columns leaves a residue
/// x (1 + (c - 1) - s) with the pattern of x) fails the test at every sweep while shrinking by
/// about eps per rotation, until its squared norm underflows to 0 while its dot product with
/// the other column does not: |gamma| > tol * 0 * |a_j| then holds for good, t comes out 0 (zeta
/// overflows), and that identity rotation still counts, so the matrix never converges
/// (accurate factors, converged = false; issue 11).
/// *cm1 = c - 1, computed without cancellation (-t^2 / (r (1 + r)), r = sqrt(1 + t^2)): apply the
/// rotation with apply_rotation, never as c x - s y. For |t| below sqrt(eps), c rounds to exactly
/// 1 and c^2 + s^2 = 1 + t^2: every such rotation lengthens both vectors by a relative t^2 / 2,
/// always upwards. Over the thousands of rotations that accumulate into V (and the blocked
/// driver's Q) that bias grew |V^T V - I| linearly (f64: 2-4x over 50 n eps at n = 120..512);
/// in the x + ((c - 1) x - s y) form the update is unbiased.
/// pair_needs_rotation is that test, shared with the solvers that decide on G before rotating;
/// pair_needs_rotation_rooted takes sqrt(alpha) and sqrt(beta) from a caller that tests many
/// pairs of the same columns (the same operations, so the same decisions).
template <typename T>
__device__ inline bool pair_needs_rotation_rooted(T alpha, T beta, T root_alpha, T root_beta,
                                                  T gamma, T tol, T negligible) {
  return fabs(gamma) > tol * root_alpha * root_beta && alpha > negligible && beta > negligible;
}
template <typename T>
__device__ inline bool pair_needs_rotation(T alpha, T beta, T gamma, T tol, T negligible) {
  return pair_needs_rotation_rooted(alpha, beta, sqrt(alpha), sqrt(beta), gamma, tol, negligible);
}

/// The two flag words that the blocked driver's inner solvers raise for a sweep: flags[0] when a
/// block pair's set of columns failed pair_needs_rotation at the outer tolerance (a sweep without
/// it has converged), and in flags[1] (as float bits: non-negative floats order as their bits) the
/// largest cosine between two columns of such a set before it was rotated. Jacobi converges
/// quadratically: once a sweep's rotations are all small, the residue they leave may already be
/// within tol, so the driver tests the whole W on its Gram matrix (one GEMM) instead of running a
/// full sweep that would only find nothing to rotate (settle_cosine in svd.cu). The inner solvers
/// compute the cosine whether or not the driver checks (a few products a pair).
constexpr int kRotatedFlag = 0;
constexpr int kLargestCosineFlag = 1;
constexpr int kSweepFlags = 2;

/// The cosine of the angle between two columns with squared norms alpha, beta (roots given) and
/// dot product gamma, as float; 0 where either is at or below `negligible` (never rotated).
template <typename T>
__device__ inline float pair_cosine(T alpha, T beta, T root_alpha, T root_beta, T gamma,
                                    T negligible) {
  return alpha > negligible && beta > negligible
             ? static_cast<float>(fabs(gamma) / (root_alpha * root_beta))
             : 0.0f;
}

/// Raises flags[kRotatedFlag] and takes the largest of `cosine` over the calling warp into
/// flags[kLargestCosineFlag] (two atomics a warp, from lane 0). Every lane of the warp calls it.
__device__ inline void raise_sweep_flags(int* flags, float cosine) {
  const unsigned largest = __reduce_max_sync(0xffffffffu, __float_as_uint(cosine));
  if ((threadIdx.x & 31) == 0) {
    atomicOr(flags + kRotatedFlag, 1);
    atomicMax(reinterpret_cast<unsigned*>(flags + kLargestCosineFlag), largest);
  }
}

/// pair_needs_rotation's test squared, for operands whose products neither overflow nor
/// underflow (scaled matrices; columns well above SvdLimits<double>::kNegligible).
template <typename T>
__device__ inline bool pair_needs_rotation_squared(T alpha, T beta, T gamma, T tol) {
  return gamma * gamma > tol * tol * alpha * beta;
}

template <typename T>
__device__ inline bool jacobi_rotation(T alpha, T beta, T gamma, T tol, T negligible, T* cm1,
                                       T* s) {
  if (!pair_needs_rotation(alpha, beta, gamma, tol, negligible)) {
    *cm1 = T(0);
    *s = T(0);
    return false;
  }
  const JacobiAngle<T> angle = jacobi_angle((beta - alpha) / (T(2) * gamma));
  *cm1 = angle.cm1;
  *s = (T(1) / angle.r) * angle.t;
  return true;
}

/// IEEE square root, reciprocal square root and division, for rutishauser_rotation.
struct IeeeMath {
  template <typename T>
  __device__ static T sqrt(T x) {
    return ::sqrt(x);
  }
  template <typename T>
  __device__ static T rsqrt(T x) {
    return ::rsqrt(x);
  }
  template <typename T>
  __device__ static T divide(T a, T b) {
    return a / b;
  }
};

/// The rotation's sine and c - 1 from d = (beta - alpha) / 2 and gamma with one square root, one
/// reciprocal square root and one division (instead of jacobi_angle's four of each: they dominate
/// a round in double precision). With h = sqrt(d^2 + gamma^2) and rho = 1 / sqrt(2 h (|d| + h)),
/// Rutishauser's t = sign(d) gamma / (|d| + h) gives c = 1 / sqrt(1 + t^2) = (|d| + h) rho,
/// s = c t = sign(d) gamma rho and c - 1 = -s^2 / (1 + c). `Math` supplies the three functions.
template <typename T>
struct RutishauserRotation {
  T cm1;
  T s;
  T h;  ///< sqrt(d^2 + gamma^2): the squared norms change by t gamma = sign(d) 2 h s^2
};
template <typename Math, typename T>
__device__ inline RutishauserRotation<T> rutishauser_rotation(T d, T gamma) {
  const T h = Math::sqrt(fma(d, d, gamma * gamma));
  const T dh = fabs(d) + h;
  const T rho = Math::rsqrt(T(2) * h * dh);
  const T sin = (d >= T(0) ? gamma : -gamma) * rho;
  const T c = dh * rho;
  return {Math::divide(-(sin * sin), T(1) + c), sin, h};
}

/// jacobi_rotation's rotation for the columns of a scaled, well-conditioned matrix (squares
/// neither overflow nor underflow, no column is negligible: the eigensolver's shifted matrices)
/// by rutishauser_rotation, with the change of the squared norms (alpha' = alpha - t gamma,
/// beta' = beta + t gamma) returned as *norm_change.
template <typename T>
__device__ inline bool jacobi_rotation_scaled(T alpha, T beta, T gamma, T tol, T* cm1, T* s,
                                              T* norm_change) {
  if (!pair_needs_rotation_squared(alpha, beta, gamma, tol)) {
    *cm1 = T(0);
    *s = T(0);
    *norm_change = T(0);
    return false;
  }
  const T d = T(0.5) * (beta - alpha);
  const RutishauserRotation<T> rot = rutishauser_rotation<IeeeMath>(d, gamma);
  *cm1 = rot.cm1;
  *s = rot.s;
  *norm_change = (d >= T(0) ? T(2) : T(-2)) * rot.h * (rot.s * rot.s);
  return true;
}

/// One column of a rotation by (c - 1, s): x + ((c - 1) x + sy y), where sy = -s for the pair's
/// first column and s for its second (y is the other column).
template <typename T>
__device__ inline T rotated_column(T cm1, T sy, T x, T y) {
  return x + fma(cm1, x, sy * y);
}
/// rotated_column in two correctly rounded operations, fma(sy, y, fma(cm1, x, x)): c x is rounded
/// from the exact c - 1, so without the upward bias of rounding c to 1 (see jacobi_rotation).
template <typename T>
__device__ inline T rotated_column_fused(T cm1, T sy, T x, T y) {
  return fma(sy, y, fma(cm1, x, x));
}

/// (x, y) <- (c x - s y, s x + c y) with c = 1 + cm1, as x + (cm1 x - s y): exact identity for
/// cm1 = s = 0, and no systematic growth of the norm (see jacobi_rotation).
template <typename T>
__device__ inline void apply_rotation(T cm1, T s, T* x, T* y) {
  const T x0 = *x;
  const T y0 = *y;
  *x = rotated_column(cm1, -s, x0, y0);
  *y = rotated_column(cm1, s, y0, x0);
}

/// apply_rotation with rotated_column_fused.
template <typename T>
__device__ inline void apply_rotation_fused(T cm1, T s, T* x, T* y) {
  const T x0 = *x;
  const T y0 = *y;
  *x = rotated_column_fused(cm1, -s, x0, y0);
  *y = rotated_column_fused(cm1, s, y0, x0);
}

template <typename T>
__device__ inline T warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ------------------------------------------------------------------------------------------
// Preparation.

/// Largest |a| of each matrix, as the bit pattern of a non-negative T (ordered like the value).
template <typename T>
struct BitsOf;
template <>
struct BitsOf<float> {
  using Type = unsigned int;
};
template <>
struct BitsOf<double> {
  using Type = unsigned long long;
};

template <typename T>
__global__ void max_abs_kernel(const T* __restrict__ a, std::int64_t elems_per_matrix,
                               int blocks_per_matrix, typename BitsOf<T>::Type* __restrict__ out) {
  using Bits = typename BitsOf<T>::Type;
  const std::int64_t b = blockIdx.x / blocks_per_matrix;
  const int part = blockIdx.x % blocks_per_matrix;
  const T* src = a + b * elems_per_matrix;
  T m = T(0);
  for (std::int64_t i = static_cast<std::int64_t>(part) * blockDim.x + threadIdx.x;
       i < elems_per_matrix; i += static_cast<std::int64_t>(blocks_per_matrix) * blockDim.x) {
    const T v = fabs(src[i]);
    m = v > m || v != v ? v : m;  // NaN propagates (its bits order above every number)
  }
  __shared__ Bits red[32];
  Bits bits;
  if constexpr (sizeof(T) == 4) {
    bits = __float_as_uint(m);
  } else {
    bits = static_cast<Bits>(__double_as_longlong(m));
  }
  for (int o = 16; o > 0; o >>= 1) {
    const Bits other = __shfl_xor_sync(0xffffffffu, bits, o);
    bits = other > bits ? other : bits;
  }
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = bits;
  __syncthreads();
  if (threadIdx.x == 0) {
    Bits best = 0;
    for (unsigned w = 0; w < (blockDim.x + 31) / 32; ++w) best = red[w] > best ? red[w] : best;
    atomicMax(out + b, best);
  }
}

/// Power-of-two scale that brings max|a| into [0.5, 1) (1 for a zero or non-finite matrix), so
/// that scaling is exact and squared norms neither overflow nor underflow needlessly.
template <typename T>
__device__ inline T scale_from_bits(typename BitsOf<T>::Type bits) {
  T m;
  if constexpr (sizeof(T) == 4) {
    m = __uint_as_float(bits);
  } else {
    m = __longlong_as_double(static_cast<long long>(bits));
  }
  if (!(m > T(0)) || !isfinite(m)) return T(1);
  int e = 0;
  frexp(m, &e);
  return ldexp(T(1), -e);
}

/// The matrix of the batch and the 32 x 32 tile (its first row i0 and column j0) of this block,
/// in a grid of batch * tiles_i * tiles_j blocks with the row tiles fastest.
struct BlockTile {
  std::int64_t b;
  int i0;
  int j0;
};
__device__ inline BlockTile block_tile(int tiles_i, int tiles_j) {
  const std::int64_t per = static_cast<std::int64_t>(tiles_i) * tiles_j;
  const int t = static_cast<int>(blockIdx.x % per);
  return {static_cast<std::int64_t>(blockIdx.x / per), (t % tiles_i) * 32, (t / tiles_i) * 32};
}

/// W[i + j * ldw] = scale * A[i * si + j * sj] for i < rows, j < cols (one 32 x 32 tile per block,
/// through shared memory so that reads along the source's contiguous index and writes along i
/// are both coalesced). `src_rows_contig` says whether i (true) or j is contiguous in A.
template <typename T>
__global__ void load_working_kernel(const T* __restrict__ a, std::int64_t a_batch_stride,
                                    std::int64_t si, std::int64_t sj, bool src_rows_contig,
                                    int rows, int cols, const typename BitsOf<T>::Type* max_bits,
                                    T* __restrict__ w, std::int64_t ldw,
                                    std::int64_t w_batch_stride, int tiles_i, int tiles_j) {
  __shared__ T tile[32][33];
  const auto [b, i0, j0] = block_tile(tiles_i, tiles_j);
  const T scale = scale_from_bits<T>(max_bits[b]);
  const T* src = a + b * a_batch_stride;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int il = src_rows_contig ? threadIdx.x : y;
    const int jl = src_rows_contig ? y : threadIdx.x;
    const int i = i0 + il;
    const int j = j0 + jl;
    if (i < rows && j < cols) tile[jl][il] = src[i * si + j * sj] * scale;
  }
  __syncthreads();
  T* dst = w + b * w_batch_stride;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int i = i0 + threadIdx.x;
    const int j = j0 + y;
    if (i < rows && j < cols) dst[i + j * ldw] = tile[y][threadIdx.x];
  }
}

/// V = I (n x n, leading dimension ld), for each matrix of the batch.
template <typename T>
__global__ void identity_kernel(T* __restrict__ v, std::int64_t n, std::int64_t ld,
                                std::int64_t batch_stride, std::int64_t total) {
  for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       idx < total; idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t b = idx / (n * n);
    const std::int64_t r = idx % (n * n);
    const std::int64_t i = r % n;
    const std::int64_t j = r / n;
    v[b * batch_stride + i + j * ld] = i == j ? T(1) : T(0);
  }
}

// ------------------------------------------------------------------------------------------
// Small matrices: one block per matrix, W (and V) in shared memory, all sweeps in the kernel.

/// W (m x n, column-major, leading dimension m) and V (n x n) of matrix blockIdx.x are read from
/// global memory, orthogonalised in shared memory and written back in place. One warp per column
/// pair (warps loop over the n/2 pairs of a round), lanes over rows.
template <typename T>
__global__ void small_jacobi_kernel(T* __restrict__ w, T* __restrict__ v, int m, int n, bool with_v,
                                    T tol, int max_sweeps, int* __restrict__ info) {
  extern __shared__ unsigned char smem_raw[];
  T* sw = reinterpret_cast<T*>(smem_raw);
  T* sv = sw + static_cast<std::int64_t>(m) * n;
  __shared__ int rotated;
  const std::int64_t b = blockIdx.x;
  T* gw = w + b * static_cast<std::int64_t>(m) * n;
  T* gv = v + b * static_cast<std::int64_t>(n) * n;
  for (int idx = threadIdx.x; idx < m * n; idx += blockDim.x) sw[idx] = gw[idx];
  if (with_v) {
    for (int idx = threadIdx.x; idx < n * n; idx += blockDim.x) sv[idx] = gv[idx];
  }
  const int players = n + (n & 1);
  const int pairs = players / 2;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  int sweeps = 0;
  bool converged = false;
  while (!converged && sweeps < max_sweeps) {
    if (threadIdx.x == 0) rotated = 0;
    __syncthreads();
    for (int r = 0; r < players - 1; ++r) {
      for (int p = warp; p < pairs; p += warps) {
        int i, j;
        round_robin_pair(players, r, p, &i, &j);
        if (i >= n || j >= n) continue;  // the bye of an odd n
        T* ci = sw + static_cast<std::int64_t>(i) * m;
        T* cj = sw + static_cast<std::int64_t>(j) * m;
        T alpha = 0, beta = 0, gamma = 0;
        for (int row = lane; row < m; row += 32) {
          const T x = ci[row];
          const T y = cj[row];
          alpha += x * x;
          beta += y * y;
          gamma += x * y;
        }
        alpha = warp_sum(alpha);
        beta = warp_sum(beta);
        gamma = warp_sum(gamma);
        T cm1, s;
        if (!jacobi_rotation(alpha, beta, gamma, tol, SvdLimits<T>::kNegligible, &cm1, &s)) {
          continue;
        }
        if (lane == 0) rotated = 1;
        for (int row = lane; row < m; row += 32) apply_rotation(cm1, s, ci + row, cj + row);
        if (with_v) {
          T* vi = sv + static_cast<std::int64_t>(i) * n;
          T* vj = sv + static_cast<std::int64_t>(j) * n;
          for (int row = lane; row < n; row += 32) apply_rotation(cm1, s, vi + row, vj + row);
        }
      }
      __syncthreads();
    }
    ++sweeps;
    converged = rotated == 0;
    __syncthreads();  // everyone has read `rotated` before it is reset
  }
  for (int idx = threadIdx.x; idx < m * n; idx += blockDim.x) gw[idx] = sw[idx];
  if (with_v) {
    for (int idx = threadIdx.x; idx < n * n; idx += blockDim.x) gv[idx] = sv[idx];
  }
  if (threadIdx.x == 0) {
    atomicMax(info, sweeps);
    if (!converged) atomicMin(info + 1, 0);
  }
}

// ------------------------------------------------------------------------------------------
// Tiny matrices (M <= 32): one group of P lanes per matrix (P = 8, 16 or 32; 32 / P matrices per
// warp), everything in registers, no shared memory and no barriers.

/// Partner of player `l` in round r of the circle-method round robin on P players (the pairing of
/// round_robin_pair, from one player's side).
template <int P>
__device__ inline int round_robin_partner(int r, int l) {
  constexpr int kRing = P - 1;
  if (l == kRing) return r;
  if (l == r) return kRing;
  return (2 * r - l + 2 * kRing) % kRing;
}

/// Where a thread of a warp_*_kernel sits: lane l of group `group` of its warp, which holds
/// matrix `mat` (32 / P groups of P lanes a warp, blocks of whole warps).
template <int P>
struct LaneGroup {
  int lane;  ///< in the warp
  int l;     ///< in the group: the column it holds
  int group;
  std::int64_t mat;

  __device__ LaneGroup()
      : lane(static_cast<int>(threadIdx.x & 31)),
        l(lane & (P - 1)),
        group(lane / P),
        mat((static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5)) *
                (32 / P) +
            group) {}
};

/// The sweeps of the register-resident one-sided Jacobi on one P-lane group's matrix: lane l holds
/// column l in x and, when kWithV, column l of V in vc (vc is not touched otherwise). A round
/// pairs every lane with its round-robin partner; the partner's column comes over shuffles, both
/// lanes of a pair compute the same Gram entries in the same order (so the same rotation) and each
/// keeps its own rotated column. Every lane of the warp calls this (the loop votes warp-wide);
/// `active` is false in a group without a matrix. Returns the sweeps the group's matrix took,
/// the last one rotating nothing; *converged is false when it still rotated at max_sweeps.
///
/// kTrackNorms (for scaled, well-conditioned matrices: the eigensolver's shifted ones) halves the
/// arithmetic of a round: each lane keeps its squared norm, updated by the rotation
/// (alpha' = alpha - t gamma, beta' = beta + t gamma) and recomputed at the start of every sweep,
/// so that a round computes only the dot product, with the partner's norm coming as one more
/// shuffle; the angle comes from jacobi_rotation_scaled; and the rotation is applied as
/// fma(s, y, fma(c - 1, x, x)), two correctly rounded operations (c x rounded from the exact
/// c - 1, so still without the upward bias of rounding c to 1), instead of three.
template <typename T, int P, bool kWithV, bool kTrackNorms = false>
__device__ inline int warp_jacobi_sweeps(T (&x)[P], T (&vc)[P], bool active, T tol, int max_sweeps,
                                         bool* converged) {
  const LaneGroup<P> at;
  const int l = at.l;
  const unsigned group_mask = (P == 32 ? 0xffffffffu : ((1u << P) - 1u)) << (at.group * P);
  int sweeps = 0;
  bool done = !active;
  for (int it = 0; it < max_sweeps && __any_sync(0xffffffffu, !done); ++it) {
    bool rotated = false;
    T norm = T(0);  // this lane's squared norm (kTrackNorms)
    if constexpr (kTrackNorms) {
#pragma unroll
      for (int k = 0; k < P; ++k) norm = fma(x[k], x[k], norm);
    }
    for (int r = 0; r < P - 1; ++r) {
      const int partner = round_robin_partner<P>(r, l);
      const bool first = l < partner;  // plays i of the pair (i, j), i < j
      T y[P];
      T aa = T(0), bb = T(0), ab = T(0);
      if constexpr (kTrackNorms) {
        aa = norm;
        bb = __shfl_sync(0xffffffffu, norm, partner, P);
#pragma unroll
        for (int k = 0; k < P; ++k) {
          y[k] = __shfl_sync(0xffffffffu, x[k], partner, P);
          ab = fma(x[k], y[k], ab);
        }
      } else {
#pragma unroll
        for (int k = 0; k < P; ++k) {
          y[k] = __shfl_sync(0xffffffffu, x[k], partner, P);
          aa = fma(x[k], x[k], aa);
          bb = fma(y[k], y[k], bb);
          ab = fma(x[k], y[k], ab);
        }
      }
      // (alpha, beta) = norms of (i, j): the same numbers in both lanes of the pair.
      const T alpha = first ? aa : bb;
      const T beta = first ? bb : aa;
      T cm1, s, norm_change;
      if constexpr (kTrackNorms) {
        rotated |= jacobi_rotation_scaled(alpha, beta, ab, tol, &cm1, &s, &norm_change);
      } else {
        rotated |= jacobi_rotation(alpha, beta, ab, tol, SvdLimits<T>::kNegligible, &cm1, &s);
      }
      // i: x' = x + (cm1 x - s y); j: x' = x + (cm1 x + s y) (its partner is i).
      const T sm = first ? -s : s;
      if constexpr (kTrackNorms) {
        norm = first ? norm - norm_change : norm + norm_change;
#pragma unroll
        for (int k = 0; k < P; ++k) x[k] = rotated_column_fused(cm1, sm, x[k], y[k]);
      } else {
#pragma unroll
        for (int k = 0; k < P; ++k) x[k] = rotated_column(cm1, sm, x[k], y[k]);
      }
      if constexpr (kWithV) {
#pragma unroll
        for (int k = 0; k < P; ++k) {
          const T vy = __shfl_sync(0xffffffffu, vc[k], partner, P);
          vc[k] = rotated_column(cm1, sm, vc[k], vy);
        }
      }
    }
    const unsigned any = __ballot_sync(0xffffffffu, rotated) & group_mask;
    if (!done) {
      ++sweeps;
      done = any == 0;
    }
  }
  *converged = done;
  return sweeps;
}

/// W (m x n, column-major, ld m; m <= P) and V (n x n) of matrices [0, count) are orthogonalised
/// by warp_jacobi_sweeps: lane l of a group holds column l of W and of V in registers (zero for
/// l >= n; rows >= m or >= n zero). V starts as the identity (not read).
template <typename T, int P>
__global__ void __launch_bounds__(128)
    warp_jacobi_kernel(T* __restrict__ w, T* __restrict__ v, int m, int n, std::int64_t count,
                       bool with_v, T tol, int max_sweeps, int* __restrict__ info) {
  const LaneGroup<P> at;
  const int lane = at.lane, l = at.l;
  const std::int64_t mat = at.mat;
  const bool active = mat < count;
  T x[P];
  T vc[P];
  T* gw = w + mat * m * n;
  if (active && l < n) {
#pragma unroll
    for (int k = 0; k < P; ++k) x[k] = k < m ? gw[static_cast<std::int64_t>(l) * m + k] : T(0);
  } else {
#pragma unroll
    for (int k = 0; k < P; ++k) x[k] = T(0);
  }
#pragma unroll
  for (int k = 0; k < P; ++k) vc[k] = (with_v && k == l && l < n) ? T(1) : T(0);

  bool done = false;
  const int sweeps = with_v
                         ? warp_jacobi_sweeps<T, P, true>(x, vc, active, tol, max_sweeps, &done)
                         : warp_jacobi_sweeps<T, P, false>(x, vc, active, tol, max_sweeps, &done);
  // One atomic pair per warp: the largest sweep count, and whether every matrix converged.
  const int warp_sweeps = __reduce_max_sync(0xffffffffu, active ? sweeps : 0);
  const bool warp_unconverged = __any_sync(0xffffffffu, active && !done);
  if (lane == 0) {
    atomicMax(info, warp_sweeps);
    if (warp_unconverged) atomicMin(info + 1, 0);
  }
  if (!active) return;
  if (l < n) {
#pragma unroll
    for (int k = 0; k < P; ++k) {
      if (k < m) gw[static_cast<std::int64_t>(l) * m + k] = x[k];
    }
    if (with_v) {
      T* gv = v + mat * n * n + static_cast<std::int64_t>(l) * n;
#pragma unroll
      for (int k = 0; k < P; ++k) {
        if (k < n) gv[k] = vc[k];
      }
    }
  }
}

// ------------------------------------------------------------------------------------------
// Blocked Jacobi: the inner solver on the Gram matrix of a block pair.

/// Block pair blockIdx.x's Gram matrix (nb2 x nb2) from the round's Gram GEMM into `dst`
/// (column-major, leading dimension ld) by the block's threads: the sum, in double and in chunk
/// order, of its `splits` partial products over consecutive row chunks of W (split-K: one product
/// per pair ran one GEMM tile down all of W's rows), chunk c of every pair gridDim.x nb2^2
/// elements after chunk c - 1. A thread's kBatch elements have their loads of a chunk in flight
/// together. Both triangles, as the GEMM wrote them; no barrier.
template <typename TI, typename T, int kBatch = 16>
__device__ inline void load_split_gram(const T* __restrict__ g_all, int nb2, int splits, TI* dst,
                                       int ld) {
  const int elems = nb2 * nb2;
  const std::int64_t chunk_stride = static_cast<std::int64_t>(gridDim.x) * elems;
  const T* g = g_all + static_cast<std::int64_t>(blockIdx.x) * elems;
  const int step = static_cast<int>(blockDim.x);
  for (int e0 = static_cast<int>(threadIdx.x); e0 < elems; e0 += step * kBatch) {
    double sum[kBatch] = {};
    for (int c = 0; c < splits; ++c) {
      T part[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int e = e0 + b * step;
        part[b] = e < elems ? g[c * chunk_stride + e] : T(0);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) sum[b] += static_cast<double>(part[b]);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int e = e0 + b * step;
      if (e < elems) dst[e % nb2 + e / nb2 * ld] = static_cast<TI>(sum[b]);
    }
  }
}

/// For block pair blockIdx.x: G (2b x 2b, column-major, from a GEMM) is diagonalised by a cyclic
/// two-sided Jacobi in shared memory with the same rotations one-sided Jacobi would apply to the
/// 2b columns; Q (2b x 2b) accumulates them so that [Ai Aj] Q has orthogonal columns.
/// Raises sweep_flags (raise_sweep_flags) when any rotation was needed (the set was not yet
/// orthogonal).
/// A round is two phases: the rotations of its b pairs, then G <- J^T G J and Q <- Q J, where
/// each thread owns whole 2 x 2 blocks of G (rows of pair p x columns of pair q: the column
/// rotation, then the row rotation, as a columns-then-rows pass would) and row pieces of Q, so
/// no barrier is needed inside the update.
template <typename T, typename TI>
__global__ void __launch_bounds__(1024)
    gram_jacobi_kernel(const T* __restrict__ g_all, int splits, T* __restrict__ q_all, int nb2,
                       double outer_tol, int max_inner_sweeps, int* __restrict__ sweep_flags) {
  // `tol` in the arithmetic's type (exact: callers pass a T); double in the signature so that every
  // inner solver has one.
  const TI tol = static_cast<TI>(outer_tol);
  extern __shared__ unsigned char smem_raw[];
  const int ld = nb2 + 1;
  TI* g = reinterpret_cast<TI*>(smem_raw);
  TI* q = g + nb2 * ld;
  TI* cs = q + nb2 * ld;                        // c - 1, s per pair of a round (0, 0: not rotated)
  int* idx = reinterpret_cast<int*>(cs + nb2);  // i, j per pair
  __shared__ int any_rot;
  T* qdst = q_all + static_cast<std::int64_t>(blockIdx.x) * nb2 * nb2;
  load_split_gram(g_all, nb2, splits, g, ld);
  __syncthreads();
  float cosine = 0.0f;  // the largest between two of the set's columns, for raise_sweep_flags
  for (int e = threadIdx.x; e < nb2 * nb2; e += blockDim.x) {
    const int i = e % nb2;
    const int j = e / nb2;
    // GEMM need not produce an exactly symmetric G; use the mean of both triangles (this loop
    // writes no diagonal entry, so they are read as loaded).
    if (i > j) {
      const TI mean = TI(0.5) * (g[i + j * ld] + g[j + i * ld]);
      g[i + j * ld] = mean;
      g[j + i * ld] = mean;
      const TI gi = g[i + i * ld], gj = g[j + j * ld];
      cosine = fmaxf(cosine,
                     pair_cosine(gi, gj, sqrt(gi), sqrt(gj), mean, TI(SvdLimits<T>::kNegligible)));
    }
    q[i + j * ld] = i == j ? TI(1) : TI(0);
  }
  const int pairs = nb2 / 2;
  bool first_rot = false;
  for (int sweep = 0; sweep < max_inner_sweeps; ++sweep) {
    if (threadIdx.x == 0) any_rot = 0;
    __syncthreads();
    for (int r = 0; r < nb2 - 1; ++r) {
      for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
        int i, j;
        round_robin_pair(nb2, r, p, &i, &j);
        TI cm1, s;
        // G was computed in T: its squared norms are negligible on T's scale.
        const bool rot = jacobi_rotation(g[i + i * ld], g[j + j * ld], g[i + j * ld], tol,
                                         TI(SvdLimits<T>::kNegligible), &cm1, &s);
        if (rot) any_rot = 1;
        cs[2 * p] = cm1;
        cs[2 * p + 1] = s;
        idx[2 * p] = i;
        idx[2 * p + 1] = j;
      }
      __syncthreads();
      const int blocks = pairs * pairs;
      for (int e = threadIdx.x; e < blocks + pairs * nb2; e += blockDim.x) {
        if (e < blocks) {
          const int p = e % pairs;   // row pair
          const int pq = e / pairs;  // column pair
          const TI cr = cs[2 * p], sr = cs[2 * p + 1];
          const TI cc = cs[2 * pq], sc = cs[2 * pq + 1];
          const bool rot_r = sr != TI(0) || cr != TI(0);
          const bool rot_c = sc != TI(0) || cc != TI(0);
          if (!rot_r && !rot_c) continue;
          const int ip = idx[2 * p], jp = idx[2 * p + 1];
          const int iq = idx[2 * pq], jq = idx[2 * pq + 1];
          TI a = g[ip + iq * ld], b = g[ip + jq * ld];
          TI c = g[jp + iq * ld], d = g[jp + jq * ld];
          if (rot_c) {
            apply_rotation(cc, sc, &a, &b);
            apply_rotation(cc, sc, &c, &d);
          }
          if (rot_r) {
            apply_rotation(cr, sr, &a, &c);
            apply_rotation(cr, sr, &b, &d);
          }
          if (p == pq) {
            b = TI(0);  // annihilated up to rounding; keep G exactly symmetric
            c = TI(0);
          }
          g[ip + iq * ld] = a;
          g[ip + jq * ld] = b;
          g[jp + iq * ld] = c;
          g[jp + jq * ld] = d;
        } else {
          const int f = e - blocks;
          const int pq = f / nb2;
          const int row = f % nb2;
          const TI cc = cs[2 * pq], sc = cs[2 * pq + 1];
          if (sc == TI(0) && cc == TI(0)) continue;
          apply_rotation(cc, sc, q + row + idx[2 * pq] * ld, q + row + idx[2 * pq + 1] * ld);
        }
      }
      __syncthreads();
    }
    const bool any = any_rot != 0;
    __syncthreads();
    if (!any) break;
    first_rot = true;
  }
  for (int e = threadIdx.x; e < nb2 * nb2; e += blockDim.x) {
    qdst[e] = static_cast<T>(q[(e % nb2) + (e / nb2) * ld]);
  }
  // first_rot is the same in every thread: it comes from a shared word after a barrier.
  if (first_rot) raise_sweep_flags(sweep_flags, cosine);
}

/// 16 bytes of consecutive elements, for one vector access to shared memory.
template <typename TI>
struct alignas(16) SharedRun {
  static constexpr int kSize = 16 / sizeof(TI);
  TI v[kSize];
};

/// Lanes of gram_cholesky_jacobi_kernel that share one column pair (a round's pair per group).
constexpr int kPairLanes = 8;
/// Side of the square tile of G that a thread of that kernel's factorization holds in registers.
constexpr int kCholeskyTile = 4;

/// 1 / sqrt(x) and 1 / x in double for x in about [2^-60, 2^60]: the float estimate and two Newton
/// steps (a few ulps, against IEEE's correctly rounded results at several times the latency).
__device__ inline double fast_rsqrt(double x) {
  double y = static_cast<double>(rsqrtf(static_cast<float>(x)));
  y = fma(0.5 * y, fma(-x * y, y, 1.0), y);
  return fma(0.5 * y, fma(-x * y, y, 1.0), y);
}
__device__ inline double fast_rcp(double x) {
  double y = static_cast<double>(__frcp_rn(static_cast<float>(x)));
  y = fma(y, fma(-x, y, 1.0), y);
  return fma(y, fma(-x, y, 1.0), y);
}
/// 1 / d for a Cholesky pivot: fast_rcp in double where the float estimate is in range (on the
/// factorization's critical path), IEEE in float.
__device__ inline double pivot_reciprocal(double d) {
  return d > 1e-30 && d < 1e30 ? fast_rcp(d) : 1.0 / d;
}
__device__ inline float pivot_reciprocal(float d) {
  return 1.0f / d;
}

/// rutishauser_rotation's functions in double from fast_rsqrt and fast_rcp, for arguments near 1.
struct FastDoubleMath {
  __device__ static double sqrt(double x) { return x * fast_rsqrt(x); }
  __device__ static double rsqrt(double x) { return fast_rsqrt(x); }
  __device__ static double divide(double a, double b) { return a * fast_rcp(b); }
};

/// The power of two that brings big (> 0, normal) into [1, 2): exact, from its exponent bits.
__device__ inline double unit_scale(double big) {
  const int biased = (__double2hiint(big) >> 20) & 0x7ff;  // big = 1.f x 2^(biased - 1023)
  return __hiloint2double((2046 - biased) << 20, 0);       // 2^(1023 - biased)
}
__device__ inline float unit_scale(float big) {
  const int biased = (__float_as_int(big) >> 23) & 0xff;  // big = 1.f x 2^(biased - 127)
  return __int_as_float((254 - biased) << 23);            // 2^(127 - biased)
}

/// Per arithmetic type, the functions of the short rotation chain and the squared column norm
/// below which the chain's squared test could underflow (such columns take jacobi_rotation).
template <typename T>
struct ShortChain;
template <>
struct ShortChain<double> {
  using Math = FastDoubleMath;
  static constexpr double kFloor = 1e-100;
};
template <>
struct ShortChain<float> {
  using Math = IeeeMath;
  static constexpr float kFloor = 1e-15f;
};

/// jacobi_rotation's rotation at `tol` in a short chain: d = (beta - alpha) / 2 and gamma are
/// scaled by the power of two that brings the larger into [1, 2) (exact; s and c do not depend
/// on it), so that rutishauser_rotation with ShortChain<T>::Math (fast_rsqrt and fast_rcp in
/// double, IEEE functions in float) sees arguments near 1. Columns at or below
/// ShortChain<T>::kFloor take jacobi_rotation itself.
template <typename T>
__device__ inline bool inner_rotation(T alpha, T beta, T gamma, T tol, T negligible, T* cm1, T* s) {
  if (!(alpha > ShortChain<T>::kFloor && beta > ShortChain<T>::kFloor)) {
    return jacobi_rotation(alpha, beta, gamma, tol, negligible, cm1, s);
  }
  if (!pair_needs_rotation_squared(alpha, beta, gamma, tol)) {
    *cm1 = T(0);
    *s = T(0);
    return false;
  }
  const T d = T(0.5) * (beta - alpha);
  const T scale = unit_scale(fmax(fabs(d), fabs(gamma)));
  const RutishauserRotation<T> rot =
      rutishauser_rotation<typename ShortChain<T>::Math>(d * scale, gamma * scale);
  *cm1 = rot.cm1;
  *s = rot.s;
  return true;
}

/// For block pair blockIdx.x: the same job as gram_jacobi_kernel (Q with [Wi Wj] Q orthogonal,
/// sweep_flags raised (raise_sweep_flags) when the pair set needed it) by one-sided Jacobi on R,
/// the Cholesky factor of G = [Wi Wj]^T [Wi Wj] = R^T R (nb2 <= 64), with 4 nb2 threads, in TI
/// (double, or float for f32 input where the caller allows: half the shared-memory traffic that
/// bounds a round; the pivot floor and inner tolerance in TI's epsilon, as in
/// gram_warp_jacobi_kernel). G comes from the round's Gram GEMM in `splits` partial products
/// (load_split_gram). Rotating R's columns rotates [Wi Wj]'s, and only columns move.
///
/// A round: each group of kPairLanes lanes loads its pair's two columns of R and Q (kRows rows a
/// lane, in 16-byte runs), sums the three dot products over the group, computes the rotation
/// (inner_rotation, every lane of the group the same), rotates and stores; one barrier. Every
/// element of R and Q is read and written once a round, so the groups are small: a warp-wide sum
/// or a rotation per warp costs shuffles and arithmetic that 32 warps would have to share.
///
/// Whether the pair set needs rotating is decided on G itself with jacobi_rotation's test
/// (pair_needs_rotation) at `tol`, as the two-sided solver decides it, so that the outer
/// convergence test does not depend on the factorization's rounding; a set that passes gets Q = I
/// with no factorization. Inside, rotations use kInnerTol (or `tol` where a caller asked for less),
/// below the default outer tolerance (sqrt(max(m, n)) eps, at least 16 eps here), so that rounding
/// in R cannot hide an off-diagonal that the outer test still sees.
///
/// The factorization is right-looking on the lower triangle, one barrier a step: each thread
/// keeps a kCholeskyTile square of G in registers and reads only column k from shared memory;
/// column k + 1, final after step k, goes back to shared memory, and the thread holding its
/// diagonal element computes the next pivot's reciprocal. A pivot at or below kPivotFloor times
/// its column's squared norm in G (a column numerically in the span of the ones before it, or G
/// indefinite by rounding) leaves that row of R zero.
template <typename T, typename TI, int kRows>
__global__ void __launch_bounds__(256, 1)
    gram_cholesky_jacobi_kernel(const T* __restrict__ g_all, int splits, T* __restrict__ q_all,
                                int nb2, double outer_tol, int max_inner_sweeps,
                                int* __restrict__ sweep_flags) {
  constexpr TI kInnerTol = 4 * SvdLimits<TI>::kEps;
  constexpr TI kPivotFloor = 256 * SvdLimits<TI>::kEps;
  const TI tol = static_cast<TI>(outer_tol);  // exact: callers pass a T
  constexpr int kTile = kCholeskyTile;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // A round's accesses are 16 bytes a lane, a group's eight lanes 128 consecutive bytes of a
  // column (one wavefront whatever ld); ld keeps columns 16-byte aligned. (With 8-byte accesses
  // in double, nb2 + 8 took 2.3 k cycles a round at nb2 = 64 where nb2 + 4 took 3.2 k.)
  const int ld = nb2 + 8;
  TI* r = reinterpret_cast<TI*>(smem_raw);  // G, then R (column-major)
  TI* q = r + nb2 * ld;
  TI* diag = q + nb2 * ld;          // G's diagonal
  TI* root_diag = diag + nb2;       // its square roots, for the test on every pair
  TI* pivot_inv = root_diag + nb2;  // 1 / pivot, 0 for a pivot below the floor
  __shared__ int any_above;
  const int elems = nb2 * nb2;
  const int tid = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  T* qdst = q_all + static_cast<std::int64_t>(blockIdx.x) * elems;
  const TI negligible = SvdLimits<T>::kNegligible;
  const TI inner_tol = fmin(kInnerTol, tol);
  const auto pivot_of = [&](int k, TI d) {
    const bool keep = d > diag[k] * kPivotFloor && d > negligible;
    pivot_inv[k] = keep ? pivot_reciprocal(d) : TI(0);
  };

  // G (the factorization and the tests read its lower triangle only: the GEMM's two triangles
  // may differ by rounding) and Q = I.
  load_split_gram(g_all, nb2, splits, r, ld);
  for (int e = tid; e < elems; e += threads) {
    const int i = e % nb2, j = e / nb2;
    q[i + j * ld] = i == j ? TI(1) : TI(0);
  }
  __syncthreads();
  for (int i = tid; i < nb2; i += threads) {
    diag[i] = r[i + i * ld];
    root_diag[i] = sqrt(diag[i]);
  }
  __syncthreads();
  bool needs = false;
  float cosine = 0.0f;  // the largest between two of the set's columns, for raise_sweep_flags
  for (int e = tid; e < elems; e += threads) {
    const int i = e % nb2, j = e / nb2;
    if (i <= j) continue;
    needs |= pair_needs_rotation_rooted(diag[i], diag[j], root_diag[i], root_diag[j], r[i + j * ld],
                                        tol, negligible);
    cosine = fmaxf(cosine, pair_cosine(diag[i], diag[j], root_diag[i], root_diag[j], r[i + j * ld],
                                       negligible));
  }
  if (tid == 0) pivot_of(0, r[0]);
  if (!__syncthreads_or(needs)) {
    for (int e = tid; e < elems; e += threads) qdst[e] = (e % nb2 == e / nb2) ? T(1) : T(0);
    return;
  }

  // G = L L^T on the lower triangle; thread t holds tile (ti, tj) of it, ti >= tj.
  const int tiles = nb2 / kTile;
  const int ti = tid % tiles, tj = tid / tiles;
  const bool holds = tj < tiles && ti >= tj;
  const int i0 = ti * kTile, j0 = tj * kTile;
  TI tile[kTile][kTile];
#pragma unroll
  for (int a = 0; a < kTile; ++a) {
#pragma unroll
    for (int b = 0; b < kTile; ++b) {
      // The lower triangle only (a diagonal tile's upper part is never read).
      tile[a][b] = holds && i0 + a >= j0 + b ? r[(i0 + a) + (j0 + b) * ld] : TI(0);
    }
  }
  for (int k = 0; k + 1 < nb2; ++k) {
    const TI inv = pivot_inv[k];
    if (holds && inv != TI(0) && i0 + kTile - 1 > k && j0 + kTile - 1 > k) {
      TI li[kTile], lj[kTile];
#pragma unroll
      for (int a = 0; a < kTile; ++a) {
        li[a] = r[(i0 + a) + k * ld];
        lj[a] = r[(j0 + a) + k * ld] * inv;
      }
#pragma unroll
      for (int a = 0; a < kTile; ++a) {
#pragma unroll
        for (int b = 0; b < kTile; ++b) {
          if (i0 + a >= j0 + b && j0 + b > k) tile[a][b] = fma(-li[a], lj[b], tile[a][b]);
        }
      }
    }
    // Column k + 1 is final: publish it (rows from k + 1 on) and its pivot.
    if (holds && j0 <= k + 1 && k + 1 < j0 + kTile) {
#pragma unroll
      for (int b = 0; b < kTile; ++b) {  // constant indices keep the tile in registers
        if (j0 + b != k + 1) continue;
#pragma unroll
        for (int a = 0; a < kTile; ++a) {
          if (i0 + a >= k + 1) r[(i0 + a) + (k + 1) * ld] = tile[a][b];
          if (i0 + a == k + 1) pivot_of(k + 1, tile[a][b]);
        }
      }
    }
    __syncthreads();
  }
  // R = (L D^-1/2)^T: row j of R from column j of L, where the lower triangle now holds every
  // column as published.
  TI rv[kTile][kTile];
#pragma unroll
  for (int a = 0; a < kTile; ++a) {
#pragma unroll
    for (int b = 0; b < kTile; ++b) {
      const int i = i0 + a, j = j0 + b;
      rv[a][b] = holds && i >= j ? r[i + j * ld] * sqrt(pivot_inv[j]) : TI(0);
    }
  }
  __syncthreads();
  if (holds) {
#pragma unroll
    for (int a = 0; a < kTile; ++a) {
#pragma unroll
      for (int b = 0; b < kTile; ++b) {
        const int i = i0 + a, j = j0 + b;
        if (i < j) continue;
        r[j + i * ld] = rv[a][b];          // R[j][i]
        if (i > j) r[i + j * ld] = TI(0);  // below R's diagonal
      }
    }
  }
  __syncthreads();

  const int p = tid / kPairLanes, gl = tid % kPairLanes, pairs = nb2 / 2;
  // A lane's rows of a column: runs of kVec consecutive rows (one 16-byte shared-memory access;
  // the group's kPairLanes lanes read kPairLanes kVec consecutive rows, one wavefront), the runs
  // kPairLanes kVec rows apart. nb2 is a multiple of 16, so a run is wholly in or out.
  using Run = SharedRun<TI>;
  constexpr int kVec = Run::kSize;
  constexpr int kRuns = kRows / kVec;
  static_assert(kRows % kVec == 0);
  const auto run_at = [&](TI* base, int run) -> Run* {
    return reinterpret_cast<Run*>(base + kVec * gl + kPairLanes * kVec * run);
  };
  for (int sweep = 0; sweep < max_inner_sweeps; ++sweep) {
    if (tid == 0) any_above = 0;
    __syncthreads();
    bool above = false;
    // The pair of round 0; each round moves both columns one place on the ring of nb2 - 1
    // (round_robin_pair without its divisions).
    const int ring = nb2 - 1;
    int i, j;
    round_robin_pair(nb2, 0, p, &i, &j);
    for (int round = 0; round < ring; ++round) {
      if (p < pairs) {
        TI x[kRows], y[kRows], u[kRows], v[kRows];
        TI aa = 0, bb = 0, ab = 0;
#pragma unroll
        for (int t = 0; t < kRuns; ++t) {
          const bool in = kVec * gl + kPairLanes * kVec * t < nb2;
          const Run zero{};
          const Run xr = in ? *run_at(r + i * ld, t) : zero;
          const Run yr = in ? *run_at(r + j * ld, t) : zero;
          const Run ur = in ? *run_at(q + i * ld, t) : zero;
          const Run vr = in ? *run_at(q + j * ld, t) : zero;
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            const int h = t * kVec + e;
            x[h] = xr.v[e];
            y[h] = yr.v[e];
            u[h] = ur.v[e];
            v[h] = vr.v[e];
            aa = fma(x[h], x[h], aa);
            bb = fma(y[h], y[h], bb);
            ab = fma(x[h], y[h], ab);
          }
        }
        // The group's sums; a butterfly gives every lane the same ones, so the same rotation.
#pragma unroll
        for (int o = kPairLanes / 2; o > 0; o >>= 1) {
          aa += __shfl_xor_sync(0xffffffffu, aa, o);
          bb += __shfl_xor_sync(0xffffffffu, bb, o);
          ab += __shfl_xor_sync(0xffffffffu, ab, o);
        }
        if (max_inner_sweeps > 1) {
          above |= pair_needs_rotation(aa, bb, ab, tol, negligible);
        }
        TI cm1, s;
        if (inner_rotation(aa, bb, ab, inner_tol, negligible, &cm1, &s)) {
#pragma unroll
          for (int t = 0; t < kRuns; ++t) {
            Run xr, yr, ur, vr;
#pragma unroll
            for (int e = 0; e < kVec; ++e) {
              const int h = t * kVec + e;
              apply_rotation_fused(cm1, s, &x[h], &y[h]);
              apply_rotation_fused(cm1, s, &u[h], &v[h]);
              xr.v[e] = x[h];
              yr.v[e] = y[h];
              ur.v[e] = u[h];
              vr.v[e] = v[h];
            }
            if (kVec * gl + kPairLanes * kVec * t < nb2) {
              *run_at(r + i * ld, t) = xr;
              *run_at(r + j * ld, t) = yr;
              *run_at(q + i * ld, t) = ur;
              *run_at(q + j * ld, t) = vr;
            }
          }
        }
      }
      i = i + 1 == ring ? 0 : i + 1;
      if (p != 0) j = j + 1 == ring ? 0 : j + 1;  // pair 0's j is the fixed column, ring
      __syncthreads();
    }
    if (max_inner_sweeps == 1) break;
    if (above) any_above = 1;
    __syncthreads();
    const bool again = any_above != 0;
    __syncthreads();  // every thread has read any_above before thread 0 clears it
    if (!again) break;
  }
  for (int e = tid; e < elems; e += threads) {
    qdst[e] = static_cast<T>(q[(e % nb2) + (e / nb2) * ld]);
  }
  raise_sweep_flags(sweep_flags, cosine);  // blockDim.x is a multiple of 32
}

/// Columns of a block pair that gram_warp_jacobi_kernel holds: one warp, a column a lane.
constexpr int kWarpPairColumns = 32;

/// 1 / sqrt(x) for a Cholesky pivot: fast_rsqrt in double where it is accurate.
__device__ inline double pivot_rsqrt(double x) {
  return x > 1e-30 && x < 1e30 ? fast_rsqrt(x) : 1.0 / sqrt(x);
}
__device__ inline float pivot_rsqrt(float x) {
  return rsqrtf(x);
}

/// Threads of gram_warp_jacobi_kernel: all of them form the pair's Gram matrix, one warp solves.
constexpr int kWarpGramThreads = 256;
/// Rows of [Wi Wj] that gram_warp_jacobi_kernel stages in shared memory at a time.
constexpr int kWarpGramChunk = 64;

/// [Wi Wj]^T [Wi Wj] of a block pair (rows x kWarpPairColumns at w, column-major, ld rows) into
/// `gram` (column-major, shared), by the kWarpGramThreads threads of the block: rows are staged
/// kWarpGramChunk at a time (the next chunk's loads in flight, in registers, while this one is
/// multiplied), four groups of 64 threads take a quarter of them each, a thread a 4 x 4 tile of G
/// in registers, and the groups' tiles are added in group order. Entry (i, j) and (j, i) add the
/// same products in the same order, so G comes out exactly symmetric. Ends with a barrier.
template <typename T>
__device__ inline void warp_pair_gram(const T* __restrict__ w, std::int64_t rows,
                                      T (&stage)[kWarpGramChunk][kWarpPairColumns + 1],
                                      T* __restrict__ gram) {
  constexpr int P = kWarpPairColumns;
  constexpr int kGroups = kWarpGramThreads / 64;
  constexpr int kGroupRows = kWarpGramChunk / kGroups;
  const int tid = static_cast<int>(threadIdx.x);
  const int group = tid / 64, ti = tid % 8, tj = (tid % 64) / 8;
  const int i0 = 4 * ti, j0 = 4 * tj;
  constexpr int kLoads = kWarpGramChunk * P / kWarpGramThreads;
  T next[kLoads];
  const auto load = [&](std::int64_t r0) {
#pragma unroll
    for (int h = 0; h < kLoads; ++h) {
      const int e = tid + h * kWarpGramThreads;
      const int r = e % kWarpGramChunk, c = e / kWarpGramChunk;
      next[h] = r0 + r < rows ? w[c * rows + r0 + r] : T(0);
    }
  };
  load(0);
  T acc[4][4] = {};
  for (std::int64_t r0 = 0; r0 < rows; r0 += kWarpGramChunk) {
#pragma unroll
    for (int h = 0; h < kLoads; ++h) {
      const int e = tid + h * kWarpGramThreads;
      stage[e % kWarpGramChunk][e / kWarpGramChunk] = next[h];
    }
    __syncthreads();
    if (r0 + kWarpGramChunk < rows) load(r0 + kWarpGramChunk);
#pragma unroll 4
    for (int h = 0; h < kGroupRows; ++h) {
      const int r = group * kGroupRows + h;
      T x[4], y[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) {
        x[a] = stage[r][i0 + a];
        y[a] = stage[r][j0 + a];
      }
#pragma unroll
      for (int a = 0; a < 4; ++a) {
#pragma unroll
        for (int b = 0; b < 4; ++b) acc[a][b] = fma(x[a], y[b], acc[a][b]);
      }
    }
    __syncthreads();
  }
  for (int g = 0; g < kGroups; ++g) {
    if (group == g) {
#pragma unroll
      for (int a = 0; a < 4; ++a) {
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          T& out = gram[(i0 + a) + (j0 + b) * P];
          out = g == 0 ? acc[a][b] : out + acc[a][b];
        }
      }
    }
    __syncthreads();
  }
}

/// For block pair blockIdx.x, the Gram product and the job of gram_cholesky_jacobi_kernel at
/// nb2 = kWarpPairColumns in one launch: where rows > 0, src is the round's W (the pair at
/// src + blockIdx.x nb2 rows) and the block forms G (warp_pair_gram; no GEMM launch and no round
/// trip through global memory); where rows is 0, src holds the round's G from the Gram GEMM in
/// `splits` partial products (load_split_gram; tall W, whose rows one SM would take too long to
/// sum). Then one warp solves G
/// in registers with no barrier:
/// lane l holds column l of G, then of its Cholesky factor R, and of Q, in TI (double, or float
/// for f32 input where the caller allows). Columns move between lanes by shuffles only, so a
/// round costs the shuffles of one column and its arithmetic, not a block-wide barrier and a
/// pass over shared memory. Q goes to q_all + blockIdx.x * nb2^2 (column-major).
///
/// The test on the pair set (jacobi_rotation's, at the outer `tol`, on G) is that of
/// gram_cholesky_jacobi_kernel, and so are the pivot floor and inner tolerance in TI's epsilon:
/// in float the floor (256 eps, about 3e-5 of the column's squared norm) drops a column within
/// about 5e-3 rad of the span of the ones before it, where double keeps it; such pairs are
/// left for later outer sweeps, and inputs that stall on them get the double form from outer
/// sweep 20 (the driver's escalation). The factorization is right-looking and fully unrolled,
/// so every register index is a constant: at step k, lane k's column comes over shuffles and
/// every lane l > k subtracts x_k x_k(l) / pivot_k from its column (rows below k; lane l's own
/// element k stands in for x_k(l) by symmetry); afterwards lane l's element k, scaled by
/// 1 / sqrt(pivot_k), is R(k, l). The sweeps are the round robin of warp_jacobi_sweeps on R with
/// Q = I to start, at the inner tolerance of gram_cholesky_jacobi_kernel, with the dot products
/// in four partial sums (a quarter of the dependent chain; both lanes of a pair add the same
/// terms in the same order, so they still compute the same rotation) and the rotation from
/// inner_rotation.
template <typename T, typename TI>
__global__ void __launch_bounds__(kWarpGramThreads)
    gram_warp_jacobi_kernel(const T* __restrict__ src, std::int64_t rows, int splits,
                            T* __restrict__ q_all, double outer_tol, int max_inner_sweeps,
                            int* __restrict__ sweep_flags) {
  constexpr int P = kWarpPairColumns;
  constexpr int kSums = 4;
  constexpr TI kInnerTol = 4 * SvdLimits<TI>::kEps;
  constexpr TI kPivotFloor = 256 * SvdLimits<TI>::kEps;
  constexpr unsigned kAll = 0xffffffffu;
  __shared__ T stage[kWarpGramChunk][P + 1];  // rows of [Wi Wj]; then Q's transpose
  __shared__ T gram[P * P];
  if (rows > 0) {
    warp_pair_gram(src + static_cast<std::int64_t>(blockIdx.x) * P * rows, rows, stage, gram);
  } else {
    load_split_gram<T, T, 4>(src, P, splits, gram, P);
    __syncthreads();
    // The GEMM's two triangles may differ by rounding: mirror its lower one.
    for (int e = static_cast<int>(threadIdx.x); e < P * P; e += kWarpGramThreads) {
      const int i = e % P, j = e / P;
      if (i < j) gram[e] = gram[j + i * P];
    }
    __syncthreads();
  }
  if (threadIdx.x >= P) return;
  const int l = static_cast<int>(threadIdx.x);
  T* qdst = q_all + static_cast<std::int64_t>(blockIdx.x) * P * P;
  const TI tol = static_cast<TI>(outer_tol);  // exact: callers pass a T
  const TI negligible = SvdLimits<T>::kNegligible;
  TI x[P];
  TI diag = 0;
#pragma unroll
  for (int k = 0; k < P; ++k) {
    x[k] = static_cast<TI>(gram[l + k * P]);  // G(l, k) = G(k, l)
    if (k == l) diag = x[k];
  }
  const TI root = sqrt(diag);
  // pair_cosine's value from reciprocals (a shuffle and two products a pair instead of a divide on
  // this latency-bound chain); 0 for a negligible column, as there.
  const TI inv_root = diag > negligible ? TI(1) / root : TI(0);
  bool needs = false;
  float cosine = 0.0f;  // the largest between two of the pair's columns, for raise_sweep_flags
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const TI diag_k = __shfl_sync(kAll, diag, k);
    const TI root_k = __shfl_sync(kAll, root, k);
    const TI inv_root_k = __shfl_sync(kAll, inv_root, k);
    if (k > l) {
      needs |= pair_needs_rotation_rooted(diag, diag_k, root, root_k, x[k], tol, negligible);
      cosine = fmaxf(cosine, static_cast<float>(fabs(x[k]) * (inv_root * inv_root_k)));
    }
  }
  TI qc[P];
#pragma unroll
  for (int k = 0; k < P; ++k) qc[k] = k == l ? TI(1) : TI(0);
  const bool any_needs = __any_sync(kAll, needs);
  if (any_needs) {
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const TI pivot = __shfl_sync(kAll, x[k], k);
      const TI diag_k = __shfl_sync(kAll, diag, k);
      const bool keep = pivot > diag_k * kPivotFloor && pivot > negligible;
      const TI root_inv = keep ? pivot_rsqrt(pivot) : TI(0);
      const TI multiplier = l > k ? x[k] * (root_inv * root_inv) : TI(0);
#pragma unroll
      for (int i = k + 1; i < P; ++i) {
        const TI xk_i = __shfl_sync(kAll, x[i], k);
        x[i] = fma(-xk_i, multiplier, x[i]);
      }
      x[k] = l >= k ? x[k] * root_inv : TI(0);  // R(k, l); zero below R's diagonal
    }
    const TI inner_tol = tol < kInnerTol ? tol : kInnerTol;
    bool rotated = true;
    for (int sweep = 0; sweep < max_inner_sweeps && rotated; ++sweep) {
      rotated = false;
      for (int r = 0; r < P - 1; ++r) {
        const int partner = round_robin_partner<P>(r, l);
        const bool first = l < partner;  // plays i of the pair (i, j), i < j
        TI y[P];
        TI aa[kSums] = {}, bb[kSums] = {}, ab[kSums] = {};
#pragma unroll
        for (int k = 0; k < P; ++k) {
          y[k] = __shfl_sync(kAll, x[k], partner);
          aa[k % kSums] = fma(x[k], x[k], aa[k % kSums]);
          bb[k % kSums] = fma(y[k], y[k], bb[k % kSums]);
          ab[k % kSums] = fma(x[k], y[k], ab[k % kSums]);
        }
        const TI own = (aa[0] + aa[1]) + (aa[2] + aa[3]);
        const TI other = (bb[0] + bb[1]) + (bb[2] + bb[3]);
        const TI gamma = (ab[0] + ab[1]) + (ab[2] + ab[3]);
        TI cm1, s;
        rotated |= inner_rotation(first ? own : other, first ? other : own, gamma, inner_tol,
                                  negligible, &cm1, &s);
        // i: x' = x + (cm1 x - s y); j: x' = x + (cm1 x + s y) (its partner is i).
        const TI sm = first ? -s : s;
#pragma unroll
        for (int k = 0; k < P; ++k) x[k] = rotated_column_fused(cm1, sm, x[k], y[k]);
#pragma unroll
        for (int k = 0; k < P; ++k) {
          const TI qy = __shfl_sync(kAll, qc[k], partner);
          qc[k] = rotated_column_fused(cm1, sm, qc[k], qy);
        }
      }
      rotated = __any_sync(kAll, rotated);
    }
  }
  // Q's transpose through the staging rows (free since warp_pair_gram's last barrier).
#pragma unroll
  for (int k = 0; k < P; ++k) stage[k][l] = static_cast<T>(qc[k]);  // Q(k, l)
  __syncwarp();
#pragma unroll
  for (int c = 0; c < P; ++c) qdst[l + c * P] = stage[l][c];  // Q(l, c), by rows
  if (any_needs) raise_sweep_flags(sweep_flags, cosine);
}

/// The blocked driver's convergence test on the whole of W at once: raises *flag when any pair
/// (i > j) of the n columns whose Gram matrix is g (n x n, column-major, ld n; the lower triangle
/// is read) fails pair_needs_rotation at `tol`.
template <typename T>
__global__ void gram_unconverged_kernel(const T* __restrict__ g, int n, T tol,
                                        int* __restrict__ flag) {
  const std::int64_t ld = n, total = ld * n;
  bool fails = false;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % ld, j = e / ld;
    if (i <= j) continue;
    fails |=
        pair_needs_rotation(g[i + i * ld], g[j + j * ld], g[e], tol, SvdLimits<T>::kNegligible);
  }
  if (__syncthreads_or(fails) && threadIdx.x == 0) atomicOr(flag, 1);
}

/// De Rijk ordering between sweeps: order[r] = the column of norm rank r (descending, ties by
/// index, NaN first) among the n values norm[0..n). Exact zeros (the padding columns, which no
/// rotation ever touches, and which come after every real column) keep their places.
template <typename T>
__global__ void sort_order_kernel(const T* __restrict__ norm, int n, int* __restrict__ order) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  // NaN ranks as +inf so that the ranks are a permutation whatever the input holds.
  const auto key = [](T v) { return isnan(v) ? T(INFINITY) : v; };
  const T x = key(norm[j]);
  int rank = 0;
  for (int i = 0; i < n; ++i) {
    const T y = key(norm[i]);
    rank += (y > x || (y == x && i < j)) ? 1 : 0;
  }
  order[rank] = j;
}

/// dst[:, r] = src[:, order[r]] for r < cols (rows x cols, both with leading dimension ld).
template <typename T>
__global__ void gather_columns_kernel(const T* __restrict__ src, T* __restrict__ dst,
                                      std::int64_t rows, std::int64_t ld,
                                      const int* __restrict__ order) {
  const std::int64_t r = blockIdx.y;
  const T* s = src + static_cast<std::int64_t>(order[r]) * ld;
  T* d = dst + r * ld;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < rows;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    d[i] = s[i];
  }
}

// ------------------------------------------------------------------------------------------
// Finishing: norms, ordering, outputs, completion of the basis.

/// sigma[b * n + j] = |W[:, j]| for j < n (one warp per column).
template <typename T>
__global__ void column_norms_kernel(const T* __restrict__ w, std::int64_t m, std::int64_t ldw,
                                    std::int64_t w_batch_stride, int n, std::int64_t total_cols,
                                    T* __restrict__ sigma) {
  const std::int64_t col = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (col >= total_cols) return;
  const std::int64_t b = col / n;
  const std::int64_t j = col % n;
  const T* c = w + b * w_batch_stride + j * ldw;
  T acc = 0;
  for (std::int64_t i = lane; i < m; i += 32) acc += c[i] * c[i];
  acc = warp_sum(acc);
  if (lane == 0) sigma[col] = sqrt(acc);
}

/// Per matrix: order[b * n + k] = column holding the k-th largest value; s[b * n + k] the value
/// with the input's scale undone; nonzero[b] = how many values are above the zero threshold.
template <typename T>
__global__ void rank_kernel(const T* __restrict__ sigma, int n,
                            const typename BitsOf<T>::Type* __restrict__ max_bits,
                            int* __restrict__ order, T* __restrict__ s_out,
                            int* __restrict__ nonzero) {
  const std::int64_t b = blockIdx.x;
  const T* sg = sigma + b * n;
  __shared__ int count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  const T unscale = T(1) / scale_from_bits<T>(max_bits[b]);
  int local = 0;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const T x = sg[j];
    int rank = 0;
    for (int i = 0; i < n; ++i) {
      const T y = sg[i];
      rank += (y > x || (y == x && i < j)) ? 1 : 0;
    }
    order[b * n + rank] = j;
    s_out[b * n + rank] = x * unscale;
    local += x >= SvdLimits<T>::kZero ? 1 : 0;
  }
  atomicAdd(&count, local);
  __syncthreads();
  if (threadIdx.x == 0) nonzero[b] = count;
}

/// dst(i, k) = src[i + order[k] * lds] (/ sigma[order[k]] when divide) for i < rows and
/// k < limit[b] (or k < cols when limit is null), dst(i, k) at dst[i * di + k * dk].
/// One 32 x 32 tile per block through shared memory: reads are along i (contiguous in src);
/// writes are along whichever of i, k is contiguous in dst (`dst_k_contig`).
template <typename T>
__global__ void scatter_columns_kernel(const T* __restrict__ src, std::int64_t lds,
                                       std::int64_t src_batch_stride, const int* __restrict__ order,
                                       const T* __restrict__ sigma, int order_stride, bool divide,
                                       const int* __restrict__ limit, int rows, int cols,
                                       T* __restrict__ dst, std::int64_t di, std::int64_t dk,
                                       std::int64_t dst_batch_stride, bool dst_k_contig,
                                       int tiles_i, int tiles_k) {
  __shared__ T tile[32][33];
  const auto [b, i0, k0] = block_tile(tiles_i, tiles_k);
  const int kmax = limit != nullptr ? limit[b] : cols;
  if (k0 >= kmax) return;
  const T* s = src + b * src_batch_stride;
  const int* ord = order + b * order_stride;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int k = k0 + y;
    const int i = i0 + threadIdx.x;
    if (k < kmax && i < rows) {
      const int j = ord[k];
      T x = s[i + static_cast<std::int64_t>(j) * lds];
      if (divide) x /= sigma[b * order_stride + j];
      tile[y][threadIdx.x] = x;
    }
  }
  __syncthreads();
  T* d = dst + b * dst_batch_stride;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int il = dst_k_contig ? y : threadIdx.x;
    const int kl = dst_k_contig ? threadIdx.x : y;
    const int i = i0 + il;
    const int k = k0 + kl;
    if (k < kmax && i < rows) d[i * di + k * dk] = tile[kl][il];
  }
}

template <typename T>
__device__ inline T block_sum(T v, T* red) {
  v = warp_sum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  T total = 0;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) total += red[w];
  return total;
}

/// Completes L (rows x cols, L(i, k) at l[i * di + k * dk]), whose first nonzero[b] columns are
/// orthonormal, with orthonormal columns k in [nonzero[b], cols): each new column is the unit
/// vector e_c with the largest remaining projector diagonal 1 - sum_k L(c, k)^2, orthogonalised
/// twice against the columns before it (classical Gram-Schmidt with reorthogonalisation).
/// scratch holds 3 * rows values per matrix: the diagonal, the vector, the coefficients.
template <typename T>
__global__ void complete_basis_kernel(T* __restrict__ l, std::int64_t di, std::int64_t dk,
                                      std::int64_t batch_stride, int rows, int cols,
                                      const int* __restrict__ nonzero, T* __restrict__ scratch,
                                      std::int64_t first_batch) {
  const std::int64_t b = blockIdx.x;
  const int r = nonzero[first_batch + b];
  if (r >= cols) return;
  __shared__ T red[32];
  __shared__ int best_idx[32];
  __shared__ T best_val[32];
  T* lb = l + (first_batch + b) * batch_stride;
  T* diag = scratch + b * 3 * static_cast<std::int64_t>(rows);
  T* x = diag + rows;
  T* h = x + rows;
  for (int i = threadIdx.x; i < rows; i += blockDim.x) {
    T acc = 0;
    for (int k = 0; k < r; ++k) {
      const T v = lb[i * di + k * dk];
      acc += v * v;
    }
    diag[i] = T(1) - acc;
  }
  __syncthreads();
  for (int k = r; k < cols; ++k) {
    // Pivot: the largest diagonal of the projector onto the complement (lowest index on ties).
    T bv = -T(1);
    int bi = 0;
    for (int i = threadIdx.x; i < rows; i += blockDim.x) {
      if (diag[i] > bv) {
        bv = diag[i];
        bi = i;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const T ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (ov > bv || (ov == bv && oi < bi)) {
        bv = ov;
        bi = oi;
      }
    }
    if ((threadIdx.x & 31) == 0) {
      best_val[threadIdx.x >> 5] = bv;
      best_idx[threadIdx.x >> 5] = bi;
    }
    __syncthreads();
    int c = best_idx[0];
    T cv = best_val[0];
    for (unsigned wi = 1; wi < blockDim.x / 32; ++wi) {
      if (best_val[wi] > cv || (best_val[wi] == cv && best_idx[wi] < c)) {
        cv = best_val[wi];
        c = best_idx[wi];
      }
    }
    for (int i = threadIdx.x; i < rows; i += blockDim.x) x[i] = i == c ? T(1) : T(0);
    __syncthreads();
    for (int pass = 0; pass < 2; ++pass) {
      for (int j = threadIdx.x; j < k; j += blockDim.x) {
        T acc = 0;
        for (int i = 0; i < rows; ++i) acc += lb[i * di + j * dk] * x[i];
        h[j] = acc;
      }
      __syncthreads();
      for (int i = threadIdx.x; i < rows; i += blockDim.x) {
        T acc = x[i];
        for (int j = 0; j < k; ++j) acc -= lb[i * di + j * dk] * h[j];
        x[i] = acc;
      }
      __syncthreads();
    }
    T part = 0;
    for (int i = threadIdx.x; i < rows; i += blockDim.x) part += x[i] * x[i];
    const T nrm = sqrt(block_sum(part, red));
    const T inv = nrm > T(0) ? T(1) / nrm : T(0);
    for (int i = threadIdx.x; i < rows; i += blockDim.x) {
      const T v = x[i] * inv;
      lb[i * di + k * dk] = v;
      diag[i] -= v * v;
    }
    __syncthreads();
  }
}

}  // namespace gcompute::kernels::cuda::detail
