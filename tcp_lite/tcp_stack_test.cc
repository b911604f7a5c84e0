// Scripted (packetdrill-style) tests of TcpStack on a virtual clock: the test
// injects segments built with the tcp_segment codec and checks the exact
// segments the stack emits and what the user callbacks saw.
#include "tcp_lite/tcp_stack.h"

#include <memory>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::tcp {
namespace {

using testing::CaptureOutput;
using testing::kIpA;
using testing::kIpB;
using testing::Pattern;
using testing::RecordingUser;
using testing::SegBuilder;
using testing::TestIsn;
using testing::Wire;

constexpr uint16_t kPort = 5000;
constexpr uint16_t kPeerPort = 40000;
constexpr uint32_t kPeerIsn = 1000;

TcpOptions BaseOptions() {
  TcpOptions o;
  o.max_connections = 8;
  o.send_buffer_bytes = 64 * 1024;
  o.receive_buffer_bytes = 256 * 1024;  // window scale 3
  o.delayed_ack_us = 200;
  o.time_wait_s = 60;
  return o;
}

Options SynOpts(uint32_t tsval = 100) {
  Options o;
  o.mss = 1460;
  o.window_scale = 7;
  o.sack_permitted = true;
  o.timestamps = Timestamps{tsval, 0};
  return o;
}

Options Ts(uint32_t val, uint32_t ecr) {
  Options o;
  o.timestamps = Timestamps{val, ecr};
  return o;
}

class StackTest : public ::testing::Test {
 protected:
  void Make(const TcpOptions& o = BaseOptions()) {
    const uint32_t ips[] = {kIpA};
    auto s = TcpStack::Create(o, ips, out_, isn_, now_);
    ASSERT_TRUE(s.ok()) << s.status();
    stack_ = std::move(*s);
  }
  void In(const std::vector<uint8_t>& seg) { stack_->Input(kIpB, kIpA, ByteSpan(seg), now_); }
  void Advance(uint64_t us) {
    now_ += us;
    stack_->RunTimers(now_);
  }
  Wire One() {
    auto v = out_.Take();
    EXPECT_EQ(v.size(), 1u);
    if (v.empty()) return Wire();
    EXPECT_TRUE(v[0].checksum_ok);
    return v[0];
  }
  uint64_t Drops(DropReason r) const { return stack_->stats().drops[static_cast<size_t>(r)]; }

  // Passive open with all options; returns the server ISS. Leaves the
  // connection ESTABLISHED with nothing emitted after the handshake.
  uint32_t Accept(const Options& syn = SynOpts()) {
    EXPECT_TRUE(stack_->Listen(kPort, user_).ok());
    In(peer_.Build(kFlagSyn, kPeerIsn, 0, 65535, syn));
    const Wire sa = One();
    EXPECT_EQ(sa.h.flags, kFlagSyn | kFlagAck);
    iss_ = sa.h.seq.value();
    our_tsval_ = sa.o.timestamps ? sa.o.timestamps->ts_val : 0;
    In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512,
                   syn.timestamps ? Ts(101, our_tsval_) : Options()));
    EXPECT_TRUE(out_.Take().empty());
    EXPECT_EQ(user_.accepted.size(), 1u);
    conn_ = user_.accepted.empty() ? ConnId() : user_.accepted[0];
    return iss_;
  }

  uint64_t now_ = 1'000'000;
  IsnGenerator isn_ = TestIsn();
  CaptureOutput out_;
  RecordingUser user_;
  SegBuilder peer_;
  std::unique_ptr<TcpStack> stack_;
  uint32_t iss_ = 0;
  uint32_t our_tsval_ = 0;
  ConnId conn_;
};

TEST_F(StackTest, PassiveOpenAnswersWithNegotiatedOptions) {
  Make();
  ASSERT_TRUE(stack_->Listen(kPort, user_).ok());
  In(peer_.Build(kFlagSyn, kPeerIsn, 0, 65535, SynOpts(100)));
  const Wire sa = One();
  EXPECT_EQ(sa.h.flags, kFlagSyn | kFlagAck);
  EXPECT_EQ(sa.h.ack, Seq32(kPeerIsn + 1));
  EXPECT_EQ(sa.h.src_port, kPort);
  EXPECT_EQ(sa.h.dst_port, kPeerPort);
  EXPECT_EQ(sa.h.window, 65535);  // RFC 7323 2.2: unscaled in a SYN
  EXPECT_EQ(sa.o.mss, 1460);
  EXPECT_EQ(sa.o.window_scale, 3);
  EXPECT_TRUE(sa.o.sack_permitted);
  ASSERT_TRUE(sa.o.timestamps.has_value());
  EXPECT_EQ(sa.o.timestamps->ts_ecr, 100u);
  EXPECT_EQ(stack_->connection_count(), 1u);
  EXPECT_TRUE(user_.accepted.empty());  // only after the handshake

  In(peer_.Build(kFlagAck, kPeerIsn + 1, sa.h.seq.value() + 1, 512,
                 Ts(101, sa.o.timestamps->ts_val)));
  EXPECT_TRUE(out_.Take().empty());
  ASSERT_EQ(user_.accepted.size(), 1u);
  EXPECT_EQ(stack_->State(user_.accepted[0]), TcpState::kEstablished);
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(user_.accepted[0], &info));
  EXPECT_EQ(info.snd_wnd, 512u << 7);
  EXPECT_EQ(info.snd_wscale, 7);
  EXPECT_EQ(info.rcv_wscale, 3);
  EXPECT_TRUE(info.sack);
  EXPECT_TRUE(info.timestamps);
  EXPECT_EQ(info.emss, 1460u - 12);  // RFC 7323: timestamps take 12 bytes
  EXPECT_EQ(stack_->Emss(user_.accepted[0]), 1448u);
  EXPECT_EQ(stack_->stats().passive_opens, 1u);
  EXPECT_EQ(stack_->stats().established, 1u);
}

TEST_F(StackTest, SynWithoutOptionsGetsNone) {
  Make();
  ASSERT_TRUE(stack_->Listen(kPort, user_).ok());
  In(peer_.Build(kFlagSyn, kPeerIsn, 0, 8192));
  const Wire sa = One();
  EXPECT_EQ(sa.o.mss, 1460);  // we always announce ours
  EXPECT_FALSE(sa.o.window_scale.has_value());
  EXPECT_FALSE(sa.o.sack_permitted);
  EXPECT_FALSE(sa.o.timestamps.has_value());
  In(peer_.Build(kFlagAck, kPeerIsn + 1, sa.h.seq.value() + 1, 8192));
  ASSERT_EQ(user_.accepted.size(), 1u);
  EXPECT_EQ(stack_->Emss(user_.accepted[0]), 536u);  // RFC 9293 3.7.1 default
}

TEST_F(StackTest, NoListenerAnswersWithRst) {
  Make();
  // RFC 9293 3.10.7.1: no ACK -> <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>.
  In(peer_.Build(kFlagSyn, 7000, 0, 1000));
  Wire r = One();
  EXPECT_EQ(r.h.flags, kFlagRst | kFlagAck);
  EXPECT_EQ(r.h.seq, Seq32(0));
  EXPECT_EQ(r.h.ack, Seq32(7001));
  // With ACK -> <SEQ=SEG.ACK><CTL=RST>.
  In(peer_.Build(kFlagAck, 7001, 123456, 1000));
  r = One();
  EXPECT_EQ(r.h.flags, kFlagRst);
  EXPECT_EQ(r.h.seq, Seq32(123456));
  // A RST is never answered.
  In(peer_.Build(kFlagRst, 7001, 0, 0));
  EXPECT_TRUE(out_.Take().empty());
  EXPECT_EQ(Drops(DropReason::kTcpNoConnection), 3u);
  EXPECT_EQ(stack_->stats().rsts_out, 2u);
}

TEST_F(StackTest, BadChecksumIsDroppedAndCounted) {
  Make();
  ASSERT_TRUE(stack_->Listen(kPort, user_).ok());
  auto syn = peer_.Build(kFlagSyn, kPeerIsn, 0, 65535, SynOpts());
  syn[16] ^= 0x01;
  In(syn);
  EXPECT_TRUE(out_.Take().empty());
  EXPECT_EQ(Drops(DropReason::kTcpBadChecksum), 1u);
  EXPECT_EQ(stack_->connection_count(), 0u);
}

TEST_F(StackTest, ActiveOpen) {
  Make();
  auto id = stack_->Connect(kIpA, kIpB, kPeerPort, user_, 0, now_);
  ASSERT_TRUE(id.ok()) << id.status();
  Wire syn = One();
  EXPECT_EQ(syn.h.flags, kFlagSyn);
  EXPECT_GE(syn.h.src_port, 32768);
  EXPECT_EQ(syn.h.dst_port, kPeerPort);
  EXPECT_EQ(syn.o.mss, 1460);
  EXPECT_EQ(syn.o.window_scale, 3);
  EXPECT_TRUE(syn.o.sack_permitted);
  ASSERT_TRUE(syn.o.timestamps.has_value());
  EXPECT_EQ(stack_->State(*id), TcpState::kSynSent);

  peer_.dst_port = syn.h.src_port;
  Options o = SynOpts(5000);
  o.timestamps->ts_ecr = syn.o.timestamps->ts_val;
  o.window_scale = 2;
  In(peer_.Build(kFlagSyn | kFlagAck, 9000, syn.h.seq.value() + 1, 1000, o));
  Wire ack = One();
  EXPECT_EQ(ack.h.flags, kFlagAck);
  EXPECT_EQ(ack.h.seq, syn.h.seq + 1u);
  EXPECT_EQ(ack.h.ack, Seq32(9001));
  ASSERT_TRUE(ack.o.timestamps.has_value());
  EXPECT_EQ(ack.o.timestamps->ts_ecr, 5000u);
  EXPECT_EQ(user_.connected.size(), 1u);
  EXPECT_EQ(stack_->State(*id), TcpState::kEstablished);
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(*id, &info));
  EXPECT_EQ(info.snd_wnd, 1000u);  // the SYN-ACK window is not scaled
  EXPECT_EQ(info.snd_wscale, 2);
}

TEST_F(StackTest, ActiveOpenRefusedByRst) {
  Make();
  auto id = stack_->Connect(kIpA, kIpB, kPeerPort, user_, 41000, now_);
  ASSERT_TRUE(id.ok());
  Wire syn = One();
  peer_.dst_port = 41000;
  // RST without an acceptable ACK is ignored (RFC 9293 3.10.7.3).
  In(peer_.Build(kFlagRst | kFlagAck, 0, syn.h.seq.value() + 5, 0));
  EXPECT_FALSE(user_.closed);
  In(peer_.Build(kFlagRst | kFlagAck, 0, syn.h.seq.value() + 1, 0));
  EXPECT_TRUE(user_.closed);
  EXPECT_EQ(user_.close_reason, CloseReason::kRefused);
  EXPECT_EQ(stack_->connection_count(), 0u);
}

TEST_F(StackTest, SynRetransmittedWithBackoffThenTimesOut) {
  TcpOptions o = BaseOptions();
  o.max_syn_retransmissions = 2;
  Make(o);
  auto id = stack_->Connect(kIpA, kIpB, kPeerPort, user_, 41000, now_);
  ASSERT_TRUE(id.ok());
  Wire syn = One();
  Advance(999'000);
  EXPECT_TRUE(out_.Take().empty());
  Advance(1'200);  // initial RTO 1 s
  Wire r1 = One();
  EXPECT_EQ(r1.h.flags, kFlagSyn);
  EXPECT_EQ(r1.h.seq, syn.h.seq);
  Advance(1'999'000);
  EXPECT_TRUE(out_.Take().empty());
  Advance(1'200);  // backed off to 2 s
  EXPECT_EQ(One().h.flags, kFlagSyn);
  Advance(4'001'200);
  EXPECT_TRUE(user_.closed);
  EXPECT_EQ(user_.close_reason, CloseReason::kTimeout);
}

TEST_F(StackTest, SimultaneousOpen) {
  Make();
  auto id = stack_->Connect(kIpA, kIpB, kPeerPort, user_, 41000, now_);
  ASSERT_TRUE(id.ok());
  Wire syn = One();
  peer_.dst_port = 41000;
  // The peer's SYN crosses ours.
  In(peer_.Build(kFlagSyn, 9000, 0, 1000, SynOpts(10)));
  Wire sa = One();
  EXPECT_EQ(sa.h.flags, kFlagSyn | kFlagAck);
  EXPECT_EQ(sa.h.seq, syn.h.seq);  // our ISS again
  EXPECT_EQ(sa.h.ack, Seq32(9001));
  EXPECT_EQ(stack_->State(*id), TcpState::kSynReceived);
  // Its SYN,ACK acknowledges ours.
  Options o = SynOpts(11);
  o.timestamps->ts_ecr = sa.o.timestamps->ts_val;
  In(peer_.Build(kFlagSyn | kFlagAck, 9000, syn.h.seq.value() + 1, 1000, o));
  EXPECT_EQ(stack_->State(*id), TcpState::kEstablished);
  EXPECT_EQ(user_.connected.size(), 1u);
}

TEST_F(StackTest, DelayedAckThenImmediateAckOnSecondSegment) {
  Make();
  Accept();
  // Two segments: the second is acknowledged at once (RFC 5681 4.2).
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(102, our_tsval_), Pattern(1448, 2)));
  EXPECT_TRUE(out_.Take().empty());
  In(peer_.Build(kFlagAck, kPeerIsn + 1449, iss_ + 1, 512, Ts(103, our_tsval_), Pattern(1448, 3)));
  Wire a = One();
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 1 + 2 * 1448));

  // A lone segment waits for the timer.
  const auto d1 = Pattern(100, 1);
  In(peer_.Build(kFlagAck | kFlagPsh, kPeerIsn + 1 + 2 * 1448, iss_ + 1, 512,
                 Ts(104, our_tsval_), d1));
  EXPECT_TRUE(out_.Take().empty());  // delayed
  Advance(150);
  EXPECT_TRUE(out_.Take().empty());
  Advance(200);
  a = One();
  EXPECT_EQ(a.h.flags, kFlagAck);
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 1 + 2 * 1448 + 100));
  EXPECT_EQ(a.h.seq, Seq32(iss_ + 1));
  EXPECT_EQ(a.h.window, (256 * 1024 - 0) >> 3);
  EXPECT_EQ(stack_->stats().delayed_acks, 1u);
  EXPECT_EQ(stack_->stats().quick_ack_entries, 1u);
  EXPECT_EQ(user_.data.size(), 2u * 1448 + 100);
  EXPECT_EQ(user_.offset_errors, 0u);
}

// Once the delayed-ACK timer fired (no reply of ours carried the ACK in
// time), a lone segment is acknowledged at the end of its burst, not after
// the timer, until data we send within delayed_ack_us of receiving (a reply)
// carries the ACK again: an RDMA sender whose completions wait for our ACK
// is not held a timer tick per message, and a ping-pong still carries its
// ACKs on the replies.
TEST_F(StackTest, QuickAckAfterTheTimerUntilAReplyCarriesTheAck) {
  Make();
  Accept();
  uint32_t seq = kPeerIsn + 1;
  In(peer_.Build(kFlagAck, seq, iss_ + 1, 512, Ts(102, our_tsval_), Pattern(100, 1)));
  seq += 100;
  EXPECT_TRUE(out_.Take().empty());
  Advance(400);
  EXPECT_EQ(One().h.ack, Seq32(seq));  // the timer's ACK
  EXPECT_EQ(stack_->stats().quick_ack_entries, 1u);

  // Quick ACK: a lone segment in a burst is acknowledged at the burst's end.
  stack_->BeginBurst();
  In(peer_.Build(kFlagAck, seq, iss_ + 1, 512, Ts(103, our_tsval_), Pattern(100, 2)));
  seq += 100;
  EXPECT_TRUE(out_.Take().empty());
  stack_->EndBurst(now_);
  EXPECT_EQ(One().h.ack, Seq32(seq));
  // Outside a burst, at once.
  In(peer_.Build(kFlagAck, seq, iss_ + 1, 512, Ts(104, our_tsval_), Pattern(100, 3)));
  seq += 100;
  EXPECT_EQ(One().h.ack, Seq32(seq));
  EXPECT_EQ(stack_->stats().delayed_acks, 1u);

  // Data sent long after the last arrival is not a reply: still quick.
  Advance(1000);
  const auto late = Pattern(10, 4);
  ASSERT_EQ(stack_->Send(conn_, ByteSpan(late), now_), late.size());
  Wire w = One();
  EXPECT_EQ(w.payload.size(), late.size());
  In(peer_.Build(kFlagAck, seq, iss_ + 1 + 10, 512, Ts(105, our_tsval_), Pattern(100, 5)));
  seq += 100;
  EXPECT_EQ(One().h.ack, Seq32(seq));

  // A reply 50 us after the data carries the ACK and ends quick ACK: the
  // next lone segment waits for the timer again.
  Advance(50);
  const auto reply = Pattern(10, 6);
  ASSERT_EQ(stack_->Send(conn_, ByteSpan(reply), now_), reply.size());
  w = One();
  EXPECT_EQ(w.payload.size(), reply.size());
  In(peer_.Build(kFlagAck, seq, iss_ + 1 + 20, 512, Ts(106, our_tsval_), Pattern(100, 7)));
  seq += 100;
  EXPECT_TRUE(out_.Take().empty());  // delayed
  Advance(400);
  EXPECT_EQ(One().h.ack, Seq32(seq));
  EXPECT_EQ(stack_->stats().delayed_acks, 2u);
  EXPECT_EQ(stack_->stats().quick_ack_entries, 2u);
  EXPECT_EQ(user_.data.size(), 500u);
  EXPECT_EQ(user_.offset_errors, 0u);
}

// A coalesced frame (the peer's TSO run delivered whole, or LRO) stands for
// several full-sized segments, so RFC 5681 4.2 wants its ACK now, not after
// the delayed-ACK timer: a lone 64 KiB frame used to wait 200 us while the
// sender waited for the ACK (4 KiB writes at MTU 9000 over vhost-user with
// TSO ran at 240-434 MiB/s against 930-1081 with delayed_ack_us 0).
TEST_F(StackTest, CoalescedFrameOfSeveralSegmentsIsAcknowledgedAtOnce) {
  Make();
  Accept();
  const auto d = Pattern(3 * 1448, 5);
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(102, our_tsval_), d));
  EXPECT_EQ(user_.data, d);
  Wire a = One();  // no timer involved
  EXPECT_EQ(a.h.flags, kFlagAck);
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 1 + 3 * 1448));
  EXPECT_EQ(stack_->stats().delayed_acks, 0u);
  // Two full-sized segments' worth is enough; one segment's worth still waits.
  In(peer_.Build(kFlagAck, kPeerIsn + 1 + 3 * 1448, iss_ + 1, 512, Ts(103, our_tsval_),
                 Pattern(1449, 6)));
  a = One();
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 1 + 4 * 1448 + 1));
  In(peer_.Build(kFlagAck, kPeerIsn + 1 + 4 * 1448 + 1, iss_ + 1, 512, Ts(104, our_tsval_),
                 Pattern(1448, 7)));
  EXPECT_TRUE(out_.Take().empty());  // delayed
  Advance(150);
  EXPECT_TRUE(out_.Take().empty());
  Advance(200);
  a = One();
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 1 + 5 * 1448 + 1));
  EXPECT_EQ(stack_->stats().delayed_acks, 1u);
}

TEST_F(StackTest, ReceiveBurstSendsOneCumulativeAckAtItsEnd) {
  Make();
  Accept();
  uint32_t seq = kPeerIsn + 1;
  stack_->BeginBurst();
  for (uint8_t i = 0; i < 5; ++i) {
    In(peer_.Build(kFlagAck, seq, iss_ + 1, 512, Ts(102 + i, our_tsval_), Pattern(1448, i)));
    seq += 1448;
  }
  EXPECT_TRUE(out_.Take().empty());  // held: in order, no loss
  EXPECT_EQ(user_.data.size(), 5u * 1448);
  stack_->EndBurst(now_);
  Wire a = One();
  EXPECT_EQ(a.h.flags, kFlagAck);
  EXPECT_EQ(a.h.ack, Seq32(seq));
  stack_->BeginBurst();
  stack_->EndBurst(now_);
  EXPECT_TRUE(out_.Take().empty());  // nothing owed, nothing sent

  // Out of order inside a burst: the duplicate ACK with SACK leaves at once,
  // and the ACK it carried settles what was held.
  stack_->BeginBurst();
  In(peer_.Build(kFlagAck, seq, iss_ + 1, 512, Ts(110, our_tsval_), Pattern(1448, 7)));
  In(peer_.Build(kFlagAck, seq + 1448, iss_ + 1, 512, Ts(111, our_tsval_), Pattern(1448, 8)));
  EXPECT_TRUE(out_.Take().empty());
  In(peer_.Build(kFlagAck, seq + 4 * 1448, iss_ + 1, 512, Ts(112, our_tsval_), Pattern(1448, 9)));
  a = One();
  EXPECT_EQ(a.h.ack, Seq32(seq + 2 * 1448));
  ASSERT_EQ(a.o.sack_block_count, 1);
  stack_->EndBurst(now_);
  EXPECT_TRUE(out_.Take().empty());
  EXPECT_EQ(user_.offset_errors, 0u);
}

TEST_F(StackTest, ZeroDelayedAckAcksEverySegment) {
  TcpOptions o = BaseOptions();
  o.delayed_ack_us = 0;
  Make(o);
  Accept();
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(102, 0), Pattern(10, 1)));
  EXPECT_EQ(One().h.ack, Seq32(kPeerIsn + 11));
}

// delayed_ack_us 0 in a receive burst: in-order data is acknowledged once,
// at the burst's end (the same poll), not once per segment; a lone segment
// is not held past the burst.
TEST_F(StackTest, ZeroDelayedAckInABurstAcksOnceAtItsEnd) {
  TcpOptions o = BaseOptions();
  o.delayed_ack_us = 0;
  Make(o);
  Accept();
  uint32_t seq = kPeerIsn + 1;
  stack_->BeginBurst();
  for (uint8_t i = 0; i < 4; ++i) {
    In(peer_.Build(kFlagAck, seq, iss_ + 1, 512, Ts(102 + i, our_tsval_), Pattern(1448, i)));
    seq += 1448;
  }
  EXPECT_TRUE(out_.Take().empty());
  stack_->EndBurst(now_);
  Wire a = One();
  EXPECT_EQ(a.h.ack, Seq32(seq));
  EXPECT_EQ(user_.data.size(), 4u * 1448);

  stack_->BeginBurst();
  In(peer_.Build(kFlagAck, seq, iss_ + 1, 512, Ts(110, our_tsval_), Pattern(100, 5)));
  EXPECT_TRUE(out_.Take().empty());
  stack_->EndBurst(now_);
  EXPECT_EQ(One().h.ack, Seq32(seq + 100));
  EXPECT_EQ(stack_->stats().delayed_acks, 0u);  // no timer involved
}

TEST_F(StackTest, SendSegmentsWithinPeerWindowAndEmss) {
  Make();
  Accept();  // peer window 512 << 7 = 65536
  const auto data = Pattern(5000, 9);
  EXPECT_EQ(stack_->Send(conn_, ByteSpan(data), now_), 5000u);
  auto segs = out_.Take();
  ASSERT_EQ(segs.size(), 4u);  // 3 x 1448 + 656
  uint32_t seq = iss_ + 1;
  std::vector<uint8_t> got;
  for (size_t i = 0; i < segs.size(); ++i) {
    EXPECT_EQ(segs[i].h.seq, Seq32(seq));
    EXPECT_TRUE(segs[i].Has(kFlagAck));
    EXPECT_EQ(segs[i].h.ack, Seq32(kPeerIsn + 1));
    EXPECT_LE(segs[i].payload.size(), 1448u);
    seq += static_cast<uint32_t>(segs[i].payload.size());
    got.insert(got.end(), segs[i].payload.begin(), segs[i].payload.end());
  }
  EXPECT_TRUE(segs.back().Has(kFlagPsh));
  EXPECT_EQ(got, data);
  // The ACK frees the buffer and stops the retransmission timer.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, seq, 512, Ts(110, 0)));
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(conn_, &info));
  EXPECT_EQ(info.unacked_bytes, 0u);
  EXPECT_EQ(info.bytes_out, 5000u);
  EXPECT_EQ(stack_->SendSpace(conn_), 64u * 1024);
  Advance(5'000'000);
  EXPECT_TRUE(out_.Take().empty());  // no retransmission
}

TEST_F(StackTest, InitialWindowLimitsTheFirstFlight) {
  Make();
  Accept();
  const auto data = Pattern(60000, 3);
  EXPECT_EQ(stack_->Send(conn_, ByteSpan(data), now_), 60000u);
  auto segs = out_.Take();
  // RFC 6928: IW = min(10*MSS, max(2*MSS, 14600)) = 14480 for 1448.
  uint32_t bytes = 0;
  for (auto& s : segs) bytes += static_cast<uint32_t>(s.payload.size());
  EXPECT_EQ(bytes, 14480u);
}

TEST_F(StackTest, RecordAlignedSendsStartSegmentsAtRecords) {
  Make();
  Accept();
  // Records of 1000 bytes: two never share... each segment holds whole
  // records: 1448 fits one 1000-byte record, so every segment is 1000 bytes.
  std::vector<uint8_t> all;
  for (int i = 0; i < 5; ++i) {
    const auto r = Pattern(1000, 20 + i);
    all.insert(all.end(), r.begin(), r.end());
    ASSERT_EQ(stack_->SendRecord(conn_, ByteSpan(r), now_), SendStatus::kOk);
  }
  auto segs = out_.Take();
  ASSERT_GE(segs.size(), 5u);
  uint32_t off = 0;
  std::vector<uint8_t> got;
  for (auto& s : segs) {
    EXPECT_EQ(off % 1000, 0u) << "segment starts inside a record at " << off;
    off += static_cast<uint32_t>(s.payload.size());
    got.insert(got.end(), s.payload.begin(), s.payload.end());
  }
  EXPECT_EQ(got, all);
  // A record larger than the EMSS is cut into EMSS pieces.
  const auto big = Pattern(4000, 99);
  ASSERT_EQ(stack_->SendRecord(conn_, ByteSpan(big), now_), SendStatus::kOk);
  segs = out_.Take();
  ASSERT_FALSE(segs.empty());
  EXPECT_EQ(segs[0].payload.size(), 1448u);
}

// ReserveRecord/CommitRecord: the record is written in place in the send
// buffer and goes out exactly as SendRecord would send it.
TEST_F(StackTest, ReservedRecordsGoOutAsSentRecords) {
  Make();
  Accept();
  std::vector<uint8_t> all;
  for (int i = 0; i < 5; ++i) {
    const auto r = Pattern(1000, 40 + i);
    all.insert(all.end(), r.begin(), r.end());
    const MutableByteSpan dst = stack_->ReserveRecord(conn_, r.size());
    ASSERT_EQ(dst.size(), r.size());
    std::memcpy(dst.data(), r.data(), r.size());
    ASSERT_EQ(stack_->CommitRecord(conn_, r.size(), now_), SendStatus::kOk);
  }
  auto segs = out_.Take();
  ASSERT_GE(segs.size(), 5u);
  uint32_t off = 0;
  std::vector<uint8_t> got;
  for (auto& seg : segs) {
    EXPECT_EQ(off % 1000, 0u) << "segment starts inside a record at " << off;
    off += static_cast<uint32_t>(seg.payload.size());
    got.insert(got.end(), seg.payload.begin(), seg.payload.end());
  }
  EXPECT_EQ(got, all);
  EXPECT_EQ(stack_->SendSpace(conn_), size_t{64 * 1024} - all.size());

  // More than fits: nothing reserved, nothing committed, nothing queued.
  EXPECT_TRUE(stack_->ReserveRecord(conn_, stack_->SendSpace(conn_) + 1).empty());
  EXPECT_TRUE(stack_->ReserveRecord(conn_, 0).empty());
  EXPECT_EQ(stack_->CommitRecord(conn_, stack_->SendSpace(conn_) + 1, now_), SendStatus::kNoSpace);
  EXPECT_TRUE(out_.Take().empty());
  EXPECT_TRUE(stack_->ReserveRecord(ConnId{}, 10).empty());
}

TEST_F(StackTest, BytesAckedFollowsTheAcknowledgedData) {
  Make();
  Accept();
  EXPECT_EQ(stack_->BytesAcked(conn_), std::optional<uint64_t>(0));
  const auto data = Pattern(1000, 3);
  ASSERT_EQ(stack_->Send(conn_, ByteSpan(data), now_), 1000u);
  ASSERT_FALSE(out_.Take().empty());
  EXPECT_EQ(stack_->BytesAcked(conn_), std::optional<uint64_t>(0));  // sent, not acknowledged
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1 + 600, 512, Ts(102, our_tsval_)));
  EXPECT_EQ(stack_->BytesAcked(conn_), std::optional<uint64_t>(600));
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(conn_, &info));
  EXPECT_EQ(info.bytes_out, 600u);
  EXPECT_EQ(stack_->BytesAcked(ConnId{}), std::nullopt);
}

TEST_F(StackTest, ZeroCopySendCompletesWhenAcked) {
  Make();
  Accept();
  const auto data = Pattern(3000, 5);
  ASSERT_EQ(stack_->SendZeroCopy(conn_, ByteSpan(data), 77, now_), SendStatus::kOk);
  auto segs = out_.Take();
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].payload, std::vector<uint8_t>(data.begin(), data.begin() + 1448));
  EXPECT_TRUE(user_.completions.empty());
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1 + 2000, 512, Ts(110, 0)));
  EXPECT_TRUE(user_.completions.empty());  // partially acknowledged
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1 + 3000, 512, Ts(111, 0)));
  ASSERT_EQ(user_.completions.size(), 1u);
  EXPECT_EQ(user_.completions[0], (std::pair<uint64_t, bool>{77, true}));
}

// SendRecordZeroCopy: head and tail copied, the middle referenced; the
// three go out as one record (segments start at record boundaries), the
// reference ends with the acknowledgement of its last byte, and a
// retransmission reads the referenced bytes again.
TEST_F(StackTest, ZeroCopyRecordsGoOutWholeAndAreReferencedUntilAcked) {
  Make();
  Accept();
  std::vector<std::vector<uint8_t>> bodies;
  std::vector<uint8_t> all;
  for (int i = 0; i < 3; ++i) {
    bodies.push_back(Pattern(900, 60 + i));
    std::vector<uint8_t> head = Pattern(20, 10 + i);
    std::vector<uint8_t> tail = Pattern(6, 20 + i);
    ASSERT_EQ(stack_->SendRecordZeroCopy(conn_, ByteSpan(head), ByteSpan(bodies.back()),
                                         ByteSpan(tail), 100 + i, now_),
              SendStatus::kOk);
    all.insert(all.end(), head.begin(), head.end());
    all.insert(all.end(), bodies.back().begin(), bodies.back().end());
    all.insert(all.end(), tail.begin(), tail.end());
  }
  auto segs = out_.Take();
  ASSERT_EQ(segs.size(), 3u);  // 926-byte records, no two in one 1448-byte segment
  std::vector<uint8_t> got;
  for (auto& seg : segs) {
    EXPECT_EQ(seg.payload.size(), 926u);
    got.insert(got.end(), seg.payload.begin(), seg.payload.end());
  }
  EXPECT_EQ(got, all);
  // Only head and tail took send-buffer space.
  EXPECT_EQ(stack_->SendSpace(conn_), size_t{64 * 1024} - 3 * 26);
  for (const auto& b : bodies) EXPECT_TRUE(stack_->ZeroCopyReferences(conn_, ByteSpan(b)));
  EXPECT_FALSE(stack_->ZeroCopyReferences(conn_, ByteSpan(all)));  // not referenced memory

  // The first record acknowledged: its body is free, the others are not.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1 + 926, 512, Ts(110, our_tsval_)));
  ASSERT_EQ(user_.completions.size(), 1u);
  EXPECT_EQ(user_.completions[0], (std::pair<uint64_t, bool>{100, true}));
  EXPECT_FALSE(stack_->ZeroCopyReferences(conn_, ByteSpan(bodies[0])));
  EXPECT_TRUE(stack_->ZeroCopyReferences(conn_, ByteSpan(bodies[1]).subspan(899)));

  // The retransmission timer resends the second record from the referenced
  // bytes as they are now.
  bodies[1][0] ^= 0xFF;
  now_ += 1'100'000;
  stack_->RunTimers(now_);
  segs = out_.Take();
  ASSERT_FALSE(segs.empty());
  ASSERT_EQ(segs[0].payload.size(), 926u);
  EXPECT_EQ(segs[0].payload[20], bodies[1][0]);

  // Abort hands the references back unacknowledged.
  stack_->Abort(conn_, now_);
  ASSERT_EQ(user_.completions.size(), 3u);
  EXPECT_EQ(user_.completions[1], (std::pair<uint64_t, bool>{101, false}));
  EXPECT_EQ(user_.completions[2], (std::pair<uint64_t, bool>{102, false}));
  EXPECT_FALSE(stack_->ZeroCopyReferences(conn_, ByteSpan(bodies[2])));
}

// max_zero_copy_sends bounds the references; head and tail need room in the
// send buffer; both refusals leave the stream as it was.
TEST_F(StackTest, ZeroCopyRecordsAreRefusedWhole) {
  TcpOptions o = BaseOptions();
  o.max_zero_copy_sends = 2;
  Make(o);
  Accept();
  const auto body = Pattern(600, 7);
  const uint8_t head[4] = {1, 2, 3, 4};
  const uint8_t tail[4] = {5, 6, 7, 8};
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(stack_->SendRecordZeroCopy(conn_, ByteSpan(head), ByteSpan(body), ByteSpan(tail), i,
                                         now_),
              SendStatus::kOk);
  }
  const size_t space = stack_->SendSpace(conn_);
  EXPECT_EQ(stack_->SendRecordZeroCopy(conn_, ByteSpan(head), ByteSpan(body), ByteSpan(tail), 2,
                                       now_),
            SendStatus::kTooManyRecords);
  EXPECT_EQ(stack_->SendSpace(conn_), space);
  auto segs = out_.Take();
  ASSERT_EQ(segs.size(), 2u);
  // Without a referenced part it is an ordinary record.
  EXPECT_EQ(stack_->SendRecordZeroCopy(conn_, ByteSpan(head), ByteSpan(), ByteSpan(tail), 3, now_),
            SendStatus::kOk);
  segs = out_.Take();
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].payload, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(stack_->SendRecordZeroCopy(ConnId{}, ByteSpan(head), ByteSpan(body), ByteSpan(tail), 4,
                                       now_),
            SendStatus::kBadConn);
}

TEST_F(StackTest, RetransmissionTimeoutResendsWithBackoff) {
  Make();
  Accept();
  const auto data = Pattern(500, 4);
  stack_->Send(conn_, ByteSpan(data), now_);
  Wire first = One();
  EXPECT_EQ(first.payload, data);
  Advance(999'000);
  EXPECT_TRUE(out_.Take().empty());
  Advance(1'200);
  Wire r1 = One();
  EXPECT_EQ(r1.h.seq, first.h.seq);
  EXPECT_EQ(r1.payload, data);
  Advance(1'999'000);
  EXPECT_TRUE(out_.Take().empty());
  Advance(1'200);
  EXPECT_EQ(One().h.seq, first.h.seq);
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(conn_, &info));
  EXPECT_EQ(info.timeouts, 2u);
  EXPECT_EQ(info.retransmitted_segments, 2u);
  EXPECT_EQ(info.rto_us, 4'000'000u);
  EXPECT_EQ(info.cwnd, 1448u);  // RFC 5681 3.1: LW = 1 SMSS
  EXPECT_EQ(stack_->stats().timeouts, 2u);
}

TEST_F(StackTest, TimestampEchoEndsTheRtoBackoff) {
  Make();
  Accept();
  stack_->Send(conn_, ByteSpan(Pattern(500, 4)), now_);
  One();
  Advance(1'000'200);
  Wire r = One();  // retransmission; RTO now backed off to 2 s
  ASSERT_TRUE(r.o.timestamps.has_value());
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(conn_, &info));
  EXPECT_EQ(info.rto_us, 2'000'000u);
  Advance(3'000);
  // Karn's rule forbids timing the retransmission; the echoed TSval names it.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 501, 512, Ts(120, r.o.timestamps->ts_val)));
  ASSERT_TRUE(stack_->GetConnection(conn_, &info));
  EXPECT_EQ(info.rto_us, 200'000u);  // RFC 6298 2.4 floor, backoff gone
  EXPECT_EQ(info.srtt_us, 3'000u);
}

TEST_F(StackTest, ActiveCloseThroughTimeWait) {
  Make();
  Accept();
  stack_->Shutdown(conn_, now_);
  Wire fin = One();
  EXPECT_EQ(fin.h.flags, kFlagFin | kFlagAck);
  EXPECT_EQ(fin.h.seq, Seq32(iss_ + 1));
  EXPECT_EQ(stack_->State(conn_), TcpState::kFinWait1);
  EXPECT_EQ(stack_->Send(conn_, ByteSpan(Pattern(10, 1)), now_), 0u);
  EXPECT_EQ(stack_->LastSendStatus(), SendStatus::kNotConnected);
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 2, 512, Ts(110, 0)));
  EXPECT_EQ(stack_->State(conn_), TcpState::kFinWait2);
  // Half-close: data still flows to us.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 2, 512, Ts(111, 0), Pattern(300, 6)));
  EXPECT_EQ(user_.data.size(), 300u);
  In(peer_.Build(kFlagFin | kFlagAck, kPeerIsn + 301, iss_ + 2, 512, Ts(112, 0)));
  auto v = out_.Take();
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v.back().h.ack, Seq32(kPeerIsn + 302));
  EXPECT_TRUE(user_.closed);
  EXPECT_EQ(user_.close_reason, CloseReason::kNormal);
  EXPECT_EQ(stack_->connection_count(), 1u);  // TIME-WAIT slot
  TcpConnInfo list[4];
  ASSERT_EQ(stack_->ListConnections(list), 1u);
  EXPECT_EQ(list[0].state, TcpState::kTimeWait);
  EXPECT_EQ(TcpStateName(list[0].state), "TIME-WAIT");
  // A retransmitted FIN is acknowledged again.
  In(peer_.Build(kFlagFin | kFlagAck, kPeerIsn + 301, iss_ + 2, 512, Ts(113, 0)));
  EXPECT_EQ(One().h.ack, Seq32(kPeerIsn + 302));
  // So is retransmitted data (the peer lost our ACK of it), which carries no
  // FIN; without the ACK the peer would retransmit until it gives up.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 2, 512, Ts(114, 0), Pattern(300, 6)));
  EXPECT_EQ(One().h.ack, Seq32(kPeerIsn + 302));
  // A RST does not end TIME-WAIT early (RFC 1337).
  In(peer_.Build(kFlagRst, kPeerIsn + 302, 0, 0));
  EXPECT_TRUE(out_.Take().empty());
  EXPECT_EQ(stack_->connection_count(), 1u);
  Advance(59'000'000);
  EXPECT_EQ(stack_->connection_count(), 1u);
  Advance(1'100'000);
  EXPECT_EQ(stack_->connection_count(), 0u);
}

TEST_F(StackTest, PassiveClose) {
  Make();
  Accept();
  In(peer_.Build(kFlagFin | kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(110, 0)));
  Wire a = One();
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 2));
  EXPECT_TRUE(user_.peer_fin);
  EXPECT_EQ(stack_->State(conn_), TcpState::kCloseWait);
  // We may still send.
  EXPECT_EQ(stack_->Send(conn_, ByteSpan(Pattern(10, 1)), now_), 10u);
  One();
  stack_->Shutdown(conn_, now_);
  Wire fin = One();
  EXPECT_TRUE(fin.Has(kFlagFin));
  EXPECT_EQ(fin.h.seq, Seq32(iss_ + 11));
  EXPECT_EQ(stack_->State(conn_), TcpState::kLastAck);
  In(peer_.Build(kFlagAck, kPeerIsn + 2, iss_ + 12, 512, Ts(111, 0)));
  EXPECT_TRUE(user_.closed);
  EXPECT_EQ(user_.close_reason, CloseReason::kNormal);
  EXPECT_EQ(stack_->connection_count(), 0u);
}

TEST_F(StackTest, RstHandlingPerRfc5961) {
  Make();
  Accept();
  // Outside the window: dropped silently.
  In(peer_.Build(kFlagRst, kPeerIsn + 1 + 10'000'000, 0, 0));
  EXPECT_TRUE(out_.Take().empty());
  EXPECT_EQ(Drops(DropReason::kTcpRstOutOfWindow), 1u);
  // In the window but not at RCV.NXT: challenge ACK.
  In(peer_.Build(kFlagRst, kPeerIsn + 100, 0, 0));
  Wire c = One();
  EXPECT_EQ(c.h.flags, kFlagAck);
  EXPECT_EQ(c.h.ack, Seq32(kPeerIsn + 1));
  EXPECT_EQ(stack_->stats().challenge_acks, 1u);
  EXPECT_FALSE(user_.closed);
  // Exactly at RCV.NXT: reset.
  In(peer_.Build(kFlagRst, kPeerIsn + 1, 0, 0));
  EXPECT_TRUE(user_.closed);
  EXPECT_EQ(user_.close_reason, CloseReason::kResetByPeer);
  EXPECT_EQ(stack_->connection_count(), 0u);
}

TEST_F(StackTest, SynInEstablishedGetsChallengeAck) {
  Make();
  Accept();
  In(peer_.Build(kFlagSyn, kPeerIsn + 50, 0, 512, SynOpts(200)));
  Wire c = One();
  EXPECT_EQ(c.h.flags, kFlagAck);
  EXPECT_EQ(c.h.ack, Seq32(kPeerIsn + 1));
  EXPECT_EQ(Drops(DropReason::kTcpSynChallenged), 1u);
  EXPECT_EQ(stack_->State(conn_), TcpState::kEstablished);
}

TEST_F(StackTest, ChallengeAcksAreRateLimited) {
  TcpOptions o = BaseOptions();
  o.challenge_ack_limit = 3;
  Make(o);
  Accept();
  for (int i = 0; i < 10; ++i) In(peer_.Build(kFlagRst, kPeerIsn + 100 + i, 0, 0));
  EXPECT_EQ(out_.Take().size(), 3u);
  EXPECT_EQ(stack_->stats().challenge_acks_suppressed, 7u);
  Advance(1'000'100);
  In(peer_.Build(kFlagRst, kPeerIsn + 100, 0, 0));
  EXPECT_EQ(out_.Take().size(), 1u);
}

TEST_F(StackTest, AckOfUnsentDataIsChallenged) {
  Make();
  Accept();
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 5000, 512, Ts(110, 0), Pattern(20, 1)));
  Wire c = One();
  EXPECT_EQ(c.h.flags, kFlagAck);
  EXPECT_EQ(Drops(DropReason::kTcpAckInvalid), 1u);
  EXPECT_TRUE(user_.data.empty());  // the segment was dropped
}

TEST_F(StackTest, PawsDropsOldTimestamps) {
  Make();
  Accept();
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(200, 0), Pattern(10, 1)));
  EXPECT_EQ(user_.data.size(), 10u);
  Advance(1000);
  out_.Take();  // the delayed ACK
  // TSval 150 < TS.Recent 200: RFC 7323 5.3 R1, ACK and drop.
  In(peer_.Build(kFlagAck, kPeerIsn + 11, iss_ + 1, 512, Ts(150, 0), Pattern(10, 2)));
  Wire a = One();
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 11));
  EXPECT_EQ(user_.data.size(), 10u);
  EXPECT_EQ(Drops(DropReason::kTcpPaws), 1u);
}

TEST_F(StackTest, OutOfOrderDataIsSackedHeldAndDelivered) {
  Make();
  Accept();
  // Hole at [1, 1001); data [1001, 2001) and [3001, 4001) arrive.
  In(peer_.Build(kFlagAck, kPeerIsn + 1001, iss_ + 1, 512, Ts(110, 0), Pattern(1000, 2)));
  Wire a = One();  // out of order: immediate ACK with SACK
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 1));
  ASSERT_EQ(a.o.sack_block_count, 1);
  EXPECT_EQ(a.o.sack_blocks[0], (SackBlock{Seq32(kPeerIsn + 1001), Seq32(kPeerIsn + 2001)}));
  In(peer_.Build(kFlagAck, kPeerIsn + 3001, iss_ + 1, 512, Ts(111, 0), Pattern(1000, 4)));
  a = One();
  ASSERT_EQ(a.o.sack_block_count, 2);  // RFC 2018 4: latest first
  EXPECT_EQ(a.o.sack_blocks[0].left_edge, Seq32(kPeerIsn + 3001));
  EXPECT_EQ(a.o.sack_blocks[1].left_edge, Seq32(kPeerIsn + 1001));
  EXPECT_TRUE(user_.data.empty());
  EXPECT_EQ(user_.ooo_bytes, 2000u);
  // Fill the first hole.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(112, 0), Pattern(1000, 1)));
  a = One();
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 2001));
  ASSERT_EQ(a.o.sack_block_count, 1);
  std::vector<uint8_t> expect = Pattern(1000, 1);
  const auto p2 = Pattern(1000, 2);
  expect.insert(expect.end(), p2.begin(), p2.end());
  EXPECT_EQ(user_.data, expect);
  // A duplicate gets a D-SACK (RFC 2883).
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(113, 0), Pattern(1000, 1)));
  a = One();
  ASSERT_GE(a.o.sack_block_count, 1);
  EXPECT_EQ(a.o.sack_blocks[0], (SackBlock{Seq32(kPeerIsn + 1), Seq32(kPeerIsn + 1001)}));
  EXPECT_EQ(user_.offset_errors, 0u);
}

TEST_F(StackTest, UnconsumedDataShrinksTheWindowUntilConsumed) {
  TcpOptions o = BaseOptions();
  o.receive_buffer_bytes = 4096;
  o.delayed_ack_us = 0;
  Make(o);
  Accept();
  user_.consume_limit = 0;
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(110, 0), Pattern(3000, 1)));
  Wire a = One();
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 3001));
  EXPECT_EQ(a.h.window, 4096 - 3000);
  // Bytes beyond the window are not taken.
  In(peer_.Build(kFlagAck, kPeerIsn + 3001, iss_ + 1, 512, Ts(111, 0), Pattern(2000, 2)));
  a = One();
  EXPECT_EQ(a.h.ack, Seq32(kPeerIsn + 4097));
  EXPECT_EQ(a.h.window, 0);
  user_.consume_limit = SIZE_MAX;
  stack_->DeliverPending(conn_, now_);
  EXPECT_EQ(user_.data.size(), 4096u);
  a = One();  // window update
  EXPECT_EQ(a.h.window, 4096);
}

TEST_F(StackTest, ZeroWindowIsProbed) {
  Make();
  Accept();
  // The peer closes its window.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 0, Ts(110, 0)));
  EXPECT_EQ(stack_->Send(conn_, ByteSpan(Pattern(100, 1)), now_), 100u);
  EXPECT_TRUE(out_.Take().empty());
  Advance(1'000'200);  // persist timer at the RTO
  Wire p = One();
  EXPECT_EQ(p.payload.size(), 1u);
  EXPECT_EQ(p.h.seq, Seq32(iss_ + 1));
  EXPECT_EQ(stack_->stats().window_probes, 1u);
  // Window opens: the rest goes out.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 2, 512, Ts(111, 0)));
  auto v = out_.Take();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].h.seq, Seq32(iss_ + 2));
  EXPECT_EQ(v[0].payload.size(), 99u);
}

TEST_F(StackTest, FastRetransmitOnThreeDupAcksWithoutSack) {
  Make();
  Options syn = SynOpts();
  syn.sack_permitted = false;
  Accept(syn);
  const auto data = Pattern(5 * 1448, 7);
  stack_->Send(conn_, ByteSpan(data), now_);
  ASSERT_EQ(out_.Take().size(), 5u);
  for (int i = 0; i < 3; ++i) {
    In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(110 + i, 0)));
  }
  Wire r = One();
  EXPECT_EQ(r.h.seq, Seq32(iss_ + 1));
  EXPECT_EQ(r.payload.size(), 1448u);
  EXPECT_EQ(stack_->stats().fast_retransmits, 1u);
  // Partial ACK (RFC 6582): the next hole is resent at once.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1 + 2 * 1448, 512, Ts(120, 0)));
  auto v = out_.Take();
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].h.seq, Seq32(iss_ + 1 + 2 * 1448));
}

TEST_F(StackTest, SackRecoveryRetransmitsOnlyTheHoles) {
  Make();
  Accept();
  const uint32_t m = 1448;
  stack_->Send(conn_, ByteSpan(Pattern(10 * m, 8)), now_);
  ASSERT_EQ(out_.Take().size(), 10u);
  const uint32_t base = iss_ + 1;
  // Segments 0 and 3 lost; 1-2 and 4-9 SACKed.
  auto sack_ack = [&](std::vector<std::pair<uint32_t, uint32_t>> blocks, uint32_t ts) {
    Options o = Ts(ts, 0);
    o.sack_block_count = static_cast<uint8_t>(blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) {
      o.sack_blocks[i] = SackBlock{Seq32(base + blocks[i].first * m), Seq32(base + blocks[i].second * m)};
    }
    o.timestamps.reset();  // room for 4 blocks
    In(peer_.Build(kFlagAck, kPeerIsn + 1, base, 512, o));
  };
  sack_ack({{1, 2}}, 110);
  sack_ack({{1, 3}}, 111);
  EXPECT_TRUE(out_.Take().empty());
  sack_ack({{4, 5}, {1, 3}}, 112);
  auto v = out_.Take();
  // Recovery: both holes (0 and 3) are resent, nothing else.
  ASSERT_GE(v.size(), 1u);
  EXPECT_EQ(v[0].h.seq, Seq32(base));
  sack_ack({{4, 10}, {1, 3}}, 113);
  v = out_.Take();
  bool resent3 = false;
  for (auto& w : v) {
    EXPECT_NE(w.h.seq, Seq32(base + 1 * m));
    EXPECT_NE(w.h.seq, Seq32(base + 5 * m));
    if (w.h.seq == Seq32(base + 3 * m)) resent3 = true;
  }
  EXPECT_TRUE(resent3);
  EXPECT_EQ(stack_->stats().sack_recoveries, 1u);
  In(peer_.Build(kFlagAck, kPeerIsn + 1, base + 10 * m, 512, Ts(114, 0)));
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(conn_, &info));
  EXPECT_EQ(info.unacked_bytes, 0u);
  EXPECT_EQ(info.retransmitted_segments, 2u);
}

TEST_F(StackTest, AbortSendsRst) {
  Make();
  Accept();
  stack_->Abort(conn_, now_);
  Wire r = One();
  EXPECT_TRUE(r.Has(kFlagRst));
  EXPECT_EQ(r.h.seq, Seq32(iss_ + 1));
  EXPECT_EQ(user_.close_reason, CloseReason::kAborted);
  EXPECT_EQ(stack_->State(conn_), TcpState::kClosed);  // stale handle
  EXPECT_EQ(stack_->Send(conn_, ByteSpan(Pattern(1, 1)), now_), 0u);
  EXPECT_EQ(stack_->LastSendStatus(), SendStatus::kBadConn);
}

TEST_F(StackTest, ListenerRefusalResets) {
  Make();
  user_.accept = false;
  ASSERT_TRUE(stack_->Listen(kPort, user_).ok());
  In(peer_.Build(kFlagSyn, kPeerIsn, 0, 65535, SynOpts()));
  const Wire sa = One();
  In(peer_.Build(kFlagAck, kPeerIsn + 1, sa.h.seq.value() + 1, 512, Ts(101, 0)));
  Wire r = One();
  EXPECT_TRUE(r.Has(kFlagRst));
  EXPECT_EQ(stack_->stats().listen_refused, 1u);
  EXPECT_EQ(stack_->connection_count(), 0u);
}

TEST_F(StackTest, SynCookiesWhenBacklogIsFull) {
  TcpOptions o = BaseOptions();
  o.syn_backlog = 1;
  Make(o);
  ASSERT_TRUE(stack_->Listen(kPort, user_).ok());
  In(peer_.Build(kFlagSyn, kPeerIsn, 0, 65535, SynOpts()));
  One();
  EXPECT_EQ(stack_->connection_count(), 1u);
  // Backlog full: a second client gets a stateless cookie SYN-ACK.
  SegBuilder p2 = peer_;
  p2.src_port = 40001;
  stack_->Input(kIpB, kIpA, ByteSpan(p2.Build(kFlagSyn, 5000, 0, 65535, SynOpts())), now_);
  Wire sa = One();
  EXPECT_EQ(sa.h.flags, kFlagSyn | kFlagAck);
  EXPECT_EQ(sa.o.mss, 1460);
  EXPECT_FALSE(sa.o.timestamps.has_value());
  EXPECT_EQ(stack_->connection_count(), 1u);
  EXPECT_EQ(stack_->stats().syn_cookies_sent, 1u);
  // The cookie ACK creates the connection.
  stack_->Input(kIpB, kIpA, ByteSpan(p2.Build(kFlagAck, 5001, sa.h.seq.value() + 1, 1000)), now_);
  EXPECT_EQ(stack_->connection_count(), 2u);
  EXPECT_EQ(stack_->stats().syn_cookies_accepted, 1u);
  ASSERT_EQ(user_.accepted.size(), 1u);
  EXPECT_EQ(stack_->Emss(user_.accepted[0]), 1460u);
  // A forged cookie is refused with RST.
  SegBuilder p3 = peer_;
  p3.src_port = 40002;
  stack_->Input(kIpB, kIpA, ByteSpan(p3.Build(kFlagAck, 6001, 12345, 1000)), now_);
  EXPECT_TRUE(One().Has(kFlagRst));
  EXPECT_EQ(Drops(DropReason::kTcpBadSynCookie), 1u);
}

TEST_F(StackTest, SynCookiesWhenTheTableIsFull) {
  TcpOptions o = BaseOptions();
  o.max_connections = 1;
  Make(o);
  Accept();  // the only slot
  SegBuilder p2 = peer_;
  p2.src_port = 40001;
  stack_->Input(kIpB, kIpA, ByteSpan(p2.Build(kFlagSyn, 5000, 0, 65535, SynOpts())), now_);
  Wire sa = One();
  EXPECT_EQ(sa.h.flags, kFlagSyn | kFlagAck);
  EXPECT_EQ(stack_->stats().syn_cookies_sent, 1u);
  // Its ACK finds no slot: dropped and counted, the first connection lives.
  stack_->Input(kIpB, kIpA, ByteSpan(p2.Build(kFlagAck, 5001, sa.h.seq.value() + 1, 1000)), now_);
  EXPECT_EQ(Drops(DropReason::kTcpTableFull), 1u);
  EXPECT_EQ(stack_->State(conn_), TcpState::kEstablished);
}

TEST_F(StackTest, KeepaliveProbesThenTimesOut) {
  TcpOptions o = BaseOptions();
  o.keepalive = true;
  o.keepalive_idle_s = 10;
  o.keepalive_interval_s = 1;
  o.keepalive_count = 2;
  Make(o);
  Accept();
  Advance(9'000'000);
  EXPECT_TRUE(out_.Take().empty());
  Advance(1'100'000);
  Wire k = One();
  EXPECT_EQ(k.h.seq, Seq32(iss_));  // SND.NXT - 1, no data
  EXPECT_TRUE(k.payload.empty());
  // The peer answers: the probes stop.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(300, 0)));
  Advance(1'100'000);
  EXPECT_TRUE(out_.Take().empty());
  // Silence: two probes, then the connection is reset.
  Advance(10'000'000);
  Advance(1'100'000);
  Advance(1'100'000);
  EXPECT_TRUE(user_.closed);
  EXPECT_EQ(user_.close_reason, CloseReason::kTimeout);
  EXPECT_EQ(stack_->stats().keepalive_probes, 3u);
}

TEST_F(StackTest, NagleHoldsSmallSegmentsWhileDataIsInFlight) {
  TcpOptions o = BaseOptions();
  o.nagle = true;
  Make(o);
  Accept();
  stack_->Send(conn_, ByteSpan(Pattern(10, 1)), now_);
  EXPECT_EQ(One().payload.size(), 10u);  // nothing in flight: sent
  stack_->Send(conn_, ByteSpan(Pattern(10, 2)), now_);
  stack_->Send(conn_, ByteSpan(Pattern(10, 3)), now_);
  EXPECT_TRUE(out_.Take().empty());  // held: RFC 9293 3.7.4
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 11, 512, Ts(110, 0)));
  EXPECT_EQ(One().payload.size(), 20u);  // coalesced
}

TEST_F(StackTest, NagleOffSendsEachWriteAtOnce) {
  Make();
  Accept();
  stack_->Send(conn_, ByteSpan(Pattern(10, 1)), now_);
  stack_->Send(conn_, ByteSpan(Pattern(10, 2)), now_);
  EXPECT_EQ(out_.Take().size(), 2u);
}

TEST_F(StackTest, TimeWaitIsBounded) {
  TcpOptions o = BaseOptions();
  o.max_time_wait = 1;
  Make(o);
  ASSERT_TRUE(stack_->Listen(kPort, user_).ok());
  for (uint16_t i = 0; i < 3; ++i) {
    SegBuilder p = peer_;
    p.src_port = static_cast<uint16_t>(41000 + i);
    auto in = [&](const std::vector<uint8_t>& s) { stack_->Input(kIpB, kIpA, ByteSpan(s), now_); };
    in(p.Build(kFlagSyn, kPeerIsn, 0, 65535));
    const uint32_t iss = One().h.seq.value();
    in(p.Build(kFlagAck, kPeerIsn + 1, iss + 1, 1000));
    const ConnId id = user_.accepted.back();
    stack_->Shutdown(id, now_);
    One();
    in(p.Build(kFlagFin | kFlagAck, kPeerIsn + 1, iss + 2, 1000));
    One();
    EXPECT_EQ(stack_->State(id), TcpState::kTimeWait);
  }
  EXPECT_EQ(stack_->connection_count(), 1u);
  EXPECT_EQ(stack_->stats().time_wait_recycled, 2u);
}

// An output whose device reads payload by reference lends the stack its
// send buffers (TcpOutput::SendMemory). A buffer the device may still read
// after its connection ended is not given to a new connection: its bytes
// would go out in the old connection's frames to the old peer.
TEST_F(StackTest, ALentSendBufferGoesToANewConnectionOnlyOnceTheDeviceIsDone) {
  TcpOptions o = BaseOptions();
  o.max_connections = 2;
  out_.provide_send_memory = true;
  Make(o);
  ASSERT_EQ(out_.send_memory.size(), 2u * o.send_buffer_bytes);
  Accept();
  stack_->Send(conn_, ByteSpan(Pattern(100, 1)), now_);
  const Wire d1 = One();
  EXPECT_EQ(d1.payload, Pattern(100, 1));
  const int64_t first = out_.BufferOf(d1.first_piece);
  ASSERT_GE(first, 0) << "the payload is not in the lent memory";
  stack_->Abort(conn_, now_);
  EXPECT_TRUE(One().Has(kFlagRst));
  out_.held = {static_cast<uint32_t>(first)};  // a frame of it still queued

  // Opens a connection from `port`; returns it, or nothing when the SYN
  // found no slot.
  auto open = [&](uint16_t port) -> std::optional<ConnId> {
    SegBuilder p = peer_;
    p.src_port = port;
    const size_t before = user_.accepted.size();
    In(p.Build(kFlagSyn, kPeerIsn, 0, 65535, SynOpts()));
    std::vector<Wire> v = out_.Take();
    if (v.empty()) return std::nullopt;
    EXPECT_EQ(v[0].h.flags, kFlagSyn | kFlagAck);
    In(p.Build(kFlagAck, kPeerIsn + 1, v[0].h.seq.value() + 1, 512,
               Ts(101, v[0].o.timestamps ? v[0].o.timestamps->ts_val : 0)));
    if (user_.accepted.size() != before + 1) return std::nullopt;
    return user_.accepted.back();
  };
  const std::optional<ConnId> second = open(41001);
  ASSERT_TRUE(second.has_value());
  stack_->Send(*second, ByteSpan(Pattern(100, 2)), now_);
  const Wire d2 = One();
  EXPECT_EQ(d2.payload, Pattern(100, 2));
  EXPECT_EQ(out_.BufferOf(d2.first_piece), 1 - first);
  EXPECT_GE(stack_->stats().send_buffers_held, 1u);

  // Every free slot's buffer still read: a SYN finds no slot (no SYN-ACK).
  stack_->Abort(*second, now_);
  out_.Take();
  out_.held = {0, 1};
  EXPECT_FALSE(open(41002).has_value());
  EXPECT_EQ(Drops(DropReason::kTcpTableFull), 1u);
  // The device let go of one.
  out_.held = {static_cast<uint32_t>(first)};
  const std::optional<ConnId> third = open(41003);
  ASSERT_TRUE(third.has_value());
  stack_->Send(*third, ByteSpan(Pattern(100, 3)), now_);
  EXPECT_EQ(out_.BufferOf(One().first_piece), 1 - first);
}

// RFC 6191: SYNs for a 4-tuple in TIME-WAIT. The stack closed actively
// (Accept() with `syn`, our FIN acknowledged, the peer's FIN at kPeerIsn + 1
// with TSval 112 when timestamps are on), so RCV.NXT is kPeerIsn + 2 and
// TS.Recent 112.
class TimeWaitSynTest : public StackTest {
 protected:
  void EnterTimeWait(const Options& syn) {
    Make();
    Accept(syn);
    const bool ts = syn.timestamps.has_value();
    stack_->Shutdown(conn_, now_);
    One();
    In(peer_.Build(kFlagFin | kFlagAck, kPeerIsn + 1, iss_ + 2, 512, ts ? Ts(112, 0) : Options()));
    One();
    ASSERT_EQ(stack_->State(conn_), TcpState::kTimeWait);
  }
  static Options NoTsSyn() {
    Options o = SynOpts();
    o.timestamps.reset();
    return o;
  }
  // Sends a SYN for the same 4-tuple; true if it was answered with a SYN-ACK
  // for it (a new incarnation), false if nothing was sent (dropped).
  bool NewSyn(uint32_t seq, const Options& o) {
    In(peer_.Build(kFlagSyn, seq, 0, 65535, o));
    auto v = out_.Take();
    if (v.empty()) return false;
    EXPECT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].h.flags, kFlagSyn | kFlagAck);
    EXPECT_EQ(v[0].h.ack, Seq32(seq + 1));
    new_iss_ = v[0].h.seq.value();
    return true;
  }
  // The old incarnation is still in TIME-WAIT, and the SYN was counted.
  void ExpectStillTimeWait(uint64_t old_syns) {
    EXPECT_EQ(stack_->connection_count(), 1u);
    TcpConnInfo list[2];
    ASSERT_EQ(stack_->ListConnections(list), 1u);
    EXPECT_EQ(list[0].state, TcpState::kTimeWait);
    EXPECT_EQ(Drops(DropReason::kTcpTimeWaitOldSyn), old_syns);
    EXPECT_EQ(stack_->stats().time_wait_reopened, 0u);
  }
  uint32_t new_iss_ = 0;
};

TEST_F(TimeWaitSynTest, NewerTimestampOpensANewIncarnationWhateverItsIsn) {
  EnterTimeWait(SynOpts(100));
  // Sequence number below RCV.NXT: the timestamp decides.
  ASSERT_TRUE(NewSyn(kPeerIsn - 5000, SynOpts(113)));
  EXPECT_EQ(stack_->stats().time_wait_reopened, 1u);
  EXPECT_EQ(Drops(DropReason::kTcpTimeWaitOldSyn), 0u);
  // The handshake completes and the listener gets a second connection.
  In(peer_.Build(kFlagAck, kPeerIsn - 4999, new_iss_ + 1, 512, Ts(114, 0)));
  EXPECT_TRUE(out_.Take().empty());
  ASSERT_EQ(user_.accepted.size(), 2u);
  EXPECT_EQ(stack_->State(user_.accepted[1]), TcpState::kEstablished);
  EXPECT_EQ(stack_->connection_count(), 1u);
  In(peer_.Build(kFlagAck | kFlagPsh, kPeerIsn - 4999, new_iss_ + 1, 512, Ts(115, 0),
                 Pattern(100, 3)));
  EXPECT_EQ(user_.data.size(), 100u);
}

TEST_F(TimeWaitSynTest, OlderTimestampIsAnOldDuplicateEvenAboveRcvNxt) {
  EnterTimeWait(SynOpts(100));
  EXPECT_FALSE(NewSyn(kPeerIsn + 100000, SynOpts(111)));
  ExpectStillTimeWait(1);
  // Retransmitted, it is dropped again and the 2 MSL timer still runs out.
  EXPECT_FALSE(NewSyn(kPeerIsn + 100000, SynOpts(111)));
  ExpectStillTimeWait(2);
  Advance(61'000'000);
  EXPECT_EQ(stack_->connection_count(), 0u);
}

TEST_F(TimeWaitSynTest, EqualTimestampNeedsAHigherSequenceNumber) {
  EnterTimeWait(SynOpts(100));
  EXPECT_FALSE(NewSyn(kPeerIsn + 2, SynOpts(112)));  // at RCV.NXT: not above
  ExpectStillTimeWait(1);
  EXPECT_TRUE(NewSyn(kPeerIsn + 3, SynOpts(112)));
  EXPECT_EQ(stack_->stats().time_wait_reopened, 1u);
}

TEST_F(TimeWaitSynTest, WithoutTimestampsTheIsnMustBeAboveRcvNxt) {
  EnterTimeWait(NoTsSyn());
  EXPECT_FALSE(NewSyn(kPeerIsn, NoTsSyn()));  // the old incarnation's SYN again
  ExpectStillTimeWait(1);
  EXPECT_FALSE(NewSyn(kPeerIsn + 2, NoTsSyn()));
  ExpectStillTimeWait(2);
  EXPECT_TRUE(NewSyn(kPeerIsn + 64000, NoTsSyn()));
  EXPECT_EQ(stack_->stats().time_wait_reopened, 1u);
  In(peer_.Build(kFlagAck, kPeerIsn + 64001, new_iss_ + 1, 512));
  ASSERT_EQ(user_.accepted.size(), 2u);
}

TEST_F(TimeWaitSynTest, OldIncarnationUsedTimestampsNewSynHasNone) {
  EnterTimeWait(SynOpts(100));
  // Timestamps would not be enabled for the new incarnation: the sequence
  // number decides.
  EXPECT_FALSE(NewSyn(kPeerIsn - 1, NoTsSyn()));
  ExpectStillTimeWait(1);
  EXPECT_TRUE(NewSyn(kPeerIsn + 10, NoTsSyn()));
}

TEST_F(TimeWaitSynTest, TimestampedSynAfterAnIncarnationWithoutThemIsNew) {
  EnterTimeWait(NoTsSyn());
  EXPECT_TRUE(NewSyn(kPeerIsn - 1, SynOpts(5)));
  EXPECT_EQ(stack_->stats().time_wait_reopened, 1u);
}

TEST_F(TimeWaitSynTest, TimestampRuleIsWrapSafe) {
  EnterTimeWait(SynOpts(0xFFFFFF00u));
  // TS.Recent is 112 from the FIN; 0xFFFFFF00 is "older" than 112 across the
  // wrap, 0x7000 is newer.
  EXPECT_FALSE(NewSyn(kPeerIsn + 100, SynOpts(0xFFFFFF00u)));
  ExpectStillTimeWait(1);
  EXPECT_TRUE(NewSyn(kPeerIsn + 100, SynOpts(0x7000)));
}

TEST_F(StackTest, ZeroWindowAcksAreNotDuplicateAcks) {
  Make();
  Accept();
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 0, Ts(110, 0)));
  stack_->Send(conn_, ByteSpan(Pattern(100, 1)), now_);
  Advance(1'000'200);
  One();  // the probe
  for (int i = 0; i < 4; ++i) In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 0, Ts(111 + i, 0)));
  EXPECT_TRUE(out_.Take().empty());
  EXPECT_EQ(stack_->stats().fast_retransmits, 0u);
}

TEST_F(StackTest, SendSpaceIsReportedAfterAFullBuffer) {
  TcpOptions o = BaseOptions();
  o.send_buffer_bytes = 4096;
  Make(o);
  Accept();
  const auto data = Pattern(10000, 1);
  EXPECT_EQ(stack_->Send(conn_, ByteSpan(data), now_), 4096u);
  EXPECT_EQ(stack_->LastSendStatus(), SendStatus::kNoSpace);
  EXPECT_EQ(stack_->SendSpace(conn_), 0u);
  EXPECT_EQ(stack_->SendRecord(conn_, ByteSpan(data).first(100), now_), SendStatus::kNoSpace);
  auto segs = out_.Take();
  uint32_t sent = 0;
  for (auto& w : segs) sent += static_cast<uint32_t>(w.payload.size());
  EXPECT_EQ(sent, 4096u);
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1 + 2896, 512, Ts(110, 0)));
  EXPECT_EQ(user_.send_space_calls, 1u);
  EXPECT_EQ(user_.last_space, 2896u);
  EXPECT_EQ(stack_->SendSpace(conn_), 2896u);
}

bool OddPortsOnly(void* ctx, const FourTuple& t) {
  ++*static_cast<int*>(ctx);
  return t.local_port % 2 == 1;
}

TEST_F(StackTest, PortFilterChoosesEphemeralPorts) {
  TcpOptions o = BaseOptions();
  o.ephemeral_port_min = 50000;
  o.ephemeral_port_max = 50003;
  Make(o);
  int calls = 0;
  stack_->SetPortFilter(&OddPortsOnly, &calls);
  auto a = stack_->Connect(kIpA, kIpB, kPeerPort, user_, 0, now_);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(One().h.src_port, 50001);
  auto b = stack_->Connect(kIpA, kIpB, kPeerPort, user_, 0, now_);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(One().h.src_port, 50003);
  auto c = stack_->Connect(kIpA, kIpB, kPeerPort, user_, 0, now_);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_GT(calls, 2);
  // Not our address.
  EXPECT_EQ(stack_->Connect(kIpB, kIpA, 1, user_, 0, now_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(StackTest, UnlistenResetsHalfOpenConnections) {
  Make();
  ASSERT_TRUE(stack_->Listen(kPort, user_).ok());
  EXPECT_EQ(stack_->Listen(kPort, user_).code(), absl::StatusCode::kAlreadyExists);
  In(peer_.Build(kFlagSyn, kPeerIsn, 0, 65535, SynOpts()));
  One();
  ASSERT_TRUE(stack_->Unlisten(kPort).ok());
  EXPECT_TRUE(One().Has(kFlagRst));
  EXPECT_EQ(stack_->connection_count(), 0u);
  In(peer_.Build(kFlagSyn, kPeerIsn, 0, 65535, SynOpts()));
  EXPECT_TRUE(One().Has(kFlagRst));  // nobody listens any more
}

TEST_F(StackTest, TxNoBufferIsRecoveredByRetransmission) {
  Make();
  Accept();
  out_.fail_next_ = 1;
  stack_->Send(conn_, ByteSpan(Pattern(100, 1)), now_);
  One();  // offered to the data plane, which had no buffer
  EXPECT_EQ(Drops(DropReason::kTcpTxNoBuffer), 1u);
  Advance(1'000'200);
  Wire r = One();
  EXPECT_EQ(r.payload.size(), 100u);
  EXPECT_EQ(r.h.seq, Seq32(iss_ + 1));
}

TEST_F(StackTest, SynBacklogFullWithoutCookiesDrops) {
  TcpOptions o = BaseOptions();
  o.syn_backlog = 1;
  o.syn_cookies = SynCookieMode::kOff;
  Make(o);
  ASSERT_TRUE(stack_->Listen(kPort, user_).ok());
  In(peer_.Build(kFlagSyn, kPeerIsn, 0, 65535, SynOpts()));
  One();
  SegBuilder p2 = peer_;
  p2.src_port = 40001;
  stack_->Input(kIpB, kIpA, ByteSpan(p2.Build(kFlagSyn, 5000, 0, 65535, SynOpts())), now_);
  EXPECT_TRUE(out_.Take().empty());
  EXPECT_EQ(Drops(DropReason::kTcpSynBacklogFull), 1u);
}

TEST_F(StackTest, SynReceivedTimesOutAndFreesTheBacklog) {
  TcpOptions o = BaseOptions();
  o.max_syn_retransmissions = 1;
  Make(o);
  ASSERT_TRUE(stack_->Listen(kPort, user_).ok());
  In(peer_.Build(kFlagSyn, kPeerIsn, 0, 65535, SynOpts()));
  One();
  Advance(1'000'200);
  EXPECT_EQ(One().h.flags, kFlagSyn | kFlagAck);  // SYN-ACK retransmitted
  Advance(2'000'200);
  EXPECT_TRUE(One().Has(kFlagRst));
  EXPECT_EQ(stack_->connection_count(), 0u);
  EXPECT_TRUE(user_.events.empty());  // the listener never saw it
}

TEST_F(StackTest, AckIsProcessedWhenOurWindowIsZero) {
  TcpOptions o = BaseOptions();
  o.receive_buffer_bytes = 2048;
  o.delayed_ack_us = 0;
  Make(o);
  Accept();
  user_.consume_limit = 0;
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(110, 0), Pattern(2048, 1)));
  EXPECT_EQ(One().h.window, 0);
  stack_->Send(conn_, ByteSpan(Pattern(100, 2)), now_);
  One();
  // The peer's next data does not fit, but its ACK of our 100 bytes counts.
  In(peer_.Build(kFlagAck, kPeerIsn + 2049, iss_ + 101, 512, Ts(111, 0), Pattern(10, 3)));
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(conn_, &info));
  EXPECT_EQ(info.unacked_bytes, 0u);
  EXPECT_EQ(info.bytes_out, 100u);
}

// The configured algorithm sets ssthresh on a loss: NewReno FlightSize / 2
// (RFC 5681 eq. 4), CUBIC 0.7 * cwnd (RFC 8312 4.5).
TEST_F(StackTest, CongestionControlIsSelectable) {
  for (CcAlgorithm algo : {CcAlgorithm::kNewReno, CcAlgorithm::kCubic}) {
    SCOPED_TRACE(CcAlgorithmName(algo));
    TcpOptions o = BaseOptions();
    o.congestion_control = algo;
    out_.Take();
    user_ = RecordingUser();
    Make(o);
    Options syn = SynOpts();
    syn.sack_permitted = false;
    Accept(syn);
    stack_->Send(conn_, ByteSpan(Pattern(5 * 1448, 7)), now_);
    out_.Take();
    for (int i = 0; i < 3; ++i) In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(110 + i, 0)));
    TcpConnInfo info;
    ASSERT_TRUE(stack_->GetConnection(conn_, &info));
    if (algo == CcAlgorithm::kNewReno) {
      EXPECT_EQ(info.ssthresh, 5u * 1448 / 2);
    } else {
      EXPECT_NEAR(info.ssthresh, 14480 * 7 / 10, 8);
    }
  }
}

TEST_F(StackTest, OutOfOrderHoldingIsBounded) {
  TcpOptions o = BaseOptions();
  o.max_ooo_segments = 2;
  Make(o);
  Accept();
  for (int i = 1; i <= 4; ++i) {
    In(peer_.Build(kFlagAck, kPeerIsn + 1 + 200 * i, iss_ + 1, 512, Ts(110 + i, 0), Pattern(100, i)));
  }
  EXPECT_EQ(Drops(DropReason::kTcpReasmFull), 2u);
  EXPECT_EQ(stack_->stats().ooo_segments, 2u);
  // In-order data is always taken.
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(120, 0), Pattern(200, 9)));
  EXPECT_EQ(user_.data.size(), 300u);  // [0, 200) plus the held [200, 300)
}

TEST_F(StackTest, AckBelowTheWindowIsChallenged) {
  Make();
  Accept();  // MAX.SND.WND = 65536
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1 - 70000, 512, Ts(110, 0), Pattern(10, 1)));
  EXPECT_EQ(One().h.flags, kFlagAck);
  EXPECT_EQ(Drops(DropReason::kTcpAckInvalid), 1u);
  EXPECT_TRUE(user_.data.empty());
  // Old but within MAX.SND.WND: accepted (RFC 5961 5.2).
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1 - 1000, 512, Ts(111, 0), Pattern(10, 1)));
  EXPECT_EQ(user_.data.size(), 10u);
}

TEST_F(StackTest, PartlyConsumedDataIsOfferedAgainAtTheRightOffset) {
  Make();
  Accept();
  user_.consume_limit = 30;
  const auto d1 = Pattern(100, 1);
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(110, 0), d1));
  EXPECT_EQ(user_.data.size(), 30u);
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(conn_, &info));
  EXPECT_EQ(info.recv_queued, 70u);
  user_.consume_limit = SIZE_MAX;
  const auto d2 = Pattern(50, 2);
  In(peer_.Build(kFlagAck, kPeerIsn + 101, iss_ + 1, 512, Ts(111, 0), d2));
  std::vector<uint8_t> expect = d1;
  expect.insert(expect.end(), d2.begin(), d2.end());
  EXPECT_EQ(user_.data, expect);
  EXPECT_EQ(user_.offset_errors, 0u);
}

TEST_F(StackTest, LimitedTransmitOnTheFirstTwoDuplicateAcks) {
  Make();
  Options syn = SynOpts();
  syn.sack_permitted = false;
  Accept(syn);
  stack_->Send(conn_, ByteSpan(Pattern(20 * 1448, 7)), now_);
  ASSERT_EQ(out_.Take().size(), 10u);  // initial window
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(110, 0)));
  Wire w = One();  // RFC 3042: one new segment
  EXPECT_EQ(w.h.seq, Seq32(iss_ + 1 + 10 * 1448));
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(111, 0)));
  EXPECT_EQ(One().h.seq, Seq32(iss_ + 1 + 11 * 1448));
  In(peer_.Build(kFlagAck, kPeerIsn + 1, iss_ + 1, 512, Ts(112, 0)));
  auto v = out_.Take();  // third: fast retransmit of the first segment
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].h.seq, Seq32(iss_ + 1));
  TcpConnInfo info;
  ASSERT_TRUE(stack_->GetConnection(conn_, &info));
  EXPECT_EQ(info.fast_retransmits, 1u);
}

TEST_F(StackTest, NextTimerTellsWhenToRunTimers) {
  Make();
  EXPECT_FALSE(stack_->NextTimerUs().has_value());
  Accept();
  stack_->Send(conn_, ByteSpan(Pattern(100, 1)), now_);
  One();
  ASSERT_TRUE(stack_->NextTimerUs().has_value());
  EXPECT_LE(*stack_->NextTimerUs(), now_ + 1'000'000 + 300);
  EXPECT_GT(*stack_->NextTimerUs(), now_);
}

TEST_F(StackTest, TimersCountFromTheCallersClockNotTheLastRunTimers) {
  Make();
  now_ += 10'000'000;  // no RunTimers call for 10 s
  Accept();
  stack_->Send(conn_, ByteSpan(Pattern(100, 1)), now_);
  One();
  Advance(500'000);
  EXPECT_TRUE(out_.Take().empty());  // the 1 s RTO has not elapsed
  Advance(600'000);
  EXPECT_EQ(One().payload.size(), 100u);
}

TEST_F(StackTest, OptionsAreValidated) {
  TcpOptions o = BaseOptions();
  o.window_scale = 15;
  const uint32_t ips[] = {kIpA};
  auto s = TcpStack::Create(o, ips, out_, isn_, 0);
  EXPECT_FALSE(s.ok());
  o = BaseOptions();
  o.rto_initial_us = 1;
  EXPECT_FALSE(TcpStack::Create(o, ips, out_, isn_, 0).ok());
}

TEST_F(StackTest, CounterNamesAreListed) {
  Make();
  size_t n = 0;
  bool saw = false;
  stack_->stats().ForEachCounter([&](std::string_view name, uint64_t) {
    ++n;
    if (name == "retransmitted_segments") saw = true;
  });
  EXPECT_GT(n, 20u);
  EXPECT_TRUE(saw);
  EXPECT_EQ(DropReasonName(DropReason::kTcpPaws), "tcp_paws");
}

}  // namespace
}  // namespace iwarp::tcp

namespace iwarp::tcp {
namespace {

// Test mode: a connection adopted in ESTABLISHED with agreed sequence
// numbers, no handshake; a generator replaying one pass of loop_bytes over
// and over is one in-order stream.
TEST_F(StackTest, AdoptedConnectionLoopsItsReceiveSequence) {
  Make();
  const FourTuple t{kIpA, kPort, kIpB, peer_.src_port};
  constexpr uint32_t kIss = 1000, kIrs = 0xFFFFFF00;  // the pass crosses the 2^32 wrap
  constexpr uint32_t kLoop = 3000;
  auto c = stack_->AdoptEstablished(t, Seq32(kIss), Seq32(kIrs), 65535, kLoop, user_, now_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(stack_->State(*c), TcpState::kEstablished);
  EXPECT_TRUE(out_.Take().empty()) << "no SYN, no handshake";
  EXPECT_EQ(stack_->AdoptEstablished(t, Seq32(kIss), Seq32(kIrs), 65535, kLoop, user_, now_).status().code(),
            absl::StatusCode::kAlreadyExists);

  const std::vector<uint8_t> pass = Pattern(kLoop, 7);
  auto seg = [&](uint32_t off, uint32_t len) {
    return peer_.Build(kFlagAck, kIrs + 1 + off, kIss + 1, 65535, Options(),
                       std::vector<uint8_t>(pass.begin() + off, pass.begin() + off + len));
  };
  // Three passes; the second loses its middle segment, which only the third
  // pass brings (same sequence numbers): the stream still arrives in order.
  for (int p = 0; p < 3; ++p) {
    for (uint32_t off = 0; off < kLoop; off += 1000) {
      if (p == 1 && off == 1000) continue;
      In(seg(off, 1000));
    }
  }
  // Pass 1 whole (3000); pass 2's first 1000, its 2000..3000 held out of
  // order until pass 3's copy of 1000..2000 filled the gap (pass 3's start
  // was a duplicate): 6000 bytes, offsets continuous. Pass 3's last segment
  // now waits out of order for the next pass.
  EXPECT_EQ(user_.offset_errors, 0u);
  ASSERT_EQ(user_.data.size(), 2u * kLoop);
  for (size_t i = 0; i < user_.data.size(); ++i) ASSERT_EQ(user_.data[i], pass[i % kLoop]) << i;
  EXPECT_EQ(stack_->stats().test_loops, 2u);
  EXPECT_EQ(stack_->stats().test_adopted, 1u);
  // The ACKs go to the generator with our ISS + 1 and, after a loop, the
  // pass's start again.
  const auto acks = out_.Take();
  ASSERT_FALSE(acks.empty());
  EXPECT_EQ(acks.back().h.seq.value(), kIss + 1);
  EXPECT_EQ(acks.back().h.ack.value(), kIrs + 1);
  EXPECT_FALSE(stack_->AdoptEstablished(FourTuple{kIpB, 1, kIpA, 2}, Seq32(1), Seq32(1), 1, 0, user_, now_).ok())
      << "local address not ours";
}

}  // namespace
}  // namespace iwarp::tcp

namespace iwarp::tcp {
namespace {

// A user that sends from inside a callback with the time of its last poll
// (older than the segment being handled) must not make our timestamps go
// back: RFC 7323 5.3 has the peer discard such segments (PAWS).
TEST_F(StackTest, TimestampsNeverGoBackWhenACallerPassesAnOlderTime) {
  Make();
  Accept();
  now_ += 50'000;
  In(peer_.Build(kFlagAck | kFlagPsh, kPeerIsn + 1, iss_ + 1, 512, Ts(200, our_tsval_),
                 std::vector<uint8_t>(10, 1)));
  Advance(500'000);  // the delayed ACK goes out
  auto acks = out_.Take();
  ASSERT_FALSE(acks.empty());
  ASSERT_TRUE(acks.back().o.timestamps.has_value());
  const uint32_t acked_at = acks.back().o.timestamps->ts_val;
  // The same connection sends with a time 8 ms older than the segment's.
  const std::vector<uint8_t> data(100, 2);
  ASSERT_EQ(stack_->Send(conn_, ByteSpan(data), now_ - 8'000), data.size());
  auto sent = out_.Take();
  ASSERT_FALSE(sent.empty());
  ASSERT_TRUE(sent.back().o.timestamps.has_value());
  EXPECT_GE(static_cast<int32_t>(sent.back().o.timestamps->ts_val - acked_at), 0)
      << "TSval went back from " << acked_at << " to " << sent.back().o.timestamps->ts_val;
  // Timers given an older time do not run the clock back either.
  stack_->RunTimers(now_ - 20'000);
  ASSERT_EQ(stack_->Send(conn_, ByteSpan(data), now_ - 20'000), data.size());
  auto later = out_.Take();
  if (!later.empty() && later.back().o.timestamps.has_value()) {
    EXPECT_GE(static_cast<int32_t>(later.back().o.timestamps->ts_val - acked_at), 0);
  }
}

}  // namespace
}  // namespace iwarp::tcp
