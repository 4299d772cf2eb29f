// SPDX-License-Identifier: Apache-2.0
// Client::health_at: grpc.health.v1.Health/Check, which is not part of our proto, so its two
// messages are encoded by hand and the call is made on the raw channel.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/byte_buffer.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client_impl.hpp"
#include "gcompute/client/grpc_status.hpp"

namespace gcompute::client {
namespace {

// HealthCheckRequest{string service = 1}; HealthCheckResponse{ServingStatus status = 1}.
std::string encode_health_request(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(0x0a);
  uint64_t n = service.size();
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  return out + service;
}

absl::StatusOr<int> decode_health_status(const std::string& bytes) {
  int status = 0;
  std::size_t i = 0;
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; i < bytes.size() && shift < 64; shift += 7) {
      const auto c = static_cast<unsigned char>(bytes[i++]);
      v |= uint64_t{c & 0x7fu} << shift;
      if ((c & 0x80) == 0) return true;
    }
    return false;
  };
  while (i < bytes.size()) {
    uint64_t tag = 0;
    uint64_t value = 0;
    if (!varint(tag)) break;
    if ((tag & 7) == 0) {
      if (!varint(value)) break;
      if ((tag >> 3) == 1) status = static_cast<int>(value);
    } else if ((tag & 7) == 2) {
      if (!varint(value) || value > bytes.size() - i) break;
      i += value;
    } else {
      return absl::InternalError("undecodable HealthCheckResponse");
    }
  }
  return status;
}

}  // namespace

absl::StatusOr<HealthState> Client::health_at(std::size_t replica, const std::string& service,
                                              const CallOptions& call) {
  if (!impl_->replicas.init_error().ok()) return impl_->replicas.init_error();
  if (replica >= impl_->replicas.size()) {
    return absl::OutOfRangeError(absl::StrCat("replica ", replica, " of ", impl_->replicas.size()));
  }
  Replica& r = impl_->replicas.at(replica);
  grpc::ClientContext context;
  r.prepare(context, impl_->call_scope(call).deadline);
  const std::string request_bytes = encode_health_request(service);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  const grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                         grpc::internal::RpcMethod::NORMAL_RPC);
  const grpc::Status status = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      r.channel.get(), method, &context, request, &response);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return HealthState::kServiceUnknown;
  if (!status.ok()) return from_grpc_status(status);
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return absl::InternalError("unreadable health response");
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  absl::StatusOr<int> state = decode_health_status(bytes);
  if (!state.ok()) return state.status();
  if (*state < 0 || *state > 3) return HealthState::kUnknown;
  return static_cast<HealthState>(*state);
}

}  // namespace gcompute::client
