// SPDX-License-Identifier: Apache-2.0
// Carves a driver's pieces out of the one workspace its caller allocates.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gcompute::kernels::cuda::detail {

/// Hands out 256-byte aligned pieces of a workspace in order; with a null base it only counts
/// the bytes, so the size query and the run share one layout.
class WorkspaceCarver {
 public:
  static constexpr std::size_t kAlignment = 256;

  explicit WorkspaceCarver(void* base) : base_(static_cast<char*>(base)) {}

  template <typename X>
  X* take(std::int64_t count) {
    offset_ = (offset_ + kAlignment - 1) / kAlignment * kAlignment;
    X* p = base_ != nullptr ? reinterpret_cast<X*>(base_ + offset_) : nullptr;
    offset_ += static_cast<std::size_t>(count) * sizeof(X);
    return p;
  }
  std::size_t bytes() const { return offset_; }

 private:
  char* base_;
  std::size_t offset_ = 0;
};

}  // namespace gcompute::kernels::cuda::detail
