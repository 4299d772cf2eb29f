// SPDX-License-Identifier: Apache-2.0
// Server-resident matrices: chunked upload and download (streaming reactors), deletion.
#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "api/compute_service.hpp"
#include "api/convert.hpp"

namespace gcompute::server {
namespace {

/// The stored-matrix gauges, in all and per tenant, after a change.
void refresh_stored_bytes(ServiceContext& svc) {
  svc.metrics.set_stored_matrix_bytes(svc.ops.stored_matrix_bytes());
  svc.metrics.tenants().set_stored_bytes(svc.ops.stored_matrix_bytes_by_tenant());
}

constexpr std::uint64_t kDefaultChunkBytes = 4ull << 20;

class UploadReactor final : public CallReactor<grpc::ServerReadReactor<v1::UploadMatrixRequest>> {
 public:
  UploadReactor(ServiceContext& svc, const grpc::CallbackServerContext& ctx,
                v1::UploadMatrixResponse* response)
      : CallReactor(svc, "UploadMatrix", ctx), response_(response) {
    if (!accept()) return;
    // A stream that sends nothing for the idle period is aborted; its reservation goes with it.
    idle_ = svc_.upload_watch->watch([this] { return on_idle(); });
    StartRead(&message_);
  }

  void OnDone() override {
    if (idle_) idle_->close();  // waits for an on_idle() in progress
    CallReactor::OnDone();
  }

  void OnReadDone(bool ok) override {
    if (idle_) idle_->touch();
    {
      // A message that arrives as the stream expires finds it expired and leaves the session
      // alone; one being handled keeps the stream from expiring.
      std::lock_guard lock(mu_);
      if (expired_) return;
      reading_ = true;
    }
    handle_read(ok);
    std::lock_guard lock(mu_);
    reading_ = false;
  }

 private:
  void handle_read(bool ok) {
    if (finished()) return;
    if (!ok) return on_end_of_stream();
    received_bytes_ += message_.ByteSizeLong();
    absl::Status st = message_.has_header() ? on_header() : on_chunk();
    if (!st.ok()) return finish_call(st);
    StartRead(&message_);
  }

  /// False when a message is being handled: the stream is not idle.
  bool on_idle() {
    {
      std::lock_guard lock(mu_);
      if (reading_) return false;
      expired_ = true;
    }
    finish_call(absl::DeadlineExceededError(absl::StrCat(
        "upload idle: no message for ", absl::FormatDuration(svc_.upload_watch->idle()),
        " (--upload-idle-seconds); the upload was aborted and its quota freed")));
    return true;
  }

 private:
  absl::Status on_header() {
    if (session_) {
      return absl::InvalidArgumentError("header sent twice; it must be the first message only");
    }
    auto header = decode(message_.header());
    if (!header.ok()) return header.status();
    auto session = svc_.ops.begin_upload(caller_, *header);
    if (!session.ok()) return session.status();
    session_ = *std::move(session);
    refresh_stored_bytes(svc_);
    return absl::OkStatus();
  }

  absl::Status on_chunk() {
    if (!session_) {
      return absl::InvalidArgumentError(
          "chunk before header: the first message must be the header");
    }
    const auto& c = message_.chunk();
    return session_->write(c.offset(), c.data().data(), c.data().size());
  }

  void on_end_of_stream() {
    if (!session_) return finish_call(absl::InvalidArgumentError("upload ended without a header"));
    auto info = session_->finish();
    if (info.ok()) encode_stored(*info, response_->mutable_matrix());
    finish_call(info.status());
  }

  void on_finish(absl::Status& status) override {
    if (status.ok()) sent_bytes_ = response_->ByteSizeLong();
    session_.reset();  // an unfinished upload gives its reservation back
    refresh_stored_bytes(svc_);
  }

  v1::UploadMatrixResponse* response_;
  v1::UploadMatrixRequest message_;
  std::unique_ptr<ops::UploadSession> session_;
  std::shared_ptr<IdleWatch::Registration> idle_;
  std::mutex mu_;
  bool reading_ = false;  ///< OnReadDone is handling a message
  bool expired_ = false;  ///< on_idle() finished the call
};

class DownloadReactor final
    : public CallReactor<grpc::ServerWriteReactor<v1::DownloadMatrixResponse>> {
 public:
  DownloadReactor(ServiceContext& svc, const grpc::CallbackServerContext& ctx,
                  const v1::DownloadMatrixRequest* request)
      : CallReactor(svc, "DownloadMatrix", ctx, *request) {
    if (!accept()) return;
    auto download = svc_.ops.open_download(caller_, request->ref().id(), "ref.id");
    if (!download.ok()) {
      finish_call(download.status());
      return;
    }
    download_ = std::make_shared<ops::Download>(*std::move(download));
    chunk_ = request->chunk_bytes() == 0 ? kDefaultChunkBytes : request->chunk_bytes();
    chunk_ = std::min<std::uint64_t>(
        chunk_, svc_.limits.max_message_bytes - svc_.limits.response_overhead_bytes);
    encode_stored(download_->info, message_.mutable_header());
    svc_.ops.fetch_host(download_, [this](absl::Status st) {
      if (!st.ok()) return finish_call(st);
      write();
    });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return finish_call(absl::CancelledError("client went away during the download"));
    const Matrix& m = download_->matrix;
    if (offset_ >= m.desc.bytes()) return finish_call(absl::OkStatus());
    // No Clear(): that would free the chunk and its buffer, and each chunk would then allocate
    // (and fault in) a fresh one. Switching the oneof from the header happens once.
    const std::uint64_t n = std::min(chunk_, m.desc.bytes() - offset_);
    auto* chunk = message_.mutable_chunk();
    chunk->set_offset(offset_);
    chunk->set_data(m.data->data() + offset_, n);
    offset_ += n;
    write();
  }

 private:
  void write() {
    sent_bytes_ += message_.ByteSizeLong();
    StartWrite(&message_);
  }

  std::shared_ptr<ops::Download> download_;
  v1::DownloadMatrixResponse message_;
  std::uint64_t chunk_ = kDefaultChunkBytes;
  std::uint64_t offset_ = 0;
};

}  // namespace

grpc::ServerReadReactor<v1::UploadMatrixRequest>* ComputeService::UploadMatrix(
    grpc::CallbackServerContext* ctx, v1::UploadMatrixResponse* response) {
  return new UploadReactor(svc_, *ctx, response);
}

grpc::ServerWriteReactor<v1::DownloadMatrixResponse>* ComputeService::DownloadMatrix(
    grpc::CallbackServerContext* ctx, const v1::DownloadMatrixRequest* request) {
  return new DownloadReactor(svc_, *ctx, request);
}

grpc::ServerUnaryReactor* ComputeService::DeleteMatrix(grpc::CallbackServerContext* ctx,
                                                       const v1::DeleteMatrixRequest* request,
                                                       v1::DeleteMatrixResponse* response) {
  return UnaryCall::start(svc_, "DeleteMatrix", ctx, *request, response, [&](UnaryCall& call) {
    call.complete(svc_.ops.delete_matrix(call.caller(), request->ref().id()));
    refresh_stored_bytes(svc_);
  });
}

}  // namespace gcompute::server
