// SPDX-License-Identifier: Apache-2.0
#include "api/caller.hpp"

namespace gcompute::server {

ops::Caller caller_of(const grpc::ServerContextBase& ctx) {
  ops::Caller caller;
  const std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  if (auth == nullptr) return caller;
  const std::vector<grpc::string_ref> tenant = auth->FindPropertyValues(kTenantProperty);
  if (!tenant.empty()) caller.tenant.assign(tenant.front().data(), tenant.front().size());
  return caller;
}

}  // namespace gcompute::server
