#include "ddp/ddp_header.h"

namespace iwarp::ddp {

std::string_view HeaderStatusName(HeaderStatus s) {
  using Enum = HeaderStatus;
  switch (s) { IWARP_DDP_HEADER_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

HeaderStatus ParseHeader(ByteSpan segment, DdpHeader* out) {
  *out = DdpHeader{};
  if (segment.empty()) return HeaderStatus::kTruncated;
  const uint8_t ctrl = segment[off::kControl];
  out->tagged = (ctrl & kCtrlTagged) != 0;
  // RFC 5041 4.1: DV identifies the header layout, so it is checked before
  // any other field is interpreted. Reserved bits are not checked.
  if ((ctrl & kCtrlDvMask) != kDdpVersion) return HeaderStatus::kBadVersion;
  const size_t need = out->size();
  if (segment.size() < need) return HeaderStatus::kTruncated;

  const uint8_t* p = segment.data();
  out->last = (ctrl & kCtrlLast) != 0;
  out->rsvd_ulp0 = p[off::kRsvdUlp0];
  if (out->tagged) {
    out->stag = LoadBe32(p + off::kStag);
    out->to = LoadBe64(p + off::kTo);
  } else {
    out->rsvd_ulp1 = LoadBe32(p + off::kRsvdUlp1);
    out->qn = LoadBe32(p + off::kQn);
    out->msn = Seq32(LoadBe32(p + off::kMsn));
    out->mo = LoadBe32(p + off::kMo);
  }
  return HeaderStatus::kOk;
}

size_t EncodeHeader(const DdpHeader& h, MutableByteSpan out) {
  const size_t need = h.size();
  if (out.size() < need) return 0;
  uint8_t* p = out.data();
  uint8_t ctrl = kDdpVersion;  // RFC 5041 4.1: reserved bits sent as zero
  if (h.tagged) ctrl |= kCtrlTagged;
  if (h.last) ctrl |= kCtrlLast;
  p[off::kControl] = ctrl;
  p[off::kRsvdUlp0] = h.rsvd_ulp0;
  if (h.tagged) {
    StoreBe32(p + off::kStag, h.stag);
    StoreBe64(p + off::kTo, h.to);
  } else {
    StoreBe32(p + off::kRsvdUlp1, h.rsvd_ulp1);
    StoreBe32(p + off::kQn, h.qn);
    StoreBe32(p + off::kMsn, h.msn.value());
    StoreBe32(p + off::kMo, h.mo);
  }
  return need;
}

}  // namespace iwarp::ddp
