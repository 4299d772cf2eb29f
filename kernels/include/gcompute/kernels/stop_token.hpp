// SPDX-License-Identifier: Apache-2.0
// Cooperative cancellation for iterative kernels (Jacobi sweeps, Floyd-Warshall rounds).
#pragma once

#include <atomic>
#include <chrono>

namespace gcompute::kernels {

/// A non-owning view of a cancel flag, optionally with a deadline. Iterative operations poll
/// it between launches, sweeps or panels and return absl::CancelledError once it is set or
/// the deadline passed, so a cancelled or expired call stops within one iteration. A
/// default-constructed token never stops.
class StopToken {
 public:
  using Clock = std::chrono::steady_clock;
  StopToken() = default;
  explicit StopToken(const std::atomic<bool>* flag,
                     Clock::time_point deadline = Clock::time_point::max())
      : flag_(flag), deadline_(deadline) {}
  bool stop_requested() const {
    if (flag_ != nullptr && flag_->load(std::memory_order_relaxed)) return true;
    // Deadlines the server sets itself fire no gRPC cancel, so they are checked here.
    return deadline_ != Clock::time_point::max() && Clock::now() >= deadline_;
  }

 private:
  const std::atomic<bool>* flag_ = nullptr;
  Clock::time_point deadline_ = Clock::time_point::max();
};

}  // namespace gcompute::kernels
