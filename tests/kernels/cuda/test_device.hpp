// SPDX-License-Identifier: Apache-2.0
// What a GPU kernel test needs, built from the same owning types as the server's lanes: a
// Resources bundle (streams, cuBLAS and cuSOLVER handles, the kernels' events) and the device's
// stream-ordered memory pool. The streams are blocking, unlike the server's, because tests
// mix them with synchronous legacy-stream calls (cudaMemcpy, cudaMemset), which then order
// after everything enqueued on them, allocations included, and before what follows.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <utility>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/cuda/memory.hpp"
#include "gcompute/kernels/cuda/resources.hpp"
#include "support/gpu.hpp"

namespace gcompute::testing {

class TestDevice {
 public:
  /// Device 0, with a priority stream unless `priority_stream` is false, and cuBLAS and
  /// cuSOLVER handles unless `libraries` is false (their creation is slow).
  static absl::StatusOr<TestDevice> create(bool priority_stream = true, bool libraries = true) {
    kernels::cuda::ResourcesOptions options;
    options.non_blocking = false;
    options.priority_stream = priority_stream;
    options.cublas = libraries;
    options.cusolver = libraries;
    absl::StatusOr<kernels::cuda::Resources> resources =
        kernels::cuda::Resources::create(0, options);
    if (!resources.ok()) return resources.status();
    absl::StatusOr<kernels::cuda::MemoryResource> memory =
        kernels::cuda::MemoryResource::device_default(0);
    if (!memory.ok()) return memory.status();
    return TestDevice(*std::move(resources), *memory);
  }

  TestDevice() = default;

  kernels::cuda::Context context() const { return resources_.context(); }
  kernels::cuda::StreamView stream() const { return resources_.stream(); }
  const kernels::cuda::MemoryResource& memory() const { return memory_; }

  /// `bytes` of uninitialised device memory ordered on stream(); a failure fails the test and
  /// returns an empty buffer. Buffers must be destroyed before this TestDevice.
  kernels::cuda::DeviceBuffer buffer(std::size_t bytes) const {
    absl::StatusOr<kernels::cuda::DeviceBuffer> b =
        kernels::cuda::DeviceBuffer::create(bytes, stream(), memory_);
    if (!b.ok()) {
      ADD_FAILURE() << "device buffer of " << bytes << " bytes: " << b.status();
      return {};
    }
    return *std::move(b);
  }

 private:
  TestDevice(kernels::cuda::Resources resources, kernels::cuda::MemoryResource memory)
      : resources_(std::move(resources)), memory_(memory) {}
  kernels::cuda::Resources resources_;
  kernels::cuda::MemoryResource memory_;
};

/// A kernel test's fixture: skips where no GPU is usable, else holds a TestDevice made with
/// the given options and its context. Members of a derived fixture (device buffers) are
/// destroyed before the device.
class DeviceTest : public ::testing::Test {
 protected:
  DeviceTest(bool priority_stream, bool libraries)
      : priority_stream_(priority_stream), libraries_(libraries) {}

  void SetUp() override {
    GC_REQUIRE_GPU();
    absl::StatusOr<TestDevice> device = TestDevice::create(priority_stream_, libraries_);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = *std::move(device);
    ctx_ = device_.context();
  }

  TestDevice device_;
  kernels::cuda::Context ctx_;

 private:
  bool priority_stream_;
  bool libraries_;
};

}  // namespace gcompute::testing
