// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/transfers.hpp"

#include <algorithm>
#include <cstring>

#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::server::cuda {
namespace {

/// Two staging buffers carved from ONE pinned block (a single acquisition, so transfers
/// never hold one block while waiting for another). A transfer that fits in the block uses
/// it whole; larger ones alternate between its halves.
struct StagingPair {
  PinnedPool& pool;
  PinnedPool::Block whole;
  char* ptr[2];
  std::uint64_t piece;
  StagingPair(PinnedPool& p, std::uint64_t bytes) : pool(p), whole(p.acquire(bytes)) {
    piece = bytes <= whole.size ? whole.size : whole.size / 2;
    ptr[0] = whole.ptr;
    ptr[1] = bytes <= whole.size ? whole.ptr : whole.ptr + piece;
  }
  ~StagingPair() { pool.release(whole); }
};

}  // namespace

absl::Status copy_to_device(PinnedPool& pool, kernels::cuda::StreamView stream,
                            const StagingEvents& events, void* dst, const char* src,
                            std::uint64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  StagingPair staging(pool, bytes);
  const std::uint64_t piece = staging.piece;
  bool pending[2] = {false, false};
  for (std::uint64_t off = 0, i = 0; off < bytes; off += piece, ++i) {
    const int slot = static_cast<int>(i % 2);
    const std::uint64_t n = std::min(piece, bytes - off);
    // The block may be reused once the copy that last read it has finished.
    if (pending[slot]) GC_CUDA_TRY(cudaEventSynchronize(events[slot].value()));
    std::memcpy(staging.ptr[slot], src + off, n);
    GC_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(dst) + off, staging.ptr[slot], n,
                                cudaMemcpyHostToDevice, stream));
    GC_CUDA_TRY(cudaEventRecord(events[slot].value(), stream));
    pending[slot] = true;
  }
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

absl::Status copy_to_host(PinnedPool& pool, kernels::cuda::StreamView stream,
                          const StagingEvents& events, char* dst, const void* src,
                          std::uint64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  StagingPair staging(pool, bytes);
  const std::uint64_t piece = staging.piece;
  const std::uint64_t pieces = (bytes + piece - 1) / piece;
  auto issue = [&](std::uint64_t i) -> absl::Status {
    const int slot = static_cast<int>(i % 2);
    const std::uint64_t off = i * piece, n = std::min(piece, bytes - off);
    GC_CUDA_TRY(cudaMemcpyAsync(staging.ptr[slot], static_cast<const char*>(src) + off, n,
                                cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaEventRecord(events[slot].value(), stream));
    return absl::OkStatus();
  };
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(2, pieces); ++i) {
    if (auto st = issue(i); !st.ok()) return st;
  }
  for (std::uint64_t i = 0; i < pieces; ++i) {
    const int slot = static_cast<int>(i % 2);
    const std::uint64_t off = i * piece, n = std::min(piece, bytes - off);
    GC_CUDA_TRY(cudaEventSynchronize(events[slot].value()));
    std::memcpy(dst + off, staging.ptr[slot], n);
    if (i + 2 < pieces) {
      if (auto st = issue(i + 2); !st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace gcompute::server::cuda
