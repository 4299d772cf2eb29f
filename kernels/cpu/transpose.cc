// SPDX-License-Identifier: Apache-2.0
// Cache-blocked host transpose. Elements are moved as fixed-size byte groups through memcpy,
// so buffers need no alignment (request payloads arrive as byte strings).
#include "gcompute/kernels/cpu/transpose.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace gcompute::kernels::cpu {
namespace {

// A tile of kTile x kTile elements of both the source and the destination stays in L1
// (2 x 32 x 32 x 8 bytes = 16 KiB for the largest element), and every source row of the
// tile is a run of at least 32 bytes.
constexpr std::int64_t kTile = 32;

// False when `stop` fired between two bands of kTile rows.
template <std::size_t kBytes>
bool transpose_one(const unsigned char* in, unsigned char* out, std::int64_t rows,
                   std::int64_t cols, StopToken stop) {
  for (std::int64_t i0 = 0; i0 < rows; i0 += kTile) {
    if (stop.stop_requested()) return false;
    const std::int64_t i1 = std::min(rows, i0 + kTile);
    for (std::int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const std::int64_t j1 = std::min(cols, j0 + kTile);
      for (std::int64_t j = j0; j < j1; ++j) {
        unsigned char* dst = out + (j * rows) * static_cast<std::int64_t>(kBytes);
        for (std::int64_t i = i0; i < i1; ++i) {
          std::memcpy(dst + i * static_cast<std::int64_t>(kBytes),
                      in + (i * cols + j) * static_cast<std::int64_t>(kBytes), kBytes);
        }
      }
    }
  }
  return true;
}

template <std::size_t kBytes>
bool transpose_batch(const void* in, void* out, const TransposeShape& s, StopToken stop) {
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(out);
  const std::int64_t stride = s.rows * s.cols * static_cast<std::int64_t>(kBytes);
  for (std::int64_t b = 0; b < s.batch; ++b) {
    if (stop.stop_requested()) return false;
    if (s.rows == 1 || s.cols == 1) {  // a vector: the transpose is the same bytes
      std::memcpy(dst + b * stride, src + b * stride, static_cast<std::size_t>(stride));
    } else if (!transpose_one<kBytes>(src + b * stride, dst + b * stride, s.rows, s.cols, stop)) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::Status transpose(const void* in, void* out, const TransposeShape& shape, StopToken stop) {
  if (absl::Status st = validate(shape); !st.ok()) return st;
  if (shape.batch == 0 || shape.rows == 0 || shape.cols == 0) return absl::OkStatus();
  if (in == nullptr || out == nullptr) {
    return absl::InvalidArgumentError("transpose: null input or output buffer");
  }
  const auto transpose_words = [&](auto word) {
    return transpose_batch<sizeof(word)>(in, out, shape, stop);
  };
  // Element sizes other than 1, 2, 4 and 8 are rejected by validate().
  const bool finished = visit_element_word(shape.element_bytes, transpose_words).value_or(true);
  if (!finished) return absl::CancelledError("transpose: cancelled");
  return absl::OkStatus();
}

}  // namespace gcompute::kernels::cpu
