// SPDX-License-Identifier: Apache-2.0
#include "ops/placement.hpp"

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/status_macros.hpp"
#include "ops/inputs.hpp"

namespace gcompute::server::ops {

std::uint64_t ResultPlan::total_bytes(const std::vector<Output>& outputs) {
  std::uint64_t bytes = 0;
  for (const Output& out : outputs) bytes += out.desc.bytes();
  return bytes;
}

absl::StatusOr<ResultPlan> ResultPlan::make(const OutputOptions& options,
                                            std::vector<Output> outputs, MatrixStore& store,
                                            const Limits& limits, const Caller& caller) {
  ResultPlan plan;
  plan.store_ = &store;
  std::uint64_t budget = limits.max_message_bytes > limits.response_overhead_bytes
                             ? limits.max_message_bytes - limits.response_overhead_bytes
                             : 0;
  for (Output& out : outputs) {
    const std::uint64_t bytes = out.desc.bytes();
    const bool fits = bytes <= budget;
    if (options.placement == OutputOptions::Placement::kInline && !fits) {
      return absl::ResourceExhaustedError(
          absl::StrCat("result ", out.field, " (", describe(out.desc), ", ", bytes,
                       " bytes) does not fit in a response under the max message size; use "
                       "output.placement = PLACEMENT_AUTO or PLACEMENT_STORED"));
    }
    Slot slot{std::move(out)};
    slot.stored = options.placement == OutputOptions::Placement::kStored || !fits;
    if (!slot.stored) budget -= bytes;
    plan.keeps_any_ |= slot.stored;
    plan.slots_.push_back(std::move(slot));
  }
  if (plan.keeps_any_) {
    GC_ASSIGN_OR_RETURN(plan.ttl_, output_ttl(options, store));
    for (Slot& slot : plan.slots_) {
      if (slot.stored) {
        GC_ASSIGN_OR_RETURN(slot.reservation,
                            store.reserve(caller.tenant, slot.output.desc.bytes()));
      }
    }
  }
  return plan;
}

absl::StatusOr<ResultMatrix> ResultPlan::place(std::size_t index, Matrix m, Backend& backend) {
  Slot& slot = slots_.at(index);
  if (slot.stored) {
    GC_ASSIGN_OR_RETURN(StoredMatrixInfo info,
                        store_->put(std::move(m), ttl_, std::move(slot.reservation)));
    return info;
  }
  GC_RETURN_IF_ERROR(backend.ensure_on_host(m));
  return m;
}

}  // namespace gcompute::server::ops
