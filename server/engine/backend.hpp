// SPDX-License-Identifier: Apache-2.0
// The engine's view of a compute backend (CPU thread pool, CUDA lanes). Handlers never see
// backends; they submit jobs to the Engine, whose workers call these methods.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/byte_pieces.hpp"
#include "common/device_memory.hpp"
#include "common/matrix.hpp"
#include "engine/fair_queue.hpp"
#include "engine/graph_copies.hpp"
#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/eigh_types.hpp"
#include "gcompute/kernels/graph_batch_types.hpp"
#include "gcompute/kernels/matmul_types.hpp"
#include "gcompute/kernels/scan_types.hpp"
#include "gcompute/kernels/sssp_types.hpp"
#include "gcompute/kernels/stop_token.hpp"
#include "gcompute/kernels/svd_types.hpp"

namespace gcompute::server {

/// Where a job's time went; filled by the engine (queue) and the backend (the rest).
struct PhaseTimes {
  double queue_seconds = 0;
  double h2d_seconds = 0;
  double compute_seconds = 0;
  double d2h_seconds = 0;
};

/// Where a job is, coarsely; the engine and the operation advance it.
enum class JobPhase { kQueued = 0, kRunning = 1, kStoring = 2 };

/// Per-job state shared between the handler, the engine and the backend.
struct JobContext {
  std::atomic<bool> cancelled{false};  ///< set by the RPC's OnCancel (client cancel or deadline)
  absl::Time deadline = absl::InfiniteFuture();
  /// Whose work this is (ops::Caller::tenant) and how urgent: the engine's queue order.
  std::string tenant;
  Priority priority = Priority::kNormal;
  std::atomic<JobPhase> phase{JobPhase::kQueued};
  /// Steps of an iterative kernel (Floyd-Warshall rounds on the CPU), through stop_token().
  kernels::StepProgress steps;
  PhaseTimes times;
  std::string device = "cpu";  ///< where it ran ("cpu", "cuda:0")
  int lane = -1;               ///< CUDA: index of the lane on that device
  /// The results go to the matrix store, not into the response: a GPU backend may leave
  /// them on the device (Matrix::data null) instead of copying them back.
  bool results_stay_on_server = false;
  /// Set (with `cancelled`) when the server stops the job itself while shutting down; its
  /// caller then gets UNAVAILABLE.
  std::atomic<bool> shutdown{false};
  /// Fires on a cancel and once `deadline` passed.
  kernels::StopToken stop_token() {
    const absl::Duration left = deadline - absl::Now();
    if (left > absl::Hours(24 * 365)) return kernels::StopToken(&cancelled, &steps);
    return kernels::StopToken(&cancelled, &steps,
                              kernels::StopToken::Clock::now() + absl::ToChronoNanoseconds(left));
  }
};

struct SvdOutput {
  Matrix s;
  std::optional<Matrix> u;
  std::optional<Matrix> vt;
  kernels::SvdInfo info;
};

struct EighOutput {
  Matrix w;
  std::optional<Matrix> v;
  kernels::EighInfo info;
};

struct ApspOutput {
  Matrix distances;
  std::optional<Matrix> next_hop;
  kernels::ApspInfo info;
};

/// Single-source shortest paths (kernels' SsspInfo contract), on the host.
struct SsspOutput {
  std::vector<float> dist;
  std::vector<std::int32_t> parent;
  kernels::SsspInfo info;
};

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  std::string compute_capability;
};

/// Memory gauges of a backend, read when metrics are scraped.
struct ResourceStats {
  std::uint64_t pinned_capacity_bytes = 0;
  std::uint64_t pinned_used_bytes = 0;
  std::uint64_t pinned_misses = 0;
  struct Device {
    int index = 0;
    std::uint64_t used_bytes = 0;
    std::uint64_t total_bytes = 0;
    bool healthy = true;  ///< false once a sticky error marked the device failed
  };
  std::vector<Device> devices;
};

/// Receives the chunks of an upload as they arrive (a GPU backend starts each chunk's copy
/// to the device at once) and yields the stored matrix at the end.
class UploadSink {
 public:
  virtual ~UploadSink() = default;
  /// Bytes [offset, offset + size) of the matrix, `size` being the pieces' total; ranges never
  /// overlap (checked by the caller).
  virtual absl::Status write(std::uint64_t offset, BytePieces pieces, std::uint64_t size) = 0;
  absl::Status write(std::uint64_t offset, const char* data, std::uint64_t size) {
    const std::span<const char> whole(data, size);
    return write(offset, BytePieces(&whole, 1), size);
  }
  /// Every byte has been written.
  virtual absl::StatusOr<Matrix> finish() = 0;
};

/// A compute backend. Inputs are validated by the caller; implementations return
/// CANCELLED when ctx.cancelled fires during iterative work, RESOURCE_EXHAUSTED when out of
/// memory and INTERNAL for device errors. Methods are called concurrently from up to
/// concurrency() engine workers.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::vector<DeviceInfo> devices() const = 0;
  /// How many jobs may run at once (CPU: workers; CUDA: lanes over all devices).
  virtual int concurrency() const = 0;

  virtual absl::StatusOr<Matrix> transpose(const Matrix& a, JobContext& ctx) = 0;
  /// Transposes `a` straight into page-locked host memory `dst` (a client's pinned region with
  /// room for the result) where the backend does better than transpose() followed by
  /// copy_to_host_memory(): true once written; false, with nothing written, to take that path.
  virtual absl::StatusOr<bool> transpose_into_pinned_host(const Matrix& /*a*/, std::byte* /*dst*/,
                                                          JobContext& /*ctx*/) {
    return false;
  }
  /// `shape` is complete and validated; `c` is present iff shape.beta != 0.
  virtual absl::StatusOr<Matrix> matmul(const Matrix& a, const Matrix& b, const Matrix* c,
                                        const kernels::MatmulShape& shape, JobContext& ctx) = 0;
  virtual absl::StatusOr<SvdOutput> svd(const Matrix& a, const kernels::SvdShape& shape,
                                        JobContext& ctx) = 0;
  /// Symmetric eigendecomposition; INVALID_ARGUMENT (check_symmetric) for an asymmetric input.
  virtual absl::StatusOr<EighOutput> eigh(const Matrix& a, const kernels::EighShape& shape,
                                          JobContext& ctx) = 0;
  virtual absl::StatusOr<ApspOutput> apsp(const Matrix& weights, const kernels::ApspShape& shape,
                                          JobContext& ctx) = 0;

  /// An f32 APSP result (`base`: n_old x n_old distances and, if shape.next_hop, next hops)
  /// brought up to date after the graph grew to shape.n vertices and gained `edges` (rows, in
  /// commit order; kernels' ApspUpdateShape). A negative cycle through a new edge is reported in
  /// info. `base` is left as it was. This default runs cpu::apsp_add_edges on host copies.
  virtual absl::StatusOr<ApspOutput> apsp_add_edges(const ApspOutput& base,
                                                    const kernels::ApspUpdateShape& shape,
                                                    std::span<const kernels::GraphEdge> edges,
                                                    JobContext& ctx);
  /// Shortest paths from `source` over `graph` (host memory, kernels::CsrView). This default
  /// runs cpu::sssp; CANCELLED when ctx's stop token fires.
  virtual absl::StatusOr<SsspOutput> sssp(const kernels::CsrView& graph, std::int64_t source,
                                          JobContext& ctx);
  virtual ResourceStats resource_stats() const { return {}; }

  /// Starts an upload of a matrix of `desc` (allocation happens here).
  virtual absl::StatusOr<std::unique_ptr<UploadSink>> begin_upload(const MatrixDesc& desc) = 0;
  /// Makes sure m has host bytes (copies them from the device if needed).
  virtual absl::Status ensure_on_host(Matrix& m) = 0;
  /// Copies bytes [offset, offset + bytes) of m to host memory `dst`, wherever m lives (a
  /// download sends a device-resident matrix chunk by chunk, each copy overlapping the sending
  /// of the one before). This default copies host bytes; a device-only matrix is INTERNAL.
  virtual absl::Status copy_range_to_host(const Matrix& m, std::uint64_t offset,
                                          std::uint64_t bytes, char* dst);
  /// Copies m's bytes to host memory `dst` that the server does not own (a client's shared
  /// memory). `dst_pinned`: page-locked through pin_host_memory. This default copies on the
  /// host, fetching a device-only matrix first.
  virtual absl::Status copy_to_host_memory(const Matrix& m, std::byte* dst, bool dst_pinned);
  /// Page-locks [ptr, ptr + bytes) so device copies go straight to and from it; returns how to
  /// undo that, or an empty function where the backend does not (CPU) or the driver refused.
  virtual std::function<void()> pin_host_memory(void* /*ptr*/, std::uint64_t /*bytes*/) {
    return {};
  }
  /// Copies m's bytes to `dst` in the memory of GPU `device` that the server does not own (a
  /// client's CUDA IPC region). This default refuses: only a GPU backend has device memory.
  virtual absl::Status copy_to_device_memory(const Matrix& m, int device, std::byte* dst);

  /// Opens GPU memory another process exported (a CUDA IPC handle of 64 bytes) on `device`.
  /// This default refuses (FAILED_PRECONDITION): only a GPU backend can.
  virtual absl::StatusOr<OpenedDeviceMemory> open_ipc_memory(const std::string& handle, int device);

  /// The first element of `m` that fails `check`, if any, scanned where the data lives.
  /// This default scans host bytes, copying a device-only matrix back first.
  virtual absl::StatusOr<kernels::ScanResult> first_violation(const Matrix& m,
                                                              kernels::ValueCheck check);

  /// Where device copies of stored graphs live, or null when the backend keeps none (CPU).
  /// Called once at start-up; the backend must outlive the factory.
  virtual absl::StatusOr<std::unique_ptr<MirrorTargetFactory>> make_graph_copies() {
    return std::unique_ptr<MirrorTargetFactory>();
  }

  /// Called once when the backend hits an error that leaves a device unusable (a sticky CUDA
  /// error): the server stops serving and exits non-zero so its supervisor restarts it.
  void set_fatal_handler(std::function<void(const absl::Status&)> handler) {
    fatal_handler_ = std::move(handler);
  }
  /// Called when an allocation of device memory fails: drops what the server keeps only to go
  /// faster (cached APSP results) and returns the bytes released; the backend then tries once
  /// more before answering RESOURCE_EXHAUSTED. Set once at start-up.
  void set_memory_pressure_handler(std::function<std::uint64_t()> handler) {
    memory_pressure_handler_ = std::move(handler);
  }

 protected:
  void report_fatal(const absl::Status& status) {
    if (fatal_handler_) fatal_handler_(status);
  }
  /// The bytes the memory-pressure handler released (0 without one).
  std::uint64_t release_cached_memory() {
    return memory_pressure_handler_ ? memory_pressure_handler_() : 0;
  }

 private:
  std::function<void(const absl::Status&)> fatal_handler_;
  std::function<std::uint64_t()> memory_pressure_handler_;
};

}  // namespace gcompute::server
