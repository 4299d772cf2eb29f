// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/transfers.hpp"

#include <algorithm>
#include <cstring>

#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server::cuda {
namespace {

/// Two staging buffers carved from ONE pinned block (a single acquisition, so transfers
/// never hold one block while waiting for another). A transfer that fits in the block uses
/// it whole; larger ones go in pieces that alternate between its halves.
class StagingPair {
 public:
  /// Piece i of the transfer: its staging buffer (slot 0 or 1) and its range.
  struct Piece {
    int slot;
    char* staging;
    std::uint64_t offset;
    std::uint64_t bytes;
  };

  StagingPair(PinnedPool& pool, std::uint64_t bytes)
      : pool_(pool), whole_(pool.acquire(bytes)), bytes_(bytes) {
    const bool fits = bytes <= whole_.size;
    piece_bytes_ = fits ? whole_.size : whole_.size / 2;
    ptr_[0] = whole_.ptr;
    ptr_[1] = fits ? whole_.ptr : whole_.ptr + piece_bytes_;
  }
  ~StagingPair() { pool_.release(whole_); }
  StagingPair(const StagingPair&) = delete;
  StagingPair& operator=(const StagingPair&) = delete;

  std::uint64_t pieces() const { return (bytes_ + piece_bytes_ - 1) / piece_bytes_; }
  Piece piece(std::uint64_t i) const {
    const int slot = static_cast<int>(i % 2);
    const std::uint64_t offset = i * piece_bytes_;
    return {slot, ptr_[slot], offset, std::min(piece_bytes_, bytes_ - offset)};
  }

 private:
  PinnedPool& pool_;
  PinnedPool::Block whole_;
  std::uint64_t bytes_;
  std::uint64_t piece_bytes_;
  char* ptr_[2];
};

}  // namespace

absl::Status copy_to_device(PinnedPool& pool, kernels::cuda::StreamView stream,
                            const StagingEvents& events, void* dst, const char* src,
                            std::uint64_t bytes) {
  const std::span<const char> whole(src, bytes);
  return copy_to_device(pool, stream, events, dst, BytePieces(&whole, 1), bytes);
}

absl::Status copy_to_device(PinnedPool& pool, kernels::cuda::StreamView stream,
                            const StagingEvents& events, void* dst, BytePieces src,
                            std::uint64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  std::size_t next_piece = 0;  // where the source bytes not yet staged begin
  std::uint64_t piece_offset = 0;
  const StagingPair staging(pool, bytes);
  bool pending[2] = {false, false};
  for (std::uint64_t i = 0; i < staging.pieces(); ++i) {
    const StagingPair::Piece p = staging.piece(i);
    // The block may be reused once the copy that last read it has finished.
    if (pending[p.slot]) GC_CUDA_TRY(cudaEventSynchronize(events[p.slot].value()));
    for (std::uint64_t staged = 0; staged < p.bytes;) {  // gather the next p.bytes source bytes
      const std::span<const char> from = src[next_piece];
      const std::uint64_t n = std::min<std::uint64_t>(p.bytes - staged, from.size() - piece_offset);
      std::memcpy(p.staging + staged, from.data() + piece_offset, n);
      staged += n;
      piece_offset += n;
      if (piece_offset == from.size()) {
        ++next_piece;
        piece_offset = 0;
      }
    }
    GC_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(dst) + p.offset, p.staging, p.bytes,
                                cudaMemcpyHostToDevice, stream));
    GC_CUDA_TRY(cudaEventRecord(events[p.slot].value(), stream));
    pending[p.slot] = true;
  }
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

absl::Status copy_to_host(PinnedPool& pool, kernels::cuda::StreamView stream,
                          const StagingEvents& events, char* dst, const void* src,
                          std::uint64_t bytes, const QueuedBefore* before) {
  auto wait_before = [&]() -> absl::Status {
    if (before == nullptr) return absl::OkStatus();
    GC_CUDA_TRY(cudaEventSynchronize(before->done));
    before->finished();
    return absl::OkStatus();
  };
  if (bytes == 0) return wait_before();
  const StagingPair staging(pool, bytes);
  const std::uint64_t pieces = staging.pieces();
  // Two pieces in flight: piece i + 2 is issued once piece i has left its staging buffer.
  auto issue = [&](std::uint64_t i) -> absl::Status {
    const StagingPair::Piece p = staging.piece(i);
    GC_CUDA_TRY(cudaMemcpyAsync(p.staging, static_cast<const char*>(src) + p.offset, p.bytes,
                                cudaMemcpyDeviceToHost, stream));
    GC_CUDA_TRY(cudaEventRecord(events[p.slot].value(), stream));
    return absl::OkStatus();
  };
  const absl::Status copied = [&]() -> absl::Status {
    for (std::uint64_t i = 0; i < std::min<std::uint64_t>(2, pieces); ++i) {
      GC_RETURN_IF_ERROR(issue(i));
    }
    GC_RETURN_IF_ERROR(wait_before());
    for (std::uint64_t i = 0; i < pieces; ++i) {
      const StagingPair::Piece p = staging.piece(i);
      GC_CUDA_TRY(cudaEventSynchronize(events[p.slot].value()));
      std::memcpy(dst + p.offset, p.staging, p.bytes);
      if (i + 2 < pieces) GC_RETURN_IF_ERROR(issue(i + 2));
    }
    return absl::OkStatus();
  }();
  // After a failure copies may still be queued: the staging block returns to the pool (when
  // `staging` goes) only once the stream has drained.
  if (!copied.ok()) (void)cudaStreamSynchronize(stream);
  return copied;
}

}  // namespace gcompute::server::cuda
