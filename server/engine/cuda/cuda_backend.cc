// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/cuda_backend.hpp"

#include <cuda.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/output_shapes.hpp"
#include "engine/cpu_backend.hpp"
#include "engine/cuda/graph_mirror_cuda.hpp"
#include "engine/cuda/pinned_transpose.hpp"
#include "engine/cuda/transfers.hpp"
#include "gcompute/kernels/cpu/apsp.hpp"
#include "gcompute/kernels/cuda/apsp.hpp"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/eigh.hpp"
#include "gcompute/kernels/cuda/matmul.hpp"
#include "gcompute/kernels/cuda/scan.hpp"
#include "gcompute/kernels/cuda/sssp.hpp"
#include "gcompute/kernels/cuda/svd.hpp"
#include "gcompute/kernels/cuda/transpose.hpp"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server {

absl::StatusOr<std::unique_ptr<Backend>> make_cuda_backend(const BackendOptions& options) {
  auto backend = cuda::CudaBackend::create(options);
  if (!backend.ok()) return backend.status();
  return std::unique_ptr<Backend>(*std::move(backend));
}

namespace cuda {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Start-up

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::create(const BackendOptions& options) {
  return create(options, kernels::cuda::tuning_from_environment());
}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::create(
    const BackendOptions& options, const kernels::cuda::Tuning& tuning) {
  if (absl::Status st = kernels::validate(tuning.svd); !st.ok()) return st;
  if (absl::Status st = kernels::validate(tuning.apsp); !st.ok()) return st;
  int count = 0;
  if (cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    cudaGetLastError();
    return absl::UnavailableError(
        absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorName(err), ": ", cudaGetErrorString(err)));
  }
  if (count == 0) return absl::UnavailableError("no CUDA devices are visible");
  if (options.lanes_per_device < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lanes-per-device must be >= 1, got ", options.lanes_per_device));
  }
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  b->tuning_ = tuning;
  for (int d = 0; d < count; ++d) {
    auto dev = std::make_unique<Device>();
    dev->index = d;
    cudaDeviceProp prop{};
    GC_CUDA_TRY(cudaGetDeviceProperties(&prop, d));
    dev->info =
        DeviceInfo{d, prop.name, prop.totalGlobalMem, absl::StrCat(prop.major, ".", prop.minor)};
    GC_CUDA_TRY(cudaSetDevice(d));
    // Keeps freed memory in the pool for the next request instead of returning it to the OS.
    auto memory = kernels::cuda::MemoryResource::device_default(d);
    if (!memory.ok()) return memory.status();
    dev->memory = *memory;
    auto aux_stream = kernels::cuda::Stream::create();
    if (!aux_stream.ok()) return aux_stream.status();
    dev->aux_stream = *std::move(aux_stream);
    auto aux_events = make_staging_events();
    if (!aux_events.ok()) return aux_events.status();
    dev->aux_events = *std::move(aux_events);
    for (int l = 0; l < options.lanes_per_device; ++l) {
      auto lane = Lane::create(d, l);
      if (!lane.ok()) return lane.status();
      dev->lanes.push_back(*std::move(lane));
      dev->busy.push_back(false);
    }
    b->total_lanes_ += options.lanes_per_device;
    b->devices_.push_back(std::move(dev));
  }
  // Each lane (and each device's aux stream) stages through at most one block at a time.
  const std::uint64_t users = static_cast<std::uint64_t>(b->total_lanes_ + count);
  const std::uint64_t max_block = std::bit_floor(std::max<std::uint64_t>(
      PinnedPool::kMinBlock,
      std::min<std::uint64_t>(64ull << 20, options.pinned_pool_bytes / users)));
  auto pool = PinnedPool::create(options.pinned_pool_bytes, max_block);
  if (!pool.ok()) return pool.status();
  b->pinned_ = *std::move(pool);
  return b;
}

CudaBackend::~CudaBackend() {
  // Each device's resources are released with that device current, after its aux stream (the
  // frees of stored results) has drained.
  for (auto& dev : devices_) {
    GC_CUDA_TRY_NO_THROW(cudaSetDevice(dev->index));
    GC_CUDA_TRY_NO_THROW(cudaStreamSynchronize(dev->aux_stream.value()));
    dev.reset();
  }
}

kernels::cuda::MemoryResource CudaBackend::memory_resource(int device) const {
  return devices_[static_cast<std::size_t>(device)]->memory;
}

std::vector<DeviceInfo> CudaBackend::devices() const {
  std::vector<DeviceInfo> out;
  for (const auto& d : devices_) out.push_back(d->info);
  return out;
}

ResourceStats CudaBackend::resource_stats() const {
  ResourceStats s;
  s.pinned_capacity_bytes = pinned_->capacity();
  s.pinned_used_bytes = pinned_->used_bytes();
  s.pinned_misses = pinned_->misses();
  std::lock_guard lock(mu_);
  for (const auto& d : devices_) {
    const std::uint64_t used = d->failed ? 0 : d->memory.used_bytes();
    s.devices.push_back({d->index, used, d->info.memory_bytes, !d->failed});
  }
  return s;
}

absl::StatusOr<std::unique_ptr<MirrorTargetFactory>> CudaBackend::make_graph_copies() {
  return make_cuda_mirror_targets(*this);
}

// ---------------------------------------------------------------------------------------
// Lanes and memory

absl::StatusOr<CudaBackend::LaneLease> CudaBackend::acquire_lane() {
  std::unique_lock lock(mu_);
  for (;;) {
    Device* best = nullptr;
    bool any_healthy = false;
    for (auto& d : devices_) {
      if (d->failed) continue;
      any_healthy = true;
      if (d->busy_count < static_cast<int>(d->lanes.size()) &&
          (best == nullptr || d->busy_count < best->busy_count)) {
        best = d.get();
      }
    }
    if (!any_healthy) return absl::UnavailableError("every GPU of this server has failed");
    if (best != nullptr) {
      for (std::size_t i = 0; i < best->lanes.size(); ++i) {
        if (!best->busy[i]) {
          best->busy[i] = true;
          ++best->busy_count;
          Lane* lane = best->lanes[i].get();
          lock.unlock();
          if (cudaError_t err = cudaSetDevice(lane->device()); err != cudaSuccess) {
            release_lane(lane);
            return check_device(lane->device(), kernels::cuda::cuda_status(err, "cudaSetDevice",
                                                                           __FILE__, __LINE__));
          }
          return LaneLease(this, lane);
        }
      }
    }
    lane_freed_.wait(lock);
  }
}

void CudaBackend::release_lane(Lane* lane) {
  {
    std::lock_guard lock(mu_);
    Device& d = *devices_[static_cast<std::size_t>(lane->device())];
    d.busy[static_cast<std::size_t>(lane->index())] = false;
    --d.busy_count;
  }
  lane_freed_.notify_one();
}

CudaBackend::LaneLease::~LaneLease() {
  if (lane_ != nullptr) backend_->release_lane(lane_);
}

absl::Status CudaBackend::check_device(int device, absl::Status status) {
  if (status.ok()) return status;
  // A sticky error poisons the context: every later call, such as this query, returns it.
  cudaError_t err = cudaGetLastError();
  if (!kernels::cuda::is_sticky(err)) err = cudaStreamQuery(nullptr);
  if (kernels::cuda::is_sticky(err)) {
    {
      std::lock_guard lock(mu_);
      devices_[static_cast<std::size_t>(device)]->failed = true;
    }
    absl::Status fatal =
        absl::InternalError(absl::StrCat("GPU ", device, " failed with a sticky error (",
                                         cudaGetErrorName(err), "): ", status.message()));
    report_fatal(fatal);
    return absl::UnavailableError(fatal.message());
  }
  return status;
}

absl::StatusOr<CudaBackend::LaneLease> CudaBackend::acquire_lane_for(JobContext& ctx) {
  auto lane = acquire_lane();
  if (lane.ok()) {
    ctx.device = absl::StrCat("cuda:", (*lane)->device());
    ctx.lane = (*lane)->index();
  }
  return lane;
}

absl::StatusOr<std::shared_ptr<DeviceCopy>> CudaBackend::allocate(Lane& lane, std::uint64_t bytes) {
  return allocate(lane.device(), lane.stream(), bytes);
}

absl::StatusOr<std::shared_ptr<DeviceCopy>> CudaBackend::allocate(int device,
                                                                  kernels::cuda::StreamView stream,
                                                                  std::uint64_t bytes) {
  Device& dev = *devices_[static_cast<std::size_t>(device)];
  auto buffer = kernels::cuda::DeviceBuffer::create(bytes, stream, dev.memory);
  if (absl::IsResourceExhausted(buffer.status()) && release_cached_memory() > 0) {
    // The released memory returns to the pool once the aux stream has run its frees.
    if (cudaStreamSynchronize(dev.aux_stream.value()) == cudaSuccess) {
      buffer = kernels::cuda::DeviceBuffer::create(bytes, stream, dev.memory);
    }
  }
  if (!buffer.ok()) {
    if (absl::IsResourceExhausted(buffer.status())) {
      return absl::ResourceExhaustedError(absl::StrCat("GPU ", device,
                                                       " is out of memory allocating ", bytes,
                                                       " bytes; retry later or send less"));
    }
    return check_device(device, buffer.status());
  }
  // Stream-ordered free on the device's aux stream: by the time a DeviceCopy dies, every job
  // that used it has synchronised its lane.
  buffer->set_stream(dev.aux_stream.view());
  // The DeviceCopy and the buffer that owns its memory share one allocation and one count.
  struct Owned {
    kernels::cuda::DeviceBuffer buffer;
    DeviceCopy copy;
  };
  auto owned = std::make_shared<Owned>();
  owned->buffer = *std::move(buffer);
  owned->copy.device = device;
  owned->copy.ptr = owned->buffer.data();
  owned->copy.bytes = bytes;
  return std::shared_ptr<DeviceCopy>(owned, &owned->copy);
}

absl::StatusOr<std::shared_ptr<DeviceCopy>> CudaBackend::to_device(Lane& lane, const Matrix& m,
                                                                   JobContext& ctx) {
  if (m.device && m.device->device == lane.device()) return m.device;
  if (!m.on_host()) {
    Matrix copy = m;
    if (auto st = ensure_on_host(copy); !st.ok()) return st;
    return to_device(lane, copy, ctx);
  }
  auto buf = allocate(lane, m.desc.bytes());
  if (!buf.ok()) return buf.status();
  const auto t0 = Clock::now();
  if (m.view_pinned) {
    // A page-locked client region: one DMA straight from it, no staging.
    GC_RETURN_IF_ERROR(check_device(
        lane.device(), kernels::cuda::cuda_status(
                           cudaMemcpyAsync((*buf)->ptr, m.bytes(), m.desc.bytes(),
                                           cudaMemcpyHostToDevice, lane.stream()),
                           "cudaMemcpyAsync (pinned region to device)", __FILE__, __LINE__)));
    GC_RETURN_IF_ERROR(check_device(
        lane.device(), kernels::cuda::cuda_status(cudaStreamSynchronize(lane.stream()),
                                                  "cudaStreamSynchronize", __FILE__, __LINE__)));
  } else if (auto st = copy_to_device(*pinned_, lane.stream(), lane.staging_events(), (*buf)->ptr,
                                      reinterpret_cast<const char*>(m.bytes()), m.desc.bytes());
             !st.ok()) {
    return check_device(lane.device(), st);
  }
  ctx.times.h2d_seconds += seconds_since(t0);
  return buf;
}

absl::StatusOr<Matrix> CudaBackend::finish_output(Lane& lane, const MatrixDesc& desc,
                                                  std::shared_ptr<DeviceCopy> buffer,
                                                  JobContext& ctx, const QueuedBefore* queued) {
  if (ctx.results_stay_on_server) {
    if (queued != nullptr) {  // the result is ready once the queued work is
      GC_RETURN_IF_ERROR(check_device(
          lane.device(), kernels::cuda::cuda_status(cudaEventSynchronize(queued->done),
                                                    "cudaEventSynchronize", __FILE__, __LINE__)));
      queued->finished();
    }
    return Matrix{desc, nullptr, std::move(buffer)};
  }
  auto host = allocate_matrix(desc);  // while queued work runs
  if (!host.ok()) {
    // Queued work may still use `buffer` and the operands: drained before they go.
    (void)cudaStreamSynchronize(lane.stream());
    return host.status();
  }
  auto copy_start = Clock::now();
  QueuedBefore timed;
  if (queued != nullptr) {
    timed = {queued->done, [&] {
               queued->finished();
               copy_start = Clock::now();
             }};
  }
  if (auto st = copy_to_host(*pinned_, lane.stream(), lane.staging_events(), host->data->data(),
                             buffer->ptr, desc.bytes(), queued != nullptr ? &timed : nullptr);
      !st.ok()) {
    // Queued work may still use `buffer` and the operands: drained before they go.
    (void)cudaStreamSynchronize(lane.stream());
    return check_device(lane.device(), st);
  }
  ctx.times.d2h_seconds += seconds_since(copy_start);
  return host;
}

absl::StatusOr<Matrix> CudaBackend::finish_with_output(Lane& lane, absl::Status launched,
                                                       Clock::time_point start,
                                                       const MatrixDesc& desc,
                                                       std::shared_ptr<DeviceCopy> buffer,
                                                       JobContext& ctx) {
  if (!launched.ok()) return check_device(lane.device(), std::move(launched));
  // The lane's first context event: no kernel borrows it once its launch has returned.
  const cudaEvent_t computed = lane.context().events[0];
  if (cudaError_t err = cudaEventRecord(computed, lane.stream()); err != cudaSuccess) {
    (void)cudaStreamSynchronize(lane.stream());
    return check_device(lane.device(),
                        kernels::cuda::cuda_status(err, "cudaEventRecord", __FILE__, __LINE__));
  }
  const QueuedBefore kernel{computed, [&] { ctx.times.compute_seconds += seconds_since(start); }};
  return finish_output(lane, desc, std::move(buffer), ctx, &kernel);
}

absl::StatusOr<std::shared_ptr<DeviceCopy>> CudaBackend::allocate_if(Lane& lane, bool wanted,
                                                                     std::uint64_t bytes) {
  if (!wanted) return std::shared_ptr<DeviceCopy>();
  return allocate(lane, bytes);
}

absl::StatusOr<std::optional<Matrix>> CudaBackend::finish_output_if(
    Lane& lane, const MatrixDesc& desc, std::shared_ptr<DeviceCopy> buffer, JobContext& ctx) {
  if (buffer == nullptr) return std::nullopt;
  return finish_output(lane, desc, std::move(buffer), ctx);
}

template <typename Launch>
auto CudaBackend::launch_with_workspace(Lane& lane, absl::StatusOr<std::uint64_t> workspace_bytes,
                                        JobContext& ctx, Launch&& launch)
    -> decltype(launch(static_cast<void*>(nullptr), std::uint64_t{})) {
  if (!workspace_bytes.ok()) return check_device(lane.device(), workspace_bytes.status());
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> workspace,
                      allocate(lane, *workspace_bytes));
  const auto t0 = Clock::now();
  auto info = launch(workspace->ptr, *workspace_bytes);
  if (!info.ok()) {
    cudaStreamSynchronize(lane.stream());
    return check_device(lane.device(), info.status());
  }
  ctx.times.compute_seconds += seconds_since(t0);
  return info;
}

absl::StatusOr<kernels::ScanResult> CudaBackend::first_violation(const Matrix& m,
                                                                 kernels::ValueCheck check) {
  if (m.on_host() || !m.device) return Backend::first_violation(m, check);
  Device& d = *devices_[static_cast<std::size_t>(m.device->device)];
  GC_CUDA_TRY(cudaSetDevice(d.index));
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> scratch,
                      allocate(d.index, d.aux_stream.view(), kernels::cuda::kScanWorkspaceBytes));
  kernels::cuda::Context ctx;
  ctx.stream = d.aux_stream.view();
  ctx.device = d.index;
  absl::StatusOr<kernels::ScanResult> found = kernels::cuda::first_violation(
      ctx, m.device->ptr, m.desc.elements(), m.desc.dtype, check, scratch->ptr);
  if (!found.ok()) return check_device(d.index, found.status());
  return found;
}

absl::Status CudaBackend::ensure_on_host(Matrix& m) {
  if (m.on_host()) return absl::OkStatus();
  if (!m.device) return absl::InternalError("matrix has neither host bytes nor a device copy");
  auto host = allocate_matrix(m.desc);
  if (!host.ok()) return host.status();
  Device& d = *devices_[static_cast<std::size_t>(m.device->device)];
  std::lock_guard lock(d.aux_mu);
  GC_CUDA_TRY(cudaSetDevice(d.index));
  if (auto st = copy_to_host(*pinned_, d.aux_stream.view(), d.aux_events, host->data->data(),
                             m.device->ptr, m.desc.bytes());
      !st.ok()) {
    return check_device(d.index, st);
  }
  m.data = host->data;
  return absl::OkStatus();
}

absl::Status CudaBackend::copy_range_to_host(const Matrix& m, std::uint64_t offset,
                                             std::uint64_t bytes, char* dst) {
  if (m.on_host() || !m.device) return Backend::copy_range_to_host(m, offset, bytes, dst);
  Device& d = *devices_[static_cast<std::size_t>(m.device->device)];
  std::lock_guard lock(d.aux_mu);
  GC_CUDA_TRY(cudaSetDevice(d.index));
  return check_device(d.index,
                      copy_to_host(*pinned_, d.aux_stream.view(), d.aux_events, dst,
                                   static_cast<const char*>(m.device->ptr) + offset, bytes));
}

absl::Status CudaBackend::copy_to_host_memory(const Matrix& m, std::byte* dst, bool dst_pinned) {
  if (m.on_host() || !m.device) return Backend::copy_to_host_memory(m, dst, dst_pinned);
  Device& d = *devices_[static_cast<std::size_t>(m.device->device)];
  std::lock_guard lock(d.aux_mu);
  GC_CUDA_TRY(cudaSetDevice(d.index));
  if (dst_pinned) {
    GC_RETURN_IF_ERROR(check_device(
        d.index, kernels::cuda::cuda_status(
                     cudaMemcpyAsync(dst, m.device->ptr, m.desc.bytes(), cudaMemcpyDeviceToHost,
                                     d.aux_stream.value()),
                     "cudaMemcpyAsync (device to pinned region)", __FILE__, __LINE__)));
    return check_device(d.index,
                        kernels::cuda::cuda_status(cudaStreamSynchronize(d.aux_stream.value()),
                                                   "cudaStreamSynchronize", __FILE__, __LINE__));
  }
  return check_device(d.index,
                      copy_to_host(*pinned_, d.aux_stream.view(), d.aux_events,
                                   reinterpret_cast<char*>(dst), m.device->ptr, m.desc.bytes()));
}

absl::Status CudaBackend::copy_to_device_memory(const Matrix& m, int device, std::byte* dst) {
  if (device < 0 || static_cast<std::size_t>(device) >= devices_.size()) {
    return absl::InternalError(absl::StrCat("no device ", device, " for a device region"));
  }
  Device& d = *devices_[static_cast<std::size_t>(device)];
  std::lock_guard lock(d.aux_mu);
  GC_CUDA_TRY(cudaSetDevice(d.index));
  const cudaStream_t stream = d.aux_stream.value();
  if (m.device) {
    GC_RETURN_IF_ERROR(
        check_device(d.index, kernels::cuda::cuda_status(
                                  cudaMemcpyPeerAsync(dst, d.index, m.device->ptr, m.device->device,
                                                      m.desc.bytes(), stream),
                                  "cudaMemcpyPeerAsync (to a device region)", __FILE__, __LINE__)));
  } else if (m.view_pinned) {
    GC_RETURN_IF_ERROR(check_device(
        d.index,
        kernels::cuda::cuda_status(
            cudaMemcpyAsync(dst, m.bytes(), m.desc.bytes(), cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync (to a device region)", __FILE__, __LINE__)));
  } else if (m.on_host()) {
    return check_device(d.index,
                        copy_to_device(*pinned_, d.aux_stream.view(), d.aux_events, dst,
                                       reinterpret_cast<const char*>(m.bytes()), m.desc.bytes()));
  } else {
    return absl::InternalError("matrix has neither host bytes nor a device copy");
  }
  return check_device(
      d.index, kernels::cuda::cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize",
                                          __FILE__, __LINE__));
}

absl::StatusOr<OpenedDeviceMemory> CudaBackend::open_ipc_memory(const std::string& handle,
                                                                int device) {
  if (handle.size() != sizeof(cudaIpcMemHandle_t)) {
    return absl::InvalidArgumentError(absl::StrCat("cuda_ipc_handle has ", handle.size(),
                                                   " bytes; cudaIpcGetMemHandle gives ",
                                                   sizeof(cudaIpcMemHandle_t)));
  }
  if (device < 0 || static_cast<std::size_t>(device) >= devices_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda_device = ", device, ": the server has ", devices_.size(), " device(s)"));
  }
  // The allocation's extent bounds every access; the driver knows it, the runtime does not say.
  using GetAddressRange = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  static const GetAddressRange get_range = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      fn = nullptr;
    }
    return reinterpret_cast<GetAddressRange>(fn);
  }();
  if (get_range == nullptr) {
    return absl::FailedPreconditionError(
        "cuda_ipc_handle: the driver does not provide cuMemGetAddressRange");
  }
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle.data(), sizeof h);
  Device& d = *devices_[static_cast<std::size_t>(device)];
  GC_CUDA_TRY(cudaSetDevice(d.index));
  void* ptr = nullptr;
  if (const cudaError_t err = cudaIpcOpenMemHandle(&ptr, h, cudaIpcMemLazyEnablePeerAccess);
      err != cudaSuccess) {
    (void)cudaGetLastError();  // a bad handle does not break the device
    return absl::InvalidArgumentError(
        absl::StrCat("cuda_ipc_handle could not be opened on device ", device, ": ",
                     cudaGetErrorName(err), " (", cudaGetErrorString(err),
                     "); it must come from cudaIpcGetMemHandle of a live allocation of another "
                     "process on this host"));
  }
  CUdeviceptr base = 0;
  std::size_t bytes = 0;
  if (get_range(&base, &bytes, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) {
    (void)cudaIpcCloseMemHandle(ptr);
    return absl::InternalError("cuMemGetAddressRange of an opened CUDA IPC handle failed");
  }
  // The handle names the allocation's start, so `ptr` is its base.
  const std::uint64_t usable = bytes - (reinterpret_cast<CUdeviceptr>(ptr) - base);
  const int index = d.index;
  return OpenedDeviceMemory{static_cast<std::byte*>(ptr), usable, [ptr, index] {
                              (void)cudaSetDevice(index);
                              (void)cudaIpcCloseMemHandle(ptr);
                            }};
}

std::function<void()> CudaBackend::pin_host_memory(void* ptr, std::uint64_t bytes) {
  if (cudaHostRegister(ptr, bytes, cudaHostRegisterPortable) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: the region works through staged copies
    return {};
  }
  return [ptr] { (void)cudaHostUnregister(ptr); };
}

// ---------------------------------------------------------------------------------------
// Uploads: each chunk's copy to the device starts as soon as it arrives.

namespace {

/// Device memory grows with the chunks that arrive (a header alone allocates nothing): doubling
/// from 16 MiB up to the matrix's size, each step copying the bytes so far on the device, which
/// costs at most one more pass over them at device bandwidth.
class DeviceUploadSink final : public UploadSink {
 public:
  using Allocate = std::function<absl::StatusOr<std::shared_ptr<DeviceCopy>>(std::uint64_t)>;
  DeviceUploadSink(MatrixDesc desc, int device, Allocate allocate, PinnedPool& pool,
                   kernels::cuda::StreamView stream, const StagingEvents& events, std::mutex& mu)
      : desc_(desc),
        device_(device),
        allocate_(std::move(allocate)),
        pool_(pool),
        stream_(stream),
        events_(events),
        mu_(mu) {}

  absl::Status write(std::uint64_t offset, BytePieces pieces, std::uint64_t size) override {
    std::lock_guard lock(mu_);
    GC_CUDA_TRY(cudaSetDevice(device_));
    if (auto st = reserve(offset + size); !st.ok()) return st;
    written_end_ = std::max(written_end_, offset + size);
    if (desc_.bytes() <= CudaBackend::kHostTransposeBytes) {
      // A small matrix keeps its host bytes too, for the host's answers to small calls.
      if (!host_) host_ = std::make_shared<std::string>(desc_.bytes(), '\0');
      gather(pieces, host_->data() + offset);
    }
    return copy_to_device(pool_, stream_, events_, static_cast<char*>(buffer_->ptr) + offset,
                          pieces, size);
  }
  absl::StatusOr<Matrix> finish() override {
    std::lock_guard lock(mu_);
    if (auto st = reserve(desc_.bytes()); !st.ok()) return st;  // only an empty matrix is short
    return Matrix{desc_, std::move(host_), std::move(buffer_)};
  }

 private:
  static constexpr std::uint64_t kFirstBytes = std::uint64_t{16} << 20;

  absl::Status reserve(std::uint64_t end) {
    if (buffer_ && buffer_->bytes >= end) return absl::OkStatus();
    const std::uint64_t doubled = buffer_ ? 2 * buffer_->bytes : 0;
    const std::uint64_t capacity = std::min(desc_.bytes(), std::max({end, kFirstBytes, doubled}));
    auto grown = allocate_(capacity);
    if (!grown.ok()) return grown.status();
    if (buffer_ && written_end_ > 0) {
      GC_CUDA_TRY(cudaMemcpyAsync((*grown)->ptr, buffer_->ptr, written_end_,
                                  cudaMemcpyDeviceToDevice, stream_));
    }
    buffer_ = *std::move(grown);  // the old one is freed in order on the same stream
    return absl::OkStatus();
  }

  MatrixDesc desc_;
  int device_;
  Allocate allocate_;
  std::shared_ptr<DeviceCopy> buffer_;
  std::shared_ptr<std::string> host_;  ///< small matrices only (kHostTransposeBytes)
  std::uint64_t written_end_ = 0;
  PinnedPool& pool_;
  kernels::cuda::StreamView stream_;
  const StagingEvents& events_;
  std::mutex& mu_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UploadSink>> CudaBackend::begin_upload(const MatrixDesc& desc) {
  // The least-loaded device receives it; chunks go over its aux stream so that a slow client
  // never holds a lane, and device memory is taken as they arrive.
  int device = 0;
  {
    auto lane = acquire_lane();
    if (!lane.ok()) return lane.status();
    device = (*lane)->device();
  }
  Device& d = *devices_[static_cast<std::size_t>(device)];
  const kernels::cuda::StreamView aux = d.aux_stream.view();
  auto allocate_on_aux = [this, device, aux](std::uint64_t bytes) {
    return allocate(device, aux, bytes);
  };
  return std::make_unique<DeviceUploadSink>(desc, device, std::move(allocate_on_aux), *pinned_, aux,
                                            d.aux_events, d.aux_mu);
}

// ---------------------------------------------------------------------------------------
// Operations

absl::StatusOr<Matrix> CudaBackend::transpose(const Matrix& a, JobContext& ctx) {
  if (!ctx.results_stay_on_server && a.on_host() && a.desc.bytes() <= kHostTransposeBytes) {
    ctx.device = "cpu";
    return host_.transpose(a, ctx);
  }
  GC_ASSIGN_OR_RETURN(const LaneLease lane, acquire_lane_for(ctx));
  Lane& l = *lane;
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> in, to_device(l, a, ctx));
  const MatrixDesc out_desc = transpose_output(a.desc);
  GC_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCopy> out, allocate(l, out_desc.bytes()));
  const auto t0 = Clock::now();
  const kernels::TransposeShape shape{a.desc.batch, a.desc.rows, a.desc.cols,
                                      kernels::dtype_size(a.desc.dtype)};
  const absl::Status launched = kernels::cuda::transpose(l.context(), in->ptr, out->ptr, shape);
  return finish_with_output(l, launched, t0, out_desc, std::move(out), ctx);
}

absl::StatusOr<bool> CudaBackend::transpose_into_pinned_host(const Matrix& a, std::byte* dst,
                                                             JobContext& ctx) {
  if (!a.view_pinned) return false;  // staged or device-resident: nothing to overlap with
  GC_ASSIGN_OR_RETURN(const LaneLease lane, acquire_lane_for(ctx));
  Lane& l = *lane;
  const kernels::cuda::Context context = l.context();
  if (context.priority_stream.is_default()) return false;
  const kernels::TransposeShape shape{a.desc.batch, a.desc.rows, a.desc.cols,
                                      kernels::dtype_size(a.desc.dtype)};
  const TransposeTiles plan =
      plan_transpose_tiles(shape, default_transpose_tile_bytes(a.desc.bytes()));
  if (plan.tiles.empty()) return true;  // an empty result: nothing to write
  // Two slots when tiles alternate, each an input and an output buffer of the largest tile.
  std::vector<std::shared_ptr<DeviceCopy>> buffers;
  TransposeSlots slots;
  auto allocate_into = [&](void*& ptr) -> absl::Status {
    GC_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCopy> buffer, allocate(l, plan.max_tile_bytes));
    ptr = buffer->ptr;
    buffers.push_back(std::move(buffer));
    return absl::OkStatus();
  };
  for (std::size_t s = 0; s < (plan.tiles.size() > 1 ? 2u : 1u); ++s) {
    GC_RETURN_IF_ERROR(allocate_into(slots.in[s]));
    GC_RETURN_IF_ERROR(allocate_into(slots.out[s]));
  }
  // Upload, transpose and download overlap: the phases' time is reported as compute.
  const auto t0 = Clock::now();
  GC_RETURN_IF_ERROR(check_device(
      l.device(), transpose_pinned_host(context, context.priority_stream, l.staging_events(), slots,
                                        a.bytes(), dst, shape, plan)));
  ctx.times.compute_seconds += seconds_since(t0);
  return true;
}

absl::StatusOr<Matrix> CudaBackend::matmul(const Matrix& a, const Matrix& b, const Matrix* c,
                                           const kernels::MatmulShape& shape, JobContext& ctx) {
  GC_ASSIGN_OR_RETURN(const LaneLease lane, acquire_lane_for(ctx));
  Lane& l = *lane;
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> da, to_device(l, a, ctx));
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> db, to_device(l, b, ctx));
  const MatrixDesc out_desc = matmul_output(shape);
  GC_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCopy> out, allocate(l, out_desc.bytes()));
  if (c != nullptr) {
    GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> dc, to_device(l, *c, ctx));
    GC_CUDA_TRY(
        cudaMemcpyAsync(out->ptr, dc->ptr, out_desc.bytes(), cudaMemcpyDeviceToDevice, l.stream()));
  }
  const auto t0 = Clock::now();
  const absl::Status launched =
      kernels::cuda::matmul(l.context(), da->ptr, db->ptr, out->ptr, shape, ctx.stop_token());
  return finish_with_output(l, launched, t0, out_desc, std::move(out), ctx);
}

absl::StatusOr<EighOutput> CudaBackend::eigh(const Matrix& a, const kernels::EighShape& shape,
                                             JobContext& ctx) {
  // The symmetry check scans host bytes (a matrix that lives on the device is copied back for
  // it); it runs before a lane is taken, with the CPU backend's INVALID_ARGUMENT.
  Matrix host = a;
  if (auto st = ensure_on_host(host); !st.ok()) return st;
  GC_RETURN_IF_ERROR(kernels::check_symmetric(host.bytes(), shape));
  GC_ASSIGN_OR_RETURN(const LaneLease lane, acquire_lane_for(ctx));
  Lane& l = *lane;
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> da, to_device(l, host, ctx));
  const EighOutputDescs descs = eigh_outputs(shape);
  GC_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCopy> w, allocate(l, descs.w.bytes()));
  GC_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCopy> v,
                      allocate_if(l, shape.compute_vectors, descs.v.bytes()));
  EighOutput out;
  GC_ASSIGN_OR_RETURN(
      out.info, launch_with_workspace(l, kernels::cuda::eigh_workspace_bytes(l.context(), shape),
                                      ctx, [&](void* ws, std::uint64_t ws_bytes) {
                                        return kernels::cuda::eigh(l.context(), da->ptr, w->ptr,
                                                                   v ? v->ptr : nullptr, shape, ws,
                                                                   ws_bytes, ctx.stop_token());
                                      }));
  GC_ASSIGN_OR_RETURN(out.w, finish_output(l, descs.w, std::move(w), ctx));
  GC_ASSIGN_OR_RETURN(out.v, finish_output_if(l, descs.v, std::move(v), ctx));
  return out;
}

namespace {

// kAuto: QDWH + syevd (1.0-4.2x faster than the blocked Jacobi at n = 256..8192 on the H200,
// 2026-11-29; 1.0x only in f32 at 256; docs/performance.md) where the Jacobi would take its
// blocked driver; the batched shared-memory and register drivers below that (many small
// matrices, one launch).
bool use_polar_on_gpu(const kernels::SvdShape& shape) {
  switch (shape.method) {
    case kernels::SvdMethod::kPolar:
      return true;
    case kernels::SvdMethod::kJacobi:
      return false;
    case kernels::SvdMethod::kAuto:
      break;
  }
  return std::min(shape.m, shape.n) > 64;
}

}  // namespace

absl::StatusOr<SvdOutput> CudaBackend::svd(const Matrix& a, const kernels::SvdShape& shape,
                                           JobContext& ctx) {
  GC_ASSIGN_OR_RETURN(const LaneLease lane, acquire_lane_for(ctx));
  Lane& l = *lane;
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> da, to_device(l, a, ctx));
  const SvdOutputDescs descs = svd_outputs(shape);
  GC_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCopy> s, allocate(l, descs.s.bytes()));
  GC_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCopy> u,
                      allocate_if(l, shape.compute_uv, descs.u.bytes()));
  GC_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCopy> vt,
                      allocate_if(l, shape.compute_uv, descs.vt.bytes()));
  void* const u_ptr = u ? u->ptr : nullptr;
  void* const vt_ptr = vt ? vt->ptr : nullptr;
  const bool polar = use_polar_on_gpu(shape);
  const absl::StatusOr<std::uint64_t> workspace_bytes =
      polar ? kernels::cuda::svd_polar_workspace_bytes(l.context(), shape)
            : absl::StatusOr<std::uint64_t>(kernels::cuda::svd_workspace_bytes(shape, tuning_.svd));
  SvdOutput out;
  GC_ASSIGN_OR_RETURN(
      out.info,
      launch_with_workspace(l, workspace_bytes, ctx, [&](void* ws, std::uint64_t ws_bytes) {
        return polar ? kernels::cuda::svd_polar(l.context(), da->ptr, s->ptr, u_ptr, vt_ptr, shape,
                                                ws, ws_bytes, ctx.stop_token(), tuning_.svd)
                     : kernels::cuda::svd_jacobi(l.context(), da->ptr, s->ptr, u_ptr, vt_ptr, shape,
                                                 ws, ws_bytes, ctx.stop_token(), tuning_.svd);
      }));
  GC_ASSIGN_OR_RETURN(out.s, finish_output(l, descs.s, std::move(s), ctx));
  GC_ASSIGN_OR_RETURN(out.u, finish_output_if(l, descs.u, std::move(u), ctx));
  GC_ASSIGN_OR_RETURN(out.vt, finish_output_if(l, descs.vt, std::move(vt), ctx));
  return out;
}

absl::StatusOr<ApspOutput> CudaBackend::apsp(const Matrix& weights, const kernels::ApspShape& shape,
                                             JobContext& ctx) {
  if (shape.dtype == DType::kI32) {
    // The GPU kernel's saturating i32 sums are exact only while no distance can leave the i32
    // range; beyond that the host kernel computes in int64 and names the pair that does.
    Matrix host = weights;
    if (auto st = ensure_on_host(host); !st.ok()) return st;
    if (!kernels::cpu::i32_apsp_fits(host.as<std::int32_t>(), shape.n)) {
      ctx.device = "cpu";
      return apsp_on_host(host, shape, ctx);
    }
  }
  GC_ASSIGN_OR_RETURN(const LaneLease lane, acquire_lane_for(ctx));
  Lane& l = *lane;
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> dw, to_device(l, weights, ctx));
  GC_ASSIGN_OR_RETURN(
      ApspBuffers buffers,
      allocate_apsp(l, MatrixDesc{shape.dtype, 1, shape.n, shape.n}, shape.next_hop));
  void* const dist = buffers.dist->ptr;
  std::int32_t* const next = buffers.next ? static_cast<std::int32_t*>(buffers.next->ptr) : nullptr;
  ApspOutput out;
  GC_ASSIGN_OR_RETURN(out.info, launch_with_workspace(l, kernels::cuda::apsp_workspace_bytes(shape),
                                                      ctx, [&](void* ws, std::uint64_t ws_bytes) {
                                                        return kernels::cuda::apsp(
                                                            l.context(), dw->ptr, dist, next, shape,
                                                            ws, ws_bytes, ctx.stop_token(),
                                                            tuning_.apsp);
                                                      }));
  return finish_apsp(l, std::move(out), std::move(buffers), ctx);
}

absl::StatusOr<CudaBackend::ApspBuffers> CudaBackend::allocate_apsp(Lane& lane,
                                                                    const MatrixDesc& dist_desc,
                                                                    bool next_hop) {
  ApspBuffers b;
  b.dist_desc = dist_desc;
  GC_ASSIGN_OR_RETURN(b.dist, allocate(lane, dist_desc.bytes()));
  GC_ASSIGN_OR_RETURN(b.next, allocate_if(lane, next_hop, b.next_desc().bytes()));
  return b;
}

absl::StatusOr<ApspOutput> CudaBackend::finish_apsp(Lane& lane, ApspOutput out, ApspBuffers buffers,
                                                    JobContext& ctx) {
  if (out.info.negative_cycle) {
    // Distances are meaningless; skip copying them back.
    out.distances = Matrix{buffers.dist_desc, nullptr, std::move(buffers.dist)};
    return out;
  }
  GC_ASSIGN_OR_RETURN(out.distances,
                      finish_output(lane, buffers.dist_desc, std::move(buffers.dist), ctx));
  GC_ASSIGN_OR_RETURN(out.next_hop,
                      finish_output_if(lane, buffers.next_desc(), std::move(buffers.next), ctx));
  return out;
}

absl::StatusOr<ApspOutput> CudaBackend::apsp_add_edges(const ApspOutput& base,
                                                       const kernels::ApspUpdateShape& shape,
                                                       std::span<const kernels::GraphEdge> edges,
                                                       JobContext& ctx) {
  if (shape.next_hop && !base.next_hop) {
    return absl::InvalidArgumentError("apsp update: next hops were not given");
  }
  GC_ASSIGN_OR_RETURN(const LaneLease lane, acquire_lane_for(ctx));
  Lane& l = *lane;
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> dist_old,
                      to_device(l, base.distances, ctx));
  std::shared_ptr<DeviceCopy> next_old;
  if (shape.next_hop) {
    GC_ASSIGN_OR_RETURN(next_old, to_device(l, *base.next_hop, ctx));
  }
  GC_ASSIGN_OR_RETURN(
      ApspBuffers buffers,
      allocate_apsp(l, MatrixDesc{DType::kF32, 1, shape.n, shape.n}, shape.next_hop));
  auto* const dist = static_cast<float*>(buffers.dist->ptr);
  std::int32_t* const next = buffers.next ? static_cast<std::int32_t*>(buffers.next->ptr) : nullptr;
  ApspOutput out;
  GC_ASSIGN_OR_RETURN(
      out.info, launch_with_workspace(
                    l, kernels::cuda::apsp_add_edges_workspace_bytes(shape, edges), ctx,
                    [&](void* ws, std::uint64_t ws_bytes) {
                      return kernels::cuda::apsp_add_edges(
                          l.context(), static_cast<const float*>(dist_old->ptr),
                          next_old ? static_cast<const std::int32_t*>(next_old->ptr) : nullptr,
                          dist, next, shape, edges, ws, ws_bytes);
                    }));
  return finish_apsp(l, std::move(out), std::move(buffers), ctx);
}

absl::StatusOr<SsspOutput> CudaBackend::sssp(const kernels::CsrView& graph, std::int64_t source,
                                             JobContext& ctx) {
  GC_RETURN_IF_ERROR(kernels::validate_sssp_shape(graph, source));
  GC_ASSIGN_OR_RETURN(const LaneLease lane, acquire_lane_for(ctx));
  Lane& l = *lane;
  const auto n = static_cast<std::uint64_t>(graph.n), m = static_cast<std::uint64_t>(graph.m);
  // The graph goes up once per call: stored graphs are exported from the host store today.
  auto upload = [&](const void* host,
                    std::uint64_t bytes) -> absl::StatusOr<std::shared_ptr<DeviceCopy>> {
    GC_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCopy> buf,
                        allocate(l, std::max<std::uint64_t>(bytes, 1)));
    if (bytes != 0) {
      const auto t0 = Clock::now();
      if (absl::Status st = copy_to_device(*pinned_, l.stream(), l.staging_events(), buf->ptr,
                                           static_cast<const char*>(host), bytes);
          !st.ok()) {
        return check_device(l.device(), st);
      }
      ctx.times.h2d_seconds += seconds_since(t0);
    }
    return buf;
  };
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> offsets,
                      upload(graph.row_offsets, (n + 1) * sizeof(std::uint64_t)));
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> cols,
                      upload(graph.cols, m * sizeof(std::uint32_t)));
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> weights,
                      upload(graph.weights, m * sizeof(float)));
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> dist, allocate(l, n * sizeof(float)));
  GC_ASSIGN_OR_RETURN(const std::shared_ptr<DeviceCopy> parent,
                      allocate(l, n * sizeof(std::int32_t)));
  const kernels::CsrView on_device{
      graph.n, graph.m, static_cast<const std::uint64_t*>(offsets->ptr),
      static_cast<const std::uint32_t*>(cols->ptr), static_cast<const float*>(weights->ptr)};
  SsspOutput out;
  GC_ASSIGN_OR_RETURN(
      out.info, launch_with_workspace(
                    l, kernels::cuda::sssp_workspace_bytes(graph.n, graph.m), ctx,
                    [&](void* ws, std::uint64_t ws_bytes) {
                      return kernels::cuda::sssp(
                          l.context(), on_device, source, static_cast<float*>(dist->ptr),
                          static_cast<std::int32_t*>(parent->ptr), ws, ws_bytes, ctx.stop_token());
                    }));
  out.dist.resize(n);
  out.parent.resize(n);
  const auto t0 = Clock::now();
  for (const auto& [to, from, bytes] :
       {std::tuple<void*, const DeviceCopy*, std::uint64_t>{out.dist.data(), dist.get(),
                                                            n * sizeof(float)},
        std::tuple<void*, const DeviceCopy*, std::uint64_t>{out.parent.data(), parent.get(),
                                                            n * sizeof(std::int32_t)}}) {
    if (absl::Status st = copy_to_host(*pinned_, l.stream(), l.staging_events(),
                                       static_cast<char*>(to), from->ptr, bytes);
        !st.ok()) {
      return check_device(l.device(), st);
    }
  }
  ctx.times.d2h_seconds += seconds_since(t0);
  return out;
}

}  // namespace cuda
}  // namespace gcompute::server
