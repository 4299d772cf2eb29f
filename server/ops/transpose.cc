// SPDX-License-Identifier: Apache-2.0
// Transpose: every matrix of a batch, any dtype.
#include "common/output_shapes.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "ops/admission.hpp"
#include "ops/inputs.hpp"
#include "ops/placement.hpp"
#include "ops/prepared_op.hpp"

namespace gcompute::server::ops {

absl::StatusOr<PreparedOp> prepare_transpose(TransposeRequest request, OpEnv& env,
                                             const Caller& caller) {
  GC_ASSIGN_OR_RETURN(Matrix a, take_operand(std::move(request.a), "a", env, caller));
  GC_RETURN_IF_ERROR(admit(2 * a.desc.bytes(), "Transpose", env.limits, /*on_device=*/true));
  GC_ASSIGN_OR_RETURN(ResultPlan plan,
                      ResultPlan::make(request.output, {{transpose_output(a.desc), "at"}}, env,
                                       env.limits, caller));
  const bool tiny = a.desc.bytes() <= kTinyTransposeBytes;
  return PreparedOp{"Transpose",
                    [a = std::move(a), plan = std::move(plan)](
                        Backend& backend, JobContext& job) mutable -> absl::StatusOr<OpResult> {
                      job.results_stay_on_server = plan.keeps_any();
                      GC_ASSIGN_OR_RETURN(Matrix at, backend.transpose(a, job));
                      GC_ASSIGN_OR_RETURN(ResultMatrix placed,
                                          plan.place(0, std::move(at), backend));
                      return TransposeResult{std::move(placed)};
                    },
                    tiny};
}

}  // namespace gcompute::server::ops
