// SPDX-License-Identifier: Apache-2.0
// The CPU backend: kernels/cpu behind the Backend interface.
#pragma once

#include "common/output_shapes.hpp"
#include "engine/backend.hpp"

namespace gcompute::server {

class CpuBackend final : public Backend {
 public:
  /// `workers` jobs run at once; each kernel may use further threads (OpenBLAS, APSP).
  explicit CpuBackend(int workers) : workers_(workers < 1 ? 1 : workers) {}

  std::string name() const override { return "cpu"; }
  std::vector<DeviceInfo> devices() const override { return {}; }
  int concurrency() const override { return workers_; }

  absl::StatusOr<Matrix> transpose(const Matrix& a, JobContext& ctx) override;
  absl::StatusOr<Matrix> matmul(const Matrix& a, const Matrix& b, const Matrix* c,
                                const kernels::MatmulShape& shape, JobContext& ctx) override;
  absl::StatusOr<SvdOutput> svd(const Matrix& a, const kernels::SvdShape& shape,
                                JobContext& ctx) override;
  absl::StatusOr<EighOutput> eigh(const Matrix& a, const kernels::EighShape& shape,
                                  JobContext& ctx) override;
  absl::StatusOr<ApspOutput> apsp(const Matrix& weights, const kernels::ApspShape& shape,
                                  JobContext& ctx) override;
  absl::StatusOr<std::unique_ptr<UploadSink>> begin_upload(const MatrixDesc& desc) override;
  absl::Status ensure_on_host(Matrix& m) override;

 private:
  int workers_;
};

/// APSP with the host kernel on host bytes (`weights` must be on the host). The CPU backend's
/// apsp; the CUDA backend's for i32 inputs whose distances may leave the i32 range (the host
/// kernel is exact there and reports the pair, so every backend answers alike).
absl::StatusOr<ApspOutput> apsp_on_host(const Matrix& weights, const kernels::ApspShape& shape,
                                        JobContext& ctx);

}  // namespace gcompute::server
