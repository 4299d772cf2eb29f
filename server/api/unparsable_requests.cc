// SPDX-License-Identifier: Apache-2.0
#include "api/unparsable_requests.hpp"

#include <google/protobuf/descriptor.h>

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "api/status.hpp"
#include "wire/chunk_codec.hpp"

namespace gcompute::server {
namespace {

namespace ex = grpc::experimental;

absl::Status unparsable_request_status(const std::string& request_type) {
  return absl::InvalidArgumentError(
      absl::StrCat("the request message does not parse as ", request_type,
                   " (protobuf wire format): check that the client uses this server's proto/ "
                   "definitions"));
}

class UnparsableRequestInterceptor final : public ex::Interceptor {
 public:
  UnparsableRequestInterceptor(Metrics& metrics, const std::string& method,
                               const std::string& request_type)
      : metrics_(metrics), method_(method), request_type_(request_type) {}

  void Intercept(ex::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(ex::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status sent = methods->GetSendStatus();
      // Our handlers always say why; only gRPC's parse-failure path answers this way.
      if (sent.error_code() == grpc::StatusCode::UNIMPLEMENTED && sent.error_message().empty()) {
        methods->ModifySendStatus(to_grpc(unparsable_request_status(request_type_)));
        metrics_.count_unparsable(method_, /*before_any_handler=*/true);
      }
    }
    methods->Proceed();
  }

 private:
  Metrics& metrics_;
  const std::string& method_;
  const std::string& request_type_;
};

class Factory final : public ex::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(Metrics& metrics) : metrics_(metrics) {
    // Every method of our services, by path: "/gcompute.v1.Compute/Svd" -> (Svd, SvdRequest).
    const google::protobuf::DescriptorPool* pool =
        google::protobuf::DescriptorPool::generated_pool();
    const google::protobuf::ServiceDescriptor* service =
        pool->FindServiceByName("gcompute.v1.Compute");
    for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
      const google::protobuf::MethodDescriptor* m = service->method(i);
      methods_.emplace(absl::StrCat("/", service->full_name(), "/", m->name()),
                       Method{m->name(), m->input_type()->full_name()});
    }
  }

  ex::Interceptor* CreateServerInterceptor(ex::ServerRpcInfo* info) override {
    // Health, reflection and unknown methods (gRPC's own UNIMPLEMENTED) pass untouched.
    if (info->method() == nullptr) return nullptr;
    auto it = methods_.find(info->method());
    if (it == methods_.end()) return nullptr;
    return new UnparsableRequestInterceptor(metrics_, it->second.name, it->second.request_type);
  }

 private:
  struct Method {
    std::string name;
    std::string request_type;
  };
  Metrics& metrics_;
  absl::flat_hash_map<std::string, Method> methods_;
};

}  // namespace

absl::Status refuse_unparsable(Metrics& metrics, const std::string& method,
                               const std::string& message_type) {
  metrics.count_unparsable(method);
  return unparsable_request_status(message_type);
}

absl::Status parse_raw_message(Metrics& metrics, const std::string& method, grpc::ByteBuffer& bytes,
                               google::protobuf::Message& message) {
  if (wire::decode_message(bytes, message).ok()) return absl::OkStatus();
  return refuse_unparsable(metrics, method, message.GetTypeName());
}

std::unique_ptr<ex::ServerInterceptorFactoryInterface> make_unparsable_request_interceptor(
    Metrics& metrics) {
  return std::make_unique<Factory>(metrics);
}

}  // namespace gcompute::server
