#include "rpcrdma/header.h"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::rpcrdma {
namespace {

using Bytes = std::vector<uint8_t>;

// Big-endian XDR words, written out by hand in the fixtures below.
Bytes Words(std::initializer_list<uint32_t> words) {
  Bytes b;
  for (uint32_t w : words) {
    b.push_back(static_cast<uint8_t>(w >> 24));
    b.push_back(static_cast<uint8_t>(w >> 16));
    b.push_back(static_cast<uint8_t>(w >> 8));
    b.push_back(static_cast<uint8_t>(w));
  }
  return b;
}

Bytes Encode(const HeaderSpec& spec) {
  Bytes out(EncodedHeaderSize(spec) + 8, 0xee);
  size_t n = 0;
  EXPECT_EQ(EncodeHeader(spec, out, &n), EncodeStatus::kOk);
  out.resize(n);
  return out;
}

Bytes Concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Fixture 1: RDMA_MSG with all three lists absent and a short RPC Call inline.
// Written byte by byte to pin the byte order.
const Bytes kShortCall = {
    0x0b, 0xad, 0xca, 0xfe,  // rdma_xid
    0x00, 0x00, 0x00, 0x01,  // rdma_vers = 1
    0x00, 0x00, 0x00, 0x80,  // rdma_credit = 128 requested
    0x00, 0x00, 0x00, 0x00,  // rdma_proc = RDMA_MSG
    0x00, 0x00, 0x00, 0x00,  // rdma_reads: not present
    0x00, 0x00, 0x00, 0x00,  // rdma_writes: not present
    0x00, 0x00, 0x00, 0x00,  // rdma_reply: not present
    0x0b, 0xad, 0xca, 0xfe,  // Payload stream: RPC xid (offset 28)
    0x00, 0x00, 0x00, 0x00,  //   RPC msg_type = CALL
};

TEST(HeaderTest, ShortCallByteExact) {
  HeaderSpec spec;
  spec.xid = 0x0badcafe;
  spec.credit = 128;
  EXPECT_EQ(EncodedHeaderSize(spec), 28u);
  Bytes enc = Encode(spec);
  EXPECT_EQ(enc, Bytes(kShortCall.begin(), kShortCall.begin() + 28));

  HeaderView h;
  ASSERT_EQ(DecodeHeader(kShortCall, Limits{}, &h), HeaderError::kOk);
  EXPECT_EQ(h.xid(), 0x0badcafeu);
  EXPECT_EQ(h.vers(), 1u);
  EXPECT_EQ(h.credit(), 128u);
  EXPECT_EQ(h.proc(), Proc::kMsg);
  EXPECT_EQ(h.read_segment_count(), 0u);
  EXPECT_EQ(h.write_chunk_count(), 0u);
  EXPECT_FALSE(h.has_reply_chunk());
  EXPECT_EQ(h.header_size(), 28u);
  ASSERT_EQ(h.payload().size(), 8u);
  EXPECT_EQ(h.payload().data(), kShortCall.data() + 28);  // a view, not a copy
}

// Fixture 2: an NFS WRITE-style call, RDMA_MSG whose data item was reduced
// into one Read chunk of two segments at XDR Position 112.
const Bytes kReadChunkCall = Words({
    0x00000001,              // rdma_xid
    1,                       // rdma_vers
    64,                      // rdma_credit
    0,                       // rdma_proc = RDMA_MSG
    1,                       // read list: entry present
    112,                     //   position
    0x11110001,              //   target.handle
    4096,                    //   target.length
    0x00007f00, 0x00001000,  //   target.offset (hyper) = 0x00007f0000001000
    1,                       // read list: entry present
    112,                     //   position (same: same chunk)
    0x11110002,              //   target.handle
    904,                     //   target.length
    0x00000000, 0x20000000,  //   target.offset = 0x20000000
    0,                       // read list: end
    0,                       // write list: not present
    0,                       // reply chunk: not present
});

TEST(HeaderTest, ReadChunkCallByteExact) {
  const std::array<ReadSegment, 2> reads = {{
      {112, {0x11110001, 4096, 0x00007f0000001000}},
      {112, {0x11110002, 904, 0x20000000}},
  }};
  HeaderSpec spec;
  spec.xid = 1;
  spec.credit = 64;
  spec.read_list = reads;
  EXPECT_EQ(Encode(spec), kReadChunkCall);

  HeaderView h;
  ASSERT_EQ(DecodeHeader(kReadChunkCall, Limits{}, &h), HeaderError::kOk);
  EXPECT_EQ(h.header_size(), 76u);
  ASSERT_EQ(h.read_segment_count(), 2u);
  EXPECT_EQ(h.read_segment(0), reads[0]);
  EXPECT_EQ(h.read_segment(1), reads[1]);
  // RFC 8166 3.4.5: both segments form one chunk of 5000 bytes.
  ReadChunkInfo c;
  ASSERT_TRUE(h.NextReadChunk(true, 0, &c));
  EXPECT_EQ(c.position, 112u);
  EXPECT_EQ(c.segment_count, 2u);
  EXPECT_EQ(c.length, 5000u);
  EXPECT_FALSE(h.NextReadChunk(false, c.position, &c));
}

// Fixture 3: a Long Call (RDMA_NOMSG) with a Position Zero Read chunk, a
// write list of a two-segment chunk and an empty chunk, and a Reply chunk.
const Bytes kLongCall = Words({
    0xcafef00d,  // rdma_xid
    1,           // rdma_vers
    1,           // rdma_credit
    1,           // rdma_proc = RDMA_NOMSG
    1,           // read list: entry present
    0,           //   position 0: the Payload stream itself
    0x0000000a, 2000, 0x00000001, 0x00000000,  // handle, length, offset 0x100000000
    0,           // read list: end
    1,           // write list: chunk present
    2,           //   segment count
    0x0000000b, 8192, 0x00000000, 0x00000010,  //   segment 0
    0x0000000c, 8192, 0x00000000, 0x00002010,  //   segment 1
    1,           // write list: chunk present
    0,           //   segment count 0: an empty Write chunk (RFC 8166 4.3.2.3)
    0,           // write list: end
    1,           // reply chunk: present
    1,           //   segment count
    0x0000000d, 1024, 0xffffffff, 0xffff0000,  //   segment 0
});

TEST(HeaderTest, LongCallByteExact) {
  const std::array<ReadSegment, 1> reads = {{{0, {0xa, 2000, 0x100000000}}}};
  const std::array<Segment, 2> w0 = {{{0xb, 8192, 0x10}, {0xc, 8192, 0x2010}}};
  const std::array<WriteChunkSpec, 2> writes = {{{w0}, {}}};
  const std::array<Segment, 1> reply = {{{0xd, 1024, 0xffffffffffff0000}}};
  HeaderSpec spec;
  spec.xid = 0xcafef00d;
  spec.credit = 1;
  spec.proc = Proc::kNomsg;
  spec.read_list = reads;
  spec.write_list = writes;
  spec.has_reply_chunk = true;
  spec.reply_chunk = reply;
  EXPECT_EQ(EncodedHeaderSize(spec), 120u);
  EXPECT_EQ(Encode(spec), kLongCall);

  HeaderView h;
  ASSERT_EQ(DecodeHeader(kLongCall, Limits{}, &h), HeaderError::kOk);
  EXPECT_EQ(h.proc(), Proc::kNomsg);
  EXPECT_EQ(h.header_size(), 120u);
  EXPECT_TRUE(h.payload().empty());
  ASSERT_EQ(h.read_segment_count(), 1u);
  EXPECT_EQ(h.read_segment(0), reads[0]);
  ASSERT_EQ(h.write_chunk_count(), 2u);
  std::vector<std::vector<Segment>> got;
  for (WriteChunkView c : h.write_chunks()) {
    got.emplace_back();
    for (uint32_t i = 0; i < c.segment_count(); ++i) got.back().push_back(c.segment(i));
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::vector<Segment>(w0.begin(), w0.end()));
  EXPECT_TRUE(got[1].empty());
  EXPECT_EQ((*h.write_chunks().begin()).total_length(), 16384u);
  ASSERT_TRUE(h.has_reply_chunk());
  ASSERT_EQ(h.reply_chunk().segment_count(), 1u);
  EXPECT_EQ(h.reply_chunk().segment(0), reply[0]);
}

TEST(HeaderTest, ErrorAndDoneByteExact) {
  std::array<uint8_t, 32> buf{};
  // RDMA_ERROR / ERR_VERS answering a version-2 call with xid 0x01020304.
  ASSERT_EQ(EncodeErrVers(0x01020304, 2, 7, buf), kErrVersSize);
  EXPECT_EQ(Bytes(buf.begin(), buf.begin() + kErrVersSize),
            Words({0x01020304,  // rdma_xid, echoed
                   2,           // rdma_vers, echoed (RFC 8166 4.5)
                   7,           // rdma_credit granted
                   4,           // rdma_proc = RDMA_ERROR
                   1,           // rdma_err = ERR_VERS
                   1,           // rdma_vers_low
                   1}));        // rdma_vers_high
  ASSERT_EQ(EncodeErrChunk(0xa0b0c0d0, 1, 32, buf), kErrChunkSize);
  const Bytes err_chunk = Words({0xa0b0c0d0, 1, 32,
                                 4,    // RDMA_ERROR
                                 2});  // ERR_CHUNK, void arm
  EXPECT_EQ(Bytes(buf.begin(), buf.begin() + kErrChunkSize), err_chunk);
  // Too small a buffer: nothing claimed written.
  EXPECT_EQ(EncodeErrVers(1, 1, 1, std::span(buf).first(27)), 0u);
  EXPECT_EQ(EncodeErrChunk(1, 1, 1, std::span(buf).first(19)), 0u);

  HeaderView h;
  ASSERT_EQ(DecodeHeader(err_chunk, Limits{}, &h), HeaderError::kOk);
  EXPECT_EQ(h.proc(), Proc::kError);
  EXPECT_EQ(h.err(), ErrCode::kChunk);
  EXPECT_EQ(h.header_size(), 20u);
  const Bytes err_vers = Words({5, 1, 0, 4, 1, 1, 3});
  ASSERT_EQ(DecodeHeader(err_vers, Limits{}, &h), HeaderError::kOk);
  EXPECT_EQ(h.err(), ErrCode::kVers);
  EXPECT_EQ(h.vers_low(), 1u);
  EXPECT_EQ(h.vers_high(), 3u);

  // RDMA_DONE: void body, 16 bytes.
  HeaderSpec done;
  done.xid = 9;
  done.proc = Proc::kDone;
  EXPECT_EQ(Encode(done), Words({9, 1, 0, 3}));
  ASSERT_EQ(DecodeHeader(Words({9, 1, 0, 3}), Limits{}, &h), HeaderError::kOk);
  EXPECT_EQ(h.proc(), Proc::kDone);
  EXPECT_EQ(h.header_size(), 16u);
}

TEST(HeaderTest, DecodeErrorsNameTheReason) {
  HeaderView h;
  const Limits l{};
  // "is present" word 2 in each of the three lists. RFC 4506 4.4 allows only
  // 0 and 1; Linux treats any non-zero word as "present". Being strict keeps
  // the encoding canonical and only refuses peers that send garbage.
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 0, 2, 0, 0}), l, &h), HeaderError::kBadDiscriminator);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 0, 0, 0x100, 0}), l, &h),
            HeaderError::kBadDiscriminator);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 0, 0, 0, 0xffffffff}), l, &h),
            HeaderError::kBadDiscriminator);
  // Version 2: fixed fields decoded, body left alone.
  EXPECT_EQ(DecodeHeader(Words({0x77, 2, 5, 0}), l, &h), HeaderError::kBadVersion);
  EXPECT_TRUE(h.has_fixed_fields());
  EXPECT_EQ(h.xid(), 0x77u);
  EXPECT_EQ(h.vers(), 2u);
  EXPECT_EQ(h.credit(), 5u);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 5, 0, 0, 0}), l, &h), HeaderError::kUnknownProc);
  EXPECT_EQ(h.proc_raw(), 5u);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 0xffffffff}), l, &h), HeaderError::kUnknownProc);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 2, 0, 0, 0, 0, 0}), l, &h),
            HeaderError::kMsgpUnsupported);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 4, 3}), l, &h), HeaderError::kBadErrorCode);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 4, 0}), l, &h), HeaderError::kBadErrorCode);
  // Fewer than 16 bytes: not even the fixed fields.
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1}), l, &h), HeaderError::kTruncated);
  EXPECT_FALSE(h.has_fixed_fields());
  EXPECT_EQ(DecodeHeader({}, l, &h), HeaderError::kTruncated);
}

TEST(HeaderTest, LimitsAreCheckedBeforeCountsAreUsed) {
  const Limits l{.max_read_segments = 2, .max_write_chunks = 2, .max_segments_per_chunk = 3};
  HeaderView h;
  // Read list: two entries decode, three do not.
  const Bytes seg = Words({0, 0, 0, 0});
  Bytes two_reads = Words({1, 1, 1, 0});
  for (int i = 0; i < 2; ++i) two_reads = Concat(Concat(two_reads, Words({1, 8})), seg);
  EXPECT_EQ(DecodeHeader(Concat(two_reads, Words({0, 0, 0})), l, &h), HeaderError::kOk);
  Bytes three_reads = Concat(Concat(two_reads, Words({1, 8})), seg);
  EXPECT_EQ(DecodeHeader(Concat(three_reads, Words({0, 0, 0})), l, &h),
            HeaderError::kTooManyReadSegments);
  // The limit is hit before the missing bytes of the third entry matter.
  EXPECT_EQ(DecodeHeader(Concat(two_reads, Words({1})), l, &h),
            HeaderError::kTooManyReadSegments);

  // Write list: a chunk count of 0xffffffff is refused without reading on.
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 0, 0, 1, 0xffffffff}), l, &h),
            HeaderError::kTooManyWriteSegments);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 0, 0, 1, 4}), l, &h),
            HeaderError::kTooManyWriteSegments);
  // Three segments allowed, but only two present: truncated.
  EXPECT_EQ(DecodeHeader(Concat(Concat(Words({1, 1, 1, 0, 0, 1, 3}), seg), seg), l, &h),
            HeaderError::kTruncated);
  // Two empty write chunks fine, three too many.
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0}), l, &h), HeaderError::kOk);
  EXPECT_EQ(h.write_chunk_count(), 2u);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0}), l, &h),
            HeaderError::kTooManyWriteChunks);
  // Reply chunk.
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 1, 0, 0, 1, 4}), l, &h),
            HeaderError::kTooManyReplySegments);
  EXPECT_EQ(DecodeHeader(Words({1, 1, 1, 1, 0, 0, 1, 0x80000000}), l, &h),
            HeaderError::kTooManyReplySegments);
}

TEST(HeaderTest, EveryTruncationOfEveryFixtureIsTruncated) {
  const Bytes err_vers = Words({5, 1, 0, 4, 1, 1, 1});
  const Bytes err_chunk = Words({5, 1, 0, 4, 2});
  const Bytes done = Words({5, 1, 0, 3});
  const std::array<const Bytes*, 6> fixtures = {&kShortCall, &kReadChunkCall, &kLongCall,
                                                &err_vers, &err_chunk, &done};
  for (const Bytes* f : fixtures) {
    HeaderView full;
    ASSERT_EQ(DecodeHeader(*f, Limits{}, &full), HeaderError::kOk);
    for (size_t n = 0; n < full.header_size(); ++n) {
      // A fresh heap copy of exactly n bytes, so ASan catches any over-read.
      Bytes prefix(f->begin(), f->begin() + static_cast<std::ptrdiff_t>(n));
      prefix.shrink_to_fit();
      HeaderView h;
      EXPECT_EQ(DecodeHeader(prefix, Limits{}, &h), HeaderError::kTruncated)
          << "fixture of " << f->size() << " bytes cut at " << n;
    }
  }
}

TEST(HeaderTest, EncodeRefusesWhatVersionOneCannotSay) {
  std::array<uint8_t, 64> buf{};
  size_t n = 99;
  HeaderSpec msgp;
  msgp.proc = Proc::kMsgp;
  EXPECT_EQ(EncodedHeaderSize(msgp), 0u);
  EXPECT_EQ(EncodeHeader(msgp, buf, &n), EncodeStatus::kUnencodable);
  EXPECT_EQ(n, 0u);
  HeaderSpec unknown;
  unknown.proc = static_cast<Proc>(9);
  EXPECT_EQ(EncodeHeader(unknown, buf, &n), EncodeStatus::kUnencodable);
  HeaderSpec bad_err;
  bad_err.proc = Proc::kError;
  bad_err.err = static_cast<ErrCode>(3);
  EXPECT_EQ(EncodeHeader(bad_err, buf, &n), EncodeStatus::kUnencodable);
}

TEST(HeaderTest, EncodeIntoEveryTooSmallBufferFails) {
  const std::array<ReadSegment, 1> reads = {{{0, {0xa, 2000, 0x100000000}}}};
  HeaderSpec spec;
  spec.proc = Proc::kNomsg;
  spec.read_list = reads;
  const size_t need = EncodedHeaderSize(spec);
  ASSERT_EQ(need, 16u + 24 + 12);
  Bytes buf(need, 0xee);
  for (size_t n = 0; n < need; ++n) {
    size_t written = 99;
    EXPECT_EQ(EncodeHeader(spec, std::span(buf).first(n), &written),
              EncodeStatus::kBufferTooSmall);
    EXPECT_EQ(written, 0u);
  }
  EXPECT_EQ(buf, Bytes(need, 0xee));  // nothing was written on failure
}

TEST(HeaderTest, ReadChunksGroupByPositionInAscendingOrder) {
  // List order 40, 8, 40, 8, 72: chunks at 8 (2 segments), 40 (2), 72 (1).
  const std::array<ReadSegment, 5> reads = {{
      {40, {1, 100, 0}}, {8, {2, 10, 0}}, {40, {3, 200, 0}}, {8, {4, 20, 0}}, {72, {5, 7, 0}}}};
  HeaderSpec spec;
  spec.read_list = reads;
  Bytes enc = Encode(spec);
  HeaderView h;
  ASSERT_EQ(DecodeHeader(enc, Limits{}, &h), HeaderError::kOk);
  std::vector<ReadChunkInfo> chunks;
  ReadChunkInfo c;
  for (bool more = h.NextReadChunk(true, 0, &c); more;
       more = h.NextReadChunk(false, c.position, &c)) {
    chunks.push_back(c);
  }
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].position, 8u);
  EXPECT_EQ(chunks[0].segment_count, 2u);
  EXPECT_EQ(chunks[0].length, 30u);
  EXPECT_EQ(chunks[1].position, 40u);
  EXPECT_EQ(chunks[1].length, 300u);
  EXPECT_EQ(chunks[2].position, 72u);
  EXPECT_EQ(chunks[2].segment_count, 1u);
}

// Randomized chunk lists: encode, append a payload, decode, compare all.
TEST(HeaderTest, RandomizedRoundTrips) {
  std::mt19937 rng(20240611);
  auto u32 = [&] { return static_cast<uint32_t>(rng()); };
  auto u64 = [&] { return (uint64_t{u32()} << 32) | u32(); };
  auto below = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  auto seg = [&] { return Segment{u32(), u32(), u64()}; };
  const Limits l{.max_read_segments = 6, .max_write_chunks = 4, .max_segments_per_chunk = 5};

  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<ReadSegment> reads(below(l.max_read_segments + 1));
    for (ReadSegment& r : reads) r = ReadSegment{u32(), seg()};
    std::vector<std::vector<Segment>> chunk_segs(below(l.max_write_chunks + 1));
    std::vector<WriteChunkSpec> writes;
    for (auto& c : chunk_segs) {
      c.resize(below(l.max_segments_per_chunk + 1));
      for (Segment& s : c) s = seg();
    }
    for (auto& c : chunk_segs) writes.push_back(WriteChunkSpec{c});
    std::vector<Segment> reply(below(l.max_segments_per_chunk + 1));
    for (Segment& s : reply) s = seg();

    HeaderSpec spec;
    spec.xid = u32();
    spec.credit = u32();
    spec.proc = below(2) ? Proc::kMsg : Proc::kNomsg;
    spec.read_list = reads;
    spec.write_list = writes;
    spec.has_reply_chunk = below(2) != 0;
    if (spec.has_reply_chunk) spec.reply_chunk = reply;

    Bytes payload(below(40));
    for (uint8_t& b : payload) b = static_cast<uint8_t>(rng());
    const Bytes hdr = Encode(spec);
    ASSERT_EQ(hdr.size(), EncodedHeaderSize(spec));
    ASSERT_LE(hdr.size(), MaxHeaderSize(l));
    const Bytes msg = Concat(hdr, payload);

    HeaderView h;
    ASSERT_EQ(DecodeHeader(msg, l, &h), HeaderError::kOk) << "iteration " << iter;
    EXPECT_EQ(h.xid(), spec.xid);
    EXPECT_EQ(h.credit(), spec.credit);
    EXPECT_EQ(h.proc(), spec.proc);
    EXPECT_EQ(h.header_size(), hdr.size());
    EXPECT_EQ(Bytes(h.payload().begin(), h.payload().end()), payload);
    ASSERT_EQ(h.read_segment_count(), reads.size());
    for (uint32_t i = 0; i < reads.size(); ++i) EXPECT_EQ(h.read_segment(i), reads[i]);
    ASSERT_EQ(h.write_chunk_count(), writes.size());
    size_t ci = 0;
    for (WriteChunkView c : h.write_chunks()) {
      ASSERT_EQ(c.segment_count(), chunk_segs[ci].size());
      for (uint32_t i = 0; i < c.segment_count(); ++i) EXPECT_EQ(c.segment(i), chunk_segs[ci][i]);
      ++ci;
    }
    EXPECT_EQ(ci, writes.size());
    ASSERT_EQ(h.has_reply_chunk(), spec.has_reply_chunk);
    if (spec.has_reply_chunk) {
      ASSERT_EQ(h.reply_chunk().segment_count(), reply.size());
      for (uint32_t i = 0; i < reply.size(); ++i) EXPECT_EQ(h.reply_chunk().segment(i), reply[i]);
    }
    // Every cut inside the header is "truncated" (a sample of iterations,
    // to keep the test quick).
    if (iter % 30 == 0) {
      for (size_t n = 0; n < hdr.size(); ++n) {
        Bytes prefix(msg.begin(), msg.begin() + static_cast<std::ptrdiff_t>(n));
        HeaderView p;
        ASSERT_EQ(DecodeHeader(prefix, l, &p), HeaderError::kTruncated) << n;
      }
    }
  }
}

TEST(HeaderTest, ErrorNamesAreDistinct) {
  std::set<std::string> names;
  for (size_t i = 0; i < kNumHeaderErrors; ++i) {
    std::string_view n = HeaderErrorName(static_cast<HeaderError>(i));
    EXPECT_NE(n, "invalid");
    names.emplace(n);
  }
  EXPECT_EQ(names.size(), kNumHeaderErrors);
  EXPECT_EQ(HeaderErrorName(HeaderError::kCount), "invalid");
}

}  // namespace
}  // namespace iwarp::rpcrdma
