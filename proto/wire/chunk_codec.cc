// SPDX-License-Identifier: Apache-2.0
#include "wire/chunk_codec.hpp"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/slice.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "wire/varint.hpp"

#include "google/protobuf/io/coded_stream.h"

namespace gcompute::wire {
namespace {

// Tags of `oneof part { ... chunk = 2; }` and of Chunk { uint64 offset = 1; bytes data = 2; }.
constexpr std::uint32_t kChunkTag = field_tag(2, kLengthDelimited);
constexpr std::uint32_t kOffsetTag = field_tag(1, 0);
constexpr std::uint32_t kDataTag = field_tag(2, kLengthDelimited);

void run_release(void* user_data) {
  auto* release = static_cast<std::function<void()>*>(user_data);
  (*release)();
  delete release;
}

/// The fast path of decode_part: a chunk as protobuf lays one out, or nullopt for anything else.
std::optional<ChunkView> read_chunk_in_place(grpc::ByteBuffer& buffer) {
  grpc::ProtoBufferReader reader(&buffer);
  if (!reader.status().ok()) return std::nullopt;
  const std::uint64_t total = buffer.Length();
  google::protobuf::io::CodedInputStream in(&reader);
  if (in.ReadTag() != kChunkTag) return std::nullopt;
  std::uint64_t chunk_len = 0;  // 64 bits: an over-long varint is refused, not truncated
  if (!in.ReadVarint64(&chunk_len) || chunk_len > total) return std::nullopt;
  const std::uint64_t chunk_end = static_cast<std::uint64_t>(in.CurrentPosition()) + chunk_len;
  if (chunk_end != total) return std::nullopt;  // something follows the chunk
  ChunkView view;
  std::uint32_t tag = in.ReadTag();
  if (tag == kOffsetTag) {
    if (!in.ReadVarint64(&view.offset)) return std::nullopt;
    tag = in.ReadTag();
  }
  if (tag != kDataTag) return std::nullopt;
  std::uint64_t remaining = 0;
  if (!in.ReadVarint64(&remaining) || remaining > total) return std::nullopt;
  // The data must end the chunk: a later offset or a second data field would change its meaning.
  if (static_cast<std::uint64_t>(in.CurrentPosition()) + remaining != chunk_end) {
    return std::nullopt;
  }
  view.size = remaining;
  while (remaining > 0) {
    const void* data = nullptr;
    int available = 0;
    if (!in.GetDirectBufferPointer(&data, &available) || available <= 0) return std::nullopt;
    const std::uint64_t take =
        std::min<std::uint64_t>(remaining, static_cast<std::uint64_t>(available));
    view.pieces.emplace_back(static_cast<const char*>(data), take);
    if (!in.Skip(static_cast<int>(take))) return std::nullopt;
    remaining -= take;
  }
  return view;
}

/// The bytes of a chunk message that precede its data; returns their count.
std::size_t chunk_prefix(std::uint64_t offset, std::size_t size, std::array<char, 40>& prefix) {
  // Protobuf leaves out a zero offset and empty data; so do we, so that both write the same
  // bytes.
  const std::size_t offset_bytes = offset == 0 ? 0 : 1 + varint_size(offset);
  const std::uint64_t chunk_len = offset_bytes + (size == 0 ? 0 : 1 + varint_size(size) + size);
  char* p = prefix.data();
  *p++ = static_cast<char>(kChunkTag);
  p = put_varint(p, chunk_len);
  if (offset != 0) {
    *p++ = static_cast<char>(kOffsetTag);
    p = put_varint(p, offset);
  }
  if (size != 0) {
    *p++ = static_cast<char>(kDataTag);
    p = put_varint(p, size);
  }
  return static_cast<std::size_t>(p - prefix.data());
}

}  // namespace

grpc::ByteBuffer encode_chunk(std::uint64_t offset, const void* data, std::size_t size,
                              std::function<void()> release) {
  std::array<char, 40> prefix{};
  std::array<grpc::Slice, 2> slices = {
      grpc::Slice(prefix.data(), chunk_prefix(offset, size, prefix)), grpc::Slice()};
  if (size == 0) {
    release();
    return grpc::ByteBuffer(slices.data(), 1);
  }
  slices[1] = grpc::Slice(const_cast<void*>(data), size, &run_release,
                          new std::function<void()>(std::move(release)));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

grpc::ByteBuffer encode_chunk_copy(std::uint64_t offset, const void* data, std::size_t size) {
  std::array<char, 40> prefix{};
  const std::size_t prefix_bytes = chunk_prefix(offset, size, prefix);
  grpc::Slice slice(prefix_bytes + size);
  std::memcpy(const_cast<std::uint8_t*>(slice.begin()), prefix.data(), prefix_bytes);
  if (size > 0) std::memcpy(const_cast<std::uint8_t*>(slice.begin()) + prefix_bytes, data, size);
  return grpc::ByteBuffer(&slice, 1);
}

grpc::ByteBuffer encode_message(const google::protobuf::MessageLite& message) {
  // As gRPC codes a typed method's messages: serialized straight into the buffer's slices. It
  // fails only for messages of 2 GiB or more, which no limit of ours lets through.
  grpc::ByteBuffer buffer;
  bool own_buffer = false;
  const grpc::Status serialized =
      grpc::SerializationTraits<google::protobuf::MessageLite>::Serialize(message, &buffer,
                                                                          &own_buffer);
  assert(serialized.ok());
  (void)serialized;
  return buffer;
}

absl::Status decode_message(grpc::ByteBuffer& buffer, google::protobuf::MessageLite& message) {
  grpc::ProtoBufferReader reader(&buffer);
  if (!reader.status().ok() || !message.ParseFromZeroCopyStream(&reader)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", buffer.Length(), "-byte message does not parse as ",
                     message.GetTypeName(), " (protobuf wire format)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ChunkView>> decode_part(grpc::ByteBuffer& buffer,
                                                     google::protobuf::MessageLite& whole) {
  if (std::optional<ChunkView> view = read_chunk_in_place(buffer)) return view;
  if (absl::Status st = decode_message(buffer, whole); !st.ok()) return st;
  return std::nullopt;
}

}  // namespace gcompute::wire
