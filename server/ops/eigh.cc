// SPDX-License-Identifier: Apache-2.0
// Eigh: symmetric eigendecomposition.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/output_shapes.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "ops/admission.hpp"
#include "ops/inputs.hpp"
#include "ops/placement.hpp"
#include "ops/prepared_op.hpp"

namespace gcompute::server::ops {

absl::StatusOr<PreparedOp> prepare_eigh(EighRequest request, OpEnv& env, const Caller& caller) {
  GC_ASSIGN_OR_RETURN(Matrix a, take_operand(std::move(request.a), "a", env, caller));
  if (a.desc.rows != a.desc.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("eigh needs square matrices, a is ", describe(a.desc)));
  }
  kernels::EighShape shape;
  shape.batch = a.desc.batch;
  shape.n = a.desc.rows;
  shape.dtype = a.desc.dtype;
  shape.compute_vectors = request.compute_vectors;
  shape.symmetry_tolerance = request.symmetry_tolerance;
  GC_RETURN_IF_ERROR(invalid_for_operand(kernels::validate(shape), "a", a.desc));
  const EighOutputDescs descs = eigh_outputs(shape);
  std::vector<ResultPlan::Output> outputs = {{descs.w, "w"}};
  if (shape.compute_vectors) outputs.push_back({descs.v, "v"});
  // The input and the outputs; for one matrix at a time, LAPACK's working copy and the input
  // and outputs that a cancellable call owns (kernels/cpu/eigh.cc).
  const std::uint64_t results = ResultPlan::total_bytes(outputs);
  const std::uint64_t batch = std::max<std::int64_t>(1, a.desc.batch);
  GC_RETURN_IF_ERROR(admit(a.desc.bytes() + results + (2 * a.desc.bytes() + results) / batch,
                           "Eigh", env.limits, /*on_device=*/true));
  GC_ASSIGN_OR_RETURN(ResultPlan plan, ResultPlan::make(request.output, std::move(outputs), env,
                                                        env.limits, caller));
  return PreparedOp{"Eigh",
                    [a = std::move(a), shape, plan = std::move(plan)](
                        Backend& backend, JobContext& job) mutable -> absl::StatusOr<OpResult> {
                      GC_RETURN_IF_ERROR(check_finite(backend, a, "a"));
                      job.results_stay_on_server = plan.keeps_any();
                      GC_ASSIGN_OR_RETURN(EighOutput out, backend.eigh(a, shape, job));
                      EighResult result;
                      GC_ASSIGN_OR_RETURN(result.w, plan.place(0, std::move(out.w), backend));
                      if (out.v) {
                        GC_ASSIGN_OR_RETURN(result.v, plan.place(1, *std::move(out.v), backend));
                      }
                      result.converged = out.info.converged;
                      return result;
                    }};
}

}  // namespace gcompute::server::ops
