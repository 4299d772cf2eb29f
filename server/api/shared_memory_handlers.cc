// SPDX-License-Identifier: Apache-2.0
// Shared-memory region RPCs. They run on the store executor, not in the reaction: mapping a
// region and page-locking it for the GPU takes milliseconds per gigabyte, and so does undoing it.
#include <algorithm>

#include "api/compute_service.hpp"

namespace gcompute::server {

grpc::ServerUnaryReactor* ComputeService::RegisterSharedMemory(
    grpc::CallbackServerContext* ctx, const v1::RegisterSharedMemoryRequest* request,
    v1::RegisterSharedMemoryResponse* response) {
  return UnaryCall::start(
      svc_, "RegisterSharedMemory", ctx, *request, response, [&](UnaryCall& call) {
        call.run_on_store([this, &call, request, response]() -> absl::Status {
          auto region = svc_.ops.register_shared_memory(
              call.caller(), {request->name(), request->cuda_ipc_handle(), request->cuda_device(),
                              request->offset(), request->byte_size()});
          if (!region.ok()) return region.status();
          v1::SharedMemoryRegion* out = response->mutable_region();
          out->set_region_id(region->id);
          out->set_name(region->name);
          out->set_offset(region->offset);
          out->set_byte_size(region->size);
          out->set_device_registered(region->pinned);
          out->set_cuda_ipc(region->cuda_device >= 0);
          out->set_cuda_device(std::max(region->cuda_device, 0));
          return absl::OkStatus();
        });
      });
}

grpc::ServerUnaryReactor* ComputeService::UnregisterSharedMemory(
    grpc::CallbackServerContext* ctx, const v1::UnregisterSharedMemoryRequest* request,
    v1::UnregisterSharedMemoryResponse* response) {
  return UnaryCall::start(
      svc_, "UnregisterSharedMemory", ctx, *request, response, [&](UnaryCall& call) {
        call.run_on_store([this, &call, request] {
          return svc_.ops.unregister_shared_memory(call.caller(), request->region_id());
        });
      });
}

}  // namespace gcompute::server
