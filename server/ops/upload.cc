// SPDX-License-Identifier: Apache-2.0
#include "ops/upload.hpp"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/status_macros.hpp"
#include "ops/admission.hpp"
#include "ops/inputs.hpp"

namespace gcompute::server::ops {

bool Coverage::add(std::uint64_t begin, std::uint64_t end) {
  if (begin == end) return true;
  auto next = ranges_.lower_bound(begin);
  if (next != ranges_.end() && next->first < end) return false;
  if (next != ranges_.begin()) {
    auto prev = std::prev(next);
    if (prev->second > begin) return false;
    if (prev->second == begin) {  // merge with the range before
      begin = prev->first;
      ranges_.erase(prev);
    }
  }
  if (next != ranges_.end() && next->first == end) {
    end = next->second;
    ranges_.erase(next);
  }
  ranges_[begin] = end;
  return true;
}

std::uint64_t Coverage::first_gap(std::uint64_t total) const {
  // Adjacent ranges are merged, so a complete upload is the single range [0, total).
  if (total == 0 || ranges_.empty() || ranges_.begin()->first != 0) return 0;
  return std::min(ranges_.begin()->second, total);
}

absl::StatusOr<std::unique_ptr<UploadSession>> UploadSession::begin(const UploadHeader& header,
                                                                    MatrixStore& store,
                                                                    Backend& backend,
                                                                    const Limits& limits,
                                                                    const Caller& caller) {
  std::unique_ptr<UploadSession> s(new UploadSession());
  s->store_ = &store;
  GC_ASSIGN_OR_RETURN(s->desc_, check_desc(header.batch, header.rows, header.cols, header.dtype,
                                           "header.shape", limits));
  GC_RETURN_IF_ERROR(admit(s->desc_.bytes(), "UploadMatrix", limits, /*on_device=*/true));
  GC_ASSIGN_OR_RETURN(s->ttl_, store.ttl_from_seconds(header.ttl_seconds, "header.ttl_seconds"));
  GC_ASSIGN_OR_RETURN(s->reservation_,
                      store.reserve(caller.tenant, s->desc_.bytes()));  // quota first
  GC_ASSIGN_OR_RETURN(s->sink_, backend.begin_upload(s->desc_));
  return s;
}

absl::Status UploadSession::write(std::uint64_t offset, std::uint64_t size, BytePieces pieces) {
  std::uint64_t in_pieces = 0;
  for (std::span<const char> piece : pieces) in_pieces += piece.size();
  if (in_pieces != size) {  // the sinks copy `size` bytes from the pieces: never past them
    return absl::InternalError(
        absl::StrCat("chunk of ", size, " bytes came in pieces of ", in_pieces, " bytes"));
  }
  const std::uint64_t total = desc_.bytes();
  if (offset > total || size > total - offset) {
    return absl::InvalidArgumentError(absl::StrCat("chunk.offset = ", offset, " with ", size,
                                                   " bytes runs past the matrix's ", total,
                                                   " bytes"));
  }
  if (!coverage_.add(offset, offset + size)) {
    return absl::InvalidArgumentError(absl::StrCat("chunk.offset = ", offset, " with ", size,
                                                   " bytes overlaps data already received"));
  }
  return sink_->write(offset, pieces, size);
}

absl::StatusOr<StoredMatrixInfo> UploadSession::finish() {
  const std::uint64_t total = desc_.bytes();
  const std::uint64_t gap = coverage_.first_gap(total);
  if (gap != total) {
    return absl::InvalidArgumentError(absl::StrCat("upload ended incomplete: bytes from offset ",
                                                   gap, " of ", total, " were never sent"));
  }
  GC_ASSIGN_OR_RETURN(Matrix m, sink_->finish());
  return store_->put(std::move(m), ttl_, std::move(reservation_));
}

}  // namespace gcompute::server::ops
