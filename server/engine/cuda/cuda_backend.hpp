// SPDX-License-Identifier: Apache-2.0
// The CUDA backend: a device pool over every visible GPU, a fixed set of lanes per device
// created at start-up, one pinned staging pool, and device memory from each device's
// stream-ordered pool (kernels::cuda::MemoryResource; freed memory stays in the pool for
// reuse). No cudaMalloc, cudaFree or stream creation per request, and no managed memory.
// Every CUDA resource is held by an owning type (kernels/cuda/{stream,event,memory,
// resources}.hpp), so a failed start-up releases what it had created.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/backend.hpp"
#include "engine/backend_factory.hpp"
#include "engine/cpu_backend.hpp"
#include "engine/cuda/lane.hpp"
#include "engine/cuda/pinned_pool.hpp"
#include "gcompute/kernels/cuda/memory.hpp"
#include "gcompute/kernels/cuda/stream.hpp"
#include "gcompute/kernels/cuda/tuning.hpp"

namespace gcompute::server::cuda {

struct QueuedBefore;

class CudaBackend final : public Backend {
 public:
  /// Every visible GPU, with the kernels' tuning read from the environment once, here
  /// (kernels::cuda::tuning_from_environment).
  static absl::StatusOr<std::unique_ptr<CudaBackend>> create(const BackendOptions& options);
  static absl::StatusOr<std::unique_ptr<CudaBackend>> create(const BackendOptions& options,
                                                             const kernels::cuda::Tuning& tuning);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  std::vector<DeviceInfo> devices() const override;
  int concurrency() const override { return total_lanes_; }

  /// Operands of at most this many bytes that have host bytes, and whose result returns to the
  /// host, are transposed on the host: a GPU idle between calls took 22-33 us for such a call on
  /// an H200, the host a few us (docs/performance.md). Uploads this small keep their host bytes.
  static constexpr std::uint64_t kHostTransposeBytes = std::uint64_t{64} << 10;

  absl::StatusOr<Matrix> transpose(const Matrix& a, JobContext& ctx) override;
  /// For an operand in a pinned region: tiles overlap their upload with the transpose and
  /// download of the tile before (pinned_transpose.hpp).
  absl::StatusOr<bool> transpose_into_pinned_host(const Matrix& a, std::byte* dst,
                                                  JobContext& ctx) override;
  absl::StatusOr<Matrix> matmul(const Matrix& a, const Matrix& b, const Matrix* c,
                                const kernels::MatmulShape& shape, JobContext& ctx) override;
  absl::StatusOr<EighOutput> eigh(const Matrix& a, const kernels::EighShape& shape,
                                  JobContext& ctx) override;
  absl::StatusOr<SvdOutput> svd(const Matrix& a, const kernels::SvdShape& shape,
                                JobContext& ctx) override;
  absl::StatusOr<ApspOutput> apsp(const Matrix& weights, const kernels::ApspShape& shape,
                                  JobContext& ctx) override;
  absl::StatusOr<ApspOutput> apsp_add_edges(const ApspOutput& base,
                                            const kernels::ApspUpdateShape& shape,
                                            std::span<const kernels::GraphEdge> edges,
                                            JobContext& ctx) override;
  absl::StatusOr<SsspOutput> sssp(const kernels::CsrView& graph, std::int64_t source,
                                  JobContext& ctx) override;
  absl::StatusOr<std::unique_ptr<UploadSink>> begin_upload(const MatrixDesc& desc) override;
  absl::Status ensure_on_host(Matrix& m) override;
  absl::Status copy_range_to_host(const Matrix& m, std::uint64_t offset, std::uint64_t bytes,
                                  char* dst) override;
  /// A device-only matrix goes straight from the device into `dst` (one DMA when it is pinned).
  absl::Status copy_to_host_memory(const Matrix& m, std::byte* dst, bool dst_pinned) override;
  /// cudaHostRegister (portable: every device's copies use it); empty when the driver refuses.
  std::function<void()> pin_host_memory(void* ptr, std::uint64_t bytes) override;
  /// Device to device (or host to device) into a client's CUDA IPC region, on the device's aux
  /// stream, synchronised.
  absl::Status copy_to_device_memory(const Matrix& m, int device, std::byte* dst) override;
  /// cudaIpcOpenMemHandle, and the allocation's extent (cuMemGetAddressRange, reached through
  /// the runtime's driver entry points so that the server does not link libcuda).
  absl::StatusOr<OpenedDeviceMemory> open_ipc_memory(const std::string& handle,
                                                     int device) override;
  /// Scans a matrix that is on a device there (on the device's aux stream), not on the host.
  absl::StatusOr<kernels::ScanResult> first_violation(const Matrix& m,
                                                      kernels::ValueCheck check) override;
  ResourceStats resource_stats() const override;
  absl::StatusOr<std::unique_ptr<MirrorTargetFactory>> make_graph_copies() override;

  /// Holds a lane for one job; returns it to the pool when destroyed.
  class LaneLease {
   public:
    LaneLease(CudaBackend* backend, Lane* lane) : backend_(backend), lane_(lane) {}
    LaneLease(LaneLease&& o) noexcept : backend_(o.backend_), lane_(o.lane_) { o.lane_ = nullptr; }
    LaneLease(const LaneLease&) = delete;
    ~LaneLease();
    Lane& operator*() const { return *lane_; }
    Lane* operator->() const { return lane_; }

   private:
    CudaBackend* backend_;
    Lane* lane_;
  };
  /// A free lane on the least-loaded healthy device (waits if every lane is busy).
  absl::StatusOr<LaneLease> acquire_lane();

  /// Device-side storage for `bytes` from the device's stream-ordered pool, allocated on the
  /// lane's stream and freed on the device's aux stream.
  absl::StatusOr<std::shared_ptr<DeviceCopy>> allocate(Lane& lane, std::uint64_t bytes);
  /// The same on `device`, allocated on `stream`.
  absl::StatusOr<std::shared_ptr<DeviceCopy>> allocate(int device, kernels::cuda::StreamView stream,
                                                       std::uint64_t bytes);

  /// The stream-ordered pool of `device` (an index of devices()).
  kernels::cuda::MemoryResource memory_resource(int device) const;
  const kernels::cuda::Tuning& tuning() const { return tuning_; }

 private:
  struct Device {
    int index = 0;
    DeviceInfo info;
    kernels::cuda::MemoryResource memory;
    kernels::cuda::Stream aux_stream;  ///< uploads, copies back of stored results, frees
    StagingEvents aux_events;
    std::mutex aux_mu;  ///< serialises users of aux_events
    std::vector<std::unique_ptr<Lane>> lanes;
    std::vector<bool> busy;
    int busy_count = 0;
    bool failed = false;
  };

  CudaBackend() = default;
  void release_lane(Lane* lane);
  /// acquire_lane(), recording the device and lane in ctx.
  absl::StatusOr<LaneLease> acquire_lane_for(JobContext& ctx);
  /// Checks a failed status for a sticky device error: marks the device failed and reports
  /// it as fatal. Returns `status` unchanged.
  absl::Status check_device(int device, absl::Status status);
  /// A device copy of `m` on lane's device (reused when it is already there).
  absl::StatusOr<std::shared_ptr<DeviceCopy>> to_device(Lane& lane, const Matrix& m,
                                                        JobContext& ctx);
  /// Turns a device result into a Matrix: left on the device when the results stay on the
  /// server, else copied back to host bytes. With `queued` (work still running on the lane's
  /// stream, timed by the caller), the copy is queued behind it: the host waits once.
  absl::StatusOr<Matrix> finish_output(Lane& lane, const MatrixDesc& desc,
                                       std::shared_ptr<DeviceCopy> buffer, JobContext& ctx,
                                       const QueuedBefore* queued = nullptr);
  /// finish_output() of work just launched on lane's stream whose one result is `buffer`, with
  /// the kernel as the queued work: its time is booked as compute, and a result going back to
  /// the host is copied behind it with one wait (small operations' latency).
  absl::StatusOr<Matrix> finish_with_output(Lane& lane, absl::Status launched,
                                            std::chrono::steady_clock::time_point start,
                                            const MatrixDesc& desc,
                                            std::shared_ptr<DeviceCopy> buffer, JobContext& ctx);
  /// allocate(lane, bytes) where `wanted`, else null: an optional output not asked for.
  absl::StatusOr<std::shared_ptr<DeviceCopy>> allocate_if(Lane& lane, bool wanted,
                                                          std::uint64_t bytes);
  /// finish_output() of an optional output: none where `buffer` is null.
  absl::StatusOr<std::optional<Matrix>> finish_output_if(Lane& lane, const MatrixDesc& desc,
                                                         std::shared_ptr<DeviceCopy> buffer,
                                                         JobContext& ctx);
  /// The device outputs of an APSP run: distances of `dist_desc`, next hops (i32) if asked for.
  struct ApspBuffers {
    MatrixDesc dist_desc;
    std::shared_ptr<DeviceCopy> dist;
    std::shared_ptr<DeviceCopy> next;  ///< null without next hops
    MatrixDesc next_desc() const { return {DType::kI32, 1, dist_desc.rows, dist_desc.cols}; }
  };
  absl::StatusOr<ApspBuffers> allocate_apsp(Lane& lane, const MatrixDesc& dist_desc, bool next_hop);
  /// The outputs of an APSP run (out.info set): left on the device with a negative cycle
  /// (meaningless), else finish_output of the distances and the next hops if any.
  absl::StatusOr<ApspOutput> finish_apsp(Lane& lane, ApspOutput out, ApspBuffers buffers,
                                         JobContext& ctx);
  /// Allocates the workspace a kernel asked for, runs `launch(workspace, bytes)` on lane's
  /// stream and books its compute time. A failed launch settles the stream before returning:
  /// the buffers it used are freed stream-ordered.
  template <typename Launch>
  auto launch_with_workspace(Lane& lane, absl::StatusOr<std::uint64_t> workspace_bytes,
                             JobContext& ctx, Launch&& launch)
      -> decltype(launch(static_cast<void*>(nullptr), std::uint64_t{}));

  kernels::cuda::Tuning tuning_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::unique_ptr<PinnedPool> pinned_;
  int total_lanes_ = 0;
  /// Work too small to be worth a GPU's wake-up (kHostTransposeBytes).
  CpuBackend host_{1};
  mutable std::mutex mu_;
  std::condition_variable lane_freed_;
};

}  // namespace gcompute::server::cuda
