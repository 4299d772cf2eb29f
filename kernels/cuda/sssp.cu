// SPDX-License-Identifier: Apache-2.0
// cuda::sssp: frontier Bellman-Ford (device code in detail/sssp_kernels.cuh).
#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "detail/launch_helpers.hpp"
#include "detail/sssp_kernels.cuh"
#include "detail/workspace_carver.hpp"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/sssp.hpp"

namespace gcompute::kernels::cuda {
namespace {

using detail::SsspCounters;

constexpr int kThreads = 256;
// The first search for a parent cycle follows this round; the interval then doubles, so the
// searches (about log2(n) passes over n words each) cost a bounded share of the rounds.
constexpr std::int64_t kFirstCycleSearch = 8;

struct Buffers {
  SsspCounters* counters;
  unsigned long long* packed;  // distance key << 32 | parent
  unsigned* frontier;
  unsigned* next;
  unsigned* stamp;  // the round a vertex last joined a frontier for
  unsigned* jump;   // parent-cycle search
};

Buffers carve(std::int64_t n, detail::WorkspaceCarver& c) {
  Buffers b{};
  b.counters = c.take<SsspCounters>(1);
  b.packed = c.take<unsigned long long>(n);
  b.frontier = c.take<unsigned>(n);
  b.next = c.take<unsigned>(n);
  b.stamp = c.take<unsigned>(n);
  b.jump = c.take<unsigned>(n);
  return b;
}

absl::StatusOr<SsspCounters> read_counters(cudaStream_t stream, const SsspCounters* device) {
  SsspCounters host{};
  GC_CUDA_TRY(cudaMemcpyAsync(&host, device, sizeof host, cudaMemcpyDeviceToHost, stream));
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  return host;
}

template <typename T>
absl::StatusOr<T> read_one(cudaStream_t stream, const T* device) {
  T host{};
  GC_CUDA_TRY(cudaMemcpyAsync(&host, device, sizeof host, cudaMemcpyDeviceToHost, stream));
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  return host;
}

/// The arrays' first defect, worded as validate_sssp words it; OK when there is none.
absl::Status validate_on_device(cudaStream_t stream, const CsrView& g, const Buffers& b) {
  using Kind = CsrDefect::Kind;
  GC_ASSIGN_OR_RETURN(const std::uint64_t first, read_one(stream, g.row_offsets));
  if (first != 0) return csr_defect_status({Kind::kFirstOffset, 0, first}, g);
  const unsigned grid = detail::grid_1d(std::max(g.n, g.m), kThreads);
  detail::sssp_validate_kernel<<<grid, kThreads, 0, stream>>>(g.row_offsets, g.cols, g.weights, g.n,
                                                              g.m, b.counters);
  GC_CUDA_CHECK_LAUNCH("sssp validate");
  GC_ASSIGN_OR_RETURN(const SsspCounters found, read_counters(stream, b.counters));
  if (found.offset_order != detail::kNoIndex) {
    const auto v = static_cast<std::int64_t>(found.offset_order);
    GC_ASSIGN_OR_RETURN(const std::uint64_t at, read_one(stream, g.row_offsets + v));
    GC_ASSIGN_OR_RETURN(const std::uint64_t after, read_one(stream, g.row_offsets + v + 1));
    return csr_defect_status({Kind::kOffsetOrder, v, at, after}, g);
  }
  GC_ASSIGN_OR_RETURN(const std::uint64_t last, read_one(stream, g.row_offsets + g.n));
  if (last != static_cast<std::uint64_t>(g.m)) {
    return csr_defect_status({Kind::kLastOffset, g.n, last}, g);
  }
  if (found.column != detail::kNoIndex) {
    const auto e = static_cast<std::int64_t>(found.column);
    GC_ASSIGN_OR_RETURN(const std::uint32_t col, read_one(stream, g.cols + e));
    return csr_defect_status({Kind::kColumn, e, col}, g);
  }
  if (found.weight != detail::kNoIndex) {
    const auto e = static_cast<std::int64_t>(found.weight);
    GC_ASSIGN_OR_RETURN(const float w, read_one(stream, g.weights + e));
    return csr_defect_status({Kind::kWeight, e, 0, 0, w}, g);
  }
  return absl::OkStatus();
}

/// Searches the parent pointers for a cycle; a vertex on one lands in counters->cycle_vertex.
absl::Status search_parent_cycle(cudaStream_t stream, const Buffers& b, std::int64_t n,
                                 unsigned source) {
  const unsigned grid = detail::grid_1d(n, kThreads);
  detail::sssp_jump_init_kernel<<<grid, kThreads, 0, stream>>>(b.packed, b.jump, n, source);
  GC_CUDA_CHECK_LAUNCH("sssp parent-cycle search (init)");
  // 2^passes >= n: a pointer that survives has gone round a cycle.
  int passes = 1;
  while ((std::int64_t{1} << passes) < n) ++passes;
  for (int p = 0; p < passes; ++p) {
    detail::sssp_jump_kernel<<<grid, kThreads, 0, stream>>>(b.jump, n);
    GC_CUDA_CHECK_LAUNCH("sssp parent-cycle search (jump)");
  }
  detail::sssp_cycle_kernel<<<grid, kThreads, 0, stream>>>(b.jump, n, b.counters);
  GC_CUDA_CHECK_LAUNCH("sssp parent-cycle search (report)");
  return absl::OkStatus();
}

}  // namespace

std::size_t sssp_workspace_bytes(std::int64_t n, std::int64_t /*m*/) {
  if (n <= 0) return 0;
  detail::WorkspaceCarver c(nullptr);
  carve(n, c);
  return c.bytes();
}

absl::StatusOr<SsspInfo> sssp(const Context& ctx, const CsrView& graph, std::int64_t source,
                              float* dist, std::int32_t* parent, void* workspace,
                              std::size_t workspace_bytes, StopToken stop) {
  GC_RETURN_IF_ERROR(validate_sssp_shape(graph, source));
  if (dist == nullptr || parent == nullptr) {
    return absl::InvalidArgumentError("sssp: dist and parent must not be null");
  }
  const std::int64_t n = graph.n;
  const std::size_t needed = sssp_workspace_bytes(n, graph.m);
  if (workspace == nullptr || workspace_bytes < needed) {
    return absl::InvalidArgumentError(absl::StrCat("sssp: workspace of ", workspace_bytes, " bytes",
                                                   workspace == nullptr ? " (null)" : "",
                                                   ", needs ", needed, " for n = ", n));
  }
  const cudaStream_t stream = ctx.stream.value();
  detail::WorkspaceCarver carver(workspace);
  const Buffers b = carve(n, carver);

  // Counters: zero, except "none found" markers (all ones).
  GC_CUDA_TRY(cudaMemsetAsync(b.counters, 0, sizeof(SsspCounters), stream));
  GC_CUDA_TRY(cudaMemsetAsync(&b.counters->cycle_vertex, 0xFF, sizeof(unsigned), stream));
  GC_CUDA_TRY(
      cudaMemsetAsync(&b.counters->offset_order, 0xFF, 3 * sizeof(unsigned long long), stream));
  GC_RETURN_IF_ERROR(validate_on_device(stream, graph, b));

  const auto src = static_cast<unsigned>(source);
  const unsigned grid_n = detail::grid_1d(n, kThreads);
  detail::sssp_init_kernel<<<grid_n, kThreads, 0, stream>>>(b.packed, b.stamp, b.frontier, n, src);
  GC_CUDA_CHECK_LAUNCH("sssp init");

  SsspInfo info;
  unsigned* frontier = b.frontier;
  unsigned* next = b.next;
  std::uint64_t count = 1;
  std::int64_t next_search = kFirstCycleSearch;
  // Set once a round past the n-th still lowered a distance, which only a negative cycle allows.
  bool cycle_certain = false;
  SsspCounters seen{};
  while (count > 0) {
    ++info.rounds;
    GC_CUDA_TRY(cudaMemsetAsync(&b.counters->next_count, 0, sizeof(unsigned), stream));
    const unsigned grid = detail::grid_1d(static_cast<std::int64_t>(count) * 32, kThreads);
    detail::sssp_relax_kernel<<<grid, kThreads, 0, stream>>>(
        graph.row_offsets, graph.cols, graph.weights, frontier, static_cast<unsigned>(count), next,
        b.packed, b.stamp, static_cast<unsigned>(info.rounds + 1), src, b.counters);
    GC_CUDA_CHECK_LAUNCH("sssp relax");
    if (info.rounds >= next_search || cycle_certain) {
      GC_RETURN_IF_ERROR(search_parent_cycle(stream, b, n, src));
      if (info.rounds >= next_search) next_search *= 2;
    }
    GC_ASSIGN_OR_RETURN(seen, read_counters(stream, b.counters));
    if (seen.cycle_vertex != detail::kNoVertex) break;
    count = seen.next_count;
    if (info.rounds >= n && count > 0) cycle_certain = true;
    std::swap(frontier, next);
    if (stop.stop_requested()) {
      return absl::CancelledError(absl::StrCat("sssp cancelled after round ", info.rounds));
    }
  }
  if (seen.cycle_vertex == detail::kNoVertex && cycle_certain) {
    // Only when f32 rounding stalls the descent before the parent pointers close the cycle: a
    // last search, else a vertex of the last frontier (one still improving after n rounds).
    GC_RETURN_IF_ERROR(search_parent_cycle(stream, b, n, src));
    GC_ASSIGN_OR_RETURN(seen, read_counters(stream, b.counters));
    if (seen.cycle_vertex == detail::kNoVertex) {
      GC_ASSIGN_OR_RETURN(seen.cycle_vertex, read_one(stream, next));
    }
  }
  if (seen.cycle_vertex != detail::kNoVertex) {
    info.negative_cycle = true;
    info.cycle_vertex = seen.cycle_vertex;
  }
  info.relaxations = static_cast<std::int64_t>(seen.improvements);
  detail::sssp_finish_kernel<<<grid_n, kThreads, 0, stream>>>(b.packed, dist, parent, n);
  GC_CUDA_CHECK_LAUNCH("sssp finish");
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  return info;
}

}  // namespace gcompute::kernels::cuda
