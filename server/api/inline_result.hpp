// SPDX-License-Identifier: Apache-2.0
// The response of an operation with one result matrix (TransposeResponse, MatMulResponse: the
// MatrixResult is field 1), coded for a raw method: a large inline result's bytes leave as a
// gRPC slice of their own instead of being copied into a fresh buffer (wire/spliced_bytes).
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstddef>

namespace gcompute::server {

/// Results smaller than this are copied into one buffer with the rest of the response, as gRPC
/// codes a typed method's: a slice of their own measured slower than the copy for small ones
/// (16 KiB: 4-5 us more a call) and no faster up to 1 MiB. From 4 MiB on it saves the copy's
/// time and a second buffer of the result's size while the response is sent
/// (docs/performance.md, "Protobuf's share of a small call").
inline constexpr std::size_t kSplicedResultMinBytes = std::size_t{4} << 20;

/// The response's bytes, as protobuf reads them; an inline result of kSplicedResultMinBytes or
/// more is moved out of `response` into its own slice. Field 1 of `response` must be a
/// MatrixResult, or absent.
grpc::ByteBuffer encode_with_result(google::protobuf::Message& response);

}  // namespace gcompute::server
