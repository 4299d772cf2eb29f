// SPDX-License-Identifier: Apache-2.0
// What the in-process service benchmarks share: a server on 127.0.0.1 with a stub of unlimited
// message size, timed unary calls that exit on an error, deleting stored results, medians.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gcompute/v1/service.grpc.pb.h"
#include "server.hpp"

namespace gcompute::bench {

/// The median of `v` (the upper one of an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] inline void fail(const char* what, const grpc::Status& st) {
  std::fprintf(stderr, "%s: %s\n", what, st.error_message().c_str());
  std::exit(1);
}

struct BenchServer {
  std::unique_ptr<server::Server> server;
  std::unique_ptr<v1::Compute::Stub> stub;
};

/// A server of `device` ("cpu", "cuda", or "cuda-host": the CUDA backend without device copies
/// of stored graphs) with default options otherwise; exits if it cannot start.
inline BenchServer start_bench_server(const std::string& device) {
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_listen = "";
  options.device = device == "cuda-host" ? "cuda" : device;
  options.device_graph_copies = device != "cuda-host";
  auto created = server::Server::create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "server (%s): %s\n", device.c_str(),
                 std::string(created.status().message()).c_str());
    std::exit(1);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string((*created)->port()),
                                           grpc::InsecureChannelCredentials(), args);
  BenchServer b{*std::move(created), nullptr};
  b.stub = v1::Compute::NewStub(channel);
  return b;
}

/// Seconds of one unary call `(stub.*method)(req, resp)`; exits naming `what` on an error.
template <typename Req, typename Resp>
double timed_call(v1::Compute::Stub& stub,
                  grpc::Status (v1::Compute::Stub::*method)(grpc::ClientContext*, const Req&,
                                                            Resp*),
                  const Req& req, Resp* resp, const char* what) {
  grpc::ClientContext ctx;
  const auto t0 = std::chrono::steady_clock::now();
  const grpc::Status st = (stub.*method)(&ctx, req, resp);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) fail(what, st);
  return s;
}

/// Deletes a stored result (nothing when `result` is inline or unset).
inline void delete_stored(v1::Compute::Stub& stub, const v1::MatrixResult& result) {
  if (!result.has_stored()) return;
  v1::DeleteMatrixRequest req;
  *req.mutable_ref() = result.stored().ref();
  v1::DeleteMatrixResponse resp;
  grpc::ClientContext ctx;
  if (const grpc::Status st = stub.DeleteMatrix(&ctx, req, &resp); !st.ok()) {
    fail("DeleteMatrix", st);
  }
}

}  // namespace gcompute::bench
