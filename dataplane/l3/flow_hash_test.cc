#include "dataplane/l3/flow_hash.h"

#include <array>
#include <set>
#include <vector>

#include "dataplane/l3/test_frames.h"
#include "gtest/gtest.h"

namespace iwarp::dataplane {
namespace {

// The key and expected values of the published RSS hash verification suite.
constexpr std::array<uint8_t, 40> kVerificationKey = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

constexpr uint32_t Ip(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

TEST(FlowHash, MatchesRssVerificationVectors) {
  struct Case {
    FlowKey key;
    uint32_t ipv4_only;
    uint32_t with_ports;
  };
  const Case cases[] = {
      {{Ip(66, 9, 149, 187), Ip(161, 142, 100, 80), 2794, 1766}, 0x323e8fc2, 0x51ccc178},
      {{Ip(199, 92, 111, 2), Ip(65, 69, 140, 83), 14230, 4739}, 0xd718262a, 0xc626b0ea},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FlowHash(c.key, kVerificationKey), c.with_ports);
    uint8_t addrs[8];
    StoreBe32(addrs, c.key.src_ip);
    StoreBe32(addrs + 4, c.key.dst_ip);
    EXPECT_EQ(ToeplitzHash(kVerificationKey, ByteSpan(addrs, 8)), c.ipv4_only);
  }
}

TEST(FlowHash, ProjectKeyIsSymmetric) {
  const FlowKey ab{Ip(198, 18, 0, 2), Ip(198, 18, 0, 1), 40000, 4791};
  const FlowKey ba{ab.dst_ip, ab.src_ip, ab.dst_port, ab.src_port};
  EXPECT_EQ(FlowHash(ab), FlowHash(ba));
}

TEST(FlowHash, OwnersCoverAllWorkers) {
  std::set<uint32_t> owners;
  for (uint16_t port = 1000; port < 1400; ++port) {
    const uint32_t o = OwnerOfHash(FlowHash({Ip(198, 18, 0, 2), Ip(198, 18, 0, 1), port, 4791}), 3);
    ASSERT_LT(o, 3u);
    owners.insert(o);
  }
  EXPECT_EQ(owners.size(), 3u);
  EXPECT_EQ(OwnerOfHash(0xffffffff, 1), 0u);
}

TEST(FlowHash, ExtractsTcpAndUdpTuplesOnly) {
  std::vector<uint8_t> ports = {0x9c, 0x40, 0x12, 0xb7, 0, 0, 0, 0};
  testing::Ipv4Fields tcp;
  tcp.protocol = 6;
  FlowKey k;
  ASSERT_TRUE(ExtractFlowKey(testing::Ipv4Frame(tcp, ports), &k));
  EXPECT_EQ(k.src_ip, testing::kPeerIp);
  EXPECT_EQ(k.dst_ip, testing::kOurIp);
  EXPECT_EQ(k.src_port, 40000);
  EXPECT_EQ(k.dst_port, 4791);

  testing::Ipv4Fields udp_opts;
  udp_opts.protocol = 17;
  udp_opts.version_ihl = 0x46;
  ASSERT_TRUE(ExtractFlowKey(testing::Ipv4Frame(udp_opts, ports), &k));
  EXPECT_EQ(k.src_port, 40000);

  testing::Ipv4Fields icmp;
  EXPECT_FALSE(ExtractFlowKey(testing::Ipv4Frame(icmp, ports), &k));
  testing::Ipv4Fields frag = tcp;
  frag.flags_frag = 0x2000;
  EXPECT_FALSE(ExtractFlowKey(testing::Ipv4Frame(frag, ports), &k));
  auto cut = testing::Ipv4Frame(tcp, ports);
  cut.resize(14 + 20 + 3);
  EXPECT_FALSE(ExtractFlowKey(cut, &k));
  EXPECT_FALSE(ExtractFlowKey(testing::ArpFrame(1, testing::kOurMac, testing::kPeerMac,
                                                 testing::kPeerIp, MacAddr{}, testing::kOurIp),
                              &k));
}

}  // namespace
}  // namespace iwarp::dataplane
