#include "ddp/rdmap.h"

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "ddp/test_tables.h"
#include "gtest/gtest.h"

namespace iwarp::rdmap {
namespace {

using Bytes = std::vector<uint8_t>;
using ddp::testing::FakeQueues;
using ddp::testing::FakeStagTable;

constexpr uint32_t kPd = 3;
constexpr uint32_t kWritable = 0x00000101;
constexpr uint32_t kReadable = 0x00000201;

// The first segment of `m` with a payload of `payload` bytes (0x5A each).
Bytes FirstSegment(const ddp::OutboundMessage& m, uint32_t payload) {
  ddp::Segmenter s(m, 65535);
  std::array<uint8_t, ddp::kMaxHeaderSize> hdr{};
  ddp::SegmentDesc d;
  EXPECT_TRUE(s.Next(hdr, &d));
  Bytes out(hdr.begin(), hdr.begin() + d.header_length);
  out.resize(out.size() + payload, 0x5A);
  return out;
}

TEST(RdmapControl, OpcodesAndVersionByteExact) {
  EXPECT_EQ(MakeControl(Opcode::kRdmaWrite), 0x40);
  EXPECT_EQ(MakeControl(Opcode::kReadRequest), 0x41);
  EXPECT_EQ(MakeControl(Opcode::kReadResponse), 0x42);
  EXPECT_EQ(MakeControl(Opcode::kSend), 0x43);
  EXPECT_EQ(MakeControl(Opcode::kSendInvalidate), 0x44);
  EXPECT_EQ(MakeControl(Opcode::kSendSe), 0x45);
  EXPECT_EQ(MakeControl(Opcode::kSendSeInvalidate), 0x46);
  EXPECT_EQ(MakeControl(Opcode::kTerminate), 0x47);
}

TEST(RdmapControl, ParseChecksVersionAndOpcodeButNotReservedBits) {
  Opcode op;
  EXPECT_EQ(ParseControl(0x73, &op), ControlStatus::kOk);  // reserved bits set
  EXPECT_EQ(op, Opcode::kSend);
  for (uint8_t rv : {0, 2, 3}) {
    EXPECT_EQ(ParseControl(static_cast<uint8_t>(rv << 6 | 0x3), &op), ControlStatus::kBadVersion);
  }
  for (uint8_t code = 8; code < 16; ++code) {
    EXPECT_EQ(ParseControl(static_cast<uint8_t>(0x40 | code), &op), ControlStatus::kReservedOpcode);
  }
}

TEST(RdmapControl, OpcodeTableFollowsRfc5040) {
  OpcodeInfo i;
  ASSERT_TRUE(DescribeOpcode(Opcode::kRdmaWrite, &i));
  EXPECT_TRUE(i.tagged);
  EXPECT_EQ(i.sink_access, ddp::kAccessRemoteWrite);
  ASSERT_TRUE(DescribeOpcode(Opcode::kReadResponse, &i));
  EXPECT_TRUE(i.tagged);
  EXPECT_EQ(i.sink_access, ddp::kAccessRemoteWrite);
  ASSERT_TRUE(DescribeOpcode(Opcode::kReadRequest, &i));
  EXPECT_FALSE(i.tagged);
  EXPECT_EQ(i.qn, 1u);
  for (Opcode op : {Opcode::kSend, Opcode::kSendSe}) {
    ASSERT_TRUE(DescribeOpcode(op, &i));
    EXPECT_EQ(i.qn, 0u);
    EXPECT_FALSE(i.invalidates);
  }
  for (Opcode op : {Opcode::kSendInvalidate, Opcode::kSendSeInvalidate}) {
    ASSERT_TRUE(DescribeOpcode(op, &i));
    EXPECT_EQ(i.qn, 0u);
    EXPECT_TRUE(i.invalidates);
  }
  ASSERT_TRUE(DescribeOpcode(Opcode::kTerminate, &i));
  EXPECT_EQ(i.qn, 2u);
  EXPECT_FALSE(DescribeOpcode(static_cast<Opcode>(8), &i));
}

TEST(RdmapMessages, SendWithInvalidateCarriesTheStagInRsvdUlp) {
  const Bytes seg = FirstSegment(SendMessage(Opcode::kSendInvalidate, Seq32(5), 0, 0xA1B2C3D4), 0);
  const Bytes want = {0x41, 0x44, 0xA1, 0xB2, 0xC3, 0xD4, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0};
  EXPECT_EQ(seg, want);
  // A plain Send sends the reserved field as zero whatever it is given.
  const auto plain = SendMessage(Opcode::kSend, Seq32(5), 0, 0xA1B2C3D4);
  EXPECT_EQ(plain.rsvd_ulp1, 0u);
}

TEST(ReadRequest, ByteExactEncodeAndParse) {
  ReadRequest rr{0x11111111, 0x2222222233333333ull, 0x00100000, 0x44444444, 0x5555555566666666ull};
  std::array<uint8_t, 28> out{};
  ASSERT_EQ(EncodeReadRequest(rr, out), 28u);
  const std::array<uint8_t, 28> want = {
      0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22, 0x33, 0x33, 0x33, 0x33, 0x00, 0x10,
      0x00, 0x00, 0x44, 0x44, 0x44, 0x44, 0x55, 0x55, 0x55, 0x55, 0x66, 0x66, 0x66, 0x66};
  EXPECT_EQ(out, want);
  ReadRequest back;
  ASSERT_EQ(ParseReadRequest(out, &back), BodyStatus::kOk);
  EXPECT_EQ(back, rr);
}

TEST(ReadRequest, LengthMustBeExactly28) {
  Bytes b(29, 0);
  ReadRequest rr;
  for (size_t n = 0; n < 28; ++n) {
    EXPECT_EQ(ParseReadRequest(ByteSpan(b.data(), n), &rr), BodyStatus::kTruncated);
  }
  EXPECT_EQ(ParseReadRequest(b, &rr), BodyStatus::kTrailingBytes);
  std::array<uint8_t, 27> small{};
  EXPECT_EQ(EncodeReadRequest(rr, small), 0u);
}

TEST(TerminateCodes, RdmapAndDdpCodePoints) {
  EXPECT_EQ(codes::kInvalidStag, (TerminateCode{0, 1, 0x00}));
  EXPECT_EQ(codes::kBaseBounds, (TerminateCode{0, 1, 0x01}));
  EXPECT_EQ(codes::kAccessRights, (TerminateCode{0, 1, 0x02}));
  EXPECT_EQ(codes::kStagNotAssociated, (TerminateCode{0, 1, 0x03}));
  EXPECT_EQ(codes::kToWrap, (TerminateCode{0, 1, 0x04}));
  EXPECT_EQ(codes::kInvalidRdmapVersion, (TerminateCode{0, 2, 0x05}));
  EXPECT_EQ(codes::kUnexpectedOpcode, (TerminateCode{0, 2, 0x06}));
  EXPECT_EQ(codes::kCatastrophicStream, (TerminateCode{0, 2, 0x07}));
  EXPECT_EQ(codes::kCatastrophicGlobal, (TerminateCode{0, 2, 0x08}));
  EXPECT_EQ(FromDdpError(ddp::DdpError::kUntaggedNoBuffer), (TerminateCode{1, 2, 0x02}));
  EXPECT_EQ(FromDdpError(ddp::DdpError::kTaggedToWrap), (TerminateCode{1, 1, 0x03}));
  EXPECT_EQ(TerminateCodeName(codes::kAccessRights), "rdmap_access_rights");
  EXPECT_EQ(TerminateCodeName(FromDdpError(ddp::DdpError::kUntaggedMsnRange)),
            "ddp_untagged_msn_range");
  EXPECT_EQ(TerminateCodeName(TerminateCode{2, 0, 2}), "llp_error");
}

TEST(TerminateCodec, ParsesHeaderWithCopiedDdpAndRdmaHeaders) {
  Bytes in = {0x12, 0x03, 0xE0, 0x00, 0x00, 0x2E};
  const Bytes ddp_hdr = {0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0};
  in.insert(in.end(), ddp_hdr.begin(), ddp_hdr.end());
  for (int i = 0; i < 28; ++i) in.push_back(static_cast<uint8_t>(i));
  in.push_back(0xFF);  // not part of the header
  Terminate t;
  size_t used = 0;
  ASSERT_EQ(ParseTerminate(in, &t, &used), BodyStatus::kOk);
  EXPECT_EQ(used, in.size() - 1);
  EXPECT_EQ(t.code, (TerminateCode{1, 2, 3}));
  EXPECT_TRUE(t.m && t.d && t.r);
  EXPECT_EQ(t.ddp_segment_length, 46);
  EXPECT_EQ(Bytes(t.ddp_header.begin(), t.ddp_header.end()), ddp_hdr);
  ASSERT_EQ(t.rdma_header.size(), 28u);
  EXPECT_EQ(t.rdma_header[27], 27);
}

TEST(TerminateCodec, TaggedCopiedHeaderIs14Bytes) {
  const Bytes in = {0x11, 0x01, 0xC0, 0x00, 0x00, 0x20, 0xC1, 0x40, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0x10, 0};
  Terminate t;
  size_t used = 0;
  ASSERT_EQ(ParseTerminate(in, &t, &used), BodyStatus::kOk);
  EXPECT_EQ(used, in.size());
  EXPECT_EQ(t.ddp_header.size(), 14u);
}

TEST(TerminateCodec, MalformedAndTruncatedInputs) {
  Terminate t;
  size_t used = 0;
  const Bytes m_without_d = {0x00, 0x07, 0x80, 0x00, 0x00, 0x10};
  EXPECT_EQ(ParseTerminate(m_without_d, &t, &used), BodyStatus::kMalformed);
  Bytes full = {0x12, 0x02, 0xE0, 0x00, 0x00, 0x2E, 0x41, 0x41};
  full.resize(4 + 2 + 18 + 28, 0);
  for (size_t n = 0; n < full.size(); ++n) {
    EXPECT_EQ(ParseTerminate(ByteSpan(full.data(), n), &t, &used), BodyStatus::kTruncated) << n;
    EXPECT_EQ(used, 0u);
  }
  EXPECT_EQ(ParseTerminate(full, &t, &used), BodyStatus::kOk);
}

TEST(TerminateCodec, EncodeRejectsInconsistentHeaders) {
  std::array<uint8_t, kMaxTerminateSize> out{};
  const Bytes untagged_hdr(18, 0x01);
  Terminate t;
  t.code = {1, 2, 2};
  t.m = true;  // without d
  EXPECT_EQ(EncodeTerminate(t, out), 0u);
  t.d = true;
  t.ddp_header = ByteSpan(untagged_hdr.data(), 14);  // T=0 but 14 bytes
  EXPECT_EQ(EncodeTerminate(t, out), 0u);
  t.ddp_header = untagged_hdr;
  EXPECT_EQ(EncodeTerminate(t, out), 24u);
  t.r = true;
  t.rdma_header = ByteSpan(untagged_hdr.data(), 18);
  EXPECT_EQ(EncodeTerminate(t, out), 0u);
  t.r = false;
  t.code.layer = 16;
  EXPECT_EQ(EncodeTerminate(t, out), 0u);
  t.code.layer = 1;
  std::array<uint8_t, 23> small{};
  EXPECT_EQ(EncodeTerminate(t, small), 0u);
}

TEST(TerminateCodec, RandomRoundTrip) {
  std::mt19937 rng(5040);
  for (int i = 0; i < 20000; ++i) {
    Bytes ddp_hdr((rng() & 1) ? 14 : 18);
    for (auto& b : ddp_hdr) b = static_cast<uint8_t>(rng());
    ddp_hdr[0] = static_cast<uint8_t>((ddp_hdr[0] & ~ddp::kCtrlTagged) |
                                      (ddp_hdr.size() == 14 ? ddp::kCtrlTagged : 0));
    Bytes rdma_hdr(28);
    for (auto& b : rdma_hdr) b = static_cast<uint8_t>(rng());
    Terminate t;
    t.code = {static_cast<uint8_t>(rng() % 16), static_cast<uint8_t>(rng() % 16),
              static_cast<uint8_t>(rng())};
    t.d = (rng() & 1) != 0;
    t.m = t.d && (rng() & 1) != 0;
    t.r = (rng() & 1) != 0;
    t.ddp_segment_length = t.m ? static_cast<uint16_t>(rng()) : 0;
    if (t.d) t.ddp_header = ddp_hdr;
    if (t.r) t.rdma_header = rdma_hdr;
    std::array<uint8_t, kMaxTerminateSize> out{};
    const size_t n = EncodeTerminate(t, out);
    ASSERT_GT(n, 0u);
    Terminate back;
    size_t used = 0;
    ASSERT_EQ(ParseTerminate(ByteSpan(out.data(), n), &back, &used), BodyStatus::kOk);
    ASSERT_EQ(used, n);
    ASSERT_EQ(back.code, t.code);
    ASSERT_EQ(back.m, t.m);
    ASSERT_EQ(back.d, t.d);
    ASSERT_EQ(back.r, t.r);
    ASSERT_EQ(back.ddp_segment_length, t.ddp_segment_length);
    ASSERT_TRUE(std::equal(back.ddp_header.begin(), back.ddp_header.end(), t.ddp_header.begin(),
                           t.ddp_header.end()));
    ASSERT_TRUE(std::equal(back.rdma_header.begin(), back.rdma_header.end(),
                           t.rdma_header.begin(), t.rdma_header.end()));
  }
}

TEST(TerminateCodec, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  for (int i = 0; i < 50000; ++i) {
    Bytes in(rng() % 64);
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    Terminate t;
    size_t used = 0;
    if (ParseTerminate(in, &t, &used) == BodyStatus::kOk) {
      ASSERT_LE(used, in.size());
      std::array<uint8_t, kMaxTerminateSize> out{};
      ASSERT_EQ(EncodeTerminate(t, out), used);
    }
  }
}

class SegmentChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    ddp::TaggedRegion w;
    w.stag = kWritable;
    w.base_to = 0;
    w.length = 1 << 20;
    w.access = ddp::kAccessRemoteWrite;
    w.pd = kPd;
    w.valid = true;
    w.handle = 11;
    stags_.Put(w);
    ddp::TaggedRegion r = w;
    r.stag = kReadable;
    r.access = ddp::kAccessRemoteRead;
    r.handle = 22;
    stags_.Put(r);
    queues_.Post(kQnSend, 100, 4096);
    queues_.Post(kQnReadRequest, 200, 28);
    queues_.Post(kQnTerminate, 300, kMaxTerminateSize);
    ctx_.stream = {kPd, 1};
    ctx_.stags = &stags_;
    ctx_.queues = &queues_;
  }
  SegmentVerdict Check(const Bytes& seg) { return CheckSegment(seg, ctx_); }

  FakeStagTable stags_;
  FakeQueues queues_;
  RxContext ctx_;
};

TEST_F(SegmentChecks, AcceptsEachMessageTypeAndSaysWhereToPlace) {
  auto v = Check(FirstSegment(RdmaWriteMessage(kWritable, 0x100, 64), 64));
  ASSERT_TRUE(v.ok) << TerminateCodeName(v.error);
  EXPECT_EQ(v.opcode, Opcode::kRdmaWrite);
  EXPECT_EQ(v.placement, (ddp::Placement{11, 0x100, 64}));

  v = Check(FirstSegment(ReadResponseMessage(kWritable, 0x200, 8), 8));
  ASSERT_TRUE(v.ok);
  EXPECT_EQ(v.placement, (ddp::Placement{11, 0x200, 8}));

  v = Check(FirstSegment(SendMessage(Opcode::kSendSe, Seq32(1), 10), 10));
  ASSERT_TRUE(v.ok);
  EXPECT_EQ(v.placement, (ddp::Placement{100, 0, 10}));

  v = Check(FirstSegment(ReadRequestMessage(Seq32(1)), 28));
  ASSERT_TRUE(v.ok) << TerminateCodeName(v.error);
  EXPECT_EQ(v.placement, (ddp::Placement{200, 0, 28}));

  v = Check(FirstSegment(TerminateMessage(Seq32(1), 4), 4));
  ASSERT_TRUE(v.ok);
  EXPECT_EQ(v.opcode, Opcode::kTerminate);
}

TEST_F(SegmentChecks, SegmentShorterThanItsHeader) {
  Bytes seg = FirstSegment(SendMessage(Opcode::kSend, Seq32(1), 0), 0);
  seg.resize(10);
  const auto v = Check(seg);
  EXPECT_FALSE(v.ok);
  EXPECT_FALSE(v.header_parsed);
  EXPECT_EQ(v.error, codes::kCatastrophicStream);
}

TEST_F(SegmentChecks, BadDdpVersionPerBufferModel) {
  Bytes t = FirstSegment(RdmaWriteMessage(kWritable, 0, 4), 4);
  t[0] = static_cast<uint8_t>((t[0] & ~ddp::kCtrlDvMask) | 2);
  EXPECT_EQ(Check(t).error, (TerminateCode{1, 1, 0x04}));
  Bytes u = FirstSegment(SendMessage(Opcode::kSend, Seq32(1), 4), 4);
  u[0] = static_cast<uint8_t>(u[0] & ~ddp::kCtrlDvMask);
  EXPECT_EQ(Check(u).error, (TerminateCode{1, 2, 0x06}));
}

TEST_F(SegmentChecks, BadRdmapVersionAndReservedOpcode) {
  Bytes seg = FirstSegment(SendMessage(Opcode::kSend, Seq32(1), 4), 4);
  seg[1] = 0x83;  // RV = 2
  EXPECT_EQ(Check(seg).error, codes::kInvalidRdmapVersion);
  seg[1] = 0x49;  // opcode 9
  EXPECT_EQ(Check(seg).error, codes::kUnexpectedOpcode);
}

TEST_F(SegmentChecks, OpcodeMustMatchBufferModel) {
  Bytes send_tagged = FirstSegment(RdmaWriteMessage(kWritable, 0, 4), 4);
  send_tagged[1] = MakeControl(Opcode::kSend);
  EXPECT_EQ(Check(send_tagged).error, codes::kUnexpectedOpcode);
  Bytes write_untagged = FirstSegment(SendMessage(Opcode::kSend, Seq32(1), 4), 4);
  write_untagged[1] = MakeControl(Opcode::kRdmaWrite);
  EXPECT_EQ(Check(write_untagged).error, codes::kUnexpectedOpcode);
}

TEST_F(SegmentChecks, OpcodeMustMatchQueue) {
  Bytes seg = FirstSegment(SendMessage(Opcode::kSend, Seq32(1), 4), 4);
  seg[ddp::off::kQn + 3] = kQnReadRequest;
  EXPECT_EQ(Check(seg).error, FromDdpError(ddp::DdpError::kUntaggedInvalidQn));
  seg[ddp::off::kQn + 3] = 5;
  EXPECT_EQ(Check(seg).error, (TerminateCode{1, 2, 0x01}));
}

TEST_F(SegmentChecks, DdpErrorsReachTheTerminateWithLayerDdp) {
  EXPECT_EQ(Check(FirstSegment(RdmaWriteMessage(0x00000F01, 0, 4), 4)).error,
            (TerminateCode{1, 1, 0x00}));
  EXPECT_EQ(Check(FirstSegment(RdmaWriteMessage(kWritable, (1 << 20) - 2, 4), 4)).error,
            (TerminateCode{1, 1, 0x01}));
  EXPECT_EQ(Check(FirstSegment(SendMessage(Opcode::kSend, Seq32(2), 4), 4)).error,
            (TerminateCode{1, 2, 0x02}));
  EXPECT_EQ(Check(FirstSegment(SendMessage(Opcode::kSend, Seq32(0), 4), 4)).error,
            (TerminateCode{1, 2, 0x03}));
  EXPECT_EQ(Check(FirstSegment(SendMessage(Opcode::kSend, Seq32(1), 4097), 4097)).error,
            (TerminateCode{1, 2, 0x05}));
}

TEST_F(SegmentChecks, SinkWithoutRemoteWriteIsAccessViolation) {
  EXPECT_EQ(Check(FirstSegment(RdmaWriteMessage(kReadable, 0, 4), 4)).error,
            codes::kAccessRights);
  EXPECT_EQ(Check(FirstSegment(ReadResponseMessage(kReadable, 0, 4), 4)).error,
            codes::kAccessRights);
  // A zero-length Write names no memory, so it needs no rights.
  EXPECT_TRUE(Check(FirstSegment(RdmaWriteMessage(kReadable, 0, 0), 0)).ok);
}

TEST_F(SegmentChecks, ReadRequestMustBeOneSegmentOf28Bytes) {
  queues_.queue(kQnReadRequest).buffers[0].length = 64;  // let DDP accept more
  EXPECT_EQ(Check(FirstSegment(ReadRequestMessage(Seq32(1)), 20)).error,
            codes::kOperationUnspecified);
  EXPECT_EQ(Check(FirstSegment(ReadRequestMessage(Seq32(1)), 30)).error,
            codes::kOperationUnspecified);
  Bytes not_last = FirstSegment(ReadRequestMessage(Seq32(1)), 28);
  not_last[0] = static_cast<uint8_t>(not_last[0] & ~ddp::kCtrlLast);
  EXPECT_EQ(Check(not_last).error, codes::kOperationUnspecified);
}

TEST_F(SegmentChecks, ReadSourceChecksUseRdmapProtectionCodes) {
  TerminateCode err;
  const ddp::TaggedRegion* region = nullptr;
  ReadRequest rr{kWritable, 0, 100, kReadable, 0x10};
  ASSERT_TRUE(CheckReadSource(rr, ctx_.stream, stags_, &err, &region));
  EXPECT_EQ(region->handle, 22u);

  rr.source_stag = 0x00000F01;
  EXPECT_FALSE(CheckReadSource(rr, ctx_.stream, stags_, &err, &region));
  EXPECT_EQ(err, codes::kInvalidStag);
  rr.source_stag = kReadable;
  rr.source_to = (1 << 20) - 50;
  EXPECT_FALSE(CheckReadSource(rr, ctx_.stream, stags_, &err, &region));
  EXPECT_EQ(err, codes::kBaseBounds);
  rr.source_to = 0;
  rr.source_stag = kWritable;  // no remote read right
  EXPECT_FALSE(CheckReadSource(rr, ctx_.stream, stags_, &err, &region));
  EXPECT_EQ(err, codes::kAccessRights);
  stags_.Mutable(kReadable).pd = kPd + 1;
  rr.source_stag = kReadable;
  EXPECT_FALSE(CheckReadSource(rr, ctx_.stream, stags_, &err, &region));
  EXPECT_EQ(err, codes::kStagNotAssociated);
  stags_.Mutable(kReadable).pd = kPd;
  stags_.Mutable(kReadable).base_to = ~0ull - 10;
  rr.source_to = ~0ull - 10;
  EXPECT_FALSE(CheckReadSource(rr, ctx_.stream, stags_, &err, &region));
  EXPECT_EQ(err, codes::kToWrap);
  rr.read_size = 0;  // zero-length Read: nothing to check
  rr.source_stag = 0xFFFFFFFF;
  EXPECT_TRUE(CheckReadSource(rr, ctx_.stream, stags_, &err, &region));
  EXPECT_EQ(region, nullptr);
}

TEST_F(SegmentChecks, TerminateForSendWithoutBufferByteExact) {
  const Bytes seg = FirstSegment(SendMessage(Opcode::kSend, Seq32(2), 10), 10);
  const auto v = Check(seg);
  ASSERT_EQ(v.error, FromDdpError(ddp::DdpError::kUntaggedNoBuffer));
  std::array<uint8_t, kMaxTerminateSize> out{};
  const size_t n = BuildTerminate(v, seg, out);
  const Bytes want = {0x12, 0x02, 0xC0, 0x00, 0x00, 0x1C, 0x41, 0x43, 0x00, 0x00, 0x00, 0x00,
                      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(Bytes(out.begin(), out.begin() + n), want);

  // The whole Terminate message as it goes on the wire (one DDP segment).
  ddp::Segmenter s(TerminateMessage(Seq32(1), static_cast<uint32_t>(n)), 1500);
  std::array<uint8_t, ddp::kMaxHeaderSize> hdr{};
  ddp::SegmentDesc d;
  ASSERT_TRUE(s.Next(hdr, &d));
  EXPECT_TRUE(d.last);
  const std::array<uint8_t, 18> term_hdr = {0x41, 0x47, 0, 0, 0, 0, 0, 0, 0,
                                            2,    0,    0, 0, 1, 0, 0, 0, 0};
  EXPECT_EQ(hdr, term_hdr);
}

TEST_F(SegmentChecks, TerminateForReadRequestCopiesTheRdmaHeader) {
  Bytes seg = FirstSegment(ReadRequestMessage(Seq32(9)), 0);
  ReadRequest rr{1, 2, 3, 4, 5};
  seg.resize(seg.size() + 28);
  EncodeReadRequest(rr, MutableByteSpan(seg).subspan(18));
  const auto v = Check(seg);
  ASSERT_EQ(v.error, FromDdpError(ddp::DdpError::kUntaggedMsnRange));
  std::array<uint8_t, kMaxTerminateSize> out{};
  ASSERT_EQ(BuildTerminate(v, seg, out), kMaxTerminateSize);
  Terminate t;
  size_t used = 0;
  ASSERT_EQ(ParseTerminate(out, &t, &used), BodyStatus::kOk);
  EXPECT_EQ(t.code, (TerminateCode{1, 2, 0x03}));
  EXPECT_TRUE(t.m && t.d && t.r);
  EXPECT_EQ(t.ddp_segment_length, 46);
  EXPECT_TRUE(std::equal(t.ddp_header.begin(), t.ddp_header.end(), seg.begin()));
  ReadRequest back;
  ASSERT_EQ(ParseReadRequest(t.rdma_header, &back), BodyStatus::kOk);
  EXPECT_EQ(back, rr);
}

TEST_F(SegmentChecks, TerminateAfterVersionErrorCarriesNoHeaders) {
  Bytes seg = FirstSegment(RdmaWriteMessage(kWritable, 0, 4), 4);
  seg[0] = 0x83;  // DV = 3
  const auto v = Check(seg);
  std::array<uint8_t, kMaxTerminateSize> out{};
  const size_t n = BuildTerminate(v, seg, out);
  const Bytes want = {0x11, 0x04, 0x00, 0x00};
  EXPECT_EQ(Bytes(out.begin(), out.begin() + n), want);
}

TEST_F(SegmentChecks, RandomAndCorruptedSegmentsNeverCrash) {
  std::mt19937 rng(99);
  const Bytes seeds[] = {FirstSegment(RdmaWriteMessage(kWritable, 0, 16), 16),
                         FirstSegment(SendMessage(Opcode::kSendInvalidate, Seq32(1), 16, 7), 16),
                         FirstSegment(ReadRequestMessage(Seq32(1)), 28)};
  for (int i = 0; i < 50000; ++i) {
    Bytes seg = seeds[i % 3];
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) seg[rng() % seg.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    seg.resize(rng() % (seg.size() + 1));
    const auto v = Check(seg);
    if (v.ok) {
      ASSERT_TRUE(v.header_parsed);
      ASSERT_EQ(v.placement.length, seg.size() - v.header.size());
    }
    std::array<uint8_t, kMaxTerminateSize> out{};
    if (!v.ok) {
      ASSERT_GE(BuildTerminate(v, seg, out), kTerminateControlSize);
    }
  }
}

}  // namespace
}  // namespace iwarp::rdmap
