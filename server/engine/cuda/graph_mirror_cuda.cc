// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/graph_mirror_cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/cuda/graph_device.hpp"
#include "gcompute/kernels/cuda/memory.hpp"
#include "gcompute/kernels/cuda/stream.hpp"

namespace gcompute::server::cuda {
namespace {

/// One device's stream and the staging buffer batches are copied through.
struct MirrorDevice {
  int index = 0;
  std::mutex mu;  // one DeviceGraph call at a time on this device
  kernels::cuda::MemoryResource memory;
  kernels::cuda::Stream stream;
  kernels::cuda::DeviceArray<kernels::GraphEdge> staging;  // guarded by mu

  kernels::cuda::Context context() const {
    kernels::cuda::Context c;
    c.stream = stream.view();
    c.device = index;
    return c;
  }

  /// Copies `edges` to the staging buffer (growing it) and waits for the copy. Requires mu.
  absl::Status stage(std::span<const kernels::GraphEdge> edges) {
    if (edges.size() > staging.size()) {
      const std::size_t count = std::max<std::size_t>(edges.size(), 2 * staging.size());
      staging.reset();
      auto grown =
          kernels::cuda::DeviceArray<kernels::GraphEdge>::create(count, stream.view(), memory);
      if (!grown.ok()) return grown.status();
      staging = *std::move(grown);
    }
    GC_CUDA_TRY(cudaMemcpyAsync(staging.data(), edges.data(), edges.size_bytes(),
                                cudaMemcpyHostToDevice, stream.value()));
    GC_CUDA_TRY(cudaStreamSynchronize(stream.value()));
    return absl::OkStatus();
  }

  /// Releases the staging buffer and the stream with this device current.
  ~MirrorDevice() { GC_CUDA_TRY_NO_THROW(cudaSetDevice(index)); }
};

class CudaMirrorTarget final : public MirrorTarget {
 public:
  CudaMirrorTarget(MirrorDevice* device, kernels::cuda::DeviceGraph graph)
      : device_(device), graph_(std::move(graph)) {}

  ~CudaMirrorTarget() override {
    std::lock_guard lock(device_->mu);
    GC_CUDA_TRY_NO_THROW(cudaSetDevice(device_->index));
    graph_.reset();  // frees on the mirror's stream, with the graph's device current
  }

  absl::Status add_vertices(std::uint32_t count) override {
    std::lock_guard lock(device_->mu);
    GC_CUDA_TRY(cudaSetDevice(device_->index));
    return graph_->add_vertices(device_->context(), count).status();
  }

  absl::Status delete_edges(std::span<const kernels::GraphEdge> edges) override {
    std::lock_guard lock(device_->mu);
    GC_CUDA_TRY(cudaSetDevice(device_->index));
    if (absl::Status s = device_->stage(edges); !s.ok()) return s;
    return graph_->delete_edges(device_->context(), device_->staging.data(), edges.size()).status();
  }

  absl::Status upsert_edges(std::span<const kernels::GraphEdge> edges) override {
    std::lock_guard lock(device_->mu);
    GC_CUDA_TRY(cudaSetDevice(device_->index));
    if (absl::Status s = device_->stage(edges); !s.ok()) return s;
    return graph_->insert_edges(device_->context(), device_->staging.data(), edges.size()).status();
  }

  absl::StatusOr<kernels::HostCsr> export_csr() override {
    std::lock_guard lock(device_->mu);
    GC_CUDA_TRY(cudaSetDevice(device_->index));
    return graph_->export_csr(device_->context());
  }

  std::string where() const override { return absl::StrCat("cuda:", device_->index); }

 private:
  MirrorDevice* device_;
  std::optional<kernels::cuda::DeviceGraph> graph_;
};

class CudaMirrorTargets final : public MirrorTargetFactory {
 public:
  explicit CudaMirrorTargets(std::vector<std::unique_ptr<MirrorDevice>> devices)
      : devices_(std::move(devices)) {}

  absl::StatusOr<std::unique_ptr<MirrorTarget>> create(std::uint32_t num_vertices) override {
    MirrorDevice* device = devices_[next_.fetch_add(1) % devices_.size()].get();
    std::lock_guard lock(device->mu);
    GC_CUDA_TRY(cudaSetDevice(device->index));
    absl::StatusOr<kernels::cuda::DeviceGraph> graph =
        kernels::cuda::DeviceGraph::create(device->context(), device->memory, num_vertices);
    if (!graph.ok()) return graph.status();
    return std::make_unique<CudaMirrorTarget>(device, *std::move(graph));
  }

 private:
  std::vector<std::unique_ptr<MirrorDevice>> devices_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<MirrorTargetFactory>> make_cuda_mirror_targets(
    const CudaBackend& backend) {
  std::vector<std::unique_ptr<MirrorDevice>> devices;
  for (const DeviceInfo& info : backend.devices()) {
    auto d = std::make_unique<MirrorDevice>();
    d->index = info.index;
    d->memory = backend.memory_resource(info.index);
    GC_CUDA_TRY(cudaSetDevice(d->index));
    auto stream = kernels::cuda::Stream::create();
    if (!stream.ok()) return stream.status();
    d->stream = *std::move(stream);
    devices.push_back(std::move(d));
  }
  if (devices.empty()) return absl::FailedPreconditionError("graph mirror: no CUDA device");
  return std::make_unique<CudaMirrorTargets>(std::move(devices));
}

}  // namespace gcompute::server::cuda
