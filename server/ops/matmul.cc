// SPDX-License-Identifier: Apache-2.0
// MatMul: C = alpha * op(A) * op(B) + beta * C. The shape is inferred here, once, from the
// operands and options; kernels::validate then checks what the kernels require of it.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/output_shapes.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "ops/admission.hpp"
#include "ops/inputs.hpp"
#include "ops/placement.hpp"
#include "ops/prepared_op.hpp"

namespace gcompute::server::ops {
namespace {

absl::StatusOr<kernels::MatmulShape> infer_shape(const MatMulRequest& request, const MatrixDesc& a,
                                                 const MatrixDesc& b) {
  if (a.dtype != b.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("A is ", describe(a), " but B is ", describe(b), ": dtypes differ"));
  }
  kernels::MatmulShape shape;
  shape.transpose_a = request.transpose_a;
  shape.transpose_b = request.transpose_b;
  shape.m = shape.transpose_a ? a.cols : a.rows;
  shape.k = shape.transpose_a ? a.rows : a.cols;
  const std::int64_t kb = shape.transpose_b ? b.cols : b.rows;
  shape.n = shape.transpose_b ? b.rows : b.cols;
  if (shape.k != kb) {
    return absl::InvalidArgumentError(absl::StrCat("A is ", describe(a), " but B is ", describe(b),
                                                   ": op(A) has ", shape.k, " columns, op(B) has ",
                                                   kb, " rows (transpose_a=", shape.transpose_a,
                                                   ", transpose_b=", shape.transpose_b, ")"));
  }
  shape.a_batch = a.batch;
  shape.b_batch = b.batch;
  shape.batch = std::max(a.batch, b.batch);
  shape.dtype = a.dtype;
  shape.precision = request.precision;
  shape.alpha = request.alpha.value_or(1.0);
  shape.beta = request.beta.value_or(0.0);
  GC_RETURN_IF_ERROR(kernels::validate(shape));
  return shape;
}

}  // namespace

absl::StatusOr<PreparedOp> prepare_matmul(MatMulRequest request, OpEnv& env, const Caller& caller) {
  GC_ASSIGN_OR_RETURN(Matrix a, take_operand(std::move(request.a), "a", env, caller));
  GC_ASSIGN_OR_RETURN(Matrix b, take_operand(std::move(request.b), "b", env, caller));
  GC_ASSIGN_OR_RETURN(const kernels::MatmulShape shape, infer_shape(request, a.desc, b.desc));
  const MatrixDesc out_desc = matmul_output(shape);
  if (out_desc.elements() > env.limits.max_matrix_elements) {
    return absl::ResourceExhaustedError(absl::StrCat("result C would be ", describe(out_desc),
                                                     ": more than ", env.limits.max_matrix_elements,
                                                     " elements (--max-matrix-elements)"));
  }
  std::optional<Matrix> c;
  if (shape.beta != 0.0) {
    auto cm = take_operand(std::move(request.c), "c", env, caller);
    if (!cm.ok()) {
      return absl::Status(
          cm.status().code(),
          absl::StrCat(cm.status().message(), " (needed because beta = ", shape.beta, ")"));
    }
    if (cm->desc.dtype != out_desc.dtype || cm->desc.rows != out_desc.rows ||
        cm->desc.cols != out_desc.cols || cm->desc.batch != out_desc.batch) {
      return absl::InvalidArgumentError(
          absl::StrCat("C is ", describe(cm->desc), " but the result is ", describe(out_desc)));
    }
    c = *std::move(cm);
  }
  // Operands, the result and (emulated precisions) f32 copies of one matrix of each.
  std::uint64_t estimate = a.desc.bytes() + b.desc.bytes() + out_desc.bytes();
  if (c) estimate += c->desc.bytes();
  if (shape.dtype != DType::kF32 && shape.dtype != DType::kF64) {
    estimate += 4 * (a.desc.elements() / a.desc.batch + b.desc.elements() / b.desc.batch +
                     out_desc.elements() / out_desc.batch);
  }
  GC_RETURN_IF_ERROR(admit(estimate, "MatMul", env.limits, /*on_device=*/true));
  GC_ASSIGN_OR_RETURN(ResultPlan plan,
                      ResultPlan::make(request.output, {{out_desc, "c"}}, env, env.limits, caller));
  const bool tiny = static_cast<std::uint64_t>(shape.batch) * static_cast<std::uint64_t>(shape.m) *
                        static_cast<std::uint64_t>(shape.n) * static_cast<std::uint64_t>(shape.k) <=
                    kTinyMatmulMultiplyAdds;
  return PreparedOp{
      "MatMul",
      [a = std::move(a), b = std::move(b), c = std::move(c), shape, plan = std::move(plan)](
          Backend& backend, JobContext& job) mutable -> absl::StatusOr<OpResult> {
        job.results_stay_on_server = plan.keeps_any();
        GC_ASSIGN_OR_RETURN(Matrix out, backend.matmul(a, b, c ? &*c : nullptr, shape, job));
        GC_ASSIGN_OR_RETURN(ResultMatrix placed, plan.place(0, std::move(out), backend));
        return MatMulResult{std::move(placed)};
      },
      tiny};
}

}  // namespace gcompute::server::ops
