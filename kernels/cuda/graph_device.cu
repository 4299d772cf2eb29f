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

template <class T>
absl::Status device_alloc(T** p, std::size_t count) {
  *p = nullptr;
  if (count == 0) return absl::OkStatus();
  GC_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(p), count * sizeof(T)));
  return absl::OkStatus();
}

template <class T>
void device_free(T*& p) {
  if (p != nullptr) cudaFree(p);
  p = nullptr;
}

absl::Status validate_options(const GraphOptions& o) {
  if (o.min_capacity < 1 || !(o.grow_load > 0.0f) || !(o.grow_load <= o.max_load) ||
      !(o.max_load < 1.0f) || !(o.pool_slack >= 0.0f)) {
    return absl::InvalidArgumentError(
        "GraphOptions: need min_capacity >= 1, 0 < grow_load <= max_load < 1, pool_slack >= 0");
  }
  return absl::OkStatus();
}

}  // namespace

struct DeviceGraph::State {
  GraphOptions opt;
  std::uint32_t n = 0;
  std::uint32_t n_cap = 0;  // allocated length of the per-vertex arrays
  VertexArrays va{};
  unsigned long long* pool = nullptr;
  std::uint64_t pool_cap = 0;
  std::uint64_t pool_used = 0;
  std::uint64_t garbage = 0;  // slots of abandoned tables inside [0, pool_used)
  std::uint64_t num_edges = 0;

  // Batch scratch, grown on demand.
  std::size_t batch_cap = 0;
  unsigned long long* keys_in = nullptr;
  unsigned long long* keys_out = nullptr;
  std::uint32_t* idx_in = nullptr;
  std::uint32_t* idx_out = nullptr;
  std::uint32_t* list = nullptr;
  unsigned long long* new_cap = nullptr;
  unsigned long long* new_end = nullptr;
  void* cub_tmp = nullptr;
  std::size_t cub_bytes = 0;
  Counters* counters = nullptr;       // device
  Counters* host_counters = nullptr;  // pinned

  ~State() {
    device_free(va.offset);
    device_free(va.cap);
    device_free(va.live);
    device_free(va.used);
    device_free(va.pending);
    device_free(pool);
    free_scratch();
    device_free(counters);
    if (host_counters != nullptr) cudaFreeHost(host_counters);
  }

  void free_scratch() {
    device_free(keys_in);
    device_free(keys_out);
    device_free(idx_in);
    device_free(idx_out);
    device_free(list);
    device_free(new_cap);
    device_free(new_end);
    if (cub_tmp != nullptr) cudaFree(cub_tmp);
    cub_tmp = nullptr;
    cub_bytes = 0;
    batch_cap = 0;
  }

  int dst_bits() const { return std::max(1, static_cast<int>(std::bit_width(n > 0 ? n - 1 : 0u))); }
  int key_bits() const { return dst_bits() + static_cast<int>(std::bit_width(n)); }

  absl::Status ensure_cub(std::size_t bytes) {
    if (bytes <= cub_bytes) return absl::OkStatus();
    if (cub_tmp != nullptr) cudaFree(cub_tmp);
    cub_tmp = nullptr;
    cub_bytes = 0;
    GC_CUDA_TRY(cudaMalloc(&cub_tmp, bytes));
    cub_bytes = bytes;
    return absl::OkStatus();
  }

  absl::Status ensure_batch(std::size_t count) {
    if (count <= batch_cap) return absl::OkStatus();
    free_scratch();
    const std::size_t c = std::max<std::size_t>(count, 1024);
    if (absl::Status s = device_alloc(&keys_in, c); !s.ok()) return s;
    if (absl::Status s = device_alloc(&keys_out, c); !s.ok()) return s;
    if (absl::Status s = device_alloc(&idx_in, c); !s.ok()) return s;
    if (absl::Status s = device_alloc(&idx_out, c); !s.ok()) return s;
    if (absl::Status s = device_alloc(&list, c); !s.ok()) return s;
    if (absl::Status s = device_alloc(&new_cap, c); !s.ok()) return s;
    if (absl::Status s = device_alloc(&new_end, c); !s.ok()) return s;
    std::size_t sort_bytes = 0, scan_bytes = 0;
    GC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys_in, keys_out, idx_in,
                                                idx_out, c, 0, 64));
    GC_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, new_cap, new_end, c));
    if (absl::Status s = ensure_cub(std::max(sort_bytes, scan_bytes)); !s.ok()) return s;
    batch_cap = c;
    return absl::OkStatus();
  }

  absl::Status read_counters(cudaStream_t stream) {
    GC_CUDA_TRY(
        cudaMemcpyAsync(host_counters, counters, sizeof(Counters), cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    return absl::OkStatus();
  }

  /// Builds the sort keys (counting invalid elements on the device) and sorts them; no sync.
  absl::Status prepare(cudaStream_t stream, const GraphEdge* edges, std::size_t count) {
    if (absl::Status s = ensure_batch(count); !s.ok()) return s;
    GC_CUDA_TRY(cudaMemsetAsync(counters, 0, sizeof(Counters), stream));
    detail::make_keys_kernel<<<blocks_for(count), kBlock, 0, stream>>>(edges, count, n, dst_bits(),
                                                                       keys_in, idx_in, counters);
    GC_CUDA_CHECK_LAUNCH("make_keys_kernel");
    std::size_t bytes = cub_bytes;
    GC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(cub_tmp, bytes, keys_in, keys_out, idx_in, idx_out,
                                                count, 0, key_bits(), stream));
    return absl::OkStatus();
  }

  /// Enlarges the m listed tables (their ids are in `list`), appending them to the pool, or
  /// repacks every table into a new pool when the tail is too short.
  absl::Status grow(cudaStream_t stream, std::size_t m, GraphBatchResult& result) {
    detail::new_caps_kernel<<<blocks_for(m), kBlock, 0, stream>>>(list, m, va, opt, new_cap);
    GC_CUDA_CHECK_LAUNCH("new_caps_kernel");
    std::size_t bytes = cub_bytes;
    GC_CUDA_TRY(cub::DeviceScan::InclusiveSum(cub_tmp, bytes, new_cap, new_end, m, stream));
    unsigned long long total = 0;
    GC_CUDA_TRY(
        cudaMemcpyAsync(&total, new_end + (m - 1), sizeof(total), cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    result.grown_vertices = m;
    if (pool_used + total <= pool_cap && garbage <= pool_used / 2) {
      GC_CUDA_TRY(
          cudaMemsetAsync(pool + pool_used, 0xFF, total * sizeof(unsigned long long), stream));
      detail::rehash_kernel<<<warp_blocks(m), kBlock, 0, stream>>>(list, m, va, new_cap, new_end,
                                                                   pool_used, pool, pool, counters);
      GC_CUDA_CHECK_LAUNCH("rehash_kernel");
      pool_used += total;
      return absl::OkStatus();
    }
    return rebuild(stream, result);
  }

  /// Repacks every table (enlarging the overflowing ones) into a new pool with slack.
  absl::Status rebuild(cudaStream_t stream, GraphBatchResult& result) {
    result.rebuilt = true;
    unsigned long long* caps = nullptr;
    unsigned long long* ends = nullptr;
    void* tmp = nullptr;
    unsigned long long* fresh = nullptr;
    auto cleanup = [&] {
      device_free(caps);
      device_free(ends);
      if (tmp != nullptr) cudaFree(tmp);
      device_free(fresh);
    };
    absl::Status st = [&]() -> absl::Status {
      if (absl::Status s = device_alloc(&caps, n); !s.ok()) return s;
      if (absl::Status s = device_alloc(&ends, n); !s.ok()) return s;
      std::size_t tmp_bytes = 0;
      GC_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, tmp_bytes, caps, ends, n));
      GC_CUDA_TRY(cudaMalloc(&tmp, std::max<std::size_t>(tmp_bytes, 1)));
      detail::new_caps_kernel<<<blocks_for(n), kBlock, 0, stream>>>(nullptr, n, va, opt, caps);
      GC_CUDA_CHECK_LAUNCH("new_caps_kernel");
      GC_CUDA_TRY(cub::DeviceScan::InclusiveSum(tmp, tmp_bytes, caps, ends, n, stream));
      unsigned long long total = 0;
      GC_CUDA_TRY(
          cudaMemcpyAsync(&total, ends + (n - 1), sizeof(total), cudaMemcpyDeviceToHost, stream));
      GC_CUDA_TRY(cudaStreamSynchronize(stream));
      const std::uint64_t new_cap_slots = std::max<std::uint64_t>(
          total + static_cast<std::uint64_t>(static_cast<double>(total) * opt.pool_slack), 1);
      if (absl::Status s = device_alloc(&fresh, new_cap_slots); !s.ok()) return s;
      GC_CUDA_TRY(cudaMemsetAsync(fresh, 0xFF, total * sizeof(unsigned long long), stream));
      detail::rehash_kernel<<<warp_blocks(n), kBlock, 0, stream>>>(nullptr, n, va, caps, ends, 0,
                                                                   pool, fresh, counters);
      GC_CUDA_CHECK_LAUNCH("rehash_kernel");
      GC_CUDA_TRY(cudaStreamSynchronize(stream));
      device_free(pool);
      pool = fresh;
      fresh = nullptr;
      pool_cap = new_cap_slots;
      pool_used = total;
      garbage = 0;
      return absl::OkStatus();
    }();
    cleanup();
    return st;
  }

  absl::Status resize_vertices(cudaStream_t stream, std::uint32_t new_n) {
    if (new_n <= n_cap) {
      if (new_n > n) {
        const std::size_t k = new_n - n;
        GC_CUDA_TRY(cudaMemsetAsync(va.offset + n, 0, k * sizeof(unsigned long long), stream));
        GC_CUDA_TRY(cudaMemsetAsync(va.cap + n, 0, k * sizeof(std::uint32_t), stream));
        GC_CUDA_TRY(cudaMemsetAsync(va.live + n, 0, k * sizeof(std::uint32_t), stream));
        GC_CUDA_TRY(cudaMemsetAsync(va.used + n, 0, k * sizeof(std::uint32_t), stream));
        GC_CUDA_TRY(cudaMemsetAsync(va.pending + n, 0, k * sizeof(std::uint32_t), stream));
      }
      n = new_n;
      return absl::OkStatus();
    }
    const std::uint32_t cap = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        kMaxGraphVertices, std::max<std::uint64_t>(new_n, 2 * std::uint64_t{n_cap})));
    VertexArrays next{};
    absl::Status st = [&]() -> absl::Status {
      if (absl::Status s = device_alloc(&next.offset, cap); !s.ok()) return s;
      if (absl::Status s = device_alloc(&next.cap, cap); !s.ok()) return s;
      if (absl::Status s = device_alloc(&next.live, cap); !s.ok()) return s;
      if (absl::Status s = device_alloc(&next.used, cap); !s.ok()) return s;
      if (absl::Status s = device_alloc(&next.pending, cap); !s.ok()) return s;
      if (cap == 0) return absl::OkStatus();
      GC_CUDA_TRY(cudaMemsetAsync(next.offset, 0, cap * sizeof(unsigned long long), stream));
      GC_CUDA_TRY(cudaMemsetAsync(next.cap, 0, cap * sizeof(std::uint32_t), stream));
      GC_CUDA_TRY(cudaMemsetAsync(next.live, 0, cap * sizeof(std::uint32_t), stream));
      GC_CUDA_TRY(cudaMemsetAsync(next.used, 0, cap * sizeof(std::uint32_t), stream));
      GC_CUDA_TRY(cudaMemsetAsync(next.pending, 0, cap * sizeof(std::uint32_t), stream));
      if (n > 0) {
        GC_CUDA_TRY(cudaMemcpyAsync(next.offset, va.offset, n * sizeof(unsigned long long),
                                    cudaMemcpyDeviceToDevice, stream));
        GC_CUDA_TRY(cudaMemcpyAsync(next.cap, va.cap, n * sizeof(std::uint32_t),
                                    cudaMemcpyDeviceToDevice, stream));
        GC_CUDA_TRY(cudaMemcpyAsync(next.live, va.live, n * sizeof(std::uint32_t),
                                    cudaMemcpyDeviceToDevice, stream));
        GC_CUDA_TRY(cudaMemcpyAsync(next.used, va.used, n * sizeof(std::uint32_t),
                                    cudaMemcpyDeviceToDevice, stream));
      }
      GC_CUDA_TRY(cudaStreamSynchronize(stream));
      return absl::OkStatus();
    }();
    if (!st.ok()) {
      device_free(next.offset);
      device_free(next.cap);
      device_free(next.live);
      device_free(next.used);
      device_free(next.pending);
      return st;
    }
    device_free(va.offset);
    device_free(va.cap);
    device_free(va.live);
    device_free(va.used);
    device_free(va.pending);
    va = next;
    n_cap = cap;
    n = new_n;
    return absl::OkStatus();
  }

  void fill_counts(GraphBatchResult& r) const {
    r.inserted = host_counters->inserted;
    r.updated = host_counters->updated;
    r.removed = host_counters->removed;
    r.missing = host_counters->missing;
    r.superseded = host_counters->superseded;
  }

  absl::Status reject(cudaStream_t stream, const GraphEdge* edges, std::size_t count,
                      EdgeStatus* status) {
    if (status != nullptr) {
      detail::mark_invalid_kernel<<<blocks_for(count), kBlock, 0, stream>>>(edges, count, n,
                                                                            status);
      GC_CUDA_CHECK_LAUNCH("mark_invalid_kernel");
      GC_CUDA_TRY(cudaStreamSynchronize(stream));
    }
    return absl::InvalidArgumentError(absl::StrCat("DeviceGraph: ", host_counters->invalid, " of ",
                                                   count, " edges have src or dst >= ", n));
  }
};

DeviceGraph::DeviceGraph(std::unique_ptr<State> state) : s_(std::move(state)) {}
DeviceGraph::DeviceGraph(DeviceGraph&&) noexcept = default;
DeviceGraph& DeviceGraph::operator=(DeviceGraph&&) noexcept = default;
DeviceGraph::~DeviceGraph() = default;

absl::StatusOr<DeviceGraph> DeviceGraph::create(const Context& ctx, std::uint32_t num_vertices,
                                                GraphOptions options) {
  if (num_vertices > kMaxGraphVertices) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeviceGraph: num_vertices ", num_vertices, " > ", kMaxGraphVertices));
  }
  if (absl::Status s = validate_options(options); !s.ok()) return s;
  auto st = std::make_unique<State>();
  st->opt = options;
  if (absl::Status s = device_alloc(&st->counters, 1); !s.ok()) return s;
  GC_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&st->host_counters), sizeof(Counters)));
  if (absl::Status s = st->resize_vertices(ctx.stream, num_vertices); !s.ok()) return s;
  return DeviceGraph(std::move(st));
}

absl::StatusOr<GraphBatchResult> DeviceGraph::insert_edges(const Context& ctx,
                                                           const GraphEdge* edges,
                                                           std::size_t count, EdgeStatus* status) {
  GraphBatchResult result;
  if (count == 0) return result;
  if (count > 0xFFFFFFFFull) return absl::InvalidArgumentError("DeviceGraph: batch over 2^32-1");
  State& s = *s_;
  const cudaStream_t stream = ctx.stream;
  if (absl::Status st = s.prepare(stream, edges, count); !st.ok()) return st;
  detail::count_pending_kernel<<<blocks_for(count), kBlock, 0, stream>>>(
      s.keys_out, count, s.n, s.dst_bits(), s.va, s.opt.max_load, s.list, s.counters);
  GC_CUDA_CHECK_LAUNCH("count_pending_kernel");
  if (absl::Status st = s.read_counters(stream); !st.ok()) return st;
  if (s.host_counters->invalid != 0) return s.reject(stream, edges, count, status);
  if (const std::size_t m = s.host_counters->overflow; m != 0) {
    if (absl::Status st = s.grow(stream, m, result); !st.ok()) return st;
  }
  detail::insert_kernel<<<blocks_for(count), kBlock, 0, stream>>>(
      s.keys_out, s.idx_out, count, s.n, s.dst_bits(), edges, s.va, s.pool, status, s.counters);
  GC_CUDA_CHECK_LAUNCH("insert_kernel");
  if (absl::Status st = s.read_counters(stream); !st.ok()) return st;
  s.fill_counts(result);
  s.garbage += s.host_counters->garbage;
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
  const cudaStream_t stream = ctx.stream;
  if (absl::Status st = s.prepare(stream, edges, count); !st.ok()) return st;
  // The kernel checks the invalid count itself, so a valid batch needs only the final sync.
  detail::modify_kernel<<<blocks_for(count), kBlock, 0, stream>>>(s.keys_out, s.idx_out, count, s.n,
                                                                  s.dst_bits(), edges, s.va, s.pool,
                                                                  remove, status, s.counters);
  GC_CUDA_CHECK_LAUNCH("modify_kernel");
  if (absl::Status st = s.read_counters(stream); !st.ok()) return st;
  if (s.host_counters->invalid != 0) return s.reject(stream, edges, count, status);
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
  if (absl::Status st = s_->resize_vertices(ctx.stream, static_cast<std::uint32_t>(first + count));
      !st.ok())
    return st;
  return static_cast<std::uint32_t>(first);
}

absl::Status DeviceGraph::reserve_batch(const Context&, std::size_t count) {
  return s_->ensure_batch(count);
}

absl::StatusOr<HostCsr> DeviceGraph::export_csr(const Context& ctx) {
  State& s = *s_;
  const cudaStream_t stream = ctx.stream;
  HostCsr csr;
  csr.num_vertices = s.n;
  csr.row_offsets.assign(static_cast<std::size_t>(s.n) + 1, 0);
  if (s.n == 0) return csr;
  unsigned long long* wide = nullptr;
  unsigned long long* ends = nullptr;
  void* tmp = nullptr;
  std::uint32_t* cols = nullptr;
  float* weights = nullptr;
  absl::Status st = [&]() -> absl::Status {
    if (absl::Status e = device_alloc(&wide, s.n); !e.ok()) return e;
    if (absl::Status e = device_alloc(&ends, s.n); !e.ok()) return e;
    std::size_t tmp_bytes = 0;
    GC_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, tmp_bytes, wide, ends, s.n));
    GC_CUDA_TRY(cudaMalloc(&tmp, std::max<std::size_t>(tmp_bytes, 1)));
    detail::widen_kernel<<<blocks_for(s.n), kBlock, 0, stream>>>(s.va.live, s.n, wide);
    GC_CUDA_CHECK_LAUNCH("widen_kernel");
    GC_CUDA_TRY(cub::DeviceScan::InclusiveSum(tmp, tmp_bytes, wide, ends, s.n, stream));
    GC_CUDA_TRY(cudaMemcpyAsync(csr.row_offsets.data() + 1, ends, s.n * sizeof(std::uint64_t),
                                cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    const std::uint64_t total = csr.row_offsets.back();
    if (total != s.num_edges) {
      return absl::InternalError(absl::StrCat("DeviceGraph: per-vertex counts sum to ", total,
                                              " but ", s.num_edges, " edges were recorded"));
    }
    csr.cols.resize(total);
    csr.weights.resize(total);
    if (total == 0) return absl::OkStatus();
    if (absl::Status e = device_alloc(&cols, total); !e.ok()) return e;
    if (absl::Status e = device_alloc(&weights, total); !e.ok()) return e;
    detail::export_kernel<<<warp_blocks(s.n), kBlock, 0, stream>>>(s.n, s.va, s.pool, ends, cols,
                                                                   weights);
    GC_CUDA_CHECK_LAUNCH("export_kernel");
    GC_CUDA_TRY(cudaMemcpyAsync(csr.cols.data(), cols, total * sizeof(std::uint32_t),
                                cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaMemcpyAsync(csr.weights.data(), weights, total * sizeof(float),
                                cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    return absl::OkStatus();
  }();
  device_free(wide);
  device_free(ends);
  if (tmp != nullptr) cudaFree(tmp);
  device_free(cols);
  device_free(weights);
  if (!st.ok()) return st;
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
  return s_->pool_cap;
}
std::uint64_t DeviceGraph::pool_used() const {
  return s_->pool_used;
}
const GraphOptions& DeviceGraph::options() const {
  return s_->opt;
}

}  // namespace gcompute::kernels::cuda
