#include "ddp/rdmap.h"

namespace iwarp::rdmap {

namespace {

// Offsets in the RDMA Read Request header.
namespace rr_off {
constexpr size_t kSinkStag = 0;
constexpr size_t kSinkTo = 4;
constexpr size_t kReadSize = 12;
constexpr size_t kSourceStag = 16;
constexpr size_t kSourceTo = 20;
}  // namespace rr_off

// Offsets in the Terminate header.
namespace term_off {
constexpr size_t kLayerEtype = 0;
constexpr size_t kErrorCode = 1;
constexpr size_t kHdrCt = 2;
constexpr size_t kSegLen = 4;  // when D is set
}  // namespace term_off

size_t DdpHeaderSizeFromControl(uint8_t ctrl) {
  return (ctrl & ddp::kCtrlTagged) != 0 ? ddp::kTaggedHeaderSize : ddp::kUntaggedHeaderSize;
}

ddp::OutboundMessage Untagged(Opcode op, uint32_t qn, Seq32 msn, uint32_t length,
                              uint32_t rsvd_ulp1) {
  ddp::OutboundMessage m;
  m.tagged = false;
  m.rsvd_ulp0 = MakeControl(op);
  m.rsvd_ulp1 = rsvd_ulp1;
  m.qn = qn;
  m.msn = msn;
  m.length = length;
  return m;
}

ddp::OutboundMessage Tagged(Opcode op, uint32_t stag, uint64_t to, uint32_t length) {
  ddp::OutboundMessage m;
  m.tagged = true;
  m.rsvd_ulp0 = MakeControl(op);
  m.stag = stag;
  m.to = to;
  m.length = length;
  return m;
}

SegmentVerdict Fail(SegmentVerdict v, const TerminateCode& code) {
  v.ok = false;
  v.error = code;
  return v;
}

}  // namespace

std::string_view OpcodeName(Opcode op) {
  using Enum = Opcode;
  switch (op) { IWARP_RDMAP_OPCODES(IWARP_ENUM_NAME_CASE_VALUE) }
  return "reserved";
}

ControlStatus ParseControl(uint8_t ctrl, Opcode* op) {
  *op = static_cast<Opcode>(ctrl & kCtrlOpcodeMask);
  // RFC 5040 4.1: RV MUST be one; a different version is "Invalid RDMAP
  // version" whatever the opcode says.
  if ((ctrl >> kCtrlRvShift) != kRdmapVersion) return ControlStatus::kBadVersion;
  if ((ctrl & kCtrlOpcodeMask) > static_cast<uint8_t>(Opcode::kTerminate)) {
    return ControlStatus::kReservedOpcode;
  }
  return ControlStatus::kOk;
}

bool DescribeOpcode(Opcode op, OpcodeInfo* info) {
  *info = OpcodeInfo{};
  switch (op) {
    case Opcode::kRdmaWrite:
    case Opcode::kReadResponse:
      // RFC 5042: the sink of a Write or Read Response is written by the peer.
      info->tagged = true;
      info->sink_access = ddp::kAccessRemoteWrite;
      return true;
    case Opcode::kReadRequest:
      info->qn = kQnReadRequest;
      return true;
    case Opcode::kSend:
    case Opcode::kSendSe:
      info->qn = kQnSend;
      return true;
    case Opcode::kSendInvalidate:
    case Opcode::kSendSeInvalidate:
      info->qn = kQnSend;
      info->invalidates = true;
      return true;
    case Opcode::kTerminate:
      info->qn = kQnTerminate;
      return true;
  }
  return false;
}

ddp::OutboundMessage RdmaWriteMessage(uint32_t sink_stag, uint64_t sink_to, uint32_t length) {
  return Tagged(Opcode::kRdmaWrite, sink_stag, sink_to, length);
}

ddp::OutboundMessage ReadResponseMessage(uint32_t sink_stag, uint64_t sink_to, uint32_t length) {
  return Tagged(Opcode::kReadResponse, sink_stag, sink_to, length);
}

ddp::OutboundMessage SendMessage(Opcode op, Seq32 msn, uint32_t length, uint32_t invalidate_stag) {
  OpcodeInfo info;
  const bool invalidates = DescribeOpcode(op, &info) && info.invalidates;
  return Untagged(op, kQnSend, msn, length, invalidates ? invalidate_stag : 0);
}

ddp::OutboundMessage ReadRequestMessage(Seq32 msn) {
  return Untagged(Opcode::kReadRequest, kQnReadRequest, msn, kReadRequestSize, 0);
}

ddp::OutboundMessage TerminateMessage(Seq32 msn, uint32_t length) {
  return Untagged(Opcode::kTerminate, kQnTerminate, msn, length, 0);
}

std::string_view BodyStatusName(BodyStatus s) {
  using Enum = BodyStatus;
  switch (s) { IWARP_RDMAP_BODY_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

BodyStatus ParseReadRequest(ByteSpan payload, ReadRequest* out) {
  *out = ReadRequest{};
  if (payload.size() < kReadRequestSize) return BodyStatus::kTruncated;
  if (payload.size() > kReadRequestSize) return BodyStatus::kTrailingBytes;
  const uint8_t* p = payload.data();
  out->sink_stag = LoadBe32(p + rr_off::kSinkStag);
  out->sink_to = LoadBe64(p + rr_off::kSinkTo);
  out->read_size = LoadBe32(p + rr_off::kReadSize);
  out->source_stag = LoadBe32(p + rr_off::kSourceStag);
  out->source_to = LoadBe64(p + rr_off::kSourceTo);
  return BodyStatus::kOk;
}

size_t EncodeReadRequest(const ReadRequest& rr, MutableByteSpan out) {
  if (out.size() < kReadRequestSize) return 0;
  uint8_t* p = out.data();
  StoreBe32(p + rr_off::kSinkStag, rr.sink_stag);
  StoreBe64(p + rr_off::kSinkTo, rr.sink_to);
  StoreBe32(p + rr_off::kReadSize, rr.read_size);
  StoreBe32(p + rr_off::kSourceStag, rr.source_stag);
  StoreBe64(p + rr_off::kSourceTo, rr.source_to);
  return kReadRequestSize;
}

TerminateCode FromDdpError(ddp::DdpError e) {
  const ddp::ErrorNumber n = ddp::ToErrorNumber(e);
  return TerminateCode{kLayerDdp, n.etype, n.code};
}

std::string_view TerminateCodeName(const TerminateCode& c) {
  if (c.layer == kLayerDdp) {
    for (uint8_t i = 1; i <= static_cast<uint8_t>(ddp::DdpError::kUntaggedBadVersion); ++i) {
      const auto e = static_cast<ddp::DdpError>(i);
      if (ddp::ToErrorNumber(e) == ddp::ErrorNumber{c.etype, c.code}) return ddp::DdpErrorName(e);
    }
    return "ddp_unknown";
  }
  if (c.layer == kLayerLlp) return "llp_error";
  if (c.layer != kLayerRdmap) return "unknown_layer";
  if (c == codes::kLocalCatastrophic) return "rdmap_local_catastrophic";
  if (c == codes::kInvalidStag) return "rdmap_invalid_stag";
  if (c == codes::kBaseBounds) return "rdmap_base_bounds";
  if (c == codes::kAccessRights) return "rdmap_access_rights";
  if (c == codes::kStagNotAssociated) return "rdmap_stag_not_associated";
  if (c == codes::kToWrap) return "rdmap_to_wrap";
  if (c == codes::kProtectionCannotInvalidate) return "rdmap_protection_cannot_invalidate";
  if (c == codes::kProtectionUnspecified) return "rdmap_protection_unspecified";
  if (c == codes::kInvalidRdmapVersion) return "rdmap_invalid_version";
  if (c == codes::kUnexpectedOpcode) return "rdmap_unexpected_opcode";
  if (c == codes::kCatastrophicStream) return "rdmap_catastrophic_stream";
  if (c == codes::kCatastrophicGlobal) return "rdmap_catastrophic_global";
  if (c == codes::kOperationCannotInvalidate) return "rdmap_operation_cannot_invalidate";
  if (c == codes::kOperationUnspecified) return "rdmap_operation_unspecified";
  return "rdmap_unknown";
}

BodyStatus ParseTerminate(ByteSpan payload, Terminate* out, size_t* consumed) {
  *out = Terminate{};
  *consumed = 0;
  if (payload.size() < kTerminateControlSize) return BodyStatus::kTruncated;
  const uint8_t* p = payload.data();
  out->code.layer = static_cast<uint8_t>(p[term_off::kLayerEtype] >> 4);
  out->code.etype = static_cast<uint8_t>(p[term_off::kLayerEtype] & 0x0F);
  out->code.code = p[term_off::kErrorCode];
  const uint8_t hdrct = p[term_off::kHdrCt];
  out->m = (hdrct & kHdrCtM) != 0;
  out->d = (hdrct & kHdrCtD) != 0;
  out->r = (hdrct & kHdrCtR) != 0;
  // The length field only exists in front of a Terminated DDP Header.
  if (out->m && !out->d) return BodyStatus::kMalformed;

  size_t off = kTerminateControlSize;
  if (out->d) {
    if (payload.size() < off + 3) return BodyStatus::kTruncated;
    out->ddp_segment_length = LoadBe16(p + term_off::kSegLen);
    off += 2;
    const size_t hlen = DdpHeaderSizeFromControl(p[off]);
    if (payload.size() - off < hlen) return BodyStatus::kTruncated;
    out->ddp_header = payload.subspan(off, hlen);
    off += hlen;
  }
  if (out->r) {
    if (payload.size() - off < kTerminateRdmaHeaderSize) return BodyStatus::kTruncated;
    out->rdma_header = payload.subspan(off, kTerminateRdmaHeaderSize);
    off += kTerminateRdmaHeaderSize;
  }
  *consumed = off;
  return BodyStatus::kOk;
}

size_t EncodeTerminate(const Terminate& t, MutableByteSpan out) {
  if (t.code.layer > 0x0F || t.code.etype > 0x0F) return 0;
  if (t.m && !t.d) return 0;
  size_t need = kTerminateControlSize;
  if (t.d) {
    if (t.ddp_header.empty() ||
        t.ddp_header.size() != DdpHeaderSizeFromControl(t.ddp_header[0])) {
      return 0;
    }
    need += 2 + t.ddp_header.size();
  }
  if (t.r) {
    if (t.rdma_header.size() != kTerminateRdmaHeaderSize) return 0;
    need += kTerminateRdmaHeaderSize;
  }
  if (out.size() < need) return 0;

  ByteWriter w(out);
  w.U8(static_cast<uint8_t>((t.code.layer << 4) | t.code.etype));
  w.U8(t.code.code);
  uint8_t hdrct = 0;
  if (t.m) hdrct |= kHdrCtM;
  if (t.d) hdrct |= kHdrCtD;
  if (t.r) hdrct |= kHdrCtR;
  w.U8(hdrct);  // the 13 reserved bits are sent as zero
  w.U8(0);
  if (t.d) {
    w.U16(t.ddp_segment_length);
    w.Bytes(t.ddp_header);
  }
  if (t.r) w.Bytes(t.rdma_header);
  return w.ok() ? w.offset() : 0;
}

SegmentVerdict CheckSegment(ByteSpan segment, const RxContext& ctx) {
  SegmentVerdict v;
  ddp::DdpHeader& h = v.header;
  switch (ddp::ParseHeader(segment, &h)) {
    case ddp::HeaderStatus::kOk:
      break;
    case ddp::HeaderStatus::kBadVersion:
      return Fail(v, FromDdpError(ddp::BadVersionError(h.tagged)));
    case ddp::HeaderStatus::kTruncated:
      // No DDP error number describes a segment shorter than its header; the
      // stream cannot continue, so it is reported as a stream-local
      // catastrophic error.
      return Fail(v, codes::kCatastrophicStream);
  }
  v.header_parsed = true;
  v.payload_length = static_cast<uint32_t>(segment.size() - h.size());

  switch (ParseControl(h.rsvd_ulp0, &v.opcode)) {
    case ControlStatus::kOk:
      break;
    case ControlStatus::kBadVersion:
      return Fail(v, codes::kInvalidRdmapVersion);
    case ControlStatus::kReservedOpcode:
      return Fail(v, codes::kUnexpectedOpcode);
  }
  OpcodeInfo info;
  DescribeOpcode(v.opcode, &info);
  // RFC 5040 4.2: each opcode has one buffer model.
  if (info.tagged != h.tagged) return Fail(v, codes::kUnexpectedOpcode);

  if (h.tagged) {
    if (ctx.stags == nullptr) return Fail(v, FromDdpError(ddp::DdpError::kTaggedInvalidStag));
    const ddp::TaggedRegion* region = nullptr;
    const ddp::DdpError e =
        ddp::CheckTagged(h, v.payload_length, ctx.stream, *ctx.stags, &v.placement, &region);
    if (e != ddp::DdpError::kNone) return Fail(v, FromDdpError(e));
    // RFC 5042: the region must grant the right this message needs.
    if (region != nullptr && (region->access & info.sink_access) != info.sink_access) {
      return Fail(v, codes::kAccessRights);
    }
  } else {
    // RFC 5040 4.2: each untagged opcode has one queue.
    if (h.qn != info.qn || ctx.queues == nullptr) {
      return Fail(v, FromDdpError(ddp::DdpError::kUntaggedInvalidQn));
    }
    const ddp::DdpError e = ddp::CheckUntagged(h, v.payload_length, *ctx.queues, &v.placement);
    if (e != ddp::DdpError::kNone) return Fail(v, FromDdpError(e));
    // RFC 5040: a Read Request is one segment carrying the 28-byte header.
    if (v.opcode == Opcode::kReadRequest &&
        (!h.last || h.mo != 0 || v.payload_length != kReadRequestSize)) {
      return Fail(v, codes::kOperationUnspecified);
    }
  }
  v.ok = true;
  return v;
}

bool CheckReadSource(const ReadRequest& rr, const ddp::StreamIdentity& stream,
                     const ddp::StagTable& stags, TerminateCode* error,
                     const ddp::TaggedRegion** region) {
  *region = nullptr;
  if (rr.read_size == 0) return true;
  const ddp::TaggedRegion* r = stags.Find(rr.source_stag);
  switch (ddp::CheckRegion(r, rr.source_stag, rr.source_to, rr.read_size, stream)) {
    case ddp::DdpError::kNone:
      break;
    case ddp::DdpError::kTaggedStagNotAssociated:
      *error = codes::kStagNotAssociated;
      return false;
    case ddp::DdpError::kTaggedBaseBounds:
      *error = codes::kBaseBounds;
      return false;
    case ddp::DdpError::kTaggedToWrap:
      *error = codes::kToWrap;
      return false;
    default:
      *error = codes::kInvalidStag;
      return false;
  }
  // RFC 5042: the source of an RDMA Read must allow remote read.
  if ((r->access & ddp::kAccessRemoteRead) == 0) {
    *error = codes::kAccessRights;
    return false;
  }
  *region = r;
  return true;
}

size_t BuildTerminate(const SegmentVerdict& v, ByteSpan offending_segment, MutableByteSpan out) {
  Terminate t;
  t.code = v.error;
  if (v.header_parsed && offending_segment.size() >= v.header.size()) {
    t.d = true;
    t.ddp_header = offending_segment.first(v.header.size());
    if (offending_segment.size() <= 0xFFFF) {
      t.m = true;
      t.ddp_segment_length = static_cast<uint16_t>(offending_segment.size());
    }
    // The RDMA header is only copied when the RDMAP control byte was
    // understood and names a Read Request.
    Opcode op;
    if (!v.header.tagged && ParseControl(v.header.rsvd_ulp0, &op) == ControlStatus::kOk &&
        op == Opcode::kReadRequest &&
        offending_segment.size() >= v.header.size() + kReadRequestSize) {
      t.r = true;
      t.rdma_header = offending_segment.subspan(v.header.size(), kReadRequestSize);
    }
  }
  return EncodeTerminate(t, out);
}

}  // namespace iwarp::rdmap
