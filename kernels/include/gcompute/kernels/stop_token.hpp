// SPDX-License-Identifier: Apache-2.0
// Cooperative cancellation for iterative kernels (Jacobi sweeps, Floyd-Warshall rounds), and
// where they report the steps they have completed.
#pragma once

#include <atomic>
#include <cstdint>

#include "gcompute/kernels/progress.hpp"

namespace gcompute::kernels {

/// A non-owning view of a cancel flag. Iterative operations poll it between launches or
/// sweeps and return absl::CancelledError once it is set, so a cancelled or expired call
/// stops within one iteration. A default-constructed token never stops. The same poll point
/// reports progress: report_steps() publishes how many iterations are done, when the token
/// carries a StepProgress (no synchronisation beyond two relaxed stores).
class StopToken {
 public:
  StopToken() = default;
  explicit StopToken(const std::atomic<bool>* flag, StepProgress* progress = nullptr)
      : flag_(flag), progress_(progress) {}
  bool stop_requested() const { return flag_ != nullptr && flag_->load(std::memory_order_relaxed); }
  /// `done` of `total` steps are complete.
  void report_steps(std::int64_t done, std::int64_t total) const {
    if (progress_ == nullptr) return;
    progress_->total.store(total, std::memory_order_relaxed);
    progress_->done.store(done, std::memory_order_relaxed);
  }

 private:
  const std::atomic<bool>* flag_ = nullptr;
  StepProgress* progress_ = nullptr;
};

}  // namespace gcompute::kernels
