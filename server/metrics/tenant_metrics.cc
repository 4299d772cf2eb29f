// SPDX-License-Identifier: Apache-2.0
#include "metrics/tenant_metrics.hpp"

#include "metrics/families.hpp"

namespace gcompute::server {

TenantMetrics::TenantMetrics(prometheus::Registry& registry)
    : requests_(family(registry, prometheus::BuildCounter(), "gcompute_tenant_requests_total",
                       "Finished calls by tenant")),
      errors_(family(registry, prometheus::BuildCounter(), "gcompute_tenant_errors_total",
                     "Finished calls by tenant whose status was not OK")),
      device_seconds_(
          family(registry, prometheus::BuildCounter(), "gcompute_tenant_device_seconds_total",
                 "Seconds requests of the tenant spent on a device (h2d, compute, d2h)")),
      stored_bytes_(family(registry, prometheus::BuildGauge(),
                           "gcompute_tenant_stored_matrix_bytes",
                           "Bytes of server-resident matrices the tenant holds")) {}

std::string TenantMetrics::label(const std::string& tenant) {
  return tenant.empty() ? "(default)" : tenant;
}

TenantMetrics::Series& TenantMetrics::series(const std::string& tenant) {
  std::string name = label(tenant);
  auto it = series_.find(name);
  if (it != series_.end()) return it->second;
  if (series_.size() >= kMaxTenants) name = "(other)";
  it = series_.find(name);
  if (it != series_.end()) return it->second;
  const std::map<std::string, std::string> labels = {{"tenant", name}};
  Series s;
  s.requests = &requests_.Add(labels);
  s.errors = &errors_.Add(labels);
  s.device_seconds = &device_seconds_.Add(labels);
  s.stored_bytes = &stored_bytes_.Add(labels);
  return series_.emplace(name, s).first->second;
}

void TenantMetrics::observe_request(const std::string& tenant, bool ok) {
  std::lock_guard lock(mu_);
  Series& s = series(tenant);
  s.requests->Increment();
  if (!ok) s.errors->Increment();
}

void TenantMetrics::add_device_seconds(const std::string& tenant, double seconds) {
  if (seconds <= 0) return;
  std::lock_guard lock(mu_);
  series(tenant).device_seconds->Increment(seconds);
}

void TenantMetrics::set_stored_bytes(const std::map<std::string, std::uint64_t>& by_tenant) {
  std::lock_guard lock(mu_);
  std::map<std::string, double> sums;  // by label: "(other)" sums several tenants
  for (const auto& [tenant, bytes] : by_tenant) {
    (void)series(tenant);
    sums[series_.count(label(tenant)) != 0 ? label(tenant) : "(other)"] +=
        static_cast<double>(bytes);
  }
  for (auto& [name, s] : series_) {
    auto it = sums.find(name);
    s.stored_bytes->Set(it == sums.end() ? 0.0 : it->second);
  }
}

}  // namespace gcompute::server
