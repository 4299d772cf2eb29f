// SPDX-License-Identifier: Apache-2.0
// Limits every request is validated against before anything is allocated, and the time
// bounds of requests and uploads (docs/reliability.md).
#pragma once

#include <cstdint>

#include "absl/time/time.h"

namespace gcompute::server {

struct Limits {
  std::uint64_t max_message_bytes = 256ull << 20;
  std::uint64_t max_matrix_elements = 1ull << 31;
  /// Room kept in a response for everything but result data when placing results inline.
  std::uint64_t response_overhead_bytes = 64ull << 10;
  /// Matrices in one batch (--max-batch).
  std::uint64_t max_batch = 1ull << 24;
  /// Host memory one request may need (inputs, work space, results), estimated from its
  /// header before anything is allocated (--max-request-host-bytes). 0: no limit.
  std::uint64_t max_request_host_bytes = 0;
  /// The same for the memory of one GPU (--max-request-device-bytes); 0: no limit.
  std::uint64_t max_request_device_bytes = 0;
  /// Bound of a request that carries no deadline (--max-request-seconds); zero: none.
  absl::Duration max_request_time = absl::Hours(1);
  /// An upload with no message for this long is aborted (--upload-idle-seconds).
  absl::Duration upload_idle_time = absl::Seconds(30);
};

}  // namespace gcompute::server
