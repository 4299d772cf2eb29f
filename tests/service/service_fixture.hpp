// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the service tests: an in-process server on 127.0.0.1:0 with a raw stub,
// matrix encoding/decoding, status assertions, a plain-socket HTTP GET for /metrics and a
// hand-encoded grpc.health.v1 check (Debian ships no health proto for clients).
#pragma once

#include <arpa/inet.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "api/status.hpp"
#include "gcompute/v1/service.grpc.pb.h"
#include "server.hpp"
#include "support/random.hpp"

namespace gcompute::service_test {

namespace v1 = ::gcompute::v1;
using server::ServerOptions;

/// Options of a CPU server on free loopback ports.
inline ServerOptions test_options() {
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.metrics_listen = "127.0.0.1:0";
  o.device = "cpu";
  return o;
}

/// test_options() with gRPC messages of at most 1 MiB: moderate operands go by upload and
/// results come back stored.
inline ServerOptions small_message_options() {
  ServerOptions o = test_options();
  o.limits.max_message_bytes = 1 << 20;
  return o;
}

/// A running server and a raw stub connected to it.
struct TestServer {
  ServerOptions options;
  std::unique_ptr<server::Server> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Compute::Stub> stub;

  std::string target() const { return "127.0.0.1:" + std::to_string(server->port()); }
};

inline std::unique_ptr<TestServer> start_server(const ServerOptions& options = test_options()) {
  auto ts = std::make_unique<TestServer>();
  ts->options = options;
  auto created = server::Server::create(options);
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return nullptr;
  ts->server = *std::move(created);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  ts->channel = grpc::CreateCustomChannel(ts->target(), grpc::InsecureChannelCredentials(), args);
  ts->stub = v1::Compute::NewStub(ts->channel);
  return ts;
}

// ---- matrices ----------------------------------------------------------------------------

template <typename T>
constexpr v1::DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return v1::DTYPE_F32;
  if constexpr (std::is_same_v<T, double>) return v1::DTYPE_F64;
  if constexpr (std::is_same_v<T, std::int32_t>) return v1::DTYPE_I32;
  return v1::DTYPE_UNSPECIFIED;
}

/// A v1::Matrix holding `values` (batch 0 means a single matrix, as on the wire).
template <typename T>
v1::Matrix make_matrix(std::int64_t rows, std::int64_t cols, const std::vector<T>& values,
                       std::int64_t batch = 0, v1::DType dtype = dtype_of<T>()) {
  v1::Matrix m;
  m.set_rows(rows);
  m.set_cols(cols);
  m.set_batch(batch);
  m.set_dtype(dtype);
  m.set_data(values.data(), values.size() * sizeof(T));
  return m;
}

/// The elements of an inline matrix; fails the test when the byte count does not fit T.
template <typename T>
std::vector<T> values_of(const v1::Matrix& m) {
  std::vector<T> out(m.data().size() / sizeof(T));
  EXPECT_EQ(m.data().size() % sizeof(T), 0u);
  if (!out.empty()) std::memcpy(out.data(), m.data().data(), out.size() * sizeof(T));
  return out;
}

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

/// Encodes a float that is exactly representable in IEEE binary16 (normal or zero).
inline std::uint16_t exact_f16_bits(float f) {
  if (f == 0.0f) return std::signbit(f) ? 0x8000 : 0;
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::int32_t exp = static_cast<std::int32_t>((u >> 23) & 0xffu) - 127;
  return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(exp + 15) << 10 |
                                    ((u >> 13) & 0x3ffu));
}
/// Decodes IEEE binary16 bits (all classes) into a double.
inline double f16_to_double(std::uint16_t h) {
  const int sign = (h & 0x8000) ? -1 : 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + mant, exp - 25);
}
/// bfloat16 bits of a float exactly representable in bfloat16.
inline std::uint16_t exact_bf16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>(u >> 16);
}
inline double bf16_to_double(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// `n` floats uniform in [-100, 100), the same for the same `seed`.
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  gcompute::testing::Rng rng(seed);
  return gcompute::testing::random_uniform<float>(rng, n, -100, 100);
}

/// A random digraph as a dense n x n matrix (+inf = no edge). With `negative`, weights are
/// shifted by vertex potentials: some become negative but every cycle keeps a positive sum.
inline std::vector<double> random_digraph(gcompute::testing::Rng& rng, std::int64_t n,
                                          double density, bool negative, bool integer) {
  std::vector<double> pot(static_cast<std::size_t>(n));
  for (double& p : pot) p = negative ? static_cast<double>(rng.uniform_int(0, 5)) : 0.0;
  std::vector<double> w(static_cast<std::size_t>(n * n), std::numeric_limits<double>::infinity());
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (i == j || !rng.bernoulli(density)) continue;
      const double base = integer ? static_cast<double>(rng.uniform_int(1, 9))
                                  : std::round(rng.uniform(1, 9) * 64) / 64;
      w[i * n + j] = base + pot[i] - pot[j];
    }
  }
  return w;
}

/// Sets the deadline of a call `seconds` from now (fractions allowed).
inline void deadline(grpc::ClientContext& ctx, double seconds = 120) {
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6)));
}

/// The header message of a streamed UploadMatrix.
inline v1::UploadMatrixRequest header_part(std::int64_t rows, std::int64_t cols, v1::DType dt) {
  v1::UploadMatrixRequest r;
  r.mutable_header()->mutable_shape()->set_rows(rows);
  r.mutable_header()->mutable_shape()->set_cols(cols);
  r.mutable_header()->mutable_shape()->set_dtype(dt);
  return r;
}

// ---- jobs --------------------------------------------------------------------------------

inline v1::SubmitJobRequest transpose_job(std::int64_t rows, std::int64_t cols,
                                          const std::vector<float>& a) {
  v1::SubmitJobRequest req;
  *req.mutable_transpose()->mutable_a()->mutable_inline_() = make_matrix<float>(rows, cols, a);
  return req;
}

/// Reads WatchJob(id) to its end: every Job message into `*seen`; returns the stream's status.
inline grpc::Status watch_job(v1::Compute::Stub& stub, const std::string& id, int deadline_s,
                              std::vector<v1::Job>* seen) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(deadline_s));
  v1::WatchJobRequest req;
  req.set_job_id(id);
  auto reader = stub.WatchJob(&ctx, req);
  v1::Job job;
  while (reader->Read(&job)) seen->push_back(job);
  return reader->Finish();
}

// ---- status assertions -------------------------------------------------------------------

/// "INVALID_ARGUMENT", ...: the names the server uses in its metrics labels.
inline std::string code_name(grpc::StatusCode c) {
  // gRPC and absl share the canonical code numbering.
  return server::code_name(static_cast<absl::StatusCode>(c));
}

/// Checks the code and that the message contains every one of `parts`.
inline ::testing::AssertionResult has_status(const grpc::Status& st, grpc::StatusCode code,
                                             const std::vector<std::string>& parts = {}) {
  if (st.error_code() != code) {
    return ::testing::AssertionFailure()
           << "expected " << code_name(code) << ", got " << code_name(st.error_code()) << ": "
           << st.error_message();
  }
  for (const std::string& p : parts) {
    if (st.error_message().find(p) == std::string::npos) {
      return ::testing::AssertionFailure() << code_name(code) << " message \"" << st.error_message()
                                           << "\" lacks \"" << p << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult is_ok(const grpc::Status& st) {
  if (st.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << code_name(st.error_code()) << ": " << st.error_message();
}

/// Downloads stored matrix `id` in chunks of at most `chunk_bytes` (0: the server's default),
/// checking that the header comes first and the chunks follow in order, none empty. The bytes
/// replace *data; *chunks (when given) counts the chunks. Returns the stream's status.
inline grpc::Status download_stored(v1::Compute::Stub& stub, const std::string& id,
                                    std::uint64_t chunk_bytes, v1::StoredMatrix* header,
                                    std::string* data, int* chunks = nullptr,
                                    int deadline_s = 120) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(deadline_s));
  v1::DownloadMatrixRequest req;
  req.mutable_ref()->set_id(id);
  req.set_chunk_bytes(chunk_bytes);
  auto reader = stub.DownloadMatrix(&ctx, req);
  v1::DownloadMatrixResponse part;
  bool first = true;
  int count = 0;
  data->clear();
  while (reader->Read(&part)) {
    if (first) {
      EXPECT_TRUE(part.has_header());
      *header = part.header();
      first = false;
      continue;
    }
    EXPECT_TRUE(part.has_chunk());
    EXPECT_EQ(part.chunk().offset(), data->size());
    if (chunk_bytes != 0) {
      EXPECT_LE(part.chunk().data().size(), chunk_bytes);
    }
    EXPECT_FALSE(part.chunk().data().empty());
    *data += part.chunk().data();
    ++count;
  }
  if (chunks != nullptr) *chunks = count;
  return reader->Finish();
}

/// The values of a stored matrix (DownloadMatrix's chunks joined).
template <typename T>
std::vector<T> download_values(v1::Compute::Stub& stub, const v1::MatrixRef& ref) {
  v1::StoredMatrix header;
  std::string bytes;
  EXPECT_TRUE(is_ok(download_stored(stub, ref.id(), 0, &header, &bytes, nullptr, 300)));
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

/// The server still answers GetServerInfo (used after every error case).
inline ::testing::AssertionResult still_serving(v1::Compute::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetServerInfoRequest req;
  v1::GetServerInfoResponse resp;
  grpc::Status st = stub.GetServerInfo(&ctx, req, &resp);
  if (!st.ok()) {
    return ::testing::AssertionFailure()
           << "GetServerInfo failed: " << code_name(st.error_code()) << ": " << st.error_message();
  }
  if (resp.backend() != "cpu") return ::testing::AssertionFailure() << "backend " << resp.backend();
  return ::testing::AssertionSuccess();
}

// ---- metrics over plain HTTP -------------------------------------------------------------

/// GET http://127.0.0.1:port/path with a blocking POSIX socket; returns the body ("" on error).
inline std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  const std::string req =
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  std::size_t sent = 0;
  while (sent < req.size()) {
    const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, 0);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string response;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    response.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const std::size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || response.find(" 200 ") == std::string::npos ||
      body == std::string::npos) {
    return "";
  }
  return response.substr(body + 4);
}

/// One sample of the Prometheus text format.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

inline std::vector<Sample> parse_metrics(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    std::size_t i = line.find_first_of("{ ");
    if (i == std::string::npos) continue;
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') break;
        const std::string key = line.substr(i, eq - i);
        std::string value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) ++j;
          value += line[j];
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    std::istringstream rest(line.substr(i));
    std::string value;
    rest >> value;
    if (value == "+Inf") {
      s.value = INFINITY;
    } else {
      s.value = std::strtod(value.c_str(), nullptr);
    }
    out.push_back(std::move(s));
  }
  return out;
}

/// Sum of the samples named `name` whose labels include all of `labels` (0 when none).
inline double metric_value(const std::vector<Sample>& samples, const std::string& name,
                           const std::map<std::string, std::string>& labels) {
  double sum = 0;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) {
        match = false;
        break;
      }
    }
    if (match) sum += s.value;
  }
  return sum;
}

// ---- grpc.health.v1 through the generic stub ---------------------------------------------

/// One unary call of `path` with `request` as the raw message bytes (no protobuf in between);
/// returns the call's status and puts the raw response bytes in `*response`.
inline grpc::Status raw_unary_call(const std::shared_ptr<grpc::Channel>& channel,
                                   const std::string& path, const std::string& request,
                                   std::string* response = nullptr) {
  grpc::GenericStub generic(channel);
  grpc::Slice slice(request);
  grpc::ByteBuffer req_buf(&slice, 1);
  grpc::ByteBuffer resp_buf;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, path, grpc::StubOptions(), &req_buf, &resp_buf,
                    [&done](grpc::Status st) { done.set_value(std::move(st)); });
  grpc::Status st = done.get_future().get();
  if (st.ok() && response != nullptr) {
    grpc::Slice whole;
    if (!resp_buf.DumpToSingleSlice(&whole).ok()) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "dump");
    }
    response->assign(reinterpret_cast<const char*>(whole.begin()), whole.size());
  }
  return st;
}

/// Calls /grpc.health.v1.Health/Check for `service` ("" = the whole server) and returns the
/// decoded HealthCheckResponse.status (0 UNKNOWN, 1 SERVING, 2 NOT_SERVING), or -1 with the
/// call's status in `*status` when the call failed.
inline int health_check(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                        grpc::Status* status = nullptr) {
  // HealthCheckRequest { string service = 1; }
  std::string request;
  if (!service.empty()) {
    request.push_back(0x0a);
    request.push_back(static_cast<char>(service.size()));  // services here are < 128 bytes
    request += service;
  }
  std::string bytes;
  const grpc::Status st = raw_unary_call(channel, "/grpc.health.v1.Health/Check", request, &bytes);
  if (status != nullptr) *status = st;
  if (!st.ok()) return -1;
  // HealthCheckResponse { ServingStatus status = 1; } -- an empty message means 0 (UNKNOWN).
  if (bytes.empty()) return 0;
  if (bytes.size() != 2 || bytes[0] != 0x08) return -1;
  return static_cast<unsigned char>(bytes[1]);
}

}  // namespace gcompute::service_test
