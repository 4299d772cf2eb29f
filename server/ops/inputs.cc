// SPDX-License-Identifier: Apache-2.0
#include "ops/inputs.hpp"

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server::ops {

absl::StatusOr<MatrixDesc> check_desc(std::int64_t batch, std::int64_t rows, std::int64_t cols,
                                      DType dtype, const std::string& field, const Limits& limits) {
  if (rows < 0 || cols < 0 || batch < 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has a negative dimension: rows=", rows,
                                                   " cols=", cols, " batch=", batch));
  }
  if (static_cast<std::uint64_t>(batch) > limits.max_batch) {
    return absl::ResourceExhaustedError(absl::StrCat(field, ".batch = ", batch, ": more than ",
                                                     limits.max_batch, " matrices (--max-batch)"));
  }
  MatrixDesc d{dtype, batch == 0 ? 1 : batch, rows, cols};
  // Overflow-safe element count check.
  const std::uint64_t max = limits.max_matrix_elements;
  const auto b = static_cast<std::uint64_t>(d.batch), r = static_cast<std::uint64_t>(rows),
             c = static_cast<std::uint64_t>(cols);
  if ((r != 0 && c > max / r) || (r * c != 0 && b > max / (r * c))) {
    return absl::ResourceExhaustedError(absl::StrCat(field, " is ", describe(d), ": more than ",
                                                     max, " elements (--max-matrix-elements)"));
  }
  return d;
}

absl::StatusOr<Matrix> take_matrix(MatrixInput input, const std::string& field,
                                   const Limits& limits) {
  GC_ASSIGN_OR_RETURN(const MatrixDesc desc,
                      check_desc(input.batch, input.rows, input.cols, input.dtype, field, limits));
  if (input.data.size() != desc.bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".data has ", input.data.size(),
                                                   " bytes but ", describe(desc), " needs ",
                                                   desc.bytes()));
  }
  return Matrix{desc, std::make_shared<std::string>(std::move(input.data)), nullptr};
}

absl::Status shared_memory_off(const std::string& field) {
  return absl::FailedPreconditionError(absl::StrCat(
      field, field.empty() ? "" : ": ",
      "this server does not serve shared memory (started with --shared-memory=false)"));
}

absl::StatusOr<std::shared_ptr<const SharedRegion>> find_region(const OpEnv& env,
                                                                const Caller& caller,
                                                                const std::string& id,
                                                                const std::string& field) {
  if (env.regions == nullptr) return shared_memory_off(field);
  return env.regions->find(caller.tenant, id, field);
}

absl::StatusOr<Matrix> take_operand(OperandInput input, const std::string& field, const OpEnv& env,
                                    const Caller& caller, std::optional<RegionRead>* read_from) {
  if (read_from != nullptr) read_from->reset();
  if (auto* m = std::get_if<MatrixInput>(&input)) {
    return take_matrix(std::move(*m), field + ".inline", env.limits);
  }
  if (auto* ref = std::get_if<RefInput>(&input)) {
    return env.matrices.read(caller.tenant, ref->id, ref->release, (field + ".ref.id").c_str());
  }
  if (auto* shm = std::get_if<SharedMemoryInput>(&input)) {
    const std::string where = field + ".shared_memory";
    GC_ASSIGN_OR_RETURN(const MatrixDesc desc, check_desc(shm->batch, shm->rows, shm->cols,
                                                          shm->dtype, where, env.limits));
    // Regions start at multiples of 256 bytes: an operand at a multiple of its element size is
    // aligned for every kernel (a misaligned one would be a device fault on the GPU).
    const std::uint64_t element = kernels::dtype_size(desc.dtype);
    if (shm->offset % element != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".offset = ", shm->offset, " is not a multiple of ", element,
                       ", the size of one ", kernels::dtype_name(desc.dtype)));
    }
    GC_ASSIGN_OR_RETURN(std::shared_ptr<const SharedRegion> region,
                        find_region(env, caller, shm->region_id, where + ".region_id"));
    GC_ASSIGN_OR_RETURN(std::byte * start, region->span(shm->offset, desc.bytes(), where));
    Matrix m{desc, nullptr, nullptr};
    if (region->cuda_device() >= 0) {
      // GPU memory of the client: the backend reads it where it lies. The copy description
      // keeps the region open while the operation runs, even once unregistered.
      struct InRegion {
        std::shared_ptr<const SharedRegion> region;
        DeviceCopy copy;
      };
      auto held = std::make_shared<InRegion>();
      held->copy.device = region->cuda_device();
      held->copy.ptr = start;
      held->copy.bytes = desc.bytes();
      held->region = std::move(region);
      m.device = std::shared_ptr<DeviceCopy>(held, &held->copy);
      return m;
    }
    m.view_pinned = region->pinned();
    if (read_from != nullptr) *read_from = RegionRead{region, shm->offset, desc.bytes()};
    // The view keeps the region mapped while the operation runs, even once unregistered.
    m.view = std::shared_ptr<const std::byte>(std::move(region), start);
    return m;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " is missing: set ", field, ".inline, ",
                                                 field, ".ref or ", field, ".shared_memory"));
}

absl::Status check_finite(Backend& backend, const Matrix& m, const std::string& field) {
  GC_ASSIGN_OR_RETURN(const kernels::ScanResult bad,
                      backend.first_violation(m, kernels::ValueCheck::kFinite));
  if (!bad.found()) return absl::OkStatus();
  const std::int64_t per = m.desc.rows * m.desc.cols;
  const std::int64_t i = bad.index;
  const std::int64_t b = i / per, r = (i % per) / m.desc.cols, c = i % m.desc.cols;
  return absl::FailedPreconditionError(absl::StrCat(
      field, " has a non-finite value at ", m.desc.batch > 1 ? absl::StrCat("batch ", b, ", ") : "",
      "row ", r, ", column ", c, "; this operation needs finite input"));
}

absl::Status invalid_for_operand(const absl::Status& check, const std::string& field,
                                 const MatrixDesc& desc) {
  if (check.ok()) return check;
  return absl::InvalidArgumentError(
      absl::StrCat(check.message(), " (", field, " is ", describe(desc), ")"));
}

absl::StatusOr<absl::Duration> output_ttl(const OutputOptions& output, const MatrixStore& store) {
  return store.ttl_from_seconds(output.ttl_seconds, "output.ttl_seconds");
}

}  // namespace gcompute::server::ops
