// SPDX-License-Identifier: Apache-2.0
// Kernels of cuda::DeviceGraph (graph_device.hpp). Every per-element kernel runs one thread per
// element with no early exit, so that the warp-wide aggregation (__match_any_sync, ballots)
// sees all 32 lanes.
#pragma once

#include <cuda/atomic>

#include <cstdint>

#include "gcompute/kernels/graph_batch_types.hpp"

namespace gcompute::kernels::cuda::detail {

inline constexpr std::uint32_t kEmptyKey = 0xFFFFFFFFu;
inline constexpr std::uint32_t kTombKey = 0xFFFFFFFEu;
inline constexpr unsigned long long kEmptySlot = ~0ull;
inline constexpr unsigned long long kTombSlot = static_cast<unsigned long long>(kTombKey) << 32;
inline constexpr unsigned kFull = 0xFFFFFFFFu;

/// Device-side counters of one batch, read back with one copy.
struct Counters {
  unsigned long long invalid;
  unsigned long long overflow;  ///< vertices listed for enlargement
  unsigned long long inserted;
  unsigned long long updated;
  unsigned long long removed;
  unsigned long long missing;
  unsigned long long superseded;
  unsigned long long garbage;  ///< slots of tables abandoned by enlargement in this batch
};

/// Per-vertex state, structure of arrays.
struct VertexArrays {
  unsigned long long* offset;  ///< first slot of the table in the pool
  std::uint32_t* cap;          ///< slots, power of two, or 0 (no table)
  std::uint32_t* live;         ///< edges present
  std::uint32_t* used;         ///< live + tombstones
  std::uint32_t* pending;      ///< distinct keys of the current batch (0 between batches)
};

__device__ __forceinline__ unsigned long long make_slot(std::uint32_t key, float w) {
  return (static_cast<unsigned long long>(key) << 32) | __float_as_uint(w);
}

/// Coherent (L2) relaxed load: a slot read after another thread's CAS must not come from a
/// stale L1 line, or a lost CAS would be retried forever.
__device__ __forceinline__ unsigned long long load_slot(unsigned long long* p) {
  return ::cuda::atomic_ref<unsigned long long, ::cuda::thread_scope_device>(*p).load(
      ::cuda::memory_order_relaxed);
}

__device__ __forceinline__ unsigned lane_id() {
  return threadIdx.x & 31u;
}

/// Adds `flag` summed over the warp to *counter (one atomic per warp).
__device__ __forceinline__ void warp_count(bool flag, unsigned long long* counter) {
  const unsigned b = __ballot_sync(kFull, flag);
  if (lane_id() == 0 && b != 0) atomicAdd(counter, static_cast<unsigned long long>(__popc(b)));
}

/// Adds (or subtracts) the number of lanes with the same `v` and `flag` set to arr[v], one
/// atomic per distinct v in the warp (sorted batches put many lanes on one hub vertex).
__device__ __forceinline__ void warp_add_per_vertex(bool flag, std::uint32_t v, std::uint32_t* arr,
                                                    bool subtract) {
  const unsigned peers = __match_any_sync(kFull, flag ? v : kEmptyKey);
  if (flag && lane_id() == static_cast<unsigned>(__ffs(peers) - 1)) {
    const unsigned k = __popc(peers);
    if (subtract) {
      atomicSub(arr + v, k);
    } else {
      atomicAdd(arr + v, k);
    }
  }
}

__device__ __forceinline__ std::uint32_t key_src(unsigned long long k, int dbits) {
  return static_cast<std::uint32_t>(k >> dbits);
}
__device__ __forceinline__ std::uint32_t key_dst(unsigned long long k, int dbits) {
  return static_cast<std::uint32_t>(k & ((1ull << dbits) - 1));
}

/// Sort keys (src << dbits | dst, or n << dbits for an invalid element, which sorts last) and
/// the identity permutation.
__global__ void make_keys_kernel(const GraphEdge* __restrict__ edges, std::size_t count,
                                 std::uint32_t n, int dbits, unsigned long long* __restrict__ keys,
                                 std::uint32_t* __restrict__ idx, Counters* c) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  bool bad = false;
  if (i < count) {
    const GraphEdge e = edges[i];
    bad = e.src >= n || e.dst >= n;
    keys[i] = bad ? (static_cast<unsigned long long>(n) << dbits)
                  : (static_cast<unsigned long long>(e.src) << dbits) | e.dst;
    idx[i] = static_cast<std::uint32_t>(i);
  }
  warp_count(bad, &c->invalid);
}

/// Status for a rejected batch: kInvalid for the bad elements, kMissing (not applied) else.
__global__ void mark_invalid_kernel(const GraphEdge* __restrict__ edges, std::size_t count,
                                    std::uint32_t n, EdgeStatus* __restrict__ status) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) {
    const GraphEdge e = edges[i];
    status[i] = (e.src >= n || e.dst >= n) ? EdgeStatus::kInvalid : EdgeStatus::kMissing;
  }
}

/// True for the element that takes effect: valid and last of its run of equal keys.
__device__ __forceinline__ bool is_effective(const unsigned long long* keys, std::size_t i,
                                             std::size_t count, std::uint32_t n, int dbits) {
  if (i >= count) return false;
  const unsigned long long k = keys[i];
  return key_src(k, dbits) < n && (i + 1 == count || keys[i + 1] != k);
}

/// Counts the batch's distinct keys per source into pending[] and lists each vertex whose
/// table would pass max_load exactly once (the aggregated add that crosses the limit lists it).
/// Does nothing if make_keys found an invalid element (the batch will be rejected).
__global__ void count_pending_kernel(const unsigned long long* __restrict__ keys, std::size_t count,
                                     std::uint32_t n, int dbits, VertexArrays va, float max_load,
                                     std::uint32_t* __restrict__ list, Counters* c) {
  if (*reinterpret_cast<volatile unsigned long long*>(&c->invalid) != 0) return;  // uniform
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const bool eff = is_effective(keys, i, count, n, dbits);
  const std::uint32_t v = eff ? key_src(keys[i], dbits) : kEmptyKey;
  const unsigned peers = __match_any_sync(kFull, v);
  if (eff && lane_id() == static_cast<unsigned>(__ffs(peers) - 1)) {
    const unsigned k = __popc(peers);
    const unsigned old = atomicAdd(va.pending + v, k);
    const long long room = static_cast<long long>(graph_table_threshold(va.cap[v], max_load)) -
                           static_cast<long long>(va.used[v]);
    if (static_cast<long long>(old) <= room && static_cast<long long>(old) + k > room) {
      const unsigned long long pos = atomicAdd(&c->overflow, 1ull);
      list[pos] = v;
    }
  }
}

/// New capacity for each listed vertex (list == nullptr: every vertex; those that do not
/// overflow keep their capacity, as they are only being moved).
__global__ void new_caps_kernel(const std::uint32_t* __restrict__ list, std::size_t m,
                                VertexArrays va, GraphOptions opt,
                                unsigned long long* __restrict__ new_cap) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= m) return;
  const std::uint32_t v = list ? list[j] : static_cast<std::uint32_t>(j);
  const std::uint32_t cap = va.cap[v];
  const std::uint32_t pend = va.pending[v];
  const bool over =
      static_cast<unsigned long long>(va.used[v]) + pend > graph_table_threshold(cap, opt.max_load);
  new_cap[j] =
      over ? graph_table_size_for(static_cast<unsigned long long>(va.live[v]) + pend, opt) : cap;
}

/// One warp per listed vertex (or every vertex): moves the live slots of its table into a
/// fresh (all-empty) table at base + incl_end[j] - new_cap[j] of new_pool, then points the
/// vertex there. Tombstones are dropped.
__global__ void rehash_kernel(const std::uint32_t* __restrict__ list, std::size_t m,
                              VertexArrays va, const unsigned long long* __restrict__ new_cap,
                              const unsigned long long* __restrict__ incl_end,
                              unsigned long long base, unsigned long long* old_pool,
                              unsigned long long* new_pool, Counters* c) {
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * (blockDim.x / 32);
  for (std::size_t j = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) / 32;
       j < m; j += warps) {
    const std::uint32_t v = list ? list[j] : static_cast<std::uint32_t>(j);
    const std::uint32_t old_cap = va.cap[v];
    const unsigned long long* old_t = old_pool + va.offset[v];
    const unsigned long long ncap = new_cap[j];
    const unsigned long long noff = base + incl_end[j] - ncap;
    unsigned long long* t = new_pool + noff;
    const std::uint32_t mask = static_cast<std::uint32_t>(ncap - 1);
    for (std::uint32_t s = lane_id(); s < old_cap; s += 32) {
      const unsigned long long slot = old_t[s];
      const std::uint32_t key = static_cast<std::uint32_t>(slot >> 32);
      if (key >= kTombKey) continue;
      for (std::uint32_t p = graph_slot_hash(key) & mask;; p = (p + 1) & mask) {
        if (load_slot(t + p) == kEmptySlot && atomicCAS(t + p, kEmptySlot, slot) == kEmptySlot)
          break;
      }
    }
    __syncwarp();
    if (lane_id() == 0) {
      if (list != nullptr) atomicAdd(&c->garbage, static_cast<unsigned long long>(old_cap));
      va.offset[v] = noff;
      va.cap[v] = static_cast<std::uint32_t>(ncap);
      va.used[v] = va.live[v];
    }
  }
}

/// One thread per sorted element: the effective ones insert or overwrite; the others are
/// superseded. Resets pending[] for the next batch.
__global__ void insert_kernel(const unsigned long long* __restrict__ keys,
                              const std::uint32_t* __restrict__ idx, std::size_t count,
                              std::uint32_t n, int dbits, const GraphEdge* __restrict__ edges,
                              VertexArrays va, unsigned long long* pool,
                              EdgeStatus* __restrict__ status, Counters* c) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const bool valid = i < count && key_src(keys[i], dbits) < n;
  const bool eff = is_effective(keys, i, count, n, dbits);
  std::uint32_t src = kEmptyKey;
  bool inserted = false, updated = false, took_empty = false;
  if (valid) {
    const unsigned long long k = keys[i];
    src = key_src(k, dbits);
    va.pending[src] = 0;  // every lane of this source writes 0; nobody reads it in this kernel
  }
  if (eff) {
    const std::uint32_t dst = key_dst(keys[i], dbits);
    const unsigned long long slot = make_slot(dst, edges[idx[i]].weight);
    unsigned long long* t = pool + va.offset[src];
    const std::uint32_t mask = va.cap[src] - 1;  // growth guaranteed cap > 0 and a free slot
    const std::uint32_t h = graph_slot_hash(dst) & mask;
    std::uint32_t p = h;
    long long tomb = -1;
    for (;;) {
      const unsigned long long s = load_slot(t + p);
      const std::uint32_t key = static_cast<std::uint32_t>(s >> 32);
      if (key == dst) {  // only this thread writes key dst in this batch
        ::cuda::atomic_ref<unsigned long long, ::cuda::thread_scope_device>(t[p]).store(
            slot, ::cuda::memory_order_relaxed);
        updated = true;
        break;
      }
      if (key == kTombKey) {
        if (tomb < 0) tomb = p;
      } else if (key == kEmptyKey) {
        // dst is absent (the probe reached a free slot): claim the first tombstone on the
        // way, else this free slot.
        if (tomb >= 0) {
          if (atomicCAS(t + tomb, kTombSlot, slot) == kTombSlot) {
            inserted = true;
            break;
          }
          p = h;  // the tombstone was taken: start over
          tomb = -1;
          continue;
        }
        if (atomicCAS(t + p, kEmptySlot, slot) == kEmptySlot) {
          inserted = took_empty = true;
          break;
        }
        continue;  // another key took it: look at the same slot again
      }
      p = (p + 1) & mask;
    }
  }
  warp_add_per_vertex(inserted, src, va.live, false);
  warp_add_per_vertex(took_empty, src, va.used, false);
  warp_count(inserted, &c->inserted);
  warp_count(updated, &c->updated);
  warp_count(valid && !eff, &c->superseded);
  if (status != nullptr && i < count) {
    status[idx[i]] =
        !eff ? EdgeStatus::kSuperseded : (inserted ? EdgeStatus::kInserted : EdgeStatus::kUpdated);
  }
}

/// One thread per sorted element, for deletions (remove = true) or weight updates. No
/// insertions happen concurrently, so a probe ends at the key or at a free slot.
__global__ void modify_kernel(const unsigned long long* __restrict__ keys,
                              const std::uint32_t* __restrict__ idx, std::size_t count,
                              std::uint32_t n, int dbits, const GraphEdge* __restrict__ edges,
                              VertexArrays va, unsigned long long* pool, bool remove,
                              EdgeStatus* __restrict__ status, Counters* c) {
  if (*reinterpret_cast<volatile unsigned long long*>(&c->invalid) != 0) return;  // uniform
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const bool valid = i < count && key_src(keys[i], dbits) < n;
  const bool eff = is_effective(keys, i, count, n, dbits);
  std::uint32_t src = kEmptyKey;
  bool found = false;
  if (eff) {
    src = key_src(keys[i], dbits);
    const std::uint32_t dst = key_dst(keys[i], dbits);
    const std::uint32_t cap = va.cap[src];
    unsigned long long* t = pool + va.offset[src];
    const std::uint32_t mask = cap - 1;
    std::uint32_t p = graph_slot_hash(dst) & mask;
    for (std::uint32_t step = 0; step < cap; ++step, p = (p + 1) & mask) {
      const std::uint32_t key = static_cast<std::uint32_t>(load_slot(t + p) >> 32);
      if (key == dst) {
        const unsigned long long nv = remove ? kTombSlot : make_slot(dst, edges[idx[i]].weight);
        ::cuda::atomic_ref<unsigned long long, ::cuda::thread_scope_device>(t[p]).store(
            nv, ::cuda::memory_order_relaxed);
        found = true;
        break;
      }
      if (key == kEmptyKey) break;
    }
  }
  if (remove) warp_add_per_vertex(found, src, va.live, true);
  warp_count(found, remove ? &c->removed : &c->updated);
  warp_count(eff && !found, &c->missing);
  warp_count(valid && !eff, &c->superseded);
  if (status != nullptr && i < count) {
    status[idx[i]] = !eff    ? EdgeStatus::kSuperseded
                     : found ? (remove ? EdgeStatus::kRemoved : EdgeStatus::kUpdated)
                             : EdgeStatus::kMissing;
  }
}

/// live[] widened to 64 bits (the scan over it gives the CSR row ends).
__global__ void widen_kernel(const std::uint32_t* __restrict__ in, std::size_t count,
                             unsigned long long* __restrict__ out) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = in[i];
}

/// One warp per vertex: copies its live slots, in slot order, to CSR position row_end - live.
__global__ void export_kernel(std::uint32_t n, VertexArrays va, const unsigned long long* pool,
                              const unsigned long long* __restrict__ row_end,
                              std::uint32_t* __restrict__ cols, float* __restrict__ weights) {
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * (blockDim.x / 32);
  for (std::size_t v = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) / 32;
       v < n; v += warps) {
    const std::uint32_t cap = va.cap[v];
    const unsigned long long* t = pool + va.offset[v];
    unsigned long long out = row_end[v] - va.live[v];
    for (std::uint32_t base = 0; base < cap; base += 32) {
      const std::uint32_t s = base + lane_id();
      const unsigned long long slot = s < cap ? t[s] : kEmptySlot;
      const bool live = static_cast<std::uint32_t>(slot >> 32) < kTombKey;
      const unsigned b = __ballot_sync(kFull, live);
      if (live) {
        const unsigned long long o = out + __popc(b & ((1u << lane_id()) - 1));
        cols[o] = static_cast<std::uint32_t>(slot >> 32);
        weights[o] = __uint_as_float(static_cast<std::uint32_t>(slot));
      }
      out += __popc(b);
    }
  }
}

/// out (rows x rows) = +inf everywhere.
__global__ inline void fill_inf_kernel(float* out, long long count) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < count;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    out[e] = __int_as_float(0x7f800000);
  }
}

/// One warp per slot v with row r = slot_rows[v] >= 0: out[r][slot_rows[dst]] = weight for every
/// live edge v -> dst whose head has a row. A table holds each (v, dst) once, so no two threads
/// write one cell.
__global__ inline void dense_kernel(std::uint32_t n, VertexArrays va,
                                    const unsigned long long* pool,
                                    const std::int32_t* __restrict__ slot_rows, long long rows,
                                    float* __restrict__ out) {
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * (blockDim.x / 32);
  for (std::size_t v = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) / 32;
       v < n; v += warps) {
    const std::int32_t r = slot_rows[v];
    if (r < 0) continue;
    const std::uint32_t cap = va.cap[v];
    const unsigned long long* t = pool + va.offset[v];
    for (std::uint32_t base = 0; base < cap; base += 32) {
      const std::uint32_t s = base + lane_id();
      const unsigned long long slot = s < cap ? t[s] : kEmptySlot;
      const auto dst = static_cast<std::uint32_t>(slot >> 32);
      if (dst >= kTombKey || dst >= n) continue;
      const std::int32_t c = slot_rows[dst];
      if (c >= 0) out[r * rows + c] = __uint_as_float(static_cast<std::uint32_t>(slot));
    }
  }
}

}  // namespace gcompute::kernels::cuda::detail
