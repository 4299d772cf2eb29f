// SPDX-License-Identifier: Apache-2.0
#include "metrics/metrics.hpp"

#include "absl/strings/str_cat.h"
#include "metrics/families.hpp"

namespace gcompute::server {
namespace {

prometheus::ClientMetric gauge_metric(double value,
                                      std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

/// Reads the backend's memory state when Prometheus scrapes.
class BackendCollector final : public prometheus::Collectable {
 public:
  explicit BackendCollector(const Backend* backend) : backend_(backend) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    const ResourceStats s = backend_->resource_stats();
    std::vector<prometheus::MetricFamily> out;
    prometheus::MetricFamily pinned{"gcompute_pinned_pool_bytes",
                                    "Pinned host staging memory by state (used, free)",
                                    prometheus::MetricType::Gauge,
                                    {}};
    pinned.metric.push_back(
        gauge_metric(static_cast<double>(s.pinned_used_bytes), {{"state", "used"}}));
    pinned.metric.push_back(gauge_metric(
        static_cast<double>(s.pinned_capacity_bytes - s.pinned_used_bytes), {{"state", "free"}}));
    out.push_back(std::move(pinned));
    prometheus::MetricFamily misses{"gcompute_pinned_pool_misses_total",
                                    "Staging requests that had to wait for a free pinned block",
                                    prometheus::MetricType::Counter,
                                    {}};
    prometheus::ClientMetric miss;
    miss.counter.value = static_cast<double>(s.pinned_misses);
    misses.metric.push_back(miss);
    out.push_back(std::move(misses));
    prometheus::MetricFamily used{"gcompute_device_memory_used_bytes",
                                  "Device memory held by the server's stream-ordered pool, per GPU",
                                  prometheus::MetricType::Gauge,
                                  {}};
    prometheus::MetricFamily total{"gcompute_device_memory_total_bytes",
                                   "Device memory per GPU",
                                   prometheus::MetricType::Gauge,
                                   {}};
    prometheus::MetricFamily healthy{"gcompute_device_healthy",
                                     "1 while the GPU serves requests, 0 once it failed",
                                     prometheus::MetricType::Gauge,
                                     {}};
    for (const auto& d : s.devices) {
      const std::string gpu = std::to_string(d.index);
      used.metric.push_back(gauge_metric(static_cast<double>(d.used_bytes), {{"gpu", gpu}}));
      total.metric.push_back(gauge_metric(static_cast<double>(d.total_bytes), {{"gpu", gpu}}));
      healthy.metric.push_back(gauge_metric(d.healthy ? 1 : 0, {{"gpu", gpu}}));
    }
    out.push_back(std::move(used));
    out.push_back(std::move(total));
    out.push_back(std::move(healthy));
    return out;
  }

 private:
  const Backend* backend_;
};

}  // namespace

void Metrics::watch_backend(const Backend* backend) {
  backend_collector_ = std::make_shared<BackendCollector>(backend);
}

std::vector<double> Metrics::duration_buckets() {
  return {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 0.1,
          0.25,  0.5,    1,      2.5,    5,    10,     30,   60,    120,   300,   600};
}

Metrics::Metrics(const std::vector<std::string>& methods)
    : registry_(std::make_shared<prometheus::Registry>()),
      duration_family_(family(*registry_, prometheus::BuildHistogram(),
                              "gcompute_request_duration_seconds",
                              "Time from a call's arrival to its response, by method")),
      phase_family_(family(*registry_, prometheus::BuildHistogram(),
                           "gcompute_phase_duration_seconds",
                           "Time spent per phase of a job (queue, h2d, compute, d2h)")),
      requests_family_(family(*registry_, prometheus::BuildCounter(), "gcompute_requests_total",
                              "Finished calls by method and gRPC status code")),
      received_family_(family(*registry_, prometheus::BuildCounter(),
                              "gcompute_received_bytes_total",
                              "Request message bytes received, by method")),
      sent_family_(family(*registry_, prometheus::BuildCounter(), "gcompute_sent_bytes_total",
                          "Response message bytes sent, by method")),
      unparsable_family_(
          family(*registry_, prometheus::BuildCounter(), "gcompute_unparsable_requests_total",
                 "Requests whose message did not parse as the method's request type, by method")),
      inflight_(gauge(*registry_, "gcompute_inflight_requests",
                      "Calls being handled (queued, running or streaming)")),
      queued_(gauge(*registry_, "gcompute_queue_depth", "Jobs waiting in the engine's queue")),
      running_(gauge(*registry_, "gcompute_running_jobs", "Jobs executing on a worker or lane")),
      stored_bytes_(gauge(*registry_, "gcompute_stored_matrix_bytes",
                          "Bytes held by server-resident matrices (including reservations)")),
      jobs_family_(family(*registry_, prometheus::BuildGauge(), "gcompute_jobs",
                          "Jobs (SubmitJob) by state, until finished ones expire")),
      job_wait_family_(family(*registry_, prometheus::BuildHistogram(),
                              "gcompute_job_queue_wait_seconds",
                              "Time a job waited in the queue before it ran, by method")),
      job_duration_family_(family(*registry_, prometheus::BuildHistogram(),
                                  "gcompute_job_duration_seconds",
                                  "Time a job ran (from leaving the queue), by method")),
      tenants_(std::make_unique<TenantMetrics>(*registry_)) {
  for (const auto& m : methods) {
    series(m);
    request_counter(m, "OK");
  }
}

Metrics::MethodSeries& Metrics::series(const std::string& method) {
  auto it = methods_.find(method);
  if (it != methods_.end()) return it->second;
  MethodSeries s;
  s.duration = &duration_family_.Add({{"method", method}}, duration_buckets());
  s.received = &received_family_.Add({{"method", method}});
  s.sent = &sent_family_.Add({{"method", method}});
  for (const char* phase : {"queue", "h2d", "compute", "d2h"}) {
    s.phases[phase] =
        &phase_family_.Add({{"method", method}, {"phase", phase}}, duration_buckets());
  }
  return methods_.emplace(method, std::move(s)).first->second;
}

absl::Status Metrics::expose(const std::string& address) {
  std::vector<std::shared_ptr<prometheus::Collectable>> sources{registry_};
  if (backend_collector_) sources.push_back(backend_collector_);
  auto exporter = HttpExporter::start(address, std::move(sources));
  if (!exporter.ok()) return exporter.status();
  exporter_ = *std::move(exporter);
  return absl::OkStatus();
}

int Metrics::port() const {
  return exporter_ ? exporter_->port() : 0;
}

void Metrics::observe_request(const std::string& method, const std::string& code, double seconds,
                              std::uint64_t bytes_received, std::uint64_t bytes_sent) {
  std::lock_guard lock(mu_);
  MethodSeries& s = series(method);
  s.duration->Observe(seconds);
  s.received->Increment(static_cast<double>(bytes_received));
  s.sent->Increment(static_cast<double>(bytes_sent));
  request_counter(method, code).Increment();
}

void Metrics::count_unparsable(const std::string& method, bool before_any_handler) {
  std::lock_guard lock(mu_);
  // Method names come from our own service's paths: a bounded label set.
  unparsable_family_.Add({{"method", method}}).Increment();
  if (before_any_handler) request_counter(method, "INVALID_ARGUMENT").Increment();
}

prometheus::Counter& Metrics::request_counter(const std::string& method, const std::string& code) {
  auto key = std::make_pair(method, code);
  auto it = requests_.find(key);
  if (it == requests_.end()) {
    it = requests_.emplace(key, &requests_family_.Add({{"method", method}, {"code", code}})).first;
  }
  return *it->second;
}

void Metrics::observe_phase(const std::string& method, const char* phase, double seconds) {
  std::lock_guard lock(mu_);
  MethodSeries& s = series(method);
  auto it = s.phases.find(phase);
  if (it != s.phases.end()) it->second->Observe(seconds);
}

void Metrics::set_load(int queued, int running) {
  queued_.Set(queued);
  running_.Set(running);
}

void Metrics::add_inflight(int delta) {
  inflight_.Increment(delta);
}

void Metrics::set_queue_capacity(int capacity) {
  gauge(*registry_, "gcompute_queue_capacity",
        "Requests that may wait in the queue (--queue-depth)")
      .Set(capacity);
}

void Metrics::set_stored_matrix_bytes(std::uint64_t bytes) {
  stored_bytes_.Set(static_cast<double>(bytes));
}

void Metrics::set_jobs(const std::string& state, int count) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(state);
  if (it == jobs_.end()) it = jobs_.emplace(state, &jobs_family_.Add({{"state", state}})).first;
  it->second->Set(count);
}

void Metrics::observe_job(const std::string& method, double queued_seconds, double run_seconds) {
  std::lock_guard lock(mu_);
  auto it = job_series_.find(method);
  if (it == job_series_.end()) {
    it = job_series_
             .emplace(method,
                      std::make_pair(
                          &job_wait_family_.Add({{"method", method}}, duration_buckets()),
                          &job_duration_family_.Add({{"method", method}}, duration_buckets())))
             .first;
  }
  it->second.first->Observe(queued_seconds);
  it->second.second->Observe(run_seconds);
}

}  // namespace gcompute::server
