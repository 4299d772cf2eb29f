// SPDX-License-Identifier: Apache-2.0
// Server-resident matrices: chunked upload and download (streaming reactors), deletion.
// Both streams are raw methods: their chunks are coded by wire/chunk_codec, so a received
// chunk goes from gRPC's buffers straight to the upload's sink, and a sent chunk refers to the
// stored matrix's host bytes instead of a copy in a protobuf message.
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/compute_service.hpp"
#include "api/convert.hpp"
#include "api/unparsable_requests.hpp"
#include "wire/chunk_codec.hpp"

namespace gcompute::server {
namespace {

/// The stored-matrix gauges, in all and per tenant, after a change.
void refresh_stored_bytes(ServiceContext& svc) {
  svc.metrics.set_stored_matrix_bytes(svc.ops.stored_matrix_bytes());
  svc.metrics.tenants().set_stored_bytes(svc.ops.stored_matrix_bytes_by_tenant());
}

constexpr std::uint64_t kDefaultChunkBytes = 4ull << 20;

class UploadReactor final : public CallReactor<grpc::ServerReadReactor<grpc::ByteBuffer>> {
 public:
  UploadReactor(ServiceContext& svc, const grpc::CallbackServerContext& ctx,
                grpc::ByteBuffer* response)
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
    received_bytes_ += message_.Length();
    absl::Status st = on_message();
    message_.Clear();
    if (!st.ok()) return finish_call(st);
    StartRead(&message_);
  }

  absl::Status on_message() {
    absl::StatusOr<std::optional<wire::ChunkView>> chunk = wire::decode_part(message_, parsed_);
    if (!chunk.ok()) return refuse_unparsable(svc_.metrics, method_, parsed_.GetTypeName());
    if (*chunk) return on_chunk(**chunk);
    if (parsed_.has_header()) return on_header();
    if (parsed_.has_chunk()) {  // a chunk laid out unlike protobuf's own: parsed whole
      const auto& c = parsed_.chunk();
      return on_chunk(wire::ChunkView{c.offset(), c.data().size(), {c.data()}});
    }
    return absl::InvalidArgumentError("upload message has neither header nor chunk");
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
    auto header = decode(parsed_.header());
    if (!header.ok()) return header.status();
    auto session = svc_.ops.begin_upload(caller_, *header);
    if (!session.ok()) return session.status();
    session_ = *std::move(session);
    refresh_stored_bytes(svc_);
    return absl::OkStatus();
  }

  absl::Status on_chunk(const wire::ChunkView& chunk) {
    if (!session_) {
      return absl::InvalidArgumentError(
          "chunk before header: the first message must be the header");
    }
    return session_->write(chunk.offset, chunk.size, chunk.pieces);
  }

  void on_end_of_stream() {
    if (!session_) return finish_call(absl::InvalidArgumentError("upload ended without a header"));
    auto info = session_->finish();
    if (info.ok()) {
      v1::UploadMatrixResponse response;
      encode_stored(*info, response.mutable_matrix());
      *response_ = wire::encode_message(response);
    }
    finish_call(info.status());
  }

  void on_finish(absl::Status& status) override {
    if (status.ok()) sent_bytes_ = response_->Length();
    session_.reset();  // an unfinished upload gives its reservation back
    refresh_stored_bytes(svc_);
  }

  grpc::ByteBuffer* response_;
  grpc::ByteBuffer message_;
  v1::UploadMatrixRequest parsed_;  ///< a header (or a chunk not laid out as protobuf does)
  std::unique_ptr<ops::UploadSession> session_;
  std::shared_ptr<IdleWatch::Registration> idle_;
  std::mutex mu_;
  bool reading_ = false;  ///< OnReadDone is handling a message
  bool expired_ = false;  ///< on_idle() finished the call
};

/// Sends the header, then the chunks in order. A chunk of a host matrix refers to its bytes; a
/// chunk of a device-resident one is copied to a host buffer while the chunk before it is being
/// sent. One thread at a time drives the stream (busy_): a write that completes while the next
/// chunk is being prepared is handed to the preparing thread, so the call never finishes, and
/// the reactor is never deleted, under a thread still using it. A client that reads nothing for
/// the stream idle period (--upload-idle-seconds) has its call cancelled, which lets go of the
/// matrix even when the client set no deadline.
class DownloadReactor final : public CallReactor<grpc::ServerWriteReactor<grpc::ByteBuffer>> {
 public:
  DownloadReactor(ServiceContext& svc, grpc::CallbackServerContext& ctx,
                  const grpc::ByteBuffer* raw_request)
      : CallReactor(svc, "DownloadMatrix", ctx), ctx_(ctx) {
    received_bytes_ = raw_request->Length();
    v1::DownloadMatrixRequest request;
    grpc::ByteBuffer copy = *raw_request;  // shares the slices; the reader needs a mutable one
    // Parsed first, as gRPC parses a typed method's request: unparsable is INVALID_ARGUMENT
    // even while draining.
    if (absl::Status parsed = parse_raw_message(svc_.metrics, method_, copy, request);
        !parsed.ok()) {
      finish_call(std::move(parsed));
      return;
    }
    if (!accept()) return;
    auto download = svc_.ops.open_download(caller_, request.ref().id(), "ref.id");
    if (!download.ok()) {
      finish_call(download.status());
      return;
    }
    download_ = std::make_shared<ops::Download>(*std::move(download));
    total_ = download_->matrix.desc.bytes();
    chunk_ = request.chunk_bytes() == 0 ? kDefaultChunkBytes : request.chunk_bytes();
    chunk_ = std::min<std::uint64_t>(
        chunk_, svc_.limits.max_message_bytes - svc_.limits.response_overhead_bytes);
    v1::DownloadMatrixResponse header;
    encode_stored(download_->info, header.mutable_header());
    message_ = wire::encode_message(header);
    busy_ = true;  // this thread drives first
    idle_ = svc_.upload_watch->watch([this] { return on_idle(); });
    drive(/*write_ok=*/true, /*first=*/true);
  }

  void OnWriteDone(bool ok) override {
    if (idle_) idle_->touch();
    {
      std::lock_guard lock(mu_);
      if (expired_) return;  // on_idle() finished the call
      if (busy_) {           // the preparing thread carries on from here when it is done
        write_done_ = ok;
        return;
      }
      busy_ = true;
    }
    drive(ok, /*first=*/false);
  }

  void OnDone() override {
    if (idle_) idle_->close();  // waits for an on_idle() in progress
    CallReactor::OnDone();
  }

 private:
  /// Runs with busy_ set and no write in flight: starts the next write and prepares the chunk
  /// after it, for as long as writes keep completing during the preparation.
  void drive(bool write_ok, bool first) {
    for (;;) {
      if (!write_ok) {
        return finish_call(absl::CancelledError("client went away during the download"));
      }
      if (!first) {
        if (!prepare_error_.ok()) return finish_call(prepare_error_);
        if (sent_ >= total_) return finish_call(absl::OkStatus());
        if (!next_) {  // prepared in the last round, or else now
          absl::StatusOr<grpc::ByteBuffer> chunk = make_chunk(sent_);
          if (!chunk.ok()) return finish_call(chunk.status());
          next_ = *std::move(chunk);
        }
        message_ = *std::move(next_);
        next_.reset();
        sent_ += std::min(chunk_, total_ - sent_);
      }
      first = false;
      sent_bytes_ += message_.Length();
      StartWrite(&message_);
      if (sent_ < total_) {
        absl::StatusOr<grpc::ByteBuffer> chunk = make_chunk(sent_);  // overlaps the write
        if (chunk.ok()) {
          next_ = *std::move(chunk);
        } else {
          prepare_error_ = chunk.status();
        }
      }
      std::lock_guard lock(mu_);
      if (!write_done_) {  // OnWriteDone (or on_idle) takes over
        busy_ = false;
        return;
      }
      write_ok = *write_done_;
      write_done_.reset();
    }
  }

  /// On the idle watch's thread, when no write completed for the idle period. False while a
  /// thread is driving the stream (it is not idle then).
  bool on_idle() {
    {
      std::lock_guard lock(mu_);
      if (busy_ || expired_) return false;
      expired_ = true;
    }
    // The write in flight waits on a client that reads nothing: cancelling the call completes
    // it, so that the call can end and let go of the matrix.
    ctx_.TryCancel();
    finish_call(absl::DeadlineExceededError(absl::StrCat(
        "download idle: the client read nothing for ",
        absl::FormatDuration(svc_.upload_watch->idle()),
        " (--upload-idle-seconds, the bound of both matrix streams); the download was cancelled")));
    return true;
  }

  /// The chunk at `offset`. gRPC may hold it past its write, so the slice keeps what it refers
  /// to alive until it lets go: the download (with the matrix's host bytes), or a chunk buffer.
  absl::StatusOr<grpc::ByteBuffer> make_chunk(std::uint64_t offset) {
    const std::uint64_t n = std::min(chunk_, total_ - offset);
    const Matrix& m = download_->matrix;
    if (m.on_host()) {
      // Only the host bytes are kept, not a device copy: the slice may be let go late, on one of
      // gRPC's threads, even after the server's engine is gone.
      std::shared_ptr<const void> bytes =
          m.data ? std::shared_ptr<const void>(m.data) : std::shared_ptr<const void>(m.view);
      return wire::encode_chunk(offset, reinterpret_cast<const char*>(m.bytes()) + offset, n,
                                [keep = std::move(bytes)] {});
    }
    const ChunkBufferPool::Buffer buffer = svc_.chunk_buffers->take(n);
    std::function<void()> give_back = svc_.chunk_buffers->returner(buffer);
    if (absl::Status st = svc_.ops.copy_download_range(*download_, offset, n, buffer.data);
        !st.ok()) {
      give_back();
      return st;
    }
    return wire::encode_chunk(offset, buffer.data, n, std::move(give_back));
  }

  std::shared_ptr<ops::Download> download_;
  grpc::ByteBuffer message_;              ///< the write in flight
  std::optional<grpc::ByteBuffer> next_;  ///< the chunk after it, when prepared
  absl::Status prepare_error_;
  std::uint64_t total_ = 0;
  std::uint64_t chunk_ = kDefaultChunkBytes;
  std::uint64_t sent_ = 0;  ///< bytes of the matrix handed to gRPC
  grpc::CallbackServerContext& ctx_;
  std::shared_ptr<IdleWatch::Registration> idle_;
  std::mutex mu_;
  bool busy_ = false;               ///< a thread is driving the stream
  bool expired_ = false;            ///< on_idle() finished the call
  std::optional<bool> write_done_;  ///< a write completed while busy_ (its ok)
};

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* ComputeService::UploadMatrix(
    grpc::CallbackServerContext* ctx, grpc::ByteBuffer* response) {
  return new UploadReactor(svc_, *ctx, response);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* ComputeService::DownloadMatrix(
    grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request) {
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
