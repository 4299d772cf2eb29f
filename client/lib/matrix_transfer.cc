// SPDX-License-Identifier: Apache-2.0
#include "matrix_transfer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "absl/strings/str_cat.h"
#include "byte_stream_call.hpp"
#include "gcompute/client/grpc_status.hpp"
#include "proto_convert.hpp"
#include "shared_memory.hpp"
#include "unary_rpc.hpp"
#include "wire/chunk_codec.hpp"
#include "wire/fresh_buffer.hpp"

namespace gcompute::client {

namespace {

std::string method_path(const char* name) {
  return absl::StrCat("/", pb::Compute::service_full_name(), "/", name);
}

/// Makes `out` an empty buffer with room for `bytes`: a new one asks for transparent huge pages
/// (and has its pages faulted in by `prefault`, if any, ahead of the chunks); one of the size
/// already is reused as it is.
void make_room(std::string& out, std::uint64_t bytes, wire::PrefaultAhead* prefault = nullptr) {
  out.clear();
  if (out.capacity() >= bytes) return;
  std::string fresh;
  fresh.reserve(bytes);
  wire::advise_huge_pages(fresh.data(), bytes);
  out.swap(fresh);
  if (prefault != nullptr) prefault->start(out.data(), bytes);
}

}  // namespace

absl::StatusOr<StoredMatrix> upload_in_chunks(const TransferTarget& target, const HostMatrix& m,
                                              int64_t ttl_seconds) {
  if (m.data.size() != m.expected_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix data has ", m.data.size(), " bytes but its shape ",
        shape_string(m.batch, m.rows, m.cols, m.dtype), " needs ", m.expected_bytes()));
  }
  grpc::ClientContext context;
  target.replica.prepare(context, target.deadline);
  ByteStreamCall call(target.replica.channel, method_path("UploadMatrix"), context);
  pb::UploadMatrixRequest header;
  auto* shape = header.mutable_header()->mutable_shape();
  shape->set_batch(m.batch);
  shape->set_rows(m.rows);
  shape->set_cols(m.cols);
  shape->set_dtype(static_cast<pb::DType>(m.dtype));
  header.mutable_header()->set_ttl_seconds(ttl_seconds);
  bool ok = call.write(wire::encode_message(header));
  const uint64_t total = m.data.size();
  const ProgressCallback& progress = target.progress;
  if (progress) progress(0, total);
  for (uint64_t offset = 0; ok && offset < total; offset += target.chunk_bytes) {
    const uint64_t n = std::min<uint64_t>(target.chunk_bytes, total - offset);
    ok = call.write(wire::encode_chunk_copy(offset, m.data.data() + offset, n));
    if (ok && progress) progress(offset + n, total);
  }
  if (ok) ok = call.writes_done();
  grpc::ByteBuffer reply;
  const bool have_reply = call.read(reply);
  absl::Status status = from_grpc_status(call.finish());
  if (!status.ok()) return status;
  if (!ok) return absl::UnavailableError("upload stream closed before all chunks were sent");
  pb::UploadMatrixResponse response;
  if (!have_reply) return absl::InternalError("upload finished OK without a response");
  if (absl::Status st = wire::decode_message(reply, response); !st.ok()) {
    return absl::InternalError(absl::StrCat("upload response: ", st.message()));
  }
  return from_proto(response.matrix());
}

absl::StatusOr<HostMatrix> download_in_chunks(const TransferTarget& target, const MatrixRef& ref) {
  HostMatrix out;
  if (absl::Status st = download_in_chunks(target, ref, out); !st.ok()) return st;
  return out;
}

absl::Status download_in_chunks(const TransferTarget& target, const MatrixRef& ref,
                                HostMatrix& out) {
  grpc::ClientContext context;
  target.replica.prepare(context, target.deadline);
  ByteStreamCall call(target.replica.channel, method_path("DownloadMatrix"), context);
  pb::DownloadMatrixRequest request;
  request.mutable_ref()->set_id(ref.id);
  request.set_chunk_bytes(target.chunk_bytes);
  if (call.write(wire::encode_message(request))) call.writes_done();
  const ProgressCallback& progress = target.progress;
  grpc::ByteBuffer message;
  pb::DownloadMatrixResponse part;
  bool have_header = false;
  uint64_t expected = 0;
  absl::Status protocol_error;
  // Faults in `out`'s fresh buffer once make_room() gives it one; stopped (joined) on every
  // return, before the caller can touch `out` again.
  wire::PrefaultAhead prefault;
  // A chunk goes from gRPC's buffers straight into `out`, appended (chunks come in order): the
  // one copy any receiver makes, with no zero-filling before it.
  auto take_chunk = [&](uint64_t offset, uint64_t size,
                        std::span<const std::span<const char>> pieces) {
    const uint64_t received = out.data.size();
    if (!have_header || offset != received || size > expected - received) {
      protocol_error = absl::InternalError(absl::StrCat("download chunk at offset ", offset, " of ",
                                                        size, " bytes does not follow byte ",
                                                        received, " of ", expected));
      return;
    }
    for (std::span<const char> piece : pieces) out.data.append(piece.data(), piece.size());
    prefault.written(out.data.size());
    if (progress) progress(out.data.size(), expected);
  };
  while (protocol_error.ok() && call.read(message)) {
    absl::StatusOr<std::optional<wire::ChunkView>> chunk = wire::decode_part(message, part);
    if (!chunk.ok()) {
      protocol_error =
          absl::InternalError(absl::StrCat("download stream: ", chunk.status().message()));
    } else if (*chunk) {
      take_chunk((*chunk)->offset, (*chunk)->size, (*chunk)->pieces);
    } else if (part.has_header()) {
      if (have_header) {
        protocol_error = absl::InternalError("download stream sent a second header");
        break;
      }
      const StoredMatrix s = from_proto(part.header());
      out.batch = s.batch;
      out.rows = s.rows;
      out.cols = s.cols;
      out.dtype = s.dtype;
      if (out.batch < 0 || out.rows < 0 || out.cols < 0 || dtype_size(out.dtype) == 0) {
        protocol_error = absl::InternalError(
            absl::StrCat("download header describes an invalid matrix: ",
                         shape_string(out.batch, out.rows, out.cols, out.dtype)));
        break;
      }
      expected = out.expected_bytes();
      make_room(out.data, expected, &prefault);
      have_header = true;
      if (progress) progress(0, expected);
    } else if (part.has_chunk()) {  // a chunk laid out unlike protobuf's own: parsed whole
      const std::span<const char> data(part.chunk().data());
      take_chunk(part.chunk().offset(), data.size(), {&data, 1});
    }
    message.Clear();
  }
  if (!protocol_error.ok()) {
    context.TryCancel();
    call.finish();
    return protocol_error;
  }
  absl::Status status = from_grpc_status(call.finish());
  if (!status.ok()) return status;
  if (!have_header) return absl::InternalError("download stream ended without a header");
  if (out.data.size() != expected) {
    return absl::InternalError(
        absl::StrCat("download stream ended after ", out.data.size(), " of ", expected, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status delete_stored_matrix(Replica& replica, const MatrixRef& ref, absl::Time deadline) {
  pb::DeleteMatrixRequest request;
  request.mutable_ref()->set_id(ref.id);
  return unary_rpc(replica, &pb::Compute::Stub::DeleteMatrix, request, deadline).status();
}

namespace {

/// A result the server wrote into the call's arena, copied out after checking that it lies there.
absl::StatusOr<HostMatrix> from_shared_memory(const SharedArena* arena,
                                              const pb::SharedMemoryRef& where) {
  HostMatrix out;
  out.batch = where.batch() == 0 ? 1 : where.batch();
  out.rows = where.rows();
  out.cols = where.cols();
  out.dtype = static_cast<DType>(where.dtype());
  if (arena == nullptr || where.region_id() != arena->region_id() || out.batch < 0 ||
      out.rows < 0 || out.cols < 0 || dtype_size(out.dtype) == 0 ||
      where.offset() > arena->size() || out.expected_bytes() > arena->size() - where.offset()) {
    return absl::InternalError(absl::StrCat("server placed a result at offset ", where.offset(),
                                            " of region ", where.region_id(),
                                            ", which is not where this call's arena can hold it"));
  }
  make_room(out.data, out.expected_bytes());
  out.data.append(reinterpret_cast<const char*>(arena->data() + where.offset()),
                  out.expected_bytes());
  return out;
}

}  // namespace

absl::StatusOr<HostMatrix> take_result_matrix(const TransferTarget& target,
                                              pb::MatrixResult* result, const char* what) {
  if (result->has_inline_()) return from_proto(result->mutable_inline_());
  if (result->has_stored()) {
    const MatrixRef ref{result->stored().ref().id()};
    absl::StatusOr<HostMatrix> m = download_in_chunks(target, ref);
    // Best effort: the result has a TTL on the server anyway.
    (void)delete_stored_matrix(target.replica, ref, absl::Now() + kCleanupTimeout);
    return m;
  }
  if (result->has_shared_memory()) return from_shared_memory(target.arena, result->shared_memory());
  return absl::InternalError(absl::StrCat("server response has no ", what));
}

}  // namespace gcompute::client
