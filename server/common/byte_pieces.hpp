// SPDX-License-Identifier: Apache-2.0
// Bytes in pieces, in order: a received chunk as gRPC's buffers hold it, handed on without
// first being gathered into one buffer.
#pragma once

#include <span>

namespace gcompute::server {

using BytePieces = std::span<const std::span<const char>>;

}  // namespace gcompute::server
