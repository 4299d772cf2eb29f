// SPDX-License-Identifier: Apache-2.0
// The caller of an RPC as the ops layer sees it, from what authentication left on the call.
#pragma once

#include <grpcpp/grpcpp.h>

#include "ops/caller.hpp"

namespace gcompute::server {

/// The property of a call's AuthContext that holds the tenant, set by the server's
/// authentication (token or client certificate) before any handler runs.
inline constexpr char kTenantProperty[] = "gcompute.tenant";

/// The caller of `ctx`: its tenant from the auth context, or the implicit tenant "" when the
/// server authenticates nobody.
ops::Caller caller_of(const grpc::ServerContextBase& ctx);

}  // namespace gcompute::server
