// SPDX-License-Identifier: Apache-2.0
// Turning CUDA, cuBLAS and cuSOLVER error codes into absl::Status with the failing call named.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

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

}  // namespace gcompute::kernels::cuda

#define GC_CUDA_TRY(call)                                                              \
  do {                                                                                 \
    if (::absl::Status gc_status_ =                                                    \
            ::gcompute::kernels::cuda::cuda_status((call), #call, __FILE__, __LINE__); \
        !gc_status_.ok())                                                              \
      return gc_status_;                                                               \
  } while (0)

/// Checks the launch just issued (configuration errors surface here, not at the next sync).
/// Reads and clears the launch error so one failed launch does not fail every later call.
#define GC_CUDA_CHECK_LAUNCH(name) GC_CUDA_TRY((static_cast<void>(name), cudaGetLastError()))

#define GC_CUBLAS_TRY(call)                                                              \
  do {                                                                                   \
    if (::absl::Status gc_status_ =                                                      \
            ::gcompute::kernels::cuda::cublas_status((call), #call, __FILE__, __LINE__); \
        !gc_status_.ok())                                                                \
      return gc_status_;                                                                 \
  } while (0)

#define GC_CUSOLVER_TRY(call)                                                              \
  do {                                                                                     \
    if (::absl::Status gc_status_ =                                                        \
            ::gcompute::kernels::cuda::cusolver_status((call), #call, __FILE__, __LINE__); \
        !gc_status_.ok())                                                                  \
      return gc_status_;                                                                   \
  } while (0)
