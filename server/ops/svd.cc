// SPDX-License-Identifier: Apache-2.0
// Svd and BatchedSvd.
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

/// The result of an SVD whose input and factors all have no elements.
absl::StatusOr<OpResult> empty_svd(ResultPlan& plan, const kernels::SvdShape& shape,
                                   Backend& backend) {
  const SvdOutputDescs descs = svd_outputs(shape);
  auto empty = [](const MatrixDesc& d) {
    return Matrix{d, std::make_shared<std::string>(), nullptr};
  };
  SvdResult result;
  GC_ASSIGN_OR_RETURN(result.s, plan.place(0, empty(descs.s), backend));
  if (shape.compute_uv) {
    GC_ASSIGN_OR_RETURN(result.u, plan.place(1, empty(descs.u), backend));
    GC_ASSIGN_OR_RETURN(result.vt, plan.place(2, empty(descs.vt), backend));
  }
  result.converged = true;
  return result;
}

}  // namespace

absl::StatusOr<PreparedOp> prepare_svd(SvdRequest request, OpEnv& env, const Caller& caller) {
  GC_ASSIGN_OR_RETURN(Matrix a, take_operand(std::move(request.a), "a", env, caller));
  if (!request.batched && a.desc.batch != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a is a batch of ", a.desc.batch, " matrices; Svd takes one, use BatchedSvd"));
  }
  kernels::SvdShape shape;
  shape.batch = a.desc.batch;
  shape.m = a.desc.rows;
  shape.n = a.desc.cols;
  shape.dtype = a.desc.dtype;
  shape.compute_uv = request.compute_uv;
  shape.full_matrices = request.full_matrices;
  shape.method = request.method;
  shape.tolerance = request.tolerance;
  shape.max_sweeps = request.max_sweeps;
  GC_RETURN_IF_ERROR(invalid_for_operand(kernels::validate(shape), "a", a.desc));
  const SvdOutputDescs descs = svd_outputs(shape);
  std::vector<ResultPlan::Output> outputs = {{descs.s, "s"}};
  if (shape.compute_uv) {
    for (const MatrixDesc* d : {&descs.u, &descs.vt}) {
      if (d->elements() > env.limits.max_matrix_elements) {
        return absl::ResourceExhaustedError(
            absl::StrCat("SVD factor would be ", describe(*d), ": more than ",
                         env.limits.max_matrix_elements, " elements (--max-matrix-elements)"));
      }
    }
    outputs.push_back({descs.u, "u"});
    outputs.push_back({descs.vt, "vt"});
  }
  // The input, a working copy in f64 and the factors; and one matrix's input and factors again:
  // the copies that a cancellable LAPACK call owns on the host (kernels/cpu/svd.cc).
  const std::uint64_t factors = ResultPlan::total_bytes(outputs);
  const std::uint64_t batch = std::max<std::int64_t>(1, a.desc.batch);
  const std::uint64_t estimate =
      a.desc.bytes() + 8 * a.desc.elements() + factors + (a.desc.bytes() + factors) / batch;
  GC_RETURN_IF_ERROR(admit(estimate, request.batched ? "BatchedSvd" : "Svd", env.limits,
                           /*on_device=*/true));
  // Matrices without elements have empty factors: answered without a loop over the batch.
  bool empty = a.desc.elements() == 0;
  for (const ResultPlan::Output& out : outputs) empty = empty && out.desc.elements() == 0;
  GC_ASSIGN_OR_RETURN(ResultPlan plan, ResultPlan::make(request.output, std::move(outputs), env,
                                                        env.limits, caller));
  return PreparedOp{request.batched ? "BatchedSvd" : "Svd",
                    [a = std::move(a), shape, plan = std::move(plan), empty](
                        Backend& backend, JobContext& job) mutable -> absl::StatusOr<OpResult> {
                      if (empty) return empty_svd(plan, shape, backend);
                      GC_RETURN_IF_ERROR(check_finite(backend, a, "a"));
                      job.results_stay_on_server = plan.keeps_any();
                      GC_ASSIGN_OR_RETURN(SvdOutput out, backend.svd(a, shape, job));
                      SvdResult result;
                      GC_ASSIGN_OR_RETURN(result.s, plan.place(0, std::move(out.s), backend));
                      if (out.u) {
                        GC_ASSIGN_OR_RETURN(result.u, plan.place(1, *std::move(out.u), backend));
                        GC_ASSIGN_OR_RETURN(result.vt, plan.place(2, *std::move(out.vt), backend));
                      }
                      result.sweeps = out.info.sweeps;
                      result.converged = out.info.converged;
                      return result;
                    }};
}

}  // namespace gcompute::server::ops
