// SPDX-License-Identifier: Apache-2.0
// cuda::first_violation: the lowest index failing a value check, by one grid-stride pass and an
// atomicMin (each thread's first failure is its lowest, since its indices only grow).
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "detail/launch_helpers.hpp"
#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/scan.hpp"

namespace gcompute::kernels::cuda {
namespace detail {

struct NotFinite {
  template <class T>
  __device__ bool operator()(T v) const {
    return !isfinite(v);
  }
};

struct BadApspF32 {
  __device__ bool operator()(float v) const { return v != v || v == -__int_as_float(0x7f800000); }
};

struct BadApspI32 {
  __device__ bool operator()(std::int32_t v) const {
    return v != kI32NoEdge && (v > kI32MaxAbsWeight || v < -kI32MaxAbsWeight);
  }
};

template <class T, class Bad>
__global__ void first_bad_kernel(const T* __restrict__ data, unsigned long long count, Bad bad,
                                 unsigned long long* first) {
  for (unsigned long long e =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       e < count; e += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    if (bad(data[e])) {
      atomicMin(first, e);
      return;
    }
  }
}

}  // namespace detail

namespace {

constexpr int kThreads = 256;

template <class T, class Bad>
absl::StatusOr<ScanResult> scan(const Context& ctx, const void* data, std::uint64_t count, Bad bad,
                                void* workspace) {
  const cudaStream_t stream = ctx.stream;
  auto* first = static_cast<unsigned long long*>(workspace);
  GC_CUDA_TRY(cudaMemsetAsync(first, 0xFF, sizeof(unsigned long long), stream));
  detail::first_bad_kernel<T, Bad>
      <<<detail::grid_1d(static_cast<std::int64_t>(count), kThreads), kThreads, 0, stream>>>(
          static_cast<const T*>(data), count, bad, first);
  GC_CUDA_CHECK_LAUNCH("first_bad_kernel");
  unsigned long long index = 0;
  GC_CUDA_TRY(cudaMemcpyAsync(&index, first, sizeof(index), cudaMemcpyDeviceToHost, stream));
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  if (index == ~0ull) return ScanResult{};
  T value{};
  GC_CUDA_TRY(cudaMemcpyAsync(&value, static_cast<const T*>(data) + index, sizeof(T),
                              cudaMemcpyDeviceToHost, stream));
  GC_CUDA_TRY(cudaStreamSynchronize(stream));
  return ScanResult{static_cast<std::int64_t>(index), static_cast<double>(value)};
}

}  // namespace

absl::StatusOr<ScanResult> first_violation(const Context& ctx, const void* data,
                                           std::uint64_t count, DType dtype, ValueCheck check,
                                           void* workspace) {
  if (count == 0) return ScanResult{};
  if (data == nullptr || workspace == nullptr) {
    return absl::InvalidArgumentError("first_violation: null data or workspace");
  }
  switch (check) {
    case ValueCheck::kFinite:
      if (dtype == DType::kF32)
        return scan<float>(ctx, data, count, detail::NotFinite{}, workspace);
      if (dtype == DType::kF64) {
        return scan<double>(ctx, data, count, detail::NotFinite{}, workspace);
      }
      return ScanResult{};
    case ValueCheck::kApspWeight:
      if (dtype == DType::kF32) {
        return scan<float>(ctx, data, count, detail::BadApspF32{}, workspace);
      }
      if (dtype == DType::kI32) {
        return scan<std::int32_t>(ctx, data, count, detail::BadApspI32{}, workspace);
      }
      return ScanResult{};
  }
  return ScanResult{};
}

}  // namespace gcompute::kernels::cuda
