// SPDX-License-Identifier: Apache-2.0
// The chunk messages of the UploadMatrix and DownloadMatrix streams, coded by hand on both ends
// so that a chunk's bytes are not copied into a protobuf string and out again: a chunk is sent
// as a few header bytes followed by a slice that refers to the matrix itself, and received as
// views of the slices gRPC read from the socket. The bytes on the wire are those protobuf
// writes for UploadMatrixRequest{chunk} and DownloadMatrixResponse{chunk} (field 2, a Chunk of
// offset = 1 and data = 2), so any other client or server reads and writes them unchanged.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"

namespace gcompute::wire {

/// A chunk message whose data slice refers to [data, data + size) without a copy. gRPC may hold
/// the slice after the write completes, so `release()` runs when it lets go (exactly once).
grpc::ByteBuffer encode_chunk(std::uint64_t offset, const void* data, std::size_t size,
                              std::function<void()> release);

/// A chunk message holding its own copy of the data (one copy, as any sender building a message
/// makes): for a sender that cannot tell when gRPC lets go of the caller's memory.
grpc::ByteBuffer encode_chunk_copy(std::uint64_t offset, const void* data, std::size_t size);

/// Any other message of the stream (a header), serialized the usual way.
grpc::ByteBuffer encode_message(const google::protobuf::MessageLite& message);

/// Parses a whole message (INVALID_ARGUMENT naming its type when the bytes are not one).
absl::Status decode_message(grpc::ByteBuffer& buffer, google::protobuf::MessageLite& message);

/// A received chunk: its offset, and its data as views into the received buffer (valid while
/// that buffer lives, unchanged).
struct ChunkView {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::vector<std::span<const char>> pieces;  ///< in order; their sizes add up to `size`
};

/// Reads one received message. A chunk laid out the way protobuf writes one (field order,
/// nothing else in the message) comes back as a ChunkView, without a copy. Anything else (the
/// header, or a chunk laid out otherwise) is parsed into `whole` and nullopt comes back; the
/// caller then handles `whole` as usual. INVALID_ARGUMENT for bytes that are not a message.
absl::StatusOr<std::optional<ChunkView>> decode_part(grpc::ByteBuffer& buffer,
                                                     google::protobuf::MessageLite& whole);

}  // namespace gcompute::wire
