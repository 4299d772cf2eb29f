// SPDX-License-Identifier: Apache-2.0
// cuda::transpose: picks the widest access the shape and pointers allow (16 bytes where
// rows and cols are multiples of 16 / element_bytes), then the tiled kernel of
// detail/transpose_tiled.cuh; shapes no vector width divides go to the padded kernel.
#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "detail/transpose_tiled.cuh"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/transpose.hpp"

namespace gcompute::kernels::cuda {
namespace {

/// Tile edge in elements: 16 KB tiles for 1- and 4-byte elements, 32 KB for 2 and 8 (so that
/// every access width's row spans whole 128-byte wavefronts).
template <typename T>
constexpr int tile_edge() {
  return sizeof(T) <= 2 ? 128 : 64;
}

/// 128 threads a block: 8 blocks (of at most 64 registers a thread) share an SM, so that
/// while some blocks wait at their barrier others load. On an H200, f32 8192^2 ran at 0.94 of
/// the copy with 128 threads and 0.68 with 256 (4 blocks an SM); see docs/performance.md.
template <typename T, int V>
constexpr int threads_for() {
  constexpr int tv = tile_edge<T>() / V;
  return tv * tv < 128 ? tv * tv : 128;
}

bool aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

template <typename T, int V>
bool vector_fits(const void* in, const void* out, const TransposeShape& s) {
  return s.rows % V == 0 && s.cols % V == 0 && aligned(in, V * sizeof(T)) &&
         aligned(out, V * sizeof(T));
}

template <typename T, int V>
cudaError_t launch_vector(cudaStream_t stream, const void* in, void* out, const TransposeShape& s) {
  // Tile rows in blockIdx.x: f32 on an H200 ran at 0.955-0.960 of the copy at 8192^2 this way
  // against 0.936 with tile columns there (two runs; docs/performance.md).
  return detail::launch_tiled<T, V, tile_edge<T>(), threads_for<T, V>(), true>(
      stream, in, out, s.batch, s.rows, s.cols);
}

/// Widest vector first: V elements per access for V * sizeof(T) = 16, 8, then 4 bytes. Bytes
/// stop at 8-byte accesses: a 16 x 16 byte micro-tile needs more registers than 1024 threads
/// per SM leave (it spilled).
template <typename T>
cudaError_t launch(cudaStream_t stream, const void* in, void* out, const TransposeShape& s) {
  constexpr int v16 = 16 / static_cast<int>(sizeof(T));
  constexpr int v8 = 8 / static_cast<int>(sizeof(T));
  constexpr int v4 = 4 / static_cast<int>(sizeof(T));
  if constexpr (sizeof(T) > 1) {
    if (vector_fits<T, v16>(in, out, s)) return launch_vector<T, v16>(stream, in, out, s);
  }
  if constexpr (v8 >= 1) {
    if (vector_fits<T, v8>(in, out, s)) return launch_vector<T, v8>(stream, in, out, s);
  }
  if constexpr (v4 >= 1) {
    if (vector_fits<T, v4>(in, out, s)) return launch_vector<T, v4>(stream, in, out, s);
  }
  return detail::launch_padded<T>(stream, in, out, s.batch, s.rows, s.cols);
}

}  // namespace

absl::Status transpose(const Context& ctx, const void* in, void* out, const TransposeShape& shape) {
  if (absl::Status st = validate(shape); !st.ok()) return st;
  if (shape.batch == 0 || shape.rows == 0 || shape.cols == 0) return absl::OkStatus();
  std::int64_t elements = 0;
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(shape.batch, shape.rows, &elements) ||
      __builtin_mul_overflow(elements, shape.cols, &elements) ||
      __builtin_mul_overflow(elements, static_cast<std::int64_t>(shape.element_bytes), &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("transpose: shape ", shape.batch, "x",
                                                   shape.rows, "x", shape.cols,
                                                   " overflows 64-bit sizes"));
  }
  if (in == nullptr || out == nullptr) {
    return absl::InvalidArgumentError("transpose: null device pointer");
  }
  const auto in_begin = reinterpret_cast<std::uintptr_t>(in);
  const auto out_begin = reinterpret_cast<std::uintptr_t>(out);
  const auto n = static_cast<std::uintptr_t>(bytes);
  if (in_begin < out_begin + n && out_begin < in_begin + n) {
    return absl::InvalidArgumentError("transpose: input and output overlap");
  }
  // A single row or column has the same layout transposed: a plain copy moves it fastest.
  if (shape.rows == 1 || shape.cols == 1) {
    GC_CUDA_TRY(cudaMemcpyAsync(out, in, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice,
                                ctx.stream));
    return absl::OkStatus();
  }
  const std::optional<absl::Status> launched =
      visit_element_word(shape.element_bytes, [&](auto word) -> absl::Status {
        GC_CUDA_TRY(launch<decltype(word)>(ctx.stream, in, out, shape));
        return absl::OkStatus();
      });
  if (!launched.has_value()) return absl::InternalError("transpose: unreachable element size");
  return *launched;
}

}  // namespace gcompute::kernels::cuda
