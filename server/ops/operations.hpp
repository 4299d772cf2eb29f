// SPDX-License-Identifier: Apache-2.0
// The use cases of gcompute behind one object: compute operations (validated, then run on the
// engine), server-resident matrices and the graph store. api/ converts protos to and from the
// types here and maps Status to gRPC; it reaches nothing else of the server.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "engine/engine.hpp"
#include "ops/prepared_op.hpp"
#include "ops/tenant_admission.hpp"
#include "ops/upload.hpp"

namespace gcompute::server::ops {

/// What GetServerInfo reports.
struct ServerInfo {
  std::string backend;
  std::string backend_note;
  std::vector<DeviceInfo> devices;
  Limits limits;
  int queue_depth = 0;
  int workers = 0;
  std::uint64_t stored_matrix_quota_bytes = 0;
  absl::Duration default_ttl;
  bool shared_memory = false;  ///< RegisterSharedMemory is served
  std::string host_boot_id;    ///< the host's boot id, for clients to tell they share it
};

/// A stored matrix opened for download.
struct Download {
  StoredMatrixInfo info;
  Matrix matrix;  ///< on the host or only on a device
};

class Operations {
 public:
  Operations(Engine& engine, OpEnv env, std::string backend_note);

  // ---- compute operations ---------------------------------------------------------------
  /// Validates `request` (shapes, limits, refs, options) before anything is allocated.
  absl::StatusOr<PreparedOp> prepare(const Caller& caller, OpRequest request);
  /// Queues `op` on the engine, after the caller's tenant admission (ops/tenant_admission).
  /// `done` runs exactly once: on a worker with the result, or with the reason it was not
  /// queued (tenant quota, draining, queue full, deadline, cancelled).
  void submit(const Caller& caller, PreparedOp op, std::shared_ptr<JobContext> job,
              absl::AnyInvocable<void(absl::StatusOr<OpResult>)> done,
              Engine::Admission admission = Engine::Admission::kBounded);

  // ---- server-resident matrices -----------------------------------------------------------
  absl::StatusOr<std::unique_ptr<UploadSession>> begin_upload(const Caller& caller,
                                                              const UploadHeader& header);
  /// NOT_FOUND naming `field` for an unknown or expired id, or another tenant's.
  absl::StatusOr<Download> open_download(const Caller& caller, const std::string& id,
                                         const char* field);
  /// Copies bytes [offset, offset + bytes) of the download's matrix to host memory `dst` (for a
  /// matrix that lives only on a device; one on the host is sent from where it lies).
  absl::Status copy_download_range(const Download& download, std::uint64_t offset,
                                   std::uint64_t bytes, char* dst) {
    return engine_.backend().copy_range_to_host(download.matrix, offset, bytes, dst);
  }
  absl::Status delete_matrix(const Caller& caller, const std::string& id);
  std::uint64_t stored_matrix_bytes() const { return env_.matrices.used_bytes(); }
  /// Stored-matrix bytes per tenant that holds any.
  std::map<std::string, std::uint64_t> stored_matrix_bytes_by_tenant() const {
    return env_.matrices.used_bytes_by_owner();
  }

  // ---- shared-memory regions of same-host clients (each tenant sees only its own) ---------
  /// What RegisterSharedMemory names: a shared-memory object, or GPU memory by CUDA IPC handle.
  struct SharedMemorySource {
    std::string name;
    std::string cuda_ipc_handle;
    int cuda_device = 0;
    std::uint64_t offset = 0;
    std::uint64_t byte_size = 0;
  };
  /// RegionRegistry::add or add_device for the caller (INVALID_ARGUMENT unless exactly one of
  /// name and handle is given); FAILED_PRECONDITION when shared memory is off.
  absl::StatusOr<SharedRegion::Description> register_shared_memory(
      const Caller& caller, const SharedMemorySource& source);
  /// NOT_FOUND for an unknown id or another tenant's. Calls using the region finish first.
  absl::Status unregister_shared_memory(const Caller& caller, const std::string& region_id);

  // ---- graph store (each tenant sees only its own graphs) ----------------------------------
  absl::StatusOr<GraphInfo> create_graph(const Caller& caller, const std::string& graph_id,
                                         std::uint64_t num_vertices, std::vector<Hyperedge> edges);
  absl::StatusOr<GraphSnapshot> get_graph(const Caller& caller, const std::string& graph_id);
  std::vector<GraphInfo> list_graphs(const Caller& caller);
  absl::Status delete_graph(const Caller& caller, const std::string& graph_id);
  absl::StatusOr<ApplyResult> apply_edits(const Caller& caller, const std::string& graph_id,
                                          std::optional<std::uint64_t> expected_version,
                                          std::span<const Edit> edits);

  ServerInfo server_info() const;

 private:
  Engine& engine_;
  OpEnv env_;
  std::string backend_note_;
  TenantAdmission admission_;
};

}  // namespace gcompute::server::ops
