#include "sctp/adaptation.h"

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::sctp {
namespace {

using Bytes = std::vector<uint8_t>;

TEST(AdaptationParam, ByteExactAndValidated) {
  std::array<uint8_t, 8> out{};
  ASSERT_EQ(EncodeAdaptationParam(kDdpAdaptationIndication, out), 8u);
  const std::array<uint8_t, 8> want = {0xC0, 0x06, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01};
  EXPECT_EQ(out, want);
  uint32_t ind = 0;
  ASSERT_EQ(ParseAdaptationParam(out, &ind), AdaptStatus::kOk);
  EXPECT_EQ(ind, 1u);

  Bytes bad_type = {0xC0, 0x07, 0x00, 0x08, 0, 0, 0, 1};
  EXPECT_EQ(ParseAdaptationParam(bad_type, &ind), AdaptStatus::kBadParameterType);
  Bytes bad_len = {0xC0, 0x06, 0x00, 0x0C, 0, 0, 0, 1};
  EXPECT_EQ(ParseAdaptationParam(bad_len, &ind), AdaptStatus::kBadParameterLength);
  for (size_t n = 0; n < 8; ++n) {
    EXPECT_EQ(ParseAdaptationParam(ByteSpan(out.data(), n), &ind), AdaptStatus::kTruncated);
  }
  std::array<uint8_t, 7> small{};
  EXPECT_EQ(EncodeAdaptationParam(1, small), 0u);
}

TEST(AdaptationParam, OnlyTheDdpIndicationEnablesDdp) {
  EXPECT_EQ(ClassifyPeer(false, 1), PeerAdaptation::kNone);
  EXPECT_EQ(ClassifyPeer(true, 1), PeerAdaptation::kDdp);
  EXPECT_EQ(ClassifyPeer(true, 0), PeerAdaptation::kOther);
  EXPECT_EQ(ClassifyPeer(true, 2), PeerAdaptation::kOther);
}

TEST(SegmentChunk, SsnPrecedesTheSegment) {
  Bytes chunk(2 + 20, 0x77);
  ASSERT_EQ(EncodeSegmentChunkPrefix(Seq16(0xBEEF), chunk), 2u);
  EXPECT_EQ(chunk[0], 0xBE);
  EXPECT_EQ(chunk[1], 0xEF);
  SegmentChunk c;
  ASSERT_EQ(ParseSegmentChunk(chunk, 1000, &c), AdaptStatus::kOk);
  EXPECT_EQ(c.ssn, Seq16(0xBEEF));
  EXPECT_EQ(c.segment.size(), 20u);
  EXPECT_EQ(c.segment.data(), chunk.data() + 2);
}

TEST(SegmentChunk, RejectsEmptyTruncatedAndOversized) {
  SegmentChunk c;
  const Bytes one = {0x00};
  EXPECT_EQ(ParseSegmentChunk(one, 1000, &c), AdaptStatus::kTruncated);
  const Bytes only_ssn = {0x00, 0x01};
  EXPECT_EQ(ParseSegmentChunk(only_ssn, 1000, &c), AdaptStatus::kEmptySegment);
  Bytes big(2 + 517, 0);
  EXPECT_EQ(ParseSegmentChunk(big, 516, &c), AdaptStatus::kSegmentTooLarge);
  big.pop_back();
  EXPECT_EQ(ParseSegmentChunk(big, 516, &c), AdaptStatus::kOk);
  std::array<uint8_t, 1> small{};
  EXPECT_EQ(EncodeSegmentChunkPrefix(Seq16(1), small), 0u);
}

TEST(SessionControl, InitiateWithPrivateDataByteExact) {
  const Bytes pd = {'h', 'i'};
  SessionControl m{Seq16(0), FunctionCode::kInitiate, pd};
  std::array<uint8_t, 16> out{};
  size_t n = 0;
  ASSERT_EQ(EncodeSessionControl(m, out, &n), AdaptStatus::kOk);
  const Bytes want = {0x00, 0x00, 0x00, 0x01, 'h', 'i'};
  EXPECT_EQ(Bytes(out.begin(), out.begin() + n), want);
  SessionControl back;
  ASSERT_EQ(ParseSessionControl(ByteSpan(out.data(), n), &back), AdaptStatus::kOk);
  EXPECT_EQ(back.ssn, Seq16(0));
  EXPECT_EQ(back.function, FunctionCode::kInitiate);
  EXPECT_EQ(Bytes(back.private_data.begin(), back.private_data.end()), pd);
}

TEST(SessionControl, FunctionCodesAndPrivateDataRules) {
  SessionControl m;
  const Bytes term = {0x00, 0x05, 0x00, 0x04};
  ASSERT_EQ(ParseSessionControl(term, &m), AdaptStatus::kOk);
  EXPECT_EQ(m.function, FunctionCode::kTerminate);
  EXPECT_EQ(m.ssn, Seq16(5));
  const Bytes term_pd = {0x00, 0x05, 0x00, 0x04, 0x01};
  EXPECT_EQ(ParseSessionControl(term_pd, &m), AdaptStatus::kPrivateDataNotAllowed);
  for (uint16_t f : {0, 5, 0x100, 0xFFFF}) {
    const Bytes b = {0, 0, static_cast<uint8_t>(f >> 8), static_cast<uint8_t>(f)};
    EXPECT_EQ(ParseSessionControl(b, &m), AdaptStatus::kUnknownFunctionCode) << f;
  }
  Bytes max(4 + 512, 0);
  max[3] = 2;  // Accept
  EXPECT_EQ(ParseSessionControl(max, &m), AdaptStatus::kOk);
  EXPECT_EQ(m.private_data.size(), 512u);
  max.push_back(0);
  EXPECT_EQ(ParseSessionControl(max, &m), AdaptStatus::kPrivateDataTooLong);
  const Bytes reject_empty = {0x00, 0x01, 0x00, 0x03};
  EXPECT_EQ(ParseSessionControl(reject_empty, &m), AdaptStatus::kOk);
  EXPECT_TRUE(m.private_data.empty());
  for (size_t n = 0; n < 4; ++n) {
    EXPECT_EQ(ParseSessionControl(ByteSpan(term.data(), n), &m), AdaptStatus::kTruncated);
  }
}

TEST(SessionControl, EncodeRefusesWhatDecodeRejects) {
  const Bytes pd(513, 0);
  std::array<uint8_t, 600> out{};
  size_t n = 99;
  SessionControl m{Seq16(1), FunctionCode::kAccept, pd};
  EXPECT_EQ(EncodeSessionControl(m, out, &n), AdaptStatus::kPrivateDataTooLong);
  EXPECT_EQ(n, 0u);
  m = SessionControl{Seq16(1), FunctionCode::kTerminate, ByteSpan(pd.data(), 1)};
  EXPECT_EQ(EncodeSessionControl(m, out, &n), AdaptStatus::kPrivateDataNotAllowed);
  m = SessionControl{Seq16(1), static_cast<FunctionCode>(9), {}};
  EXPECT_EQ(EncodeSessionControl(m, out, &n), AdaptStatus::kUnknownFunctionCode);
  m = SessionControl{Seq16(1), FunctionCode::kReject, ByteSpan(pd.data(), 10)};
  std::array<uint8_t, 13> small{};
  EXPECT_EQ(EncodeSessionControl(m, small, &n), AdaptStatus::kOutputTooSmall);
  EXPECT_EQ(n, 0u);
}

TEST(SessionControl, RandomRoundTripAndRandomBytesNeverCrash) {
  std::mt19937 rng(5043);
  std::array<uint8_t, 600> out{};
  for (int i = 0; i < 20000; ++i) {
    Bytes pd(rng() % 513);
    for (auto& b : pd) b = static_cast<uint8_t>(rng());
    const auto f = static_cast<FunctionCode>(1 + rng() % 4);
    if (f == FunctionCode::kTerminate) pd.clear();
    SessionControl m{Seq16(static_cast<uint16_t>(rng())), f, pd};
    size_t n = 0;
    ASSERT_EQ(EncodeSessionControl(m, out, &n), AdaptStatus::kOk);
    SessionControl back;
    ASSERT_EQ(ParseSessionControl(ByteSpan(out.data(), n), &back), AdaptStatus::kOk);
    ASSERT_EQ(back.ssn, m.ssn);
    ASSERT_EQ(back.function, m.function);
    ASSERT_EQ(Bytes(back.private_data.begin(), back.private_data.end()), pd);

    Bytes junk(rng() % 40);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    SessionControl j;
    (void)ParseSessionControl(junk, &j);
    SegmentChunk c;
    (void)ParseSegmentChunk(junk, 16, &c);
    uint32_t ind;
    (void)ParseAdaptationParam(junk, &ind);
  }
}

TEST(SessionSequencer, LegalSequencesOfSection6) {
  SessionSequencer passive(Role::kPassive);  // 6.2 seen from the passive side
  EXPECT_EQ(passive.OnReceive(ChunkKind::kInitiate), AdaptStatus::kOk);
  EXPECT_EQ(passive.OnReceive(ChunkKind::kDdpSegment), AdaptStatus::kOk);
  EXPECT_EQ(passive.OnReceive(ChunkKind::kDdpSegment), AdaptStatus::kOk);
  EXPECT_EQ(passive.OnReceive(ChunkKind::kTerminate), AdaptStatus::kOk);
  EXPECT_TRUE(passive.closed());

  SessionSequencer accepted(Role::kActive);
  EXPECT_EQ(accepted.OnReceive(ChunkKind::kAccept), AdaptStatus::kOk);
  EXPECT_EQ(accepted.OnReceive(ChunkKind::kDdpSegment), AdaptStatus::kOk);
  EXPECT_FALSE(accepted.closed());

  SessionSequencer rejected(Role::kActive);  // 6.3
  EXPECT_EQ(rejected.OnReceive(ChunkKind::kReject), AdaptStatus::kOk);
  EXPECT_TRUE(rejected.closed());

  SessionSequencer non_ulp(Role::kActive);  // 6.4
  EXPECT_EQ(non_ulp.OnReceive(ChunkKind::kTerminate), AdaptStatus::kOk);
  EXPECT_TRUE(non_ulp.closed());
}

TEST(SessionSequencer, IllegalSequencesEndTheSession) {
  SessionSequencer a(Role::kPassive);
  EXPECT_EQ(a.OnReceive(ChunkKind::kDdpSegment), AdaptStatus::kIllegalSequence);
  EXPECT_TRUE(a.closed());
  SessionSequencer b(Role::kActive);
  EXPECT_EQ(b.OnReceive(ChunkKind::kInitiate), AdaptStatus::kIllegalSequence);
  SessionSequencer c(Role::kActive);
  EXPECT_EQ(c.OnReceive(ChunkKind::kDdpSegment), AdaptStatus::kIllegalSequence);
  SessionSequencer d(Role::kPassive);
  ASSERT_EQ(d.OnReceive(ChunkKind::kInitiate), AdaptStatus::kOk);
  EXPECT_EQ(d.OnReceive(ChunkKind::kAccept), AdaptStatus::kIllegalSequence);
  SessionSequencer e(Role::kActive);
  ASSERT_EQ(e.OnReceive(ChunkKind::kReject), AdaptStatus::kOk);
  EXPECT_EQ(e.OnReceive(ChunkKind::kDdpSegment), AdaptStatus::kIllegalSequence);
}

TEST(SsnWindow, GapsMustBeExplainableByUnreceivedChunks) {
  EXPECT_TRUE(SsnPlausible(Seq16(0), Seq16(0)));
  EXPECT_TRUE(SsnPlausible(Seq16(0), Seq16(32767)));
  EXPECT_FALSE(SsnPlausible(Seq16(0), Seq16(32768)));
  EXPECT_FALSE(SsnPlausible(Seq16(100), Seq16(99)));
  EXPECT_TRUE(SsnPlausible(Seq16(65530), Seq16(5)));  // wraps
}

TEST(MaxSegmentSize, Section9) {
  // IPv4, 1500: 1500 - 20 - 12 - 16 - 2 = 1450.
  EXPECT_EQ(MaxDdpSegmentSize(PathParams{1500, false, 0, 0}), 1450u);
  EXPECT_EQ(MaxDdpSegmentSize(PathParams{1500, true, 0, 0}), 1430u);
  EXPECT_EQ(MaxDdpSegmentSize(PathParams{9000, false, 0, 16}), 8934u);
  // The 516-byte floor (RFC 5043 9), e.g. on a 576-byte IPv4 path.
  EXPECT_EQ(MaxDdpSegmentSize(PathParams{576, false, 0, 0}), 526u);
  EXPECT_EQ(MaxDdpSegmentSize(PathParams{576, false, 0, 32}), 516u);
  EXPECT_EQ(MaxDdpSegmentSize(PathParams{0, true, 0, 0}), 516u);
  EXPECT_GE(MaxDdpSegmentSize(PathParams{1, false, 0xFFFFFFFF, 0xFFFFFFFF}), 516u);
  // A Session Control message with 512 bytes of private data always fits.
  EXPECT_GE(MaxDdpSegmentSize(PathParams{0, false, 0, 0}) + kSsnSize,
            kSessionControlHeaderSize + kMaxPrivateData);
}

}  // namespace
}  // namespace iwarp::sctp
