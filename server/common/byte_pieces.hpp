// SPDX-License-Identifier: Apache-2.0
// Bytes in pieces, in order: a received chunk as gRPC's buffers hold it, handed on without
// first being gathered into one buffer.
#pragma once

#include <cstring>
#include <span>

namespace gcompute::server {

using BytePieces = std::span<const std::span<const char>>;

/// Copies the pieces one after another to `dst`, which has room for all of them.
inline void gather(BytePieces pieces, char* dst) {
  for (const std::span<const char> piece : pieces) {
    std::memcpy(dst, piece.data(), piece.size());
    dst += piece.size();
  }
}

}  // namespace gcompute::server
