#include "tcp_lite/tcp_segment.h"

#include <algorithm>
#include <random>
#include <vector>

#include "common/checksum.h"
#include "gtest/gtest.h"

namespace iwarp::tcp {
namespace {

using Bytes = std::vector<uint8_t>;

// 192.168.1.10 -> 192.168.1.20.
constexpr Ipv4Addresses kClientToServer{0xC0A8010A, 0xC0A80114};
constexpr Ipv4Addresses kServerToClient{0xC0A80114, 0xC0A8010A};

// SYN 49152 -> 20049, seq 0x01020304, window 64240, with the Linux SYN option
// block: MSS 1460, SACK-permitted, Timestamps TSval 1 TSecr 0, NOP, WS 7.
//
// Checksum, 16-bit words summed by hand:
//   pseudo-header c0a8 + 010a + c0a8 + 0114 + 0006 + 0028 (length 40) = 1839c
//   header        c000 + 4e51 + 0102 + 0304 + a002 + faf0 = 2ad49, options
//                 0204 + 05b4 + 0402 + 080a + 0001 + 0103 + 0307 -> 2c518
//   1839c + 2c518 = 448b4; fold: 48b4 + 4 = 48b8; complement: b747.
const Bytes kSyn = {
    0xc0, 0x00, 0x4e, 0x51,  // ports
    0x01, 0x02, 0x03, 0x04,  // seq
    0x00, 0x00, 0x00, 0x00,  // ack
    0xa0, 0x02, 0xfa, 0xf0,  // data offset 10, SYN, window
    0xb7, 0x47, 0x00, 0x00,  // checksum, urgent pointer
    0x02, 0x04, 0x05, 0xb4,  // MSS 1460
    0x04, 0x02, 0x08, 0x0a,  // SACK-permitted, Timestamps kind/len
    0x00, 0x00, 0x00, 0x01,  // TSval
    0x00, 0x00, 0x00, 0x00,  // TSecr
    0x01, 0x03, 0x03, 0x07,  // NOP, WS 7
};

// ACK|PSH 20049 -> 49152, seq 0x0a0b0c0d, ack 0x01020305, window 501,
// NOP NOP Timestamps (10, 1), payload "hello" (odd: the last octet is padded).
//
//   pseudo-header c0a8 + 0114 + c0a8 + 010a + 0006 + 0025 (length 37) = 18399
//   header        4e51 + c000 + 0a0b + 0c0d + 0102 + 0305 + 8018 + 01f5 = 1aa7d
//   options       0101 + 080a + 000a + 0001 -> 1b393
//   payload       6865 + 6c6c + 6f00 -> 2f764
//   18399 + 2f764 = 47afd; fold: 7afd + 4 = 7b01; complement: 84fe.
const Bytes kData = {
    0x4e, 0x51, 0xc0, 0x00, 0x0a, 0x0b, 0x0c, 0x0d, 0x01, 0x02, 0x03, 0x05,
    0x80, 0x18, 0x01, 0xf5, 0x84, 0xfe, 0x00, 0x00,  // checksum 84fe
    0x01, 0x01, 0x08, 0x0a, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x01,
    'h',  'e',  'l',  'l',  'o',
};
const Bytes kHello = {'h', 'e', 'l', 'l', 'o'};

SegmentHeader SynHeader() {
  SegmentHeader h;
  h.src_port = 49152;
  h.dst_port = 20049;
  h.seq = Seq32(0x01020304);
  h.flags = kFlagSyn;
  h.window = 64240;
  return h;
}

SegmentHeader DataHeader() {
  SegmentHeader h;
  h.src_port = 20049;
  h.dst_port = 49152;
  h.seq = Seq32(0x0a0b0c0d);
  h.ack = Seq32(0x01020305);
  h.flags = kFlagAck | kFlagPsh;
  h.window = 501;
  return h;
}

SegmentStatus Parse(const Bytes& b, const Ipv4Addresses& a, Segment* s,
                    ChecksumCheck check = ChecksumCheck::kVerify) {
  return ParseSegment(b, b.size(), a, check, s);
}

TEST(TcpSegment, ParsesHandWrittenSyn) {
  Segment s;
  ASSERT_EQ(Parse(kSyn, kClientToServer, &s), SegmentStatus::kOk);
  EXPECT_EQ(s.header, SynHeader());
  EXPECT_EQ(s.data_offset, 10);
  EXPECT_EQ(s.reserved, 0);
  EXPECT_EQ(s.checksum, 0xb747);
  EXPECT_TRUE(s.header.Has(kFlagSyn));
  EXPECT_FALSE(s.header.Has(kFlagAck));
  EXPECT_EQ(Bytes(s.options.begin(), s.options.end()), Bytes(kSyn.begin() + 20, kSyn.end()));
  EXPECT_TRUE(s.payload.empty());

  Options o;
  ASSERT_EQ(ParseOptions(s.options, true, &o), OptionStatus::kOk);
  EXPECT_EQ(o.mss, 1460);
  EXPECT_TRUE(o.sack_permitted);
  EXPECT_EQ(o.timestamps, (Timestamps{1, 0}));
  EXPECT_EQ(o.window_scale, 7);
  EXPECT_FALSE(o.window_scale_clamped);
  EXPECT_EQ(o.sack_block_count, 0);
}

TEST(TcpSegment, EncodesHandWrittenSynByteExact) {
  SynOptions so;
  so.mss = 1460;
  so.window_scale = 7;
  so.sack_permitted = true;
  so.timestamps = Timestamps{1, 0};
  uint8_t opts[kMaxOptionsSize];
  const OptionsEncodeResult r = EncodeSynOptions(so, opts);
  ASSERT_EQ(r.status, OptionStatus::kOk) << OptionStatusName(r.status);
  ASSERT_EQ(r.size, 20u);
  EXPECT_EQ(Bytes(opts, opts + 20), Bytes(kSyn.begin() + 20, kSyn.end()));

  Bytes out(kMaxHeaderSize, 0xEE);
  const SegmentEncodeResult e =
      EncodeSegmentHeader(SynHeader(), ByteSpan(opts, r.size), kClientToServer, ByteSpan{}, out);
  ASSERT_EQ(e.status, SegmentStatus::kOk) << SegmentStatusName(e.status);
  ASSERT_EQ(e.size, 40u);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + 40), kSyn);
  EXPECT_EQ(out[40], 0xEE);  // nothing written past the header
}

TEST(TcpSegment, ParsesHandWrittenDataSegment) {
  Segment s;
  ASSERT_EQ(Parse(kData, kServerToClient, &s), SegmentStatus::kOk);
  EXPECT_EQ(s.header, DataHeader());
  EXPECT_EQ(s.data_offset, 8);
  EXPECT_EQ(Bytes(s.payload.begin(), s.payload.end()), kHello);
  Options o;
  ASSERT_EQ(ParseOptions(s.options, false, &o), OptionStatus::kOk);
  EXPECT_EQ(o.timestamps, (Timestamps{10, 1}));
  EXPECT_FALSE(o.mss.has_value());
}

TEST(TcpSegment, EncodesHandWrittenDataSegmentThreeWays) {
  uint8_t opts[kMaxOptionsSize];
  const OptionsEncodeResult r = EncodeAckOptions(Timestamps{10, 1}, {}, opts);
  ASSERT_EQ(r.status, OptionStatus::kOk);
  ASSERT_EQ(r.size, 12u);
  const ByteSpan options(opts, r.size);
  const Bytes want(kData.begin(), kData.begin() + 32);

  // Payload as a span.
  Bytes out(32);
  SegmentEncodeResult e = EncodeSegmentHeader(DataHeader(), options, kServerToClient,
                                              ByteSpan(kHello), out);
  ASSERT_EQ(e.status, SegmentStatus::kOk);
  EXPECT_EQ(out, want);

  // Payload sum precomputed, as when it is summed during the copy.
  std::fill(out.begin(), out.end(), 0);
  e = EncodeSegmentHeader(DataHeader(), options, kServerToClient,
                          PayloadSum{5, ChecksumAdd(0, kHello)}, out);
  ASSERT_EQ(e.status, SegmentStatus::kOk);
  EXPECT_EQ(out, want);

  // Payload in odd-length pieces: "h" "el" "" "lo".
  const ByteSpan hello(kHello);
  const ByteSpan pieces[] = {hello.subspan(0, 1), hello.subspan(1, 2), hello.subspan(3, 0),
                             hello.subspan(3, 2)};
  std::fill(out.begin(), out.end(), 0);
  e = EncodeSegmentHeader(DataHeader(), options, kServerToClient, SumPayload(pieces), out);
  ASSERT_EQ(e.status, SegmentStatus::kOk);
  EXPECT_EQ(out, want);
}

TEST(TcpSegment, PieceSumsEqualContiguousSum) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 500; ++iter) {
    Bytes data(rng() % 64);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    std::vector<ByteSpan> pieces;
    size_t off = 0;
    while (off < data.size()) {
      const size_t n = std::min<size_t>(rng() % 5, data.size() - off);
      pieces.push_back(ByteSpan(data).subspan(off, n));
      off += n;
    }
    const PayloadSum split = SumPayload(pieces);
    const PayloadSum whole = SumPayload(ByteSpan(data));
    EXPECT_EQ(split.length, whole.length);
    EXPECT_EQ(ChecksumFold(split.sum), ChecksumFold(whole.sum));
  }
}

// The output-side sum (TcpOutput::SumsPayload): header encoded with the
// payload's length but no payload sum, payload copied and summed in one pass,
// sum added to the header. The segment must be byte-identical to one encoded
// with the payload's sum, for pieces of every odd and even length.
TEST(TcpSegment, CopyAndSumThenAddPayloadSumEqualsFullEncoding) {
  std::mt19937 rng(21);
  uint8_t opts[kMaxOptionsSize];
  const OptionsEncodeResult o = EncodeAckOptions(Timestamps{10, 1}, {}, opts);
  ASSERT_EQ(o.status, OptionStatus::kOk);
  for (int iter = 0; iter < 400; ++iter) {
    Bytes data(iter < 100 ? static_cast<size_t>(iter) : rng() % 9000);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    if (iter % 9 == 0) std::fill(data.begin(), data.end(), 0xff);
    std::vector<ByteSpan> pieces;
    for (size_t off = 0; off < data.size();) {
      const size_t n = std::min<size_t>(rng() % 3000, data.size() - off);
      pieces.push_back(ByteSpan(data).subspan(off, n));
      off += n;
    }
    SegmentHeader h = DataHeader();
    h.seq = Seq32(static_cast<uint32_t>(rng()));
    Bytes want(32);
    ASSERT_EQ(EncodeSegmentHeader(h, ByteSpan(opts, o.size), kServerToClient, ByteSpan(data), want)
                  .status,
              SegmentStatus::kOk);
    want.insert(want.end(), data.begin(), data.end());

    Bytes got(32 + data.size(), 0xee);
    ASSERT_EQ(EncodeSegmentHeader(h, ByteSpan(opts, o.size), kServerToClient,
                                  PayloadSum{data.size(), 0}, MutableByteSpan(got).first(32))
                  .status,
              SegmentStatus::kOk);
    const PayloadSum ps = CopyAndSumPayload(pieces, got.data() + 32);
    EXPECT_EQ(ps.length, data.size());
    ASSERT_TRUE(AddPayloadSum(MutableByteSpan(got).first(32), ps));
    ASSERT_EQ(got, want) << "iteration " << iter << " length " << data.size();
    Segment seg;
    EXPECT_EQ(Parse(got, kServerToClient, &seg), SegmentStatus::kOk);
  }
  Bytes short_header(kHeaderSize - 1, 0);
  EXPECT_FALSE(AddPayloadSum(MutableByteSpan(short_header), PayloadSum{0, 1}));
  EXPECT_EQ(short_header, Bytes(kHeaderSize - 1, 0));
}

TEST(TcpSegment, IgnoresOctetsBeyondTcpLength) {
  Bytes padded = kData;
  padded.insert(padded.end(), {0, 0, 0, 0, 0, 0, 0});  // Ethernet minimum-frame padding
  Segment s;
  ASSERT_EQ(ParseSegment(padded, kData.size(), kServerToClient, ChecksumCheck::kVerify, &s),
            SegmentStatus::kOk);
  EXPECT_EQ(Bytes(s.payload.begin(), s.payload.end()), kHello);
}

TEST(TcpSegment, LengthErrors) {
  Segment s;
  // Pseudo-header length beyond the bytes present.
  EXPECT_EQ(ParseSegment(kData, kData.size() + 1, kServerToClient, ChecksumCheck::kSkip, &s),
            SegmentStatus::kTruncated);
  // Shorter than a header.
  EXPECT_EQ(ParseSegment(kData, 19, kServerToClient, ChecksumCheck::kSkip, &s),
            SegmentStatus::kTruncated);
  // Data offset 4 and data offset 15 (60 > 37), with a correct checksum so the
  // offset check is what rejects them.
  for (uint8_t doff : {0, 4, 15}) {
    Bytes b = kData;
    b[12] = static_cast<uint8_t>(doff << 4);
    b[16] = b[17] = 0;
    const uint16_t c = ChecksumFold(ChecksumAdd(0x18399, b));
    b[16] = static_cast<uint8_t>(c >> 8);
    b[17] = static_cast<uint8_t>(c);
    EXPECT_EQ(Parse(b, kServerToClient, &s), SegmentStatus::kBadDataOffset) << int{doff};
  }
  // Data offset exactly the segment: no payload.
  Segment syn;
  ASSERT_EQ(Parse(kSyn, kClientToServer, &syn), SegmentStatus::kOk);
  EXPECT_TRUE(syn.payload.empty());
}

TEST(TcpSegment, TruncationAtEveryOffsetIsRejected) {
  for (const Bytes* full : {&kSyn, &kData}) {
    const size_t header_len = (*full)[12] >> 4 << 2;
    for (size_t n = 0; n < full->size(); ++n) {
      Bytes cut(full->begin(), full->begin() + static_cast<ptrdiff_t>(n));  // exact size for ASan
      Segment s;
      const SegmentStatus st = Parse(cut, kClientToServer, &s, ChecksumCheck::kSkip);
      if (n < kHeaderSize) {
        EXPECT_EQ(st, SegmentStatus::kTruncated) << n;
      } else if (n < header_len) {
        EXPECT_EQ(st, SegmentStatus::kBadDataOffset) << n;
      } else {
        ASSERT_EQ(st, SegmentStatus::kOk) << n;
        EXPECT_EQ(s.payload.size(), n - header_len);
      }
      // Options cut anywhere never read past their span.
      const size_t opt_len = n > kHeaderSize ? std::min(n, header_len) - kHeaderSize : 0;
      Bytes opts(full->begin() + 20, full->begin() + 20 + static_cast<ptrdiff_t>(opt_len));
      Options o;
      (void)ParseOptions(opts, true, &o);
    }
  }
}

TEST(TcpSegment, ChecksumRejectsEverySingleBitFlip) {
  for (const auto& [seg, addrs] :
       {std::pair{kSyn, kClientToServer}, std::pair{kData, kServerToClient}}) {
    Segment s;
    ASSERT_EQ(Parse(seg, addrs, &s), SegmentStatus::kOk);
    for (size_t bit = 0; bit < seg.size() * 8; ++bit) {
      Bytes b = seg;
      b[bit / 8] ^= static_cast<uint8_t>(0x80 >> (bit % 8));
      EXPECT_EQ(Parse(b, addrs, &s), SegmentStatus::kBadChecksum) << bit;
    }
    // The pseudo-header is covered too.
    for (int bit = 0; bit < 32; ++bit) {
      Ipv4Addresses a = addrs;
      a.src ^= 1u << bit;
      EXPECT_EQ(Parse(seg, a, &s), SegmentStatus::kBadChecksum) << bit;
      a = addrs;
      a.dst ^= 1u << bit;
      EXPECT_EQ(Parse(seg, a, &s), SegmentStatus::kBadChecksum) << bit;
    }
    // A wrong checksum passes when the NIC has already verified it.
    Bytes b = seg;
    b[16] ^= 0x01;
    EXPECT_EQ(Parse(b, addrs, &s, ChecksumCheck::kSkip), SegmentStatus::kOk);
  }
}

TEST(TcpSegment, ReservedBitsKeptOnParseAndSentAsZero) {
  Bytes b = kSyn;
  b[12] |= 0x0F;
  Segment s;
  ASSERT_EQ(Parse(b, kClientToServer, &s, ChecksumCheck::kSkip), SegmentStatus::kOk);
  EXPECT_EQ(s.reserved, 0x0F);
  EXPECT_EQ(s.data_offset, 10);
  Bytes out(40);
  ASSERT_EQ(EncodeSegmentHeader(s.header, s.options, kClientToServer, ByteSpan{}, out).status,
            SegmentStatus::kOk);
  EXPECT_EQ(out, kSyn);
}

TEST(TcpSegment, EncodeErrors) {
  Bytes out(kMaxHeaderSize);
  const Bytes three(3, kOptNop), forty_four(44, kOptNop), four(4, kOptNop);
  EXPECT_EQ(EncodeSegmentHeader(SynHeader(), three, kClientToServer, ByteSpan{}, out).status,
            SegmentStatus::kBadOptionsLength);
  EXPECT_EQ(EncodeSegmentHeader(SynHeader(), forty_four, kClientToServer, ByteSpan{}, out).status,
            SegmentStatus::kBadOptionsLength);
  Bytes small(23);
  const SegmentEncodeResult e =
      EncodeSegmentHeader(SynHeader(), four, kClientToServer, ByteSpan{}, small);
  EXPECT_EQ(e.status, SegmentStatus::kBufferTooSmall);
  EXPECT_EQ(e.size, 0u);
  EXPECT_EQ(EncodeSegmentHeader(SynHeader(), four, kClientToServer,
                                PayloadSum{kMaxSegmentSize - 24 + 1, 0}, out)
                .status,
            SegmentStatus::kSegmentTooLong);
  EXPECT_EQ(EncodeSegmentHeader(SynHeader(), four, kClientToServer,
                                PayloadSum{kMaxSegmentSize - 24, 0}, out)
                .status,
            SegmentStatus::kOk);
}

// ---------------------------------------------------------------- options

OptionStatus ParseBytes(const Bytes& b, Options* o, bool syn = true) {
  return ParseOptions(b, syn, o);
}

TEST(TcpOptions, EveryErrorIsNamed) {
  struct Case {
    Bytes in;
    OptionStatus want;
  };
  const Case cases[] = {
      {{kOptMss}, OptionStatus::kMissingLength},
      {{kOptNop, kOptTimestamps}, OptionStatus::kMissingLength},
      {{kOptTimestamps, 0, 0, 0}, OptionStatus::kBadLength},
      {{kOptTimestamps, 1, 0, 0}, OptionStatus::kBadLength},
      {{0xFE, 0}, OptionStatus::kBadLength},  // unknown kind, still needs a length
      {{0xFE, 1, 0, 0}, OptionStatus::kBadLength},
      {{kOptTimestamps, 10, 0, 0, 0, 0, 0, 0, 0}, OptionStatus::kLengthPastEnd},
      {{0xFE, 5, 0, 0}, OptionStatus::kLengthPastEnd},
      {{kOptMss, 3, 5}, OptionStatus::kBadMssLength},
      {{kOptMss, 5, 5, 0xb4, 0}, OptionStatus::kBadMssLength},
      {{kOptWindowScale, 2, kOptNop}, OptionStatus::kBadWindowScaleLength},
      {{kOptWindowScale, 4, 7, 0}, OptionStatus::kBadWindowScaleLength},
      {{kOptSackPermitted, 3, 0}, OptionStatus::kBadSackPermittedLength},
      {{kOptSack, 2}, OptionStatus::kBadSackLength},
      {{kOptSack, 9, 0, 0, 0, 0, 0, 0, 0}, OptionStatus::kBadSackLength},
      {{kOptSack, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0}, OptionStatus::kBadSackLength},
      {{kOptTimestamps, 8, 0, 0, 0, 0, 0, 0}, OptionStatus::kBadTimestampsLength},
      {{kOptTimestamps, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0}, OptionStatus::kBadTimestampsLength},
  };
  for (const Case& c : cases) {
    Options o;
    EXPECT_EQ(ParseBytes(c.in, &o), c.want) << OptionStatusName(c.want);
    EXPECT_EQ(ParseBytes(c.in, &o, false), c.want) << OptionStatusName(c.want);
  }
  // Five SACK blocks: length 42 does not fit 40 octets of options but is
  // rejected for its block count even in a larger span.
  Bytes five(42, 0);
  five[0] = kOptSack;
  five[1] = 42;
  Options o;
  EXPECT_EQ(ParseBytes(five, &o), OptionStatus::kBadSackLength);
}

TEST(TcpOptions, UnknownSkippedEolEndsAndNopPads) {
  const Bytes in = {0x1E, 4,    0xAA, 0xBB,  // unknown kind 30, skipped
                    kOptNop, kOptMss, 4, 0x23, 0x8C,  // MSS 9100
                    kOptEol, kOptMss, 0};  // after EOL: padding, not parsed
  Options o;
  ASSERT_EQ(ParseBytes(in, &o), OptionStatus::kOk);
  EXPECT_EQ(o.mss, 9100);
  Options empty;
  EXPECT_EQ(ParseBytes({}, &o), OptionStatus::kOk);
  EXPECT_EQ(o, empty);
}

TEST(TcpOptions, SynOnlyOptionsIgnoredOutsideSyn) {
  Options o;
  ASSERT_EQ(ParseOptions(ByteSpan(kSyn).subspan(20), false, &o), OptionStatus::kOk);
  EXPECT_FALSE(o.mss.has_value());
  EXPECT_FALSE(o.window_scale.has_value());
  EXPECT_FALSE(o.sack_permitted);
  EXPECT_EQ(o.timestamps, (Timestamps{1, 0}));  // Timestamps are valid on any segment
}

TEST(TcpOptions, WindowScaleAbove14ClampedTo14) {
  Options o;
  ASSERT_EQ(ParseBytes({kOptWindowScale, 3, 14, kOptNop}, &o), OptionStatus::kOk);
  EXPECT_EQ(o.window_scale, 14);
  EXPECT_FALSE(o.window_scale_clamped);
  for (uint8_t shift : {15, 200, 255}) {
    ASSERT_EQ(ParseBytes({kOptWindowScale, 3, shift, kOptNop}, &o), OptionStatus::kOk);
    EXPECT_EQ(o.window_scale, 14);
    EXPECT_TRUE(o.window_scale_clamped);
  }
  // We never send a shift above 14.
  Options bad;
  bad.window_scale = 15;
  uint8_t out[kMaxOptionsSize];
  EXPECT_EQ(EncodeOptions(bad, out).status, OptionStatus::kBadWindowScale);
}

TEST(TcpOptions, SackBlocksParsedInOrderAndRepeatReplaces) {
  const Bytes in = {kOptNop, kOptNop, kOptSack, 18,
                    0, 0, 0, 1, 0, 0, 0, 2, 0xFF, 0xFF, 0xFF, 0xF0, 0, 0, 0, 0x10,
                    kOptNop, kOptNop, kOptSack, 10,
                    0, 0, 1, 0, 0, 0, 2, 0};
  Options o;
  ASSERT_EQ(ParseBytes(in, &o), OptionStatus::kOk);
  ASSERT_EQ(o.sack_block_count, 1);
  EXPECT_EQ(o.sack_blocks[0], (SackBlock{Seq32(0x100), Seq32(0x200)}));
  EXPECT_EQ(o.sack_blocks[1], SackBlock{});  // cleared, not left over
  ASSERT_EQ(ParseBytes(Bytes(in.begin(), in.begin() + 20), &o), OptionStatus::kOk);
  ASSERT_EQ(o.sack_block_count, 2);
  EXPECT_EQ(o.sack_blocks[1], (SackBlock{Seq32(0xFFFFFFF0), Seq32(0x10)}));
}

TEST(TcpOptions, AckOptionsLayoutAndSackLimit) {
  const SackBlock blocks[] = {{Seq32(1), Seq32(2)}, {Seq32(3), Seq32(4)},
                              {Seq32(5), Seq32(6)}, {Seq32(7), Seq32(8)}};
  uint8_t out[kMaxOptionsSize];
  OptionsEncodeResult r = EncodeAckOptions(Timestamps{0x11223344, 0x55667788}, blocks, out);
  ASSERT_EQ(r.status, OptionStatus::kOk);
  EXPECT_EQ(r.size, 40u);
  EXPECT_EQ(r.sack_blocks, 3u);
  const Bytes want = {1, 1, 8, 10, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                      1, 1, 5, 26, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4,
                      0, 0, 0, 5, 0, 0, 0, 6};
  EXPECT_EQ(Bytes(out, out + r.size), want);

  r = EncodeAckOptions(std::nullopt, blocks, out);
  ASSERT_EQ(r.status, OptionStatus::kOk);
  EXPECT_EQ(r.size, 36u);
  EXPECT_EQ(r.sack_blocks, 4u);
  EXPECT_EQ(Bytes(out, out + 4), (Bytes{1, 1, 5, 34}));

  r = EncodeAckOptions(std::nullopt, {}, out);
  EXPECT_EQ(r.status, OptionStatus::kOk);
  EXPECT_EQ(r.size, 0u);

  uint8_t small[39];
  r = EncodeAckOptions(Timestamps{}, blocks, small);
  EXPECT_EQ(r.status, OptionStatus::kBufferTooSmall);
  EXPECT_EQ(r.size, 0u);
}

TEST(TcpOptions, SynOptionsWithoutTimestampsOrSack) {
  uint8_t out[kMaxOptionsSize];
  SynOptions so;
  so.mss = 1460;
  so.sack_permitted = true;
  OptionsEncodeResult r = EncodeSynOptions(so, out);
  ASSERT_EQ(r.status, OptionStatus::kOk);
  EXPECT_EQ(Bytes(out, out + r.size), (Bytes{2, 4, 0x05, 0xb4, 1, 1, 4, 2}));
  so.sack_permitted = false;
  so.window_scale = 0;
  r = EncodeSynOptions(so, out);
  ASSERT_EQ(r.status, OptionStatus::kOk);
  EXPECT_EQ(Bytes(out, out + r.size), (Bytes{2, 4, 0x05, 0xb4, 1, 3, 3, 0}));
}

Options RandomOptions(std::mt19937& rng, bool syn) {
  Options o;
  if (syn && rng() % 2) o.mss = static_cast<uint16_t>(rng());
  if (syn && rng() % 2) o.window_scale = static_cast<uint8_t>(rng() % (kMaxWindowScale + 1));
  if (syn) o.sack_permitted = rng() % 2;
  if (rng() % 2) o.timestamps = Timestamps{static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())};
  o.sack_block_count = static_cast<uint8_t>(rng() % (kMaxSackBlocks + 1));
  for (size_t i = 0; i < o.sack_block_count; ++i) {
    o.sack_blocks[i] = {Seq32(static_cast<uint32_t>(rng())), Seq32(static_cast<uint32_t>(rng()))};
  }
  return o;
}

TEST(TcpOptions, RandomizedRoundTrip) {
  std::mt19937 rng(2024);
  int encoded = 0, too_long = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const bool syn = iter % 2;
    const Options o = RandomOptions(rng, syn);
    uint8_t out[kMaxOptionsSize];
    const OptionsEncodeResult r = EncodeOptions(o, out);
    if (EncodedOptionsSize(o) > kMaxOptionsSize) {
      EXPECT_EQ(r.status, OptionStatus::kTooLong);
      ++too_long;
      continue;
    }
    ASSERT_EQ(r.status, OptionStatus::kOk);
    ASSERT_EQ(r.size % 4, 0u);
    ASSERT_EQ(r.size, EncodedOptionsSize(o));
    ++encoded;
    Options back;
    ASSERT_EQ(ParseOptions(ByteSpan(out, r.size), syn, &back), OptionStatus::kOk);
    EXPECT_EQ(back, o);
  }
  EXPECT_GT(encoded, 1000);
  EXPECT_GT(too_long, 100);
}

// Peers lay options out differently: any order, NOPs anywhere, unknown kinds.
TEST(TcpOptions, RandomizedForeignLayoutsParse) {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 20000; ++iter) {
    const Options want = RandomOptions(rng, true);
    std::vector<Bytes> items;
    if (want.mss) items.push_back({kOptMss, 4, static_cast<uint8_t>(*want.mss >> 8),
                                   static_cast<uint8_t>(*want.mss)});
    if (want.window_scale) items.push_back({kOptWindowScale, 3, *want.window_scale});
    if (want.sack_permitted) items.push_back({kOptSackPermitted, 2});
    if (want.timestamps) {
      Bytes t(10);
      t[0] = kOptTimestamps;
      t[1] = 10;
      StoreBe32(&t[2], want.timestamps->ts_val);
      StoreBe32(&t[6], want.timestamps->ts_ecr);
      items.push_back(t);
    }
    if (want.sack_block_count) {
      Bytes s = {kOptSack, static_cast<uint8_t>(2 + 8 * want.sack_block_count)};
      for (const SackBlock& b : want.sack()) {
        s.resize(s.size() + 8);
        StoreBe32(&s[s.size() - 8], b.left_edge.value());
        StoreBe32(&s[s.size() - 4], b.right_edge.value());
      }
      items.push_back(s);
    }
    if (rng() % 2) items.push_back({static_cast<uint8_t>(20 + rng() % 200), 3, 0});
    if (rng() % 2) items.push_back({kOptNop});
    std::shuffle(items.begin(), items.end(), rng);
    Bytes in;
    for (const Bytes& it : items) in.insert(in.end(), it.begin(), it.end());
    if (rng() % 2) in.push_back(kOptEol);
    Options got;
    ASSERT_EQ(ParseOptions(in, true, &got), OptionStatus::kOk);
    EXPECT_EQ(got, want);
  }
}

}  // namespace
}  // namespace iwarp::tcp
