// SPDX-License-Identifier: Apache-2.0
// Turning CUDA, cuBLAS and cuSOLVER error codes into absl::Status with the failing call named.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::kernels::cuda {

/// cudaErrorMemoryAllocation becomes RESOURCE_EXHAUSTED (per request, recoverable); every other
/// error becomes INTERNAL with "<call> failed at file:line: <name>: <description>".
inline absl::Status cuda_status(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return absl::OkStatus();
  std::string msg = absl::StrCat(call, " failed at ", file, ":", line, ": ", cudaGetErrorName(err),
                                 ": ", cudaGetErrorString(err));
  if (err == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

inline absl::Status cublas_status(cublasStatus_t err, const char* call, const char* file,
                                  int line) {
  if (err == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  std::string msg =
      absl::StrCat(call, " failed at ", file, ":", line, ": ", cublasGetStatusName(err));
  if (err == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

inline absl::Status cusolver_status(cusolverStatus_t err, const char* call, const char* file,
                                    int line) {
  if (err == CUSOLVER_STATUS_SUCCESS) return absl::OkStatus();
  std::string msg = absl::StrCat(call, " failed at ", file, ":", line, ": cusolver status ",
                                 static_cast<int>(err));
  if (err == CUSOLVER_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

/// True for errors that leave the CUDA context unusable (the device must be marked failed).
inline bool is_sticky(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

namespace detail {
inline std::atomic<std::uint64_t>& dropped_error_count() noexcept {
  static std::atomic<std::uint64_t> count{0};
  return count;
}
}  // namespace detail

/// What a destructor does with the status of a release call it cannot report: a failure is
/// counted, and for the runtime API the thread's last-error state is cleared, so that the next
/// GC_CUDA_CHECK_LAUNCH does not blame an unrelated launch for it. A sticky error stays visible
/// to the owner's next checked call (every call returns it). Never throws, never aborts, never
/// logs (kernels/ has no logger).
inline void drop_error(cudaError_t err) noexcept {
  if (err == cudaSuccess) return;
  static_cast<void>(cudaGetLastError());
  detail::dropped_error_count().fetch_add(1, std::memory_order_relaxed);
}
inline void drop_error(cublasStatus_t err) noexcept {
  if (err != CUBLAS_STATUS_SUCCESS)
    detail::dropped_error_count().fetch_add(1, std::memory_order_relaxed);
}
inline void drop_error(cusolverStatus_t err) noexcept {
  if (err != CUSOLVER_STATUS_SUCCESS)
    detail::dropped_error_count().fetch_add(1, std::memory_order_relaxed);
}

/// Failures dropped by destructors so far (for tests and diagnostics).
inline std::uint64_t dropped_errors() noexcept {
  return detail::dropped_error_count().load(std::memory_order_relaxed);
}

}  // namespace gcompute::kernels::cuda

/// For destructors and other paths that cannot return a status (see drop_error).
#define GC_CUDA_TRY_NO_THROW(call) ::gcompute::kernels::cuda::drop_error((call))

#define GC_CUDA_TRY(call) \
  GC_RETURN_IF_ERROR(::gcompute::kernels::cuda::cuda_status((call), #call, __FILE__, __LINE__))

/// Checks the launch just issued (configuration errors surface here, not at the next sync).
/// Reads and clears the launch error so one failed launch does not fail every later call.
#define GC_CUDA_CHECK_LAUNCH(name) GC_CUDA_TRY((static_cast<void>(name), cudaGetLastError()))

#define GC_CUBLAS_TRY(call) \
  GC_RETURN_IF_ERROR(::gcompute::kernels::cuda::cublas_status((call), #call, __FILE__, __LINE__))

#define GC_CUSOLVER_TRY(call) \
  GC_RETURN_IF_ERROR(::gcompute::kernels::cuda::cusolver_status((call), #call, __FILE__, __LINE__))
