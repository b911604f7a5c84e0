#include "dataplane/impair/impairment.h"

#include <memory>
#include <vector>

#include "common/checksum.h"
#include "dataplane/l3/test_frames.h"
#include "gtest/gtest.h"

namespace iwarp::dataplane {
namespace {

using config::CorruptChecksum;
using config::ImpairAction;
using config::ImpairProtocol;
using config::ImpairRule;
using testing::Ipv4Fields;
using testing::Ipv4Frame;

// A packet of the fake sink: an id and its bytes.
struct FakePacket {
  int id;
  std::vector<uint8_t> bytes;
};

// Records what the stage forwarded and released, in order. Copies are real
// copies of the bytes; `copy_fails` simulates an exhausted pool.
class RecordingSink : public ImpairSink {
 public:
  void Forward(PacketHandle pkt) override { forwarded.push_back(Take(pkt)); }
  PacketHandle Copy(PacketHandle pkt) override {
    if (copy_fails) return nullptr;
    auto* p = static_cast<FakePacket*>(pkt);
    return new FakePacket{p->id, p->bytes};
  }
  void Release(PacketHandle pkt) override { released.push_back(Take(pkt)); }

  std::vector<int> ForwardedIds() const {
    std::vector<int> ids;
    for (const FakePacket& p : forwarded) ids.push_back(p.id);
    return ids;
  }

  std::vector<FakePacket> forwarded;
  std::vector<FakePacket> released;
  bool copy_fails = false;

 private:
  static FakePacket Take(PacketHandle pkt) {
    std::unique_ptr<FakePacket> p(static_cast<FakePacket*>(pkt));
    return *p;
  }
};

// TCP segment (RFC 9293 3.1) with a correct checksum over the pseudo header.
std::vector<uint8_t> TcpSegment(uint16_t sport, uint16_t dport, size_t payload_len) {
  std::vector<uint8_t> seg(20 + payload_len);
  ByteWriter w(seg);
  w.U16(sport);
  w.U16(dport);
  w.U32(1000);  // seq
  w.U32(0);     // ack
  w.U8(5 << 4);
  w.U8(0x18);  // PSH|ACK
  w.U16(65535);
  w.U16(0);  // checksum
  w.U16(0);
  for (size_t i = 0; i < payload_len; ++i) w.U8(static_cast<uint8_t>(i * 13 + 1));
  return seg;
}

// Checksum of an L4 segment inside `frame` with the IPv4 pseudo header; 0 when
// the stored checksum is right.
uint16_t L4Verify(const std::vector<uint8_t>& frame, uint8_t protocol) {
  const size_t l4 = 14 + 20;
  const size_t len = frame.size() - l4;
  std::vector<uint8_t> pseudo(12);
  ByteWriter w(pseudo);
  w.Bytes(ByteSpan(frame).subspan(14 + 12, 8));
  w.U8(0);
  w.U8(protocol);
  w.U16(static_cast<uint16_t>(len));
  uint32_t sum = ChecksumAdd(0, pseudo);
  sum = ChecksumAdd(sum, ByteSpan(frame).subspan(l4, len));
  return ChecksumFold(sum);
}

std::vector<uint8_t> TcpFrame(uint16_t sport, uint16_t dport, size_t payload_len) {
  Ipv4Fields ip;
  ip.protocol = 6;
  std::vector<uint8_t> f = Ipv4Frame(ip, TcpSegment(sport, dport, payload_len));
  const uint16_t c = L4Verify(f, 6);  // checksum field is 0: this is the value to store
  StoreBe16(f.data() + 14 + 20 + 16, c);
  return f;
}

std::vector<uint8_t> UdpFrame(uint16_t sport, uint16_t dport, size_t payload_len) {
  std::vector<uint8_t> udp(8 + payload_len);
  ByteWriter w(udp);
  w.U16(sport);
  w.U16(dport);
  w.U16(static_cast<uint16_t>(udp.size()));
  w.U16(0);
  for (size_t i = 0; i < payload_len; ++i) w.U8(static_cast<uint8_t>(i));
  Ipv4Fields ip;
  ip.protocol = 17;
  std::vector<uint8_t> f = Ipv4Frame(ip, udp);
  uint16_t c = L4Verify(f, 17);
  StoreBe16(f.data() + 14 + 20 + 6, c == 0 ? 0xffff : c);
  return f;
}

class ImpairTest : public ::testing::Test {
 protected:
  void Make(std::vector<ImpairRule> rules, uint64_t seed = 1, size_t hold = 1024) {
    rules_ = std::move(rules);
    stage_ = std::make_unique<ImpairmentStage>(rules_, seed, &stats_, &sink_, hold);
  }
  // Feeds a copy of `frame` as packet `id`.
  void Feed(int id, const std::vector<uint8_t>& frame, uint64_t now_ms = 0) {
    auto* p = new FakePacket{id, frame};
    stage_->Process(p, MutableByteSpan(p->bytes), now_ms);
  }
  void FeedTcp(int first, int count, size_t payload = 100, uint16_t dport = 7,
               uint64_t now_ms = 0) {
    for (int i = first; i < first + count; ++i) Feed(i, TcpFrame(40000, dport, payload), now_ms);
  }
  static std::vector<int> Range(int first, int count) {
    std::vector<int> v;
    for (int i = first; i < first + count; ++i) v.push_back(i);
    return v;
  }

  std::vector<ImpairRule> rules_;
  LcoreStats stats_;
  RecordingSink sink_;
  std::unique_ptr<ImpairmentStage> stage_;
};

TEST_F(ImpairTest, NoRulesForwardsEverythingUntouched) {
  Make({});
  EXPECT_FALSE(stage_->active());
  FeedTcp(1, 5);
  EXPECT_EQ(sink_.ForwardedIds(), Range(1, 5));
  EXPECT_EQ(sink_.forwarded[0].bytes, TcpFrame(40000, 7, 100));
  EXPECT_EQ(stats_.impair_matched.Get(), 0u);
}

TEST_F(ImpairTest, DropEveryThirdMatchingPacket) {
  ImpairRule r;
  r.action = ImpairAction::kDrop;
  r.every = 3;
  Make({r});
  FeedTcp(1, 9);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 2, 4, 5, 7, 8}));
  ASSERT_EQ(sink_.released.size(), 3u);
  EXPECT_EQ(sink_.released[0].id, 3);
  EXPECT_EQ(stats_.Dropped(DropReason::kImpairDrop), 3u);
  EXPECT_EQ(stats_.impair_matched.Get(), 9u);
}

TEST_F(ImpairTest, DropPacketsFirstToLast) {
  ImpairRule r;
  r.action = ImpairAction::kDrop;
  r.first = 4;
  r.last = 6;
  Make({r});
  FeedTcp(1, 10);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 2, 3, 7, 8, 9, 10}));
  EXPECT_EQ(stats_.Dropped(DropReason::kImpairDrop), 3u);
}

TEST_F(ImpairTest, FilterByProtocolPortAndPayload) {
  ImpairRule r;
  r.action = ImpairAction::kDrop;
  r.protocol = ImpairProtocol::kTcp;
  r.l4_port = 9;
  r.min_payload = 1;
  Make({r});
  Feed(1, TcpFrame(40000, 9, 10));  // matches: dst port 9 with payload
  Feed(2, TcpFrame(9, 40000, 10));  // matches: src port 9
  Feed(3, TcpFrame(40000, 9, 0));   // pure ACK: too little payload
  Feed(4, TcpFrame(40000, 7, 10));  // other port
  Feed(5, UdpFrame(40000, 9, 10));  // not TCP
  Feed(6, testing::ArpFrame(1, MacAddr{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, testing::kPeerMac,
                            testing::kPeerIp, MacAddr{}, testing::kOurIp));  // not IPv4
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{3, 4, 5, 6}));
  EXPECT_EQ(stats_.impair_matched.Get(), 2u);
}

TEST_F(ImpairTest, ProbabilityIsSeededAndNearTheRate) {
  ImpairRule r;
  r.action = ImpairAction::kDrop;
  r.probability_ppm = 50000;  // 5%
  Make({r}, 99);
  FeedTcp(0, 10000, 1);
  const uint64_t drops = stats_.Dropped(DropReason::kImpairDrop);
  EXPECT_GT(drops, 400u);
  EXPECT_LT(drops, 600u);
  const std::vector<int> first_run = sink_.ForwardedIds();

  // Same seed, same decisions.
  LcoreStats other_stats;
  RecordingSink other_sink;
  ImpairmentStage again(rules_, 99, &other_stats, &other_sink);
  for (int i = 0; i < 10000; ++i) {
    auto* p = new FakePacket{i, TcpFrame(40000, 7, 1)};
    again.Process(p, MutableByteSpan(p->bytes), 0);
  }
  EXPECT_EQ(other_sink.ForwardedIds(), first_run);
  // A different seed decides differently.
  EXPECT_NE(ImpairmentStage::MixSeed(99, 0, false, 0), ImpairmentStage::MixSeed(99, 0, true, 0));
  EXPECT_NE(ImpairmentStage::MixSeed(99, 0, false, 0), ImpairmentStage::MixSeed(99, 1, false, 0));
}

TEST_F(ImpairTest, DuplicateSendsTwoIdenticalCopies) {
  ImpairRule r;
  r.action = ImpairAction::kDuplicate;
  r.every = 2;
  Make({r});
  FeedTcp(1, 4);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 2, 2, 3, 4, 4}));
  EXPECT_EQ(sink_.forwarded[1].bytes, sink_.forwarded[2].bytes);
  EXPECT_EQ(stats_.impair_duplicated.Get(), 2u);
}

TEST_F(ImpairTest, DuplicateWithoutBufferPassesOnceAndCountsSkip) {
  ImpairRule r;
  r.action = ImpairAction::kDuplicate;
  Make({r});
  sink_.copy_fails = true;
  FeedTcp(1, 2);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 2}));
  EXPECT_EQ(stats_.impair_duplicated.Get(), 0u);
  EXPECT_EQ(stats_.impair_skipped.Get(), 2u);
}

TEST_F(ImpairTest, ReorderLetsGapPacketsOvertake) {
  ImpairRule r;
  r.action = ImpairAction::kReorder;
  r.first = 2;
  r.last = 2;
  r.reorder_gap = 3;
  Make({r});
  FeedTcp(1, 6);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 3, 4, 5, 2, 6}));
  EXPECT_EQ(stats_.impair_reordered.Get(), 1u);
  EXPECT_EQ(stage_->held(), 0u);
}

TEST_F(ImpairTest, ReorderedPacketLeavesAfterMaxHoldWhenTrafficStops) {
  ImpairRule r;
  r.action = ImpairAction::kReorder;
  r.first = 2;
  r.last = 2;
  r.reorder_gap = 10;
  Make({r});
  FeedTcp(1, 3, 100, 7, /*now_ms=*/1000);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 3}));
  stage_->Poll(1000 + ImpairmentStage::kReorderMaxHoldMs - 1);
  EXPECT_EQ(stage_->held(), 1u);
  stage_->Poll(1000 + ImpairmentStage::kReorderMaxHoldMs);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 3, 2}));
}

TEST_F(ImpairTest, DelayHoldsForDelayMs) {
  ImpairRule r;
  r.action = ImpairAction::kDelay;
  r.delay_ms = 20;
  r.every = 2;
  Make({r});
  FeedTcp(1, 4, 100, 7, /*now_ms=*/500);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 3}));
  EXPECT_EQ(stats_.impair_delayed.Get(), 2u);
  stage_->Poll(519);
  EXPECT_EQ(stage_->held(), 2u);
  stage_->Poll(520);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 3, 2, 4}));
}

TEST_F(ImpairTest, FullHoldQueuePassesPacketsAndCounts) {
  ImpairRule r;
  r.action = ImpairAction::kDelay;
  r.delay_ms = 50;
  Make({r}, 1, /*hold=*/2);
  FeedTcp(1, 4);
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{3, 4}));
  EXPECT_EQ(stats_.impair_delayed.Get(), 2u);
  EXPECT_EQ(stats_.impair_skipped.Get(), 2u);
  stage_->ReleaseAll();
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{3, 4, 1, 2}));
}

TEST_F(ImpairTest, CorruptStaleBreaksTheTcpChecksum) {
  ImpairRule r;
  r.action = ImpairAction::kCorrupt;
  r.corrupt_checksum = CorruptChecksum::kStale;
  Make({r}, 5);
  const std::vector<uint8_t> clean = TcpFrame(40000, 7, 333);
  ASSERT_EQ(L4Verify(clean, 6), 0);
  for (int i = 0; i < 200; ++i) Feed(i, clean);
  ASSERT_EQ(sink_.forwarded.size(), 200u);
  for (const FakePacket& p : sink_.forwarded) {
    // Headers untouched, exactly one payload bit flipped, checksum now wrong.
    int bits = 0;
    for (size_t b = 0; b < clean.size(); ++b) bits += __builtin_popcount(clean[b] ^ p.bytes[b]);
    EXPECT_EQ(bits, 1);
    EXPECT_TRUE(std::equal(clean.begin(), clean.begin() + 54, p.bytes.begin()));
    EXPECT_NE(L4Verify(p.bytes, 6), 0) << "packet " << p.id;
  }
  EXPECT_EQ(stats_.impair_corrupted_stale.Get(), 200u);
}

TEST_F(ImpairTest, CorruptFixedKeepsTheChecksumValid) {
  ImpairRule r;
  r.action = ImpairAction::kCorrupt;
  r.corrupt_checksum = CorruptChecksum::kFixed;
  Make({r}, 6);
  // Odd payload lengths exercise the last byte paired with an implied zero.
  for (size_t len : {1, 2, 3, 333, 1460}) {
    const std::vector<uint8_t> clean = TcpFrame(40000, 7, len);
    for (int i = 0; i < 50; ++i) Feed(i, clean);
    for (const FakePacket& p : sink_.forwarded) {
      EXPECT_NE(p.bytes, clean);
      EXPECT_EQ(L4Verify(p.bytes, 6), 0) << "payload " << len;
      EXPECT_TRUE(std::equal(clean.begin() + 14, clean.begin() + 34, p.bytes.begin() + 14));
    }
    sink_.forwarded.clear();
  }
  const std::vector<uint8_t> udp = UdpFrame(5000, 6000, 77);
  for (int i = 0; i < 50; ++i) Feed(i, udp);
  for (const FakePacket& p : sink_.forwarded) {
    EXPECT_NE(p.bytes, udp);
    EXPECT_EQ(L4Verify(p.bytes, 17), 0);
  }
  EXPECT_EQ(stats_.impair_corrupted_fixed.Get(), 5u * 50 + 50);
}

TEST_F(ImpairTest, CorruptNeverSelectsPacketsWithoutPayload) {
  ImpairRule r;
  r.action = ImpairAction::kCorrupt;
  Make({r});
  const std::vector<uint8_t> ack = TcpFrame(40000, 7, 0);
  Feed(1, ack);
  ASSERT_EQ(sink_.forwarded.size(), 1u);
  EXPECT_EQ(sink_.forwarded[0].bytes, ack);
  EXPECT_EQ(stats_.impair_matched.Get(), 0u);
}

TEST_F(ImpairTest, FirstSelectingRuleWins) {
  ImpairRule dup;
  dup.action = ImpairAction::kDuplicate;
  dup.every = 2;
  ImpairRule drop;
  drop.action = ImpairAction::kDrop;
  drop.every = 3;
  Make({dup, drop});
  FeedTcp(1, 6);
  // 2, 4, 6 are duplicated by rule 1. Rule 2 sees 1, 3, 5 and drops its 3rd
  // match (packet 5).
  EXPECT_EQ(sink_.ForwardedIds(), (std::vector<int>{1, 2, 2, 3, 4, 4, 6, 6}));
}

TEST(ImpairParse, RejectsTruncatedAndFragmentedFrames) {
  std::vector<uint8_t> f = TcpFrame(1, 2, 10);
  EXPECT_TRUE(ParseImpairFrame(f).ipv4);
  EXPECT_EQ(ParseImpairFrame(f).payload_len, 10u);
  for (size_t n = 0; n < f.size(); ++n) {
    // Shorter than the IPv4 total length: not parsed (and never read past n).
    std::vector<uint8_t> cut(f.begin(), f.begin() + static_cast<long>(n));
    EXPECT_FALSE(ParseImpairFrame(cut).ipv4) << n;
  }
  std::vector<uint8_t> frag = f;
  StoreBe16(frag.data() + 14 + 6, 0x2000);  // MF
  EXPECT_FALSE(ParseImpairFrame(frag).ipv4);
  std::vector<uint8_t> bad_doff = f;
  bad_doff[14 + 20 + 12] = 0xf0;  // 60-byte header in a 30-byte segment
  EXPECT_FALSE(ParseImpairFrame(bad_doff).ipv4);
}

}  // namespace
}  // namespace iwarp::dataplane
