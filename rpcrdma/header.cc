#include "rpcrdma/header.h"

#include <cassert>
#include <limits>

#include "rpcrdma/xdr.h"

namespace iwarp::rpcrdma {
namespace {

// Field offsets inside an xdr_rdma_segment (RFC 8166 4.1.2).
constexpr size_t kSegHandle = 0;
constexpr size_t kSegLength = 4;
constexpr size_t kSegOffset = 8;
// Inside a read-list entry, after its "is present" word.
constexpr size_t kReadPosition = 4;
constexpr size_t kReadTarget = 8;

Segment LoadSegment(const uint8_t* p) {
  return Segment{LoadBe32(p + kSegHandle), LoadBe32(p + kSegLength), LoadBe64(p + kSegOffset)};
}

HeaderError FromXdr(XdrStatus s) {
  return s == XdrStatus::kBadBool ? HeaderError::kBadDiscriminator : HeaderError::kTruncated;
}

// Reads one counted array of plain segments (xdr_write_chunk): the count is
// checked against the limit and the remaining bytes before it is used.
HeaderError SkipSegmentArray(XdrReader& r, uint32_t max_segments, HeaderError too_many,
                             uint32_t* count) {
  *count = r.U32();
  if (!r.ok()) return FromXdr(r.status());
  if (*count > max_segments) return too_many;
  if (!r.Skip(size_t{*count} * kSegmentSize)) return HeaderError::kTruncated;
  return HeaderError::kOk;
}

// RFC 8166 4.1.2 rpc_rdma_header / rpc_rdma_header_nomsg: read list, write
// list, reply chunk.
HeaderError DecodeChunkLists(XdrReader& r, const Limits& limits, size_t* read_off,
                             uint32_t* read_count, size_t* write_off, uint32_t* write_count,
                             bool* reply_present, size_t* reply_off, uint32_t* reply_count) {
  // Read list: a linked list of xdr_read_chunk, one "is present" word each.
  *read_off = r.offset();
  for (;;) {
    bool present = r.Present();
    if (!r.ok()) return FromXdr(r.status());
    if (!present) break;
    if (*read_count >= limits.max_read_segments) return HeaderError::kTooManyReadSegments;
    if (!r.Skip(kReadEntrySize - 4)) return HeaderError::kTruncated;
    ++*read_count;
  }
  // Write list: a linked list of counted segment arrays.
  *write_off = r.offset();
  for (;;) {
    bool present = r.Present();
    if (!r.ok()) return FromXdr(r.status());
    if (!present) break;
    if (*write_count >= limits.max_write_chunks) return HeaderError::kTooManyWriteChunks;
    uint32_t n = 0;
    HeaderError e =
        SkipSegmentArray(r, limits.max_segments_per_chunk, HeaderError::kTooManyWriteSegments, &n);
    if (e != HeaderError::kOk) return e;
    ++*write_count;
  }
  // Reply chunk: one optional counted segment array.
  *reply_present = r.Present();
  if (!r.ok()) return FromXdr(r.status());
  if (*reply_present) {
    *reply_off = r.offset();
    return SkipSegmentArray(r, limits.max_segments_per_chunk, HeaderError::kTooManyReplySegments,
                            reply_count);
  }
  return HeaderError::kOk;
}

}  // namespace

std::string_view HeaderErrorName(HeaderError e) {
  using Enum = HeaderError;
  switch (e) { IWARP_RPCRDMA_HEADER_ERRORS(IWARP_ENUM_NAME_CASE) case Enum::kCount: break; }
  return "invalid";
}

Segment WriteChunkView::segment(uint32_t i) const {
  assert(i < count_);
  return LoadSegment(segs_.data() + size_t{i} * kSegmentSize);
}

uint64_t WriteChunkView::total_length() const {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < count_; ++i) sum += segment(i).length;
  return sum;
}

WriteChunkView WriteChunkIterator::operator*() const {
  uint32_t n = LoadBe32(data_.data() + off_);
  return WriteChunkView(data_.subspan(off_ + 4, size_t{n} * kSegmentSize), n);
}

WriteChunkIterator& WriteChunkIterator::operator++() {
  uint32_t n = LoadBe32(data_.data() + off_);
  // Skip the count, the segments and the next chunk's "is present" word.
  off_ += 4 + size_t{n} * kSegmentSize + 4;
  ++index_;
  return *this;
}

ReadSegment HeaderView::read_segment(uint32_t i) const {
  assert(i < read_count_);
  const uint8_t* p = data_.data() + read_off_ + size_t{i} * kReadEntrySize;
  return ReadSegment{LoadBe32(p + kReadPosition), LoadSegment(p + kReadTarget)};
}

bool HeaderView::NextReadChunk(bool first, uint32_t position, ReadChunkInfo* out) const {
  // The smallest Position above the previous one; segments sharing it form
  // one chunk, concatenated in list order (RFC 8166 3.4.5).
  bool found = false;
  ReadChunkInfo next;
  for (uint32_t i = 0; i < read_count_; ++i) {
    ReadSegment s = read_segment(i);
    if (!first && s.position <= position) continue;
    if (!found || s.position < next.position) {
      found = true;
      next = ReadChunkInfo{s.position, 0, 0};
    }
    if (s.position == next.position) {
      ++next.segment_count;
      next.length += s.target.length;
    }
  }
  if (found) *out = next;
  return found;
}

WriteChunkRange HeaderView::write_chunks() const {
  // Iterators point at a chunk's count word, just past its "is present" word.
  return WriteChunkRange{WriteChunkIterator(data_, write_off_ + 4, 0),
                         WriteChunkIterator(data_, write_off_ + 4, write_count_)};
}

WriteChunkView HeaderView::reply_chunk() const {
  if (!reply_present_) return WriteChunkView();
  return WriteChunkView(data_.subspan(reply_off_ + 4, size_t{reply_count_} * kSegmentSize),
                        reply_count_);
}

HeaderError DecodeHeader(ByteSpan message, const Limits& limits, HeaderView* out) {
  *out = HeaderView();
  out->data_ = message;
  XdrReader r(message);
  // RFC 8166 4.2: four fixed words, in the same place in every version.
  out->xid_ = r.U32();
  out->vers_ = r.U32();
  out->credit_ = r.U32();
  out->proc_ = r.U32();
  if (!r.ok()) return HeaderError::kTruncated;
  out->has_fixed_ = true;
  if (out->vers_ != kVersion1) return HeaderError::kBadVersion;  // body unknown

  switch (out->proc()) {
    case Proc::kMsg:
    case Proc::kNomsg: {
      HeaderError e = DecodeChunkLists(r, limits, &out->read_off_, &out->read_count_,
                                       &out->write_off_, &out->write_count_,
                                       &out->reply_present_, &out->reply_off_, &out->reply_count_);
      if (e != HeaderError::kOk) return e;
      break;
    }
    case Proc::kMsgp:
      return HeaderError::kMsgpUnsupported;
    case Proc::kDone:
      break;  // void body
    case Proc::kError: {
      // RFC 8166 4.1.2 union rpc_rdma_error.
      out->err_ = r.U32();
      if (!r.ok()) return HeaderError::kTruncated;
      if (out->err() == ErrCode::kVers) {
        out->vers_low_ = r.U32();
        out->vers_high_ = r.U32();
        if (!r.ok()) return HeaderError::kTruncated;
      } else if (out->err() != ErrCode::kChunk) {
        return HeaderError::kBadErrorCode;
      }
      break;
    }
    default:
      return HeaderError::kUnknownProc;
  }
  out->header_size_ = r.offset();
  return HeaderError::kOk;
}

namespace {

bool SpecEncodable(const HeaderSpec& spec) {
  constexpr size_t kMaxCount = std::numeric_limits<uint32_t>::max();
  switch (spec.proc) {
    case Proc::kMsg:
    case Proc::kNomsg:
      for (const WriteChunkSpec& w : spec.write_list) {
        if (w.segments.size() > kMaxCount) return false;
      }
      return !spec.has_reply_chunk || spec.reply_chunk.size() <= kMaxCount;
    case Proc::kDone:
      return true;
    case Proc::kError:
      return spec.err == ErrCode::kVers || spec.err == ErrCode::kChunk;
    case Proc::kMsgp:
      break;
  }
  return false;
}

void PutSegment(XdrWriter& w, const Segment& s) {
  w.U32(s.handle);
  w.U32(s.length);
  w.Hyper(s.offset);
}

void PutSegmentArray(XdrWriter& w, std::span<const Segment> segs) {
  w.U32(static_cast<uint32_t>(segs.size()));
  for (const Segment& s : segs) PutSegment(w, s);
}

}  // namespace

size_t EncodedHeaderSize(const HeaderSpec& spec) {
  if (!SpecEncodable(spec)) return 0;
  size_t n = kFixedHeaderSize;
  switch (spec.proc) {
    case Proc::kMsg:
    case Proc::kNomsg:
      n += spec.read_list.size() * kReadEntrySize + 4;
      for (const WriteChunkSpec& c : spec.write_list) n += 8 + c.segments.size() * kSegmentSize;
      n += 4;
      n += 4 + (spec.has_reply_chunk ? 4 + spec.reply_chunk.size() * kSegmentSize : 0);
      break;
    case Proc::kError:
      n += spec.err == ErrCode::kVers ? 12 : 4;
      break;
    case Proc::kDone:
    case Proc::kMsgp:
      break;
  }
  return n;
}

EncodeStatus EncodeHeader(const HeaderSpec& spec, MutableByteSpan out, size_t* written) {
  *written = 0;
  size_t size = EncodedHeaderSize(spec);
  if (size == 0) return EncodeStatus::kUnencodable;
  if (out.size() < size) return EncodeStatus::kBufferTooSmall;
  XdrWriter w(out);
  w.U32(spec.xid);
  w.U32(spec.vers);
  w.U32(spec.credit);
  w.U32(static_cast<uint32_t>(spec.proc));
  switch (spec.proc) {
    case Proc::kMsg:
    case Proc::kNomsg:
      for (const ReadSegment& rs : spec.read_list) {
        w.Present(true);
        w.U32(rs.position);
        PutSegment(w, rs.target);
      }
      w.Present(false);
      for (const WriteChunkSpec& c : spec.write_list) {
        w.Present(true);
        PutSegmentArray(w, c.segments);
      }
      w.Present(false);
      w.Present(spec.has_reply_chunk);
      if (spec.has_reply_chunk) PutSegmentArray(w, spec.reply_chunk);
      break;
    case Proc::kError:
      w.U32(static_cast<uint32_t>(spec.err));
      if (spec.err == ErrCode::kVers) {
        w.U32(spec.vers_low);
        w.U32(spec.vers_high);
      }
      break;
    case Proc::kDone:
    case Proc::kMsgp:
      break;
  }
  // The size was checked up front; a short write here is our own bug.
  assert(w.ok() && w.offset() == size);
  *written = w.offset();
  return EncodeStatus::kOk;
}

size_t EncodeErrVers(uint32_t xid, uint32_t vers, uint32_t credit, MutableByteSpan out) {
  HeaderSpec spec;
  spec.xid = xid;
  spec.vers = vers;
  spec.credit = credit;
  spec.proc = Proc::kError;
  spec.err = ErrCode::kVers;
  spec.vers_low = kVersion1;  // RFC 8166 4.5.1: the range we support
  spec.vers_high = kVersion1;
  size_t n = 0;
  return EncodeHeader(spec, out, &n) == EncodeStatus::kOk ? n : 0;
}

size_t EncodeErrChunk(uint32_t xid, uint32_t vers, uint32_t credit, MutableByteSpan out) {
  HeaderSpec spec;
  spec.xid = xid;
  spec.vers = vers;
  spec.credit = credit;
  spec.proc = Proc::kError;
  spec.err = ErrCode::kChunk;
  size_t n = 0;
  return EncodeHeader(spec, out, &n) == EncodeStatus::kOk ? n : 0;
}

}  // namespace iwarp::rpcrdma
