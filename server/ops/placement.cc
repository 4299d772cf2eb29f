// SPDX-License-Identifier: Apache-2.0
#include "ops/placement.hpp"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/quote.hpp"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server::ops {

std::uint64_t ResultPlan::total_bytes(const std::vector<Output>& outputs) {
  std::uint64_t bytes = 0;
  for (const Output& out : outputs) bytes += out.desc.bytes();
  return bytes;
}

absl::StatusOr<ResultPlan> ResultPlan::make(const OutputOptions& options,
                                            std::vector<Output> outputs, const OpEnv& env,
                                            const Limits& limits, const Caller& caller) {
  ResultPlan plan;
  MatrixStore& store = env.matrices;
  plan.store_ = &store;
  if (options.placement == OutputOptions::Placement::kSharedMemory) {
    GC_ASSIGN_OR_RETURN(
        std::shared_ptr<const SharedRegion> region,
        find_region(env, caller, options.region_id.value_or(""), "output.shared_memory.region_id"));
    std::uint64_t at = options.region_offset;
    const std::uint64_t size = region->description().size;
    if (at > size) {  // before any rounding, which could wrap
      return absl::InvalidArgumentError(
          absl::StrCat("output.shared_memory.offset = ", at, " lies past the end of region ",
                       quote_id(region->id()), " of ", size, " bytes"));
    }
    for (Output& out : outputs) {
      const std::uint64_t bytes = out.desc.bytes();
      at = (at + kSharedMemoryAlignment - 1) / kSharedMemoryAlignment * kSharedMemoryAlignment;
      if (bytes == 0) at = std::min(at, size);  // an empty result fits anywhere
      GC_RETURN_IF_ERROR(region
                             ->span(at, bytes,
                                    absl::StrCat("output.shared_memory (result ", out.field, ", ",
                                                 describe(out.desc), ")"))
                             .status());
      Slot slot{std::move(out)};
      slot.region = region;
      slot.region_offset = at;
      plan.slots_.push_back(std::move(slot));
      at += bytes;
    }
    plan.keeps_any_ = true;
    return plan;
  }
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
  if (slot.region != nullptr) {
    GC_ASSIGN_OR_RETURN(std::byte * dst, region_destination(slot, m.desc));
    if (slot.region->cuda_device() >= 0) {
      GC_RETURN_IF_ERROR(backend.copy_to_device_memory(m, slot.region->cuda_device(), dst));
    } else {
      GC_RETURN_IF_ERROR(backend.copy_to_host_memory(m, dst, slot.region->pinned()));
    }
    return written_in_place(index, m.desc);
  }
  GC_RETURN_IF_ERROR(own_host_bytes(m));  // a view of the caller's memory cannot leave the call
  if (slot.stored) {
    GC_ASSIGN_OR_RETURN(StoredMatrixInfo info,
                        store_->put(std::move(m), ttl_, std::move(slot.reservation)));
    return info;
  }
  GC_RETURN_IF_ERROR(backend.ensure_on_host(m));
  return m;
}

absl::StatusOr<std::byte*> ResultPlan::region_destination(const Slot& slot,
                                                          const MatrixDesc& desc) {
  return slot.region->span(slot.region_offset, desc.bytes(),
                           absl::StrCat("output.shared_memory (result ", slot.output.field, ")"));
}

absl::StatusOr<std::byte*> ResultPlan::pinned_host_destination(
    std::size_t index, const MatrixDesc& desc, std::span<const RegionRead> reads) const {
  const Slot& slot = slots_.at(index);
  if (slot.region == nullptr || !slot.region->pinned() || slot.region->cuda_device() >= 0) {
    return nullptr;
  }
  for (const RegionRead& read : reads) {
    if (slot.region->may_overlap(slot.region_offset, desc.bytes(), *read.region, read.offset,
                                 read.bytes)) {
      return nullptr;
    }
  }
  return region_destination(slot, desc);
}

ResultMatrix ResultPlan::written_in_place(std::size_t index, const MatrixDesc& desc) const {
  const Slot& slot = slots_.at(index);
  return SharedMemoryResult{slot.region->id(), slot.region_offset, desc};
}

}  // namespace gcompute::server::ops
