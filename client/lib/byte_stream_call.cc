// SPDX-License-Identifier: Apache-2.0
#include "byte_stream_call.hpp"

namespace gcompute::client {
namespace {

// One operation is outstanding at a time, so the tag only has to be non-null.
void* const kTag = reinterpret_cast<void*>(1);

}  // namespace

ByteStreamCall::ByteStreamCall(const std::shared_ptr<grpc::Channel>& channel,
                               const std::string& method, grpc::ClientContext& context)
    : stub_(channel) {
  call_ = stub_.PrepareCall(&context, method, &queue_);
  call_->StartCall(kTag);
  started_ = wait();
}

ByteStreamCall::~ByteStreamCall() {
  call_.reset();
  queue_.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue_.Next(&tag, &ok)) {
  }
}

bool ByteStreamCall::wait() {
  void* tag = nullptr;
  bool ok = false;
  return queue_.Next(&tag, &ok) && ok;
}

bool ByteStreamCall::write(const grpc::ByteBuffer& message) {
  if (!started_) return false;
  call_->Write(message, kTag);
  return wait();
}

bool ByteStreamCall::writes_done() {
  if (!started_) return false;
  call_->WritesDone(kTag);
  return wait();
}

bool ByteStreamCall::read(grpc::ByteBuffer& message) {
  if (!started_) return false;
  call_->Read(&message, kTag);
  return wait();
}

grpc::Status ByteStreamCall::finish() {
  grpc::Status status;
  call_->Finish(&status, kTag);
  wait();
  return status;
}

}  // namespace gcompute::client
