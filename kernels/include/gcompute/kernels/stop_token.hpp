// SPDX-License-Identifier: Apache-2.0
// Cooperative cancellation for iterative kernels (Jacobi sweeps, Floyd-Warshall rounds).
#pragma once

#include <atomic>

namespace gcompute::kernels {

/// A non-owning view of a cancel flag. Iterative operations poll it between launches or
/// sweeps and return absl::CancelledError once it is set, so a cancelled or expired call
/// stops within one iteration. A default-constructed token never stops.
class StopToken {
 public:
  StopToken() = default;
  explicit StopToken(const std::atomic<bool>* flag) : flag_(flag) {}
  bool stop_requested() const { return flag_ != nullptr && flag_->load(std::memory_order_relaxed); }

 private:
  const std::atomic<bool>* flag_ = nullptr;
};

}  // namespace gcompute::kernels
