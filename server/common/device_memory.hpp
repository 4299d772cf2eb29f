// SPDX-License-Identifier: Apache-2.0
// GPU memory another process exported (cudaIpcGetMemHandle), as the engine opens it and the
// region store keeps it. Here so that store/ and engine/ need not include each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace gcompute::server {

struct OpenedDeviceMemory {
  std::byte* base = nullptr;  ///< device pointer of the allocation's start
  std::uint64_t bytes = 0;    ///< the allocation's size
  std::function<void()> close;
};

}  // namespace gcompute::server
