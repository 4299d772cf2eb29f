// SPDX-License-Identifier: Apache-2.0
// The owning CUDA types of kernels/cuda/{stream,event,memory,resources}.hpp: what they can be
// built from (checked at compile time), creation, moves, stream-ordered frees, zero sizes, and
// the errors a caller can cause (an impossible allocation, a missing pool), each leaving no
// CUDA error behind for the next launch check.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/event.hpp"
#include "gcompute/kernels/cuda/memory.hpp"
#include "gcompute/kernels/cuda/resources.hpp"
#include "gcompute/kernels/cuda/stream.hpp"
#include "support/gpu.hpp"

namespace gcompute::kernels::cuda {
namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

// A view is trivially copyable and cannot be made from 0 or nullptr by accident.
static_assert(std::is_trivially_copyable_v<StreamView>);
static_assert(std::is_constructible_v<StreamView, cudaStream_t>);
static_assert(!std::is_constructible_v<StreamView, int>);
static_assert(!std::is_constructible_v<StreamView, std::nullptr_t>);
static_assert(!std::is_convertible_v<int, StreamView>);
// Owners move and never copy.
static_assert(!std::is_copy_constructible_v<Stream> &&
              std::is_nothrow_move_constructible_v<Stream>);
static_assert(!std::is_copy_constructible_v<Event> && std::is_nothrow_move_constructible_v<Event>);
static_assert(!std::is_copy_constructible_v<DeviceBuffer> &&
              std::is_nothrow_move_constructible_v<DeviceBuffer>);
static_assert(!std::is_copy_constructible_v<DeviceArray<float>> &&
              std::is_nothrow_move_constructible_v<DeviceArray<float>>);
static_assert(!std::is_copy_constructible_v<PinnedBuffer> &&
              std::is_nothrow_move_constructible_v<PinnedBuffer>);
static_assert(!std::is_copy_constructible_v<CublasHandle>);
static_assert(!std::is_copy_constructible_v<CusolverHandle>);
static_assert(!std::is_copy_constructible_v<Resources> && std::is_move_constructible_v<Resources>);
static_assert(std::is_nothrow_destructible_v<DeviceBuffer> &&
              std::is_nothrow_destructible_v<PinnedBuffer> &&
              std::is_nothrow_destructible_v<Stream> && std::is_nothrow_destructible_v<Event>);

class CudaResources : public ::testing::Test {
 protected:
  void SetUp() override {
    GC_REQUIRE_GPU();
    ASSERT_CUDA(cudaSetDevice(0));
    auto memory = MemoryResource::device_default(0);
    ASSERT_TRUE(memory.ok()) << memory.status();
    memory_ = *memory;
    dropped_before_ = dropped_errors();
  }
  void TearDown() override {
    if (memory_.pool() == nullptr) return;  // skipped
    EXPECT_EQ(dropped_errors(), dropped_before_) << "a release call failed";
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a CUDA error was left behind";
  }
  MemoryResource memory_;
  std::uint64_t dropped_before_ = 0;
};

TEST_F(CudaResources, StreamsAndViews) {
  auto stream = Stream::create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE(static_cast<bool>(*stream));
  unsigned int flags = 0;
  ASSERT_CUDA(cudaStreamGetFlags(stream->value(), &flags));
  EXPECT_EQ(flags & cudaStreamNonBlocking, cudaStreamNonBlocking);
  const StreamView view = stream->view();
  EXPECT_EQ(view.value(), stream->value());
  EXPECT_FALSE(view.is_default());
  EXPECT_TRUE(StreamView().is_default());
  EXPECT_TRUE(view.synchronize().ok());

  int least = 0, greatest = 0;
  ASSERT_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  auto blocking = Stream::create({.non_blocking = false, .priority = greatest});
  ASSERT_TRUE(blocking.ok()) << blocking.status();
  ASSERT_CUDA(cudaStreamGetFlags(blocking->value(), &flags));
  EXPECT_EQ(flags & cudaStreamNonBlocking, 0u);
  int priority = 0;
  ASSERT_CUDA(cudaStreamGetPriority(blocking->value(), &priority));
  EXPECT_EQ(priority, greatest);

  Stream moved = *std::move(stream);
  EXPECT_EQ(moved.value(), view.value());
  moved = *std::move(blocking);  // destroys the first stream
  EXPECT_NE(moved.value(), view.value());
  Stream empty;
  EXPECT_FALSE(static_cast<bool>(empty));
}

TEST_F(CudaResources, EventsRecordAndTime) {
  auto stream = Stream::create();
  ASSERT_TRUE(stream.ok());
  auto start = Event::create(EventTiming::kEnabled);
  auto end = Event::create(EventTiming::kEnabled);
  auto plain = Event::create();
  ASSERT_TRUE(start.ok() && end.ok() && plain.ok());
  ASSERT_TRUE(start->record(stream->view()).ok());
  ASSERT_TRUE(plain->record(stream->view()).ok());
  ASSERT_TRUE(end->record(stream->view()).ok());
  ASSERT_TRUE(end->synchronize().ok());
  ASSERT_TRUE(plain->synchronize().ok());
  auto ms = elapsed_ms(*start, *end);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GE(*ms, 0.0f);
  // A timing-disabled event cannot time: an error the caller sees, and that does not linger.
  EXPECT_FALSE(elapsed_ms(*start, *plain).ok());
  static_cast<void>(cudaGetLastError());
}

TEST_F(CudaResources, DeviceBuffersAreStreamOrdered) {
  auto a = Stream::create();
  auto b = Stream::create();
  ASSERT_TRUE(a.ok() && b.ok());
  const std::size_t count = 1 << 20;
  auto buffer = DeviceArray<std::uint32_t>::create(count, a->view(), memory_);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  EXPECT_EQ(buffer->size(), count);
  EXPECT_EQ(buffer->bytes(), count * 4);
  EXPECT_EQ(buffer->stream().value(), a->value());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer->data()) % 256, 0u);
  std::vector<std::uint32_t> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<std::uint32_t>(i * 2654435761u);
  ASSERT_CUDA(
      cudaMemcpyAsync(buffer->data(), host.data(), count * 4, cudaMemcpyHostToDevice, a->value()));
  std::vector<std::uint32_t> back(count, 0);
  ASSERT_CUDA(
      cudaMemcpyAsync(back.data(), buffer->data(), count * 4, cudaMemcpyDeviceToHost, a->value()));
  ASSERT_TRUE(a->synchronize().ok());
  EXPECT_EQ(back, host);
  // Handed to stream b: freed there.
  buffer->set_stream(b->view());
  EXPECT_EQ(buffer->stream().value(), b->value());
  DeviceArray<std::uint32_t> moved = *std::move(buffer);
  EXPECT_EQ(moved.stream().value(), b->value());
  moved.reset();
  EXPECT_TRUE(moved.empty());
  EXPECT_EQ(moved.data(), nullptr);
  ASSERT_TRUE(b->synchronize().ok());

  auto zero = DeviceBuffer::create(0, a->view(), memory_);
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->empty());
  EXPECT_EQ(zero->data(), nullptr);
}

TEST_F(CudaResources, UsedBytesFollowAllocations) {
  auto stream = Stream::create();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(stream->synchronize().ok());
  const std::uint64_t before = memory_.used_bytes();
  {
    auto buffer = DeviceBuffer::create(64 << 20, stream->view(), memory_);
    ASSERT_TRUE(buffer.ok());
    EXPECT_GE(memory_.used_bytes(), before + (64 << 20));
  }
  ASSERT_TRUE(stream->synchronize().ok());
  EXPECT_EQ(memory_.used_bytes(), before);
}

TEST_F(CudaResources, ImpossibleAllocationIsResourceExhaustedAndLeavesNoError) {
  auto stream = Stream::create();
  ASSERT_TRUE(stream.ok());
  const std::size_t huge = std::size_t{1} << 40;  // 1 TiB, beyond any GPU
  auto buffer = DeviceBuffer::create(huge, stream->view(), memory_);
  ASSERT_FALSE(buffer.ok());
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kResourceExhausted) << buffer.status();
  EXPECT_NE(buffer.status().message().find(std::to_string(huge)), absl::string_view::npos)
      << buffer.status();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // The next allocation and launch-free call still work.
  auto small = DeviceBuffer::create(4096, stream->view(), memory_);
  ASSERT_TRUE(small.ok()) << small.status();
  auto overflow = DeviceArray<double>::create(~std::size_t{0} / 4, stream->view(), memory_);
  EXPECT_EQ(overflow.status().code(), absl::StatusCode::kInvalidArgument);
  auto no_pool = DeviceBuffer::create(16, stream->view(), MemoryResource());
  EXPECT_EQ(no_pool.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(CudaResources, PinnedBuffers) {
  auto pinned = PinnedBuffer::create(1 << 20, cudaHostAllocPortable);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(pinned->size(), 1u << 20);
  unsigned int flags = 0;
  ASSERT_CUDA(cudaHostGetFlags(&flags, pinned->data()));
  EXPECT_NE(flags & cudaHostAllocPortable, 0u);
  std::memset(pinned->data(), 0x5a, pinned->size());
  PinnedBuffer moved = *std::move(pinned);
  EXPECT_EQ(moved.data_as<unsigned char>()[12345], 0x5a);
  auto zero = PinnedBuffer::create(0);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->data(), nullptr);
}

TEST_F(CudaResources, ResourcesFillTheContext) {
  auto full = Resources::create(0);
  ASSERT_TRUE(full.ok()) << full.status();
  const Context c = full->context();
  EXPECT_EQ(c.device, 0);
  EXPECT_FALSE(c.stream.is_default());
  EXPECT_FALSE(c.priority_stream.is_default());
  EXPECT_NE(c.stream.value(), c.priority_stream.value());
  EXPECT_NE(c.cublas, nullptr);
  EXPECT_NE(c.cusolver, nullptr);
  for (cudaEvent_t e : c.events) EXPECT_NE(e, nullptr);
  cudaStream_t bound = nullptr;
  ASSERT_EQ(cublasGetStream(c.cublas, &bound), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(bound, c.stream.value());
  ASSERT_EQ(cusolverDnGetStream(c.cusolver, &bound), CUSOLVER_STATUS_SUCCESS);
  EXPECT_EQ(bound, c.stream.value());

  auto bare = Resources::create(0, {.priority_stream = false, .cublas = false, .cusolver = false});
  ASSERT_TRUE(bare.ok()) << bare.status();
  const Context b = bare->context();
  EXPECT_TRUE(b.priority_stream.is_default());
  EXPECT_EQ(b.cublas, nullptr);
  EXPECT_EQ(b.cusolver, nullptr);
  for (cudaEvent_t e : b.events) EXPECT_NE(e, nullptr);

  Resources moved = *std::move(full);
  EXPECT_EQ(moved.context().stream.value(), c.stream.value());
}

TEST_F(CudaResources, BadDeviceIsAnErrorNotACrash) {
  int count = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&count));
  auto r = Resources::create(count);
  EXPECT_FALSE(r.ok());
  static_cast<void>(cudaGetLastError());
  ASSERT_CUDA(cudaSetDevice(0));
  auto m = MemoryResource::device_default(count);
  EXPECT_FALSE(m.ok());
  static_cast<void>(cudaGetLastError());
}

}  // namespace
}  // namespace gcompute::kernels::cuda
