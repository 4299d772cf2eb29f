// SPDX-License-Identifier: Apache-2.0
// Transpose kernels, kept in a header so that the benchmark can time tile variants against
// the one transpose() picks. Device code only; cuda::transpose() (transpose.cu) dispatches.
//
// transpose_tiled_kernel: the fast path. A block moves one TE x TE tile of elements through
// shared memory. Global accesses are V elements wide (W = V * sizeof(T) bytes, 4, 8 or 16):
// a row of the tile is read as TV = TE / V consecutive vectors, and each thread writes V
// output vectors after transposing a V x V micro-tile in registers. Shared memory holds the
// tile row-major with the vector slot XOR-swizzled by the micro-tile row, which makes both
// the row-wise stores (phase 1) and the column-wise reads (phase 2) hit distinct banks in
// every 128-byte wavefront. Needs rows % V == 0, cols % V == 0 and W-aligned pointers.
//
// transpose_padded_kernel: any shape and alignment. Classic 32 x 32 tile of single
// elements, one padding column against bank conflicts.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gcompute::kernels::cuda::detail {

template <int W>
struct VecOf;
template <>
struct VecOf<4> {
  using type = unsigned int;
};
template <>
struct VecOf<8> {
  using type = uint2;
};
template <>
struct VecOf<16> {
  using type = uint4;
};

/// V elements of T viewed as one W-byte access (type punning through a union is supported
/// by nvcc and compiles to register moves / byte permutes).
template <typename T, int V>
union Pack {
  typename VecOf<static_cast<int>(sizeof(T)) * V>::type v;
  T e[V];
};

template <typename T, int V, int TE, int NT, int kChunkRequested = 0>
struct TiledShape {
  static constexpr int kW = V * static_cast<int>(sizeof(T));  ///< bytes per access
  static constexpr int kTV = TE / V;                          ///< vectors per tile row
  static constexpr int kG = 128 / kW;                         ///< accesses per wavefront
  static constexpr int kLoads = TE * kTV / NT;                ///< phase-1 vectors per thread
  static constexpr int kMicro = kTV * kTV / NT;               ///< phase-2 micro-tiles per thread
  /// Loads in flight per thread: 64 bytes for 16-byte accesses, 32 for narrower ones (more
  /// would cost registers, and so occupancy, for the 64-bit addresses).
  static constexpr int kChunkWanted = kW == 16 ? 4 : 32 / kW;
  static constexpr int kChunk = kChunkRequested > 0     ? kChunkRequested
                                : kLoads < kChunkWanted ? kLoads
                                                        : kChunkWanted;
  /// Blocks per SM the register budget must allow: 1024 threads (at most 64 registers).
  static constexpr int kMinBlocks = 1024 / NT;
  static_assert(kW == 4 || kW == 8 || kW == 16, "access width must be 4, 8 or 16 bytes");
  static_assert(TE % V == 0 && kTV % kG == 0, "a tile row must span whole 128-byte wavefronts");
  static_assert(kLoads * NT == TE * kTV && kMicro * NT == kTV * kTV && kMicro >= 1,
                "threads must divide the tile evenly");
  static_assert(kLoads % kChunk == 0, "load chunks must divide the loads");
};

/// Tile indices (tile row, tile column) are walked with grid-stride loops over all three grid
/// dimensions so that any int64 shape fits the grid limits. kRowTilesInX puts the tile row
/// (instead of the tile column) in blockIdx.x, changing which tiles run side by side.
template <typename T, int V, int TE, int NT, bool kRowTilesInX, int kChunkRequested>
__global__ void __launch_bounds__(NT, (TiledShape<T, V, TE, NT, kChunkRequested>::kMinBlocks))
    transpose_tiled_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t batch,
                           std::int64_t rows, std::int64_t cols) {
  using S = TiledShape<T, V, TE, NT, kChunkRequested>;
  using Vec = typename VecOf<S::kW>::type;
  constexpr int kTV = S::kTV;
  constexpr int kG = S::kG;
  __shared__ Vec tile[TE][kTV];

  const std::int64_t row_tiles = (rows + TE - 1) / TE;
  const std::int64_t col_tiles = (cols + TE - 1) / TE;
  const std::int64_t x_tiles = kRowTilesInX ? row_tiles : col_tiles;
  const std::int64_t y_tiles = kRowTilesInX ? col_tiles : row_tiles;
  const std::int64_t matrix = rows * cols;
  const int t = static_cast<int>(threadIdx.x);

  for (std::int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    for (std::int64_t ty = blockIdx.y; ty < y_tiles; ty += gridDim.y) {
      for (std::int64_t tx = blockIdx.x; tx < x_tiles; tx += gridDim.x) {
        const std::int64_t r0 = (kRowTilesInX ? tx : ty) * TE;
        const std::int64_t c0 = (kRowTilesInX ? ty : tx) * TE;
        // Valid rows and columns of this tile; both multiples of V.
        const int nr = static_cast<int>(rows - r0 < TE ? rows - r0 : TE);
        const int nc = static_cast<int>(cols - c0 < TE ? cols - c0 : TE);

        // Phase 1: a chunk of loads in flight, then into shared memory.
        const T* src = in + b * matrix + r0 * cols + c0;
#pragma unroll 1
        for (int c = 0; c < S::kLoads; c += S::kChunk) {
          Vec buf[S::kChunk];
#pragma unroll
          for (int u = 0; u < S::kChunk; ++u) {
            const int idx = (c + u) * NT + t;
            const int r = idx / kTV;
            const int p = idx % kTV;
            if (r < nr && p * V < nc) {
              buf[u] =
                  *reinterpret_cast<const Vec*>(src + static_cast<std::int64_t>(r) * cols + p * V);
            }
          }
#pragma unroll
          for (int u = 0; u < S::kChunk; ++u) {
            const int idx = (c + u) * NT + t;
            const int r = idx / kTV;
            const int p = idx % kTV;
            if (r < nr && p * V < nc) tile[r][p ^ ((r / V) % kG)] = buf[u];
          }
        }
        __syncthreads();

        // Phase 2: micro-tile (q, p) = input rows q*V.., input columns p*V..; consecutive
        // threads take consecutive q so that their output vectors are contiguous.
        T* dst = out + b * matrix + c0 * rows + r0;
#pragma unroll 2
        for (int it = 0; it < S::kMicro; ++it) {
          const int idx = it * NT + t;
          const int q = idx % kTV;
          const int p = idx / kTV;
          if (q * V < nr && p * V < nc) {
            Pack<T, V> a[V];
#pragma unroll
            for (int i = 0; i < V; ++i) a[i].v = tile[q * V + i][p ^ (q % kG)];
            T* col = dst + static_cast<std::int64_t>(p * V) * rows + q * V;
#pragma unroll
            for (int j = 0; j < V; ++j) {
              Pack<T, V> o;  // output row p*V+j: element j of every input vector
#pragma unroll
              for (int i = 0; i < V; ++i) o.e[i] = a[i].e[j];
              *reinterpret_cast<Vec*>(col + j * rows) = o.v;
            }
          }
        }
        __syncthreads();
      }
    }
  }
}

constexpr int kPaddedTile = 32;
constexpr int kPaddedRowsPerPass = 8;

/// Fallback for shapes or pointers the vector path cannot take. Block (32, 8).
template <typename T>
__global__ void __launch_bounds__(kPaddedTile* kPaddedRowsPerPass)
    transpose_padded_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t batch,
                            std::int64_t rows, std::int64_t cols) {
  __shared__ T tile[kPaddedTile][kPaddedTile + 1];
  const std::int64_t row_tiles = (rows + kPaddedTile - 1) / kPaddedTile;
  const std::int64_t col_tiles = (cols + kPaddedTile - 1) / kPaddedTile;
  const std::int64_t matrix = rows * cols;
  const int x = static_cast<int>(threadIdx.x);
  const int y = static_cast<int>(threadIdx.y);
  for (std::int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    for (std::int64_t ty = blockIdx.y; ty < row_tiles; ty += gridDim.y) {
      for (std::int64_t tx = blockIdx.x; tx < col_tiles; tx += gridDim.x) {
        const std::int64_t r0 = ty * kPaddedTile;
        const std::int64_t c0 = tx * kPaddedTile;
        const T* src = in + b * matrix;
        T* dst = out + b * matrix;
#pragma unroll
        for (int i = y; i < kPaddedTile; i += kPaddedRowsPerPass) {
          const std::int64_t r = r0 + i;
          const std::int64_t c = c0 + x;
          if (r < rows && c < cols) tile[i][x] = src[r * cols + c];
        }
        __syncthreads();
#pragma unroll
        for (int i = y; i < kPaddedTile; i += kPaddedRowsPerPass) {
          const std::int64_t c = c0 + i;  // output row
          const std::int64_t r = r0 + x;  // output column
          if (c < cols && r < rows) dst[c * rows + r] = tile[x][i];
        }
        __syncthreads();
      }
    }
  }
}

inline unsigned int grid_dim(std::int64_t tiles, std::int64_t cap) {
  return static_cast<unsigned int>(tiles < cap ? (tiles > 0 ? tiles : 1) : cap);
}

/// Launches the tiled kernel; the caller has checked V divisibility and alignment.
template <typename T, int V, int TE, int NT, bool kRowTilesInX = false, int kChunkRequested = 0>
cudaError_t launch_tiled(cudaStream_t stream, const void* in, void* out, std::int64_t batch,
                         std::int64_t rows, std::int64_t cols) {
  const std::int64_t row_tiles = (rows + TE - 1) / TE;
  const std::int64_t col_tiles = (cols + TE - 1) / TE;
  const dim3 grid(grid_dim(kRowTilesInX ? row_tiles : col_tiles, 0x7fffffff),
                  grid_dim(kRowTilesInX ? col_tiles : row_tiles, 65535), grid_dim(batch, 65535));
  transpose_tiled_kernel<T, V, TE, NT, kRowTilesInX, kChunkRequested>
      <<<grid, NT, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out), batch, rows, cols);
  return cudaPeekAtLastError();
}

template <typename T>
cudaError_t launch_padded(cudaStream_t stream, const void* in, void* out, std::int64_t batch,
                          std::int64_t rows, std::int64_t cols) {
  const dim3 grid(grid_dim((cols + kPaddedTile - 1) / kPaddedTile, 0x7fffffff),
                  grid_dim((rows + kPaddedTile - 1) / kPaddedTile, 65535), grid_dim(batch, 65535));
  const dim3 block(kPaddedTile, kPaddedRowsPerPass);
  transpose_padded_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(in),
                                                         static_cast<T*>(out), batch, rows, cols);
  return cudaPeekAtLastError();
}

}  // namespace gcompute::kernels::cuda::detail
