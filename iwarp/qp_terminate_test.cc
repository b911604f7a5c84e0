// Malicious and broken peers: after a real MPA handshake, raw FPDUs are
// written into the initiator's TCP connection (bypassing its engine) and the
// responder must answer each with the RFC code point in a TERMINATE
// (RFC 5040 Terminate header; DDP codes RFC 5041 7.2; MPA codes RFC 5044 8),
// without placing a byte outside the registered ranges (guard bytes).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ddp/ddp_header.h"
#include "ddp/rdmap.h"
#include "iwarp/qp.h"
#include "iwarp/qp_test_util.h"
#include "mpa/mpa_fpdu.h"

namespace iwarp::engine {
namespace {

using testing::Pair;

constexpr uint64_t kBase = 0x10000;

struct Victim {
  uint32_t wsink = 0;   // 4096 bytes, remote write, TO kBase
  uint32_t nowrite = 0; // 4096 bytes, remote read only, TO 0x50000
  uint32_t rsrc = 0;    // 1 MiB, remote read, TO 0x100000
  uint32_t top = 0;     // 4096 bytes at the top of the 64-bit TO space
  uint32_t recv = 0;    // 64-byte receive buffer
};

class QpMalicious : public ::testing::Test {
 protected:
  void SetUp() override {
    QpOptions o;
    o.mpa.ird = 2;
    o.mpa.ord = 2;
    p_ = std::make_unique<Pair>(o, o);
    ASSERT_TRUE(p_->Establish());
    Pair& p = *p_;
    v_.wsink = p.b.mem.Register(4096, ddp::kAccessRemoteWrite, kBase);
    v_.nowrite = p.b.mem.Register(4096, ddp::kAccessRemoteRead, 0x50000);
    v_.rsrc = p.b.mem.Register(1 << 20, ddp::kAccessRemoteRead, 0x100000);
    v_.top = p.b.mem.Register(4096, ddp::kAccessRemoteWrite, ~uint64_t{0} - 4095);
    v_.recv = p.b.mem.Register(64, ddp::kAccessLocalWrite);
  }

  // Frames `ulpdu` (DDP header + payload) as one FPDU with CRC and writes it
  // into a's TCP connection.
  void InjectRaw(const std::vector<uint8_t>& ulpdu) {
    std::vector<uint8_t> out(70000);
    const mpa::FpduConfig cfg{false, true, Seq32(0)};
    const mpa::FpduEncodeResult r =
        mpa::EncodeFpdu(ByteSpan(ulpdu), ByteSpan(), Seq32(0), cfg, MutableByteSpan(out));
    ASSERT_EQ(r.status, mpa::FpduStatus::kOk);
    ASSERT_EQ(p_->a.stack->SendRecord(p_->a.qp->conn(), ByteSpan(out.data(), r.size),
                                      p_->link.now),
              tcp::SendStatus::kOk);
  }
  void Inject(const ddp::DdpHeader& h, const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> u(ddp::kMaxHeaderSize);
    u.resize(ddp::EncodeHeader(h, MutableByteSpan(u)));
    u.insert(u.end(), payload.begin(), payload.end());
    InjectRaw(u);
  }
  static ddp::DdpHeader Write(uint32_t stag, uint64_t to) {
    ddp::DdpHeader h;
    h.tagged = true;
    h.last = true;
    h.rsvd_ulp0 = rdmap::MakeControl(rdmap::Opcode::kRdmaWrite);
    h.stag = stag;
    h.to = to;
    return h;
  }
  static ddp::DdpHeader Untagged(rdmap::Opcode op, uint32_t qn, uint32_t msn) {
    ddp::DdpHeader h;
    h.last = true;
    h.rsvd_ulp0 = rdmap::MakeControl(op);
    h.qn = qn;
    h.msn = Seq32(msn);
    return h;
  }
  static std::vector<uint8_t> ReadReq(uint32_t src_stag, uint64_t src_to, uint32_t size) {
    rdmap::ReadRequest rr;
    rr.sink_stag = 0x1234;
    rr.sink_to = 0;
    rr.read_size = size;
    rr.source_stag = src_stag;
    rr.source_to = src_to;
    std::vector<uint8_t> b(rdmap::kReadRequestSize);
    rdmap::EncodeReadRequest(rr, MutableByteSpan(b));
    return b;
  }

  // Runs until both sides saw the Terminate; checks its code point on both
  // ends, the connection's end and the guard bytes.
  // With check_peer false only the responder's side is checked (when a's
  // engine, unaware of the injected requests, has its own reason to
  // terminate first).
  void ExpectTerminate(uint8_t layer, uint8_t etype, uint8_t code, bool check_peer = true) {
    Pair& p = *p_;
    ASSERT_TRUE(p.RunUntil(
        [&] { return check_peer ? !p.a.obs.term_received.empty() : !p.b.obs.term_sent.empty(); },
        2'000'000));
    const rdmap::TerminateCode want{layer, etype, code};
    ASSERT_TRUE(p.b.qp->terminate_sent().has_value());
    EXPECT_EQ(*p.b.qp->terminate_sent(), want) << rdmap::TerminateCodeName(*p.b.qp->terminate_sent());
    ASSERT_EQ(p.b.obs.term_sent.size(), 1u);
    if (check_peer) {
      ASSERT_EQ(p.a.obs.term_received.size(), 1u);
      EXPECT_EQ(p.a.obs.term_received[0], want)
          << rdmap::TerminateCodeName(p.a.obs.term_received[0]);
    }
    EXPECT_EQ(p.b.qp->stats().terminates_sent, 1u);
    EXPECT_TRUE(p.b.mem.GuardsIntact());
    // RFC 5040: after a Terminate the stream closes, in order (both FINs),
    // but the QPs end in error, not closed.
    EXPECT_TRUE(p.RunUntil([&] { return p.a.obs.disconnected && p.b.obs.disconnected; },
                           5'000'000));
    EXPECT_EQ(p.b.qp->state(), QpState::kError) << QpStateName(p.b.qp->state());
    EXPECT_EQ(p.b.qp->end(), QpEnd::kTerminate) << QpEndName(p.b.qp->end());
    EXPECT_EQ(p.a.qp->state(), QpState::kError) << QpStateName(p.a.qp->state());
    if (check_peer) {
      EXPECT_EQ(p.a.qp->end(), QpEnd::kTerminate) << QpEndName(p.a.qp->end());
    }
  }

  std::unique_ptr<Pair> p_;
  Victim v_;
};

std::vector<uint8_t> Bytes(size_t n) { return std::vector<uint8_t>(n, 0xAB); }

// RFC 5041 7.2 DDP codes: layer 1, etype 1 (tagged) / 2 (untagged).
TEST_F(QpMalicious, InvalidStag) {
  Inject(Write(v_.wsink + 0x100, kBase), Bytes(16));  // another index
  ExpectTerminate(1, 1, 0x00);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, WrongKeyByte) {
  Inject(Write(v_.wsink ^ 0x01, kBase), Bytes(16));
  ExpectTerminate(1, 1, 0x00);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, OutOfBoundsTo) {
  Inject(Write(v_.wsink, kBase + 4090), Bytes(16));  // 10 bytes past the end
  ExpectTerminate(1, 1, 0x01);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, ToBelowBase) {
  Inject(Write(v_.wsink, kBase - 8), Bytes(16));
  ExpectTerminate(1, 1, 0x01);
}

TEST_F(QpMalicious, ToWrap) {
  Inject(Write(v_.top, ~uint64_t{0} - 7), Bytes(16));  // TO + 16 wraps 2^64
  ExpectTerminate(1, 1, 0x03);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, WriteWithoutRemoteWriteRight) {
  Inject(Write(v_.nowrite, 0x50000), Bytes(16));
  ExpectTerminate(0, 1, 0x02);  // RDMAP remote protection: access rights
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, InvalidQn) {
  ASSERT_EQ(p_->b.qp->PostRecv(RecvWr{1, LocalSge{v_.recv, kBase, 64}}), PostStatus::kOk);
  ddp::DdpHeader h = Untagged(rdmap::Opcode::kSend, 5, 1);
  Inject(h, Bytes(8));
  ExpectTerminate(1, 2, 0x01);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, InvalidMsnRange) {
  ASSERT_EQ(p_->b.qp->PostRecv(RecvWr{1, LocalSge{v_.recv, kBase, 64}}), PostStatus::kOk);
  Inject(Untagged(rdmap::Opcode::kSend, 0, 100000), Bytes(8));
  ExpectTerminate(1, 2, 0x03);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, NoPostedBuffer) {
  // Write RTR used no MSN: the first Send is MSN 1.
  Inject(Untagged(rdmap::Opcode::kSend, 0, 1), Bytes(8));
  ExpectTerminate(1, 2, 0x02);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, MessageTooLong) {
  ASSERT_EQ(p_->b.qp->PostRecv(RecvWr{1, LocalSge{v_.recv, kBase, 64}}), PostStatus::kOk);
  Inject(Untagged(rdmap::Opcode::kSend, 0, 1), Bytes(100));
  ExpectTerminate(1, 2, 0x05);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
  // The receive is flushed with the error, never completed as data.
  ASSERT_EQ(p_->b.cqes.size(), 1u);
  EXPECT_EQ(p_->b.cqes[0].status, WcStatus::kFlushed);
}

TEST_F(QpMalicious, WrongDdpVersionTagged) {
  std::vector<uint8_t> u(ddp::kTaggedHeaderSize);
  ddp::EncodeHeader(Write(v_.wsink, kBase), MutableByteSpan(u));
  u[0] = static_cast<uint8_t>((u[0] & ~ddp::kCtrlDvMask) | 2);  // DV = 2
  const std::vector<uint8_t> pl = Bytes(16);
  u.insert(u.end(), pl.begin(), pl.end());
  InjectRaw(u);
  ExpectTerminate(1, 1, 0x04);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, WrongDdpVersionUntagged) {
  ASSERT_EQ(p_->b.qp->PostRecv(RecvWr{1, LocalSge{v_.recv, kBase, 64}}), PostStatus::kOk);
  std::vector<uint8_t> u(ddp::kUntaggedHeaderSize);
  ddp::EncodeHeader(Untagged(rdmap::Opcode::kSend, 0, 1), MutableByteSpan(u));
  u[0] = static_cast<uint8_t>((u[0] & ~ddp::kCtrlDvMask) | 0);  // DV = 0
  InjectRaw(u);
  ExpectTerminate(1, 2, 0x06);
}

TEST_F(QpMalicious, WrongRdmapVersion) {
  ddp::DdpHeader h = Write(v_.wsink, kBase);
  h.rsvd_ulp0 = static_cast<uint8_t>((2u << 6) | 0x0);  // RV = 10b
  Inject(h, Bytes(16));
  ExpectTerminate(0, 2, 0x05);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, ReservedOpcode) {
  ddp::DdpHeader h = Untagged(rdmap::Opcode::kSend, 0, 1);
  h.rsvd_ulp0 = static_cast<uint8_t>((1u << 6) | 0x0C);
  Inject(h, Bytes(4));
  ExpectTerminate(0, 2, 0x06);
}

TEST_F(QpMalicious, ReadRequestInvalidSourceStag) {
  Inject(Untagged(rdmap::Opcode::kReadRequest, 1, 1), ReadReq(v_.rsrc ^ 0x02, 0x100000, 64));
  ExpectTerminate(0, 1, 0x00);
  EXPECT_EQ(p_->b.qp->stats().read_responses_sent, 0u);
}

TEST_F(QpMalicious, ReadRequestBeyondSource) {
  Inject(Untagged(rdmap::Opcode::kReadRequest, 1, 1), ReadReq(v_.rsrc, 0x100000 + (1 << 20) - 8, 64));
  ExpectTerminate(0, 1, 0x01);
}

TEST_F(QpMalicious, ReadRequestsBeyondIrd) {
  // IRD 2: the third Read Request in flight finds no Read Request "buffer"
  // (RFC 5041 7.1 untagged check on QN 1 -> 7.2 "no buffer available").
  Inject(Untagged(rdmap::Opcode::kReadRequest, 1, 1), ReadReq(v_.rsrc, 0x100000, 1 << 20));
  Inject(Untagged(rdmap::Opcode::kReadRequest, 1, 2), ReadReq(v_.rsrc, 0x100000, 1 << 20));
  Inject(Untagged(rdmap::Opcode::kReadRequest, 1, 3), ReadReq(v_.rsrc, 0x100000, 1 << 20));
  // a's engine never asked for these Reads: the first Read Response it sees
  // targets sink STag 0x1234, which a never registered (RFC 5041 7.2 tagged
  // invalid STag); b's Terminate follows that Response on the wire.
  ExpectTerminate(1, 2, 0x02, /*check_peer=*/false);
  // RTR + three Read Requests reached the checks; a's own Terminate came in
  // after b's and was discarded (counted, not processed).
  EXPECT_EQ(p_->b.qp->stats().fpdus_in, 4u);
  EXPECT_EQ(p_->b.qp->stats().terminates_received, 0u);
  EXPECT_GT(p_->b.qp->stats().rx_bytes_discarded, 0u);

  EXPECT_EQ(p_->b.qp->stats().read_responses_sent, 1u);
  ASSERT_FALSE(p_->a.obs.term_sent.empty());
  EXPECT_EQ(p_->a.obs.term_sent[0], (rdmap::TerminateCode{1, 1, 0x00}));
}

TEST_F(QpMalicious, ReadResponseWithoutRequest) {
  ddp::DdpHeader h = Write(v_.wsink, kBase);
  h.rsvd_ulp0 = rdmap::MakeControl(rdmap::Opcode::kReadResponse);
  Inject(h, Bytes(16));
  ExpectTerminate(0, 2, 0x06);
  EXPECT_EQ(p_->b.qp->stats().bytes_placed, 0u);
}

TEST_F(QpMalicious, SendWithInvalidateOfUnknownStag) {
  ASSERT_EQ(p_->b.qp->PostRecv(RecvWr{1, LocalSge{v_.recv, kBase, 64}}), PostStatus::kOk);
  ddp::DdpHeader h = Untagged(rdmap::Opcode::kSendInvalidate, 0, 1);
  h.rsvd_ulp1 = 0x0BAD0001;
  Inject(h, Bytes(4));
  ExpectTerminate(0, 1, 0x09);
}

TEST_F(QpMalicious, SendWithInvalidateRevokesTheStag) {
  Pair& p = *p_;
  ASSERT_EQ(p.b.qp->PostRecv(RecvWr{1, LocalSge{v_.recv, kBase, 64}}), PostStatus::kOk);
  const uint32_t s = p.a.mem.Register(4, 0);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{9, WrOpcode::kSendSeInvalidate, LocalSge{s, kBase, 4}, 0, 0,
                                    v_.wsink}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return !p.b.cqes.empty(); }, 1'000'000));
  EXPECT_EQ(p.b.cqes[0].status, WcStatus::kSuccess);
  EXPECT_EQ(p.b.cqes[0].invalidated_stag, v_.wsink);
  EXPECT_EQ(p.b.cqes[0].flags, kWcWithInvalidate | kWcSolicited);
  // The region is gone for the peer: a Write to it now is an invalid STag.
  const uint32_t src = p.a.mem.Register(16, 0);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{10, WrOpcode::kRdmaWrite, LocalSge{src, kBase, 16}, v_.wsink,
                                    kBase}),
            PostStatus::kOk);
  ExpectTerminate(1, 1, 0x00);
  ASSERT_EQ(p.a.cqes.size(), 2u);
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kSuccess);
  // RFC 5040: an RDMA Write has no remote acknowledgement; it completed at
  // the data source once TCP acknowledged it, which the segment carrying the
  // Terminate did before a's engine read the Terminate.
  EXPECT_EQ(p.a.cqes[1].wr_id, 10u);
  EXPECT_EQ(p.a.cqes[1].status, WcStatus::kSuccess);
}

TEST_F(QpMalicious, ReadOfUnknownSourceFailsWithTheTerminateCode) {
  Pair& p = *p_;
  const uint32_t sink = p.a.mem.Register(64, ddp::kAccessAll);
  const uint32_t s = p.a.mem.Register(8, 0);
  const uint32_t w = p.b.mem.Register(8, ddp::kAccessRemoteWrite);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kRdmaRead, LocalSge{sink, kBase, 64},
                                    v_.rsrc ^ 0x04, 0x100000}),
            PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{2, WrOpcode::kRdmaWrite, LocalSge{s, kBase, 8}, w, kBase}),
            PostStatus::kOk);
  ExpectTerminate(0, 1, 0x00);  // RDMAP remote protection: invalid STag
  ASSERT_EQ(p.a.cqes.size(), 2u);
  EXPECT_EQ(p.a.cqes[0].wr_id, 1u);
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kRemoteAccess);
  EXPECT_EQ(p.a.cqes[0].term, (rdmap::TerminateCode{0, 1, 0x00}));
  // Completions stay in posting order: the Write behind the failed Read
  // reports after it.
  EXPECT_EQ(p.a.cqes[1].wr_id, 2u);
  EXPECT_EQ(std::vector<uint8_t>(p.a.mem.Bytes(sink).begin(), p.a.mem.Bytes(sink).end()),
            std::vector<uint8_t>(64, 0));
}

TEST_F(QpMalicious, CorruptedPayloadWithGoodTcpChecksumIsCaughtByCrc) {
  Pair& p = *p_;
  const size_t n = 64 * 1024;
  const uint32_t src = p.a.mem.Register(n, 0);
  const uint32_t sink = p.b.mem.Register(n, ddp::kAccessRemoteWrite, 0x200000);
  const std::vector<uint8_t> pat = tcp::testing::Pattern(n, 5);
  std::copy(pat.begin(), pat.end(), p.a.mem.Bytes(src).begin());
  int corrupted = 0;
  p.a.port->mutate = [&](std::vector<uint8_t>& b, size_t hl) {
    if (corrupted > 0 || b.size() < hl + 1000) return;
    // +1 on one 16-bit word, -1 on the next: the one's complement sum, and
    // so the TCP checksum, is unchanged (RFC 1071).
    for (size_t off = hl + 600; off + 3 < b.size(); off += 2) {
      const uint16_t w1 = static_cast<uint16_t>(b[off] << 8 | b[off + 1]);
      const uint16_t w2 = static_cast<uint16_t>(b[off + 2] << 8 | b[off + 3]);
      if (w1 == 0xFFFF || w2 == 0) continue;
      StoreBe16(&b[off], static_cast<uint16_t>(w1 + 1));
      StoreBe16(&b[off + 2], static_cast<uint16_t>(w2 - 1));
      ++corrupted;
      return;
    }
  };
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kRdmaWrite, LocalSge{src, kBase, uint32_t(n)},
                                    sink, 0x200000}),
            PostStatus::kOk);
  ExpectTerminate(2, 0, 0x02);  // LLP layer, MPA, CRC error (RFC 5044 8)
  EXPECT_EQ(corrupted, 1);
  EXPECT_EQ(p.b.qp->stats().crc_errors, 1u);
  EXPECT_EQ(p.b.stack->stats().drops[static_cast<size_t>(DropReason::kTcpBadChecksum)], 0u);
  // Nothing of the corrupted FPDU or after it was placed: every placed byte
  // equals the source and the placed prefix is shorter than the message.
  MutableByteSpan got = p.b.mem.Bytes(sink);
  size_t placed = 0;
  while (placed < n && got[placed] == pat[placed]) ++placed;
  EXPECT_LT(placed, n);
  for (size_t i = placed; i < n; ++i) ASSERT_EQ(got[i], 0) << i;
  // The Write the Terminate answers fails on a with the Terminate's code.
  ASSERT_EQ(p.a.cqes.size(), 1u);
  EXPECT_EQ(p.a.cqes[0].status, WcStatus::kRemoteOperation);
  EXPECT_EQ(p.a.cqes[0].term, (rdmap::TerminateCode{2, 0, 0x02}));
}

// An FPDU whose ULPDU_Length exceeds what we accept (here 0xFFFF > 64768,
// RFC 5044 4.1's limit) cannot be delimited or checked: DDP Local
// Catastrophic (1/0/0), counted as ulpdu_too_long, not as a CRC error.
TEST_F(QpMalicious, UlpduLengthBeyondTheLimit) {
  Pair& p = *p_;
  std::vector<uint8_t> raw(64, 0);
  raw[0] = 0xFF;
  raw[1] = 0xFF;
  ASSERT_EQ(p.a.stack->SendRecord(p.a.qp->conn(), ByteSpan(raw), p.link.now),
            tcp::SendStatus::kOk);
  ExpectTerminate(1, 0, 0x00);
  EXPECT_EQ(p.b.qp->stats().ulpdu_too_long, 1u);
  EXPECT_EQ(p.b.qp->stats().crc_errors, 0u);
}

// RFC 5040 4.8: a Read Request keeps its IRD slot until the requester has
// its Response. A responder that hands Responses to TCP faster than the peer
// asks still catches a peer exceeding IRD: the slot is free only once the
// peer acknowledged the Response's last byte. The initiator here speaks Rev 1
// without RFC 6581 (so it does not learn the responder's IRD 2) and issues a
// third Read while the first two Responses are in TCP but not acknowledged.
TEST(QpIrd, ReadBeyondIrdWhileResponsesAreUnacknowledged) {
  QpOptions oa;
  oa.mpa.revision = 1;
  oa.mpa.enhanced = false;
  oa.mpa.ord = 8;
  QpOptions ob = oa;
  ob.mpa.ird = 2;
  Pair p(oa, ob);
  // Rev 1: the responder reaches Full Operation with the first FPDU (a Read).
  ASSERT_TRUE(p.Connect().ok());
  ASSERT_TRUE(p.RunUntil([&] { return p.a.obs.established; }, 1'000'000));
  constexpr uint32_t kLen = 64 * 1024;
  const uint32_t src = p.b.mem.Register(kLen, ddp::kAccessRemoteRead, 0x100000);
  const uint32_t sink = p.a.mem.Register(3 * kLen, ddp::kAccessRemoteWrite | ddp::kAccessLocalWrite,
                                         0x400000);
  auto read = [&](uint64_t id) {
    return p.a.qp->PostSend(SendWr{id, WrOpcode::kRdmaRead,
                                   LocalSge{sink, 0x400000 + (id - 1) * kLen, kLen}, src,
                                   0x100000});
  };
  ASSERT_EQ(read(1), PostStatus::kOk);
  ASSERT_EQ(read(2), PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return p.b.qp->stats().read_responses_sent == 2; }, 1'000'000));
  ASSERT_EQ(read(3), PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return !p.b.obs.term_sent.empty(); }, 2'000'000));
  // RFC 5041 7.2: untagged buffer error, "Invalid MSN - no buffer available".
  EXPECT_EQ(p.b.obs.term_sent[0], (rdmap::TerminateCode{1, 2, 0x02}));
  EXPECT_EQ(p.b.qp->stats().read_responses_sent, 2u);
}

// Within IRD, Reads issued one after another as each completes never trip
// the check (the acknowledgement frees the slot before the next Request).
TEST(QpIrd, SequentialReadsWithinIrdAreServed) {
  QpOptions o;
  o.mpa.ird = 1;
  o.mpa.ord = 1;
  Pair p(o, o);
  ASSERT_TRUE(p.Establish());
  constexpr uint32_t kLen = 16 * 1024;
  const uint32_t src = p.b.mem.Register(kLen, ddp::kAccessRemoteRead, 0x100000);
  const uint32_t sink = p.a.mem.Register(kLen, ddp::kAccessRemoteWrite | ddp::kAccessLocalWrite,
                                         0x400000);
  for (uint64_t i = 1; i <= 20; ++i) {
    ASSERT_EQ(p.a.qp->PostSend(SendWr{i, WrOpcode::kRdmaRead, LocalSge{sink, 0x400000, kLen}, src,
                                      0x100000}),
              PostStatus::kOk);
    ASSERT_TRUE(p.RunUntil([&] { return p.a.cqes.size() == i; }, 1'000'000)) << i;
    EXPECT_EQ(p.a.cqes.back().status, WcStatus::kSuccess);
  }
  EXPECT_TRUE(p.b.obs.term_sent.empty());
}

}  // namespace
}  // namespace iwarp::engine
