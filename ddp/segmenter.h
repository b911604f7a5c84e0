// Data-source segmentation of one DDP message (RFC 5041 5.2).
//
// A Segmenter walks one ULP message and, for each DDP segment, writes the DDP
// header into a caller buffer and says which slice of the message is its
// payload. It never touches payload bytes and never allocates, so the caller
// can gather header + payload straight into its transmit buffers.
#ifndef IWARPD_DDP_SEGMENTER_H_
#define IWARPD_DDP_SEGMENTER_H_

#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "ddp/ddp_header.h"

namespace iwarp::ddp {

// A ULP message handed to DDP for transmission. For tagged messages stag/to
// are the data sink's buffer and initial TO; for untagged ones qn/msn name the
// queue and message. RsvdULP is copied unchanged into every segment
// (RFC 5041 4.2/4.3).
struct OutboundMessage {
  bool tagged = false;
  uint8_t rsvd_ulp0 = 0;
  uint32_t rsvd_ulp1 = 0;  // untagged only
  uint32_t stag = 0;       // tagged only
  uint64_t to = 0;         // tagged only: TO of the first message byte
  uint32_t qn = 0;         // untagged only
  Seq32 msn;               // untagged only
  uint32_t length = 0;     // ULP message length; RFC 5041 5.2: < 2^32
};

// Where one segment's payload comes from.
struct SegmentDesc {
  uint32_t message_offset = 0;  // offset of the first payload byte in the message
  uint32_t payload_length = 0;
  uint8_t header_length = 0;    // bytes written to the header buffer
  bool last = false;
};

// X(enumerator, "name")
#define IWARP_DDP_SEGMENT_STATUSES(X)                                                                \
  X(kOk, "ok")                                                                                       \
  X(kMulpduTooSmall, "mulpdu_too_small")  /* MULPDU cannot carry the header plus one payload byte */ \
  X(kToWrap, "to_wrap")  /* tagged: initial TO + length wraps 2^64 (RFC 5041 7.1) */
enum class SegmentStatus : uint8_t { IWARP_DDP_SEGMENT_STATUSES(IWARP_ENUMERATOR) };

std::string_view SegmentStatusName(SegmentStatus s);

class Segmenter {
 public:
  // `mulpdu` is the LLP's current MULPDU (RFC 5041 3): the most bytes of DDP
  // header plus payload one segment may carry.
  Segmenter(const OutboundMessage& msg, uint32_t mulpdu);

  // kOk unless the message cannot be segmented at all; Next() then yields
  // nothing.
  SegmentStatus status() const { return status_; }

  bool done() const { return done_; }

  // Segments left to produce with the current MULPDU (a zero-length message
  // is one segment, RFC 5041 5.2).
  uint32_t RemainingSegments() const;

  // RFC 5041 3: a MULPDU change applies to segments not yet produced; ones
  // already handed out are never re-segmented. Returns false (and keeps the
  // old value) if the new MULPDU cannot carry header plus one payload byte.
  bool SetMulpdu(uint32_t mulpdu);

  // Writes the next segment's header into `header_out` and describes its
  // payload. Returns false when the message is finished, the status is not
  // kOk, or `header_out` is shorter than the header (nothing is consumed).
  bool Next(MutableByteSpan header_out, SegmentDesc* seg);

 private:
  uint32_t MaxPayload() const { return mulpdu_ - static_cast<uint32_t>(header_size_); }

  OutboundMessage msg_;
  uint32_t mulpdu_;
  size_t header_size_;
  uint32_t offset_ = 0;
  bool done_ = false;
  SegmentStatus status_ = SegmentStatus::kOk;
};

}  // namespace iwarp::ddp

#endif  // IWARPD_DDP_SEGMENTER_H_
