// SPDX-License-Identifier: Apache-2.0
// Registration of metric families, shared by the server's and the tenants' metrics.
#pragma once

#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace gcompute::server {

/// A metric family in `registry`; `builder` is prometheus::BuildCounter(), BuildGauge() or
/// BuildHistogram().
template <typename Builder>
auto& family(prometheus::Registry& registry, Builder builder, const char* name, const char* help) {
  return builder.Name(name).Help(help).Register(registry);
}

/// A gauge without labels.
inline prometheus::Gauge& gauge(prometheus::Registry& registry, const char* name,
                                const char* help) {
  return family(registry, prometheus::BuildGauge(), name, help).Add({});
}

}  // namespace gcompute::server
