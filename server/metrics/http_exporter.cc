// SPDX-License-Identifier: Apache-2.0
#include "metrics/http_exporter.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace gcompute::server {
namespace {

using Clock = std::chrono::steady_clock;

absl::Status bind_error(const std::string& address, const std::string& what) {
  return absl::UnavailableError(
      absl::StrCat("cannot serve metrics on ", address, " (--metrics-listen): ", what));
}

std::string response(int code, const char* reason, const std::string& body, bool head_only,
                     const char* extra_headers = "") {
  return absl::StrCat("HTTP/1.1 ", code, " ", reason, "\r\n", extra_headers,
                      code == 200 ? "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                                  : "Content-Type: text/plain; charset=utf-8\r\n",
                      "Content-Length: ", body.size(), "\r\nConnection: close\r\n\r\n",
                      head_only ? std::string() : body);
}

// Where the request head ends (just past the blank line), or npos. Bare LF line ends are
// accepted as well (RFC 9112 section 2.2).
std::size_t head_end(const std::string& in) {
  const std::size_t crlf = in.find("\r\n\r\n");
  const std::size_t lf = in.find("\n\n");
  if (crlf == std::string::npos && lf == std::string::npos) return std::string::npos;
  return std::min(crlf == std::string::npos ? std::string::npos : crlf + 4,
                  lf == std::string::npos ? std::string::npos : lf + 2);
}

}  // namespace

/// One client: it reads a request head, is written its answer, then waits for the client to
/// close (after shutdown(SHUT_WR), so that unread input cannot turn the close into a reset
/// that discards the answer), all before `deadline`.
struct HttpExporter::Connection {
  enum class Stage { kReading, kWriting, kDraining, kClosed };
  int fd = -1;
  std::uint64_t serial = 0;  // accept order
  Clock::time_point deadline;
  Stage stage = Stage::kReading;
  std::string in, out;
  std::size_t sent = 0;

  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
    stage = Stage::kClosed;
  }
};

absl::StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::start(
    const std::string& address, std::vector<std::shared_ptr<prometheus::Collectable>> sources,
    HttpExporterOptions options) {
  if (options.max_connections < 1 || options.deadline.count() <= 0 ||
      options.max_request_bytes < 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics exporter: max_connections = ", options.max_connections,
        ", deadline = ", options.deadline.count(),
        " ms, max_request_bytes = ", options.max_request_bytes, " (need >= 1, > 0 and >= 16)"));
  }
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos) return bind_error(address, "expected HOST:PORT");
  std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int err = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
      err != 0) {
    return bind_error(address, gai_strerror(err));
  }
  int fd = -1;
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) break;
    last_error = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd < 0) return bind_error(address, last_error);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int bound_port = bound.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                             : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return bind_error(address, absl::StrCat("eventfd: ", why));
  }
  return std::unique_ptr<HttpExporter>(
      new HttpExporter(fd, wake_fd, bound_port, std::move(sources), options));
}

HttpExporter::HttpExporter(int fd, int wake_fd, int port,
                           std::vector<std::shared_ptr<prometheus::Collectable>> sources,
                           HttpExporterOptions options)
    : fd_(fd), wake_fd_(wake_fd), port_(port), sources_(std::move(sources)), options_(options) {
  thread_ = std::thread([this] { serve(); });
}

HttpExporter::~HttpExporter() {
  const std::uint64_t one = 1;
  while (::write(wake_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  ::close(wake_fd_);
}

std::string HttpExporter::respond(std::string_view head) const {
  // Request line: METHOD SP TARGET SP HTTP-VERSION.
  const std::string_view line = head.substr(0, head.find('\n'));
  const std::string_view request = line.substr(0, line.size() - (line.ends_with('\r') ? 1 : 0));
  const std::size_t sp1 = request.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : request.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || request.find(' ', sp2 + 1) != std::string_view::npos ||
      !request.substr(sp2 + 1).starts_with("HTTP/1.")) {
    return response(400, "Bad Request", "expected an HTTP/1.x request line\n", false);
  }
  const std::string_view method = request.substr(0, sp1);
  const std::string_view target = request.substr(sp1 + 1, sp2 - sp1 - 1);
  const bool head_only = method == "HEAD";
  if (method != "GET" && !head_only) {
    return response(405, "Method Not Allowed", "only GET and HEAD are served\n", false,
                    "Allow: GET, HEAD\r\n");
  }
  if (target.substr(0, target.find('?')) != "/metrics") {
    return response(404, "Not Found", "metrics are served at /metrics\n", head_only);
  }
  std::vector<prometheus::MetricFamily> families;
  for (const auto& source : sources_) {
    auto more = source->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  return response(200, "OK", prometheus::TextSerializer().Serialize(families), head_only);
}

void HttpExporter::on_readable(Connection& c) const {
  char buf[4096];
  while (c.stage == Connection::Stage::kReading || c.stage == Connection::Stage::kDraining) {
    const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // the client closed (or the connection failed): nothing more to do
      c.close();
      return;
    }
    if (c.stage == Connection::Stage::kDraining) continue;  // discarded
    c.in.append(buf, static_cast<std::size_t>(n));
    const std::size_t end = head_end(c.in);
    if (end != std::string::npos && end <= options_.max_request_bytes) {
      c.out = respond(std::string_view(c.in).substr(0, end));
    } else if (c.in.size() >= options_.max_request_bytes) {
      c.out = response(
          431, "Request Header Fields Too Large",
          absl::StrCat("the request head exceeds ", options_.max_request_bytes, " bytes\n"), false);
    } else {
      continue;
    }
    c.in.clear();
    c.stage = Connection::Stage::kWriting;
    on_writable(c);
    return;
  }
}

void HttpExporter::on_writable(Connection& c) const {
  while (c.sent < c.out.size()) {
    const ssize_t n =
        ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // poll for POLLOUT
    if (n <= 0) {
      c.close();
      return;
    }
    c.sent += static_cast<std::size_t>(n);
  }
  c.out = std::string();
  ::shutdown(c.fd, SHUT_WR);  // the answer is complete: FIN, then wait for the client's close
  c.stage = Connection::Stage::kDraining;
}

void HttpExporter::accept_pending(std::vector<Connection>& open, std::uint64_t& serial,
                                  Clock::time_point& paused_until) {
  while (true) {
    const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors or memory: the listen socket stays readable, so stop polling it
        // for a moment instead of spinning.
        paused_until = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    if (static_cast<int>(open.size()) >= options_.max_connections) {
      // Displace the oldest connection not being answered (reading or draining); if every
      // one is being written its answer, the oldest of those.
      auto victim = open.end();
      for (auto it = open.begin(); it != open.end(); ++it) {
        const bool answering = it->stage == Connection::Stage::kWriting;
        const bool victim_answering =
            victim != open.end() && victim->stage == Connection::Stage::kWriting;
        if (victim == open.end() || (victim_answering && !answering) ||
            (victim_answering == answering && it->serial < victim->serial)) {
          victim = it;
        }
      }
      victim->close();
      open.erase(victim);
    }
    Connection c;
    c.fd = client;
    c.serial = serial++;
    c.deadline = Clock::now() + options_.deadline;
    open.push_back(std::move(c));
  }
}

void HttpExporter::serve() {
  std::vector<Connection> open;
  std::vector<pollfd> fds;
  std::uint64_t serial = 0;
  Clock::time_point accept_paused_until{};
  while (true) {
    const Clock::time_point now = Clock::now();
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({now >= accept_paused_until ? fd_ : -1, POLLIN, 0});  // -1: not polled
    Clock::time_point wake_at =
        now >= accept_paused_until ? Clock::time_point::max() : accept_paused_until;
    for (const Connection& c : open) {
      fds.push_back(
          {c.fd, static_cast<short>(c.stage == Connection::Stage::kWriting ? POLLOUT : POLLIN), 0});
      wake_at = std::min(wake_at, c.deadline);
    }
    int timeout_ms = -1;
    if (wake_at != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now);
      timeout_ms = static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60'000));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // the destructor asks to stop
    for (std::size_t i = 0; i < open.size(); ++i) {
      Connection& c = open[i];
      const short ev = fds[i + 2].revents;
      if (ev == 0) continue;
      if (c.stage == Connection::Stage::kWriting) {
        if (ev & (POLLERR | POLLHUP)) {
          c.close();
        } else {
          on_writable(c);
        }
      } else {
        on_readable(c);  // POLLHUP/POLLERR show up as recv() == 0 or an error
      }
    }
    const Clock::time_point after = Clock::now();
    for (Connection& c : open) {
      if (c.stage != Connection::Stage::kClosed && after >= c.deadline) c.close();
    }
    std::erase_if(open, [](const Connection& c) { return c.stage == Connection::Stage::kClosed; });
    if (fds[1].revents != 0) accept_pending(open, serial, accept_paused_until);
  }
  for (Connection& c : open) c.close();
}

}  // namespace gcompute::server
