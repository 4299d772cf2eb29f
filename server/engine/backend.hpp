// SPDX-License-Identifier: Apache-2.0
// The engine's view of a compute backend (CPU thread pool, CUDA lanes). Handlers never see
// backends; they submit jobs to the Engine, whose workers call these methods.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/host_matrix.hpp"
#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/matmul_types.hpp"
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

/// Per-job state shared between the handler, the engine and the backend.
struct JobContext {
  std::atomic<bool> cancelled{false};  ///< set by the RPC's OnCancel (client cancel or deadline)
  absl::Time deadline = absl::InfiniteFuture();
  PhaseTimes times;
  std::string device = "cpu";  ///< where it ran ("cpu", "cuda:0")
  kernels::StopToken stop_token() const { return kernels::StopToken(&cancelled); }
};

struct SvdOutput {
  HostMatrix s;
  std::optional<HostMatrix> u;
  std::optional<HostMatrix> vt;
  kernels::SvdInfo info;
};

struct ApspOutput {
  HostMatrix distances;
  std::optional<HostMatrix> next_hop;
  kernels::ApspInfo info;
};

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  std::string compute_capability;
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

  virtual absl::StatusOr<HostMatrix> transpose(const HostMatrix& a, JobContext& ctx) = 0;
  /// `shape` is complete and validated; `c` is present iff shape.beta != 0.
  virtual absl::StatusOr<HostMatrix> matmul(const HostMatrix& a, const HostMatrix& b,
                                            const HostMatrix* c, const kernels::MatmulShape& shape,
                                            JobContext& ctx) = 0;
  virtual absl::StatusOr<SvdOutput> svd(const HostMatrix& a, const kernels::SvdShape& shape,
                                        JobContext& ctx) = 0;
  virtual absl::StatusOr<ApspOutput> apsp(const HostMatrix& weights,
                                          const kernels::ApspShape& shape, JobContext& ctx) = 0;
};

}  // namespace gcompute::server
