// SPDX-License-Identifier: Apache-2.0
// The data plane against raw gRPC on the same machine, in one run (issue: per-call cost near
// raw gRPC, transfers at the wire's speed). Two in-process servers on 127.0.0.1: gcompute (CPU
// or CUDA backend) and a raw callback server of generic methods that do nothing but move bytes
// (Echo: unary; Sink and Store: client streams, counted or kept; Source: server stream). One
// client process measures, interleaved so that both see the same machine:
//   - per call, in blocks of 100: Echo (empty), Echo with a 16 KiB reply, the raw server
//     answering gcompute's Transpose messages (protobuf both ways, no gcompute handler; also
//     with the response serialized once at start, and with its bytes copied out unparsed: each
//     side's share of the coding),
//     GetServerInfo, Transpose of a stored 64 x 64 f32 (answered inline; also through the
//     generated stub alone, without and with a deadline as the client library sets one), and
//     Echo with a 16 KiB reply and a deadline: p50 and p99;
//   - a raw call answered after a delay (0 to 20 ms), from a waiting thread or from gRPC's own
//     (busy): what the platform adds to a call whose answer comes later, with no gcompute code
//     (threads woken from idle);
//   - bulk, for each size: Sink (bytes counted) and Store (bytes copied into one fresh buffer, as
//     a server keeping an upload must) vs UploadMatrix, and Source vs DownloadMatrix of the same
//     bytes in the same chunks (4 MiB): median GB/s over the repetitions after a warm-up;
//   - a Transpose of an f32 matrix of each size from host memory to host memory, end to end:
//     over the wire (the client with shared memory off: upload, call, download), through the
//     client's shared-memory arena (operands copied in, results copied out), and zero copy
//     (the operand already in a registered region, the result written into it); on the CUDA
//     backend also from GPU memory of another process (a CUDA IPC region, device to device;
//     needs tests/service/cuda_ipc_exporter beside this program).
// Raw messages are made by one copy of the chunk into the message, as any client building
// its own message would; received raw chunks are copied into one buffer, as a download must.
// Prints a table last; writes CSV to the path given.
//
//   bench_data_plane [--device cpu|cuda] [--sizes-mib 16,64,256] [--reps 5] [--calls 2000]
//                    [--csv FILE]
//                    [--profile-call echo|echo-reply|typed|typed-static|typed-unparsed|
//                                    stub-transpose|transpose N]
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gcompute/client/client.hpp"
#include "gcompute/v1/service.grpc.pb.h"
#include "server.hpp"
#include "support/ipc_exporter.hpp"
#include "support/shm_object.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kChunk = 4 * kMiB;
/// The deadline of the raw calls that carry one (a minute: never reached, only armed).
constexpr std::chrono::seconds kCallDeadline{60};

/// A message's bytes in one string (copied out of gRPC's slices, as a reader of them must).
std::string flatten(const grpc::ByteBuffer& message) {
  std::vector<grpc::Slice> slices;
  (void)message.Dump(&slices);
  std::string bytes;
  bytes.reserve(message.Length());
  for (const grpc::Slice& s : slices)
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return bytes;
}

/// The Transpose's response to a stored 64 x 64 f32: its first 16 KiB of `payload` inline.
gcompute::v1::TransposeResponse transpose_response_64(const std::string& payload) {
  gcompute::v1::TransposeResponse response;
  gcompute::v1::Matrix* at = response.mutable_at()->mutable_inline_();
  at->set_rows(64);
  at->set_cols(64);
  at->set_dtype(gcompute::v1::DTYPE_F32);
  at->set_data(payload.data(), 64 * 64 * 4);
  return response;
}

// ---- The raw server ---------------------------------------------------------------------

/// One thread that runs tasks in the order given, each not before its time, as an engine
/// worker answers calls (the benchmark makes one call at a time): a delayed
/// reply leaves from a thread that was waiting, not from a new one.
class DelayedRunner {
 public:
  DelayedRunner() : thread_([this] { run(); }) {}
  ~DelayedRunner() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    thread_.join();
  }
  void at(Clock::time_point when, std::function<void()> task) {
    absl::MutexLock lock(&mu_);
    tasks_.emplace_back(when, std::move(task));
  }

 private:
  void run() {
    for (;;) {
      std::pair<Clock::time_point, std::function<void()>> task;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](DelayedRunner* r) { return r->stopping_ || !r->tasks_.empty(); }, this));
        if (stopping_) return;
        task = std::move(tasks_.front());
        tasks_.erase(tasks_.begin());
      }
      std::this_thread::sleep_until(task.first);
      task.second();
    }
  }

  absl::Mutex mu_;
  bool stopping_ = false;
  std::vector<std::pair<Clock::time_point, std::function<void()>>> tasks_;
  std::thread thread_;
};

/// One call of any of the raw methods; lives until OnDone.
class RawReactor final : public grpc::ServerGenericBidiReactor {
 public:
  RawReactor(const std::string& method, const std::string& payload, const std::string& typed_reply,
             DelayedRunner& delayed)
      : method_(method), payload_(payload), typed_reply_(typed_reply), delayed_(delayed) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (method_ == "/bench.Raw/Echo") {
      if (ok) {
        StartWriteAndFinish(&in_, {}, grpc::Status::OK);
      } else {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request"));
      }
    } else if (method_ == "/bench.Raw/Reply") {
      // The request is an 8-byte size; the reply is that many bytes (at most one chunk).
      std::uint64_t size = 0;
      if (!ok || !read_size(&size) || size > kChunk) {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "want an 8-byte size"));
        return;
      }
      grpc::Slice slice(payload_.data(), size, grpc::Slice::STATIC_SLICE);
      out_ = grpc::ByteBuffer(&slice, 1);
      StartWriteAndFinish(&out_, {}, grpc::Status::OK);
    } else if (method_ == "/bench.Raw/TypedStatic") {
      // The same TransposeResponse, serialized once at start: no coding on the server's side.
      grpc::Slice slice(typed_reply_.data(), typed_reply_.size(), grpc::Slice::STATIC_SLICE);
      out_ = grpc::ByteBuffer(&slice, 1);
      StartWriteAndFinish(&out_, {}, grpc::Status::OK);
    } else if (method_ == "/bench.Raw/Typed") {
      // gcompute's own Transpose messages, parsed and built with protobuf, with no gcompute
      // handler between: the reply is a 64 x 64 f32 result inline, as the Transpose's.
      gcompute::v1::TransposeRequest request;
      if (!ok ||
          !grpc::SerializationTraits<grpc::protobuf::Message>::Deserialize(&in_, &request).ok() ||
          request.a().ref().id().empty()) {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "want a TransposeRequest"));
        return;
      }
      bool own = false;
      (void)grpc::SerializationTraits<grpc::protobuf::Message>::Serialize(
          transpose_response_64(payload_), &out_, &own);
      StartWriteAndFinish(&out_, {}, grpc::Status::OK);
    } else if (method_ == "/bench.Raw/Delayed" || method_ == "/bench.Raw/Busy") {
      // The request is an 8-byte count of microseconds, echoed back that long after: Delayed
      // from another thread, as a result from an engine worker; Busy from this one.
      std::uint64_t micros = 0;
      if (!ok || !read_size(&micros)) {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "want an 8-byte delay"));
        return;
      }
      if (method_ == "/bench.Raw/Delayed") {
        delayed_.at(Clock::now() + std::chrono::microseconds(micros),
                    [this] { StartWriteAndFinish(&in_, {}, grpc::Status::OK); });
      } else {  // the same delay spent on this (gRPC's) thread, answered from it
        const auto until = Clock::now() + std::chrono::microseconds(micros);
        while (Clock::now() < until) {
        }
        StartWriteAndFinish(&in_, {}, grpc::Status::OK);
      }
    } else if (method_ == "/bench.Raw/Sink") {
      if (ok) {
        received_ += in_.Length();
        in_.Clear();
        StartRead(&in_);
        return;
      }
      grpc::Slice count(&received_, sizeof received_);
      reply_ = grpc::ByteBuffer(&count, 1);
      StartWriteAndFinish(&reply_, {}, grpc::Status::OK);
    } else if (method_ == "/bench.Raw/Store") {
      // The first message is the total as 8 bytes; the chunks after it are kept, copied into
      // one fresh buffer of that size, as a server storing an upload must.
      if (ok && !started_) {
        started_ = true;
        if (!read_size(&total_)) {
          Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "want an 8-byte size"));
          return;
        }
        stored_ = std::make_unique_for_overwrite<char[]>(total_);
      } else if (ok) {
        std::vector<grpc::Slice> slices;
        (void)in_.Dump(&slices);
        for (const grpc::Slice& piece : slices) {
          if (received_ + piece.size() > total_) {
            Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "more than the size"));
            return;
          }
          std::memcpy(stored_.get() + received_, piece.begin(), piece.size());
          received_ += piece.size();
        }
      } else {
        grpc::Slice count(&received_, sizeof received_);
        reply_ = grpc::ByteBuffer(&count, 1);
        StartWriteAndFinish(&reply_, {}, grpc::Status::OK);
        return;
      }
      in_.Clear();
      StartRead(&in_);
    } else if (method_ == "/bench.Raw/Source") {
      if (!ok || started_) return;  // the client's half-close after its one request
      started_ = true;
      if (!read_size(&total_)) {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "want an 8-byte size"));
        return;
      }
      StartRead(&in_);  // sees the half-close
      write_next();
    } else {
      Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, method_));
    }
  }

  void OnWriteDone(bool ok) override {
    if (method_ != "/bench.Raw/Source") return;
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    write_next();
  }

  void OnDone() override { delete this; }

 private:
  /// The request as an 8-byte size; false when it is not one.
  bool read_size(std::uint64_t* size) {
    const std::string request = flatten(in_);
    if (request.size() != sizeof *size) return false;
    std::memcpy(size, request.data(), sizeof *size);
    return true;
  }

  void write_next() {
    if (sent_ >= total_) {
      Finish(grpc::Status::OK);
      return;
    }
    const std::uint64_t n = std::min<std::uint64_t>(kChunk, total_ - sent_);
    // The payload is made once; a server must still hand gRPC one buffer per message.
    grpc::Slice slice(payload_.data(), n, grpc::Slice::STATIC_SLICE);
    out_ = grpc::ByteBuffer(&slice, 1);
    sent_ += n;
    StartWrite(&out_);
  }

  std::string method_;
  const std::string& payload_;
  const std::string& typed_reply_;
  DelayedRunner& delayed_;
  grpc::ByteBuffer in_, out_, reply_;
  std::uint64_t received_ = 0, total_ = 0, sent_ = 0;
  bool started_ = false;
  std::unique_ptr<char[]> stored_;  ///< Store's copy of the upload
};

class RawService final : public grpc::CallbackGenericService {
 public:
  RawService()
      : payload_(kChunk, '\x5a'),
        typed_reply_(transpose_response_64(payload_).SerializeAsString()) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new RawReactor(ctx->method(), payload_, typed_reply_, delayed_);
  }

 private:
  std::string payload_;
  std::string typed_reply_;
  DelayedRunner delayed_;
};

// ---- The raw client ---------------------------------------------------------------------

class RawClient {
 public:
  explicit RawClient(const std::string& target) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    stub_ = std::make_unique<grpc::GenericStub>(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  }

  /// An empty request answered with `reply_bytes` bytes (0: the empty echo); the reply is
  /// copied out of gRPC's slices, as a client reading a result must. `with_deadline`: the call
  /// carries a deadline, as every call of the client library does (gRPC then arms a timer).
  bool echo(std::uint64_t reply_bytes = 0, bool with_deadline = false) {
    grpc::ClientContext ctx;
    if (with_deadline) ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    grpc::Slice body =
        reply_bytes == 0 ? grpc::Slice() : grpc::Slice(&reply_bytes, sizeof reply_bytes);
    const grpc::ByteBuffer request(&body, 1);
    grpc::ByteBuffer reply;
    grpc::CompletionQueue cq;
    auto call = stub_->PrepareUnaryCall(
        &ctx, reply_bytes == 0 ? "/bench.Raw/Echo" : "/bench.Raw/Reply", request, &cq);
    call->StartCall();
    grpc::Status status;
    call->Finish(&reply, &status, tag(1));
    return wait(cq) && status.ok() && flatten(reply).size() == reply_bytes;
  }

  /// The Delayed method: the request echoed `micros` after it, sent from another thread
  /// (`on_grpc_thread`: the Busy method, the same delay spent on the thread that received it).
  bool delayed(std::uint64_t micros, bool on_grpc_thread = false) {
    grpc::ClientContext ctx;
    grpc::Slice body(&micros, sizeof micros);
    const grpc::ByteBuffer request(&body, 1);
    grpc::ByteBuffer reply;
    grpc::CompletionQueue cq;
    auto call = stub_->PrepareUnaryCall(
        &ctx, on_grpc_thread ? "/bench.Raw/Busy" : "/bench.Raw/Delayed", request, &cq);
    call->StartCall();
    grpc::Status status;
    call->Finish(&reply, &status, tag(1));
    return wait(cq) && status.ok();
  }

  /// The Typed method: a TransposeRequest out, a TransposeResponse with a 16 KiB result back,
  /// both through protobuf, the result copied out as a client's must be.
  /// `static_reply`: the server sends a response serialized once (no coding on its side);
  /// `parse`: false copies the reply's bytes out without protobuf (no coding on this side).
  bool typed_echo(bool static_reply = false, bool parse = true) {
    gcompute::v1::TransposeRequest request;
    request.mutable_a()->mutable_ref()->set_id("m-0123456789abcdef0123456789abcdef");
    grpc::ByteBuffer body, reply;
    bool own = false;
    (void)grpc::SerializationTraits<grpc::protobuf::Message>::Serialize(request, &body, &own);
    grpc::ClientContext ctx;
    grpc::CompletionQueue cq;
    auto call = stub_->PrepareUnaryCall(
        &ctx, static_reply ? "/bench.Raw/TypedStatic" : "/bench.Raw/Typed", body, &cq);
    call->StartCall();
    grpc::Status status;
    call->Finish(&reply, &status, tag(1));
    if (!wait(cq) || !status.ok()) return false;
    if (!parse) return flatten(reply).size() > 64 * 64 * 4;
    gcompute::v1::TransposeResponse response;
    if (!grpc::SerializationTraits<grpc::protobuf::Message>::Deserialize(&reply, &response).ok()) {
      return false;
    }
    const std::string result = response.at().inline_().data();
    return result.size() == 64 * 64 * 4;
  }

  /// Streams `data` in kChunk messages, each copied into its message. `store`: to the Store
  /// method, which keeps the bytes (its total goes first), else to Sink, which counts them.
  bool sink(const std::string& data, bool store = false) {
    grpc::ClientContext ctx;
    grpc::CompletionQueue cq;
    auto call = stub_->PrepareCall(&ctx, store ? "/bench.Raw/Store" : "/bench.Raw/Sink", &cq);
    call->StartCall(tag(1));
    if (!wait(cq)) return false;
    if (store) {
      const std::uint64_t total = data.size();
      grpc::Slice size(&total, sizeof total);
      call->Write(grpc::ByteBuffer(&size, 1), tag(2));
      if (!wait(cq)) return false;
    }
    for (std::uint64_t off = 0; off < data.size(); off += kChunk) {
      grpc::Slice slice(data.data() + off, std::min<std::uint64_t>(kChunk, data.size() - off));
      grpc::ByteBuffer message(&slice, 1);
      call->Write(message, tag(2));
      if (!wait(cq)) return false;
    }
    call->WritesDone(tag(3));
    if (!wait(cq)) return false;
    grpc::ByteBuffer reply;
    call->Read(&reply, tag(4));
    (void)wait(cq);
    grpc::Status status;
    call->Finish(&status, tag(5));
    return wait(cq) && status.ok() && reply.Length() == sizeof(std::uint64_t);
  }

  /// Receives `bytes` in kChunk messages into `out` (copied, as a download assembles them).
  bool source(std::uint64_t bytes, std::string& out) {
    out.resize(bytes);
    grpc::ClientContext ctx;
    grpc::CompletionQueue cq;
    auto call = stub_->PrepareCall(&ctx, "/bench.Raw/Source", &cq);
    call->StartCall(tag(1));
    if (!wait(cq)) return false;
    grpc::Slice size(&bytes, sizeof bytes);
    const grpc::ByteBuffer request(&size, 1);
    call->Write(request, tag(2));
    if (!wait(cq)) return false;
    call->WritesDone(tag(3));
    if (!wait(cq)) return false;
    std::uint64_t got = 0;
    for (;;) {
      grpc::ByteBuffer message;
      call->Read(&message, tag(4));
      if (!wait(cq)) break;
      std::vector<grpc::Slice> slices;
      (void)message.Dump(&slices);
      for (const grpc::Slice& s : slices) {
        if (got + s.size() > bytes) return false;
        std::memcpy(out.data() + got, s.begin(), s.size());
        got += s.size();
      }
    }
    grpc::Status status;
    call->Finish(&status, tag(5));
    return wait(cq) && status.ok() && got == bytes;
  }

 private:
  static void* tag(std::intptr_t i) { return reinterpret_cast<void*>(i); }
  static bool wait(grpc::CompletionQueue& cq) {
    void* t = nullptr;
    bool ok = false;
    return cq.Next(&t, &ok) && ok;
  }
  std::unique_ptr<grpc::GenericStub> stub_;
};

// ---- Measurement ------------------------------------------------------------------------

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench_data_plane: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T ok_or_fail(absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) fail(std::string(what) + ": " + std::string(v.status().message()));
  return *std::move(v);
}

struct Options {
  std::string device = "cpu";
  std::vector<std::uint64_t> sizes_mib = {16, 64, 256};
  int reps = 5;
  int calls = 2000;
  std::string csv;
  // --profile-call KIND N: after the warm-up, only N calls of one kind (echo, echo-reply,
  // typed, typed-static, typed-unparsed, stub-transpose, transpose), then exit; for perf stat /
  // perf record of one call path.
  std::string profile_call;
  int profile_calls = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--device") {
      o.device = value();
    } else if (a == "--sizes-mib") {
      o.sizes_mib.clear();
      std::stringstream list(value());
      for (std::string s; std::getline(list, s, ',');) {
        if (!s.empty()) o.sizes_mib.push_back(std::stoull(s));
      }
    } else if (a == "--reps") {
      o.reps = std::max(2, std::atoi(value().c_str()));
    } else if (a == "--calls") {
      o.calls = std::max(100, std::atoi(value().c_str()));
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--profile-call") {
      o.profile_call = value();
      o.profile_calls = std::atoi(value().c_str());
      if (o.profile_call != "echo" && o.profile_call != "echo-reply" && o.profile_call != "typed" &&
          o.profile_call != "typed-static" && o.profile_call != "typed-unparsed" &&
          o.profile_call != "stub-transpose" && o.profile_call != "transpose") {
        fail(
            "--profile-call takes echo, echo-reply, typed, typed-static, typed-unparsed, "
            "stub-transpose or transpose and a count");
      }
    } else {
      fail("unknown argument " + a +
           " (--device cpu|cuda --sizes-mib 16,64,256 --reps 5 --calls 2000 --csv FILE"
           " --profile-call echo|echo-reply|typed|typed-static|typed-unparsed|stub-transpose|"
           "transpose N)");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  // As gcompute-server's main does (it serves in this process): no lock-order graph on every
  // absl::Mutex acquisition, which would slow the raw server and the client as much.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // An empty --sizes-mib measures the calls only (for profiles).
  const std::uint64_t largest =
      opt.sizes_mib.empty() ? 0 : *std::max_element(opt.sizes_mib.begin(), opt.sizes_mib.end());

  RawService raw_service;
  grpc::ServerBuilder builder;
  int raw_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &raw_port);
  builder.RegisterCallbackGenericService(&raw_service);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  std::unique_ptr<grpc::Server> raw_server = builder.BuildAndStart();
  if (!raw_server) fail("the raw server did not start");
  RawClient raw("127.0.0.1:" + std::to_string(raw_port));

  gcompute::server::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.metrics_listen = "";
  so.device = opt.device;
  so.stored_matrix_quota_bytes = 2 * largest * kMiB + 64 * kMiB;
  auto server = gcompute::server::Server::create(so);
  if (!server.ok()) fail(std::string(server.status().message()));
  gcompute::client::ClientOptions co;
  co.target = "127.0.0.1:" + std::to_string((*server)->port());
  co.chunk_bytes = kChunk;
  gcompute::client::Client client(co);

  // ---- Per call.
  gcompute::client::HostMatrix small;
  small.rows = small.cols = 64;
  small.dtype = gcompute::client::DType::kF32;
  small.data.assign(small.expected_bytes(), '\x01');
  const gcompute::client::MatrixRef small_ref =
      ok_or_fail(client.upload_matrix(small), "upload 64 x 64").ref;
  // The Transpose's result: 64 x 64 f32 inline, the reply the second raw echo carries.
  const std::uint64_t small_reply = small.expected_bytes();
  std::vector<double> echo_us, echo_reply_us, echo_reply_deadline_us, typed_echo_us,
      typed_static_us, typed_unparsed_us, info_us, transpose_us, raw_stub_transpose_us,
      raw_stub_deadline_transpose_us;
  // The same Transpose through the generated stub alone (no client library): what the client's
  // own work adds.
  auto compute_stub = gcompute::v1::Compute::NewStub(
      grpc::CreateChannel(co.target, grpc::InsecureChannelCredentials()));
  gcompute::v1::TransposeRequest raw_transpose;
  raw_transpose.mutable_a()->mutable_ref()->set_id(small_ref.id);
  auto stub_transpose = [&](bool with_deadline) {
    grpc::ClientContext ctx;
    if (with_deadline) ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    gcompute::v1::TransposeResponse response;
    const grpc::Status st = compute_stub->Transpose(&ctx, raw_transpose, &response);
    if (!st.ok() || response.at().inline_().data().size() != small_reply) {
      fail("Transpose through the stub: " + st.error_message());
    }
  };
  // Where a Transpose's time goes by the server's own account (ExecutionStats): queued,
  // computing (kernel and stream wait), copying back, and in all from the call's start on the
  // server to the result's encoding; the rest of the client's time is transport, (de)coding
  // and the reactor.
  struct ServerSide {
    std::vector<double> queue_us, compute_us, d2h_us, total_us, outside_us;
  } server_side;
  auto timed = [](std::vector<double>& into, auto&& call) {
    const auto t0 = Clock::now();
    call();
    into.push_back(seconds_since(t0) * 1e6);
  };
  for (int warm = 0; warm < 100; ++warm) {
    if (!raw.echo()) fail("echo");
    if (!raw.echo(small_reply)) fail("echo with a reply");
    if (!raw.typed_echo()) fail("typed echo");
    (void)ok_or_fail(client.server_info(), "GetServerInfo");
    (void)ok_or_fail(client.transpose(small_ref), "Transpose");
    stub_transpose(false);
    stub_transpose(true);
    if (!raw.echo(small_reply, true)) fail("echo with a reply and a deadline");
  }
  if (!opt.profile_call.empty()) {
    const auto t0 = Clock::now();
    for (int i = 0; i < opt.profile_calls; ++i) {
      if (opt.profile_call == "echo") {
        if (!raw.echo()) fail("echo");
      } else if (opt.profile_call == "echo-reply") {
        if (!raw.echo(small_reply)) fail("echo with a reply");
      } else if (opt.profile_call == "typed") {
        if (!raw.typed_echo()) fail("typed echo");
      } else if (opt.profile_call == "typed-static") {
        if (!raw.typed_echo(true)) fail("typed echo, static reply");
      } else if (opt.profile_call == "typed-unparsed") {
        if (!raw.typed_echo(false, false)) fail("typed echo, unparsed");
      } else if (opt.profile_call == "stub-transpose") {
        stub_transpose(false);
      } else {
        (void)ok_or_fail(client.transpose(small_ref), "Transpose");
      }
    }
    std::printf("%d calls of %s: %.1f us each\n", opt.profile_calls, opt.profile_call.c_str(),
                seconds_since(t0) * 1e6 / std::max(1, opt.profile_calls));
    return 0;
  }
  constexpr int kBlock = 100;
  for (int done = 0; done < opt.calls; done += kBlock) {
    for (int i = 0; i < kBlock; ++i) {
      timed(echo_us, [&] {
        if (!raw.echo()) fail("echo");
      });
    }
    for (int i = 0; i < kBlock; ++i) {
      timed(echo_reply_us, [&] {
        if (!raw.echo(small_reply)) fail("echo with a reply");
      });
    }
    for (int i = 0; i < kBlock; ++i) {
      timed(typed_echo_us, [&] {
        if (!raw.typed_echo()) fail("typed echo");
      });
    }
    for (int i = 0; i < kBlock; ++i) {
      timed(typed_static_us, [&] {
        if (!raw.typed_echo(true)) fail("typed echo, static reply");
      });
    }
    for (int i = 0; i < kBlock; ++i) {
      timed(typed_unparsed_us, [&] {
        if (!raw.typed_echo(false, false)) fail("typed echo, unparsed");
      });
    }
    for (int i = 0; i < kBlock; ++i) {
      timed(info_us, [&] { (void)ok_or_fail(client.server_info(), "GetServerInfo"); });
    }
    for (int i = 0; i < kBlock; ++i) {
      gcompute::client::ExecutionStats stats;
      timed(transpose_us,
            [&] { stats = ok_or_fail(client.transpose(small_ref), "Transpose").stats; });
      server_side.queue_us.push_back(stats.queue_seconds * 1e6);
      server_side.compute_us.push_back(stats.compute_seconds * 1e6);
      server_side.d2h_us.push_back(stats.d2h_seconds * 1e6);
      server_side.total_us.push_back(stats.total_seconds * 1e6);
      server_side.outside_us.push_back(transpose_us.back() - stats.total_seconds * 1e6);
    }
    for (int i = 0; i < kBlock; ++i) {
      timed(raw_stub_transpose_us, [&] { stub_transpose(false); });
    }
    for (int i = 0; i < kBlock; ++i) {
      timed(raw_stub_deadline_transpose_us, [&] { stub_transpose(true); });
    }
    for (int i = 0; i < kBlock; ++i) {
      timed(echo_reply_deadline_us, [&] {
        if (!raw.echo(small_reply, true)) fail("echo with a reply and a deadline");
      });
    }
  }
  // A raw call answered after a delay, from another thread: interleaved over the delays.
  const std::vector<std::uint64_t> kDelaysUs = {0, 100, 1000, 3000, 20000};
  constexpr int kDelayedCalls = 40;
  std::vector<std::vector<double>> delayed_us(kDelaysUs.size()), busy_us(kDelaysUs.size());
  for (int i = 0; i < kDelayedCalls; ++i) {
    for (std::size_t d = 0; d < kDelaysUs.size(); ++d) {
      for (const bool on_grpc_thread : {false, true}) {
        const auto t0 = Clock::now();
        if (!raw.delayed(kDelaysUs[d], on_grpc_thread)) fail("delayed echo");
        (on_grpc_thread ? busy_us : delayed_us)[d].push_back(seconds_since(t0) * 1e6 -
                                                             static_cast<double>(kDelaysUs[d]));
      }
    }
  }

  // ---- Bulk.
  struct Bulk {
    std::uint64_t mib;
    std::vector<double> sink_s, store_s, upload_s, source_s, download_s, download_into_s;
  };
  std::vector<Bulk> bulk;
  std::string received;
  for (const std::uint64_t mib : opt.sizes_mib) {
    Bulk b{mib, {}, {}, {}, {}, {}};
    gcompute::client::HostMatrix reused;  // the raw source's buffer is reused too
    gcompute::client::HostMatrix m;
    m.rows = static_cast<std::int64_t>(mib * kMiB / 8 / 1024);
    m.cols = 1024;
    m.dtype = gcompute::client::DType::kF64;
    m.data.assign(m.expected_bytes(), '\x5a');
    for (int rep = 0; rep <= opt.reps; ++rep) {  // rep 0 warms buffers and connections
      auto t0 = Clock::now();
      if (!raw.sink(m.data)) fail("sink");
      const double sink = seconds_since(t0);
      t0 = Clock::now();
      if (!raw.sink(m.data, /*store=*/true)) fail("store");
      const double store = seconds_since(t0);
      t0 = Clock::now();
      const auto stored = ok_or_fail(client.upload_matrix(m), "UploadMatrix");
      const double upload = seconds_since(t0);
      t0 = Clock::now();
      if (!raw.source(m.data.size(), received)) fail("source");
      const double source = seconds_since(t0);
      t0 = Clock::now();
      const auto back = ok_or_fail(client.download_matrix(stored.ref), "DownloadMatrix");
      const double download = seconds_since(t0);
      if (back.data != m.data) fail("DownloadMatrix returned other bytes");
      t0 = Clock::now();
      if (!client.download_matrix_into(stored.ref, reused).ok()) fail("DownloadMatrix into");
      const double download_into = seconds_since(t0);
      if (reused.data != m.data) fail("DownloadMatrix into a matrix returned other bytes");
      if (auto st = client.delete_matrix(stored.ref); !st.ok()) fail("DeleteMatrix");
      if (rep == 0) continue;
      b.sink_s.push_back(sink);
      b.store_s.push_back(store);
      b.upload_s.push_back(upload);
      b.source_s.push_back(source);
      b.download_s.push_back(download);
      b.download_into_s.push_back(download_into);
    }
    bulk.push_back(std::move(b));
  }

  // ---- Transpose end to end: the wire, the client's arena, zero copy.
  struct EndToEnd {
    std::uint64_t mib;
    std::vector<double> wire_s, arena_s, zero_copy_s, cuda_ipc_s;
    /// The zero-copy calls' ExecutionStats: the server's whole time and its compute phase.
    std::vector<double> zero_copy_server_s, zero_copy_compute_s;
  };
  std::vector<EndToEnd> end_to_end;
  gcompute::client::ClientOptions wire_options = co;
  wire_options.shared_memory = false;
  gcompute::client::Client wire(wire_options);
  auto stub = gcompute::v1::Compute::NewStub(
      grpc::CreateChannel(co.target, grpc::InsecureChannelCredentials()));
  for (const std::uint64_t mib : opt.sizes_mib) {
    EndToEnd e{mib, {}, {}, {}, {}, {}, {}};
    gcompute::client::HostMatrix m;
    m.cols = 1024;
    while (static_cast<std::uint64_t>(m.cols) * m.cols * 4 < mib * kMiB) m.cols *= 2;
    m.rows = static_cast<std::int64_t>(mib * kMiB / 4 / static_cast<std::uint64_t>(m.cols));
    m.dtype = gcompute::client::DType::kF32;
    m.data.resize(m.expected_bytes());
    auto* values = reinterpret_cast<float*>(m.data.data());
    for (std::int64_t i = 0; i < m.elements(); ++i) values[i] = static_cast<float>(i % 65521);
    gcompute::testing::ShmObject shm(2 * m.data.size() + 4096);
    std::memcpy(shm.data(), m.data.data(), m.data.size());
    gcompute::v1::RegisterSharedMemoryRequest reg;
    reg.set_name(shm.name());
    gcompute::v1::RegisterSharedMemoryResponse region;
    {
      grpc::ClientContext ctx;
      if (!stub->RegisterSharedMemory(&ctx, reg, &region).ok()) fail("RegisterSharedMemory");
    }
    gcompute::v1::TransposeRequest zero_copy;
    auto* ref = zero_copy.mutable_a()->mutable_shared_memory();
    ref->set_region_id(region.region().region_id());
    ref->set_rows(m.rows);
    ref->set_cols(m.cols);
    ref->set_dtype(gcompute::v1::DTYPE_F32);
    zero_copy.mutable_output()->set_placement(gcompute::v1::OutputOptions::PLACEMENT_SHARED_MEMORY);
    zero_copy.mutable_output()->mutable_shared_memory()->set_region_id(region.region().region_id());
    zero_copy.mutable_output()->mutable_shared_memory()->set_offset(m.data.size());
    std::string expected;
    for (int rep = 0; rep <= opt.reps; ++rep) {
      auto t0 = Clock::now();
      const auto by_wire = ok_or_fail(wire.transpose(m), "Transpose over the wire");
      const double wire_s = seconds_since(t0);
      t0 = Clock::now();
      const auto by_arena = ok_or_fail(client.transpose(m), "Transpose through the arena");
      const double arena_s = seconds_since(t0);
      t0 = Clock::now();
      gcompute::v1::TransposeResponse response;
      grpc::ClientContext ctx;
      const grpc::Status st = stub->Transpose(&ctx, zero_copy, &response);
      const double zero_copy_s = seconds_since(t0);
      if (!st.ok()) fail("zero-copy Transpose: " + st.error_message());
      const auto& at = response.at().shared_memory();
      if (by_arena.matrix.data != by_wire.matrix.data ||
          std::memcmp(shm.data() + at.offset(), by_wire.matrix.data.data(),
                      by_wire.matrix.data.size()) != 0) {
        fail("the three transposes differ");
      }
      if (rep == 0) {
        // The wire's answer checked once against a plain loop.
        const auto* out = reinterpret_cast<const float*>(by_wire.matrix.data.data());
        for (std::int64_t i = 0; i < m.rows; i += 97) {
          for (std::int64_t j = 0; j < m.cols; j += 89) {
            if (out[j * m.rows + i] != values[i * m.cols + j]) fail("Transpose is wrong");
          }
        }
        continue;
      }
      e.wire_s.push_back(wire_s);
      e.arena_s.push_back(arena_s);
      e.zero_copy_s.push_back(zero_copy_s);
      e.zero_copy_server_s.push_back(response.stats().total_seconds());
      e.zero_copy_compute_s.push_back(response.stats().compute_seconds());
    }
    auto unregister = [&](const std::string& id) {
      grpc::ClientContext ctx;
      gcompute::v1::UnregisterSharedMemoryRequest unreg;
      unreg.set_region_id(id);
      gcompute::v1::UnregisterSharedMemoryResponse done;
      (void)stub->UnregisterSharedMemory(&ctx, unreg, &done);
    };
    unregister(region.region().region_id());
    const std::filesystem::path exporter_exe = gcompute::testing::ipc_exporter_path("");
    if (opt.device == "cuda" && std::filesystem::exists(exporter_exe)) {
      // The operand in GPU memory of another process, the result written next to it.
      std::vector<std::byte> in(m.data.size());
      std::memcpy(in.data(), m.data.data(), m.data.size());
      const std::uint64_t out_at = (m.data.size() + 255) / 256 * 256;
      gcompute::testing::IpcExporter exporter(exporter_exe, in, out_at + m.data.size());
      gcompute::v1::RegisterSharedMemoryRequest dev;
      dev.set_cuda_ipc_handle(exporter.handle());
      gcompute::v1::RegisterSharedMemoryResponse dev_region;
      {
        grpc::ClientContext ctx;
        const grpc::Status st = stub->RegisterSharedMemory(&ctx, dev, &dev_region);
        if (!st.ok()) fail("RegisterSharedMemory (CUDA IPC): " + st.error_message());
      }
      gcompute::v1::TransposeRequest on_device = zero_copy;
      on_device.mutable_a()->mutable_shared_memory()->set_region_id(
          dev_region.region().region_id());
      on_device.mutable_output()->mutable_shared_memory()->set_region_id(
          dev_region.region().region_id());
      on_device.mutable_output()->mutable_shared_memory()->set_offset(out_at);
      for (int rep = 0; rep <= opt.reps; ++rep) {
        const auto t0 = Clock::now();
        gcompute::v1::TransposeResponse response;
        grpc::ClientContext ctx;
        const grpc::Status st = stub->Transpose(&ctx, on_device, &response);
        const double s = seconds_since(t0);
        if (!st.ok()) fail("CUDA IPC Transpose: " + st.error_message());
        if (rep > 0) e.cuda_ipc_s.push_back(s);
      }
      unregister(dev_region.region().region_id());
      const std::string after = exporter.finish();
      if (after.size() < out_at + m.data.size() ||
          std::memcmp(after.data() + out_at, shm.data() + m.data.size(), m.data.size()) != 0) {
        fail("the CUDA IPC transpose differs from the zero-copy one");
      }
    }
    end_to_end.push_back(std::move(e));
  }

  // ---- Report.
  const double echo50 = percentile(echo_us, 0.5);
  std::string csv = "kind,name,size_mib,p50_us,p99_us,median_s,gb_per_s,vs_raw\n";
  auto add_call = [&](const char* name, const std::vector<double>& us) {
    csv += "call," + std::string(name) + ",0," + std::to_string(percentile(us, 0.5)) + "," +
           std::to_string(percentile(us, 0.99)) + ",,," +
           std::to_string(percentile(us, 0.5) / echo50) + "\n";
  };
  add_call("raw echo", echo_us);
  add_call("raw echo 16 KiB reply", echo_reply_us);
  add_call("raw server protobuf Transpose messages", typed_echo_us);
  add_call("raw server Transpose response serialized once", typed_static_us);
  add_call("raw server protobuf Transpose messages reply not parsed", typed_unparsed_us);
  add_call("GetServerInfo", info_us);
  add_call("Transpose 64x64 f32 ref", transpose_us);
  add_call("Transpose 64x64 f32 ref through the stub", raw_stub_transpose_us);
  add_call("Transpose 64x64 f32 ref through the stub with a deadline",
           raw_stub_deadline_transpose_us);
  add_call("raw echo 16 KiB reply with a deadline", echo_reply_deadline_us);
  std::printf("bench_data_plane: %s backend, %d calls each, %d repetitions of each transfer\n\n",
              opt.device.c_str(), opt.calls, opt.reps);
  const double echo_reply50 = percentile(echo_reply_us, 0.5);
  std::printf(
      "| call | p50 us | p99 us | p50 vs raw echo | p50 vs raw echo with a 16 KiB reply |\n"
      "|---|---:|---:|---:|---:|\n");
  for (const auto& [name, us] :
       {std::pair<const char*, const std::vector<double>*>{"raw echo (empty)", &echo_us},
        {"raw echo, 16 KiB reply", &echo_reply_us},
        {"raw server, protobuf Transpose request and 16 KiB response", &typed_echo_us},
        {"  the same, the response serialized once at start (no coding on the server)",
         &typed_static_us},
        {"  the same, the response's bytes copied out unparsed (no coding on the client)",
         &typed_unparsed_us},
        {"GetServerInfo", &info_us},
        {"Transpose of a stored 64x64 f32 (16 KiB reply)", &transpose_us},
        {"  the same through the generated stub (no client library)", &raw_stub_transpose_us},
        {"  the same through the stub with a deadline (as the client library sets)",
         &raw_stub_deadline_transpose_us},
        {"raw echo, 16 KiB reply, with a deadline", &echo_reply_deadline_us}}) {
    std::printf("| %s | %.1f | %.1f | %.2fx | %.2fx |\n", name, percentile(*us, 0.5),
                percentile(*us, 0.99), percentile(*us, 0.5) / echo50,
                percentile(*us, 0.5) / echo_reply50);
  }
  std::printf(
      "\nTranspose of a stored 64x64 f32, p50 of each part by the server's ExecutionStats (us):\n"
      "| queue | compute | d2h | server total | client minus server total |\n"
      "|---:|---:|---:|---:|---:|\n| %.1f | %.1f | %.1f | %.1f | %.1f |\n",
      percentile(server_side.queue_us, 0.5), percentile(server_side.compute_us, 0.5),
      percentile(server_side.d2h_us, 0.5), percentile(server_side.total_us, 0.5),
      percentile(server_side.outside_us, 0.5));
  // A raw call answered from another thread after a delay: what the platform adds to a call
  // whose answer comes later (threads and cores woken from idle), with no gcompute code.
  std::printf(
      "\nRaw echo answered after a delay, p50 of the time beyond the delay (us), %d calls each, "
      "interleaved:\n| delay ms | answered from another thread | answered from gRPC's thread "
      "(busy) |\n|---:|---:|---:|\n",
      kDelayedCalls);
  for (std::size_t d = 0; d < kDelaysUs.size(); ++d) {
    std::printf("| %.1f | %.1f | %.1f |\n", kDelaysUs[d] / 1e3, percentile(delayed_us[d], 0.5),
                percentile(busy_us[d], 0.5));
    csv += "per call,raw echo busy on its gRPC thread for " + std::to_string(kDelaysUs[d]) +
           " us (beyond it),," + std::to_string(percentile(busy_us[d], 0.5)) + ",,,,\n";
    csv += "per call,raw echo after a delay of " + std::to_string(kDelaysUs[d]) +
           " us (beyond it),," + std::to_string(percentile(delayed_us[d], 0.5)) + ",,,,\n";
  }
  std::printf(
      "\n| size | raw stream in GB/s | UploadMatrix GB/s | ratio | raw stream in, kept GB/s | "
      "ratio | raw stream out GB/s | DownloadMatrix GB/s | ratio | into a reused matrix GB/s | "
      "ratio |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Bulk& b : bulk) {
    const double bytes = static_cast<double>(b.mib * kMiB);
    const double sink = bytes / percentile(b.sink_s, 0.5) / 1e9;
    const double store = bytes / percentile(b.store_s, 0.5) / 1e9;
    const double up = bytes / percentile(b.upload_s, 0.5) / 1e9;
    const double source = bytes / percentile(b.source_s, 0.5) / 1e9;
    const double down = bytes / percentile(b.download_s, 0.5) / 1e9;
    const double down_into = bytes / percentile(b.download_into_s, 0.5) / 1e9;
    std::printf(
        "| %llu MiB | %.2f | %.2f | %.2fx | %.2f | %.2fx | %.2f | %.2f | %.2fx | %.2f | %.2fx |\n",
        static_cast<unsigned long long>(b.mib), sink, up, up / sink, store, up / store, source,
        down, down / source, down_into, down_into / source);
    const std::string size = std::to_string(b.mib);
    csv += "bulk,raw sink," + size + ",,," + std::to_string(percentile(b.sink_s, 0.5)) + "," +
           std::to_string(sink) + ",1\n";
    csv += "bulk,UploadMatrix," + size + ",,," + std::to_string(percentile(b.upload_s, 0.5)) + "," +
           std::to_string(up) + "," + std::to_string(up / sink) + "\n";
    csv += "bulk,raw store," + size + ",,," + std::to_string(percentile(b.store_s, 0.5)) + "," +
           std::to_string(store) + ",1\n";
    csv += "bulk,UploadMatrix vs raw store," + size + ",,," +
           std::to_string(percentile(b.upload_s, 0.5)) + "," + std::to_string(up) + "," +
           std::to_string(up / store) + "\n";
    csv += "bulk,raw source," + size + ",,," + std::to_string(percentile(b.source_s, 0.5)) + "," +
           std::to_string(source) + ",1\n";
    csv += "bulk,DownloadMatrix," + size + ",,," + std::to_string(percentile(b.download_s, 0.5)) +
           "," + std::to_string(down) + "," + std::to_string(down / source) + "\n";
    csv += "bulk,DownloadMatrix into a reused matrix," + size + ",,," +
           std::to_string(percentile(b.download_into_s, 0.5)) + "," + std::to_string(down_into) +
           "," + std::to_string(down_into / source) + "\n";
  }
  std::printf(
      "\nTranspose of an f32 matrix, host memory to host memory (GB/s = matrix bytes / time; raw "
      "in + out: the raw streams' medians for the same bytes each way, the floor of the wire):\n"
      "| size | wire ms | wire GB/s | raw in + out ms | raw / wire | client arena ms | GB/s | "
      "vs wire | zero copy ms | GB/s | vs wire |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const EndToEnd& e : end_to_end) {
    const double bytes = static_cast<double>(e.mib * kMiB);
    const double wire_s = percentile(e.wire_s, 0.5), arena_s = percentile(e.arena_s, 0.5),
                 zero_s = percentile(e.zero_copy_s, 0.5);
    double raw_s = 0;
    for (const Bulk& b : bulk) {
      if (b.mib == e.mib) raw_s = percentile(b.sink_s, 0.5) + percentile(b.source_s, 0.5);
    }
    std::printf(
        "| %llu MiB | %.1f | %.2f | %.1f | %.2fx | %.1f | %.2f | %.1fx | %.1f | %.2f | %.1fx |\n",
        static_cast<unsigned long long>(e.mib), wire_s * 1e3, bytes / wire_s / 1e9, raw_s * 1e3,
        raw_s / wire_s, arena_s * 1e3, bytes / arena_s / 1e9, wire_s / arena_s, zero_s * 1e3,
        bytes / zero_s / 1e9, wire_s / zero_s);
    const std::string size = std::to_string(e.mib);
    csv += "transpose,wire," + size + ",,," + std::to_string(wire_s) + "," +
           std::to_string(bytes / wire_s / 1e9) + ",1\n";
    csv += "transpose,client arena," + size + ",,," + std::to_string(arena_s) + "," +
           std::to_string(bytes / arena_s / 1e9) + "," + std::to_string(wire_s / arena_s) + "\n";
    csv += "transpose,zero copy," + size + ",,," + std::to_string(zero_s) + "," +
           std::to_string(bytes / zero_s / 1e9) + "," + std::to_string(wire_s / zero_s) + "\n";
    if (!e.cuda_ipc_s.empty()) {
      const double ipc_s = percentile(e.cuda_ipc_s, 0.5);
      std::printf("|   CUDA IPC (device to device) | | | | | | %.2f | %.1f | %.0fx |\n",
                  ipc_s * 1e3, bytes / ipc_s / 1e9, wire_s / ipc_s);
      csv += "transpose,cuda ipc," + size + ",,," + std::to_string(ipc_s) + "," +
             std::to_string(bytes / ipc_s / 1e9) + "," + std::to_string(wire_s / ipc_s) + "\n";
    }
  }
  std::printf(
      "\nZero copy, p50 by the server's ExecutionStats (compute: on the CUDA backend the tiled "
      "upload, transpose and download, overlapped):\n"
      "| size | end to end ms | server total ms | compute ms |\n|---:|---:|---:|---:|\n");
  for (const EndToEnd& e : end_to_end) {
    std::printf("| %llu MiB | %.2f | %.2f | %.2f |\n", static_cast<unsigned long long>(e.mib),
                percentile(e.zero_copy_s, 0.5) * 1e3, percentile(e.zero_copy_server_s, 0.5) * 1e3,
                percentile(e.zero_copy_compute_s, 0.5) * 1e3);
  }
  if (!opt.csv.empty()) std::ofstream(opt.csv) << csv;
  raw_server->Shutdown();
  return 0;
}
