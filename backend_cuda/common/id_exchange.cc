// serve_id and fetch_id (cuda_id_exchange.h).
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "zerosim/cuda_id_exchange.h"

namespace zerosim::cuda {
namespace {

using Clock = std::chrono::steady_clock;

Diagnostic exchange_error(std::string message) {
  return Diagnostic{Severity::Error, "NCCL unique-id exchange", "", std::move(message),
                    "check MASTER_ADDR/MASTER_PORT: every rank must reach rank 0 there"};
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

int remaining_ms(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Sends or receives exactly n bytes before the deadline.
bool transfer(int fd, unsigned char* p, std::size_t n, bool send, Clock::time_point deadline) {
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(send ? POLLOUT : POLLIN), 0};
    if (::poll(&pfd, 1, remaining_ms(deadline)) <= 0) return false;
    const ssize_t k = send ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (k <= 0) {
      if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return false;
    }
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

std::string errno_text() { return std::strerror(errno); }  // NOLINT(concurrency-mt-unsafe)

}  // namespace

exec::Status serve_id(std::uint16_t port, std::uint32_t world,
                      const std::vector<unsigned char>& payload,
                      std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  Fd s(::socket(AF_INET6, SOCK_STREAM, 0));
  if (s.get() < 0) return exchange_error("socket: " + errno_text());
  const int on = 1, off = 0;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  ::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);  // IPv4 clients too
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  a.sin6_port = htons(port);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)  // NOLINT: sockets API
    return exchange_error("rank 0 cannot listen on port " + std::to_string(port) + ": " +
                          errno_text());
  if (::listen(s.get(), 128) != 0) return exchange_error("listen: " + errno_text());
  std::vector<unsigned char> msg = {'Z', 'S', 'I', 'D'};
  const auto n = static_cast<std::uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8)
    msg.push_back(static_cast<unsigned char>(n >> shift));
  msg.insert(msg.end(), payload.begin(), payload.end());
  for (std::uint32_t served = 1; served < world; ++served) {
    pollfd pfd{s.get(), POLLIN, 0};
    if (::poll(&pfd, 1, remaining_ms(deadline)) <= 0)
      return exchange_error("rank 0 served the id to " + std::to_string(served - 1) + " of " +
                            std::to_string(world - 1) + " ranks within " +
                            std::to_string(timeout.count()) + " ms");
    Fd c(::accept(s.get(), nullptr, nullptr));
    if (c.get() < 0) return exchange_error("accept: " + errno_text());
    if (!transfer(c.get(), msg.data(), msg.size(), true, deadline))
      return exchange_error("rank 0 could not send the id to a rank");
  }
  return std::nullopt;
}

exec::Status fetch_id(const std::string& addr, std::uint16_t port,
                      std::vector<unsigned char>& payload, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0)
    return exchange_error("cannot resolve MASTER_ADDR " + quote(addr) + ": " + gai_strerror(rc));
  std::string last = "no address";
  while (true) {
    for (addrinfo* ai = found; ai; ai = ai->ai_next) {
      Fd c(::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol));
      if (c.get() < 0) continue;
      if (::connect(c.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
        last = errno_text();
        continue;
      }
      unsigned char head[8];
      if (!transfer(c.get(), head, sizeof head, false, deadline)) {
        last = "the connection closed before the id came";
        continue;
      }
      ::freeaddrinfo(found);
      if (std::memcmp(head, "ZSID", 4) != 0)
        return exchange_error("expected a zerosim id server at " + addr + ":" +
                              std::to_string(port) + ", got another protocol");
      std::uint32_t n = 0;
      for (int i = 4; i < 8; ++i) n = (n << 8) | head[i];
      if (n > 4096)
        return exchange_error("expected an id of at most 4096 bytes, got " + std::to_string(n));
      payload.assign(n, 0);
      if (!transfer(c.get(), payload.data(), n, false, deadline))
        return exchange_error("the id from " + addr + " was cut short");
      return std::nullopt;
    }
    if (remaining_ms(deadline) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::freeaddrinfo(found);
  return exchange_error("no id from rank 0 at " + addr + ":" + std::to_string(port) + " within " +
                        std::to_string(timeout.count()) + " ms (last error: " + last + ")");
}

}  // namespace zerosim::cuda
