// SPDX-License-Identifier: Apache-2.0
// Prometheus metrics of the server. One prefix (gcompute_), base units (seconds, bytes),
// _total on counters. Per-method series are created once at start-up and cached: the hot
// path only observes.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend.hpp"
#include "metrics/http_exporter.hpp"
#include "metrics/tenant_metrics.hpp"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace gcompute::server {

class Metrics {
 public:
  /// Series for each of `methods` are created now.
  explicit Metrics(const std::vector<std::string>& methods);

  /// Serves /metrics on `address` ("127.0.0.1:9464"; port 0 picks one). Errors when it cannot bind.
  absl::Status expose(const std::string& address);
  /// The bound port once expose() succeeded, else 0.
  int port() const;

  /// A finished RPC: its duration, status code name ("OK", "INVALID_ARGUMENT") and sizes.
  void observe_request(const std::string& method, const std::string& code, double seconds,
                       std::uint64_t bytes_received, std::uint64_t bytes_sent);
  /// A request of `method` whose message did not parse (answered INVALID_ARGUMENT):
  /// gcompute_unparsable_requests_total. A raw method's reactor, which parsed it, counts the
  /// call itself; `before_any_handler` (gRPC parsed it, and no reactor ran) also counts it in
  /// gcompute_requests_total, but not in the histograms (it never ran).
  void count_unparsable(const std::string& method, bool before_any_handler = false);
  /// A phase of a job ("queue", "h2d", "compute", "d2h").
  void observe_phase(const std::string& method, const char* phase, double seconds);
  void set_load(int queued, int running);
  void add_inflight(int delta);
  /// Exports --queue-depth (call once) so alerts can compare the queue depth with it.
  void set_queue_capacity(int capacity);
  void set_stored_matrix_bytes(std::uint64_t bytes);
  /// Jobs (SubmitJob) now in `state` ("QUEUED", "RUNNING", "SUCCEEDED", ...), kept or expired.
  void set_jobs(const std::string& state, int count);
  /// A job of `method` that ran: seconds it waited in the queue and seconds it ran.
  void observe_job(const std::string& method, double queued_seconds, double run_seconds);

  /// Also export `backend`'s memory gauges (pinned pool, device memory per GPU), read at
  /// scrape time. The backend must outlive the exposer (call before expose()).
  void watch_backend(const Backend* backend);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  /// The per-tenant series.
  TenantMetrics& tenants() { return *tenants_; }

  /// Histogram buckets from 50 us to 10 min.
  static std::vector<double> duration_buckets();

 private:
  struct MethodSeries {
    prometheus::Histogram* duration = nullptr;
    prometheus::Counter* received = nullptr;
    prometheus::Counter* sent = nullptr;
    std::map<std::string, prometheus::Histogram*> phases;
  };
  MethodSeries& series(const std::string& method);
  /// gcompute_requests_total of one method and code, made at first use (under mu_ once
  /// constructed).
  prometheus::Counter& request_counter(const std::string& method, const std::string& code);

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<prometheus::Collectable> backend_collector_;
  std::unique_ptr<HttpExporter> exporter_;
  prometheus::Family<prometheus::Histogram>& duration_family_;
  prometheus::Family<prometheus::Histogram>& phase_family_;
  prometheus::Family<prometheus::Counter>& requests_family_;
  prometheus::Family<prometheus::Counter>& received_family_;
  prometheus::Family<prometheus::Counter>& sent_family_;
  prometheus::Family<prometheus::Counter>& unparsable_family_;
  prometheus::Gauge& inflight_;
  prometheus::Gauge& queued_;
  prometheus::Gauge& running_;
  prometheus::Gauge& stored_bytes_;
  prometheus::Family<prometheus::Gauge>& jobs_family_;
  prometheus::Family<prometheus::Histogram>& job_wait_family_;
  prometheus::Family<prometheus::Histogram>& job_duration_family_;
  std::unique_ptr<TenantMetrics> tenants_;

  std::mutex mu_;  // guards creation of series not known at start-up
  std::map<std::string, MethodSeries> methods_;
  std::map<std::pair<std::string, std::string>, prometheus::Counter*> requests_;
  std::map<std::string, prometheus::Gauge*> jobs_;  ///< by state
  std::map<std::string, std::pair<prometheus::Histogram*, prometheus::Histogram*>> job_series_;
};

}  // namespace gcompute::server
