// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/pinned_transpose.hpp"

#include <algorithm>
#include <utility>

#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/transpose.hpp"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server::cuda {

namespace {

/// Part `i` of `length` cut into `parts` equal parts (the first length % parts one longer).
std::pair<std::int64_t, std::int64_t> part(std::int64_t length, std::int64_t parts,
                                           std::int64_t i) {
  const std::int64_t base = length / parts, longer = length % parts;
  return {i * base + std::min(i, longer), base + (i < longer ? 1 : 0)};
}

}  // namespace

TransposeTiles plan_transpose_tiles(const kernels::TransposeShape& shape,
                                    std::uint64_t target_bytes, std::uint64_t min_row_bytes) {
  TransposeTiles plan;
  if (shape.batch <= 0 || shape.rows <= 0 || shape.cols <= 0) return plan;
  const std::uint64_t matrix_bytes = static_cast<std::uint64_t>(shape.rows) *
                                     static_cast<std::uint64_t>(shape.cols) * shape.element_bytes;
  target_bytes = std::max<std::uint64_t>(target_bytes, 1);
  if (matrix_bytes <= target_bytes) {
    const auto per_tile =
        static_cast<std::int64_t>(std::max<std::uint64_t>(1, target_bytes / matrix_bytes));
    for (std::int64_t m = 0; m < shape.batch; m += per_tile) {
      plan.tiles.push_back({m, std::min(per_tile, shape.batch - m), 0, shape.rows, 0, shape.cols});
    }
  } else {
    const auto min_edge =
        static_cast<std::int64_t>((min_row_bytes + shape.element_bytes - 1) / shape.element_bytes);
    const auto wanted = static_cast<std::int64_t>((matrix_bytes + target_bytes - 1) / target_bytes);
    // A side is cut only into parts of at least min_edge elements; rows first.
    const std::int64_t row_parts =
        std::min(wanted, std::max<std::int64_t>(1, shape.rows / min_edge));
    const std::int64_t col_parts = std::min((wanted + row_parts - 1) / row_parts,
                                            std::max<std::int64_t>(1, shape.cols / min_edge));
    for (std::int64_t m = 0; m < shape.batch; ++m) {
      for (std::int64_t i = 0; i < row_parts; ++i) {
        const auto [row0, rows] = part(shape.rows, row_parts, i);
        for (std::int64_t j = 0; j < col_parts; ++j) {
          const auto [col0, cols] = part(shape.cols, col_parts, j);
          plan.tiles.push_back({m, 1, row0, rows, col0, cols});
        }
      }
    }
  }
  for (const TransposeTile& t : plan.tiles) {
    plan.max_tile_bytes = std::max(plan.max_tile_bytes, t.bytes(shape));
  }
  return plan;
}

std::uint64_t default_transpose_tile_bytes(std::uint64_t total_bytes) {
  return std::clamp<std::uint64_t>(total_bytes / 16, 4ull << 20, 64ull << 20);
}

namespace {

absl::Status issue_tiles(const kernels::cuda::Context& ctx, cudaStream_t upload,
                         const StagingEvents& events, const TransposeSlots& slots,
                         const std::byte* src, std::byte* dst, const kernels::TransposeShape& shape,
                         const TransposeTiles& plan) {
  const cudaStream_t main = ctx.stream.value();
  const std::uint64_t e = shape.element_bytes;
  const auto rows = static_cast<std::uint64_t>(shape.rows);
  const auto cols = static_cast<std::uint64_t>(shape.cols);
  // The slots were allocated stream-ordered on the main stream (whose pool may hand out memory
  // whose free on another stream it made only the main stream wait for): uploads start after it.
  GC_CUDA_TRY(cudaEventRecord(events[0].value(), main));
  GC_CUDA_TRY(cudaStreamWaitEvent(upload, events[0].value(), 0));
  for (std::size_t k = 0; k < plan.tiles.size(); ++k) {
    const TransposeTile& t = plan.tiles[k];
    const std::size_t s = k % 2;
    const auto m = static_cast<std::uint64_t>(t.matrix);
    const auto row0 = static_cast<std::uint64_t>(t.row0);
    const auto col0 = static_cast<std::uint64_t>(t.col0);
    const auto tile_rows = static_cast<std::uint64_t>(t.rows);
    const auto tile_cols = static_cast<std::uint64_t>(t.cols);
    // One event per slot serves both streams: each wait below takes the record issued just
    // before it (the upload of this tile; on the upload stream, the transpose of tile k - 2,
    // the last reader of this slot's input buffer).
    const cudaEvent_t slot_event = events[s].value();
    if (k >= 2) GC_CUDA_TRY(cudaStreamWaitEvent(upload, slot_event, 0));
    const std::byte* from = src + ((m * rows + row0) * cols + col0) * e;
    if (t.full_rows(shape)) {
      GC_CUDA_TRY(
          cudaMemcpyAsync(slots.in[s], from, t.bytes(shape), cudaMemcpyHostToDevice, upload));
    } else {
      GC_CUDA_TRY(cudaMemcpy2DAsync(slots.in[s], tile_cols * e, from, cols * e, tile_cols * e,
                                    tile_rows, cudaMemcpyHostToDevice, upload));
    }
    GC_CUDA_TRY(cudaEventRecord(slot_event, upload));
    GC_CUDA_TRY(cudaStreamWaitEvent(main, slot_event, 0));
    GC_RETURN_IF_ERROR(
        kernels::cuda::transpose(ctx, slots.in[s], slots.out[s], {t.matrices, t.rows, t.cols, e}));
    GC_CUDA_TRY(cudaEventRecord(slot_event, main));
    // The tile's result, tile_cols x tile_rows, is rows [col0, ...) and columns [row0, ...) of
    // the result.
    std::byte* to = dst + ((m * cols + col0) * rows + row0) * e;
    if (t.full_cols(shape)) {
      GC_CUDA_TRY(cudaMemcpyAsync(to, slots.out[s], t.bytes(shape), cudaMemcpyDeviceToHost, main));
    } else {
      GC_CUDA_TRY(cudaMemcpy2DAsync(to, rows * e, slots.out[s], tile_rows * e, tile_rows * e,
                                    tile_cols, cudaMemcpyDeviceToHost, main));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status transpose_pinned_host(const kernels::cuda::Context& ctx,
                                   kernels::cuda::StreamView upload, const StagingEvents& events,
                                   const TransposeSlots& slots, const std::byte* src,
                                   std::byte* dst, const kernels::TransposeShape& shape,
                                   const TransposeTiles& plan) {
  const absl::Status issued =
      issue_tiles(ctx, upload.value(), events, slots, src, dst, shape, plan);
  // Both streams, also after a failure: the caller frees the slots once this returns.
  const absl::Status uploaded = kernels::cuda::cuda_status(
      cudaStreamSynchronize(upload.value()), "cudaStreamSynchronize (upload)", __FILE__, __LINE__);
  const absl::Status finished = kernels::cuda::cuda_status(
      cudaStreamSynchronize(ctx.stream.value()), "cudaStreamSynchronize", __FILE__, __LINE__);
  if (!issued.ok()) return issued;
  if (!uploaded.ok()) return uploaded;
  return finished;
}

}  // namespace gcompute::server::cuda
