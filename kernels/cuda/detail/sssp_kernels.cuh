// SPDX-License-Identifier: Apache-2.0
// Device code of cuda::sssp. Each vertex holds one 64-bit word: the order-preserving bits of
// its f32 distance (high half) and its parent (low half), so one atomicCAS changes both, and
// only on a strictly smaller distance.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gcompute::kernels::cuda::detail {

inline constexpr unsigned kNoVertex = 0xFFFFFFFFu;
inline constexpr unsigned long long kNoIndex = ~0ull;

/// Per-call counters, read back once per round (and the validation results once).
struct SsspCounters {
  unsigned next_count;    ///< vertices in the next frontier
  unsigned cycle_vertex;  ///< smallest vertex found on a parent cycle, or kNoVertex
  unsigned long long improvements;
  unsigned long long offset_order;  ///< smallest v with row_offsets[v] > row_offsets[v + 1]
  unsigned long long column;        ///< smallest e with cols[e] >= n
  unsigned long long weight;        ///< smallest e with a NaN or -inf weight
};

/// f32 -> u32 with the same order (-0 taken as +0, so that equal distances have equal keys).
__device__ __forceinline__ unsigned order_key(float f) {
  const unsigned b = __float_as_uint(f == 0.0f ? 0.0f : f);
  return (b & 0x80000000u) != 0 ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float key_value(unsigned k) {
  return __uint_as_float((k & 0x80000000u) != 0 ? (k & 0x7FFFFFFFu) : ~k);
}

__device__ __forceinline__ unsigned long long pack(float d, unsigned parent) {
  return (static_cast<unsigned long long>(order_key(d)) << 32) | parent;
}

__global__ void sssp_validate_kernel(const std::uint64_t* off, const std::uint32_t* cols,
                                     const float* w, long long n, long long m, SsspCounters* c) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long count = n > m ? n : m;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    if (i < n && off[i] > off[i + 1])
      atomicMin(&c->offset_order, static_cast<unsigned long long>(i));
    if (i < m) {
      if (static_cast<long long>(cols[i]) >= n)
        atomicMin(&c->column, static_cast<unsigned long long>(i));
      const float x = w[i];
      if (isnan(x) || x == -INFINITY) atomicMin(&c->weight, static_cast<unsigned long long>(i));
    }
  }
}

__global__ void sssp_init_kernel(unsigned long long* packed, unsigned* stamp, unsigned* frontier,
                                 long long n, unsigned source) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; v < n;
       v += stride) {
    packed[v] = v == source ? pack(0.0f, source) : pack(INFINITY, kNoVertex);
    stamp[v] = 0;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) frontier[0] = source;
}

/// One round: a warp per frontier vertex, its lanes over the out-edges. A lane that lowers a
/// distance stamps the vertex with `next_round`; the first to do so appends it to `next`
/// (one atomicAdd per warp and step).
__global__ void sssp_relax_kernel(const std::uint64_t* __restrict__ off,
                                  const std::uint32_t* __restrict__ cols,
                                  const float* __restrict__ w,
                                  const unsigned* __restrict__ frontier, unsigned count,
                                  unsigned* __restrict__ next, unsigned long long* packed,
                                  unsigned* stamp, unsigned next_round, unsigned source,
                                  SsspCounters* c) {
  const unsigned lane = threadIdx.x & 31u;
  const long long warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
  unsigned long long improved = 0;
  for (long long i = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5;
       i < count; i += warps) {
    const unsigned u = frontier[i];
    // The newest value: bypass L1, which other SMs' atomics do not update.
    const float du = key_value(static_cast<unsigned>(__ldcg(packed + u) >> 32));
    const std::uint64_t begin = off[u], end = off[u + 1];
    for (std::uint64_t base = begin; base < end; base += 32) {
      const std::uint64_t e = base + lane;
      bool push = false;
      unsigned v = 0;
      if (e < end) {
        v = cols[e];
        const float cand = du + w[e];
        const unsigned long long desired = pack(cand, u);
        unsigned long long old = __ldcg(packed + v);
        while (cand < key_value(static_cast<unsigned>(old >> 32))) {
          const unsigned long long seen = atomicCAS(packed + v, old, desired);
          if (seen == old) {
            ++improved;
            // The source improves only through a closed walk of negative length.
            if (v == source) atomicMin(&c->cycle_vertex, source);
            push = atomicExch(stamp + v, next_round) != next_round;
            break;
          }
          old = seen;
        }
      }
      const unsigned mask = __ballot_sync(0xFFFFFFFFu, push);
      if (mask != 0) {
        unsigned slot = 0;
        if (lane == 0) slot = atomicAdd(&c->next_count, static_cast<unsigned>(__popc(mask)));
        slot = __shfl_sync(0xFFFFFFFFu, slot, 0);
        if (push) next[slot + __popc(mask & ((1u << lane) - 1u))] = v;
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) improved += __shfl_down_sync(0xFFFFFFFFu, improved, o);
  if (lane == 0 && improved != 0) atomicAdd(&c->improvements, improved);
}

/// jump[v] = parent[v], or kNoVertex for the source (the root) and unreached vertices.
__global__ void sssp_jump_init_kernel(const unsigned long long* packed, unsigned* jump, long long n,
                                      unsigned source) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; v < n;
       v += stride) {
    const unsigned p = static_cast<unsigned>(packed[v]);
    jump[v] = v == source ? kNoVertex : p;
  }
}

/// Pointer jumping in place: jump[v] becomes an ancestor at least twice as far, or kNoVertex
/// once the chain is known to end at the root (or at an unreached vertex).
__global__ void sssp_jump_kernel(unsigned* jump, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; v < n;
       v += stride) {
    const unsigned j = jump[v];
    if (j != kNoVertex) jump[v] = __ldcg(jump + j);
  }
}

/// After enough jumps every remaining pointer is at least n steps up its chain, so it lies on
/// a cycle of the parent pointers: the smallest such vertex is reported.
__global__ void sssp_cycle_kernel(const unsigned* jump, long long n, SsspCounters* c) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; v < n;
       v += stride) {
    if (jump[v] != kNoVertex) atomicMin(&c->cycle_vertex, jump[v]);
  }
}

__global__ void sssp_finish_kernel(const unsigned long long* packed, float* dist,
                                   std::int32_t* parent, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; v < n;
       v += stride) {
    const unsigned long long x = packed[v];
    dist[v] = key_value(static_cast<unsigned>(x >> 32));
    const unsigned p = static_cast<unsigned>(x);
    parent[v] = p == kNoVertex ? -1 : static_cast<std::int32_t>(p);
  }
}

}  // namespace gcompute::kernels::cuda::detail
