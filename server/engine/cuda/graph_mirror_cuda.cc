// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/graph_mirror_cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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
  CudaMirrorTarget(MirrorDevice* device, CudaBackend* backend, kernels::cuda::DeviceGraph graph)
      : device_(device), backend_(backend), graph_(std::move(graph)) {}

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

  absl::StatusOr<Matrix> dense_weights(std::span<const std::int32_t> slot_rows,
                                       std::int64_t rows) override {
    std::lock_guard lock(device_->mu);
    GC_CUDA_TRY(cudaSetDevice(device_->index));
    if (slot_rows.size() != graph_->num_vertices()) {
      return absl::InternalError(absl::StrCat("graph mirror: ", slot_rows.size(), " slot rows for ",
                                              graph_->num_vertices(), " slots"));
    }
    const MatrixDesc desc{DType::kF32, 1, rows, rows};
    // From the backend's pool, like any result, so that APSP takes it as its input in place.
    absl::StatusOr<std::shared_ptr<DeviceCopy>> out =
        backend_->allocate(device_->index, device_->stream.view(), desc.bytes());
    if (!out.ok()) return out.status();
    auto map = kernels::cuda::DeviceArray<std::int32_t>::create(
        std::max<std::size_t>(slot_rows.size(), 1), device_->stream.view(), device_->memory);
    if (!map.ok()) return map.status();
    if (!slot_rows.empty()) {
      GC_CUDA_TRY(cudaMemcpyAsync(map->data(), slot_rows.data(), slot_rows.size_bytes(),
                                  cudaMemcpyHostToDevice, device_->stream.value()));
    }
    if (absl::Status s = graph_->to_dense(device_->context(), map->data(), rows,
                                          static_cast<float*>((*out)->ptr));
        !s.ok()) {
      return s;
    }
    return Matrix{desc, nullptr, *std::move(out)};
  }

  absl::StatusOr<SlotSssp> sssp(std::uint32_t source, kernels::StopToken stop) override {
    std::lock_guard lock(device_->mu);
    GC_CUDA_TRY(cudaSetDevice(device_->index));
    const auto t0 = std::chrono::steady_clock::now();
    SlotSssp out;
    out.dist.resize(graph_->num_vertices());
    out.parent.resize(graph_->num_vertices());
    absl::StatusOr<kernels::SsspInfo> info = graph_->sssp(
        device_->context(), source, out.dist.data(), out.parent.data(), std::move(stop));
    if (!info.ok()) return info.status();
    out.info = *info;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

  std::string where() const override { return absl::StrCat("cuda:", device_->index); }

 private:
  MirrorDevice* device_;
  CudaBackend* backend_;
  std::optional<kernels::cuda::DeviceGraph> graph_;
};

class CudaMirrorTargets final : public MirrorTargetFactory {
 public:
  CudaMirrorTargets(CudaBackend* backend, std::vector<std::unique_ptr<MirrorDevice>> devices)
      : backend_(backend), devices_(std::move(devices)) {}

  absl::StatusOr<std::unique_ptr<MirrorTarget>> create(std::uint32_t num_vertices) override {
    MirrorDevice* device = devices_[next_.fetch_add(1) % devices_.size()].get();
    std::lock_guard lock(device->mu);
    GC_CUDA_TRY(cudaSetDevice(device->index));
    absl::StatusOr<kernels::cuda::DeviceGraph> graph =
        kernels::cuda::DeviceGraph::create(device->context(), device->memory, num_vertices);
    if (!graph.ok()) return graph.status();
    return std::make_unique<CudaMirrorTarget>(device, backend_, *std::move(graph));
  }

 private:
  CudaBackend* backend_;
  std::vector<std::unique_ptr<MirrorDevice>> devices_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<MirrorTargetFactory>> make_cuda_mirror_targets(
    CudaBackend& backend) {
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
  return std::make_unique<CudaMirrorTargets>(&backend, std::move(devices));
}

}  // namespace gcompute::server::cuda
