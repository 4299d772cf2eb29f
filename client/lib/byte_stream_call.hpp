// SPDX-License-Identifier: Apache-2.0
// A streaming call of raw messages (grpc::ByteBuffer) through the generic stub, driven one
// operation at a time as the synchronous API drives a typed one. The matrix streams use it
// because they code their chunks themselves (wire/chunk_codec.hpp): a received chunk is copied
// once, from gRPC's buffers into the matrix, instead of into a protobuf string first.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace gcompute::client {

class ByteStreamCall {
 public:
  /// Starts a call of `method` ("/package.Service/Method") with `context` (deadline and
  /// metadata already set). If it could not start, the other operations return false and
  /// finish() says why.
  ByteStreamCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                 grpc::ClientContext& context);
  ~ByteStreamCall();
  ByteStreamCall(const ByteStreamCall&) = delete;
  ByteStreamCall& operator=(const ByteStreamCall&) = delete;

  /// False once the stream is broken (finish() then has the status).
  bool write(const grpc::ByteBuffer& message);
  bool writes_done();
  /// False at the end of the stream or when it broke.
  bool read(grpc::ByteBuffer& message);
  /// The call's status; once, after the last read or failed operation.
  grpc::Status finish();

 private:
  bool wait();

  grpc::GenericStub stub_;
  grpc::CompletionQueue queue_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  bool started_ = false;
};

}  // namespace gcompute::client
