#include "dataplane/l3/ipv4.h"

#include <vector>

#include "common/checksum.h"
#include "dataplane/l3/test_frames.h"
#include "gtest/gtest.h"

namespace iwarp::dataplane {
namespace {

using testing::IcmpEcho;
using testing::Ipv4Fields;
using testing::Ipv4Frame;
using testing::kOurIp;
using testing::kPeerIp;

DropReason Parse(const std::vector<uint8_t>& frame, Ipv4Header* h = nullptr) {
  Ipv4Header tmp;
  return ParseIpv4(ByteSpan(frame).subspan(14), h ? h : &tmp);
}

TEST(Ipv4, AcceptsValidHeaderAndReportsFields) {
  Ipv4Header h;
  const auto f = Ipv4Frame({}, IcmpEcho(8, 1, 1, 10));
  ASSERT_EQ(Parse(f, &h), DropReason::kNone);
  EXPECT_EQ(h.header_len, 20u);
  EXPECT_EQ(h.total_len, 38u);
  EXPECT_EQ(h.protocol, 1);
  EXPECT_EQ(h.src, kPeerIp);
  EXPECT_EQ(h.dst, kOurIp);
}

TEST(Ipv4, IgnoresLinkLayerPadding) {
  auto f = Ipv4Frame({}, IcmpEcho(8, 1, 1, 0));
  f.resize(60, 0);  // Ethernet minimum frame
  Ipv4Header h;
  ASSERT_EQ(Parse(f, &h), DropReason::kNone);
  EXPECT_EQ(h.total_len, 28u);
}

TEST(Ipv4, AcceptsOptions) {
  Ipv4Fields ip;
  ip.version_ihl = 0x46;
  Ipv4Header h;
  ASSERT_EQ(Parse(Ipv4Frame(ip, IcmpEcho(8, 1, 1, 4)), &h), DropReason::kNone);
  EXPECT_EQ(h.header_len, 24u);
}

TEST(Ipv4, NamesEachMalformation) {
  std::vector<uint8_t> short_frame = Ipv4Frame({}, {});
  short_frame.resize(14 + 19);
  EXPECT_EQ(Parse(short_frame), DropReason::kIpv4Truncated);

  Ipv4Fields v6;
  v6.version_ihl = 0x65;
  EXPECT_EQ(Parse(Ipv4Frame(v6, IcmpEcho(8, 1, 1, 8))), DropReason::kIpv4BadVersion);

  Ipv4Fields ihl4;
  ihl4.version_ihl = 0x44;
  EXPECT_EQ(Parse(Ipv4Frame(ihl4, IcmpEcho(8, 1, 1, 8))), DropReason::kIpv4BadHeaderLength);

  Ipv4Fields ihl15;  // 60-byte header in a 36-byte datagram
  ihl15.version_ihl = 0x4f;
  ihl15.total_length = 36;
  EXPECT_EQ(Parse(Ipv4Frame(ihl15, IcmpEcho(8, 1, 1, 8))), DropReason::kIpv4BadHeaderLength);

  Ipv4Fields too_long;
  too_long.total_length = 1000;
  EXPECT_EQ(Parse(Ipv4Frame(too_long, IcmpEcho(8, 1, 1, 8))), DropReason::kIpv4Truncated);

  Ipv4Fields bad_sum;
  bad_sum.fix_checksum = false;
  bad_sum.checksum = 0xbeef;
  EXPECT_EQ(Parse(Ipv4Frame(bad_sum, IcmpEcho(8, 1, 1, 8))), DropReason::kIpv4BadChecksum);

  Ipv4Fields mf;
  mf.flags_frag = 0x2000;
  EXPECT_EQ(Parse(Ipv4Frame(mf, IcmpEcho(8, 1, 1, 8))), DropReason::kIpv4Fragment);
  Ipv4Fields last_frag;
  last_frag.flags_frag = 0x0001;  // offset 8 bytes, MF clear
  EXPECT_EQ(Parse(Ipv4Frame(last_frag, IcmpEcho(8, 1, 1, 8))), DropReason::kIpv4Fragment);
}

TEST(Ipv4, BadSourceAddresses) {
  EXPECT_TRUE(IsBadSourceAddress(0));
  EXPECT_TRUE(IsBadSourceAddress(0x7f000001));
  EXPECT_TRUE(IsBadSourceAddress(0xe0000001));
  EXPECT_TRUE(IsBadSourceAddress(0xffffffff));
  EXPECT_FALSE(IsBadSourceAddress(kPeerIp));
}

TEST(Ipv4, EchoReplyInPlaceMatchesIndependentComputation) {
  for (size_t payload : {0u, 1u, 56u, 1471u}) {
    auto f = Ipv4Frame({}, IcmpEcho(8, 0x4242, 7, payload));
    Ipv4Header h;
    ASSERT_EQ(Parse(f, &h), DropReason::kNone);
    std::vector<uint8_t> expected = f;
    // Independent construction: swapped addresses, TTL 64, type 0, both
    // checksums recomputed from scratch.
    uint8_t* ip = expected.data() + 14;
    StoreBe32(ip + 12, kOurIp);
    StoreBe32(ip + 16, kPeerIp);
    ip[8] = 64;
    StoreBe16(ip + 10, 0);
    StoreBe16(ip + 10, InternetChecksum(ByteSpan(ip, 20)));
    ip[20] = 0;
    StoreBe16(ip + 22, 0);
    StoreBe16(ip + 22, InternetChecksum(ByteSpan(ip + 20, 8 + payload)));

    MakeEchoReplyInPlace(MutableByteSpan(f).subspan(14), h);
    EXPECT_EQ(f, expected) << "payload " << payload;
  }
}

TEST(Ipv4, Formatting) {
  EXPECT_EQ(Ipv4ToString(0xc6120001), "198.18.0.1");
  EXPECT_EQ(testing::kPeerMac.ToString(), "02:00:00:00:00:02");
}

TEST(Ipv4, WriteIpv4HeaderParsesBack) {
  std::vector<uint8_t> pkt(20 + 33, 0);
  WriteIpv4Header(pkt, kIpProtoTcp, 0xc6120001, 0xc6120002, 33, 0x4242);
  Ipv4Header h;
  ASSERT_EQ(ParseIpv4(pkt, &h), DropReason::kNone);  // checksum verified there
  EXPECT_EQ(h.header_len, 20u);
  EXPECT_EQ(h.total_len, 53u);
  EXPECT_EQ(h.protocol, kIpProtoTcp);
  EXPECT_EQ(h.src, 0xc6120001u);
  EXPECT_EQ(h.dst, 0xc6120002u);
  EXPECT_EQ(pkt[kIpv4TtlOffset], kDefaultTtl);
  EXPECT_EQ(LoadBe16(pkt.data() + kIpv4FlagsFragOffset), 0x4000);
}

}  // namespace
}  // namespace iwarp::dataplane
