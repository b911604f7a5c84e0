// RPC-over-RDMA version 1 transport header codec (RFC 8166 section 4).
//
// Decoding validates a whole header in one pass and yields a HeaderView: a
// non-owning, non-allocating view over the caller's bytes that only records
// offsets and counts. Every count and length is checked against the remaining
// bytes and the configured Limits before it is used, so the accessors of a
// view that decoded with HeaderError::kOk read only bytes that were checked.
// A view is valid while the bytes it was decoded from are.
//
// Encoding writes a header described by a HeaderSpec (spans of segments the
// caller owns) into a caller buffer. Neither direction allocates or throws.
#ifndef IWARPD_RPCRDMA_HEADER_H_
#define IWARPD_RPCRDMA_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"

namespace iwarp::rpcrdma {

// RFC 8166 4.2.2: the only version this codec speaks.
inline constexpr uint32_t kVersion1 = 1;

// RFC 8166 4.1.2 enum rdma_proc.
enum class Proc : uint32_t {
  kMsg = 0,    // RDMA_MSG: chunk lists, then the RPC message (Payload stream)
  kNomsg = 1,  // RDMA_NOMSG: chunk lists only; the Payload stream is in a chunk
  kMsgp = 2,   // RDMA_MSGP: not to be used (RFC 8166 4.6.1)
  kDone = 3,   // RDMA_DONE: not to be used (RFC 8166 4.6.2)
  kError = 4,  // RDMA_ERROR
};

// RFC 8166 4.1.2 enum rpc_rdma_errcode.
enum class ErrCode : uint32_t {
  kVers = 1,   // ERR_VERS, followed by rdma_vers_low and rdma_vers_high
  kChunk = 2,  // ERR_CHUNK, no further data
};

// Wire sizes, in bytes.
inline constexpr size_t kFixedHeaderSize = 16;  // xid, vers, credit, proc (RFC 8166 4.2)
inline constexpr size_t kMinHeaderSize = 28;    // fixed fields + three absent lists (RFC 8166 4.5)
inline constexpr size_t kSegmentSize = 16;      // xdr_rdma_segment: handle, length, offset
inline constexpr size_t kReadEntrySize = 24;    // "is present" + position + segment
inline constexpr size_t kErrChunkSize = 20;     // fixed fields + ERR_CHUNK
inline constexpr size_t kErrVersSize = 28;      // fixed fields + ERR_VERS + low + high

// RFC 8166 3.4.3 plain segment.
struct Segment {
  uint32_t handle = 0;  // STag / R_key of the registered memory
  uint32_t length = 0;  // bytes
  uint64_t offset = 0;  // tagged offset / virtual address
  bool operator==(const Segment&) const = default;
};

// RFC 8166 3.4.5 read segment: a plain segment plus the XDR Position where its
// chunk is reinserted into the Payload stream.
struct ReadSegment {
  uint32_t position = 0;
  Segment target;
  bool operator==(const ReadSegment&) const = default;
};

// Bounds applied while decoding, before any count from the wire is used.
struct Limits {
  uint32_t max_read_segments = 32;       // read-list entries (segments, not chunks)
  uint32_t max_write_chunks = 8;         // write-list entries
  uint32_t max_segments_per_chunk = 32;  // segments in one write chunk or the reply chunk
};

// Largest header (in bytes) DecodeHeader accepts under `limits`.
constexpr uint64_t MaxHeaderSize(const Limits& l) {
  return kFixedHeaderSize + uint64_t{l.max_read_segments} * kReadEntrySize + 4 +
         uint64_t{l.max_write_chunks} * (8 + uint64_t{l.max_segments_per_chunk} * kSegmentSize) +
         4 + 4 + 4 + uint64_t{l.max_segments_per_chunk} * kSegmentSize;
}

// Every reason a header can be refused, by the decoder or by the requester /
// responder checks below. The names (HeaderErrorName) are stable counter
// names.
// X(enumerator, "name")
#define IWARP_RPCRDMA_HEADER_ERRORS(X)                                                                               \
  X(kOk, "ok")                                                                                                       \
  /* Decoder: structure (RFC 8166 4.1.2, RFC 4506). */                                                               \
  X(kTruncated, "rpcrdma_truncated")  /* an item runs past the end of the message */                                 \
  X(kBadDiscriminator, "rpcrdma_bad_discriminator")  /* an "is present" word is neither 0 nor 1 (RFC 4506 4.4) */    \
  X(kTooManyReadSegments, "rpcrdma_too_many_read_segments")  /* read list longer than Limits::max_read_segments */   \
  X(kTooManyWriteChunks, "rpcrdma_too_many_write_chunks")  /* write list longer than Limits::max_write_chunks */     \
  /* a write chunk's count above Limits::max_segments_per_chunk */                                                   \
  X(kTooManyWriteSegments, "rpcrdma_too_many_write_segments")                                                        \
  /* the reply chunk's count above Limits::max_segments_per_chunk */                                                 \
  X(kTooManyReplySegments, "rpcrdma_too_many_reply_segments")                                                        \
  X(kBadVersion, "rpcrdma_bad_version")  /* rdma_vers != 1; only the fixed fields were decoded */                    \
  X(kUnknownProc, "rpcrdma_unknown_proc")  /* rdma_proc outside RFC 8166 4.1.2 */                                    \
  X(kMsgpUnsupported, "rpcrdma_msgp_unsupported")  /* RDMA_MSGP (RFC 8166 4.6.1) */                                  \
  X(kBadErrorCode, "rpcrdma_bad_error_code")  /* RDMA_ERROR with rdma_err neither ERR_VERS nor ERR_CHUNK */          \
  /* Receiver checks (CheckCall, CheckReply). */                                                                     \
  X(kShortMessage, "rpcrdma_short_message")  /* shorter than kMinHeaderSize (RFC 8166 4.5) */                        \
  X(kDoneReceived, "rpcrdma_done_received")  /* RDMA_DONE */                                                         \
  X(kErrorReceived, "rpcrdma_error_received")  /* RDMA_ERROR received by a responder (RFC 8166 4.2.4) */             \
  /* read Position not a multiple of 4 (RFC 8166 3.4.5) */                                                           \
  X(kReadPositionMisaligned, "rpcrdma_read_position_misaligned")                                                     \
  X(kPositionZeroInMsg, "rpcrdma_position_zero_in_msg")  /* Position Zero Read chunk in RDMA_MSG (RFC 8166 3.5.3) */ \
  X(kNomsgNoChunks, "rpcrdma_nomsg_no_chunks")  /* RDMA_NOMSG with all three lists absent (RFC 8166 4.5.2) */        \
  X(kNomsgNoCallChunk, "rpcrdma_nomsg_no_call_chunk")  /* RDMA_NOMSG call without a Position Zero Read chunk */      \
  X(kNomsgNoReplyChunk, "rpcrdma_nomsg_no_reply_chunk")  /* RDMA_NOMSG reply without a Reply chunk */                \
  X(kReadChunkOverlap, "rpcrdma_read_chunk_overlap")  /* read chunks overlap in the unreduced Payload stream */      \
  /* a read chunk is reinserted past the inline payload */                                                           \
  X(kReadPositionBeyondPayload, "rpcrdma_read_position_beyond_payload")                                              \
  X(kMsgNoPayload, "rpcrdma_msg_no_payload")  /* RDMA_MSG with fewer than 4 payload bytes (no RPC XID) */            \
  X(kXidMismatch, "rpcrdma_xid_mismatch")  /* rdma_xid differs from the RPC XID (RFC 8166 4.5.2) */                  \
  X(kReadListInReply, "rpcrdma_read_list_in_reply")  /* a reply carries a read list (RFC 8166 4.3.1) */
enum class HeaderError : uint8_t {
  IWARP_RPCRDMA_HEADER_ERRORS(IWARP_ENUMERATOR)
  kCount
};
inline constexpr size_t kNumHeaderErrors = static_cast<size_t>(HeaderError::kCount);
std::string_view HeaderErrorName(HeaderError e);

// One write chunk (RFC 8166 3.4.6) inside a decoded header.
class WriteChunkView {
 public:
  WriteChunkView() = default;
  WriteChunkView(ByteSpan segments, uint32_t count) : segs_(segments), count_(count) {}

  uint32_t segment_count() const { return count_; }
  // Requires i < segment_count().
  Segment segment(uint32_t i) const;
  // Sum of the segment lengths.
  uint64_t total_length() const;

 private:
  ByteSpan segs_;  // count_ * kSegmentSize bytes, checked by the decoder
  uint32_t count_ = 0;
};

class HeaderView;

// Forward iteration over the write list of a decoded header.
class WriteChunkIterator {
 public:
  WriteChunkIterator(ByteSpan data, size_t off, uint32_t index)
      : data_(data), off_(off), index_(index) {}
  WriteChunkView operator*() const;
  WriteChunkIterator& operator++();
  bool operator==(const WriteChunkIterator& o) const { return index_ == o.index_; }

 private:
  ByteSpan data_;
  size_t off_;  // offset of this chunk's segment count word
  uint32_t index_;
};

struct WriteChunkRange {
  WriteChunkIterator b, e;
  WriteChunkIterator begin() const { return b; }
  WriteChunkIterator end() const { return e; }
};

// A read chunk: the read segments sharing one Position (RFC 8166 3.4.5).
struct ReadChunkInfo {
  uint32_t position = 0;
  uint32_t segment_count = 0;
  uint64_t length = 0;  // sum of the segment lengths
};

class HeaderView {
 public:
  HeaderView() = default;

  // Valid whenever the message held at least kFixedHeaderSize bytes, whatever
  // DecodeHeader returned.
  bool has_fixed_fields() const { return has_fixed_; }
  uint32_t xid() const { return xid_; }
  uint32_t vers() const { return vers_; }
  uint32_t credit() const { return credit_; }
  uint32_t proc_raw() const { return proc_; }
  Proc proc() const { return static_cast<Proc>(proc_); }

  // The remaining accessors are meaningful only after DecodeHeader returned kOk.

  // Bytes of transport header. For RDMA_MSG the RPC message starts here.
  size_t header_size() const { return header_size_; }
  // Bytes after the transport header (the Payload stream for RDMA_MSG).
  ByteSpan payload() const { return data_.subspan(header_size_); }
  // The transport header bytes themselves.
  ByteSpan header_bytes() const { return data_.first(header_size_); }

  // Read list, in wire order. Requires i < read_segment_count().
  uint32_t read_segment_count() const { return read_count_; }
  ReadSegment read_segment(uint32_t i) const;
  // Read chunks in ascending Position order: with `position` the Position of
  // the previous chunk (ignored when `first`), fills *out with the next chunk
  // and returns true, or returns false after the last one. O(segments).
  bool NextReadChunk(bool first, uint32_t position, ReadChunkInfo* out) const;

  uint32_t write_chunk_count() const { return write_count_; }
  WriteChunkRange write_chunks() const;

  bool has_reply_chunk() const { return reply_present_; }
  // An empty chunk when !has_reply_chunk().
  WriteChunkView reply_chunk() const;

  // RDMA_ERROR body.
  ErrCode err() const { return static_cast<ErrCode>(err_); }
  uint32_t vers_low() const { return vers_low_; }
  uint32_t vers_high() const { return vers_high_; }

 private:
  friend HeaderError DecodeHeader(ByteSpan, const Limits&, HeaderView*);

  ByteSpan data_;
  uint32_t xid_ = 0, vers_ = 0, credit_ = 0, proc_ = 0;
  bool has_fixed_ = false;
  bool reply_present_ = false;
  uint32_t read_count_ = 0, write_count_ = 0, reply_count_ = 0;
  size_t read_off_ = 0;   // first read-list "is present" word
  size_t write_off_ = 0;  // first write-list "is present" word
  size_t reply_off_ = 0;  // reply chunk segment count word
  size_t header_size_ = 0;
  uint32_t err_ = 0, vers_low_ = 0, vers_high_ = 0;
};

// Decodes the transport header at the start of `message` (RFC 8166 4.1.2).
// Returns kOk with *out describing the header, or the first problem found.
// RDMA_DONE decodes as kOk (its body is void); RDMA_MSGP, unknown procedures
// and versions other than 1 return an error after decoding the fixed fields.
HeaderError DecodeHeader(ByteSpan message, const Limits& limits, HeaderView* out);

// Input of EncodeHeader. The spans are read during the call only.
struct WriteChunkSpec {
  std::span<const Segment> segments;
};
struct HeaderSpec {
  uint32_t xid = 0;
  uint32_t vers = kVersion1;
  uint32_t credit = 0;
  Proc proc = Proc::kMsg;
  // RDMA_MSG and RDMA_NOMSG.
  std::span<const ReadSegment> read_list;
  std::span<const WriteChunkSpec> write_list;
  bool has_reply_chunk = false;
  std::span<const Segment> reply_chunk;
  // RDMA_ERROR.
  ErrCode err = ErrCode::kChunk;
  uint32_t vers_low = kVersion1;
  uint32_t vers_high = kVersion1;
};

enum class EncodeStatus : uint8_t {
  kOk,
  kBufferTooSmall,  // nothing useful was written
  kUnencodable,     // RDMA_MSGP, an unknown proc or rdma_err, or a count above 2^32-1
};

// Bytes EncodeHeader writes for `spec` (0 when the spec is unencodable).
size_t EncodedHeaderSize(const HeaderSpec& spec);

// Writes the transport header for `spec` at the start of `out` and sets
// *written to its size. The RPC message of an RDMA_MSG goes right after it.
EncodeStatus EncodeHeader(const HeaderSpec& spec, MutableByteSpan out, size_t* written);

// RDMA_ERROR replies (RFC 8166 4.5): xid and vers echo the failing message,
// credit is the responder's current grant. Return the bytes written
// (kErrVersSize / kErrChunkSize), or 0 if `out` is too small.
// ERR_VERS advertises the supported range low = high = 1 (RFC 8166 4.5.1).
size_t EncodeErrVers(uint32_t xid, uint32_t vers, uint32_t credit, MutableByteSpan out);
size_t EncodeErrChunk(uint32_t xid, uint32_t vers, uint32_t credit, MutableByteSpan out);

}  // namespace iwarp::rpcrdma

#endif  // IWARPD_RPCRDMA_HEADER_H_
