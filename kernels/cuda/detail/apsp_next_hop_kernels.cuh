// SPDX-License-Identifier: Apache-2.0
// Next hops from exact distances (cuda::apsp with next_hop, where the scan allows it): after the
// distance-only Floyd-Warshall, N[i][j] is j when the edge i -> j alone is a shortest path, else
// the first out-neighbour k of i in ascending (W[i][k], k) order with W[i][k] + D[k][j] ==
// D[i][j]. Included by apsp.cu only.
//
// Why this is right only under the scan's conditions (ApspFlags::pass_unsafe clear, sums exact):
// - every sum is exact (integers; f32 ones below 2^24 with max|w| (n - 1) < 2^24), so the
//   distances are the true ones and the equality test finds exactly the tight edges;
// - every edge between distinct vertices weighs > 0, so a tight k has D[k][j] < D[i][j]: the
//   chain of next hops towards j strictly descends and cannot loop (with zero-weight cycles it
//   could, which is why the fused kernel breaks ties by hop count).
// A tight first hop k != j has D[k][j] > 0, hence W[i][k] < D[i][j] <= the row's largest finite
// distance: the candidates of row i are the out-edges below that bound, sorted once per row.
// Scanning them in weight order stops early: light edges start most shortest paths.
#pragma once

#include <cub/block/block_radix_sort.cuh>

#include "apsp_kernels.cuh"
#include "gcompute/kernels/apsp_types.hpp"

namespace gcompute::kernels::cuda::detail {

constexpr int kCandidateThreads = 512;
constexpr int kCandidateItems = 4;
constexpr int kMaxCandidates = kCandidateThreads * kCandidateItems;  ///< per row (2048)
static_assert(kMaxCandidates == kApspNextHopCandidates, "the CPU applies the same limit");
constexpr int kVertexBits = 24;  ///< a key is W << 24 | k; apsp refuses n > 2^24 - 128
constexpr unsigned long long kVertexMask = (1ull << kVertexBits) - 1;
constexpr int kPassThreads = 256;

/// One block per row i: the candidate keys (W[i][k] << 24 | k) of row i in ascending order into
/// keys[i * capacity ...] and their number into counts[i]. A row with more than `capacity`
/// candidates sets flags->pass_missed and writes nothing (the caller falls back to the fused
/// kernel). Keys use bits [0, end_bit).
template <class Ops>
__global__ void __launch_bounds__(kCandidateThreads)
    next_hop_candidates_kernel(const typename Ops::T* __restrict__ w,
                               const typename Ops::T* __restrict__ d, long long ld, long long n,
                               typename Ops::T input_inf, typename Ops::T unreachable, int capacity,
                               int end_bit, unsigned long long* __restrict__ keys,
                               int* __restrict__ counts, ApspFlags* flags) {
  using T = typename Ops::T;
  using Sort = cub::BlockRadixSort<unsigned long long, kCandidateThreads, kCandidateItems>;
  __shared__ union {
    typename Sort::TempStorage sort;
    unsigned long long staged[kMaxCandidates];
  } smem;
  __shared__ T warp_max[kCandidateThreads / 32];
  __shared__ int count;
  const long long i = blockIdx.x;
  const int tid = threadIdx.x;

  // The row's largest finite distance (distances are >= 0 here).
  T bound = T(0);
  for (long long j = tid; j < n; j += kCandidateThreads) {
    const T v = d[i * ld + j];
    if (v < unreachable && v > bound) bound = v;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const T u = __shfl_xor_sync(0xffffffffu, bound, o);
    bound = u > bound ? u : bound;
  }
  if ((tid & 31) == 0) warp_max[tid >> 5] = bound;
  if (tid == 0) count = 0;
  __syncthreads();
  bound = warp_max[0];
  for (int q = 1; q < kCandidateThreads / 32; ++q)
    bound = warp_max[q] > bound ? warp_max[q] : bound;

  for (long long k = tid; k < n; k += kCandidateThreads) {
    const T x = w[i * n + k];
    if (k == i || x == input_inf || !(x < bound)) continue;
    const int slot = atomicAdd(&count, 1);
    if (slot < capacity) {
      smem.staged[slot] =
          (static_cast<unsigned long long>(x) << kVertexBits) | static_cast<unsigned long long>(k);
    }
  }
  __syncthreads();
  const int total = count;  // the same in every thread: the branches below are uniform
  if (total > capacity) {
    if (tid == 0) {
      atomicOr(&flags->pass_missed, 1);
      counts[i] = 0;  // the pass reads it (and then stops at once: the call falls back)
    }
    return;
  }
  unsigned long long item[kCandidateItems];
#pragma unroll
  for (int q = 0; q < kCandidateItems; ++q) {
    const int s = tid * kCandidateItems + q;
    item[q] = s < total ? smem.staged[s] : ~0ull;  // padding sorts last
  }
  __syncthreads();  // the sort reuses the staging area
  if (total > 1) Sort(smem.sort).Sort(item, 0, end_bit);
#pragma unroll
  for (int q = 0; q < kCandidateItems; ++q) {
    const int s = tid * kCandidateItems + q;
    if (s < total) keys[i * capacity + s] = item[q];
  }
  if (tid == 0) counts[i] = total;
}

/// Grid (n, ceil(n / 256)): block (i, y) writes nx[i][j] for 256 columns j. Each thread tries
/// the direct edge, then row i's candidates in order, four loads at a time, until one is tight
/// or the candidate is as heavy as D[i][j]. A reachable pair with no tight candidate (impossible
/// with exact distances) sets flags->pass_missed.
template <class Ops>
__global__ void __launch_bounds__(kPassThreads)
    next_hop_pass_kernel(const typename Ops::T* __restrict__ w,
                         const typename Ops::T* __restrict__ d, long long ld, long long n,
                         typename Ops::T input_inf, typename Ops::T unreachable,
                         const unsigned long long* __restrict__ keys,
                         const int* __restrict__ counts, int capacity, int* __restrict__ nx,
                         ApspFlags* flags) {
  using T = typename Ops::T;
  constexpr int kBatch = 4;
  const long long i = blockIdx.x;
  const long long j = static_cast<long long>(blockIdx.y) * kPassThreads + threadIdx.x;
  if (j >= n || flags->pass_missed) return;  // a row overflowed: the fused kernel takes over
  const T target = d[i * ld + j];
  int hop = -1;
  if (i == j) {
    hop = static_cast<int>(i);
  } else if (target < unreachable) {
    const T direct = w[i * n + j];
    if (!(direct == input_inf) && direct == target) {
      hop = static_cast<int>(j);
    } else {
      const unsigned long long* cand = keys + i * capacity;
      const int total = counts[i];
      bool done = false;
      for (int c = 0; c < total && !done; c += kBatch) {
        unsigned long long key[kBatch];
        T via[kBatch];
#pragma unroll
        for (int q = 0; q < kBatch; ++q) {
          key[q] = c + q < total ? __ldg(cand + c + q) : ~0ull;
          const T wq = static_cast<T>(key[q] >> kVertexBits);
          // Loads only for candidates still in range; all issued before any is tested.
          via[q] = c + q < total && wq < target
                       ? d[static_cast<long long>(key[q] & kVertexMask) * ld + j]
                       : Ops::inf();
        }
#pragma unroll
        for (int q = 0; q < kBatch; ++q) {
          if (done || c + q >= total) continue;
          const T wq = static_cast<T>(key[q] >> kVertexBits);
          if (!(wq < target)) {
            done = true;
          } else if (wq + via[q] == target) {
            hop = static_cast<int>(key[q] & kVertexMask);
            done = true;
          }
        }
      }
      if (hop < 0) atomicOr(&flags->pass_missed, 1);
    }
  }
  nx[i * ld + j] = hop;
}

}  // namespace gcompute::kernels::cuda::detail
