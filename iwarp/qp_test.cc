// Two iWARP engines over two TcpStacks joined by an in-memory link on a
// virtual clock: MPA connection setup, Send / Write / Read end to end with
// byte comparison and SHA-256 at the sink, CRC and Markers, link impairment.
#include "iwarp/qp.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "common/sha256.h"
#include "iwarp/qp_test_util.h"

namespace iwarp::engine {
namespace {

using testing::Pair;
using testing::PairTcpOptions;
using testing::Side;
using tcp::testing::Pattern;

QpOptions Opts() { return QpOptions{}; }

// ---------------------------------------------------------------- setup

TEST(QpSetup, Rev2EnhancedWriteRtrAndPrivateData) {
  Pair p(Opts(), Opts());
  p.b.obs.reply_pd = {'r', 'e', 'p'};
  const std::vector<uint8_t> pd = {'h', 'e', 'l', 'l', 'o'};
  ASSERT_TRUE(p.Establish(ByteSpan(pd)));
  EXPECT_EQ(p.a.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.qp->state(), QpState::kRts);
  EXPECT_EQ(p.b.obs.request_pd, pd);
  EXPECT_EQ(p.a.obs.peer_pd, p.b.obs.reply_pd);
  EXPECT_EQ(p.b.obs.request_revision, 2);
  const Negotiated& na = p.a.qp->negotiated();
  const Negotiated& nb = p.b.qp->negotiated();
  EXPECT_TRUE(na.enhanced && nb.enhanced);
  EXPECT_TRUE(na.crc && nb.crc);
  EXPECT_EQ(na.rtr, kRtrWrite);  // Write preferred among the offered types
  EXPECT_EQ(nb.rtr, kRtrWrite);
  EXPECT_TRUE(nb.peer_to_peer);
  // The responder consumed exactly one FPDU (the RTR) before Full Operation.
  EXPECT_EQ(p.b.qp->stats().fpdus_in, 1u);
  EXPECT_EQ(p.b.qp->stats().bytes_placed, 0u);
}

TEST(QpSetup, Rev1NoEnhancedResponderWaitsForFirstFpdu) {
  QpOptions o = Opts();
  o.mpa.revision = 1;
  Pair p(o, Opts());
  ASSERT_TRUE(p.Connect().ok());
  ASSERT_TRUE(p.RunUntil([&] { return p.a.obs.established; }, 1'000'000));
  EXPECT_EQ(p.b.obs.request_revision, 1);
  EXPECT_EQ(p.a.qp->negotiated().revision, 1);
  EXPECT_FALSE(p.a.qp->negotiated().enhanced);
  // Rev 1 (RFC 5044 7.1.2): the responder may not send until the
  // initiator's first FPDU arrived.
  EXPECT_EQ(p.b.qp->state(), QpState::kAwaitRtr);
  std::vector<uint8_t> buf(16);
  const uint32_t rstag = p.b.mem.Register(16, ddp::kAccessLocalWrite);
  ASSERT_EQ(p.b.qp->PostRecv(RecvWr{7, LocalSge{rstag, 0x10000, 16}}), PostStatus::kOk);
  const uint32_t sstag = p.a.mem.Register(4, 0);
  std::memcpy(p.a.mem.Bytes(sstag).data(), "abcd", 4);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kSend, LocalSge{sstag, 0x10000, 4}}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return !p.b.cqes.empty(); }, 1'000'000));
  EXPECT_TRUE(p.b.obs.established);
  EXPECT_EQ(p.b.cqes[0].byte_len, 4u);
  EXPECT_EQ(std::memcmp(p.b.mem.Bytes(rstag).data(), "abcd", 4), 0);
}

TEST(QpSetup, ReadRtrAndSendRtr) {
  for (uint8_t rtr : {kRtrRead, kRtrSend}) {
    QpOptions oa = Opts();
    oa.mpa.rtr_types = rtr;
    Pair p(oa, [&] {
      QpOptions o = Opts();
      o.mpa.rtr_types = kRtrSend | kRtrWrite | kRtrRead;
      return o;
    }());
    ASSERT_TRUE(p.Establish()) << int(rtr);
    EXPECT_EQ(p.a.qp->negotiated().rtr, rtr);
    EXPECT_EQ(p.b.qp->negotiated().rtr, rtr);
    // A Send after the RTR still lands (Send RTR used MSN 1 on both sides).
    const uint32_t rstag = p.b.mem.Register(8, ddp::kAccessLocalWrite);
    ASSERT_EQ(p.b.qp->PostRecv(RecvWr{9, LocalSge{rstag, 0x10000, 8}}), PostStatus::kOk);
    const uint32_t sstag = p.a.mem.Register(8, 0);
    ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kSend, LocalSge{sstag, 0x10000, 8}}),
              PostStatus::kOk);
    ASSERT_TRUE(p.RunUntil([&] { return !p.b.cqes.empty() && !p.a.cqes.empty(); }, 1'000'000));
    EXPECT_EQ(p.b.cqes[0].status, WcStatus::kSuccess);
    EXPECT_EQ(p.a.cqes[0].status, WcStatus::kSuccess);
    if (rtr == kRtrRead) {
      EXPECT_EQ(p.b.qp->stats().read_responses_sent, 1u);
    }
  }
}

// INTEROP.md: the initiator sends nothing after its Request until the Reply
// arrives, the responder nothing after its Reply until the RTR arrives, even
// with work posted early on both sides.
TEST(QpSetup, NothingSentBeforeTheHandshakeAllows) {
  Pair p(Opts(), Opts());
  std::vector<std::pair<QpState, size_t>> a_tx, b_tx;
  p.a.port->mutate = [&](std::vector<uint8_t>& b, size_t hl) {
    if (b.size() > hl) a_tx.push_back({p.a.qp->state(), b.size() - hl});
  };
  p.b.port->mutate = [&](std::vector<uint8_t>& b, size_t hl) {
    if (b.size() > hl) b_tx.push_back({p.b.qp->state(), b.size() - hl});
  };
  const uint32_t sa = p.a.mem.Register(64, 0);
  const uint32_t sb = p.b.mem.Register(64, 0);
  const uint32_t wa = p.a.mem.Register(64, ddp::kAccessRemoteWrite);
  const uint32_t wb = p.b.mem.Register(64, ddp::kAccessRemoteWrite);
  ASSERT_TRUE(p.Connect().ok());
  ASSERT_TRUE(p.RunUntil([&] { return p.a.qp->state() == QpState::kAwaitReply; }, 1'000'000));
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kRdmaWrite, LocalSge{sa, 0x10000, 64}, wb, 0x10000}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return p.b.qp->state() == QpState::kAwaitRtr; }, 1'000'000));
  ASSERT_EQ(p.b.qp->PostSend(SendWr{2, WrOpcode::kRdmaWrite, LocalSge{sb, 0x10000, 64}, wa, 0x10000}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return p.a.cqes.size() == 1 && p.b.cqes.size() == 1; }, 1'000'000));
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kSuccess);
  EXPECT_EQ(p.b.cqes[0].status, WcStatus::kSuccess);
  // a: only the 24-byte Request (header + IRD/ORD) before the Reply.
  ASSERT_GE(a_tx.size(), 2u);
  EXPECT_EQ(a_tx[0].second, 24u);
  EXPECT_NE(a_tx[0].first, QpState::kRts);  // emitted while setting up
  for (size_t i = 1; i < a_tx.size(); ++i) EXPECT_EQ(a_tx[i].first, QpState::kRts) << i;
  // b: the Reply is emitted before the state moves on; nothing else before the RTR.
  ASSERT_GE(b_tx.size(), 2u);
  EXPECT_EQ(b_tx[0].second, 24u);
  EXPECT_NE(b_tx[0].first, QpState::kRts);
  for (size_t i = 1; i < b_tx.size(); ++i) EXPECT_EQ(b_tx[i].first, QpState::kRts) << i;
}

TEST(QpSetup, NoMatchingRtrIsRejected) {
  QpOptions oa = Opts();
  oa.mpa.rtr_types = kRtrSend;
  QpOptions ob = Opts();
  ob.mpa.rtr_types = kRtrWrite | kRtrRead;  // like siw: no Send RTR
  Pair p(oa, ob);
  ASSERT_TRUE(p.Connect().ok());
  p.RunUntil([&] { return p.a.obs.failed != ConnectError::kNone; }, 1'000'000);
  EXPECT_EQ(p.b.obs.failed, ConnectError::kNoMatchingRtr);
  EXPECT_EQ(p.a.obs.failed, ConnectError::kRejected);
}

TEST(QpSetup, ApplicationRejectCarriesPrivateData) {
  Pair p(Opts(), Opts());
  p.b.obs.accept = false;
  p.b.obs.reply_pd = {'n', 'o'};
  ASSERT_TRUE(p.Connect().ok());
  ASSERT_TRUE(p.RunUntil([&] { return p.a.obs.failed != ConnectError::kNone; }, 1'000'000));
  EXPECT_EQ(p.a.obs.failed, ConnectError::kRejected);
  EXPECT_EQ(p.a.obs.peer_pd, p.b.obs.reply_pd);
  EXPECT_EQ(p.b.obs.failed, ConnectError::kRejectedLocally);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  p.RunUntil([&] { return p.a.obs.disconnected && p.b.obs.disconnected; }, 1'000'000);
  EXPECT_TRUE(p.a.obs.disconnected);
}

TEST(QpSetup, OversizedPrivateDataFailsSetup) {
  QpOptions ob = Opts();
  ob.mpa.max_private_data = 16;
  Pair p(Opts(), ob);
  std::vector<uint8_t> pd(100, 7);
  ASSERT_TRUE(p.Connect(ByteSpan(pd)).ok());
  p.RunUntil([&] { return p.a.obs.failed != ConnectError::kNone; }, 1'000'000);
  EXPECT_EQ(p.b.obs.failed, ConnectError::kInvalidStartupFrame);
  EXPECT_EQ(p.b.obs.requests, 0);  // never shown to the application
  EXPECT_EQ(p.a.obs.failed, ConnectError::kTcpFailed);  // RST
  // Above the RFC maximum the initiator refuses locally.
  Pair q(Opts(), Opts());
  std::vector<uint8_t> big(510, 1);
  EXPECT_FALSE(q.Connect(ByteSpan(big)).ok());
}

TEST(QpSetup, MarkersRequestedAndCrcFromEitherSide) {
  QpOptions oa = Opts();
  oa.mpa.crc = false;
  oa.mpa.want_markers = true;
  QpOptions ob = Opts();
  ob.mpa.crc = true;
  Pair p(oa, ob);
  ASSERT_TRUE(p.Establish());
  EXPECT_TRUE(p.a.qp->negotiated().crc);
  EXPECT_TRUE(p.b.qp->negotiated().crc);
  EXPECT_TRUE(p.a.qp->negotiated().rx_markers);
  EXPECT_FALSE(p.a.qp->negotiated().tx_markers);
  EXPECT_TRUE(p.b.qp->negotiated().tx_markers);
}

// A TcpUser that accepts or connects and then says nothing.
class SilentUser : public tcp::TcpUser {
 public:
  tcp::TcpUser* OnAccept(tcp::ConnId, const tcp::FourTuple&) override { return this; }
  size_t OnData(tcp::ConnId, uint64_t, ByteSpan d) override { return d.size(); }
};

TEST(QpSetup, InitiatorTimesOutWithoutReply) {
  Pair p(Opts(), Opts());
  SilentUser silent;
  ASSERT_TRUE(p.b.stack->Listen(9999, silent).ok());
  ASSERT_TRUE(p.a.qp->Connect(tcp::testing::kIpA, tcp::testing::kIpB, 9999, {}, p.link.now).ok());
  ASSERT_FALSE(p.RunUntil([&] { return p.a.obs.failed != ConnectError::kNone; }, 9'000'000));
  ASSERT_TRUE(p.RunUntil([&] { return p.a.obs.failed != ConnectError::kNone; }, 2'000'000));
  EXPECT_EQ(p.a.obs.failed, ConnectError::kTimeout);
}

// A connection that never sends its Request is reset by the listener's gate
// after request_timeout (RFC 5044 7.1.2 rules 8 and 10) without ever taking
// the QP, which stays in the pool for the next initiator.
TEST(QpSetup, ResponderTimesOutWithoutRequest) {
  Pair p(Opts(), Opts());
  struct ClosedUser final : tcp::TcpUser {
    size_t OnData(tcp::ConnId, uint64_t, ByteSpan d) override { return d.size(); }
    void OnClosed(tcp::ConnId, tcp::CloseReason r) override { reason = r; }
    std::optional<tcp::CloseReason> reason;
  } silent;
  ASSERT_TRUE(p.a.stack->Connect(tcp::testing::kIpA, tcp::testing::kIpB, testing::kPort, silent,
                                 0, p.link.now)
                  .ok());
  ASSERT_FALSE(p.RunUntil([&] { return silent.reason.has_value(); }, 4'000'000));
  ASSERT_TRUE(p.RunUntil([&] { return silent.reason.has_value(); }, 2'000'000));
  EXPECT_EQ(*silent.reason, tcp::CloseReason::kResetByPeer);
  EXPECT_EQ(p.listener->gate().counters().request_timeouts, 1u);
  EXPECT_EQ(p.b.qp->state(), QpState::kIdle);  // never bound
  EXPECT_EQ(p.b.obs.failed, ConnectError::kNone);
  EXPECT_EQ(p.listener->pool_size(), 1u);
  // The QP still serves a real initiator.
  EXPECT_TRUE(p.Establish());
}

// A raw initiator: on connect it writes `bytes` (an MPA Request, maybe with
// more after it) and then stays silent.
class RawInitiator : public tcp::TcpUser {
 public:
  RawInitiator(tcp::TcpStack& s, std::vector<uint8_t> b) : stack(s), bytes(std::move(b)) {}
  void OnConnected(tcp::ConnId c) override {
    stack.Send(c, ByteSpan(bytes), 0);
  }
  size_t OnData(tcp::ConnId, uint64_t, ByteSpan d) override {
    received.insert(received.end(), d.begin(), d.end());
    return d.size();
  }
  tcp::TcpStack& stack;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> received;
};

std::vector<uint8_t> RequestBytes(bool write_rtr) {
  mpa::StartupFrame f;
  f.type = mpa::FrameType::kRequest;
  f.crc = true;
  f.revision = 2;
  mpa::IrdOrd io;
  io.ird = 8;
  io.ord = 8;
  io.peer_to_peer = true;
  io.write_rtr = write_rtr;
  f.ird_ord = io;
  std::vector<uint8_t> b(mpa::StartupFrameSize(f));
  mpa::EncodeStartupFrame(f, MutableByteSpan(b));
  return b;
}

TEST(QpSetup, ResponderTimesOutWithoutRtr) {
  Pair p(Opts(), Opts());
  RawInitiator raw(*p.a.stack, RequestBytes(true));
  ASSERT_TRUE(p.a.stack->Connect(tcp::testing::kIpA, tcp::testing::kIpB, testing::kPort, raw, 0,
                                 p.link.now)
                  .ok());
  ASSERT_TRUE(p.RunUntil([&] { return p.b.qp->state() == QpState::kAwaitRtr; }, 1'000'000));
  p.RunUntil([] { return false; }, 100'000);
  EXPECT_EQ(raw.received.size(), 24u);  // the Reply, and nothing after it
  EXPECT_EQ(std::string(raw.received.begin(), raw.received.begin() + 16), "MPA ID Rep Frame");
  ASSERT_FALSE(p.RunUntil([&] { return p.b.obs.failed != ConnectError::kNone; }, 9'000'000));
  ASSERT_TRUE(p.RunUntil([&] { return p.b.obs.failed != ConnectError::kNone; }, 2'000'000));
  EXPECT_EQ(p.b.obs.failed, ConnectError::kTimeout);
}

TEST(QpSetup, BytesAfterTheRequestAreAProtocolError) {
  Pair p(Opts(), Opts());
  std::vector<uint8_t> b = RequestBytes(true);
  b.insert(b.end(), {0, 0, 0, 0});  // an initiator may not send before the Reply
  RawInitiator raw(*p.a.stack, b);
  ASSERT_TRUE(p.a.stack->Connect(tcp::testing::kIpA, tcp::testing::kIpB, testing::kPort, raw, 0,
                                 p.link.now)
                  .ok());
  ASSERT_TRUE(p.RunUntil([&] { return p.listener->gate().counters().bad_requests > 0; },
                         1'000'000));
  EXPECT_EQ(p.listener->gate().counters().bad_requests, 1u);
  EXPECT_EQ(p.b.obs.requests, 0);
  EXPECT_EQ(p.b.qp->state(), QpState::kIdle);  // the gate refused it: no QP taken
  EXPECT_TRUE(raw.received.empty());  // no Reply
}

// RFC 6581: an initiator that cannot use the Reply (here: insufficient IRD)
// answers with a Terminate in place of the RTR. The responder records it and
// closes; it never answers a Terminate with another one.
TEST(QpSetup, InitiatorTerminateInPlaceOfTheRtr) {
  Pair p(Opts(), Opts());
  struct TerminatingInitiator final : tcp::TcpUser {
    explicit TerminatingInitiator(tcp::TcpStack& s) : stack(s) {}
    void OnConnected(tcp::ConnId c) override {
      conn = c;
      const std::vector<uint8_t> req = RequestBytes(true);
      stack.Send(c, ByteSpan(req), 0);
    }
    size_t OnData(tcp::ConnId, uint64_t, ByteSpan d) override {
      received.insert(received.end(), d.begin(), d.end());
      if (!sent_terminate && received.size() >= 24) {
        sent_terminate = true;
        ddp::DdpHeader h;
        h.last = true;
        h.rsvd_ulp0 = rdmap::MakeControl(rdmap::Opcode::kTerminate);
        h.qn = rdmap::kQnTerminate;
        h.msn = Seq32(1);
        std::vector<uint8_t> u(ddp::kMaxHeaderSize);
        u.resize(ddp::EncodeHeader(h, MutableByteSpan(u)));
        rdmap::Terminate t;
        t.code = rdmap::TerminateCode{rdmap::kLayerLlp, 0, 0x06};  // insufficient IRD
        std::vector<uint8_t> body(64);
        body.resize(rdmap::EncodeTerminate(t, MutableByteSpan(body)));
        u.insert(u.end(), body.begin(), body.end());
        std::vector<uint8_t> out(256);
        const mpa::FpduConfig cfg{false, true, Seq32(0)};
        const mpa::FpduEncodeResult r =
            mpa::EncodeFpdu(ByteSpan(u), ByteSpan(), Seq32(0), cfg, MutableByteSpan(out));
        if (r.status == mpa::FpduStatus::kOk) stack.SendRecord(conn, ByteSpan(out.data(), r.size), 0);
      }
      return d.size();
    }
    tcp::TcpStack& stack;
    tcp::ConnId conn;
    bool sent_terminate = false;
    std::vector<uint8_t> received;
  } raw(*p.a.stack);
  ASSERT_TRUE(p.a.stack->Connect(tcp::testing::kIpA, tcp::testing::kIpB, testing::kPort, raw, 0,
                                 p.link.now)
                  .ok());
  ASSERT_TRUE(p.RunUntil([&] { return p.b.obs.failed != ConnectError::kNone; }, 1'000'000));
  EXPECT_EQ(p.b.obs.failed, ConnectError::kInsufficientIrd);
  EXPECT_EQ(p.b.qp->stats().terminates_received, 1u);
  EXPECT_EQ(p.b.qp->stats().terminates_sent, 0u);
  ASSERT_TRUE(p.b.qp->terminate_received().has_value());
  EXPECT_EQ(p.b.qp->terminate_received()->code, 0x06);
  p.RunUntil([] { return false; }, 100'000);
  EXPECT_EQ(raw.received.size(), 24u);  // the Reply only: no Terminate back
}

// ---------------------------------------------------------------- data

struct DataCase {
  size_t size;
  bool crc;
  bool markers;  // both directions
  bool zero_copy = false;  // QpOptions::zero_copy_tx on both sides
};

class QpData : public ::testing::TestWithParam<DataCase> {};

std::string Hex(const Sha256::Digest& d) { return ToHex(d); }

// Runs a Send, an RDMA Write and an RDMA Read of `size` bytes from a to b
// (the Read pulls b's bytes into a) and compares SHA-256 at each sink.
void RunTransfers(Pair& p, size_t size) {
  const std::vector<uint8_t> src = Pattern(size, static_cast<uint32_t>(size + 3));
  const std::vector<uint8_t> src2 = Pattern(size, static_cast<uint32_t>(size + 11));
  const size_t rsize = size == 0 ? 1 : size;
  // a: send/write source, read sink.
  const uint32_t a_src = p.a.mem.Register(rsize, 0);
  const uint32_t a_sink = p.a.mem.Register(rsize, ddp::kAccessAll);
  // b: recv buffer, write sink, read source.
  const uint32_t b_recv = p.b.mem.Register(rsize, ddp::kAccessLocalWrite);
  const uint32_t b_wsink = p.b.mem.Register(rsize, ddp::kAccessRemoteWrite, 0x7000'0000);
  const uint32_t b_rsrc = p.b.mem.Register(rsize, ddp::kAccessRemoteRead, 0x9000'0000);
  std::copy(src.begin(), src.end(), p.a.mem.Bytes(a_src).begin());
  std::copy(src2.begin(), src2.end(), p.b.mem.Bytes(b_rsrc).begin());
  const uint32_t len = static_cast<uint32_t>(size);

  ASSERT_EQ(p.b.qp->PostRecv(RecvWr{100, LocalSge{b_recv, 0x10000, len}}), PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kSend, LocalSge{a_src, 0x10000, len}}),
            PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{2, WrOpcode::kRdmaWrite, LocalSge{a_src, 0x10000, len},
                                    b_wsink, 0x7000'0000}),
            PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{3, WrOpcode::kRdmaRead, LocalSge{a_sink, 0x10000, len},
                                    b_rsrc, 0x9000'0000}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return p.a.cqes.size() >= 3 && p.b.cqes.size() >= 1; },
                         600'000'000))
      << "a completions " << p.a.cqes.size() << " b " << p.b.cqes.size();
  ASSERT_EQ(p.a.cqes.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.a.cqes[i].wr_id, i + 1);
    EXPECT_EQ(p.a.cqes[i].status, WcStatus::kSuccess) << WcStatusName(p.a.cqes[i].status);
  }
  EXPECT_EQ(p.a.cqes[2].opcode, WcOpcode::kRdmaRead);
  ASSERT_EQ(p.b.cqes.size(), 1u);
  EXPECT_EQ(p.b.cqes[0].wr_id, 100u);
  EXPECT_EQ(p.b.cqes[0].byte_len, len);
  const Sha256::Digest want = Sha256::Hash(ByteSpan(src));
  EXPECT_EQ(Hex(Sha256::Hash(p.b.mem.Bytes(b_recv).first(size))), Hex(want));
  EXPECT_EQ(Hex(Sha256::Hash(p.b.mem.Bytes(b_wsink).first(size))), Hex(want));
  EXPECT_EQ(Hex(Sha256::Hash(p.a.mem.Bytes(a_sink).first(size))),
            Hex(Sha256::Hash(ByteSpan(src2))));
  EXPECT_TRUE(p.a.mem.GuardsIntact());
  EXPECT_TRUE(p.b.mem.GuardsIntact());
  EXPECT_EQ(p.a.qp->stats().terminates_sent + p.b.qp->stats().terminates_sent, 0u);
}

TEST_P(QpData, SendWriteReadSha256) {
  const DataCase c = GetParam();
  QpOptions o = Opts();
  o.mpa.crc = c.crc;
  o.mpa.want_markers = c.markers;
  o.zero_copy_tx = c.zero_copy;
  Pair p(o, o);
  ASSERT_TRUE(p.Establish());
  EXPECT_EQ(p.a.qp->negotiated().crc, c.crc);
  EXPECT_EQ(p.a.qp->negotiated().tx_markers, c.markers);
  EXPECT_EQ(p.b.qp->negotiated().tx_markers, c.markers);
  RunTransfers(p, c.size);
  // Payloads from registered memory left without a copy unless Markers are
  // on (or the segment is small); a's Send and Write, b's Read Response.
  const bool expect_zc = c.zero_copy && !c.markers && c.size >= 4096;
  EXPECT_EQ(p.a.qp->stats().fpdus_zero_copy > 0, expect_zc);
  EXPECT_EQ(p.b.qp->stats().fpdus_zero_copy > 0, expect_zc);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, QpData,
    ::testing::Values(DataCase{0, true, false}, DataCase{1, true, false},
                      DataCase{4096, true, false}, DataCase{65536, true, false},
                      DataCase{1 << 20, true, false}, DataCase{16 << 20, true, false},
                      DataCase{0, false, false}, DataCase{1, false, false},
                      DataCase{65536, false, false}, DataCase{1 << 20, false, false},
                      DataCase{0, true, true}, DataCase{1, true, true},
                      DataCase{4096, true, true}, DataCase{65536, true, true},
                      DataCase{1 << 20, true, true}, DataCase{16 << 20, true, true},
                      DataCase{1, true, false, true}, DataCase{4096, true, false, true},
                      DataCase{65536, true, false, true}, DataCase{1 << 20, false, false, true},
                      DataCase{16 << 20, true, false, true}, DataCase{65536, true, true, true}),
    [](const ::testing::TestParamInfo<DataCase>& i) {
      return std::to_string(i.param.size) + (i.param.crc ? "_crc" : "_nocrc") +
             (i.param.markers ? "_markers" : "") + (i.param.zero_copy ? "_zerocopy" : "");
    });

// 2% loss, 2% duplication, 5% reordering.
tcp::testing::Link::Impairment Lossy(uint32_t seed) {
  tcp::testing::Link::Impairment imp;
  imp.drop = 0.02;
  imp.duplicate = 0.02;
  imp.reorder = 0.05;
  imp.seed = seed;
  return imp;
}

TEST(QpData, ImpairedLinkDeliversIdenticalData) {
  const tcp::testing::Link::Impairment imp = Lossy(7);
  QpOptions o = Opts();
  o.mpa.want_markers = true;
  Pair p(o, o, imp);
  ASSERT_TRUE(p.Establish());
  RunTransfers(p, 1 << 20);
  EXPECT_GT(p.link.dropped, 0u);
  EXPECT_GT(p.link.duplicated, 0u);
  EXPECT_GT(p.link.reordered, 0u);
}

// Zero-copy FPDUs over a lossy, duplicating, reordering link: every
// retransmission reads the payload from the registered memory again and the
// sinks still hold the source's bytes.
TEST(QpData, ZeroCopyOverAnImpairedLinkDeliversIdenticalData) {
  const tcp::testing::Link::Impairment imp = Lossy(11);
  QpOptions o = Opts();
  o.zero_copy_tx = true;
  tcp::TcpOptions topt = PairTcpOptions();
  topt.max_zero_copy_sends = 4096;  // (most) FPDUs of the 2 MiB from a by reference
  Pair p(o, o, imp, topt);
  ASSERT_TRUE(p.Establish());
  RunTransfers(p, 1 << 20);
  EXPECT_GT(p.link.dropped, 0u);
  EXPECT_GT(p.a.qp->stats().fpdus_zero_copy, 1000u);
}

// SendsFrom reports the memory unacknowledged zero-copy FPDUs read from, so
// the memory owner can abort the QP before taking the region away; after
// the acknowledgement (the completion) the region is free.
TEST(QpData, SendsFromTheRegionUntilAcknowledged) {
  QpOptions o = Opts();
  o.zero_copy_tx = true;
  Pair p(o, o);
  ASSERT_TRUE(p.Establish());
  const uint32_t src = p.a.mem.Register(64 * 1024, 0);
  const uint32_t other = p.a.mem.Register(4096, 0);
  const uint32_t sink = p.b.mem.Register(64 * 1024, ddp::kAccessRemoteWrite, 0x7000'0000);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kRdmaWrite, LocalSge{src, 0x10000, 64 * 1024},
                                    sink, 0x7000'0000}),
            PostStatus::kOk);
  p.a.qp->Poll(p.link.now);
  EXPECT_TRUE(p.a.qp->SendsFrom(p.a.mem.Bytes(src)));
  EXPECT_FALSE(p.a.qp->SendsFrom(p.a.mem.Bytes(other)));
  ASSERT_TRUE(p.RunUntil([&] { return !p.a.cqes.empty(); }, 10'000'000));
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kSuccess);
  EXPECT_FALSE(p.a.qp->SendsFrom(p.a.mem.Bytes(src)));
}

// RFC 5044 4.5 / INTEROP.md: one FPDU per segment, filling the EMSS, with
// and without Markers (full-sized segments also keep the peer's
// every-second-segment ACKs coming).
TEST(QpData, FpdusFillTheEmss) {
  for (bool markers : {false, true}) {
    QpOptions o = Opts();
    o.mpa.want_markers = markers;
    Pair p(o, o);
    ASSERT_TRUE(p.Establish());
    const uint32_t emss = p.a.stack->Emss(p.a.qp->conn());
    size_t max_payload = 0, full = 0, data_segments = 0;
    p.a.port->mutate = [&](std::vector<uint8_t>& b, size_t hl) {
      const size_t n = b.size() - hl;
      if (n == 0) return;
      max_payload = std::max(max_payload, n);
      ++data_segments;
      if (n == emss) ++full;
    };
    const uint64_t fpdus_before = p.a.qp->stats().fpdus_out;
    RunTransfers(p, 200000);
    EXPECT_LE(max_payload, emss) << markers;
    // Send + Write + Read Request: 2 x 200000 bytes leave a; all but each
    // message's last segment are full.
    EXPECT_GE(full, 2 * 200000u / emss - 2) << markers;
    // No FPDU spans segments (a small FPDU may share a segment with the tail
    // of the one before it).
    EXPECT_LE(data_segments, p.a.qp->stats().fpdus_out - fpdus_before) << markers;
  }
}

// RFC 6581: the initiator's ORD is clamped to the responder's IRD, and
// Reads beyond it wait in the send queue instead of overrunning the peer
// (which would answer with a Terminate).
TEST(QpData, ReadsBeyondOrdWaitForAFreeSlot) {
  QpOptions oa = Opts();
  oa.mpa.ord = 16;
  QpOptions ob = Opts();
  ob.mpa.ird = 2;
  Pair p(oa, ob);
  ASSERT_TRUE(p.Establish());
  EXPECT_EQ(p.a.qp->negotiated().ord, 2);
  constexpr uint32_t kLen = 64 * 1024;
  const std::vector<uint8_t> pat = Pattern(kLen, 99);
  const uint32_t src = p.b.mem.Register(kLen, ddp::kAccessRemoteRead);
  std::copy(pat.begin(), pat.end(), p.b.mem.Bytes(src).begin());
  std::vector<uint32_t> sinks;
  for (uint64_t i = 0; i < 8; ++i) {
    sinks.push_back(p.a.mem.Register(kLen, ddp::kAccessAll));
    ASSERT_EQ(p.a.qp->PostSend(SendWr{i, WrOpcode::kRdmaRead, LocalSge{sinks.back(), 0x10000, kLen},
                                      src, 0x10000}),
              PostStatus::kOk);
  }
  ASSERT_TRUE(p.RunUntil([&] { return p.a.cqes.size() == 8; }, 10'000'000));
  for (uint64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(p.a.cqes[i].wr_id, i);
    EXPECT_EQ(p.a.cqes[i].status, WcStatus::kSuccess);
    EXPECT_TRUE(std::equal(pat.begin(), pat.end(), p.a.mem.Bytes(sinks[i]).begin())) << i;
  }
  EXPECT_EQ(p.b.qp->stats().terminates_sent, 0u);
  EXPECT_EQ(p.b.qp->stats().read_responses_sent, 8u);
}

// RFC 5041 5.3 / 5.4: untagged messages are delivered in MSN order, each
// into the next posted buffer, with the message length (MO + length of the
// last segment) and the Send variant's flags (RFC 5040 Send with SE).
TEST(QpData, SendsCompleteInOrderWithLengthsAndFlags) {
  Pair p(Opts(), Opts());
  ASSERT_TRUE(p.Establish());
  const uint32_t sizes[] = {1, 5000, 0, 70000, 3};
  const WrOpcode ops[] = {WrOpcode::kSend, WrOpcode::kSendSe, WrOpcode::kSend, WrOpcode::kSendSe,
                          WrOpcode::kSend};
  const uint32_t src = p.a.mem.Register(70000, 0);
  const std::vector<uint8_t> pat = Pattern(70000, 4);
  std::copy(pat.begin(), pat.end(), p.a.mem.Bytes(src).begin());
  std::vector<uint32_t> bufs;
  for (uint64_t i = 0; i < 5; ++i) {
    bufs.push_back(p.b.mem.Register(80000, ddp::kAccessLocalWrite));
    ASSERT_EQ(p.b.qp->PostRecv(RecvWr{100 + i, LocalSge{bufs.back(), 0x10000, 80000}}),
              PostStatus::kOk);
  }
  for (uint64_t i = 0; i < 5; ++i) {
    ASSERT_EQ(p.a.qp->PostSend(SendWr{i, ops[i], LocalSge{src, 0x10000, sizes[i]}}),
              PostStatus::kOk);
  }
  ASSERT_TRUE(p.RunUntil([&] { return p.b.cqes.size() == 5 && p.a.cqes.size() == 5; }, 5'000'000));
  for (uint64_t i = 0; i < 5; ++i) {
    const Completion& c = p.b.cqes[i];
    EXPECT_EQ(c.wr_id, 100 + i);
    EXPECT_EQ(c.opcode, WcOpcode::kRecv);
    EXPECT_EQ(c.byte_len, sizes[i]);
    EXPECT_EQ(c.flags, ops[i] == WrOpcode::kSendSe ? kWcSolicited : 0) << i;
    EXPECT_TRUE(std::equal(pat.begin(), pat.begin() + sizes[i], p.b.mem.Bytes(bufs[i]).begin()));
    EXPECT_EQ(p.a.cqes[i].wr_id, i);
  }
}

TEST(QpTeardown, GracefulCloseCompletesThenFlushesReceives) {
  Pair p(Opts(), Opts());
  ASSERT_TRUE(p.Establish());
  const uint32_t r = p.b.mem.Register(64, ddp::kAccessLocalWrite);
  ASSERT_EQ(p.b.qp->PostRecv(RecvWr{55, LocalSge{r, 0x10000, 64}}), PostStatus::kOk);
  const uint32_t s = p.a.mem.Register(64, 0);
  const uint32_t w = p.b.mem.Register(64, ddp::kAccessRemoteWrite);
  const uint32_t ra = p.a.mem.Register(64, ddp::kAccessLocalWrite);
  ASSERT_EQ(p.a.qp->PostRecv(RecvWr{66, LocalSge{ra, 0x10000, 64}}), PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kRdmaWrite, LocalSge{s, 0x10000, 64}, w, 0x10000}),
            PostStatus::kOk);
  p.a.qp->Close(p.link.now);
  EXPECT_EQ(p.a.qp->state(), QpState::kClosing);
  EXPECT_EQ(p.a.qp->PostSend(SendWr{2, WrOpcode::kSend, LocalSge{s, 0x10000, 1}}),
            PostStatus::kNotConnected);
  ASSERT_TRUE(p.RunUntil([&] { return p.a.obs.disconnected && p.b.obs.disconnected; }, 5'000'000));
  // The Write queued before the close completed; the receives still posted
  // on either side are flushed (RFC 5040 6.2, verbs).
  ASSERT_EQ(p.a.cqes.size(), 2u);
  EXPECT_EQ(p.a.cqes[0].wr_id, 1u);
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kSuccess);
  EXPECT_EQ(p.a.cqes[1].wr_id, 66u);
  EXPECT_EQ(p.a.cqes[1].status, WcStatus::kFlushed);
  ASSERT_EQ(p.b.cqes.size(), 1u);
  EXPECT_EQ(p.b.cqes[0].wr_id, 55u);
  EXPECT_EQ(p.b.cqes[0].status, WcStatus::kFlushed);
  // Both FINs exchanged, no Terminate: a clean close on both sides, not an
  // error.
  for (Side* side : {&p.a, &p.b}) {
    EXPECT_EQ(side->qp->state(), QpState::kClosed) << QpStateName(side->qp->state());
    EXPECT_EQ(side->qp->end(), QpEnd::kClosed) << QpEndName(side->qp->end());
    EXPECT_FALSE(side->qp->terminate_sent().has_value());
    EXPECT_FALSE(side->qp->terminate_received().has_value());
    EXPECT_EQ(side->qp->PostSend(SendWr{3, WrOpcode::kSend, LocalSge{}}),
              PostStatus::kNotConnected);
    EXPECT_EQ(side->qp->PostRecv(RecvWr{4, LocalSge{}}), PostStatus::kNotConnected);
  }
  EXPECT_EQ(QpStateName(p.b.qp->state()), "CLOSED");
  // Closed is terminal: no second connection on the same QP, and closing or
  // aborting again changes nothing.
  EXPECT_FALSE(p.Connect().ok());
  p.a.qp->Close(p.link.now);
  p.b.qp->Abort(p.link.now);
  EXPECT_EQ(p.a.qp->state(), QpState::kClosed);
  EXPECT_EQ(p.b.qp->state(), QpState::kClosed);
  EXPECT_EQ(p.b.qp->end(), QpEnd::kClosed);
}

TEST(QpTeardown, PeerGracefulCloseWhileWorkIsQueued) {
  Pair p(Opts(), Opts());
  ASSERT_TRUE(p.Establish());
  // b's Writes are still being sent when a closes: b sends them all, then
  // its own FIN; both end closed with every Write completed.
  constexpr uint32_t kSize = 256 * 1024;
  const uint32_t s = p.b.mem.Register(kSize, 0);
  const uint32_t w = p.a.mem.Register(kSize, ddp::kAccessRemoteWrite);
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(p.b.qp->PostSend(SendWr{i, WrOpcode::kRdmaWrite, LocalSge{s, 0x10000, kSize}, w,
                                      0x10000}),
              PostStatus::kOk);
  }
  p.a.qp->Close(p.link.now);
  ASSERT_TRUE(p.RunUntil([&] { return p.a.obs.disconnected && p.b.obs.disconnected; }, 10'000'000));
  ASSERT_EQ(p.b.cqes.size(), 4u);
  for (const Completion& c : p.b.cqes) EXPECT_EQ(c.status, WcStatus::kSuccess) << c.wr_id;
  EXPECT_EQ(p.a.qp->stats().bytes_placed, 4u * kSize);
  EXPECT_EQ(p.a.qp->state(), QpState::kClosed);
  EXPECT_EQ(p.b.qp->state(), QpState::kClosed);
}

TEST(QpTeardown, AbortFlushesOutstandingWork) {
  Pair p(Opts(), Opts());
  ASSERT_TRUE(p.Establish());
  const uint32_t s = p.a.mem.Register(1 << 20, 0);
  const uint32_t w = p.b.mem.Register(1 << 20, ddp::kAccessRemoteWrite);
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(p.a.qp->PostSend(SendWr{i, WrOpcode::kRdmaWrite, LocalSge{s, 0x10000, 1 << 20}, w,
                                      0x10000}),
              PostStatus::kOk);
  }
  const uint32_t r = p.b.mem.Register(64, ddp::kAccessLocalWrite);
  ASSERT_EQ(p.b.qp->PostRecv(RecvWr{77, LocalSge{r, 0x10000, 64}}), PostStatus::kOk);
  p.a.qp->Abort(p.link.now);
  p.a.Drain();
  ASSERT_EQ(p.a.cqes.size(), 4u);
  for (const Completion& c : p.a.cqes) EXPECT_EQ(c.status, WcStatus::kFlushed);
  EXPECT_TRUE(p.a.obs.disconnected);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  EXPECT_EQ(p.a.qp->end(), QpEnd::kAborted);
  // The peer sees the RST: its posted receive is flushed too.
  ASSERT_TRUE(p.RunUntil([&] { return p.b.obs.disconnected; }, 1'000'000));
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
  EXPECT_EQ(p.b.qp->end(), QpEnd::kReset);
  ASSERT_EQ(p.b.cqes.size(), 1u);
  EXPECT_EQ(p.b.cqes[0].wr_id, 77u);
  EXPECT_EQ(p.b.cqes[0].status, WcStatus::kFlushed);
  EXPECT_EQ(p.b.qp->PostSend(SendWr{1, WrOpcode::kSend, LocalSge{r, 0x10000, 1}}),
            PostStatus::kNotConnected);
}

TEST(QpTeardown, AbortAfterCloseIsAnError) {
  Pair p(Opts(), Opts());
  ASSERT_TRUE(p.Establish());
  const uint32_t s = p.a.mem.Register(1 << 20, 0);
  const uint32_t w = p.b.mem.Register(1 << 20, ddp::kAccessRemoteWrite);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{9, WrOpcode::kRdmaWrite, LocalSge{s, 0x10000, 1 << 20}, w,
                                    0x10000}),
            PostStatus::kOk);
  p.a.qp->Close(p.link.now);  // the Write is still being sent
  p.a.qp->Abort(p.link.now);
  ASSERT_TRUE(p.RunUntil([&] { return p.a.obs.disconnected && p.b.obs.disconnected; }, 1'000'000));
  ASSERT_EQ(p.a.cqes.size(), 1u);
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kFlushed);
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  EXPECT_EQ(p.a.qp->end(), QpEnd::kAborted);
  EXPECT_EQ(p.b.qp->state(), QpState::kError);
  EXPECT_EQ(p.b.qp->end(), QpEnd::kReset);
}

TEST(QpTeardown, RetransmissionTimeoutIsAnError) {
  tcp::TcpOptions t = PairTcpOptions();
  t.rto_min_us = 10'000;
  t.rto_initial_us = 20'000;
  t.rto_max_us = 40'000;
  t.max_retransmissions = 2;
  Pair p(Opts(), Opts(), {}, t);
  ASSERT_TRUE(p.Establish());
  const uint32_t r = p.b.mem.Register(64, ddp::kAccessLocalWrite);
  ASSERT_EQ(p.b.qp->PostRecv(RecvWr{5, LocalSge{r, 0x10000, 64}}), PostStatus::kOk);
  // From now on nothing a sends arrives (its checksum is broken).
  p.a.port->mutate = [](std::vector<uint8_t>& b, size_t) { b[16] ^= 0xFF; };
  const uint32_t s = p.a.mem.Register(64, 0);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kSend, LocalSge{s, 0x10000, 64}}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return p.a.obs.disconnected; }, 5'000'000));
  EXPECT_EQ(p.a.qp->state(), QpState::kError);
  EXPECT_EQ(p.a.qp->end(), QpEnd::kTimeout);
  ASSERT_EQ(p.a.cqes.size(), 1u);
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kFlushed);
}

}  // namespace
}  // namespace iwarp::engine
