// SPDX-License-Identifier: Apache-2.0
// Chunked upload and download of server-resident matrices (streaming reactors).
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "api/compute_service.hpp"
#include "api/convert.hpp"
#include "api/status.hpp"

namespace gcompute::server {
namespace {

constexpr std::uint64_t kDefaultChunkBytes = 4ull << 20;

/// Tracks which byte ranges of an upload have arrived, to refuse overlaps and find gaps.
class Coverage {
 public:
  /// False when [begin, end) overlaps a range already received.
  bool add(std::uint64_t begin, std::uint64_t end) {
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
  /// The first missing byte offset below `total`, or total when complete.
  std::uint64_t first_gap(std::uint64_t total) const {
    // Adjacent ranges are merged, so a complete upload is the single range [0, total).
    if (total == 0 || ranges_.empty() || ranges_.begin()->first != 0) return 0;
    return std::min(ranges_.begin()->second, total);
  }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;  // begin -> end, disjoint, non-adjacent
};

class UploadReactor final : public grpc::ServerReadReactor<v1::UploadMatrixRequest> {
 public:
  UploadReactor(ServiceContext& svc, grpc::CallbackServerContext* ctx,
                v1::UploadMatrixResponse* response)
      : svc_(svc), response_(response), start_(std::chrono::steady_clock::now()) {
    (void)ctx;
    svc_.metrics.add_inflight(1);
    if (svc_.draining.load()) {
      finish(absl::UnavailableError("server is draining; retry on another replica"));
      return;
    }
    StartRead(&message_);
  }

  void OnReadDone(bool ok) override {
    if (finished_) return;
    if (!ok) return on_end_of_stream();
    received_bytes_ += message_.ByteSizeLong();
    absl::Status st = message_.has_header() ? on_header() : on_chunk();
    if (!st.ok()) return finish(st);
    StartRead(&message_);
  }

  void OnCancel() override {}
  void OnDone() override {
    svc_.metrics.add_inflight(-1);
    delete this;
  }

 private:
  absl::Status on_header() {
    if (sink_)
      return absl::InvalidArgumentError("header sent twice; it must be the first message only");
    const auto& h = message_.header();
    auto desc = decode_desc(h.shape().batch(), h.shape().rows(), h.shape().cols(),
                            h.shape().dtype(), "header.shape", svc_.limits);
    if (!desc.ok()) return desc.status();
    auto ttl = svc_.matrices.ttl_from_seconds(h.ttl_seconds(), "header.ttl_seconds");
    if (!ttl.ok()) return ttl.status();
    ttl_ = *ttl;
    auto reservation = svc_.matrices.reserve(desc->bytes());  // quota before allocation
    if (!reservation.ok()) return reservation.status();
    reservation_ = *std::move(reservation);
    svc_.metrics.set_stored_matrix_bytes(svc_.matrices.used_bytes());
    auto sink = svc_.engine.backend().begin_upload(*desc);
    if (!sink.ok()) return sink.status();
    sink_ = *std::move(sink);
    desc_ = *desc;
    return absl::OkStatus();
  }

  absl::Status on_chunk() {
    if (!sink_)
      return absl::InvalidArgumentError(
          "chunk before header: the first message must be the header");
    const auto& c = message_.chunk();
    const std::uint64_t total = desc_.bytes();
    const std::uint64_t size = c.data().size();
    if (c.offset() > total || size > total - c.offset()) {
      return absl::InvalidArgumentError(absl::StrCat("chunk.offset = ", c.offset(), " with ", size,
                                                     " bytes runs past the matrix's ", total,
                                                     " bytes"));
    }
    if (!coverage_.add(c.offset(), c.offset() + size)) {
      return absl::InvalidArgumentError(absl::StrCat("chunk.offset = ", c.offset(), " with ", size,
                                                     " bytes overlaps data already received"));
    }
    return sink_->write(c.offset(), c.data().data(), size);
  }

  void on_end_of_stream() {
    if (!sink_) return finish(absl::InvalidArgumentError("upload ended without a header"));
    const std::uint64_t total = desc_.bytes();
    const std::uint64_t gap = coverage_.first_gap(total);
    if (gap != total) {
      return finish(absl::InvalidArgumentError(absl::StrCat(
          "upload ended incomplete: bytes from offset ", gap, " of ", total, " were never sent")));
    }
    auto m = sink_->finish();
    if (!m.ok()) return finish(m.status());
    auto info = svc_.matrices.put(*std::move(m), ttl_, std::move(reservation_));
    if (info.ok()) encode_stored(*info, response_->mutable_matrix());
    finish(info.status());
  }

  void finish(absl::Status st) {
    finished_ = true;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    svc_.metrics.observe_request("UploadMatrix", code_name(st.code()), seconds, received_bytes_,
                                 st.ok() ? response_->ByteSizeLong() : 0);
    sink_.reset();
    reservation_ = MatrixStore::Reservation();
    svc_.metrics.set_stored_matrix_bytes(svc_.matrices.used_bytes());
    Finish(to_grpc(st));
  }

  ServiceContext& svc_;
  v1::UploadMatrixResponse* response_;
  std::chrono::steady_clock::time_point start_;
  v1::UploadMatrixRequest message_;
  std::unique_ptr<UploadSink> sink_;
  MatrixDesc desc_;
  MatrixStore::Reservation reservation_;
  absl::Duration ttl_;
  Coverage coverage_;
  std::uint64_t received_bytes_ = 0;
  bool finished_ = false;
};

class DownloadReactor final : public grpc::ServerWriteReactor<v1::DownloadMatrixResponse> {
 public:
  DownloadReactor(ServiceContext& svc, const v1::DownloadMatrixRequest* request)
      : svc_(svc), start_(std::chrono::steady_clock::now()) {
    svc_.metrics.add_inflight(1);
    request_bytes_ = request->ByteSizeLong();
    auto info = svc_.matrices.info(request->ref().id(), "ref.id");
    auto m = svc_.matrices.get(request->ref().id(), "ref.id");
    if (!info.ok() || !m.ok()) {
      finish(info.ok() ? m.status() : info.status());
      return;
    }
    matrix_ = *std::move(m);
    chunk_ = request->chunk_bytes() == 0 ? kDefaultChunkBytes : request->chunk_bytes();
    chunk_ = std::min<std::uint64_t>(
        chunk_, svc_.limits.max_message_bytes - svc_.limits.response_overhead_bytes);
    encode_stored(*info, message_.mutable_header());
    if (matrix_->on_host()) {
      write();
      return;
    }
    // A device-resident result: copy it back on a worker, not in this reaction.
    auto job = std::make_shared<JobContext>();
    absl::Status queued = svc_.engine.submit("DownloadMatrix", job, [this](absl::Status start) {
      if (start.ok()) start = svc_.engine.backend().ensure_on_host(*matrix_);
      if (!start.ok()) return finish(start);
      write();
    });
    if (!queued.ok()) finish(queued);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return finish(absl::CancelledError("client went away during the download"));
    if (offset_ >= matrix_->desc.bytes()) return finish(absl::OkStatus());
    message_.Clear();
    const std::uint64_t n = std::min(chunk_, matrix_->desc.bytes() - offset_);
    auto* chunk = message_.mutable_chunk();
    chunk->set_offset(offset_);
    chunk->set_data(matrix_->data->data() + offset_, n);
    offset_ += n;
    write();
  }

  void OnDone() override {
    svc_.metrics.add_inflight(-1);
    delete this;
  }

 private:
  void write() {
    sent_bytes_ += message_.ByteSizeLong();
    StartWrite(&message_);
  }
  void finish(absl::Status st) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    svc_.metrics.observe_request("DownloadMatrix", code_name(st.code()), seconds, request_bytes_,
                                 sent_bytes_);
    Finish(to_grpc(st));
  }

  ServiceContext& svc_;
  std::chrono::steady_clock::time_point start_;
  std::optional<Matrix> matrix_;
  v1::DownloadMatrixResponse message_;
  std::uint64_t chunk_ = kDefaultChunkBytes;
  std::uint64_t offset_ = 0;
  std::uint64_t request_bytes_ = 0;
  std::uint64_t sent_bytes_ = 0;
};

}  // namespace

grpc::ServerReadReactor<v1::UploadMatrixRequest>* ComputeService::UploadMatrix(
    grpc::CallbackServerContext* ctx, v1::UploadMatrixResponse* response) {
  return new UploadReactor(svc_, ctx, response);
}

grpc::ServerWriteReactor<v1::DownloadMatrixResponse>* ComputeService::DownloadMatrix(
    grpc::CallbackServerContext* ctx, const v1::DownloadMatrixRequest* request) {
  (void)ctx;
  return new DownloadReactor(svc_, request);
}

}  // namespace gcompute::server
