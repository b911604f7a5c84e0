#include "dataplane/l3/stack.h"

#include <memory>
#include <vector>

#include "dataplane/l3/ipv4.h"
#include "dataplane/l3/test_frames.h"
#include "gtest/gtest.h"

namespace iwarp::dataplane {
namespace {

using testing::ArpFrame;
using testing::IcmpEcho;
using testing::Ipv4Fields;
using testing::Ipv4Frame;
using testing::kOurIp;
using testing::kOurMac;
using testing::kPeerIp;
using testing::kPeerMac;

constexpr uint16_t kPort = 3;

class FakeSink : public L3Sink {
 public:
  struct Resolved {
    PacketHandle pkt;
    uint16_t port;
    MacAddr src;
    MacAddr dst;
  };
  struct Learned {
    uint32_t ip;
    uint16_t port;
    MacAddr mac;
  };
  void SendFrame(uint16_t port, ByteSpan frame) override {
    sent_ports.push_back(port);
    sent.emplace_back(frame.begin(), frame.end());
  }
  void TransmitResolved(PacketHandle pkt, uint16_t port, const MacAddr& src,
                        const MacAddr& dst) override {
    resolved.push_back({pkt, port, src, dst});
  }
  void FreePacket(PacketHandle pkt) override { freed.push_back(pkt); }
  void NeighborLearned(uint32_t ip, uint16_t port, const MacAddr& mac) override {
    learned.push_back({ip, port, mac});
  }

  std::vector<std::vector<uint8_t>> sent;
  std::vector<uint16_t> sent_ports;
  std::vector<Resolved> resolved;
  std::vector<PacketHandle> freed;
  std::vector<Learned> learned;
};

class StackTest : public ::testing::Test {
 protected:
  StackTest() { Reset(L3Options{1024, 300, 4, 1000}); }

  void Reset(const L3Options& o, uint32_t mtu = 0) {
    L3Port port;
    port.mtu = mtu;
    port.port_id = kPort;
    port.mac = kOurMac;
    port.addrs = {{kOurIp, 24}};
    port.gateway = 0xc61200fe;  // 198.18.0.254
    stats_ = std::make_unique<LcoreStats>();
    sink_ = FakeSink{};
    stack_ = std::make_unique<L3Stack>(std::span<const L3Port>(&port, 1), o, stats_.get(), &sink_);
  }

  RxAction Handle(std::vector<uint8_t>& frame, uint64_t now = 0) {
    return stack_->HandleFrame(kPort, frame, now);
  }
  // Counted drops other than `reason`.
  uint64_t OtherDrops(DropReason reason) const {
    return stats_->DroppedTotal() - stats_->Dropped(reason);
  }
  void ExpectDrop(std::vector<uint8_t> frame, DropReason reason) {
    const uint64_t before = stats_->Dropped(reason);
    const uint64_t total_before = stats_->DroppedTotal();
    RxAction a = Handle(frame);
    EXPECT_EQ(a.kind, RxAction::Kind::kDrop);
    EXPECT_EQ(a.reason, reason) << DropReasonName(a.reason);
    EXPECT_EQ(stats_->Dropped(reason), before + 1) << DropReasonName(reason);
    EXPECT_EQ(stats_->DroppedTotal(), total_before + 1);
  }

  std::unique_ptr<LcoreStats> stats_;
  FakeSink sink_;
  std::unique_ptr<L3Stack> stack_;
};

TEST_F(StackTest, AnswersArpRequestForOurAddressWithExactReply) {
  auto f = ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kPeerIp, MacAddr{}, kOurIp);
  RxAction a = Handle(f, 5);
  ASSERT_EQ(a.kind, RxAction::Kind::kTransmit);
  ASSERT_EQ(a.tx_length, 42);
  const std::vector<uint8_t> expected = {
      0x02, 0x00, 0x00, 0x00, 0x00, 0x02,  // to the requester
      0x02, 0x00, 0x00, 0x00, 0x00, 0x01,  // from us
      0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04,
      0x00, 0x02,                          // reply
      0x02, 0x00, 0x00, 0x00, 0x00, 0x01,  // sha = our MAC
      0xc6, 0x12, 0x00, 0x01,              // spa = 198.18.0.1
      0x02, 0x00, 0x00, 0x00, 0x00, 0x02,  // tha = requester
      0xc6, 0x12, 0x00, 0x02,              // tpa = requester's address
  };
  EXPECT_EQ(std::vector<uint8_t>(f.begin(), f.begin() + 42), expected);
  EXPECT_EQ(stats_->arp_requests_in.Get(), 1u);
  EXPECT_EQ(stats_->arp_replies_out.Get(), 1u);
  EXPECT_EQ(stats_->DroppedTotal(), 0u);
  // RFC 826: the requester was learned, and the other workers were told.
  const ArpEntry* e = stack_->arp_cache().Lookup(kPeerIp, 5);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->mac, kPeerMac);
  ASSERT_EQ(sink_.learned.size(), 1u);
  EXPECT_EQ(sink_.learned[0].ip, kPeerIp);
  EXPECT_EQ(sink_.learned[0].port, kPort);
}

TEST_F(StackTest, ArpRequestForOtherAddressIsNotLearnedNorAnswered) {
  ExpectDrop(ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kPeerIp, MacAddr{}, 0xc6120009),
             DropReason::kArpNotForUs);
  EXPECT_EQ(stack_->arp_cache().Lookup(kPeerIp, 0), nullptr);
  EXPECT_TRUE(sink_.learned.empty());
  EXPECT_EQ(stats_->arp_requests_in.Get(), 1u);
  EXPECT_EQ(stats_->arp_replies_out.Get(), 0u);
}

TEST_F(StackTest, GratuitousArpUpdatesKnownNeighbourOnly) {
  auto req = ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kPeerIp, MacAddr{}, kOurIp);
  Handle(req);
  const MacAddr moved{{0x02, 0, 0, 0, 0, 0x99}};
  auto garp = ArpFrame(1, MacAddr::Broadcast(), moved, kPeerIp, MacAddr{}, kPeerIp);
  EXPECT_EQ(Handle(garp, 10).kind, RxAction::Kind::kConsumed);
  EXPECT_EQ(stack_->arp_cache().Lookup(kPeerIp, 10)->mac, moved);
  // Unknown sender: not added.
  ExpectDrop(ArpFrame(1, MacAddr::Broadcast(), moved, 0xc6120007, MacAddr{}, 0xc6120007),
             DropReason::kArpNotForUs);
  EXPECT_EQ(stack_->arp_cache().Lookup(0xc6120007, 10), nullptr);
}

TEST_F(StackTest, ArpReplyIsLearnedAndConsumed) {
  auto rep = ArpFrame(2, kOurMac, kPeerMac, kPeerIp, kOurMac, kOurIp);
  EXPECT_EQ(Handle(rep).kind, RxAction::Kind::kConsumed);
  EXPECT_EQ(stats_->arp_replies_in.Get(), 1u);
  EXPECT_NE(stack_->arp_cache().Lookup(kPeerIp, 0), nullptr);
}

TEST_F(StackTest, ArpMalformationsAreNamed) {
  auto f = ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kPeerIp, MacAddr{}, kOurIp);
  auto truncated = f;
  truncated.resize(41);
  ExpectDrop(truncated, DropReason::kArpTruncated);
  auto htype = f;
  htype[15] = 6;  // IEEE 802 hardware type
  ExpectDrop(htype, DropReason::kArpUnsupported);
  auto plen = f;
  plen[19] = 16;
  ExpectDrop(plen, DropReason::kArpUnsupported);
  auto op = f;
  op[21] = 3;  // RARP
  ExpectDrop(op, DropReason::kArpBadOpcode);
  ExpectDrop(ArpFrame(1, MacAddr::Broadcast(), MacAddr::Broadcast(), kPeerIp, MacAddr{}, kOurIp),
             DropReason::kEthBadSource);
  auto multicast_sha = f;
  multicast_sha[22] = 0x01;  // sha with the group bit, Ethernet source fine
  ExpectDrop(multicast_sha, DropReason::kArpBadSender);
  ExpectDrop(ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kOurIp, MacAddr{}, kOurIp),
             DropReason::kArpBadSender);
  EXPECT_EQ(stack_->arp_cache().CountLive(0), 0u);
}

TEST_F(StackTest, ArpProbeIsAnsweredButNotLearned) {
  auto probe = ArpFrame(1, MacAddr::Broadcast(), kPeerMac, 0, MacAddr{}, kOurIp);
  EXPECT_EQ(Handle(probe).kind, RxAction::Kind::kTransmit);
  EXPECT_EQ(stack_->arp_cache().CountLive(0), 0u);
  EXPECT_EQ(LoadBe32(probe.data() + 38), 0u);  // reply's tpa = 0.0.0.0
}

TEST_F(StackTest, EthernetMalformations) {
  ExpectDrop(std::vector<uint8_t>(13, 0), DropReason::kEthTruncated);
  const MacAddr other{{0x02, 0, 0, 0, 0, 0x77}};
  ExpectDrop(Ipv4Frame({}, IcmpEcho(8, 1, 1, 8), other), DropReason::kEthNotForUs);
  auto v6 = Ipv4Frame({}, IcmpEcho(8, 1, 1, 8));
  v6[12] = 0x86;
  v6[13] = 0xdd;
  ExpectDrop(v6, DropReason::kEthUnknownType);
  std::vector<uint8_t> f = Ipv4Frame({}, IcmpEcho(8, 1, 1, 8));
  EXPECT_EQ(stack_->HandleFrame(kPort + 1, f, 0).reason, DropReason::kEthNotForUs);
}

TEST_F(StackTest, AnswersEchoRequestInPlace) {
  auto f = Ipv4Frame({}, IcmpEcho(8, 0x77, 9, 56));
  f.resize(f.size() + 4, 0xee);  // trailing link padding is not echoed
  RxAction a = Handle(f);
  ASSERT_EQ(a.kind, RxAction::Kind::kTransmit);
  EXPECT_EQ(a.tx_length, 14 + 20 + 8 + 56);
  EXPECT_EQ(MacAddr::Load(f.data()), kPeerMac);
  EXPECT_EQ(MacAddr::Load(f.data() + 6), kOurMac);
  Ipv4Header h;
  ASSERT_EQ(ParseIpv4(ByteSpan(f).subspan(14, a.tx_length - 14), &h), DropReason::kNone);
  EXPECT_EQ(h.src, kOurIp);
  EXPECT_EQ(h.dst, kPeerIp);
  EXPECT_EQ(f[34], 0);  // echo reply
  EXPECT_EQ(InternetChecksum(ByteSpan(f).subspan(34, 64)), 0);
  EXPECT_EQ(LoadBe16(f.data() + 38), 0x77);  // identifier and sequence kept
  EXPECT_EQ(LoadBe16(f.data() + 40), 9);
  EXPECT_EQ(stats_->icmp_echo_requests_in.Get(), 1u);
  EXPECT_EQ(stats_->icmp_echo_replies_out.Get(), 1u);
}

// RFC 768 datagram from the peer to our `dport` (checksum over the
// pseudo-header unless `checksum` is false: zero, "none").
std::vector<uint8_t> Udp(uint16_t sport, uint16_t dport, size_t payload_len, bool checksum = true) {
  std::vector<uint8_t> u(8 + payload_len);
  StoreBe16(u.data(), sport);
  StoreBe16(u.data() + 2, dport);
  StoreBe16(u.data() + 4, static_cast<uint16_t>(u.size()));
  for (size_t i = 0; i < payload_len; ++i) u[8 + i] = static_cast<uint8_t>(i * 13 + 1);
  if (checksum) {
    std::vector<uint8_t> pseudo(12);
    StoreBe32(pseudo.data(), kPeerIp);
    StoreBe32(pseudo.data() + 4, kOurIp);
    pseudo[9] = 17;
    StoreBe16(pseudo.data() + 10, static_cast<uint16_t>(u.size()));
    uint16_t c = ChecksumFold(ChecksumAdd(ChecksumAdd(0, ByteSpan(pseudo)), ByteSpan(u)));
    StoreBe16(u.data() + 6, c == 0 ? 0xffff : c);
  }
  return u;
}

TEST_F(StackTest, UdpEchoAnswersOnlyItsPortAndNamesEveryDrop) {
  Ipv4Fields ip;
  ip.protocol = 17;
  auto off = Ipv4Frame(ip, Udp(4000, 7, 10));
  EXPECT_EQ(Handle(off).reason, DropReason::kIpv4UnknownProtocol) << "off by default";

  L3Options o{1024, 300, 4, 1000};
  o.udp_echo_port = 7;
  Reset(o);
  for (bool sum : {true, false}) {
    auto f = Ipv4Frame(ip, Udp(4000, 7, 33, sum));
    f.resize(f.size() + 5, 0xee);  // link padding is not echoed
    const std::vector<uint8_t> sent = f;
    RxAction a = Handle(f);
    ASSERT_EQ(a.kind, RxAction::Kind::kTransmit);
    EXPECT_EQ(a.tx_length, 14 + 20 + 8 + 33);
    EXPECT_EQ(MacAddr::Load(f.data()), kPeerMac);
    EXPECT_EQ(MacAddr::Load(f.data() + 6), kOurMac);
    Ipv4Header h;
    ASSERT_EQ(ParseIpv4(ByteSpan(f).subspan(14, a.tx_length - 14), &h), DropReason::kNone);
    EXPECT_EQ(h.src, kOurIp);
    EXPECT_EQ(h.dst, kPeerIp);
    EXPECT_EQ(LoadBe16(f.data() + 34), 7);     // ports swapped
    EXPECT_EQ(LoadBe16(f.data() + 36), 4000);
    EXPECT_TRUE(std::equal(f.begin() + 42, f.begin() + 42 + 33, sent.begin() + 42)) << "payload kept";
    // The reply's checksum verifies over its own pseudo-header (or stays 0).
    if (sum) {
      std::vector<uint8_t> pseudo(12);
      StoreBe32(pseudo.data(), kOurIp);
      StoreBe32(pseudo.data() + 4, kPeerIp);
      pseudo[9] = 17;
      StoreBe16(pseudo.data() + 10, 41);
      EXPECT_EQ(ChecksumFold(ChecksumAdd(ChecksumAdd(0, ByteSpan(pseudo)), ByteSpan(f).subspan(34, 41))), 0);
    } else {
      EXPECT_EQ(LoadBe16(f.data() + 40), 0);
    }
  }
  EXPECT_EQ(stats_->udp_echoes_out.Get(), 2u);

  ExpectDrop(Ipv4Frame(ip, Udp(4000, 9, 10)), DropReason::kUdpNoService);
  auto bad = Udp(4000, 7, 10);
  bad[9] ^= 1;
  ExpectDrop(Ipv4Frame(ip, bad), DropReason::kUdpBadChecksum);
  ExpectDrop(Ipv4Frame(ip, std::vector<uint8_t>(6, 0)), DropReason::kUdpTruncated);
  auto long_len = Udp(4000, 7, 10);
  StoreBe16(long_len.data() + 4, 19);  // one byte beyond the datagram
  ExpectDrop(Ipv4Frame(ip, long_len), DropReason::kUdpTruncated);
  auto short_len = Udp(4000, 7, 10, false);
  StoreBe16(short_len.data() + 4, 7);  // below the header
  ExpectDrop(Ipv4Frame(ip, short_len), DropReason::kUdpTruncated);
}

TEST_F(StackTest, LowTtlIsStillDeliveredLocally) {
  Ipv4Fields ttl0;
  ttl0.ttl = 0;
  auto f = Ipv4Frame(ttl0, IcmpEcho(8, 1, 1, 8));
  EXPECT_EQ(Handle(f).kind, RxAction::Kind::kTransmit);  // RFC 1122 3.2.1.7
}

TEST_F(StackTest, Ipv4AndIcmpDropsAreNamed) {
  Ipv4Fields bad_sum;
  bad_sum.fix_checksum = false;
  bad_sum.checksum = 0x1111;
  ExpectDrop(Ipv4Frame(bad_sum, IcmpEcho(8, 1, 1, 8)), DropReason::kIpv4BadChecksum);
  Ipv4Fields frag;
  frag.flags_frag = 0x2000;
  ExpectDrop(Ipv4Frame(frag, IcmpEcho(8, 1, 1, 8)), DropReason::kIpv4Fragment);
  Ipv4Fields other_dst;
  other_dst.dst = 0xc6120063;
  ExpectDrop(Ipv4Frame(other_dst, IcmpEcho(8, 1, 1, 8)), DropReason::kIpv4NotForUs);
  Ipv4Fields bcast_dst;
  bcast_dst.dst = 0xc61200ff;
  ExpectDrop(Ipv4Frame(bcast_dst, IcmpEcho(8, 1, 1, 8)), DropReason::kIpv4NotForUs);
  Ipv4Fields loop_src;
  loop_src.src = 0x7f000001;
  ExpectDrop(Ipv4Frame(loop_src, IcmpEcho(8, 1, 1, 8)), DropReason::kIpv4BadSource);
  Ipv4Fields own_src;
  own_src.src = kOurIp;
  ExpectDrop(Ipv4Frame(own_src, IcmpEcho(8, 1, 1, 8)), DropReason::kIpv4BadSource);
  Ipv4Fields tcp;
  tcp.protocol = 6;
  ExpectDrop(Ipv4Frame(tcp, std::vector<uint8_t>(20, 0)), DropReason::kIpv4UnknownProtocol);
  ExpectDrop(Ipv4Frame({}, {8, 0, 0, 0}), DropReason::kIcmpTruncated);
  ExpectDrop(Ipv4Frame({}, IcmpEcho(8, 1, 1, 8, /*fix_checksum=*/false)),
             DropReason::kIcmpBadChecksum);
  ExpectDrop(Ipv4Frame({}, IcmpEcho(0, 1, 1, 8)), DropReason::kIcmpUnhandledType);
  EXPECT_EQ(stats_->icmp_echo_requests_in.Get(), 0u);
  EXPECT_EQ(stats_->icmp_echo_replies_out.Get(), 0u);
}

// --- Resolution with a bounded pending queue -------------------------------

PacketHandle Pkt(uintptr_t n) { return reinterpret_cast<PacketHandle>(n); }

TEST_F(StackTest, TcpIsDeliveredLocallyOnlyWhenEnabled) {
  Ipv4Fields ip;
  ip.protocol = 6;
  ip.version_ihl = 0x46;  // with 4 bytes of options: the segment starts at 14 + 24
  std::vector<uint8_t> seg(20, 0xab);
  auto f = Ipv4Frame(ip, seg);
  f.resize(f.size() + 6, 0);  // link padding is not part of the segment
  RxAction a = Handle(f);
  EXPECT_EQ(a.kind, RxAction::Kind::kDrop);
  EXPECT_EQ(a.reason, DropReason::kIpv4UnknownProtocol);

  L3Options o{1024, 300, 4, 1000};
  o.deliver_tcp = true;
  Reset(o);
  a = Handle(f);
  ASSERT_EQ(a.kind, RxAction::Kind::kLocalTcp);
  EXPECT_EQ(a.l4_offset, 14 + 24);
  EXPECT_EQ(a.l4_length, 20);
  EXPECT_EQ(a.src_ip, kPeerIp);
  EXPECT_EQ(a.dst_ip, kOurIp);
  EXPECT_EQ(stats_->DroppedTotal(), 0u);
  // Not for us: still dropped by IPv4 before TCP sees it.
  ip.dst = kPeerIp + 1;
  auto other = Ipv4Frame(ip, seg);
  EXPECT_EQ(Handle(other).reason, DropReason::kIpv4NotForUs);
}

// A datagram longer than the port's MTU is the device's coalesced frame (a
// peer's TSO frame on a virtual link, LRO) or nothing we should take; the
// device's TCP checksum verdict passes through to the transport.
TEST_F(StackTest, OverMtuDatagramsOnlyWhenTheDeviceCoalescedThem) {
  L3Options o{1024, 300, 4, 1000};
  o.deliver_tcp = true;
  Reset(o, 1500);
  Ipv4Fields ip;
  ip.protocol = 6;
  std::vector<uint8_t> big(20 + 45 * 1448, 0x5a);  // one TSO frame's segment
  auto f = Ipv4Frame(ip, big);
  ExpectDrop(f, DropReason::kIpv4OverMtu);
  EXPECT_EQ(stats_->rx_coalesced.Get(), 0u);

  RxAction a = stack_->HandleFrame(kPort, f, 0, RxOffload{true, true});
  ASSERT_EQ(a.kind, RxAction::Kind::kLocalTcp);
  EXPECT_EQ(a.l4_length, big.size());
  EXPECT_TRUE(a.l4_checksum_ok);
  EXPECT_EQ(stats_->rx_coalesced.Get(), 1u);

  // At the MTU exactly nothing is needed from the device, and without its
  // verdict the transport checks the checksum itself.
  std::vector<uint8_t> full(1480, 0x5a);
  auto g = Ipv4Frame(ip, full);
  a = Handle(g);
  ASSERT_EQ(a.kind, RxAction::Kind::kLocalTcp);
  EXPECT_FALSE(a.l4_checksum_ok);
  EXPECT_EQ(stats_->rx_coalesced.Get(), 1u);
}

TEST_F(StackTest, SctpIsDeliveredLocallyOnlyWhenEnabled) {
  Ipv4Fields ip;
  ip.protocol = 132;
  std::vector<uint8_t> pkt(28, 0x5c);
  auto f = Ipv4Frame(ip, pkt);
  RxAction a = Handle(f);
  EXPECT_EQ(a.kind, RxAction::Kind::kDrop);
  EXPECT_EQ(a.reason, DropReason::kIpv4UnknownProtocol);

  L3Options o{1024, 300, 4, 1000};
  o.deliver_sctp = true;  // TCP stays off: a TCP segment is still dropped
  Reset(o);
  a = Handle(f);
  ASSERT_EQ(a.kind, RxAction::Kind::kLocalSctp);
  EXPECT_EQ(a.l4_offset, 14 + 20);
  EXPECT_EQ(a.l4_length, 28);
  EXPECT_EQ(a.src_ip, kPeerIp);
  EXPECT_EQ(a.dst_ip, kOurIp);
  ip.protocol = 6;
  auto tcp = Ipv4Frame(ip, pkt);
  EXPECT_EQ(Handle(tcp).reason, DropReason::kIpv4UnknownProtocol);
}

TEST_F(StackTest, ResolveHitsCacheWithoutQueueing) {
  auto req = ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kPeerIp, MacAddr{}, kOurIp);
  Handle(req, 0);
  NextHop nh;
  ASSERT_EQ(stack_->Resolve(kPeerIp, Pkt(1), 10, &nh), ResolveResult::kResolved);
  EXPECT_EQ(nh.port, kPort);
  EXPECT_EQ(nh.dst_mac, kPeerMac);
  EXPECT_EQ(nh.src_mac, kOurMac);
  EXPECT_EQ(nh.src_ip, kOurIp);
  EXPECT_TRUE(sink_.sent.empty());
  EXPECT_TRUE(sink_.freed.empty());
}

TEST_F(StackTest, ResolveQueuesRequestsOnceAndFlushesOnReply) {
  NextHop nh;
  EXPECT_EQ(stack_->Resolve(kPeerIp, Pkt(1), 100, &nh), ResolveResult::kQueued);
  EXPECT_EQ(stack_->Resolve(kPeerIp, Pkt(2), 150, &nh), ResolveResult::kQueued);
  ASSERT_EQ(sink_.sent.size(), 1u);  // one request for both packets
  EXPECT_EQ(sink_.sent[0], ArpFrame(1, MacAddr::Broadcast(), kOurMac, kOurIp, MacAddr{}, kPeerIp));
  EXPECT_EQ(sink_.sent_ports[0], kPort);
  EXPECT_EQ(stats_->arp_requests_out.Get(), 1u);
  EXPECT_EQ(stack_->pending_packets(kPeerIp), 2u);

  auto rep = ArpFrame(2, kOurMac, kPeerMac, kPeerIp, kOurMac, kOurIp);
  EXPECT_EQ(Handle(rep, 200).kind, RxAction::Kind::kConsumed);
  ASSERT_EQ(sink_.resolved.size(), 2u);
  EXPECT_EQ(sink_.resolved[0].pkt, Pkt(1));  // in order
  EXPECT_EQ(sink_.resolved[1].pkt, Pkt(2));
  EXPECT_EQ(sink_.resolved[0].dst, kPeerMac);
  EXPECT_EQ(sink_.resolved[0].src, kOurMac);
  EXPECT_EQ(sink_.resolved[0].port, kPort);
  EXPECT_EQ(stack_->pending_targets(), 0u);
  stack_->Tick(5000);  // nothing left to retransmit
  EXPECT_EQ(sink_.sent.size(), 1u);
  EXPECT_TRUE(sink_.freed.empty());
}

TEST_F(StackTest, ResolveRetransmitsEveryRetryIntervalThenDropsUnresolved) {
  NextHop nh;
  ASSERT_EQ(stack_->Resolve(kPeerIp, Pkt(1), 0, &nh), ResolveResult::kQueued);
  ASSERT_EQ(stack_->Resolve(kPeerIp, Pkt(2), 0, &nh), ResolveResult::kQueued);
  ASSERT_EQ(stack_->Resolve(kPeerIp, Pkt(3), 0, &nh), ResolveResult::kQueued);
  stack_->Tick(999);
  EXPECT_EQ(sink_.sent.size(), 1u);
  stack_->Tick(1000);
  EXPECT_EQ(sink_.sent.size(), 2u);
  stack_->Tick(1500);
  EXPECT_EQ(sink_.sent.size(), 2u);
  stack_->Tick(2000);
  EXPECT_EQ(sink_.sent.size(), 3u);  // third and last try
  stack_->Tick(2999);
  EXPECT_TRUE(sink_.freed.empty());
  stack_->Tick(3000);
  EXPECT_EQ(sink_.sent.size(), 3u);
  EXPECT_EQ(sink_.freed, (std::vector<PacketHandle>{Pkt(1), Pkt(2), Pkt(3)}));
  EXPECT_EQ(stats_->Dropped(DropReason::kArpUnresolved), 3u);
  EXPECT_EQ(stats_->arp_requests_out.Get(), 3u);
  EXPECT_EQ(stack_->pending_targets(), 0u);
  // A later packet starts a fresh resolution.
  EXPECT_EQ(stack_->Resolve(kPeerIp, Pkt(4), 3001, &nh), ResolveResult::kQueued);
  EXPECT_EQ(sink_.sent.size(), 4u);
}

TEST_F(StackTest, PendingQueueOverflowDropsTheNewPacket) {
  NextHop nh;
  for (uintptr_t i = 1; i <= 4; ++i) {
    ASSERT_EQ(stack_->Resolve(kPeerIp, Pkt(i), 0, &nh), ResolveResult::kQueued);
  }
  EXPECT_EQ(stack_->Resolve(kPeerIp, Pkt(5), 0, &nh), ResolveResult::kDropped);
  EXPECT_EQ(sink_.freed, std::vector<PacketHandle>{Pkt(5)});
  EXPECT_EQ(stats_->Dropped(DropReason::kArpPendingOverflow), 1u);
  EXPECT_EQ(stack_->pending_packets(kPeerIp), 4u);
}

TEST_F(StackTest, PendingTargetTableOverflow) {
  NextHop nh;
  for (uint32_t i = 0; i < L3Stack::kMaxPendingTargets; ++i) {
    ASSERT_EQ(stack_->Resolve(0xc6120010 + i, Pkt(i + 1), 0, &nh), ResolveResult::kQueued);
  }
  EXPECT_EQ(stack_->Resolve(0xc6120080, Pkt(99), 0, &nh), ResolveResult::kDropped);
  EXPECT_EQ(stats_->Dropped(DropReason::kArpPendingOverflow), 1u);
  EXPECT_EQ(sink_.sent.size(), L3Stack::kMaxPendingTargets);
}

TEST_F(StackTest, OffLinkDestinationsResolveTheGateway) {
  NextHop nh;
  EXPECT_EQ(stack_->Resolve(0x0a000001, Pkt(1), 0, &nh), ResolveResult::kQueued);
  ASSERT_EQ(sink_.sent.size(), 1u);
  EXPECT_EQ(LoadBe32(sink_.sent[0].data() + 38), 0xc61200feu);
  EXPECT_EQ(stack_->pending_packets(0xc61200fe), 1u);
}

TEST_F(StackTest, NoRouteWithoutGateway) {
  L3Port port;
  port.port_id = kPort;
  port.mac = kOurMac;
  port.addrs = {{kOurIp, 24}};
  L3Stack stack(std::span<const L3Port>(&port, 1), L3Options{}, stats_.get(), &sink_);
  NextHop nh;
  EXPECT_EQ(stack.Resolve(0x0a000001, Pkt(7), 0, &nh), ResolveResult::kDropped);
  EXPECT_EQ(stats_->Dropped(DropReason::kIpv4NoRoute), 1u);
  EXPECT_EQ(sink_.freed, std::vector<PacketHandle>{Pkt(7)});
}

TEST_F(StackTest, NeighbourFromAnotherWorkerReleasesQueue) {
  NextHop nh;
  ASSERT_EQ(stack_->Resolve(kPeerIp, Pkt(1), 0, &nh), ResolveResult::kQueued);
  stack_->ApplyNeighbor(kPeerIp, kPort, kPeerMac, 10);
  ASSERT_EQ(sink_.resolved.size(), 1u);
  EXPECT_EQ(sink_.resolved[0].pkt, Pkt(1));
  EXPECT_TRUE(sink_.learned.empty());  // not echoed back to the others
  EXPECT_EQ(stack_->Resolve(kPeerIp, Pkt(2), 20, &nh), ResolveResult::kResolved);
}

TEST_F(StackTest, CacheEntriesAgeOut) {
  Reset(L3Options{1024, 2, 4, 1000});
  auto req = ArpFrame(1, MacAddr::Broadcast(), kPeerMac, kPeerIp, MacAddr{}, kOurIp);
  Handle(req, 1000);
  NextHop nh;
  EXPECT_EQ(stack_->Resolve(kPeerIp, Pkt(1), 2999, &nh), ResolveResult::kResolved);
  EXPECT_EQ(stack_->Resolve(kPeerIp, Pkt(2), 3000, &nh), ResolveResult::kQueued);
}

}  // namespace
}  // namespace iwarp::dataplane
