// Fuzz target `rpcrdma`: RPC-over-RDMA v1 header decoding, the receive checks
// and RFC 8797 private data, on arbitrary bytes.
//
// Beyond "does not crash", it traps when:
//  - a header that decodes does not re-encode to exactly the bytes it came
//    from, or the re-encoding decodes to different fields;
//  - a verdict and its reason disagree, or an error reply BuildErrorReply
//    writes is not the RDMA_ERROR the verdict names for that XID;
//  - private data that decodes does not survive encode -> decode.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/bytes.h"
#include "rpcrdma/cm_private.h"
#include "rpcrdma/header.h"
#include "rpcrdma/validate.h"

namespace iwarp::rpcrdma {
namespace {

constexpr Limits kLimits{.max_read_segments = 8, .max_write_chunks = 4,
                         .max_segments_per_chunk = 8};
constexpr size_t kMaxHeader = MaxHeaderSize(kLimits);

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

bool SameHeader(const HeaderView& a, const HeaderView& b) {
  if (a.xid() != b.xid() || a.vers() != b.vers() || a.credit() != b.credit() ||
      a.proc_raw() != b.proc_raw() || a.header_size() != b.header_size() ||
      a.read_segment_count() != b.read_segment_count() ||
      a.write_chunk_count() != b.write_chunk_count() ||
      a.has_reply_chunk() != b.has_reply_chunk()) {
    return false;
  }
  for (uint32_t i = 0; i < a.read_segment_count(); ++i) {
    if (!(a.read_segment(i) == b.read_segment(i))) return false;
  }
  auto bi = b.write_chunks().begin();
  for (WriteChunkView ca : a.write_chunks()) {
    WriteChunkView cb = *bi;
    ++bi;
    if (ca.segment_count() != cb.segment_count()) return false;
    for (uint32_t i = 0; i < ca.segment_count(); ++i) {
      if (!(ca.segment(i) == cb.segment(i))) return false;
    }
  }
  WriteChunkView ra = a.reply_chunk(), rb = b.reply_chunk();
  if (ra.segment_count() != rb.segment_count()) return false;
  for (uint32_t i = 0; i < ra.segment_count(); ++i) {
    if (!(ra.segment(i) == rb.segment(i))) return false;
  }
  if (a.proc() == Proc::kError) {
    return a.err() == b.err() && a.vers_low() == b.vers_low() && a.vers_high() == b.vers_high();
  }
  return true;
}

void RoundTrip(ByteSpan in) {
  HeaderView h;
  if (DecodeHeader(in, kLimits, &h) != HeaderError::kOk) return;
  Check(h.header_size() <= in.size() && h.header_size() <= kMaxHeader);

  // Copy the chunk lists out of the view into a spec.
  std::array<ReadSegment, kLimits.max_read_segments> reads;
  std::array<std::array<Segment, kLimits.max_segments_per_chunk>, kLimits.max_write_chunks> wsegs;
  std::array<WriteChunkSpec, kLimits.max_write_chunks> writes;
  std::array<Segment, kLimits.max_segments_per_chunk> reply;
  for (uint32_t i = 0; i < h.read_segment_count(); ++i) reads[i] = h.read_segment(i);
  uint32_t ci = 0;
  for (WriteChunkView c : h.write_chunks()) {
    for (uint32_t i = 0; i < c.segment_count(); ++i) wsegs[ci][i] = c.segment(i);
    writes[ci] = WriteChunkSpec{std::span(wsegs[ci]).first(c.segment_count())};
    ++ci;
  }
  Check(ci == h.write_chunk_count());
  for (uint32_t i = 0; i < h.reply_chunk().segment_count(); ++i) reply[i] = h.reply_chunk().segment(i);

  HeaderSpec spec;
  spec.xid = h.xid();
  spec.vers = h.vers();
  spec.credit = h.credit();
  spec.proc = h.proc();
  spec.read_list = std::span(reads).first(h.read_segment_count());
  spec.write_list = std::span(writes).first(h.write_chunk_count());
  spec.has_reply_chunk = h.has_reply_chunk();
  spec.reply_chunk = std::span(reply).first(h.reply_chunk().segment_count());
  spec.err = h.err();
  spec.vers_low = h.vers_low();
  spec.vers_high = h.vers_high();

  std::array<uint8_t, kMaxHeader> buf;
  size_t n = 0;
  Check(EncodedHeaderSize(spec) == h.header_size());
  Check(EncodeHeader(spec, buf, &n) == EncodeStatus::kOk);
  Check(n == h.header_size());
  Check(std::memcmp(buf.data(), in.data(), n) == 0);  // XDR here is canonical

  HeaderView again;
  Check(DecodeHeader(ByteSpan(buf.data(), n), kLimits, &again) == HeaderError::kOk);
  Check(SameHeader(h, again));
}

void Checks(ByteSpan in) {
  CheckOptions opts;
  opts.limits = kLimits;
  CallCheck c = CheckCall(in, opts);
  Check((c.verdict == CallVerdict::kAccept) == (c.reason == HeaderError::kOk));
  if (c.verdict == CallVerdict::kAccept) {
    Check(c.header.header_size() <= in.size());
    Check(c.header.proc() == Proc::kMsg || c.header.proc() == Proc::kNomsg);
  }
  std::array<uint8_t, kErrVersSize> reply;
  size_t n = BuildErrorReply(c, 17, reply);
  if (c.verdict == CallVerdict::kReplyErrVers || c.verdict == CallVerdict::kReplyErrChunk) {
    const bool vers = c.verdict == CallVerdict::kReplyErrVers;
    Check(n == (vers ? kErrVersSize : kErrChunkSize));
    Check(LoadBe32(&reply[0]) == c.header.xid());
    Check(LoadBe32(&reply[4]) == c.header.vers());
    Check(LoadBe32(&reply[8]) == 17);
    Check(LoadBe32(&reply[12]) == static_cast<uint32_t>(Proc::kError));
    Check(LoadBe32(&reply[16]) == static_cast<uint32_t>(vers ? ErrCode::kVers : ErrCode::kChunk));
    if (vers) Check(LoadBe32(&reply[20]) == kVersion1 && LoadBe32(&reply[24]) == kVersion1);
    // A responder never answers an error reply, whatever its length.
    Check(CheckCall(ByteSpan(reply.data(), n), opts).verdict == CallVerdict::kDrop);
  } else {
    Check(n == 0);
  }

  ReplyCheck r = CheckReply(in, opts);
  Check((r.verdict == ReplyVerdict::kAccept) == (r.reason == HeaderError::kOk));
  if (r.verdict == ReplyVerdict::kAccept) Check(r.header.read_segment_count() == 0);
}

void PrivateData(ByteSpan in) {
  CmPrivateData pd;
  if (DecodeCmPrivateData(in, &pd) != CmPrivateStatus::kOk) return;
  std::array<uint8_t, kCmPrivateDataSize> out;
  Check(EncodeCmPrivateData(pd, out) == CmPrivateStatus::kOk);
  // Identical except the reserved flag bits, which are sent as zero.
  Check(std::memcmp(out.data(), in.data(), 5) == 0);
  Check(out[5] == (in[5] & kCmFlagRemoteInvalidation));
  Check(out[6] == in[6] && out[7] == in[7]);
  CmPrivateData back;
  Check(DecodeCmPrivateData(out, &back) == CmPrivateStatus::kOk && back == pd);
}

}  // namespace
}  // namespace iwarp::rpcrdma

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  iwarp::ByteSpan in(data, size);
  iwarp::rpcrdma::RoundTrip(in);
  iwarp::rpcrdma::Checks(in);
  iwarp::rpcrdma::PrivateData(in);
  return 0;
}
