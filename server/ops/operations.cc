// SPDX-License-Identifier: Apache-2.0
#include "ops/operations.hpp"

#include <fstream>

#include "gcompute/kernels/status_macros.hpp"
#include "ops/inputs.hpp"

namespace gcompute::server::ops {

Operations::Operations(Engine& engine, OpEnv env, std::string backend_note)
    : engine_(engine),
      env_(std::move(env)),
      backend_note_(std::move(backend_note)),
      admission_(env_.tenant_quotas) {}

absl::StatusOr<PreparedOp> Operations::prepare(const Caller& caller, OpRequest request) {
  return std::visit(
      [this, &caller](auto&& r) -> absl::StatusOr<PreparedOp> {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, TransposeRequest>) {
          return prepare_transpose(std::move(r), env_, caller);
        } else if constexpr (std::is_same_v<T, MatMulRequest>) {
          return prepare_matmul(std::move(r), env_, caller);
        } else if constexpr (std::is_same_v<T, SvdRequest>) {
          return prepare_svd(std::move(r), env_, caller);
        } else if constexpr (std::is_same_v<T, EighRequest>) {
          return prepare_eigh(std::move(r), env_, caller);
        } else if constexpr (std::is_same_v<T, ApspRequest>) {
          return prepare_apsp(std::move(r), env_, caller);
        } else if constexpr (std::is_same_v<T, ShortestPathRequest>) {
          return prepare_shortest_path(std::move(r), env_, caller);
        } else {
          static_assert(std::is_same_v<T, SsspRequest>);
          return prepare_sssp(std::move(r), env_, caller);
        }
      },
      std::move(request));
}

void Operations::submit(const Caller& caller, PreparedOp op, std::shared_ptr<JobContext> job,
                        absl::AnyInvocable<void(absl::StatusOr<OpResult>)> done,
                        Engine::Admission admission) {
  // The task owns `done` until it runs; if it is never queued, `done` is still here.
  auto shared_done =
      std::make_shared<absl::AnyInvocable<void(absl::StatusOr<OpResult>)>>(std::move(done));
  // Every way out of the engine releases the tenant's slot before the call completes.
  auto finish = [this, tenant = caller.tenant, shared_done](absl::StatusOr<OpResult> r) {
    admission_.release(tenant);
    (*shared_done)(std::move(r));
  };
  const Engine::Dispatch dispatch = op.tiny && admission == Engine::Admission::kBounded
                                        ? Engine::Dispatch::kInlineIfIdle
                                        : Engine::Dispatch::kQueued;
  auto launch = [this, method = std::move(op.method), run = std::move(op.run), job = std::move(job),
                 admission, dispatch, finish]() mutable {
    JobContext* ctx = job.get();
    absl::Status queued = engine_.submit(
        method, std::move(job),
        [this, run = std::move(run), finish, ctx](absl::Status start) mutable {
          if (!start.ok()) return finish(std::move(start));
          finish(run(engine_.backend(), *ctx));
        },
        admission, dispatch);
    if (!queued.ok()) finish(std::move(queued));
  };
  absl::Status admitted = admission_.admit(caller.tenant, std::move(launch));
  if (!admitted.ok()) (*shared_done)(std::move(admitted));
}

absl::StatusOr<std::unique_ptr<UploadSession>> Operations::begin_upload(
    const Caller& caller, const UploadHeader& header) {
  return UploadSession::begin(header, env_.matrices, engine_.backend(), env_.limits, caller);
}

absl::StatusOr<Download> Operations::open_download(const Caller& caller, const std::string& id,
                                                   const char* field) {
  Download d;
  GC_ASSIGN_OR_RETURN(d.info, env_.matrices.info(caller.tenant, id, field));
  GC_ASSIGN_OR_RETURN(d.matrix, env_.matrices.get(caller.tenant, id, field));
  return d;
}

absl::Status Operations::delete_matrix(const Caller& caller, const std::string& id) {
  return env_.matrices.remove(caller.tenant, id);
}

namespace {

/// The kernel's id of this boot: equal for every process on the host, containers included.
std::string read_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

absl::StatusOr<SharedRegion::Description> Operations::register_shared_memory(
    const Caller& caller, const SharedMemorySource& source) {
  if (env_.regions == nullptr) return shared_memory_off();
  if (source.name.empty() == source.cuda_ipc_handle.empty()) {
    return absl::InvalidArgumentError(
        "set exactly one of name (a POSIX shared-memory object) and cuda_ipc_handle (GPU "
        "memory)");
  }
  absl::StatusOr<std::shared_ptr<const SharedRegion>> region =
      source.name.empty()
          ? env_.regions->add_device(caller.tenant, source.cuda_ipc_handle, source.cuda_device,
                                     source.offset, source.byte_size)
          : env_.regions->add(caller.tenant, source.name, source.offset, source.byte_size);
  if (!region.ok()) return region.status();
  return (*region)->description();
}

absl::Status Operations::unregister_shared_memory(const Caller& caller,
                                                  const std::string& region_id) {
  if (env_.regions == nullptr) return shared_memory_off();
  return env_.regions->remove(caller.tenant, region_id);
}

ServerInfo Operations::server_info() const {
  Backend& backend = engine_.backend();
  ServerInfo info;
  info.backend = backend.name();
  info.backend_note = backend_note_;
  info.devices = backend.devices();
  info.limits = env_.limits;
  info.queue_depth = engine_.queue_depth_limit();
  info.workers = backend.concurrency();
  info.stored_matrix_quota_bytes = env_.matrices.quota_bytes();
  info.default_ttl = env_.matrices.default_ttl();
  info.shared_memory = env_.regions != nullptr;
  static const std::string boot_id = read_boot_id();
  info.host_boot_id = boot_id;
  return info;
}

}  // namespace gcompute::server::ops
