// SPDX-License-Identifier: Apache-2.0
// What a GPU benchmark runs on, built from the owning types the server uses: a Resources
// bundle (streams, cuBLAS and cuSOLVER handles, the kernels' events) and the device's
// stream-ordered pool, with the release threshold the server sets. Failures print where and
// why and exit 1, like CHECK_CUDA (exit_on_error.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "exit_on_error.hpp"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/cuda/event.hpp"
#include "gcompute/kernels/cuda/memory.hpp"
#include "gcompute/kernels/cuda/resources.hpp"

namespace gcompute::bench {

/// The value of `result`, or exit 1 naming `what`.
template <typename T>
T check_ok(absl::StatusOr<T> result, const char* what) {
  if (!result.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, result.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(result);
}

inline void check_ok(const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
    std::exit(1);
  }
}

class BenchDevice {
 public:
  /// Device 0 with `options`' resources (the server's non-blocking streams by default).
  explicit BenchDevice(kernels::cuda::ResourcesOptions options = {})
      : resources_(check_ok(kernels::cuda::Resources::create(0, options), "resources")),
        memory_(check_ok(kernels::cuda::MemoryResource::device_default(0), "memory pool")) {}

  kernels::cuda::Context context() const { return resources_.context(); }
  kernels::cuda::StreamView stream() const { return resources_.stream(); }
  const kernels::cuda::MemoryResource& memory() const { return memory_; }

  /// `count` uninitialised elements of T on stream().
  template <typename T>
  kernels::cuda::DeviceArray<T> array(std::size_t count) const {
    return check_ok(kernels::cuda::DeviceArray<T>::create(count, stream(), memory_),
                    "device allocation");
  }
  /// `bytes` uninitialised bytes on stream().
  kernels::cuda::DeviceBuffer buffer(std::size_t bytes) const {
    return check_ok(kernels::cuda::DeviceBuffer::create(bytes, stream(), memory_),
                    "device allocation");
  }

 private:
  kernels::cuda::Resources resources_;
  kernels::cuda::MemoryResource memory_;
};

/// Device 0's properties (exit 1 on failure).
inline cudaDeviceProp device_properties() {
  cudaDeviceProp properties{};
  CHECK_CUDA(cudaGetDeviceProperties(&properties, 0));
  return properties;
}

/// What the solver benchmarks run on: device 0's properties, a BenchDevice with blocking
/// streams (they copy their inputs in with cudaMemcpy, which the legacy default stream orders
/// before the solver's work), its context, stream and cuSOLVER handle, and one parameters
/// object (default algorithms) for cuSOLVER's 64-bit API (cusolverDnX*).
struct SolverEnv {
  SolverEnv() { CHECK_LIBRARY(cusolverDnCreateParams(&params)); }
  ~SolverEnv() { cusolverDnDestroyParams(params); }
  SolverEnv(const SolverEnv&) = delete;
  SolverEnv& operator=(const SolverEnv&) = delete;

  cudaDeviceProp properties = device_properties();
  BenchDevice device{
      kernels::cuda::ResourcesOptions{.non_blocking = false, .priority_stream = false}};
  kernels::cuda::Context ctx = device.context();
  cudaStream_t stream = ctx.stream.value();
  cusolverDnHandle_t cusolver = ctx.cusolver;
  cusolverDnParams_t params = nullptr;
};

/// The cudaDataType_t of float or double, for cuSOLVER's 64-bit API.
template <typename T>
constexpr cudaDataType_t cuda_data_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
}

/// A timing event (exit 1 on failure).
inline kernels::cuda::Event timing_event() {
  return check_ok(kernels::cuda::Event::create(kernels::cuda::EventTiming::kEnabled), "event");
}

/// Median of `reps` timings of f() on `stream` (after one warm-up call), in ms: CUDA events
/// around each call, which enqueues its work on `stream`.
template <typename F>
double median_ms(cudaStream_t stream, int reps, F&& f) {
  f();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const kernels::cuda::Event start = timing_event();
  const kernels::cuda::Event stop = timing_event();
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    CHECK_CUDA(cudaEventRecord(start.value(), stream));
    f();
    CHECK_CUDA(cudaEventRecord(stop.value(), stream));
    CHECK_CUDA(cudaEventSynchronize(stop.value()));
    times.push_back(check_ok(kernels::cuda::elapsed_ms(start, stop), "cudaEventElapsedTime"));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace gcompute::bench
