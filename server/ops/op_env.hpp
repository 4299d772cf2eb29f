// SPDX-License-Identifier: Apache-2.0
// What preparing and running an operation may use: the stores, the limits, the caches.
#pragma once

#include "ops/apsp_cache.hpp"
#include "ops/graph_mirror.hpp"
#include "ops/limits.hpp"
#include "ops/tenant_quotas.hpp"
#include "store/graphs/graph_store.hpp"
#include "store/matrices/matrix_store.hpp"
#include "store/regions/shared_region.hpp"

namespace gcompute::server::ops {

/// The stores and limits an operation is validated against and runs with. Outlives every op.
struct OpEnv {
  MatrixStore& matrices;
  GraphStore& graphs;
  ApspCache* apsp_cache = nullptr;  ///< last APSP results of stored graphs; null: off
  Limits limits;
  TenantQuotaLookup tenant_quotas;  ///< empty: no tenant has a quota of its own
  /// Device copies of stored graphs (CUDA backend): APSP builds a stored graph's weight matrix
  /// from them on the device. Null: densified on the host.
  DeviceGraphMirror* graph_mirror = nullptr;
  /// Clients' shared-memory regions (operands and outputs). Null: shared memory is off.
  RegionRegistry* regions = nullptr;
};

}  // namespace gcompute::server::ops
