// SPDX-License-Identifier: Apache-2.0
#include "metrics/http_exporter.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace gcompute::server {
namespace {

absl::Status bind_error(const std::string& address, const std::string& what) {
  return absl::UnavailableError(
      absl::StrCat("cannot serve metrics on ", address, " (--metrics-listen): ", what));
}

void send_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::start(
    const std::string& address, std::vector<std::shared_ptr<prometheus::Collectable>> sources) {
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
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
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
  return std::unique_ptr<HttpExporter>(new HttpExporter(fd, bound_port, std::move(sources)));
}

HttpExporter::HttpExporter(int fd, int port,
                           std::vector<std::shared_ptr<prometheus::Collectable>> sources)
    : fd_(fd), port_(port), sources_(std::move(sources)) {
  thread_ = std::thread([this] { serve(); });
}

HttpExporter::~HttpExporter() {
  stopping_.store(true);
  ::shutdown(fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
}

void HttpExporter::serve() {
  while (!stopping_.load()) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;  // wake up regularly to notice stopping_
    const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    // A scraper that stalls must not hold the exporter: bound the read.
    timeval timeout{2, 0};
    ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    answer(client);
    ::close(client);
  }
}

void HttpExporter::answer(int client) const {
  std::string request;
  char buf[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    const ssize_t n = ::recv(client, buf, sizeof(buf), 0);
    if (n <= 0) break;
    request.append(buf, static_cast<std::size_t>(n));
  }
  const bool metrics =
      request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0;
  if (!metrics) {
    send_all(client, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return;
  }
  std::vector<prometheus::MetricFamily> families;
  for (const auto& source : sources_) {
    auto more = source->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  const std::string body = prometheus::TextSerializer().Serialize(families);
  send_all(client, absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; "
                                "charset=utf-8\r\nContent-Length: ",
                                body.size(), "\r\nConnection: close\r\n\r\n", body));
}

}  // namespace gcompute::server
