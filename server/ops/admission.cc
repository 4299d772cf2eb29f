// SPDX-License-Identifier: Apache-2.0
#include "ops/admission.hpp"

#include <unistd.h>

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace gcompute::server::ops {

std::uint64_t add_bytes(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b
             ? std::numeric_limits<std::uint64_t>::max()
             : a + b;
}

std::uint64_t mul_bytes(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > std::numeric_limits<std::uint64_t>::max() / b
             ? std::numeric_limits<std::uint64_t>::max()
             : a * b;
}

absl::Status admit(std::uint64_t estimate_bytes, const std::string& what, const Limits& limits,
                   bool on_device) {
  if (limits.max_request_host_bytes != 0 && estimate_bytes > limits.max_request_host_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " needs about ", estimate_bytes, " bytes of memory, more than one request may take: ",
        limits.max_request_host_bytes, " (--max-request-host-bytes)"));
  }
  if (on_device && limits.max_request_device_bytes != 0 &&
      estimate_bytes > limits.max_request_device_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " needs about ", estimate_bytes,
        " bytes of GPU memory, more than one request may take: ", limits.max_request_device_bytes,
        " (--max-request-device-bytes)"));
  }
  return absl::OkStatus();
}

std::uint64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return mul_bytes(static_cast<std::uint64_t>(pages), static_cast<std::uint64_t>(page));
}

Limits with_default_memory_limits(Limits limits, const std::vector<DeviceInfo>& devices) {
  if (limits.max_request_host_bytes == 0) limits.max_request_host_bytes = host_memory_bytes() / 2;
  if (limits.max_request_device_bytes == 0) {
    std::uint64_t smallest = 0;
    for (const DeviceInfo& d : devices) {
      if (d.memory_bytes != 0) {
        smallest = smallest == 0 ? d.memory_bytes : std::min(smallest, d.memory_bytes);
      }
    }
    limits.max_request_device_bytes = smallest / 4 * 3;
  }
  return limits;
}

}  // namespace gcompute::server::ops
