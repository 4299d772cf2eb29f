// SPDX-License-Identifier: Apache-2.0
// Device-resident dynamic graph: the same batch-edit contract as cpu::DynamicGraph
// (graph_batch_types.hpp), applied on the GPU in one pass per batch, lock-free.
//
// Layout: every vertex v owns an open-addressing (linear probing) hash table of 2^k 64-bit
// slots inside one flat slot pool: offset[v], capacity[v]. A slot packs dst (high 32 bits)
// and the f32 weight bits (low 32), so one 64-bit atomicCAS publishes key and weight together;
// deletions leave a tombstone key that later insertions reuse.
//
// A batch runs as: build (src, dst) sort keys and validate -> cub::DeviceRadixSort (stable, so
// the last occurrence of a duplicated key is last in its run) -> count the batch's distinct
// keys per source with warp-aggregated atomics, listing every vertex the batch would push past
// max_load -> one small device-to-host read (invalid count, overflow count) -> if any overflow:
// enlarge the listed tables (new capacities, cub::DeviceScan for offsets, rehash into space
// appended to the pool; when the pool is full, repack every table into a new pool) -> one
// thread per distinct key probes its table and inserts with atomicCAS, or overwrites its weight.
// No in-kernel allocation, no locks: the only contention is CAS on a free slot, retried.
//
// Memory: a growing container, so unlike the stateless kernels it allocates: from the
// MemoryResource given at creation, ordered on the stream of the call that needs the memory,
// and freed on the stream of the latest call (growth of the pool and of the batch scratch is
// rare and amortised). The per-batch counters are read back through a small pinned buffer.
// Entry points take the caller's stream in Context and never create one. Not thread-safe: one
// caller at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/cuda/memory.hpp"
#include "gcompute/kernels/graph_batch_types.hpp"
#include "gcompute/kernels/sssp_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cuda {

class DeviceGraph {
 public:
  /// An edgeless graph of num_vertices vertices (no slot pool yet) whose memory comes from
  /// `memory` (on ctx.device) for its whole life. INVALID_ARGUMENT for num_vertices >
  /// kMaxGraphVertices or inconsistent options; RESOURCE_EXHAUSTED if out of device or pinned
  /// memory.
  static absl::StatusOr<DeviceGraph> create(const Context& ctx, const MemoryResource& memory,
                                            std::uint32_t num_vertices, GraphOptions options = {});

  DeviceGraph(DeviceGraph&&) noexcept;
  DeviceGraph& operator=(DeviceGraph&&) noexcept;
  ~DeviceGraph();

  /// Upserts `count` edges read from device memory `edges` (see GraphBatchResult for the
  /// semantics). `status`, if not null, is device memory for `count` EdgeStatus values, in
  /// input order. Synchronises the stream twice (three times when tables grow) to read the
  /// counts that decide growth; returns when the batch is applied.
  absl::StatusOr<GraphBatchResult> insert_edges(const Context& ctx, const GraphEdge* edges,
                                                std::size_t count, EdgeStatus* status = nullptr);
  /// Deletes the listed (src, dst) pairs (weights ignored) by leaving tombstones.
  absl::StatusOr<GraphBatchResult> delete_edges(const Context& ctx, const GraphEdge* edges,
                                                std::size_t count, EdgeStatus* status = nullptr);
  /// Overwrites the weights of existing edges; absent ones are reported, not inserted.
  absl::StatusOr<GraphBatchResult> update_weights(const Context& ctx, const GraphEdge* edges,
                                                  std::size_t count, EdgeStatus* status = nullptr);

  /// Appends `count` isolated vertices; returns the first new index.
  absl::StatusOr<std::uint32_t> add_vertices(const Context& ctx, std::uint32_t count);

  /// Allocates the batch scratch for batches of up to `count` edges now, so that the first
  /// batch of that size does not pay for the allocation.
  absl::Status reserve_batch(const Context& ctx, std::size_t count);

  /// The live edges as a dense rows x rows f32 weight matrix in device memory `out` (row-major):
  /// +inf where there is no edge, out[slot_rows[s]][slot_rows[d]] = the weight of s -> d.
  /// `slot_rows` is device memory of num_vertices() entries, -1 for a slot left out (rows must
  /// be distinct and < rows). Returns when `out` is written.
  absl::Status to_dense(const Context& ctx, const std::int32_t* slot_rows, std::int64_t rows,
                        float* out);
  /// Copies the live edges to the host as CSR, rows sorted by dst.
  absl::StatusOr<HostCsr> export_csr(const Context& ctx);

  /// Shortest paths from slot `source` over the live edges (cuda::sssp's contract), with the
  /// CSR built on the device from the tables: nothing crosses to the host but the results,
  /// written to host memory `dist` and `parent` (num_vertices() entries each, parents as
  /// slots). Scratch comes from the graph's memory and is freed before it returns.
  absl::StatusOr<SsspInfo> sssp(const Context& ctx, std::uint32_t source, float* dist,
                                std::int32_t* parent, StopToken stop = {});

  std::uint32_t num_vertices() const;
  std::uint64_t num_edges() const;
  /// Slots in the pool (allocated), and those handed to tables so far (live, tombstones,
  /// free, and abandoned tables not yet repacked).
  std::uint64_t pool_capacity() const;
  std::uint64_t pool_used() const;
  const GraphOptions& options() const;

  struct State;

 private:
  explicit DeviceGraph(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace gcompute::kernels::cuda
