#include "collectives/transport/host/host_group.h"

#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ringlet::collectives::host {
namespace {

// All K^2 links up front once took 128 KiB each: --devices=cpu:1000 was
// killed by the out-of-memory killer at 23.7 GB. A group now holds only the
// links its algorithm uses.
TEST(HostGroupTest, LargeGroupsMakeLinksOnlyWhenUsed) {
  HostGroup group(2048, /*cores=*/2);  // Eagerly: 512 GiB of links.
  EXPECT_EQ(group.links_made(), 0);
  // A ring's links: each rank to the next.
  for (int r = 0; r < group.size(); ++r) {
    group.link(r, (r + 1) % group.size());
  }
  EXPECT_EQ(group.links_made(), 2048);
  EXPECT_EQ(&group.link(5, 6), &group.link(5, 6));
  EXPECT_NE(&group.link(5, 6), &group.link(6, 5));
}

TEST(HostGroupTest, BothEndsRacingForALinkGetTheSameOne) {
  for (int trial = 0; trial < 50; ++trial) {
    HostGroup group(2, 2);
    std::vector<Link*> seen(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] { seen[t] = &group.link(0, 1); });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(std::set<Link*>(seen.begin(), seen.end()).size(), 1u);
    EXPECT_EQ(group.links_made(), 1);
  }
}

TEST(HostGroupTest, ALinkToARankOfAnotherProcessIsRefused) {
  HostGroup group(3, 2, {true, true, false});
  EXPECT_NO_THROW(group.link(0, 1));
  EXPECT_THROW(group.link(1, 2), std::logic_error);
}

}  // namespace
}  // namespace ringlet::collectives::host
