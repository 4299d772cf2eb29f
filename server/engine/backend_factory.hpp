// SPDX-License-Identifier: Apache-2.0
// Chooses the backend for --device=auto|cpu|cuda.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend.hpp"

namespace gcompute::server {

struct BackendOptions {
  std::string device = "auto";
  int cpu_workers = 2;
  int lanes_per_device = 4;
  std::uint64_t pinned_pool_bytes = 1ull << 30;
};

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string note;  ///< why auto fell back to the CPU, else empty
};

/// cpu: the CPU backend. cuda: the CUDA backend or FAILED_PRECONDITION saying why there is
/// no usable GPU. auto: cuda if usable, else cpu with the reason in `note`.
absl::StatusOr<BackendChoice> make_backend(const BackendOptions& options);

/// The CUDA backend over every visible GPU, or UNAVAILABLE with the reason none is usable
/// (no driver, no device, built without CUDA).
absl::StatusOr<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions& options);

}  // namespace gcompute::server
