// SPDX-License-Identifier: Apache-2.0
#include "api/inline_result.hpp"

#include <memory>
#include <string>

#include "gcompute/v1/types.pb.h"
#include "wire/chunk_codec.hpp"
#include "wire/spliced_bytes.hpp"

namespace gcompute::server {

grpc::ByteBuffer encode_with_result(google::protobuf::Message& response) {
  constexpr int kResultField = 1;
  const google::protobuf::Reflection* reflection = response.GetReflection();
  const google::protobuf::FieldDescriptor* field =
      response.GetDescriptor()->FindFieldByNumber(kResultField);
  if (field == nullptr || field->message_type() != v1::MatrixResult::descriptor() ||
      !reflection->HasField(response, field)) {
    return wire::encode_message(response);
  }
  auto& result = static_cast<v1::MatrixResult&>(*reflection->MutableMessage(&response, field));
  if (!result.has_inline_() || result.inline_().data().size() < kSplicedResultMinBytes) {
    return wire::encode_message(response);
  }
  const std::unique_ptr<v1::Matrix> matrix(result.release_inline_());
  std::string data = std::move(*matrix->mutable_data());
  matrix->clear_data();
  // The result's and the response's other fields (none today) go out as usual.
  std::string result_fields = result.SerializeAsString();
  reflection->ClearField(&response, field);
  return wire::encode_with_spliced_bytes(
      {{0, response.SerializeAsString()},
       {kResultField, std::move(result_fields)},
       {v1::MatrixResult::kInlineFieldNumber, matrix->SerializeAsString()}},
      v1::Matrix::kDataFieldNumber, std::move(data));
}

}  // namespace gcompute::server
