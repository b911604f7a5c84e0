// RDMAP (RFC 5040) on top of the DDP codecs: the control byte carried in
// RsvdULP[0:7], the opcode table (which buffer model and queue each message
// uses), the RDMA Read Request header, the Terminate header and its error
// code points, the mapping of DDP errors (RFC 5041 7.2) into Terminate
// messages, and the full receive-side check of one DDP segment before
// placement. Wire fields go through common/bytes.h; nothing here allocates.
#ifndef IWARPD_DDP_RDMAP_H_
#define IWARPD_DDP_RDMAP_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "common/seq.h"
#include "ddp/ddp_header.h"
#include "ddp/placement.h"
#include "ddp/segmenter.h"

namespace iwarp::rdmap {

// ---- Control byte (RFC 5040 4.1) ------------------------------------------

// RV (2 bits) | Rsvd (2 bits) | OpCode (4 bits), in DDP RsvdULP[0:7].
inline constexpr uint8_t kRdmapVersion = 1;
inline constexpr uint8_t kCtrlRvShift = 6;
inline constexpr uint8_t kCtrlReserved = 0x30;
inline constexpr uint8_t kCtrlOpcodeMask = 0x0F;

// X(enumerator, value, "name")
#define IWARP_RDMAP_OPCODES(X)                    \
  X(kRdmaWrite, 0x0, "rdma_write")                \
  X(kReadRequest, 0x1, "read_request")            \
  X(kReadResponse, 0x2, "read_response")          \
  X(kSend, 0x3, "send")                           \
  X(kSendInvalidate, 0x4, "send_invalidate")      \
  X(kSendSe, 0x5, "send_se")                      \
  X(kSendSeInvalidate, 0x6, "send_se_invalidate") \
  X(kTerminate, 0x7, "terminate")
enum class Opcode : uint8_t {
  IWARP_RDMAP_OPCODES(IWARP_ENUMERATOR_VALUE)
  // 0x8..0xF are reserved in RFC 5040 (RFC 7306 later assigns some of them;
  // this implementation does not support those extensions).
};

std::string_view OpcodeName(Opcode op);

// Untagged queues of an RDMAP stream (RFC 5040 4.2 message table).
inline constexpr uint32_t kQnSend = 0;
inline constexpr uint32_t kQnReadRequest = 1;
inline constexpr uint32_t kQnTerminate = 2;
inline constexpr uint32_t kNumQueues = 3;

// Control byte for `op` with RV = 01b and the reserved bits zero.
inline constexpr uint8_t MakeControl(Opcode op) {
  return static_cast<uint8_t>((kRdmapVersion << kCtrlRvShift) | static_cast<uint8_t>(op));
}

enum class ControlStatus : uint8_t {
  kOk,
  kBadVersion,      // RV != 01b
  kReservedOpcode,  // opcode 0x8..0xF
};

// Reads the RDMAP control byte. The reserved bits are not checked on receive.
// On kReservedOpcode `*op` still holds the 4-bit value.
ControlStatus ParseControl(uint8_t ctrl, Opcode* op);

// What RFC 5040 4.2 requires of each message type.
struct OpcodeInfo {
  bool tagged = false;         // DDP T flag the message must carry
  uint32_t qn = 0;             // untagged only: the queue it targets
  bool invalidates = false;    // RsvdULP[8:39] carries the STag to invalidate
  uint8_t sink_access = 0;     // tagged only: right the sink region must grant
};

// Fills `info` for one of the eight RFC 5040 opcodes; false for reserved ones.
bool DescribeOpcode(Opcode op, OpcodeInfo* info);

// ---- Outbound messages ------------------------------------------------------

// DDP message descriptors for each RDMAP message, ready for ddp::Segmenter.
// MSNs are per queue and start at 1 (RFC 5041 4.3).
ddp::OutboundMessage RdmaWriteMessage(uint32_t sink_stag, uint64_t sink_to, uint32_t length);
ddp::OutboundMessage ReadResponseMessage(uint32_t sink_stag, uint64_t sink_to, uint32_t length);
// `op` is one of the four Send opcodes; `invalidate_stag` is sent only for
// the two "with Invalidate" variants (zero, reserved, otherwise).
ddp::OutboundMessage SendMessage(Opcode op, Seq32 msn, uint32_t length,
                                 uint32_t invalidate_stag = 0);
ddp::OutboundMessage ReadRequestMessage(Seq32 msn);  // payload: EncodeReadRequest
ddp::OutboundMessage TerminateMessage(Seq32 msn, uint32_t length);  // payload: EncodeTerminate

// ---- Bodies ----------------------------------------------------------------

// X(enumerator, "name")
#define IWARP_RDMAP_BODY_STATUSES(X)                                                              \
  X(kOk, "ok")                                                                                    \
  X(kTruncated, "rdmap_body_truncated")  /* shorter than the fields it announces */               \
  X(kTrailingBytes, "rdmap_body_trailing_bytes")  /* Read Request payload longer than 28 bytes */ \
  X(kMalformed, "rdmap_body_malformed")  /* self-contradictory (Terminate: M without D) */
enum class BodyStatus : uint8_t { IWARP_RDMAP_BODY_STATUSES(IWARP_ENUMERATOR) };

std::string_view BodyStatusName(BodyStatus s);

// RDMA Read Request header: the whole payload of a Read Request message.
inline constexpr size_t kReadRequestSize = 28;

struct ReadRequest {
  uint32_t sink_stag = 0;
  uint64_t sink_to = 0;
  uint32_t read_size = 0;  // RDMA Read Message Size
  uint32_t source_stag = 0;
  uint64_t source_to = 0;
  bool operator==(const ReadRequest&) const = default;
};

BodyStatus ParseReadRequest(ByteSpan payload, ReadRequest* out);
// Returns kReadRequestSize, or 0 (nothing written) if `out` is too small.
size_t EncodeReadRequest(const ReadRequest& rr, MutableByteSpan out);

// ---- Terminate (RFC 5040 Terminate Header) ---------------------------------

// Layer field values.
inline constexpr uint8_t kLayerRdmap = 0x0;
inline constexpr uint8_t kLayerDdp = 0x1;
inline constexpr uint8_t kLayerLlp = 0x2;

// RDMAP layer error types.
inline constexpr uint8_t kEtypeLocalCatastrophic = 0x0;
inline constexpr uint8_t kEtypeRemoteProtection = 0x1;
inline constexpr uint8_t kEtypeRemoteOperation = 0x2;

// Header control bits (third byte of the Terminate header).
inline constexpr uint8_t kHdrCtM = 0x80;  // DDP Segment Length valid
inline constexpr uint8_t kHdrCtD = 0x40;  // Terminated DDP Header included
inline constexpr uint8_t kHdrCtR = 0x20;  // Terminated RDMA Header included

inline constexpr size_t kTerminateControlSize = 4;
inline constexpr size_t kTerminateRdmaHeaderSize = kReadRequestSize;
inline constexpr size_t kMaxTerminateSize =
    kTerminateControlSize + 2 + ddp::kMaxHeaderSize + kTerminateRdmaHeaderSize;

// Layer / error type / error code, exactly the wire values.
struct TerminateCode {
  uint8_t layer = 0;  // 4 bits
  uint8_t etype = 0;  // 4 bits
  uint8_t code = 0;
  bool operator==(const TerminateCode&) const = default;
};

// The RDMAP code points of RFC 5040 (IANA "RDMAP Errors" registry).
namespace codes {
inline constexpr TerminateCode kLocalCatastrophic{kLayerRdmap, kEtypeLocalCatastrophic, 0x00};
inline constexpr TerminateCode kInvalidStag{kLayerRdmap, kEtypeRemoteProtection, 0x00};
inline constexpr TerminateCode kBaseBounds{kLayerRdmap, kEtypeRemoteProtection, 0x01};
inline constexpr TerminateCode kAccessRights{kLayerRdmap, kEtypeRemoteProtection, 0x02};
inline constexpr TerminateCode kStagNotAssociated{kLayerRdmap, kEtypeRemoteProtection, 0x03};
inline constexpr TerminateCode kToWrap{kLayerRdmap, kEtypeRemoteProtection, 0x04};
inline constexpr TerminateCode kProtectionCannotInvalidate{kLayerRdmap, kEtypeRemoteProtection, 0x09};
inline constexpr TerminateCode kProtectionUnspecified{kLayerRdmap, kEtypeRemoteProtection, 0xFF};
inline constexpr TerminateCode kInvalidRdmapVersion{kLayerRdmap, kEtypeRemoteOperation, 0x05};
inline constexpr TerminateCode kUnexpectedOpcode{kLayerRdmap, kEtypeRemoteOperation, 0x06};
inline constexpr TerminateCode kCatastrophicStream{kLayerRdmap, kEtypeRemoteOperation, 0x07};
inline constexpr TerminateCode kCatastrophicGlobal{kLayerRdmap, kEtypeRemoteOperation, 0x08};
inline constexpr TerminateCode kOperationCannotInvalidate{kLayerRdmap, kEtypeRemoteOperation, 0x09};
inline constexpr TerminateCode kOperationUnspecified{kLayerRdmap, kEtypeRemoteOperation, 0xFF};
}  // namespace codes

// DDP errors are reported with Layer = DDP and the RFC 5041 7.2 numbers.
TerminateCode FromDdpError(ddp::DdpError e);

// Stable snake_case name of a code point, for counters and logs
// ("rdmap_access_rights", "ddp_untagged_no_buffer", "llp_error", ...).
std::string_view TerminateCodeName(const TerminateCode& c);

// One Terminate header. After ParseTerminate the spans point into the parsed
// buffer; for EncodeTerminate they are the bytes to copy.
struct Terminate {
  TerminateCode code;
  bool m = false;  // ddp_segment_length is meaningful
  bool d = false;  // ddp_segment_length and ddp_header are present
  bool r = false;  // rdma_header is present
  uint16_t ddp_segment_length = 0;  // sent as given; BuildTerminate sends 0 unless m
  ByteSpan ddp_header;  // d: the offending DDP header, 14 or 18 bytes (its T bit decides)
  ByteSpan rdma_header; // r: the offending RDMA Read Request header, 28 bytes
};

// Parses the Terminate header at the start of `payload`. The DDP Segment
// Length field and the Terminated DDP Header are present when D is set; M
// without D is kMalformed. Reserved bits are not checked. On kOk `*consumed`
// is the header's length (bytes after it are not interpreted).
BodyStatus ParseTerminate(ByteSpan payload, Terminate* out, size_t* consumed);

// Writes `t` (reserved bits zero). Returns the bytes written, or 0 (nothing
// useful written) if `out` is too small or `t` is inconsistent: layer/etype
// above 15, M without D, a DDP header whose length does not match its T bit,
// or an RDMA header that is not 28 bytes.
size_t EncodeTerminate(const Terminate& t, MutableByteSpan out);

// ---- Receive-side check of one segment -------------------------------------

// What the checks need to know about the receiving stream. Both tables must
// outlive the call.
struct RxContext {
  ddp::StreamIdentity stream;
  const ddp::StagTable* stags = nullptr;
  const ddp::UntaggedQueues* queues = nullptr;
};

struct SegmentVerdict {
  bool ok = false;
  TerminateCode error;          // when !ok: what to send in the Terminate
  bool header_parsed = false;   // the DDP header layout was understood
  ddp::DdpHeader header;        // valid when header_parsed
  Opcode opcode = Opcode::kRdmaWrite;  // valid when header_parsed and RDMAP control was accepted
  uint32_t payload_length = 0;  // bytes after the DDP header
  ddp::Placement placement;     // when ok: where the payload goes
};

// Checks one DDP segment (header + payload, as the LLP delivered it) before
// any byte is placed, in this order:
//   1. DDP header present and DV = 1 (RFC 5041 4.1 / 7.2 version errors);
//   2. RDMAP control: RV = 01b, opcode defined, T flag and QN agree with the
//      opcode (RFC 5040 4.2); a QN that does not match the opcode is reported
//      as DDP "Invalid QN";
//   3. the RFC 5041 7.1 checks for the segment's buffer model;
//   4. RFC 5042 access rights: the sink region of an RDMA Write or Read
//      Response must allow remote write;
//   5. an RDMA Read Request must be a single segment with a 28-byte body.
// Whether a Read Response matches an outstanding Read Request, and the
// processing of a received Terminate, are the caller's.
SegmentVerdict CheckSegment(ByteSpan segment, const RxContext& ctx);

// Checks the data source named by a received RDMA Read Request before any
// byte of the Read Response is sent: STag valid and associated, range inside
// the region, no TO wrap, remote read allowed. Errors use the RDMAP Remote
// Protection codes. A zero-length Read is not checked. Returns true and sets
// `*region` (nullptr for a zero-length Read) when the Read may proceed.
bool CheckReadSource(const ReadRequest& rr, const ddp::StreamIdentity& stream,
                     const ddp::StagTable& stags, TerminateCode* error,
                     const ddp::TaggedRegion** region);

// Writes the Terminate header (the payload of a TerminateMessage) reporting
// verdict `v` of `offending_segment`. The offending DDP header is copied when
// its layout was understood (never after a version error), with M set when
// the segment length fits 16 bits; the 28-byte Read Request header is copied
// (R) when the offending message was a complete Read Request. Returns the
// bytes written, 0 if `out` is shorter than kMaxTerminateSize allows for.
size_t BuildTerminate(const SegmentVerdict& v, ByteSpan offending_segment,
                      MutableByteSpan out);

}  // namespace iwarp::rdmap

#endif  // IWARPD_DDP_RDMAP_H_
