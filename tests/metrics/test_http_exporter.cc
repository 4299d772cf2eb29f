// SPDX-License-Identifier: Apache-2.0
// HttpExporter: HTTP/1.1 framing (Content-Length, Connection: close, HEAD, 400/404/405/431),
// and that no client can hold the endpoint: idle connections, a slow-loris sender, a client
// that never reads its answer, more connections than the cap, many scrapes at once. Every
// "prompt" scrape must be answered within kPrompt; the clients here time out after 3 s so that
// a blocked exporter fails the test instead of hanging it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "metrics/http_exporter.hpp"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace gcompute::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kPrompt{200};

/// A client socket connected to 127.0.0.1:port, closed on destruction. Reads and writes
/// time out after `timeout`.
class Client {
 public:
  explicit Client(int port, milliseconds timeout = milliseconds(3000), int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    set_timeout(timeout);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  void set_timeout(milliseconds t) {
    timeval tv{static_cast<time_t>(t.count() / 1000),
               static_cast<suseconds_t>((t.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  bool send(const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  }
  /// Everything until the server closes; `eof` says whether it did (else a timeout/error).
  std::string read_all(bool* eof = nullptr) {
    std::string out;
    char buf[65536];
    while (true) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n > 0) {
        out.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (eof != nullptr) *eof = n == 0;
      return out;
    }
  }
  /// Whether the server has closed the connection: EOF or reset within `wait`.
  bool closed_by_server(milliseconds wait) {
    set_timeout(wait);
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct Reply {
  bool complete = false;  // the server closed after a full response
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

Reply parse(const std::string& raw, bool eof) {
  Reply r;
  const std::size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  std::vector<std::string> lines;
  for (std::size_t pos = 0; pos < end;) {
    const std::size_t next = raw.find("\r\n", pos);
    lines.push_back(raw.substr(pos, next - pos));
    pos = next + 2;
  }
  if (lines.empty() || lines[0].rfind("HTTP/1.1 ", 0) != 0) return r;
  if (!absl::SimpleAtoi(lines[0].substr(9, 3), &r.status)) return r;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::size_t colon = lines[i].find(':');
    if (colon == std::string::npos) return r;
    r.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  r.body = raw.substr(end + 4);
  r.complete = eof;
  return r;
}

/// Sends `request` on a new connection and reads the answer until the server closes.
Reply exchange(int port, const std::string& request) {
  Client c(port);
  if (!c.connected() || !c.send(request)) return {};
  bool eof = false;
  const std::string raw = c.read_all(&eof);
  return parse(raw, eof);
}

Reply scrape(int port) {
  return exchange(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n");
}

/// A complete 200 answer with a body of exactly Content-Length bytes.
void expect_metrics(const Reply& r) {
  ASSERT_TRUE(r.complete) << "no complete answer (timed out?)";
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-length"), std::to_string(r.body.size()));
  EXPECT_EQ(r.headers.at("connection"), "close");
  EXPECT_EQ(r.headers.at("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body.find("gc_test_scrapes_total"), std::string::npos) << r.body;
}

/// A scrape that must be answered within kPrompt.
void expect_prompt_scrape(int port) {
  const Clock::time_point start = Clock::now();
  const Reply r = scrape(port);
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  expect_metrics(r);
  EXPECT_LT(took.count(), kPrompt.count()) << "scrape took " << took.count() << " ms";
}

/// A registry with one counter (3). The first `big_scrapes` collections also add 5.5 MB of
/// gauges (55 labels of 100 KB): an answer larger than the socket buffers between the
/// exporter and a client that does not read (a loopback send buffer grows to 4 MiB).
class Source : public prometheus::Collectable {
 public:
  explicit Source(int big_scrapes = 0) : big_left_(big_scrapes) {
    prometheus::BuildCounter()
        .Name("gc_test_scrapes_total")
        .Help("test")
        .Register(*registry_)
        .Add({})
        .Increment(3);
  }
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out = registry_->Collect();
    if (big_left_.fetch_sub(1) > 0) {
      prometheus::MetricFamily f{"gc_test_big", "padding", prometheus::MetricType::Gauge, {}};
      for (int i = 0; i < 55; ++i) {
        prometheus::ClientMetric m;
        m.label.push_back({"series", absl::StrCat(i, "-", std::string(100000, 'x'))});
        m.gauge.value = i;
        f.metric.push_back(std::move(m));
      }
      out.push_back(std::move(f));
    }
    return out;
  }

 private:
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  mutable std::atomic<int> big_left_;
};

std::unique_ptr<HttpExporter> start(std::shared_ptr<Source> source,
                                    HttpExporterOptions options = {}) {
  auto exporter = HttpExporter::start("127.0.0.1:0", {source}, options);
  EXPECT_TRUE(exporter.ok()) << exporter.status();
  return exporter.ok() ? *std::move(exporter) : nullptr;
}

TEST(HttpExporter, ServesMetricsWithHttp11Framing) {
  auto exporter = start(std::make_shared<Source>());
  ASSERT_NE(exporter, nullptr);
  ASSERT_GT(exporter->port(), 0);
  expect_metrics(scrape(exporter->port()));
  // A query string, HTTP/1.0, and bare LF line ends are served the same.
  expect_metrics(exchange(exporter->port(), "GET /metrics?name[]=x HTTP/1.0\r\n\r\n"));
  expect_metrics(exchange(exporter->port(), "GET /metrics HTTP/1.1\nHost: x\n\n"));
}

TEST(HttpExporter, HeadAndErrorsAreFramedToo) {
  auto exporter = start(std::make_shared<Source>(), {.max_request_bytes = 1024});
  ASSERT_NE(exporter, nullptr);
  const int port = exporter->port();
  const Reply get = scrape(port);
  ASSERT_TRUE(get.complete);

  const Reply head = exchange(port, "HEAD /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(head.complete);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers.at("content-length"), std::to_string(get.body.size()));
  EXPECT_TRUE(head.body.empty());

  struct Case {
    std::string request;
    int status;
  };
  const Case cases[] = {
      {"GET / HTTP/1.1\r\n\r\n", 404},
      {"GET /metricsx HTTP/1.1\r\n\r\n", 404},
      {"HEAD /other HTTP/1.1\r\n\r\n", 404},
      {"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405},
      {"garbage\r\n\r\n", 400},
      {"GET /metrics\r\n\r\n", 400},
      {"GET  /metrics HTTP/1.1\r\n\r\n", 400},
      {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400},
      {"GET /metrics HTTP/1.1\r\nX: " + std::string(2000, 'a'), 431},  // no end of head
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request.substr(0, 40));
    const Reply r = exchange(port, c.request);
    ASSERT_TRUE(r.complete);
    EXPECT_EQ(r.status, c.status);
    EXPECT_EQ(r.headers.at("connection"), "close");
    if (c.request.rfind("HEAD", 0) == 0) {
      EXPECT_TRUE(r.body.empty());
    } else {
      EXPECT_EQ(r.headers.at("content-length"), std::to_string(r.body.size()));
      EXPECT_FALSE(r.body.empty());
    }
    if (c.status == 405) {
      EXPECT_EQ(r.headers.at("allow"), "GET, HEAD");
    }
  }
  // respond() on its own: the same answers without a socket.
  EXPECT_EQ(exporter->respond("GET /metrics HTTP/1.1\r\n").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(exporter->respond("").rfind("HTTP/1.1 400 ", 0), 0u);
}

/// Appends `count` connected clients that send nothing, opened `gap` apart, to `*clients`.
void connect_idle(int port, int count, milliseconds gap,
                  std::vector<std::unique_ptr<Client>>* clients) {
  for (int i = 0; i < count; ++i) {
    clients->push_back(std::make_unique<Client>(port));
    ASSERT_TRUE(clients->back()->connected());
    std::this_thread::sleep_for(gap);
  }
}

TEST(HttpExporter, IdleAndSlowLorisClientsDoNotDelayAScrape) {
  auto exporter = start(std::make_shared<Source>());
  ASSERT_NE(exporter, nullptr);
  const int port = exporter->port();
  // Idle connections that never send, and a client sending one byte every 100 ms.
  std::vector<std::unique_ptr<Client>> idle;
  ASSERT_NO_FATAL_FAILURE(connect_idle(port, 10, milliseconds(0), &idle));
  std::atomic<bool> stop{false};
  std::thread loris([port, &stop] {
    Client c(port);
    const std::string request = "GET /metrics HTTP/1.1\r\nX-Slow: " + std::string(100, 'z');
    for (std::size_t i = 0; i < request.size() && !stop; ++i) {
      if (!c.send(request.substr(i, 1))) return;
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  std::this_thread::sleep_for(milliseconds(300));  // every connection has been accepted
  for (int i = 0; i < 5; ++i) {
    expect_prompt_scrape(port);
    if (HasFatalFailure()) break;
  }
  stop = true;
  loris.join();
}

TEST(HttpExporter, ClientThatNeverReadsDoesNotDelayAScrape) {
  auto exporter = start(std::make_shared<Source>(/*big_scrapes=*/1));
  ASSERT_NE(exporter, nullptr);
  const int port = exporter->port();
  // The stalled client gets the 5.5 MB answer and reads only its first byte: from then on the
  // exporter has more to write to it than the socket buffers take.
  Client stalled(port, milliseconds(3000), /*rcvbuf=*/4096);
  ASSERT_TRUE(stalled.send("GET /metrics HTTP/1.1\r\n\r\n"));
  char first = 0;
  ASSERT_EQ(::recv(stalled.fd(), &first, 1, 0), 1);
  std::this_thread::sleep_for(milliseconds(100));
  expect_prompt_scrape(port);
  expect_prompt_scrape(port);
}

TEST(HttpExporter, ConnectionsBeyondTheCapDisplaceTheOldest) {
  auto exporter = start(std::make_shared<Source>(), {.max_connections = 4});
  ASSERT_NE(exporter, nullptr);
  const int port = exporter->port();
  std::vector<std::unique_ptr<Client>> idle;
  // 10 ms apart: accepted in this order.
  ASSERT_NO_FATAL_FAILURE(connect_idle(port, 12, milliseconds(10), &idle));
  expect_prompt_scrape(port);
  // The scrape displaced one more: the 9 oldest are closed, the 3 newest still open.
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(idle[i]->closed_by_server(milliseconds(i < 9 ? 1000 : 50)), i < 9) << "client " << i;
  }
}

TEST(HttpExporter, DeadlineClosesIdleAndSlowConnections) {
  auto exporter = start(std::make_shared<Source>(), {.deadline = milliseconds(300)});
  ASSERT_NE(exporter, nullptr);
  const int port = exporter->port();
  const Clock::time_point start_time = Clock::now();
  Client idle(port);
  Client slow(port);
  ASSERT_TRUE(idle.connected() && slow.connected());
  // The slow client keeps sending, a byte per 50 ms: the deadline is total, not per read.
  bool slow_closed = false;
  for (int i = 0; i < 40 && !slow_closed; ++i) {
    slow_closed = !slow.send("G") || slow.closed_by_server(milliseconds(50));
  }
  const auto slow_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - start_time);
  EXPECT_TRUE(slow_closed);
  EXPECT_GE(slow_ms.count(), 250);
  EXPECT_LT(slow_ms.count(), 1500);
  EXPECT_TRUE(idle.closed_by_server(milliseconds(1500)));
  // A prompt client is still answered in full.
  expect_metrics(scrape(port));
}

TEST(HttpExporter, ManyConcurrentScrapes) {
  auto exporter = start(std::make_shared<Source>());
  ASSERT_NE(exporter, nullptr);
  const int port = exporter->port();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([port, &ok] {
      for (int i = 0; i < 25; ++i) {
        const Reply r = scrape(port);
        if (r.complete && r.status == 200 && r.headers.count("content-length") != 0 &&
            r.headers.at("content-length") == std::to_string(r.body.size())) {
          ++ok;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 8 * 25);
}

TEST(HttpExporter, StopsPromptlyWithOpenConnections) {
  auto exporter = start(std::make_shared<Source>());
  ASSERT_NE(exporter, nullptr);
  const int port = exporter->port();
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 5; ++i) idle.push_back(std::make_unique<Client>(port));
  Client half(port);
  ASSERT_TRUE(half.send("GET /metr"));
  std::this_thread::sleep_for(milliseconds(100));
  const Clock::time_point start_time = Clock::now();
  exporter.reset();
  EXPECT_LT(std::chrono::duration_cast<milliseconds>(Clock::now() - start_time).count(), 500);
  for (auto& c : idle) EXPECT_TRUE(c->closed_by_server(milliseconds(1000)));
  EXPECT_TRUE(half.closed_by_server(milliseconds(1000)));
}

TEST(HttpExporter, RejectsBadAddressesAndOptions) {
  auto source = std::make_shared<Source>();
  EXPECT_EQ(HttpExporter::start("nonsense", {source}).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(HttpExporter::start("256.0.0.1:0", {source}).status().code(),
            absl::StatusCode::kUnavailable);
  HttpExporterOptions o;
  o.max_connections = 0;
  const absl::Status st = HttpExporter::start("127.0.0.1:0", {source}, o).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("max_connections = 0"), std::string::npos) << st;
  // The port is taken while an exporter holds it.
  auto first = start(source);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(
      HttpExporter::start(absl::StrCat("127.0.0.1:", first->port()), {source}).status().code(),
      absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gcompute::server
