#include "collectives/transport/tcp/socket.h"

#include <chrono>

#include "gtest/gtest.h"

namespace ringlet::collectives::tcp {
namespace {

TEST(IsLoopbackAddressTest, TellsLoopbackFromOtherAddresses) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.0.1.1"));  // Debian's own host name.
  EXPECT_TRUE(IsLoopbackAddress("127.255.255.254"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("128.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0"));
  // Names and what is not an address are not taken for loopback.
  EXPECT_FALSE(IsLoopbackAddress("localhost"));
  EXPECT_FALSE(IsLoopbackAddress(""));
  EXPECT_FALSE(IsLoopbackAddress("127.0.0"));
}

TEST(IsLoopbackAddressTest, APeerOnThisHostComesOverLoopback) {
  Socket listener = Socket::Listen(0);
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  Socket client = Socket::Connect("127.0.1.1", listener.LocalPort(), deadline,
                                  "the listener");
  Socket peer = listener.Accept(deadline, nullptr, "the client");
  EXPECT_TRUE(IsLoopbackAddress(peer.PeerAddress())) << peer.PeerAddress();
}

}  // namespace
}  // namespace ringlet::collectives::tcp
