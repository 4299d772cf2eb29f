// SPDX-License-Identifier: Apache-2.0
// A response whose one large bytes field (a result matrix returned inline) leaves without being
// copied: gRPC's own coding of a protobuf message copies every byte of it into a fresh buffer,
// for a result of many MiB that copy's time and a second buffer of the result's size. Protobuf
// reads a message's fields in any order, so the message goes out as its other fields (coded as
// usual), then the path of submessage headers down to the bytes field, then the bytes as a
// slice of their own. Any protobuf reader parses the same message from it.
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gcompute::wire {

/// One message on the way down to the bytes field.
struct MessageLevel {
  std::uint32_t field_number = 0;  ///< its field in the level above (unused for the outermost)
  std::string other_fields;        ///< its other fields, serialized as usual (not the path's)
};

/// `levels[0]` is the outermost message, each later level a submessage field of the one before,
/// and `bytes_field` a bytes field of the last, holding `data` (left out when empty, as protobuf
/// does). `data` goes out as a slice that the buffer owns until gRPC lets go of it.
grpc::ByteBuffer encode_with_spliced_bytes(const std::vector<MessageLevel>& levels,
                                           std::uint32_t bytes_field, std::string data);

}  // namespace gcompute::wire
