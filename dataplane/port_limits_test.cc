#include "dataplane/port_limits.h"

#include "gtest/gtest.h"

namespace iwarp::dataplane {
namespace {

// What Debian's DPDK 22.11 reports (rte_eth_dev_info_get; max_mtu stays at
// ethdev's "not reported" default for these two).
constexpr DeviceFrameLimits kMemif{68, kUnlimitedMtu, 1518};
constexpr DeviceFrameLimits kTap{68, kUnlimitedMtu, 1522};
// A device that reports both limits (its overhead includes a VLAN tag).
constexpr DeviceFrameLimits kJumboNic{68, 9702, 9728};

TEST(PortLimitsTest, OverheadFollowsTheDeviceOrEthernetDefault) {
  EXPECT_EQ(L2Overhead(kMemif), 18u);
  EXPECT_EQ(L2Overhead(kJumboNic), 26u);
  EXPECT_EQ(DeviceMaxMtu(kMemif), 1500u);
  EXPECT_EQ(DeviceMaxMtu(kTap), 1504u);
  EXPECT_EQ(DeviceMaxMtu(kJumboNic), 9702u);
}

TEST(PortLimitsTest, JumboMtuOnMemifNamesPortLimitAndFix) {
  absl::Status s = CheckPortMtu("m0", "net_memif", 9000, kMemif);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "port 'm0' (net_memif): mtu 9000 needs 9018-byte frames but net_memif accepts at "
            "most 1518 (mtu 1500); lower ports[].mtu to 1500 or use a device that carries "
            "jumbo frames (a NIC; between two processes net_vhost and net_virtio_user; or "
            "net_pcap on a veth pair with iface=IF,phy_mac=1)");
}

TEST(PortLimitsTest, LimitsAreInclusive) {
  EXPECT_TRUE(CheckPortMtu("m0", "net_memif", 1500, kMemif).ok());
  EXPECT_FALSE(CheckPortMtu("m0", "net_memif", 1501, kMemif).ok());
  EXPECT_TRUE(CheckPortMtu("t0", "net_tap", 1504, kTap).ok());
  EXPECT_TRUE(CheckPortMtu("n0", "ice", 9000, kJumboNic).ok());
  EXPECT_TRUE(CheckPortMtu("n0", "ice", 9702, kJumboNic).ok());
  absl::Status s = CheckPortMtu("n0", "ice", 9703, kJumboNic);
  EXPECT_EQ(s.message(),
            "port 'n0' (ice): mtu 9703 needs 9729-byte frames but ice accepts at most 9728 "
            "(mtu 9702); lower ports[].mtu to 9702 or use a device that carries jumbo frames "
            "(a NIC; between two processes net_vhost and net_virtio_user; or net_pcap on a "
            "veth pair with iface=IF,phy_mac=1)");
}

// net_vhost reports no max_mtu (ethdev's default 65535) and an unlimited
// max_rx_pktlen; the Ethernet header and CRC are then the overhead.
TEST(PortLimitsTest, UnlimitedFrameLengthCarriesJumboWithDefaultOverhead) {
  constexpr DeviceFrameLimits kNoLimit{68, kUnlimitedMtu, 0xffffffffu};
  EXPECT_EQ(L2Overhead(kNoLimit), kDefaultL2Overhead);
  EXPECT_EQ(DeviceMaxMtu(kNoLimit), kUnlimitedMtu);
  EXPECT_TRUE(CheckPortMtu("v0", "net_vhost", 9000, kNoLimit).ok());
  EXPECT_EQ(MbufDataRoomFor(9000, L2Overhead(kNoLimit), 128, 2176), 128u + 9000u + 18u);
}

TEST(PortLimitsTest, MtuBelowDeviceMinimumIsNamed) {
  absl::Status s = CheckPortMtu("m0", "net_memif", 67, kMemif);
  EXPECT_EQ(s.message(),
            "port 'm0' (net_memif): mtu 67 is below the device's minimum 68; raise ports[].mtu "
            "to at least 68");
}

TEST(PortLimitsTest, DataRoomFollowsTheMtu) {
  // The default 2176 carries MTU 1500 (128 + 1500 + 18 = 1646).
  EXPECT_EQ(MbufDataRoomFor(1500, 18, 128, 2176), 2176u);
  // MTU 9000: 128 headroom + 9018-byte frame.
  EXPECT_EQ(MbufDataRoomFor(9000, 18, 128, 2176), 9146u);
  // A larger configured room is kept.
  EXPECT_EQ(MbufDataRoomFor(9000, 18, 128, 10240), 10240u);
  EXPECT_EQ(MbufDataRoomFor(9600, 26, 128, 1024), 9754u);
}

TEST(PortLimitsTest, VirtioUserQueueSizeComesFromTheDevargOrTheDriverDefault) {
  EXPECT_EQ(VirtioUserQueueSize("net_virtio_user0,path=/run/v.sock,queues=1,queue_size=1024"),
            1024u);
  EXPECT_EQ(VirtioUserQueueSize("net_virtio_user0,queue_size=512,path=/run/v.sock"), 512u);
  EXPECT_EQ(VirtioUserQueueSize("net_virtio_user0,path=/run/v.sock"), 256u);
  EXPECT_EQ(VirtioUserQueueSize("net_virtio_user0,path=/run/xqueue_size=64"), 256u);
  EXPECT_EQ(VirtioUserQueueSize("net_virtio_user0,queue_size=big"), 256u);
  EXPECT_EQ(VirtioUserQueueSize("net_virtio_user0,queue_size=4"), 256u);
}

}  // namespace
}  // namespace iwarp::dataplane
