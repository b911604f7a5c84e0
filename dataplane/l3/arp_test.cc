#include "dataplane/l3/arp.h"

#include <array>
#include <vector>

#include "dataplane/l3/test_frames.h"
#include "gtest/gtest.h"

namespace iwarp::dataplane {
namespace {

using testing::kOurIp;
using testing::kOurMac;
using testing::kPeerIp;
using testing::kPeerMac;

TEST(ArpFrame, RequestBytesAreExact) {
  std::array<uint8_t, 64> buf{};
  ASSERT_EQ(BuildArpRequest(buf, kOurMac, kOurIp, kPeerIp), 42u);
  const std::vector<uint8_t> expected = {
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // broadcast
      0x02, 0x00, 0x00, 0x00, 0x00, 0x01,  // our MAC
      0x08, 0x06,                          // ARP
      0x00, 0x01, 0x08, 0x00, 0x06, 0x04,  // Ethernet, IPv4, 6, 4
      0x00, 0x01,                          // request
      0x02, 0x00, 0x00, 0x00, 0x00, 0x01,  // sha
      0xc6, 0x12, 0x00, 0x01,              // spa 198.18.0.1
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // tha unknown
      0xc6, 0x12, 0x00, 0x02,              // tpa 198.18.0.2
  };
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + 42), expected);
}

TEST(ArpFrame, RequestRefusesShortBuffer) {
  std::array<uint8_t, 41> buf{};
  EXPECT_EQ(BuildArpRequest(buf, kOurMac, kOurIp, kPeerIp), 0u);
}

TEST(ArpCache, LookupHonoursLifetime) {
  ArpCache cache(16, 1000);
  cache.Insert(kPeerIp, kPeerMac, 3, 100);
  const ArpEntry* e = cache.Lookup(kPeerIp, 1099);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->mac, kPeerMac);
  EXPECT_EQ(e->port, 3);
  EXPECT_EQ(cache.Lookup(kPeerIp, 1100), nullptr);  // expired exactly at 100 + 1000
  EXPECT_EQ(cache.Lookup(kOurIp, 500), nullptr);
  EXPECT_EQ(cache.Lookup(0, 500), nullptr);
}

TEST(ArpCache, RefreshOnlyUpdatesLiveEntries) {
  ArpCache cache(16, 1000);
  EXPECT_FALSE(cache.Refresh(kPeerIp, kPeerMac, 0, 0));
  EXPECT_EQ(cache.Lookup(kPeerIp, 0), nullptr);
  cache.Insert(kPeerIp, kPeerMac, 0, 0);
  EXPECT_TRUE(cache.Refresh(kPeerIp, kOurMac, 1, 900));
  const ArpEntry* e = cache.Lookup(kPeerIp, 1800);  // lifetime restarted at 900
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->mac, kOurMac);
  EXPECT_EQ(e->port, 1);
  EXPECT_FALSE(cache.Refresh(kPeerIp, kPeerMac, 0, 1900));  // expired: no merge
}

TEST(ArpCache, StaysWithinCapacityUnderChurn) {
  ArpCache cache(10, 1'000'000);
  EXPECT_EQ(cache.capacity(), 12u);  // rounded up to whole 4-way sets
  for (uint32_t i = 1; i <= 5000; ++i) {
    cache.Insert(0x0a000000 + i, kPeerMac, 0, i);
    // The newest address is always present.
    ASSERT_NE(cache.Lookup(0x0a000000 + i, i), nullptr) << i;
    ASSERT_LE(cache.CountLive(i), cache.capacity());
  }
  EXPECT_EQ(cache.CountLive(5000), cache.capacity());
}

TEST(ArpCache, EvictsExpiredBeforeLive) {
  // One set only: four ways.
  ArpCache cache(4, 100);
  cache.Insert(1, kPeerMac, 0, 0);     // expires at 100
  cache.Insert(2, kPeerMac, 0, 50);    // 150
  cache.Insert(3, kPeerMac, 0, 60);    // 160
  cache.Insert(4, kPeerMac, 0, 70);    // 170
  cache.Insert(5, kPeerMac, 0, 120);   // replaces 1 (expired)
  EXPECT_EQ(cache.Lookup(1, 120), nullptr);
  for (uint32_t ip : {2u, 3u, 4u, 5u}) EXPECT_NE(cache.Lookup(ip, 120), nullptr) << ip;
  cache.Insert(6, kPeerMac, 0, 130);   // all live: evicts the earliest expiry (2)
  EXPECT_EQ(cache.Lookup(2, 130), nullptr);
  for (uint32_t ip : {3u, 4u, 5u, 6u}) EXPECT_NE(cache.Lookup(ip, 130), nullptr) << ip;
}

}  // namespace
}  // namespace iwarp::dataplane
