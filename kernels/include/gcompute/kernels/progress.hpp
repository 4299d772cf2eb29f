// SPDX-License-Identifier: Apache-2.0
// Progress of iterative kernels (Floyd-Warshall rounds), read by whoever watches the job.
#pragma once

#include <atomic>
#include <cstdint>

namespace gcompute::kernels {

/// Steps an iterative kernel has completed out of how many it will run. Written by the kernel
/// between steps with relaxed stores (a reader may see `done` and `total` of different steps,
/// which only blurs a progress bar) and read by any thread.
struct StepProgress {
  std::atomic<std::int64_t> done{0};
  std::atomic<std::int64_t> total{0};
};

}  // namespace gcompute::kernels
