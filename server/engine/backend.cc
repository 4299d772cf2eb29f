// SPDX-License-Identifier: Apache-2.0
#include "engine/backend.hpp"

#include <algorithm>
#include <cstring>

#include "absl/time/clock.h"
#include "gcompute/kernels/cpu/apsp.hpp"
#include "gcompute/kernels/cpu/scan.hpp"
#include "gcompute/kernels/cpu/sssp.hpp"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server {

absl::StatusOr<kernels::ScanResult> Backend::first_violation(const Matrix& m,
                                                             kernels::ValueCheck check) {
  Matrix host = m;  // a handle: the caller's matrix (perhaps a stored one) is left as it was
  GC_RETURN_IF_ERROR(ensure_on_host(host));
  return kernels::cpu::first_violation(host.bytes(), host.desc.elements(), host.desc.dtype, check);
}

absl::Status Backend::copy_to_device_memory(const Matrix& /*m*/, int /*device*/,
                                            std::byte* /*dst*/) {
  return absl::FailedPreconditionError(
      "output.shared_memory: GPU memory regions need the CUDA backend");
}

absl::StatusOr<OpenedDeviceMemory> Backend::open_ipc_memory(const std::string& /*handle*/,
                                                            int /*device*/) {
  return absl::FailedPreconditionError(
      "cuda_ipc_handle: GPU memory can be shared only with a server on the CUDA backend");
}

absl::Status Backend::copy_range_to_host(const Matrix& m, std::uint64_t offset, std::uint64_t bytes,
                                         char* dst) {
  if (!m.on_host()) return absl::InternalError("matrix has no host bytes to copy");
  std::memcpy(dst, reinterpret_cast<const char*>(m.bytes()) + offset, bytes);
  return absl::OkStatus();
}

absl::Status Backend::copy_to_host_memory(const Matrix& m, std::byte* dst, bool /*dst_pinned*/) {
  Matrix host = m;
  GC_RETURN_IF_ERROR(ensure_on_host(host));
  std::memcpy(dst, host.bytes(), m.desc.bytes());
  return absl::OkStatus();
}

absl::StatusOr<ApspOutput> Backend::apsp_add_edges(const ApspOutput& base,
                                                   const kernels::ApspUpdateShape& shape,
                                                   std::span<const kernels::GraphEdge> edges,
                                                   JobContext& ctx) {
  Matrix dist_old = base.distances;  // handles: the cached result is left as it was
  std::optional<Matrix> next_old = base.next_hop;
  GC_RETURN_IF_ERROR(ensure_on_host(dist_old));
  if (shape.next_hop) {
    if (!next_old) return absl::InvalidArgumentError("apsp update: next hops were not given");
    GC_RETURN_IF_ERROR(ensure_on_host(*next_old));
  }
  ApspOutput out;
  GC_ASSIGN_OR_RETURN(out.distances, allocate_matrix(MatrixDesc{DType::kF32, 1, shape.n, shape.n}));
  GC_ASSIGN_OR_RETURN(
      out.next_hop,
      allocate_matrix_if(shape.next_hop, MatrixDesc{DType::kI32, 1, shape.n, shape.n}));
  const absl::Time start = absl::Now();
  GC_ASSIGN_OR_RETURN(
      out.info,
      kernels::cpu::apsp_add_edges(
          dist_old.as<float>(), next_old ? next_old->as<std::int32_t>() : nullptr,
          out.distances.as_mutable<float>(),
          out.next_hop ? out.next_hop->as_mutable<std::int32_t>() : nullptr, shape, edges));
  ctx.device = "cpu";
  ctx.times.compute_seconds += absl::ToDoubleSeconds(absl::Now() - start);
  return out;
}

absl::StatusOr<SsspOutput> Backend::sssp(const kernels::CsrView& graph, std::int64_t source,
                                         JobContext& ctx) {
  SsspOutput out;
  out.dist.resize(static_cast<std::size_t>(std::max<std::int64_t>(graph.n, 0)));
  out.parent.resize(out.dist.size());
  const absl::Time start = absl::Now();
  GC_ASSIGN_OR_RETURN(out.info, kernels::cpu::sssp(graph, source, out.dist.data(),
                                                   out.parent.data(), ctx.stop_token()));
  ctx.device = "cpu";
  ctx.times.compute_seconds += absl::ToDoubleSeconds(absl::Now() - start);
  return out;
}

}  // namespace gcompute::server
