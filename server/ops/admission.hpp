// SPDX-License-Identifier: Apache-2.0
// Admission before allocation: a request's memory is estimated from its header and checked
// against the per-request limits, so a few bytes on the wire cannot make the server allocate
// gigabytes (or fill a GPU) before it refuses them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/backend.hpp"
#include "ops/limits.hpp"

namespace gcompute::server::ops {

/// OK when `estimate_bytes` fits the host limit and, when `on_device`, the device limit;
/// otherwise RESOURCE_EXHAUSTED naming `what`, the estimate, the limit and its flag.
absl::Status admit(std::uint64_t estimate_bytes, const std::string& what, const Limits& limits,
                   bool on_device);

/// a + b without wrapping (saturates at the largest value).
std::uint64_t add_bytes(std::uint64_t a, std::uint64_t b);
/// a * b without wrapping (saturates at the largest value).
std::uint64_t mul_bytes(std::uint64_t a, std::uint64_t b);

/// Physical memory of this host (sysconf), 0 if unknown.
std::uint64_t host_memory_bytes();

/// Limits with the memory limits left at 0 set to their defaults: half of the host's memory,
/// and three quarters of the smallest GPU's (when `devices` report memory).
Limits with_default_memory_limits(Limits limits, const std::vector<DeviceInfo>& devices);

}  // namespace gcompute::server::ops
