#include "ddp/placement.h"

namespace iwarp::ddp {

ErrorNumber ToErrorNumber(DdpError e) {
  switch (e) {
    case DdpError::kNone:
      return {0, 0};
    case DdpError::kLocalCatastrophic:
      return {kEtypeLocalCatastrophic, 0x00};
    case DdpError::kTaggedInvalidStag:
      return {kEtypeTaggedBuffer, 0x00};
    case DdpError::kTaggedBaseBounds:
      return {kEtypeTaggedBuffer, 0x01};
    case DdpError::kTaggedStagNotAssociated:
      return {kEtypeTaggedBuffer, 0x02};
    case DdpError::kTaggedToWrap:
      return {kEtypeTaggedBuffer, 0x03};
    case DdpError::kTaggedBadVersion:
      return {kEtypeTaggedBuffer, 0x04};
    case DdpError::kUntaggedInvalidQn:
      return {kEtypeUntaggedBuffer, 0x01};
    case DdpError::kUntaggedNoBuffer:
      return {kEtypeUntaggedBuffer, 0x02};
    case DdpError::kUntaggedMsnRange:
      return {kEtypeUntaggedBuffer, 0x03};
    case DdpError::kUntaggedInvalidMo:
      return {kEtypeUntaggedBuffer, 0x04};
    case DdpError::kUntaggedTooLong:
      return {kEtypeUntaggedBuffer, 0x05};
    case DdpError::kUntaggedBadVersion:
      return {kEtypeUntaggedBuffer, 0x06};
  }
  return {kEtypeLocalCatastrophic, 0x00};
}

std::string_view DdpErrorName(DdpError e) {
  using Enum = DdpError;
  switch (e) { IWARP_DDP_ERRORS(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

DdpError CheckRegion(const TaggedRegion* region, uint32_t stag, uint64_t to,
                     uint64_t length, const StreamIdentity& stream) {
  // RFC 5041 7.1 tagged checks 1 and 2: the STag names a live buffer. A
  // region filed under another STag (stale key) is as good as none.
  if (region == nullptr || !region->valid || region->stag != stag) {
    return DdpError::kTaggedInvalidStag;
  }
  // RFC 5041 8.2: PD association, and stream association when the region is
  // bound to one stream.
  if (region->pd != stream.pd ||
      (region->stream_id != kAnyStream && region->stream_id != stream.stream_id)) {
    return DdpError::kTaggedStagNotAssociated;
  }
  // RFC 5041 7.1 tagged check 3: TO inside [base_to, base_to + length).
  if (to < region->base_to || to - region->base_to >= region->length) {
    return DdpError::kTaggedBaseBounds;
  }
  // RFC 5041 7.1 tagged check 5: the 64-bit sum TO + length does not wrap.
  // Tested before check 4 so that a wrapping segment is reported as such.
  if (to + length < to) return DdpError::kTaggedToWrap;
  // RFC 5041 7.1 tagged check 4: TO + length stays inside the region,
  // computed on offsets so that no sum can overflow.
  if (length > region->length - (to - region->base_to)) {
    return DdpError::kTaggedBaseBounds;
  }
  return DdpError::kNone;
}

DdpError CheckTagged(const DdpHeader& h, uint32_t payload_length,
                     const StreamIdentity& stream, const StagTable& stags,
                     Placement* placement, const TaggedRegion** region_out) {
  if (payload_length == 0) {
    // RFC 5041 5.2: STag and TO of a zero-length tagged segment MUST NOT be
    // checked; nothing is placed.
    *placement = Placement{};
    if (region_out != nullptr) *region_out = nullptr;
    return DdpError::kNone;
  }
  const TaggedRegion* region = stags.Find(h.stag);
  const DdpError e = CheckRegion(region, h.stag, h.to, payload_length, stream);
  if (e != DdpError::kNone) return e;
  placement->handle = region->handle;
  placement->offset = h.to - region->base_to;
  placement->length = payload_length;
  if (region_out != nullptr) *region_out = region;
  return DdpError::kNone;
}

DdpError CheckUntagged(const DdpHeader& h, uint32_t payload_length,
                       const UntaggedQueues& queues, Placement* placement) {
  // RFC 5041 7.1 untagged check 1: the QN is valid for this stream.
  QueueWindow w;
  if (!queues.Window(h.qn, &w)) return DdpError::kUntaggedInvalidQn;

  // RFC 5041 7.1 untagged check 5: the MSN lies between the MSN of the first
  // available buffer and the last MSN the queue could ever hold a buffer
  // for. MSNs behind the window (already completed) or beyond the queue depth
  // are out of range. Tested before check 2 because the buffer lookup needs
  // a legal MSN.
  const uint32_t depth = w.depth > w.posted ? w.depth : w.posted;
  const uint32_t index = h.msn.value() - w.first_msn.value();  // modulo 2^32
  if (!h.msn.InWindow(w.first_msn, w.first_msn + depth)) {
    return DdpError::kUntaggedMsnRange;
  }
  // RFC 5041 7.1 untagged check 2: a buffer is posted for this QN and MSN.
  const UntaggedBuffer* buf = index < w.posted ? queues.Buffer(h.qn, index) : nullptr;
  if (buf == nullptr) return DdpError::kUntaggedNoBuffer;

  if (payload_length != 0) {
    // RFC 5041 7.1 untagged check 3: MO is a legal offset of the buffer.
    if (h.mo >= buf->length) return DdpError::kUntaggedInvalidMo;
    // RFC 5041 7.1 untagged check 4: MO + payload length fits the buffer.
    if (payload_length > buf->length - h.mo) return DdpError::kUntaggedTooLong;
  } else if (h.mo > buf->length) {
    // Nothing is placed, but a last segment's MO + length is the message
    // length reported to the ULP (RFC 5041 5.4); it must not exceed the
    // buffer either.
    return DdpError::kUntaggedInvalidMo;
  }
  placement->handle = buf->handle;
  placement->offset = h.mo;
  placement->length = payload_length;
  return DdpError::kNone;
}

}  // namespace iwarp::ddp
