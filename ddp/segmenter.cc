#include "ddp/segmenter.h"

#include <algorithm>

namespace iwarp::ddp {

std::string_view SegmentStatusName(SegmentStatus s) {
  using Enum = SegmentStatus;
  switch (s) { IWARP_DDP_SEGMENT_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

Segmenter::Segmenter(const OutboundMessage& msg, uint32_t mulpdu)
    : msg_(msg),
      mulpdu_(mulpdu),
      header_size_(msg.tagged ? kTaggedHeaderSize : kUntaggedHeaderSize) {
  if (mulpdu_ <= header_size_) {
    status_ = SegmentStatus::kMulpduTooSmall;
  } else if (msg_.tagged && msg_.length != 0 && msg_.to + msg_.length < msg_.to) {
    // The sink would reject this with "TO wrap" (RFC 5041 7.1 tagged check 5);
    // refuse to send it.
    status_ = SegmentStatus::kToWrap;
  }
  if (status_ != SegmentStatus::kOk) done_ = true;
}

uint32_t Segmenter::RemainingSegments() const {
  if (done_) return 0;
  const uint32_t left = msg_.length - offset_;
  if (left == 0) return 1;  // zero-length message: one segment
  const uint32_t per = MaxPayload();
  return left / per + (left % per != 0 ? 1 : 0);
}

bool Segmenter::SetMulpdu(uint32_t mulpdu) {
  if (mulpdu <= header_size_) return false;
  mulpdu_ = mulpdu;
  return true;
}

bool Segmenter::Next(MutableByteSpan header_out, SegmentDesc* seg) {
  if (done_ || header_out.size() < header_size_) return false;
  const uint32_t left = msg_.length - offset_;
  const uint32_t payload = std::min(left, MaxPayload());
  const bool last = payload == left;

  DdpHeader h;
  h.tagged = msg_.tagged;
  h.last = last;  // RFC 5041 4.1: L set on the last segment only
  h.rsvd_ulp0 = msg_.rsvd_ulp0;
  if (msg_.tagged) {
    // RFC 5041 5.2: TO = initial TO + offset of the payload in the message.
    h.stag = msg_.stag;
    h.to = msg_.to + offset_;
  } else {
    // RFC 5041 5.2: MO = offset of the payload in the message; QN and MSN
    // are the same in every segment of the message.
    h.rsvd_ulp1 = msg_.rsvd_ulp1;
    h.qn = msg_.qn;
    h.msn = msg_.msn;
    h.mo = offset_;
  }
  EncodeHeader(h, header_out);

  seg->message_offset = offset_;
  seg->payload_length = payload;
  seg->header_length = static_cast<uint8_t>(header_size_);
  seg->last = last;
  offset_ += payload;
  done_ = last;
  return true;
}

}  // namespace iwarp::ddp
