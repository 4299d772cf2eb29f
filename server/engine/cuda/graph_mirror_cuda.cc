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

namespace gcompute::server::cuda {
namespace {

/// One device's stream and the staging buffer batches are copied through.
struct MirrorDevice {
  int index = 0;
  std::mutex mu;  // one DeviceGraph call at a time on this device
  cudaStream_t stream = nullptr;
  kernels::GraphEdge* staging = nullptr;  // device memory, guarded by mu
  std::size_t staging_count = 0;

  kernels::cuda::Context context() const {
    return kernels::cuda::Context{stream, nullptr, nullptr, index};
  }

  /// Copies `edges` to the staging buffer (growing it) and waits for the copy. Requires mu.
  absl::Status stage(std::span<const kernels::GraphEdge> edges) {
    if (edges.size() > staging_count) {
      std::size_t count = std::max<std::size_t>(edges.size(), 2 * staging_count);
      if (staging != nullptr) {
        GC_CUDA_TRY(cudaFree(staging));
        staging = nullptr;
        staging_count = 0;
      }
      GC_CUDA_TRY(
          cudaMalloc(reinterpret_cast<void**>(&staging), count * sizeof(kernels::GraphEdge)));
      staging_count = count;
    }
    GC_CUDA_TRY(
        cudaMemcpyAsync(staging, edges.data(), edges.size_bytes(), cudaMemcpyHostToDevice, stream));
    GC_CUDA_TRY(cudaStreamSynchronize(stream));
    return absl::OkStatus();
  }

  ~MirrorDevice() {
    // Shutdown: errors cannot be acted on.
    cudaSetDevice(index);
    if (staging != nullptr) cudaFree(staging);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

class CudaMirrorTarget final : public MirrorTarget {
 public:
  CudaMirrorTarget(MirrorDevice* device, kernels::cuda::DeviceGraph graph)
      : device_(device), graph_(std::move(graph)) {}

  ~CudaMirrorTarget() override {
    std::lock_guard lock(device_->mu);
    cudaSetDevice(device_->index);
    graph_.reset();  // frees on the right device
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
    return graph_->delete_edges(device_->context(), device_->staging, edges.size()).status();
  }

  absl::Status upsert_edges(std::span<const kernels::GraphEdge> edges) override {
    std::lock_guard lock(device_->mu);
    GC_CUDA_TRY(cudaSetDevice(device_->index));
    if (absl::Status s = device_->stage(edges); !s.ok()) return s;
    return graph_->insert_edges(device_->context(), device_->staging, edges.size()).status();
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
        kernels::cuda::DeviceGraph::create(device->context(), num_vertices);
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
    GC_CUDA_TRY(cudaSetDevice(d->index));
    GC_CUDA_TRY(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
    devices.push_back(std::move(d));
  }
  if (devices.empty()) return absl::FailedPreconditionError("graph mirror: no CUDA device");
  return std::make_unique<CudaMirrorTargets>(std::move(devices));
}

}  // namespace gcompute::server::cuda
