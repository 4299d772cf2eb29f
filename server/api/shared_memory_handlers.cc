// SPDX-License-Identifier: Apache-2.0
// Shared-memory region RPCs. They run on the store executor, not in the reaction: mapping a
// region and page-locking it for the GPU takes milliseconds per gigabyte, and so does undoing it.
#include <algorithm>

#include "api/compute_service.hpp"

namespace gcompute::server {
namespace {

/// Whether the call came over loopback or a Unix socket: only a process on the server's host
/// can own the memory it names, and a remote caller must not reach the host's shared memory.
bool from_this_host(const grpc::CallbackServerContext& ctx) {
  const std::string peer = ctx.peer();
  for (const char* local : {"unix:", "unix-abstract:", "ipv4:127.", "ipv6:[::1]", "ipv6:%5B::1%5D",
                            "ipv6:[::ffff:127.", "ipv6:%5B::ffff:127."}) {
    if (peer.rfind(local, 0) == 0) return true;
  }
  return false;
}

}  // namespace

grpc::ServerUnaryReactor* ComputeService::RegisterSharedMemory(
    grpc::CallbackServerContext* ctx, const v1::RegisterSharedMemoryRequest* request,
    v1::RegisterSharedMemoryResponse* response) {
  return UnaryCall::start(
      svc_, "RegisterSharedMemory", ctx, *request, response, [&](UnaryCall& call) {
        if (!from_this_host(*ctx)) {
          return call.complete(absl::PermissionDeniedError(
              "shared memory is for clients on the server's host (loopback or a Unix socket)"));
        }
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
