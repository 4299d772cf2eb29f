// SPDX-License-Identifier: Apache-2.0
// A transpose from page-locked host memory into page-locked host memory (a same-host client's
// registered regions), in tiles: tile k's upload overlaps the transpose and the download of
// tile k - 1, so the two PCIe directions run at once instead of one after the other. A tile
// that covers only some rows (columns) of its matrix is downloaded (uploaded) as a strided
// copy, whose rows must be long for the copy to keep the link's rate: on an H200, 2D copies of
// 4 KiB rows ran at 33 GB/s with a 64 KiB pitch where whole copies ran at 55 GB/s, 8 KiB rows at
// 49 GB/s (docs/performance.md). Hence tiles of at least kMinRowBytes per split side.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "engine/cuda/lane.hpp"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/transpose_types.hpp"

namespace gcompute::server::cuda {

/// One piece of the work: rows [row0, row0 + rows) and columns [col0, col0 + cols) of
/// `matrices` matrices from `matrix` on (several matrices only when whole).
struct TransposeTile {
  std::int64_t matrix = 0;
  std::int64_t matrices = 1;
  std::int64_t row0 = 0;
  std::int64_t rows = 0;
  std::int64_t col0 = 0;
  std::int64_t cols = 0;

  /// All columns of its rows: the upload is one contiguous copy.
  bool full_rows(const kernels::TransposeShape& shape) const { return cols == shape.cols; }
  /// All rows of its columns: the download is one contiguous copy.
  bool full_cols(const kernels::TransposeShape& shape) const { return rows == shape.rows; }
  std::uint64_t bytes(const kernels::TransposeShape& shape) const {
    return static_cast<std::uint64_t>(matrices) * static_cast<std::uint64_t>(rows) *
           static_cast<std::uint64_t>(cols) * shape.element_bytes;
  }
};

struct TransposeTiles {
  std::vector<TransposeTile> tiles;  ///< in order; together they cover every element once
  std::uint64_t max_tile_bytes = 0;  ///< the device buffers each slot needs
};

/// A side of a tile is split only into parts of at least this many bytes (the rows of its
/// strided copy).
inline constexpr std::uint64_t kMinRowBytes = 8192;

/// Splits `shape` into tiles of about `target_bytes`: whole matrices where one fits, else equal
/// tiles (give or take an element per side) whose split sides are at least `min_row_bytes`
/// long. Empty for an empty shape.
TransposeTiles plan_transpose_tiles(const kernels::TransposeShape& shape,
                                    std::uint64_t target_bytes,
                                    std::uint64_t min_row_bytes = kMinRowBytes);

/// The tile size the backend asks for: about a sixteenth of the whole, between 4 and 64 MiB.
std::uint64_t default_transpose_tile_bytes(std::uint64_t total_bytes);

/// Device buffers of plan.max_tile_bytes each; slot 1 may be null when there is one tile.
struct TransposeSlots {
  std::array<void*, 2> in{};
  std::array<void*, 2> out{};
};

/// Transposes `src` (page-locked host, `shape`) into `dst` (page-locked host) through `slots`
/// (allocated on ctx.stream, or ready for any stream): uploads on `upload`, after the work
/// already queued on ctx.stream; transposes and downloads on ctx.stream; the two ordered by
/// `events`. Both streams have finished with every buffer when it returns, also on failure.
absl::Status transpose_pinned_host(const kernels::cuda::Context& ctx,
                                   kernels::cuda::StreamView upload, const StagingEvents& events,
                                   const TransposeSlots& slots, const std::byte* src,
                                   std::byte* dst, const kernels::TransposeShape& shape,
                                   const TransposeTiles& plan);

}  // namespace gcompute::server::cuda
