// SPDX-License-Identifier: Apache-2.0
#include "api/convert.hpp"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gcompute::server {

absl::StatusOr<DType> decode_dtype(v1::DType dtype, const std::string& field) {
  switch (dtype) {
    case v1::DTYPE_F32:
      return DType::kF32;
    case v1::DTYPE_F64:
      return DType::kF64;
    case v1::DTYPE_F16:
      return DType::kF16;
    case v1::DTYPE_BF16:
      return DType::kBF16;
    case v1::DTYPE_I32:
      return DType::kI32;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          field, " is ",
          v1::DType_Name(dtype).empty() ? std::to_string(dtype) : v1::DType_Name(dtype),
          "; expected DTYPE_F32, DTYPE_F64, DTYPE_F16, DTYPE_BF16 or DTYPE_I32"));
  }
}

v1::DType encode_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return v1::DTYPE_F32;
    case DType::kF64:
      return v1::DTYPE_F64;
    case DType::kF16:
      return v1::DTYPE_F16;
    case DType::kBF16:
      return v1::DTYPE_BF16;
    case DType::kI32:
      return v1::DTYPE_I32;
  }
  return v1::DTYPE_UNSPECIFIED;
}

absl::StatusOr<MatrixDesc> decode_desc(std::int64_t batch, std::int64_t rows, std::int64_t cols,
                                       v1::DType dtype, const std::string& field,
                                       const Limits& limits) {
  if (rows < 0 || cols < 0 || batch < 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, " has a negative dimension: rows=", rows,
                                                   " cols=", cols, " batch=", batch));
  }
  auto dt = decode_dtype(dtype, field + ".dtype");
  if (!dt.ok()) return dt.status();
  MatrixDesc d{*dt, batch == 0 ? 1 : batch, rows, cols};
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

absl::StatusOr<Matrix> take_matrix(v1::Matrix* m, const std::string& field, const Limits& limits) {
  auto desc = decode_desc(m->batch(), m->rows(), m->cols(), m->dtype(), field, limits);
  if (!desc.ok()) return desc.status();
  if (m->data().size() != desc->bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".data has ", m->data().size(),
                                                   " bytes but ", describe(*desc), " needs ",
                                                   desc->bytes()));
  }
  Matrix out{*desc, std::make_shared<std::string>()};
  out.data->swap(*m->mutable_data());
  return out;
}

absl::StatusOr<Matrix> take_operand(v1::Operand* op, const std::string& field,
                                    const MatrixStore& store, const Limits& limits) {
  switch (op->source_case()) {
    case v1::Operand::kInline:
      return take_matrix(op->mutable_inline_(), field + ".inline", limits);
    case v1::Operand::kRef:
      return store.get(op->ref().id(), (field + ".ref.id").c_str());
    case v1::Operand::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is missing: set ", field, ".inline or ", field, ".ref"));
}

namespace {
std::uint64_t inline_budget(const Limits& limits) {
  return limits.max_message_bytes > limits.response_overhead_bytes
             ? limits.max_message_bytes - limits.response_overhead_bytes
             : 0;
}
}  // namespace

bool results_stay_on_server(const v1::OutputOptions& options, std::uint64_t output_bytes,
                            const Limits& limits) {
  switch (options.placement()) {
    case v1::OutputOptions::PLACEMENT_STORED:
      return true;
    case v1::OutputOptions::PLACEMENT_INLINE:
      return false;
    default:
      return output_bytes > inline_budget(limits);
  }
}

ResultPlacer::ResultPlacer(const v1::OutputOptions& options, MatrixStore& store,
                           const Limits& limits, Backend& backend)
    : options_(options), store_(store), backend_(backend), inline_budget_(inline_budget(limits)) {}

absl::Status ResultPlacer::place(Matrix m, const std::string& field, v1::MatrixResult* out) {
  const std::uint64_t bytes = m.desc.bytes();
  const auto placement = options_.placement();
  const bool fits = bytes <= inline_budget_;
  if (placement == v1::OutputOptions::PLACEMENT_INLINE && !fits) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "result ", field, " (", describe(m.desc), ", ", bytes,
        " bytes) does not fit in a response under the max message size; use output.placement = "
        "PLACEMENT_AUTO or PLACEMENT_STORED"));
  }
  if (placement == v1::OutputOptions::PLACEMENT_STORED || !fits) {
    auto ttl = store_.ttl_from_seconds(options_.ttl_seconds(), "output.ttl_seconds");
    if (!ttl.ok()) return ttl.status();
    auto info = store_.put(std::move(m), *ttl);
    if (!info.ok()) return info.status();
    encode_stored(*info, out->mutable_stored());
    return absl::OkStatus();
  }
  inline_budget_ -= bytes;
  if (auto st = backend_.ensure_on_host(m); !st.ok()) return st;
  v1::Matrix* mat = out->mutable_inline_();
  mat->set_rows(m.desc.rows);
  mat->set_cols(m.desc.cols);
  mat->set_dtype(encode_dtype(m.desc.dtype));
  mat->set_batch(m.desc.batch);
  if (m.data.use_count() == 1) {
    mat->mutable_data()->swap(*m.data);
  } else {
    *mat->mutable_data() = *m.data;
  }
  return absl::OkStatus();
}

void encode_shape(const MatrixDesc& d, v1::MatrixShape* out) {
  out->set_rows(d.rows);
  out->set_cols(d.cols);
  out->set_dtype(encode_dtype(d.dtype));
  out->set_batch(d.batch);
}

void encode_stored(const StoredMatrixInfo& info, v1::StoredMatrix* out) {
  out->mutable_ref()->set_id(info.id);
  encode_shape(info.desc, out->mutable_shape());
  out->set_expires_at_unix_ms(absl::ToUnixMillis(info.expires_at));
  out->set_size_bytes(info.desc.bytes());
}

void encode_stats(const JobContext& job, double total_seconds, v1::ExecutionStats* out) {
  out->set_queue_seconds(job.times.queue_seconds);
  out->set_h2d_seconds(job.times.h2d_seconds);
  out->set_compute_seconds(job.times.compute_seconds);
  out->set_d2h_seconds(job.times.d2h_seconds);
  out->set_total_seconds(total_seconds);
  out->set_device(job.device);
}

std::int64_t first_non_finite(const Matrix& m) {
  const std::uint64_t n = m.desc.elements();
  if (m.desc.dtype == DType::kF32) {
    const float* p = m.as<float>();
    for (std::uint64_t i = 0; i < n; ++i) {
      if (!std::isfinite(p[i])) return static_cast<std::int64_t>(i);
    }
  } else if (m.desc.dtype == DType::kF64) {
    const double* p = m.as<double>();
    for (std::uint64_t i = 0; i < n; ++i) {
      if (!std::isfinite(p[i])) return static_cast<std::int64_t>(i);
    }
  }
  return -1;
}

}  // namespace gcompute::server
