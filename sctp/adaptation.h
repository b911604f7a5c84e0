// The SCTP DDP adaptation layer of RFC 5043, as wire codecs and small
// checks on byte spans: the Adaptation Layer Indication parameter, the DDP
// Segment chunk payload (PPID 16), DDP Stream Session Control messages
// (PPID 17), the legal session sequences of section 6, the DDP-SSN window of
// section 10 and the maximum DDP segment size of section 9. No usrsctp here:
// the association code hands these functions the user data of each DATA
// chunk. Nothing allocates or throws.
#ifndef IWARPD_SCTP_ADAPTATION_H_
#define IWARPD_SCTP_ADAPTATION_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "common/seq.h"

namespace iwarp::sctp {

// RFC 5043 5.2: Payload Protocol Identifiers of the two chunk kinds.
inline constexpr uint32_t kPpidDdpSegment = 16;
inline constexpr uint32_t kPpidSessionControl = 17;

// RFC 5043 5.1 (format of RFC 5061): parameter type 0xC006 carrying the
// 32-bit Adaptation Indication; DDP's value is 0x00000001.
inline constexpr uint16_t kAdaptationParamType = 0xC006;
inline constexpr size_t kAdaptationParamSize = 8;
inline constexpr uint32_t kDdpAdaptationIndication = 0x00000001;

inline constexpr size_t kSsnSize = 2;                 // RFC 5043 5.2.1
inline constexpr size_t kSessionControlHeaderSize = 4;  // DDP-SSN + function code
inline constexpr size_t kMaxPrivateData = 512;        // RFC 5043 5.2.3
// RFC 5043 9: the maximum DDP segment size is never below 516 bytes.
inline constexpr uint32_t kMinMaxDdpSegmentSize = 516;

// X(enumerator, "name")
#define IWARP_SCTP_ADAPT_STATUSES(X)                                                                           \
  X(kOk, "ok")                                                                                                 \
  X(kTruncated, "sctp_ddp_truncated")  /* fewer bytes than the fixed fields need */                            \
  X(kEmptySegment, "sctp_ddp_empty_segment")  /* a DDP Segment chunk with no DDP segment after the DDP-SSN */  \
  X(kSegmentTooLarge, "sctp_ddp_segment_too_large")  /* RFC 5043 9: larger than the advertised maximum */      \
  X(kUnknownFunctionCode, "sctp_ddp_unknown_function")  /* RFC 5043 5.2.3: not 1..4 */                         \
  X(kPrivateDataTooLong, "sctp_ddp_private_data_too_long")  /* RFC 5043 5.2.3: more than 512 bytes */          \
  X(kPrivateDataNotAllowed, "sctp_ddp_private_data_not_allowed")  /* RFC 5043 5.2.3: Terminate carries none */ \
  X(kBadParameterType, "sctp_ddp_bad_param_type")  /* not 0xC006 */                                            \
  X(kBadParameterLength, "sctp_ddp_bad_param_length")  /* Adaptation Indication parameter length != 8 */       \
  X(kOutputTooSmall, "sctp_ddp_output_too_small")  /* encode: the output buffer is too short */                \
  X(kIllegalSequence, "sctp_ddp_illegal_sequence")  /* RFC 5043 6.1: the session must be terminated */
enum class AdaptStatus : uint8_t { IWARP_SCTP_ADAPT_STATUSES(IWARP_ENUMERATOR) };

std::string_view AdaptStatusName(AdaptStatus s);

// ---- Adaptation Layer Indication (RFC 5043 5.1, 11.1) ----------------------

// Writes the 8-byte parameter; returns 8, or 0 if `out` is too small.
size_t EncodeAdaptationParam(uint32_t indication, MutableByteSpan out);
// Parses one parameter (type, length, indication) at the start of `in`.
AdaptStatus ParseAdaptationParam(ByteSpan in, uint32_t* indication);

enum class PeerAdaptation : uint8_t {
  kNone,   // no indication in INIT / INIT-ACK: no DDP on this association
  kDdp,    // DDP adaptation: this layer runs
  kOther,  // another adaptation: no DDP on this association
};

// RFC 5043 11.1 table. Only kDdp lets DDP procedures run.
PeerAdaptation ClassifyPeer(bool indication_present, uint32_t indication);

// ---- DDP Segment chunk (PPID 16, RFC 5043 5.2.2) ---------------------------

struct SegmentChunk {
  Seq16 ssn;
  ByteSpan segment;  // the DDP segment, pointing into the parsed chunk
};

// Splits a DDP Segment chunk's user data. RFC 5043 9: a DDP segment longer
// than `max_segment` (the value this end advertised to DDP) is rejected.
AdaptStatus ParseSegmentChunk(ByteSpan user_data, uint32_t max_segment, SegmentChunk* out);

// Writes the DDP-SSN in front of a DDP segment the caller places at
// out[kSsnSize...]. Returns kSsnSize, or 0 if `out` is too small.
size_t EncodeSegmentChunkPrefix(Seq16 ssn, MutableByteSpan out);

// ---- DDP Stream Session Control (PPID 17, RFC 5043 5.2.3) ------------------

enum class FunctionCode : uint16_t {
  kInitiate = 0x001,
  kAccept = 0x002,
  kReject = 0x003,
  kTerminate = 0x004,
};

struct SessionControl {
  Seq16 ssn;
  FunctionCode function = FunctionCode::kInitiate;
  ByteSpan private_data;  // Initiate/Accept/Reject: 0..512 bytes; Terminate: none
};

// Validating decode of a session control message's user data.
AdaptStatus ParseSessionControl(ByteSpan user_data, SessionControl* out);

// Writes `m`; on kOk `*written` is its length. Refuses (writing nothing
// useful) what ParseSessionControl would reject.
AdaptStatus EncodeSessionControl(const SessionControl& m, MutableByteSpan out, size_t* written);

// ---- Session sequences (RFC 5043 6.1 - 6.4) ---------------------------------

enum class Role : uint8_t { kActive, kPassive };

enum class ChunkKind : uint8_t { kInitiate, kAccept, kReject, kTerminate, kDdpSegment };

// Checks the chunks one end receives within one DDP Stream Session, taken in
// DDP-SSN order (the caller reorders unordered chunks first), against the
// legal sequences of RFC 5043 6.2-6.4. Any other pattern is kIllegalSequence
// and the session MUST be terminated (6.1).
class SessionSequencer {
 public:
  explicit SessionSequencer(Role role) : role_(role) {}

  AdaptStatus OnReceive(ChunkKind kind);

  // True once the peer has ended the session (Reject or Terminate received).
  bool closed() const { return state_ == State::kClosed; }

 private:
  enum class State : uint8_t { kStart, kOpen, kClosed };
  Role role_;
  State state_ = State::kStart;
};

// ---- DDP-SSN window (RFC 5043 10) -------------------------------------------

// True if `ssn` can be explained by chunks not yet received, given the lowest
// DDP-SSN not yet received on the stream: it lies in [lowest, lowest + 32768).
inline bool SsnPlausible(Seq16 lowest_unreceived, Seq16 ssn) {
  return ssn.InWindow(lowest_unreceived, lowest_unreceived + 32768);
}

// ---- Maximum DDP segment size (RFC 5043 9) ----------------------------------

struct PathParams {
  uint32_t path_mtu = 1500;       // bytes of IP packet the path carries unfragmented
  bool ipv6 = false;              // 40-byte IPv6 header, else 20-byte IPv4
  uint32_t ip_options = 0;        // extra IP header bytes
  uint32_t bundling_reserve = 0;  // room kept for bundled control chunks (a SACK is 16+)
};

inline constexpr uint32_t kSctpCommonHeaderSize = 12;  // RFC 9260 3.1
inline constexpr uint32_t kDataChunkHeaderSize = 16;   // RFC 9260 3.3.1

// The DDP segment size this end advertises to DDP as its MULPDU: the largest
// DDP segment whose DATA chunk (DDP-SSN + segment) fits one packet without IP
// or SCTP fragmentation, less the bundling reserve, but never below 516
// (RFC 5043 9). The 516-byte floor applies to the DDP segment itself, so a
// Session Control message with 512 bytes of private data (516 bytes of chunk
// user data) always fits too.
uint32_t MaxDdpSegmentSize(const PathParams& p);

}  // namespace iwarp::sctp

#endif  // IWARPD_SCTP_ADAPTATION_H_
