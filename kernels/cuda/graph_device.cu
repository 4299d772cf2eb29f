// SPDX-License-Identifier: Apache-2.0
#include "gcompute/kernels/cuda/graph_device.hpp"

#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "detail/graph_device_kernels.cuh"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/memory.hpp"
#include "gcompute/kernels/cuda/sssp.hpp"

namespace gcompute::kernels::cuda {

using detail::Counters;
using detail::VertexArrays;

namespace {

constexpr int kBlock = 256;

unsigned blocks_for(std::size_t count) {
  return static_cast<unsigned>(std::max<std::size_t>(1, (count + kBlock - 1) / kBlock));
}

/// Enough warps to cover the device a few times over, for the warp-per-vertex kernels.
unsigned warp_blocks(std::size_t items) {
  const std::size_t want = (items + kBlock / 32 - 1) / (kBlock / 32);
  return static_cast<unsigned>(std::clamp<std::size_t>(want, 1, 132 * 16));
}

}  // namespace

struct DeviceGraph::State {
  MemoryResource memory;
  StreamView stream;  // the latest call's: allocations and frees are ordered on it
  GraphOptions opt;
  std::uint32_t n = 0;
  std::uint32_t n_cap = 0;  // allocated length of the per-vertex arrays
  DeviceArray<unsigned long long> offset;
  DeviceArray<std::uint32_t> cap, live, used, pending;
  DeviceArray<unsigned long long> pool;  // the slot pool; its size is the capacity
  std::uint64_t pool_used = 0;
  std::uint64_t garbage = 0;  // slots of abandoned tables inside [0, pool_used)
  std::uint64_t num_edges = 0;

  // Batch scratch, grown on demand.
  std::size_t batch_cap = 0;
  DeviceArray<unsigned long long> keys_in, keys_out;
  DeviceArray<std::uint32_t> idx_in, idx_out, list;
  DeviceArray<unsigned long long> new_cap, new_end;
  DeviceBuffer cub_tmp;
  DeviceArray<Counters> counters;
  PinnedBuffer host;  // one Counters, read back after each pass

  Counters& host_counters() { return *host.data_as<Counters>(); }
  const Counters& host_counters() const { return *host.data_as<Counters>(); }

  VertexArrays va() {
    return VertexArrays{offset.data(), cap.data(), live.data(), used.data(), pending.data()};
  }

  /// Makes `s` the stream of this call: every buffer is freed on it from now on.
  void adopt_stream(StreamView s) {
    stream = s;
    for (DeviceArray<unsigned long long>* a :
         {&offset, &pool, &keys_in, &keys_out, &new_cap, &new_end}) {
      a->set_stream(s);
    }
    for (DeviceArray<std::uint32_t>* a : {&cap, &live, &used, &pending, &idx_in, &idx_out, &list}) {
      a->set_stream(s);
    }
    cub_tmp.set_stream(s);
    counters.set_stream(s);
  }

  template <class T>
  absl::Status allocate(DeviceArray<T>& array, std::size_t count) {
    absl::StatusOr<DeviceArray<T>> a = DeviceArray<T>::create(count, stream, memory);
    if (!a.ok()) return a.status();
    array = *std::move(a);
    return absl::OkStatus();
  }

  /// The live edges as CSR in device memory: offsets[0] = 0 and offsets[v + 1] the end of
  /// row v (a scan of the live counts), rows in slot order, each row's live slots in slot
  /// order (one warp per vertex). Freed on the call's stream.
  struct DeviceCsr {
    DeviceArray<unsigned long long> offsets;  // n + 1
    DeviceArray<std::uint32_t> cols;
    DeviceArray<float> weights;
  };
  absl::StatusOr<DeviceCsr> build_csr() {
    const cudaStream_t s = stream;
    DeviceCsr c;
    DeviceArray<unsigned long long> wide;
    if (absl::Status e = allocate(wide, std::max<std::uint32_t>(n, 1)); !e.ok()) return e;
    if (absl::Status e = allocate(c.offsets, static_cast<std::size_t>(n) + 1); !e.ok()) return e;
    GC_CUDA_TRY(cudaMemsetAsync(c.offsets.data(), 0, sizeof(unsigned long long), s));
    if (n != 0) {
      std::size_t tmp_bytes = 0;
      GC_CUDA_TRY(
          cub::DeviceScan::InclusiveSum(nullptr, tmp_bytes, wide.data(), c.offsets.data() + 1, n));
      absl::StatusOr<DeviceBuffer> tmp =
          DeviceBuffer::create(std::max<std::size_t>(tmp_bytes, 1), s, memory);
      if (!tmp.ok()) return tmp.status();
      detail::widen_kernel<<<blocks_for(n), kBlock, 0, s>>>(live.data(), n, wide.data());
      GC_CUDA_CHECK_LAUNCH("widen_kernel");
      GC_CUDA_TRY(cub::DeviceScan::InclusiveSum(tmp->data(), tmp_bytes, wide.data(),
                                                c.offsets.data() + 1, n, s));
    }
    // The export writes as many edges as the counts add up to: they must be the ones recorded.
    unsigned long long total = 0;
    GC_CUDA_TRY(
        cudaMemcpyAsync(&total, c.offsets.data() + n, sizeof(total), cudaMemcpyDeviceToHost, s));
    GC_CUDA_TRY(cudaStreamSynchronize(s));
    if (total != num_edges) {
      return absl::InternalError(absl::StrCat("DeviceGraph: per-vertex counts sum to ", total,
                                              " but ", num_edges, " edges were recorded"));
    }
    if (absl::Status e = allocate(c.cols, std::max<std::uint64_t>(total, 1)); !e.ok()) return e;
    if (absl::Status e = allocate(c.weights, std::max<std::uint64_t>(total, 1)); !e.ok()) return e;
    if (total != 0) {
      detail::export_kernel<<<warp_blocks(n), kBlock, 0, s>>>(
          n, va(), pool.data(), c.offsets.data() + 1, c.cols.data(), c.weights.data());
      GC_CUDA_CHECK_LAUNCH("export_kernel");
    }
    return c;
  }

  void free_scratch() {
    keys_in.reset();
    keys_out.reset();
    idx_in.reset();
    idx_out.reset();
    list.reset();
    new_cap.reset();
    new_end.reset();
    cub_tmp.reset();
    batch_cap = 0;
  }

  int dst_bits() const { return std::max(1, static_cast<int>(std::bit_width(n > 0 ? n - 1 : 0u))); }
  int key_bits() const { return dst_bits() + static_cast<int>(std::bit_width(n)); }

  absl::Status ensure_cub(std::size_t bytes) {
    if (bytes <= cub_tmp.size()) return absl::OkStatus();
    cub_tmp.reset();
    absl::StatusOr<DeviceBuffer> tmp = DeviceBuffer::create(bytes, stream, memory);
    if (!tmp.ok()) return tmp.status();
    cub_tmp = *std::move(tmp);
    return absl::OkStatus();
  }

  absl::Status ensure_batch(std::size_t count) {
    if (count <= batch_cap) return absl::OkStatus();
    free_scratch();
    const std::size_t c = std::max<std::size_t>(count, 1024);
    if (absl::Status s = allocate(keys_in, c); !s.ok()) return s;
    if (absl::Status s = allocate(keys_out, c); !s.ok()) return s;
    if (absl::Status s = allocate(idx_in, c); !s.ok()) return s;
    if (absl::Status s = allocate(idx_out, c); !s.ok()) return s;
    if (absl::Status s = allocate(list, c); !s.ok()) return s;
    if (absl::Status s = allocate(new_cap, c); !s.ok()) return s;
    if (absl::Status s = allocate(new_end, c); !s.ok()) return s;
    std::size_t sort_bytes = 0, scan_bytes = 0;
    GC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys_in.data(),
                                                keys_out.data(), idx_in.data(), idx_out.data(), c,
                                                0, 64));
    GC_CUDA_TRY(
        cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, new_cap.data(), new_end.data(), c));
    if (absl::Status s = ensure_cub(std::max(sort_bytes, scan_bytes)); !s.ok()) return s;
    batch_cap = c;
    return absl::OkStatus();
  }

  absl::Status read_counters() {
    GC_CUDA_TRY(cudaMemcpyAsync(&host_counters(), counters.data(), sizeof(Counters),
                                cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    return absl::OkStatus();
  }

  /// Builds the sort keys (counting invalid elements on the device) and sorts them; no sync.
  absl::Status prepare(const GraphEdge* edges, std::size_t count) {
    if (absl::Status s = ensure_batch(count); !s.ok()) return s;
    GC_CUDA_TRY(cudaMemsetAsync(counters.data(), 0, sizeof(Counters), stream));
    detail::make_keys_kernel<<<blocks_for(count), kBlock, 0, stream>>>(
        edges, count, n, dst_bits(), keys_in.data(), idx_in.data(), counters.data());
    GC_CUDA_CHECK_LAUNCH("make_keys_kernel");
    std::size_t bytes = cub_tmp.size();
    GC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(cub_tmp.data(), bytes, keys_in.data(),
                                                keys_out.data(), idx_in.data(), idx_out.data(),
                                                count, 0, key_bits(), stream));
    return absl::OkStatus();
  }

  /// Enlarges the m listed tables (their ids are in `list`), appending them to the pool, or
  /// repacks every table into a new pool when the tail is too short.
  absl::Status grow(std::size_t m, GraphBatchResult& result) {
    detail::new_caps_kernel<<<blocks_for(m), kBlock, 0, stream>>>(list.data(), m, va(), opt,
                                                                  new_cap.data());
    GC_CUDA_CHECK_LAUNCH("new_caps_kernel");
    std::size_t bytes = cub_tmp.size();
    GC_CUDA_TRY(cub::DeviceScan::InclusiveSum(cub_tmp.data(), bytes, new_cap.data(), new_end.data(),
                                              m, stream));
    unsigned long long total = 0;
    GC_CUDA_TRY(cudaMemcpyAsync(&total, new_end.data() + (m - 1), sizeof(total),
                                cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    result.grown_vertices = m;
    if (pool_used + total <= pool.size() && garbage <= pool_used / 2) {
      GC_CUDA_TRY(cudaMemsetAsync(pool.data() + pool_used, 0xFF, total * sizeof(unsigned long long),
                                  stream));
      detail::rehash_kernel<<<warp_blocks(m), kBlock, 0, stream>>>(
          list.data(), m, va(), new_cap.data(), new_end.data(), pool_used, pool.data(), pool.data(),
          counters.data());
      GC_CUDA_CHECK_LAUNCH("rehash_kernel");
      pool_used += total;
      return absl::OkStatus();
    }
    return rebuild(result);
  }

  /// Repacks every table (enlarging the overflowing ones) into a new pool with slack. The old
  /// pool is freed after the rehash that reads it (ordered on the stream).
  absl::Status rebuild(GraphBatchResult& result) {
    result.rebuilt = true;
    DeviceArray<unsigned long long> caps, ends, fresh;
    if (absl::Status s = allocate(caps, n); !s.ok()) return s;
    if (absl::Status s = allocate(ends, n); !s.ok()) return s;
    std::size_t tmp_bytes = 0;
    GC_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, tmp_bytes, caps.data(), ends.data(), n));
    absl::StatusOr<DeviceBuffer> tmp =
        DeviceBuffer::create(std::max<std::size_t>(tmp_bytes, 1), stream, memory);
    if (!tmp.ok()) return tmp.status();
    detail::new_caps_kernel<<<blocks_for(n), kBlock, 0, stream>>>(nullptr, n, va(), opt,
                                                                  caps.data());
    GC_CUDA_CHECK_LAUNCH("new_caps_kernel");
    GC_CUDA_TRY(
        cub::DeviceScan::InclusiveSum(tmp->data(), tmp_bytes, caps.data(), ends.data(), n, stream));
    unsigned long long total = 0;
    GC_CUDA_TRY(cudaMemcpyAsync(&total, ends.data() + (n - 1), sizeof(total),
                                cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    const std::uint64_t new_cap_slots = std::max<std::uint64_t>(
        total + static_cast<std::uint64_t>(static_cast<double>(total) * opt.pool_slack), 1);
    if (absl::Status s = allocate(fresh, new_cap_slots); !s.ok()) return s;
    GC_CUDA_TRY(cudaMemsetAsync(fresh.data(), 0xFF, total * sizeof(unsigned long long), stream));
    detail::rehash_kernel<<<warp_blocks(n), kBlock, 0, stream>>>(
        nullptr, n, va(), caps.data(), ends.data(), 0, pool.data(), fresh.data(), counters.data());
    GC_CUDA_CHECK_LAUNCH("rehash_kernel");
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    pool = std::move(fresh);
    pool_used = total;
    garbage = 0;
    return absl::OkStatus();
  }

  absl::Status resize_vertices(std::uint32_t new_n) {
    if (new_n <= n_cap) {
      if (new_n > n) {
        const std::size_t k = new_n - n;
        GC_CUDA_TRY(cudaMemsetAsync(offset.data() + n, 0, k * sizeof(unsigned long long), stream));
        GC_CUDA_TRY(cudaMemsetAsync(cap.data() + n, 0, k * sizeof(std::uint32_t), stream));
        GC_CUDA_TRY(cudaMemsetAsync(live.data() + n, 0, k * sizeof(std::uint32_t), stream));
        GC_CUDA_TRY(cudaMemsetAsync(used.data() + n, 0, k * sizeof(std::uint32_t), stream));
        GC_CUDA_TRY(cudaMemsetAsync(pending.data() + n, 0, k * sizeof(std::uint32_t), stream));
      }
      n = new_n;
      return absl::OkStatus();
    }
    const std::uint32_t c = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        kMaxGraphVertices, std::max<std::uint64_t>(new_n, 2 * std::uint64_t{n_cap})));
    // The new arrays replace the old ones only once filled; a failure leaves the graph as it was.
    DeviceArray<unsigned long long> next_offset;
    DeviceArray<std::uint32_t> next_cap, next_live, next_used, next_pending;
    if (absl::Status s = allocate(next_offset, c); !s.ok()) return s;
    if (absl::Status s = allocate(next_cap, c); !s.ok()) return s;
    if (absl::Status s = allocate(next_live, c); !s.ok()) return s;
    if (absl::Status s = allocate(next_used, c); !s.ok()) return s;
    if (absl::Status s = allocate(next_pending, c); !s.ok()) return s;
    if (c != 0) {
      GC_CUDA_TRY(cudaMemsetAsync(next_offset.data(), 0, c * sizeof(unsigned long long), stream));
      GC_CUDA_TRY(cudaMemsetAsync(next_cap.data(), 0, c * sizeof(std::uint32_t), stream));
      GC_CUDA_TRY(cudaMemsetAsync(next_live.data(), 0, c * sizeof(std::uint32_t), stream));
      GC_CUDA_TRY(cudaMemsetAsync(next_used.data(), 0, c * sizeof(std::uint32_t), stream));
      GC_CUDA_TRY(cudaMemsetAsync(next_pending.data(), 0, c * sizeof(std::uint32_t), stream));
      if (n > 0) {
        GC_CUDA_TRY(cudaMemcpyAsync(next_offset.data(), offset.data(),
                                    n * sizeof(unsigned long long), cudaMemcpyDeviceToDevice,
                                    stream));
        GC_CUDA_TRY(cudaMemcpyAsync(next_cap.data(), cap.data(), n * sizeof(std::uint32_t),
                                    cudaMemcpyDeviceToDevice, stream));
        GC_CUDA_TRY(cudaMemcpyAsync(next_live.data(), live.data(), n * sizeof(std::uint32_t),
                                    cudaMemcpyDeviceToDevice, stream));
        GC_CUDA_TRY(cudaMemcpyAsync(next_used.data(), used.data(), n * sizeof(std::uint32_t),
                                    cudaMemcpyDeviceToDevice, stream));
      }
      GC_CUDA_TRY(cudaStreamSynchronize(stream));
    }
    offset = std::move(next_offset);
    cap = std::move(next_cap);
    live = std::move(next_live);
    used = std::move(next_used);
    pending = std::move(next_pending);
    n_cap = c;
    n = new_n;
    return absl::OkStatus();
  }

  void fill_counts(GraphBatchResult& r) const {
    const Counters& h = host_counters();
    r.inserted = h.inserted;
    r.updated = h.updated;
    r.removed = h.removed;
    r.missing = h.missing;
    r.superseded = h.superseded;
  }

  absl::Status reject(const GraphEdge* edges, std::size_t count, EdgeStatus* status) {
    if (status != nullptr) {
      detail::mark_invalid_kernel<<<blocks_for(count), kBlock, 0, stream>>>(edges, count, n,
                                                                            status);
      GC_CUDA_CHECK_LAUNCH("mark_invalid_kernel");
      GC_CUDA_TRY(cudaStreamSynchronize(stream));
    }
    return absl::InvalidArgumentError(absl::StrCat("DeviceGraph: ", host_counters().invalid, " of ",
                                                   count, " edges have src or dst >= ", n));
  }
};

DeviceGraph::DeviceGraph(std::unique_ptr<State> state) : s_(std::move(state)) {}
DeviceGraph::DeviceGraph(DeviceGraph&&) noexcept = default;
DeviceGraph& DeviceGraph::operator=(DeviceGraph&&) noexcept = default;
DeviceGraph::~DeviceGraph() = default;

absl::StatusOr<DeviceGraph> DeviceGraph::create(const Context& ctx, const MemoryResource& memory,
                                                std::uint32_t num_vertices, GraphOptions options) {
  if (num_vertices > kMaxGraphVertices) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeviceGraph: num_vertices ", num_vertices, " > ", kMaxGraphVertices));
  }
  if (absl::Status s = validate(options); !s.ok()) return s;
  auto st = std::make_unique<State>();
  st->memory = memory;
  st->opt = options;
  st->adopt_stream(ctx.stream);
  if (absl::Status s = st->allocate(st->counters, 1); !s.ok()) return s;
  absl::StatusOr<PinnedBuffer> host = PinnedBuffer::create(sizeof(Counters));
  if (!host.ok()) return host.status();
  st->host = *std::move(host);
  if (absl::Status s = st->resize_vertices(num_vertices); !s.ok()) return s;
  return DeviceGraph(std::move(st));
}

absl::StatusOr<GraphBatchResult> DeviceGraph::insert_edges(const Context& ctx,
                                                           const GraphEdge* edges,
                                                           std::size_t count, EdgeStatus* status) {
  GraphBatchResult result;
  if (count == 0) return result;
  if (count > 0xFFFFFFFFull) return absl::InvalidArgumentError("DeviceGraph: batch over 2^32-1");
  State& s = *s_;
  s.adopt_stream(ctx.stream);
  const cudaStream_t stream = ctx.stream;
  if (absl::Status st = s.prepare(edges, count); !st.ok()) return st;
  detail::count_pending_kernel<<<blocks_for(count), kBlock, 0, stream>>>(
      s.keys_out.data(), count, s.n, s.dst_bits(), s.va(), s.opt.max_load, s.list.data(),
      s.counters.data());
  GC_CUDA_CHECK_LAUNCH("count_pending_kernel");
  if (absl::Status st = s.read_counters(); !st.ok()) return st;
  if (s.host_counters().invalid != 0) return s.reject(edges, count, status);
  if (const std::size_t m = s.host_counters().overflow; m != 0) {
    if (absl::Status st = s.grow(m, result); !st.ok()) return st;
  }
  detail::insert_kernel<<<blocks_for(count), kBlock, 0, stream>>>(
      s.keys_out.data(), s.idx_out.data(), count, s.n, s.dst_bits(), edges, s.va(), s.pool.data(),
      status, s.counters.data());
  GC_CUDA_CHECK_LAUNCH("insert_kernel");
  if (absl::Status st = s.read_counters(); !st.ok()) return st;
  s.fill_counts(result);
  s.garbage += s.host_counters().garbage;
  s.num_edges += result.inserted;
  return result;
}

namespace {
absl::StatusOr<GraphBatchResult> modify(DeviceGraph::State& s, const Context& ctx,
                                        const GraphEdge* edges, std::size_t count,
                                        EdgeStatus* status, bool remove) {
  GraphBatchResult result;
  if (count == 0) return result;
  if (count > 0xFFFFFFFFull) return absl::InvalidArgumentError("DeviceGraph: batch over 2^32-1");
  s.adopt_stream(ctx.stream);
  const cudaStream_t stream = ctx.stream;
  if (absl::Status st = s.prepare(edges, count); !st.ok()) return st;
  // The kernel checks the invalid count itself, so a valid batch needs only the final sync.
  detail::modify_kernel<<<blocks_for(count), kBlock, 0, stream>>>(
      s.keys_out.data(), s.idx_out.data(), count, s.n, s.dst_bits(), edges, s.va(), s.pool.data(),
      remove, status, s.counters.data());
  GC_CUDA_CHECK_LAUNCH("modify_kernel");
  if (absl::Status st = s.read_counters(); !st.ok()) return st;
  if (s.host_counters().invalid != 0) return s.reject(edges, count, status);
  s.fill_counts(result);
  s.num_edges -= result.removed;
  return result;
}
}  // namespace

absl::StatusOr<GraphBatchResult> DeviceGraph::delete_edges(const Context& ctx,
                                                           const GraphEdge* edges,
                                                           std::size_t count, EdgeStatus* status) {
  return modify(*s_, ctx, edges, count, status, true);
}

absl::StatusOr<GraphBatchResult> DeviceGraph::update_weights(const Context& ctx,
                                                             const GraphEdge* edges,
                                                             std::size_t count,
                                                             EdgeStatus* status) {
  return modify(*s_, ctx, edges, count, status, false);
}

absl::StatusOr<std::uint32_t> DeviceGraph::add_vertices(const Context& ctx, std::uint32_t count) {
  const std::uint64_t first = s_->n;
  if (first + count > kMaxGraphVertices) {
    return absl::ResourceExhaustedError(
        absl::StrCat("DeviceGraph: ", first + count, " vertices > ", kMaxGraphVertices));
  }
  s_->adopt_stream(ctx.stream);
  if (absl::Status st = s_->resize_vertices(static_cast<std::uint32_t>(first + count)); !st.ok()) {
    return st;
  }
  return static_cast<std::uint32_t>(first);
}

absl::Status DeviceGraph::reserve_batch(const Context& ctx, std::size_t count) {
  s_->adopt_stream(ctx.stream);
  return s_->ensure_batch(count);
}

absl::Status DeviceGraph::to_dense(const Context& ctx, const std::int32_t* slot_rows,
                                   std::int64_t rows, float* out) {
  State& s = *s_;
  s.adopt_stream(ctx.stream);
  const cudaStream_t stream = ctx.stream;
  if (rows < 0) return absl::InvalidArgumentError(absl::StrCat("to_dense: rows = ", rows));
  if (rows == 0) return absl::OkStatus();
  detail::fill_inf_kernel<<<blocks_for(std::min<std::size_t>(static_cast<std::size_t>(rows) * rows,
                                                             std::size_t{1} << 24)),
                            kBlock, 0, stream>>>(out, static_cast<long long>(rows) * rows);
  GC_CUDA_CHECK_LAUNCH("fill_inf_kernel");
  if (s.n != 0 && s.pool.data() != nullptr) {
    detail::dense_kernel<<<warp_blocks(s.n), kBlock, 0, stream>>>(s.n, s.va(), s.pool.data(),
                                                                  slot_rows, rows, out);
    GC_CUDA_CHECK_LAUNCH("dense_kernel");
  }
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

absl::StatusOr<SsspInfo> DeviceGraph::sssp(const Context& ctx, std::uint32_t source, float* dist,
                                           std::int32_t* parent, StopToken stop) {
  State& s = *s_;
  s.adopt_stream(ctx.stream);
  const cudaStream_t stream = ctx.stream;
  if (source >= s.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeviceGraph::sssp: source slot ", source, " of ", s.n));
  }
  if (dist == nullptr || parent == nullptr) {
    return absl::InvalidArgumentError("DeviceGraph::sssp: dist and parent must not be null");
  }
  // The search does not need rows sorted: the CSR in slot order will do.
  absl::StatusOr<State::DeviceCsr> csr = s.build_csr();
  if (!csr.ok()) return csr.status();
  const std::uint64_t m = s.num_edges;
  DeviceArray<float> dist_dev;
  DeviceArray<std::int32_t> parent_dev;
  if (absl::Status e = s.allocate(dist_dev, s.n); !e.ok()) return e;
  if (absl::Status e = s.allocate(parent_dev, s.n); !e.ok()) return e;
  const std::size_t ws_bytes = sssp_workspace_bytes(s.n, static_cast<std::int64_t>(m));
  absl::StatusOr<DeviceBuffer> ws = DeviceBuffer::create(ws_bytes, stream, s.memory);
  if (!ws.ok()) return ws.status();
  const CsrView view{static_cast<std::int64_t>(s.n), static_cast<std::int64_t>(m),
                     reinterpret_cast<const std::uint64_t*>(csr->offsets.data()), csr->cols.data(),
                     csr->weights.data()};
  absl::StatusOr<SsspInfo> info =
      kernels::cuda::sssp(ctx, view, source, dist_dev.data(), parent_dev.data(), ws->data(),
                          ws->size(), std::move(stop));
  if (!info.ok()) return info.status();
  GC_CUDA_TRY(
      cudaMemcpyAsync(dist, dist_dev.data(), s.n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  GC_CUDA_TRY(cudaMemcpyAsync(parent, parent_dev.data(), s.n * sizeof(std::int32_t),
                              cudaMemcpyDeviceToHost, stream));
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  return info;
}

absl::StatusOr<HostCsr> DeviceGraph::export_csr(const Context& ctx) {
  State& s = *s_;
  s.adopt_stream(ctx.stream);
  const cudaStream_t stream = ctx.stream;
  HostCsr csr;
  csr.num_vertices = s.n;
  csr.row_offsets.assign(static_cast<std::size_t>(s.n) + 1, 0);
  if (s.n == 0) return csr;
  absl::StatusOr<State::DeviceCsr> dev = s.build_csr();
  if (!dev.ok()) return dev.status();
  const std::uint64_t total = s.num_edges;
  csr.cols.resize(total);
  csr.weights.resize(total);
  GC_CUDA_TRY(cudaMemcpyAsync(csr.row_offsets.data() + 1, dev->offsets.data() + 1,
                              s.n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, stream));
  if (total != 0) {
    GC_CUDA_TRY(cudaMemcpyAsync(csr.cols.data(), dev->cols.data(), total * sizeof(std::uint32_t),
                                cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaMemcpyAsync(csr.weights.data(), dev->weights.data(), total * sizeof(float),
                                cudaMemcpyDeviceToHost, stream));
  }
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  // Rows come out in slot order; sort each by dst.
  std::vector<std::pair<std::uint32_t, float>> row;
  for (std::uint32_t v = 0; v < csr.num_vertices; ++v) {
    const std::uint64_t b = csr.row_offsets[v], e = csr.row_offsets[v + 1];
    row.clear();
    for (std::uint64_t k = b; k < e; ++k) row.emplace_back(csr.cols[k], csr.weights[k]);
    std::sort(row.begin(), row.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (std::uint64_t k = b; k < e; ++k) {
      csr.cols[k] = row[k - b].first;
      csr.weights[k] = row[k - b].second;
    }
  }
  return csr;
}

std::uint32_t DeviceGraph::num_vertices() const {
  return s_->n;
}
std::uint64_t DeviceGraph::num_edges() const {
  return s_->num_edges;
}
std::uint64_t DeviceGraph::pool_capacity() const {
  return s_->pool.size();
}
std::uint64_t DeviceGraph::pool_used() const {
  return s_->pool_used;
}
const GraphOptions& DeviceGraph::options() const {
  return s_->opt;
}

}  // namespace gcompute::kernels::cuda
