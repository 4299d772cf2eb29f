// SPDX-License-Identifier: Apache-2.0
#include "server.hpp"

#include <google/protobuf/descriptor.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"
#include "api/unparsable_requests.hpp"
#include "engine/backend_factory.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "ops/admission.hpp"
#include "security/authenticator.hpp"
#include "security/credentials.hpp"

namespace gcompute::server {
namespace {

/// Every RPC of gcompute.v1.Compute, from the service's descriptor.
std::vector<std::string> method_names() {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Compute::service_full_name());
  std::vector<std::string> names;
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
    names.push_back(service->method(i)->name());
  }
  return names;
}

/// Removes gRPC's reflection plugin from a builder: loading libgrpc++_reflection registers it
/// for every server of the process (a static initializer), so --reflection=false needs this.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    std::erase_if(*plugins, [](const std::unique_ptr<grpc::ServerBuilderPlugin>& plugin) {
      return plugin->name() == "proto_server_reflection";
    });
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::create(const ServerOptions& options) {
  if (options.limits.max_message_bytes < (1ull << 20) ||
      options.limits.max_message_bytes > 2147483647ull) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-message-bytes must be between 1 MiB and 2147483647, got ",
                     options.limits.max_message_bytes));
  }
  if (options.limits.max_request_time < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--max-request-seconds must be >= 0 (0: no bound)");
  }
  if (options.limits.upload_idle_time <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--upload-idle-seconds must be > 0");
  }
  if (options.queue_depth < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--queue-depth must be >= 1, got ", options.queue_depth));
  }
  if (options.job_ttl < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat("--job-ttl-seconds must be >= 1, got ",
                                                   absl::ToInt64Seconds(options.job_ttl)));
  }
  if (options.max_active_jobs_per_tenant < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--max-jobs-per-tenant must be >= 1, got ",
                                                   options.max_active_jobs_per_tenant));
  }
  std::unique_ptr<Server> s(new Server());

  BackendOptions bo;
  bo.device = options.device;
  bo.cpu_workers = options.workers > 0 ? options.workers : 2;
  bo.lanes_per_device = options.lanes_per_device;
  bo.pinned_pool_bytes = options.pinned_pool_bytes;
  auto choice = make_backend(bo);
  if (!choice.ok()) return choice.status();
  s->backend_name_ = choice->backend->name();
  const Limits limits = ops::with_default_memory_limits(options.limits, choice->backend->devices());

  s->metrics_ = std::make_unique<Metrics>(method_names());
  Backend* backend = choice->backend.get();
  s->metrics_->watch_backend(backend);
  s->metrics_->set_queue_capacity(options.queue_depth);
  if (!options.metrics_listen.empty()) {
    if (auto st = s->metrics_->expose(options.metrics_listen); !st.ok()) return st;
  }
  const SecurityOptions& sec = options.security;
  if (!sec.auth_tokens.empty()) {
    GC_ASSIGN_OR_RETURN(s->tokens_,
                        TokenRegistry::open(sec.auth_tokens, sec.default_quotas,
                                            std::chrono::milliseconds(sec.auth_tokens_refresh_ms)));
  }
  ops::TenantQuotaLookup tenant_quotas =
      [tokens = s->tokens_.get(), defaults = sec.default_quotas](const std::string& tenant) {
        return tokens != nullptr ? tokens->quotas(tenant) : defaults;
      };
  std::shared_ptr<grpc::AuthMetadataProcessor> authenticator;
  if (s->tokens_ || sec.tenant_from_cert) {
    std::optional<CertTenantRule> cert_rule;
    if (sec.tenant_from_cert)
      cert_rule = CertTenantRule{sec.tenant_cert_field, sec.tenant_cert_prefix};
    authenticator = std::make_shared<Authenticator>(s->tokens_.get(), std::move(cert_rule));
  }
  GC_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                      make_server_credentials(sec, options.listen, std::move(authenticator),
                                              &s->security_warning_));

  MatrixStore::Options mo;
  mo.owner_quota_bytes = [tenant_quotas](const std::string& owner) {
    return tenant_quotas(owner).stored_bytes;
  };
  mo.quota_bytes = options.stored_matrix_quota_bytes;
  mo.default_ttl = options.default_ttl;
  s->matrices_ = std::make_unique<MatrixStore>(std::move(mo));
  if (options.shared_memory) {
    RegionRegistry::Options ro;
    ro.idle_ns = absl::ToInt64Nanoseconds(options.shared_memory_idle);
    ro.pin = [backend](void* ptr, std::uint64_t bytes) {
      return backend->pin_host_memory(ptr, bytes);
    };
    ro.open_device = [backend](const std::string& handle, int device) {
      return backend->open_ipc_memory(handle, device);
    };
    s->regions_ = std::make_unique<RegionRegistry>(std::move(ro));
  }
  // Expired matrices go within a second, not at the next upload that needs their quota; so do
  // shared-memory regions left idle by a client that died.
  s->matrix_sweeper_ = std::make_unique<ExpirySweeper>(
      *s->matrices_, absl::Seconds(1),
      [metrics = s->metrics_.get(), store = s->matrices_.get()] {
        metrics->set_stored_matrix_bytes(store->used_bytes());
        metrics->tenants().set_stored_bytes(store->used_bytes_by_owner());
      },
      [regions = s->regions_.get()] {
        if (regions != nullptr) regions->expire_idle();
      });
  GraphStore::Options go;
  go.limits = options.graph_limits;
  go.max_graphs = options.max_graphs;
  // With a data directory every change is logged before it is acknowledged, and the store is
  // rebuilt from the directory before serving.
  if (!options.graph_data_dir.empty()) {
    GraphWalOptions wo;
    wo.dir = options.graph_data_dir;
    wo.fsync = options.graph_fsync;
    wo.snapshot_after_bytes = options.graph_snapshot_after_bytes;
    auto wal = GraphWal::open(wo);
    if (!wal.ok()) return wal.status();
    s->graph_wal_ = *std::move(wal);
    go.journal = s->graph_wal_.get();
    // DIR is locked by the graph log: one server uses it.
    GC_ASSIGN_OR_RETURN(
        s->job_journal_,
        FileJobJournal::open(options.graph_data_dir, options.graph_fsync == FsyncPolicy::kAlways));
  }
  // Subscribers of the store's change feed: device copies of the graphs (backends that keep
  // them) and the APSP cache. Neither can fail a change.
  if (options.device_graph_copies) {
    GC_ASSIGN_OR_RETURN(s->graph_copies_, backend->make_graph_copies());
  }
  if (s->graph_copies_) {
    s->graph_mirror_ =
        std::make_unique<DeviceGraphMirror>(s->graph_copies_.get(), DeviceGraphMirror::Options{});
    go.subscribers.push_back(s->graph_mirror_.get());
  }
  if (options.apsp_cache_bytes > 0) {
    ApspCache::Options co;
    co.max_bytes = options.apsp_cache_bytes;
    s->apsp_cache_ = std::make_unique<ApspCache>(co);
    go.subscribers.push_back(s->apsp_cache_.get());
  }
  s->graphs_ = std::make_unique<GraphStore>(go);
  if (s->graph_mirror_) s->graph_mirror_->attach(s->graphs_.get());
  if (s->graph_wal_) {
    if (auto st = s->graph_wal_->recover(*s->graphs_); !st.ok()) return st;
  }

  EngineOptions eo;
  eo.queue_depth = options.queue_depth;
  Metrics* metrics = s->metrics_.get();
  eo.on_load_change = [metrics](int queued, int running) { metrics->set_load(queued, running); };
  s->engine_ = std::make_unique<Engine>(std::move(choice->backend), eo);
  // A sticky device error: stop serving; main() exits non-zero so a supervisor restarts us.
  Server* raw = s.get();
  backend->set_fatal_handler([raw](const absl::Status& status) { raw->on_fatal(status); });
  if (ApspCache* cache = s->apsp_cache_.get()) {
    backend->set_memory_pressure_handler([cache] { return cache->release_device_memory(); });
  }

  s->backend_note_ = choice->note;
  s->ops_ = std::make_unique<ops::Operations>(
      *s->engine_,
      ops::OpEnv{*s->matrices_, *s->graphs_, s->apsp_cache_.get(), limits, tenant_quotas,
                 s->graph_mirror_.get(), s->regions_.get()},
      choice->note);
  ops::JobManagerOptions jo;
  jo.default_ttl = options.job_ttl;
  jo.max_active_per_tenant = options.max_active_jobs_per_tenant;
  jo.on_counts = [metrics](const std::map<ops::JobState, int>& counts) {
    for (const auto& [state, n] : counts) metrics->set_jobs(ops::job_state_name(state), n);
  };
  jo.on_finished = [metrics](const std::string& method, double queued, double ran) {
    metrics->observe_job(method, queued, ran);
  };
  jo.journal = s->job_journal_.get();
  s->jobs_ = std::make_unique<ops::JobManager>(*s->ops_, std::move(jo));
  if (s->job_journal_) {
    GC_ASSIGN_OR_RETURN(std::vector<ops::RestoredJob> restored, s->job_journal_->load());
    s->jobs_->restore(std::move(restored));
  }
  // Store work is short but may wait for an fsync; a few threads keep one slow disk from
  // serialising every graph RPC, and the queue bounds what waits.
  s->store_executor_ = std::make_unique<Executor>("graph store", 4, options.queue_depth);
  s->upload_watch_ = std::make_unique<IdleWatch>(limits.upload_idle_time);
  s->svc_.reset(new ServiceContext{
      *s->ops_, *s->jobs_, *s->metrics_, *s->store_executor_, limits, {}, s->upload_watch_.get()});
  s->service_ = std::make_unique<ComputeService>(*s->svc_);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (!sec.reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  builder.AddListeningPort(options.listen, credentials, &s->port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.limits.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options.limits.max_message_bytes));
  // Refuse a second server on the same port instead of sharing it silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Long jobs on idle connections: accept client keepalive pings every 15 s.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 15000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.RegisterService(s->service_.get());
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(make_unparsable_request_interceptor(*s->metrics_));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  s->grpc_server_ = builder.BuildAndStart();
  if (!s->grpc_server_ || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen,
                                               " (--listen): address in use or invalid"));
  }
  s->grpc_server_->GetHealthCheckService()->SetServingStatus(true);
  return s;
}

void Server::on_fatal(const absl::Status& status) {
  if (failed_.exchange(true)) return;
  fatal_message_ = std::string(status.message());
  grpc_server_->GetHealthCheckService()->SetServingStatus(false);
  svc_->draining.store(true);
  if (fatal_callback_) fatal_callback_(status);
}

void Server::drain(absl::Duration grace) {
  if (!grpc_server_) return;
  grpc_server_->GetHealthCheckService()->SetServingStatus(false);
  svc_->draining.store(true);
  // Without --data-dir jobs do not survive the process: stop them rather than run a backlog
  // nobody can collect. With it their records stay: queued jobs queue again after a restart.
  jobs_->stop_all();
  const absl::Time deadline = absl::Now() + grace;
  if (!engine_->drain(deadline)) {
    // What still runs is stopped at its next cancellation point; its callers get UNAVAILABLE.
    engine_->cancel_all();
    engine_->drain();
  }
  grpc_server_->Shutdown(absl::ToChronoTime(std::max(deadline, absl::Now())));
}

void Server::wait() {
  if (grpc_server_) grpc_server_->Wait();
}

Server::~Server() {
  if (grpc_server_) {
    drain(absl::Seconds(5));
    grpc_server_->Wait();
  }
  if (graph_wal_) graph_wal_->stop();  // no snapshot of a dying store
  // The cache goes before the engine's backend (members die in reverse order).
  if (engine_) engine_->backend().set_memory_pressure_handler({});
}

}  // namespace gcompute::server
