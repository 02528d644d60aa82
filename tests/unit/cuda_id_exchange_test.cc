// The NCCL unique-id exchange over TCP for torchrun/Slurm launches (cuda_id_exchange.h), on
// localhost: no GPU needed.
#include "zerosim/cuda_id_exchange.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace zerosim::cuda {
namespace {

// A port nothing listens on right now (bound then released).
std::uint16_t free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);  // NOLINT: sockets API
  socklen_t n = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &n);  // NOLINT: sockets API
  ::close(s);
  return ntohs(a.sin_port);
}

TEST(CudaIdExchange, EveryRankGetsRankZerosBytes) {
  const std::uint16_t port = free_port();
  std::vector<unsigned char> id(128);
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<unsigned char>(i * 7 + 3);
  std::vector<std::vector<unsigned char>> got(3);
  std::vector<exec::Status> status(3);
  std::vector<std::thread> clients;
  // The clients start first: they must retry until rank 0 listens.
  for (int r = 0; r < 3; ++r)
    clients.emplace_back([&, r] {
      status[r] = fetch_id("localhost", port, got[r], std::chrono::milliseconds(10000));
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const exec::Status served = serve_id(port, 4, id, std::chrono::milliseconds(10000));
  for (std::thread& t : clients) t.join();
  ASSERT_FALSE(served.has_value()) << served->to_string();
  for (int r = 0; r < 3; ++r) {
    ASSERT_FALSE(status[r].has_value()) << status[r]->to_string();
    EXPECT_EQ(got[r], id);
  }
}

TEST(CudaIdExchange, NoRankZeroEndsAtTheDeadline) {
  std::vector<unsigned char> got;
  const auto t0 = std::chrono::steady_clock::now();
  const exec::Status e = fetch_id("127.0.0.1", free_port(), got, std::chrono::milliseconds(300));
  const auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("no id from rank 0 at 127.0.0.1:"), std::string::npos) << e->message;
  EXPECT_LT(waited, std::chrono::seconds(5));
}

TEST(CudaIdExchange, MissingClientsEndTheServerAtTheDeadline) {
  const exec::Status e = serve_id(free_port(), 3, {1, 2, 3}, std::chrono::milliseconds(200));
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("rank 0 served the id to 0 of 2 ranks within 200 ms"),
            std::string::npos)
      << e->message;
}

TEST(CudaIdExchange, UnresolvableMasterIsOneLine) {
  std::vector<unsigned char> got;
  const exec::Status e =
      fetch_id("no-such-host.invalid", 29500, got, std::chrono::milliseconds(100));
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("cannot resolve MASTER_ADDR \"no-such-host.invalid\""),
            std::string::npos)
      << e->message;
}

}  // namespace
}  // namespace zerosim::cuda
