// SPDX-License-Identifier: Apache-2.0
// The move-only owner behind Event, Stream and the library handles: one CUDA, cuBLAS or
// cuSOLVER handle and the call that destroys it.
#pragma once

#include <utility>

#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::kernels::cuda {

/// Owns a pointer-like `Handle` (null: nothing) and passes it to `Destroy` exactly once, when
/// reset, assigned over or destroyed. A destroy that fails is dropped (drop_error): destructors
/// cannot report it. Default-built and moved-from owners own nothing.
template <typename Handle, auto Destroy>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle handle) noexcept : handle_(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  Handle value() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  void reset() noexcept {
    if (handle_ != nullptr) GC_CUDA_TRY_NO_THROW(Destroy(std::exchange(handle_, nullptr)));
  }

 private:
  Handle handle_ = nullptr;
};

}  // namespace gcompute::kernels::cuda
