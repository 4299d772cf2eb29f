// SPDX-License-Identifier: Apache-2.0
// Device code of the blocked Floyd-Warshall (cuda::apsp). Included by apsp.cu only.
//
// The matrix is processed in rounds of kTile = 128 pivot vertices (one k-block per round):
//   phase 1: the pivot tile is closed by a plain Floyd-Warshall in one block (registers plus a
//            row/column broadcast through shared memory, one barrier per k);
//   phase 2: the pivot row and column panels become P (x) R and C (x) P, min-plus products with
//            the closed pivot P (its closure is itself, diagonal <= 0), so they run as the same
//            register-tiled product as phase 3, with no barrier per k;
//   phase 3: every other tile C = min(C, A (x) B) with A from the column panel and B from the
//            row panel: register tiles of 8x8 (4x8 with next-hop) outputs per thread, operands
//            staged through shared memory by cp.async, double buffered.
// Two-block rounds (distances only): a round takes the pivot blocks p and q = p+1 together. Their
// band (rows and columns p and q) is closed first, exactly as two plain rounds would leave it:
// phases 1 and 2 of p, round p's update of row and column q, phases 1 and 2 of q, then round
// q's update of row and column p (tile (p, p) included). Every other tile then takes both
// k-blocks in one 256-deep product, C = min(C, A[:, p..q] (x) B[p..q, :]), which loads and
// stores each C tile once per two pivot blocks instead of once per block. Using the band's
// final values there (already updated by round q) is safe: every value is the length of a walk,
// and the terms of the two plain rounds are all still in the minimum.
// Look-ahead: the next round's band tiles go first, on the caller's higher-priority stream when it
// has one, and the next band is closed there while the rest of this round's tiles run on the
// lane's stream, which fills what would otherwise be serial phase-1 and half-empty phase-2 waves.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gcompute::kernels::cuda::detail {

constexpr int kTile = 128;  ///< pivot block = output tile edge
constexpr int kBk = 32;     ///< k-depth of one shared-memory stage
constexpr int kApad = 4;    ///< row padding (in elements) of the A stage; keeps 16-byte rows
constexpr int kBpad = 4;
constexpr int kAk = 2;  ///< k-depth of the A fragment a thread holds (LDS.64 per row)

/// Device-side flags, at the start of the workspace.
struct ApspFlags {
  int negative;      ///< set by phase 1 when a pivot diagonal goes negative; later rounds skip
  int cycle_vertex;  ///< smallest such vertex (atomicMin)
  int bad_weight;    ///< input validation: NaN/-inf (f32) or |w| > kI32MaxAbsWeight (i32)
  int max_pos;       ///< largest positive finite weight (i32; f32 when integral below 2^24)
  int max_neg;       ///< largest |negative weight| (i32)
  /// Set by the scan when next hops may not be derived from the distances (a finite weight
  /// between distinct vertices <= 0, a negative self-loop, or an f32 weight that is not an
  /// integer below 2^24): see apsp_next_hop_kernels.cuh.
  int pass_unsafe;
  int pass_missed;  ///< set by that pass when a row or a pair has no candidate (then fused)
  int pad;
};

// ---------------------------------------------------------------------------------------------
// Semirings. relax(c, a, b) = min(c, a (+) b); sum(a, b) = a (+) b; relax_safe is phase 1's
// version, which may not wrap even when a negative cycle drives values down (it runs in the round
// that detects the cycle).

/// f32 with +inf as "no edge": FADD + FMNMX per relaxation.
struct F32Ops {
  using T = float;
  __device__ static T inf() { return __int_as_float(0x7f800000); }
  __device__ __forceinline__ static T relax(T c, T a, T b) { return fminf(c, a + b); }
  __device__ __forceinline__ static T relax_safe(T c, T a, T b) { return fminf(c, a + b); }
  __device__ __forceinline__ static T sum(T a, T b) { return a + b; }
};

/// i32 where the caller proved that every finite distance and every path sum stays inside
/// [-2^30, 2^30 - 1]: "no edge" is the sentinel S = 2^30 - 1, so a + b of two values <= S cannot
/// overflow and min(a + b, c) is one Hopper DPX instruction (VIADDMNMX).
struct I32FastOps {
  using T = int;
  static constexpr int kInf = (1 << 30) - 1;
  static constexpr int kFloor = -(1 << 30);
  __device__ static T inf() { return kInf; }
  __device__ __forceinline__ static T relax(T c, T a, T b) { return __viaddmin_s32(a, b, c); }
  __device__ __forceinline__ static T relax_safe(T c, T a, T b) {
    return max(__viaddmin_s32(a, b, c), kFloor);
  }
  __device__ __forceinline__ static T sum(T a, T b) { return a + b; }
};

/// i32 with kI32NoEdge (INT32_MAX) kept as "no edge" and sums saturating at it: the exact but
/// slower path for weights too large for I32FastOps.
struct I32SatOps {
  using T = int;
  static constexpr int kInf = 0x7fffffff;
  static constexpr long long kLow = -0x7fffffffLL - 1;
  __device__ static T inf() { return kInf; }
  __device__ __forceinline__ static T sum(T a, T b) {
    if (a == kInf || b == kInf) return kInf;
    long long s = static_cast<long long>(a) + b;
    s = s > kInf ? kInf : s;
    s = s < kLow ? kLow : s;
    return static_cast<T>(s);
  }
  __device__ __forceinline__ static T relax(T c, T a, T b) { return min(c, sum(a, b)); }
  __device__ __forceinline__ static T relax_safe(T c, T a, T b) { return min(c, sum(a, b)); }
};

/// Next-hop variant: (distance, hops) compared lexicographically. The hop count makes every
/// cycle strictly positive, so following next-hops can never loop, even through zero-weight
/// cycles: a tie in distance keeps the path with fewer edges. s receives a (+) b.
template <class Ops>
__device__ __forceinline__ bool better_lex(typename Ops::T a, typename Ops::T b, typename Ops::T c,
                                           int hops, int hc, typename Ops::T& s) {
  s = Ops::sum(a, b);
  return s < c || (s == c && c < Ops::inf() && hops < hc);
}

// ---------------------------------------------------------------------------------------------
// Input scan: validation and the weight range that decides between I32FastOps and I32SatOps.

__device__ inline void warp_or_max(int& v, bool is_max) {
  for (int o = 16; o > 0; o >>= 1) {
    const int u = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? max(v, u) : (v | u);
  }
}

__global__ void scan_f32_kernel(const float* __restrict__ w, long long n, ApspFlags* flags) {
  int bad = 0, unsafe = 0, pos = 0;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < n * n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float v = w[e];
    bad |= (v != v) || (v == -__int_as_float(0x7f800000));
    if (!(v < __int_as_float(0x7f800000))) continue;  // no edge (or NaN, refused above)
    const bool diagonal = e % (n + 1) == 0;
    unsafe |= (diagonal ? v < 0.0f : !(v > 0.0f)) || v != rintf(v) || !(v < 16777216.0f);
    if (v > 0.0f && v < 16777216.0f) pos = max(pos, static_cast<int>(v));
  }
  warp_or_max(bad, false);
  warp_or_max(unsafe, false);
  warp_or_max(pos, true);
  if ((threadIdx.x & 31) == 0) {
    if (bad) atomicOr(&flags->bad_weight, 1);
    if (unsafe) atomicOr(&flags->pass_unsafe, 1);
    if (pos) atomicMax(&flags->max_pos, pos);
  }
}

__global__ void scan_i32_kernel(const int* __restrict__ w, long long n, ApspFlags* flags) {
  int bad = 0, pos = 0, neg = 0, unsafe = 0;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < n * n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int v = w[e];
    if (v == 0x7fffffff) continue;
    bad |= v > (1 << 30) - 1 || v < -((1 << 30) - 1);
    unsafe |= e % (n + 1) == 0 ? v < 0 : v <= 0;
    pos = max(pos, v);
    neg = max(neg, v < 0 ? -max(v, -((1 << 30) - 1)) : 0);
  }
  warp_or_max(bad, false);
  warp_or_max(pos, true);
  warp_or_max(neg, true);
  warp_or_max(unsafe, false);
  if ((threadIdx.x & 31) == 0) {
    if (bad) atomicOr(&flags->bad_weight, 1);
    if (pos) atomicMax(&flags->max_pos, pos);
    if (neg) atomicMax(&flags->max_neg, neg);
    if (unsafe) atomicOr(&flags->pass_unsafe, 1);
  }
}

/// W (n x n, row-major) -> D (npad x npad) in the internal encoding, D[i][i] = min(0, W[i][i]),
/// N[i][j] = j for an edge, i on the diagonal, -1 otherwise; padding is "no edge".
/// W and D may alias when npad == n (each element is read and written by the same thread).
template <class Ops>
__global__ void init_kernel(const typename Ops::T* w, typename Ops::T* d, int* nxt, int* hop,
                            long long n, long long npad, typename Ops::T input_inf) {
  using T = typename Ops::T;
  const long long count = npad * npad;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = e / npad, j = e - i * npad;
    T v = Ops::inf();
    int h = -1;
    if (i < n && j < n) {
      const T x = w[i * n + j];
      const bool edge = !(x == input_inf);
      if (edge) {
        v = x;
        h = static_cast<int>(j);
      }
      if (i == j) {
        v = edge && x < T(0) ? x : T(0);
        h = static_cast<int>(i);
      }
    }
    d[e] = v;
    if (nxt != nullptr) {
      nxt[e] = h;
      hop[e] = i == j ? 0 : 1;
    }
  }
}

/// D (npad x npad, internal) -> dist (n x n): crop, and map values >= unreachable to `out_inf`
/// (next-hop -1 there). In place when npad == n.
template <class T>
__global__ void finish_kernel(const T* d, const int* nxt_in, T* dist, int* nxt_out, long long n,
                              long long npad, T unreachable, T out_inf) {
  const long long count = n * n;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = e / n, j = e - i * n;
    const long long s = i * npad + j;
    const T v = d[s];
    const bool none = !(v < unreachable);
    dist[e] = none ? out_inf : v;
    if (nxt_out != nullptr) nxt_out[e] = none ? -1 : nxt_in[s];
  }
}

// ---------------------------------------------------------------------------------------------
// Phase 1: close the pivot tile. 1024 threads, each owning a 4x4 block of it in registers.

template <class Ops, bool kNext>
__global__ void __launch_bounds__(1024, 1)
    phase1_kernel(typename Ops::T* d, int* nxt, int* hop, long long ld, int kb, ApspFlags* flags) {
  using T = typename Ops::T;
  if (flags->negative) return;
  __shared__ __align__(16) T row_k[2][kTile];
  __shared__ __align__(16) T col_k[2][kTile];
  __shared__ __align__(16) int ncol_k[2][kTile];
  __shared__ __align__(16) int hcol_k[2][kTile];
  __shared__ __align__(16) int hrow_k[2][kTile];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const long long base =
      static_cast<long long>(kb) * kTile * ld + static_cast<long long>(kb) * kTile;
  T v[4][4];
  int h[4][4], g[4][4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const long long off = base + (ty * 4 + q) * ld + tx * 4;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[q][j] = d[off + j];
      if constexpr (kNext) {
        h[q][j] = nxt[off + j];
        g[q][j] = hop[off + j];
      }
    }
  }
  for (int k = 0; k < kTile; ++k) {
    const int buf = k & 1, kq = k & 3;
    if (ty == (k >> 2)) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (q == kq) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            row_k[buf][tx * 4 + j] = v[q][j];
            if constexpr (kNext) hrow_k[buf][tx * 4 + j] = g[q][j];
          }
        }
      }
    }
    if (tx == (k >> 2)) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (j == kq) {
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            col_k[buf][ty * 4 + q] = v[q][j];
            if constexpr (kNext) {
              ncol_k[buf][ty * 4 + q] = h[q][j];
              hcol_k[buf][ty * 4 + q] = g[q][j];
            }
          }
        }
      }
    }
    __syncthreads();
    T a[4], b[4];
    int na[4], ha[4], hb[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      a[q] = col_k[buf][ty * 4 + q];
      b[q] = row_k[buf][tx * 4 + q];
      if constexpr (kNext) {
        na[q] = ncol_k[buf][ty * 4 + q];
        ha[q] = hcol_k[buf][ty * 4 + q];
        hb[q] = hrow_k[buf][tx * 4 + q];
      }
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (kNext) {
          T s;
          if (better_lex<Ops>(a[q], b[j], v[q][j], ha[q] + hb[j], g[q][j], s)) {
            v[q][j] = Ops::relax_safe(v[q][j], a[q], b[j]);
            h[q][j] = na[q];
            g[q][j] = ha[q] + hb[j];
          }
        } else {
          v[q][j] = Ops::relax_safe(v[q][j], a[q], b[j]);
        }
      }
    }
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const long long off = base + (ty * 4 + q) * ld + tx * 4;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      d[off + j] = v[q][j];
      if constexpr (kNext) {
        nxt[off + j] = h[q][j];
        hop[off + j] = g[q][j];
      }
    }
  }
  if (tx == ty) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if (v[q][q] < T(0)) {
        atomicExch(&flags->negative, 1);
        atomicMin(&flags->cycle_vertex, kb * kTile + ty * 4 + q);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Phases 2 and 3: C = min(C, A (x) B) on 128x128 tiles with a 128- or 256-deep k-range (one or
// two adjacent pivot blocks, so A and B are contiguous column and row bands).
// Thread grid 16 (x) by kTy (y); each thread owns kRm rows (ty*kRm + q) and 8 columns
// (tx*4 + 0..3 and 64 + tx*4 + 0..3, so that a warp's B reads are two contiguous 256-byte rows).

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <class T>
__device__ __forceinline__ void load4(const T* p, T* out) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  out[0] = __builtin_bit_cast(T, u.x);
  out[1] = __builtin_bit_cast(T, u.y);
  out[2] = __builtin_bit_cast(T, u.z);
  out[3] = __builtin_bit_cast(T, u.w);
}
template <class T>
__device__ __forceinline__ void load2(const T* p, T* out) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  out[0] = __builtin_bit_cast(T, u.x);
  out[1] = __builtin_bit_cast(T, u.y);
}
template <class T>
__device__ __forceinline__ void store4(T* p, const T* in) {
  uint4 u;
  u.x = __builtin_bit_cast(unsigned, in[0]);
  u.y = __builtin_bit_cast(unsigned, in[1]);
  u.z = __builtin_bit_cast(unsigned, in[2]);
  u.w = __builtin_bit_cast(unsigned, in[3]);
  *reinterpret_cast<uint4*>(p) = u;
}

template <class T, bool kNext>
struct StageLayout {
  static constexpr int kA = kTile * (kBk + kApad);  // A[i][k]
  static constexpr int kB = kBk * (kTile + kBpad);  // B[k][j]
  static constexpr int kNa = kNext ? kA : 0;        // next-hop of A, int
  static constexpr int kHa = kNext ? kA : 0;        // hop counts of A and B, int
  static constexpr int kHb = kNext ? kB : 0;
  // Region offsets inside a stage, used by both the cp.async writer and the readers so that the
  // two cannot disagree (a hand-summed offset for Hb once wrote past the end of stage 1).
  static constexpr int kOffB = kA;
  static constexpr int kOffNa = kOffB + kB;
  static constexpr int kOffHa = kOffNa + kNa;
  static constexpr int kOffHb = kOffHa + kHa;
  static constexpr int kStageElems = kOffHb + kHb;
  static constexpr int kBytes = 2 * kStageElems * 4;
  static_assert(kBytes <= 227 * 1024, "two stages must fit the opt-in shared memory of sm_90");
};

template <int kTy, int kRm>
constexpr int minblocks() {
  return kTy * kRm == kTile && kRm == 8 ? 2 : 1;
}

/// Which tiles a min-plus launch updates. The k-range is pivot blocks [kb, kb + depth); `band` is
/// the number of pivot blocks of the next round, [kb + depth, kb + depth + band).
enum class MinplusPart : int {
  kPanels = 2,  ///< depth 1. x < nb-1: row panel tile (kb, j); otherwise column panel tile (i, kb)
  kNextBand = 3,  ///< the next round's band: its rows (columns outside the k-range), then its
                  ///< columns (rows outside the k-range and the band); band * (2 nb - 2 depth -
                  ///< band) tiles
  kRest = 4,      ///< (x, y) over the (nb - depth - band)^2 tiles off the k-range and the band
  kPrevBand = 5,  ///< depth 1, kb = q: round q's update of row p = q-1 (without column q) and
                  ///< column p (without rows p and q); 2 nb - 3 tiles
};

/// c-th index of [0, nb) skipping the `width` indices from `from` on.
__device__ __forceinline__ int skip_range(int c, int from, int width) {
  return c + (c >= from ? width : 0);
}

/// The tile (ti, tj) that block (x, y) of a `part` launch updates.
__device__ __forceinline__ void minplus_tile(MinplusPart part, int kb, int depth, int band, int nb,
                                             int x, int y, int& ti, int& tj) {
  switch (part) {
    case MinplusPart::kPanels:
      if (x < nb - 1) {
        ti = kb;
        tj = skip_range(x, kb, 1);
      } else {
        tj = kb;
        ti = skip_range(x - (nb - 1), kb, 1);
      }
      return;
    case MinplusPart::kNextBand: {
      const int next = kb + depth;
      const int row_tiles = band * (nb - depth);
      if (x < row_tiles) {
        ti = next + x / (nb - depth);
        tj = skip_range(x % (nb - depth), kb, depth);
      } else {
        const int c = x - row_tiles, per = nb - depth - band;
        tj = next + c / per;
        ti = skip_range(c % per, kb, depth + band);
      }
      return;
    }
    case MinplusPart::kRest:
      tj = skip_range(x, kb, depth + band);
      ti = skip_range(y, kb, depth + band);
      return;
    case MinplusPart::kPrevBand:
      if (x < nb - 1) {  // row kb-1, tile (kb-1, kb-1) included
        ti = kb - 1;
        tj = skip_range(x, kb, 1);
      } else {
        tj = kb - 1;
        ti = skip_range(x - (nb - 1), kb - 1, 2);
      }
      return;
  }
}

template <class Ops, int kTy, int kRm, bool kNext>
__global__ void __launch_bounds__(16 * kTy, (minblocks<kTy, kRm>()))
    minplus_kernel(typename Ops::T* __restrict__ d, int* __restrict__ nxt, int* __restrict__ hop,
                   int ld, int kb, int depth, int band, int nb, MinplusPart part,
                   const ApspFlags* __restrict__ flags) {
  using T = typename Ops::T;
  static_assert(kTy * kRm == kTile, "one block covers a 128-row tile");
  static_assert(sizeof(T) == 4, "4-byte elements");
  using L = StageLayout<T, kNext>;
  constexpr int kThreads = 16 * kTy;
  if (flags->negative) return;

  int ti = 0, tj = 0;
  minplus_tile(part, kb, depth, band, nb, static_cast<int>(blockIdx.x),
               static_cast<int>(blockIdx.y), ti, tj);
  const long long r0 = static_cast<long long>(ti) * kTile, c0 = static_cast<long long>(tj) * kTile,
                  k0 = static_cast<long long>(kb) * kTile;
  const T* a_g = d + r0 * ld + k0;
  const T* b_g = d + k0 * ld + c0;
  const int* na_g = kNext ? nxt + r0 * ld + k0 : nullptr;
  const int* ha_g = kNext ? hop + r0 * ld + k0 : nullptr;
  const int* hb_g = kNext ? hop + k0 * ld + c0 : nullptr;
  // Offsets inside a 128-row band stay below 2^31 (ld < 2^24 is checked by the host).

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);

  // Each thread copies the same (row, 16-byte column) pieces of every stage, kRowsA / kRowsB
  // rows apart: one global and one shared base pointer per operand, advanced by constants.
  constexpr int kPiecesA = kBk / 4, kPiecesB = kTile / 4;
  constexpr int kRowsA = kThreads / kPiecesA, kRowsB = kThreads / kPiecesB;
  static_assert(kTile % kRowsA == 0 && kBk % kRowsB == 0, "whole rows per pass");
  const int tid = threadIdx.x;
  const T* a_src = a_g + (tid / kPiecesA) * ld + (tid % kPiecesA) * 4;
  const int* na_src = kNext ? na_g + (tid / kPiecesA) * ld + (tid % kPiecesA) * 4 : nullptr;
  const int* ha_src = kNext ? ha_g + (tid / kPiecesA) * ld + (tid % kPiecesA) * 4 : nullptr;
  const int* hb_src = kNext ? hb_g + (tid / kPiecesB) * ld + (tid % kPiecesB) * 4 : nullptr;
  const T* b_src = b_g + (tid / kPiecesB) * ld + (tid % kPiecesB) * 4;
  const int a_dst = (tid / kPiecesA) * (kBk + kApad) + (tid % kPiecesA) * 4;
  const int b_dst = (tid / kPiecesB) * (kTile + kBpad) + (tid % kPiecesB) * 4;
  auto load_stage = [&](int stage, int kc) {
    T* st = smem + stage * L::kStageElems;
#pragma unroll 1
    for (int i = 0; i < kTile / kRowsA; ++i) {
      cp_async16(st + a_dst + i * kRowsA * (kBk + kApad), a_src + i * kRowsA * ld + kc);
      if constexpr (kNext) {
        cp_async16(st + L::kOffNa + a_dst + i * kRowsA * (kBk + kApad),
                   na_src + i * kRowsA * ld + kc);
        cp_async16(st + L::kOffHa + a_dst + i * kRowsA * (kBk + kApad),
                   ha_src + i * kRowsA * ld + kc);
      }
    }
#pragma unroll 1
    for (int i = 0; i < kBk / kRowsB; ++i) {
      cp_async16(st + L::kOffB + b_dst + i * kRowsB * (kTile + kBpad),
                 b_src + (kc + i * kRowsB) * ld);
      if constexpr (kNext) {
        cp_async16(st + L::kOffHb + b_dst + i * kRowsB * (kTile + kBpad),
                   hb_src + (kc + i * kRowsB) * ld);
      }
    }
    cp_async_commit();
  };

  load_stage(0, 0);

  const int tx = tid & 15, ty = tid >> 4;
  T c[kRm][8];
  int h[kNext ? kRm : 1][8], g[kNext ? kRm : 1][8];
  T* c_g = d + (r0 + ty * kRm) * ld + c0 + tx * 4;
  int* h_g = kNext ? nxt + (r0 + ty * kRm) * ld + c0 + tx * 4 : nullptr;
  int* g_g = kNext ? hop + (r0 + ty * kRm) * ld + c0 + tx * 4 : nullptr;
#pragma unroll
  for (int q = 0; q < kRm; ++q) {
    load4(c_g + q * ld, &c[q][0]);
    load4(c_g + q * ld + 64, &c[q][4]);
    if constexpr (kNext) {
      load4(h_g + q * ld, &h[q][0]);
      load4(h_g + q * ld + 64, &h[q][4]);
      load4(g_g + q * ld, &g[q][0]);
      load4(g_g + q * ld + 64, &g[q][4]);
    }
  }

  const int chunks = depth * (kTile / kBk);  // A and B span `depth` adjacent pivot blocks
#pragma unroll 1
  for (int ch = 0; ch < chunks; ++ch) {
    // One barrier per stage: it publishes stage ch and also tells every thread that all reads of
    // stage ch-1 are done, so the next stage may go into that buffer while stage ch is computed.
    cp_async_wait<0>();
    __syncthreads();
    if (ch + 1 < chunks) load_stage((ch + 1) & 1, (ch + 1) * kBk);
    const T* as = smem + (ch & 1) * L::kStageElems;
    const T* bs = as + L::kOffB;
    const int* nas = reinterpret_cast<const int*>(as + L::kOffNa);
    const int* has = reinterpret_cast<const int*>(as + L::kOffHa);
    const int* hbs = reinterpret_cast<const int*>(as + L::kOffHb);
    if constexpr (kNext) {
      // 3 x 32 accumulators (distance, next-hop, hop count) live across the whole loop, under
      // the 128-register cap of a 512-thread block. Fully unrolled over k, ptxas hoisted operand
      // loads until it spilled ~5 KB per thread (measured 9x slower on an H200). One k per
      // iteration and half a row of B at a time (4 distances + 4 hop counts) leaves ~80 bytes.
#pragma unroll 1
      for (int k = 0; k < kBk; ++k) {
        T a[kRm];
        int na[kRm], ha[kRm];
#pragma unroll
        for (int q = 0; q < kRm; ++q) {
          const int off = (ty * kRm + q) * (kBk + kApad) + k;
          a[q] = as[off];
          na[q] = nas[off];
          ha[q] = has[off];
        }
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int boff = k * (kTile + kBpad) + half * 64 + tx * 4;
          T b[4];
          int hb[4];
          load4(bs + boff, b);
          load4(hbs + boff, hb);
#pragma unroll
          for (int q = 0; q < kRm; ++q) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const int jj = half * 4 + j;
              T s;
              const int hs = ha[q] + hb[j];
              if (better_lex<Ops>(a[q], b[j], c[q][jj], hs, g[q][jj], s)) {
                c[q][jj] = s;
                h[q][jj] = na[q];
                g[q][jj] = hs;
              }
            }
          }
        }
      }
    } else {
#pragma unroll
      for (int k4 = 0; k4 < kBk; k4 += kAk) {
        T a[kRm][kAk];
#pragma unroll
        for (int q = 0; q < kRm; ++q) load2(as + (ty * kRm + q) * (kBk + kApad) + k4, &a[q][0]);
#pragma unroll
        for (int kk = 0; kk < kAk; ++kk) {
          const T* brow = bs + (k4 + kk) * (kTile + kBpad);
          T b[8];
          load4(brow + tx * 4, &b[0]);
          load4(brow + 64 + tx * 4, &b[4]);
#pragma unroll
          for (int q = 0; q < kRm; ++q) {
#pragma unroll
            for (int j = 0; j < 8; ++j) c[q][j] = Ops::relax(c[q][j], a[q][kk], b[j]);
          }
        }
      }
    }
  }

#pragma unroll
  for (int q = 0; q < kRm; ++q) {
    store4(c_g + q * ld, &c[q][0]);
    store4(c_g + q * ld + 64, &c[q][4]);
    if constexpr (kNext) {
      store4(h_g + q * ld, &h[q][0]);
      store4(h_g + q * ld + 64, &h[q][4]);
      store4(g_g + q * ld, &g[q][0]);
      store4(g_g + q * ld + 64, &g[q][4]);
    }
  }
}

}  // namespace gcompute::kernels::cuda::detail
