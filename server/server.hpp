// SPDX-License-Identifier: Apache-2.0
// The gcompute server: backend selection, engine, stores, metrics and the gRPC service,
// wired together. Used by main.cc and by the in-process service tests.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/call.hpp"
#include "api/compute_service.hpp"
#include "api/job_journal.hpp"
#include "ops/apsp_cache.hpp"
#include "ops/graph_mirror.hpp"
#include "security/security_options.hpp"
#include "security/tokens.hpp"
#include "store/graphs/graph_wal.hpp"
#include "store/matrices/expiry_sweeper.hpp"
#include "store/regions/shared_region.hpp"

namespace gcompute::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:50051";         ///< port 0 picks a free port
  std::string metrics_listen = "127.0.0.1:9464";  ///< empty: no metrics endpoint
  std::string device = "auto";                    ///< auto | cpu | cuda
  Limits limits;
  int queue_depth = 64;
  int workers = 0;                               ///< CPU backend jobs at once; 0 = 2
  int lanes_per_device = 4;                      ///< CUDA backend
  std::uint64_t pinned_pool_bytes = 1ull << 30;  ///< CUDA backend
  std::uint64_t stored_matrix_quota_bytes = 4ull << 30;
  absl::Duration default_ttl = absl::Minutes(10);
  GraphLimits graph_limits;
  std::uint64_t max_graphs = 1024;
  /// --data-dir: the graph store's log and snapshots (docs/graphs.md) and job records
  /// (docs/jobs.md). Empty: graphs and jobs live in memory only.
  std::string graph_data_dir;
  FsyncPolicy graph_fsync = FsyncPolicy::kAlways;
  std::uint64_t graph_snapshot_after_bytes = 64ull << 20;
  std::uint64_t apsp_cache_bytes = 1ull << 30;  ///< cached APSP results of stored graphs; 0: off
  /// Keep a copy of every stored graph in device memory (backends that can) and answer Apsp,
  /// ShortestPath and Sssp of stored graphs from it; false: from the host copy (densified or
  /// turned into CSR per request and uploaded), which saves that device memory.
  bool device_graph_copies = true;
  /// Serve RegisterSharedMemory: same-host clients name their own shared memory as operands
  /// and output destinations (docs/api.md, "Shared memory").
  bool shared_memory = true;
  /// A region no call has named for this long is unregistered (its client may have died).
  absl::Duration shared_memory_idle = absl::Minutes(10);
  absl::Duration job_ttl = absl::Hours(1);  ///< finished jobs and their inline results
  int max_active_jobs_per_tenant = 1024;    ///< queued or running jobs of one tenant
  /// docs/security.md: TLS, authentication, reflection and per-tenant quotas.
  SecurityOptions security;
};

class Server {
 public:
  /// Selects the backend (auto falls back to cpu and says why in backend_note()), binds the
  /// gRPC and metrics ports and starts serving.
  static absl::StatusOr<std::unique_ptr<Server>> create(const ServerOptions& options);
  ~Server();

  int port() const { return port_; }
  int metrics_port() const { return metrics_->port(); }
  const std::string& backend_name() const { return backend_name_; }
  const std::string& backend_note() const { return backend_note_; }
  /// What start-up recovered from --data-dir; null without one.
  const GraphWal* graph_wal() const { return graph_wal_.get(); }
  /// Null without --data-dir.
  const FileJobJournal* job_journal() const { return job_journal_.get(); }
  /// What the server wants logged about its security (plaintext on a public address); empty
  /// otherwise.
  const std::string& security_warning() const { return security_warning_; }
  /// Device copies of the stored graphs (backends that keep them); null otherwise.
  DeviceGraphMirror* graph_mirror() const { return graph_mirror_.get(); }
  ApspCache* apsp_cache() const { return apsp_cache_.get(); }
  /// Clients' shared-memory regions; null with --shared-memory=false.
  RegionRegistry* shared_memory_regions() const { return regions_.get(); }

  /// Graceful stop: health NOT_SERVING, new calls UNAVAILABLE, queued and running work
  /// finishes (up to `grace`), then the gRPC server shuts down.
  void drain(absl::Duration grace);
  void wait();

  /// Runs (once, on a worker thread) when a device fails with a sticky error; the server has
  /// already turned health NOT_SERVING and refuses new calls.
  void on_fatal_error(std::function<void(const absl::Status&)> callback) {
    fatal_callback_ = std::move(callback);
  }
  bool failed() const { return failed_.load(); }

 private:
  Server() = default;
  void on_fatal(const absl::Status& status);
  std::atomic<bool> failed_{false};
  std::string fatal_message_;
  std::function<void(const absl::Status&)> fatal_callback_;
  int port_ = 0;
  std::string backend_name_;
  std::string backend_note_;
  std::string security_warning_;
  // Members die in reverse order. The engine owns the backend, which stored device copies
  // and the metrics collector use, so it is declared first and destroyed last.
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<TokenRegistry> tokens_;  ///< null without --auth-tokens
  std::unique_ptr<MatrixStore> matrices_;
  /// Clients' regions; null with --shared-memory=false. After the engine (the backend unpins
  /// them), before the sweeper that expires idle ones.
  std::unique_ptr<RegionRegistry> regions_;
  std::unique_ptr<ExpirySweeper> matrix_sweeper_;  ///< uses matrices_, regions_ and metrics_
  // The store's journal and subscribers outlive it; the copies' factory outlives the mirror.
  std::unique_ptr<GraphWal> graph_wal_;
  std::unique_ptr<MirrorTargetFactory> graph_copies_;
  std::unique_ptr<DeviceGraphMirror> graph_mirror_;
  std::unique_ptr<ApspCache> apsp_cache_;
  std::unique_ptr<GraphStore> graphs_;
  std::unique_ptr<ops::Operations> ops_;
  std::unique_ptr<FileJobJournal> job_journal_;  ///< null without --data-dir; outlives jobs_
  std::unique_ptr<ops::JobManager> jobs_;        ///< its queued tasks use ops_ and the engine
  std::unique_ptr<Executor> store_executor_;     ///< outlives the gRPC server: it finishes calls
  std::unique_ptr<IdleWatch> upload_watch_;      ///< outlives the gRPC server: it finishes calls
  std::unique_ptr<ServiceContext> svc_;
  std::unique_ptr<ComputeService> service_;
  std::unique_ptr<grpc::Server> grpc_server_;
};

}  // namespace gcompute::server
