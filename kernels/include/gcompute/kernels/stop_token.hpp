// SPDX-License-Identifier: Apache-2.0
// Cooperative cancellation for iterative kernels (Jacobi sweeps, Floyd-Warshall rounds), and
// where they report the steps they have completed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "gcompute/kernels/progress.hpp"

namespace gcompute::kernels {

/// A non-owning view of a cancel flag, optionally with a deadline. Iterative operations poll
/// it between launches, sweeps or panels and return absl::CancelledError once it is set or
/// the deadline passed, so a cancelled or expired call stops within one iteration. A
/// default-constructed token never stops. The same poll point reports progress:
/// report_steps() publishes how many iterations are done, when the token carries a
/// StepProgress (no synchronisation beyond two relaxed stores).
class StopToken {
 public:
  using Clock = std::chrono::steady_clock;
  StopToken() = default;
  explicit StopToken(const std::atomic<bool>* flag, StepProgress* progress = nullptr,
                     Clock::time_point deadline = Clock::time_point::max())
      : flag_(flag), progress_(progress), deadline_(deadline) {}
  /// A flag and a deadline, without progress.
  StopToken(const std::atomic<bool>* flag, Clock::time_point deadline)
      : StopToken(flag, nullptr, deadline) {}
  bool stop_requested() const {
    if (flag_ != nullptr && flag_->load(std::memory_order_relaxed)) return true;
    // Deadlines the server sets itself fire no gRPC cancel, so they are checked here.
    return deadline_ != Clock::time_point::max() && Clock::now() >= deadline_;
  }
  /// `done` of `total` steps are complete.
  void report_steps(std::int64_t done, std::int64_t total) const {
    if (progress_ == nullptr) return;
    progress_->total.store(total, std::memory_order_relaxed);
    progress_->done.store(done, std::memory_order_relaxed);
  }

 private:
  const std::atomic<bool>* flag_ = nullptr;
  StepProgress* progress_ = nullptr;
  Clock::time_point deadline_ = Clock::time_point::max();
};

}  // namespace gcompute::kernels
