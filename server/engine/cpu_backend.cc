// SPDX-License-Identifier: Apache-2.0
#include "engine/cpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

#include "gcompute/kernels/cpu/apsp.hpp"
#include "gcompute/kernels/cpu/eigh.hpp"
#include "gcompute/kernels/cpu/matmul.hpp"
#include "gcompute/kernels/cpu/svd.hpp"
#include "gcompute/kernels/cpu/transpose.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "wire/fresh_buffer.hpp"

namespace gcompute::server {
namespace {

/// Runs `fn` and adds its wall time to ctx.times.compute_seconds.
template <typename Fn>
auto timed(JobContext& ctx, Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  auto result = fn();
  ctx.times.compute_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

/// Uploads land directly in the host matrix. The first chunk reserves the whole matrix's
/// address space, once (no reallocation copies later); physical memory is taken as chunks are
/// written (faulted in ahead of them by wire::PrefaultAhead, at most as far as they reach and
/// 64 MiB), so a header alone holds nothing and a stalled stream at most about twice what it
/// sent.
class HostUploadSink final : public UploadSink {
 public:
  explicit HostUploadSink(const MatrixDesc& desc)
      : m_{desc, std::make_shared<std::string>(), nullptr} {}
  absl::Status write(std::uint64_t offset, BytePieces pieces, std::uint64_t size) override {
    std::string& bytes = *m_.data;
    try {
      if (bytes.capacity() < m_.desc.bytes()) {
        bytes.reserve(m_.desc.bytes());
        wire::advise_huge_pages(bytes.data(), bytes.capacity());
        prefault_.start(bytes.data(), m_.desc.bytes());
      }
      if (offset == bytes.size()) {  // in order, as chunks come: appended, each byte written once
        for (std::span<const char> piece : pieces) bytes.append(piece.data(), piece.size());
        prefault_.written(bytes.size());
        return absl::OkStatus();
      }
      if (bytes.size() < offset + size) bytes.resize(offset + size);  // zero-fills a gap first
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of host memory storing upload bytes up to offset ", offset + size));
    }
    gather(pieces, bytes.data() + offset);
    prefault_.written(bytes.size());
    return absl::OkStatus();
  }
  absl::StatusOr<Matrix> finish() override {
    prefault_.stop();
    m_.data->resize(m_.desc.bytes());  // every byte was written
    return std::move(m_);
  }

 private:
  Matrix m_;
  wire::PrefaultAhead prefault_;  // declared after m_: stopped before the bytes go
};

}  // namespace

absl::StatusOr<std::unique_ptr<UploadSink>> CpuBackend::begin_upload(const MatrixDesc& desc) {
  return std::make_unique<HostUploadSink>(desc);
}

absl::Status CpuBackend::ensure_on_host(Matrix& m) {
  if (m.on_host()) return absl::OkStatus();
  return absl::InternalError("matrix has no host bytes and the CPU backend has no device copy");
}

absl::StatusOr<Matrix> CpuBackend::transpose(const Matrix& a, JobContext& ctx) {
  auto out = allocate_matrix(transpose_output(a.desc));
  if (!out.ok()) return out.status();
  const kernels::TransposeShape shape{a.desc.batch, a.desc.rows, a.desc.cols,
                                      kernels::dtype_size(a.desc.dtype)};
  GC_RETURN_IF_ERROR(timed(ctx, [&] {
    return kernels::cpu::transpose(a.bytes(), out->mutable_bytes(), shape, ctx.stop_token());
  }));
  return out;
}

absl::StatusOr<Matrix> CpuBackend::matmul(const Matrix& a, const Matrix& b, const Matrix* c,
                                          const kernels::MatmulShape& shape, JobContext& ctx) {
  auto out = allocate_matrix(matmul_output(shape));
  if (!out.ok()) return out.status();
  if (c != nullptr) std::memcpy(out->mutable_bytes(), c->bytes(), out->desc.bytes());
  GC_RETURN_IF_ERROR(timed(ctx, [&] {
    return kernels::cpu::matmul(a.bytes(), b.bytes(), out->mutable_bytes(), shape,
                                ctx.stop_token());
  }));
  return out;
}

absl::StatusOr<SvdOutput> CpuBackend::svd(const Matrix& a, const kernels::SvdShape& shape,
                                          JobContext& ctx) {
  const SvdOutputDescs descs = svd_outputs(shape);
  SvdOutput out;
  GC_ASSIGN_OR_RETURN(out.s, allocate_matrix(descs.s));
  GC_ASSIGN_OR_RETURN(out.u, allocate_matrix_if(shape.compute_uv, descs.u));
  GC_ASSIGN_OR_RETURN(out.vt, allocate_matrix_if(shape.compute_uv, descs.vt));
  GC_ASSIGN_OR_RETURN(out.info, timed(ctx, [&] {
                        return kernels::cpu::svd(
                            a.bytes(), out.s.mutable_bytes(), mutable_bytes_or_null(out.u),
                            mutable_bytes_or_null(out.vt), shape, ctx.stop_token());
                      }));
  return out;
}

absl::StatusOr<EighOutput> CpuBackend::eigh(const Matrix& a, const kernels::EighShape& shape,
                                            JobContext& ctx) {
  GC_RETURN_IF_ERROR(kernels::check_symmetric(a.bytes(), shape));
  const EighOutputDescs descs = eigh_outputs(shape);
  EighOutput out;
  GC_ASSIGN_OR_RETURN(out.w, allocate_matrix(descs.w));
  GC_ASSIGN_OR_RETURN(out.v, allocate_matrix_if(shape.compute_vectors, descs.v));
  GC_ASSIGN_OR_RETURN(out.info, timed(ctx, [&] {
                        return kernels::cpu::eigh(a.bytes(), out.w.mutable_bytes(),
                                                  mutable_bytes_or_null(out.v), shape,
                                                  ctx.stop_token());
                      }));
  return out;
}

absl::StatusOr<ApspOutput> CpuBackend::apsp(const Matrix& weights, const kernels::ApspShape& shape,
                                            JobContext& ctx) {
  return apsp_on_host(weights, shape, ctx);
}

absl::StatusOr<ApspOutput> apsp_on_host(const Matrix& weights, const kernels::ApspShape& shape,
                                        JobContext& ctx) {
  ApspOutput out;
  GC_ASSIGN_OR_RETURN(out.distances, allocate_matrix(MatrixDesc{shape.dtype, 1, shape.n, shape.n}));
  GC_ASSIGN_OR_RETURN(
      out.next_hop,
      allocate_matrix_if(shape.next_hop, MatrixDesc{DType::kI32, 1, shape.n, shape.n}));
  GC_ASSIGN_OR_RETURN(out.info, timed(ctx, [&] {
                        return kernels::cpu::apsp(
                            weights.bytes(), out.distances.mutable_bytes(),
                            out.next_hop ? out.next_hop->as_mutable<std::int32_t>() : nullptr,
                            shape, ctx.stop_token());
                      }));
  return out;
}

}  // namespace gcompute::server
