// SPDX-License-Identifier: Apache-2.0
// Per-tenant series: finished calls, failed calls, device-seconds and stored-matrix bytes, with
// the tenant as the label. Tenants come from the configuration (tokens file, client CA), and
// the series are capped: beyond kMaxTenants tenants, the rest share the label "(other)".
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace gcompute::server {

class TenantMetrics {
 public:
  static constexpr std::size_t kMaxTenants = 256;

  explicit TenantMetrics(prometheus::Registry& registry);

  /// The label of `tenant`: "(default)" for the implicit tenant "" of a server without
  /// authentication (parentheses cannot occur in tenant names).
  static std::string label(const std::string& tenant);

  /// A finished call of `tenant`; `ok` false also counts it as an error.
  void observe_request(const std::string& tenant, bool ok);
  /// Time a request of `tenant` spent on the device (copies in and out, compute).
  void add_device_seconds(const std::string& tenant, double seconds);
  /// Stored-matrix bytes per tenant; tenants missing from `by_tenant` hold 0.
  void set_stored_bytes(const std::map<std::string, std::uint64_t>& by_tenant);

 private:
  struct Series {
    prometheus::Counter* requests = nullptr;
    prometheus::Counter* errors = nullptr;
    prometheus::Counter* device_seconds = nullptr;
    prometheus::Gauge* stored_bytes = nullptr;
  };
  Series& series(const std::string& tenant);  ///< with mu_ held

  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& errors_;
  prometheus::Family<prometheus::Counter>& device_seconds_;
  prometheus::Family<prometheus::Gauge>& stored_bytes_;
  std::mutex mu_;
  std::map<std::string, Series> series_;  ///< by label
};

}  // namespace gcompute::server
