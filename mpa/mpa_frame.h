// MPA Request and Reply Frames (RFC 5044 7.1.1, revision 2 per RFC 6581).
//
//   0..15  Key "MPA ID Req Frame" / "MPA ID Rep Frame"
//   16     flags: M 0x80 (Markers), C 0x40 (CRC), R 0x20 (Reject),
//          S 0x10 (RFC 6581 enhanced setup), Res 0x0f
//   17     Rev
//   18..19 PD_Length (big endian), then PD_Length octets of Private Data.
//
// With S=1 the Private Data starts with the RFC 6581 IRD/ORD block (counted
// in PD_Length): IRD word (A 0x8000 peer-to-peer, B 0x4000 Send RTR, IRD in
// the low 14 bits), then ORD word (C 0x8000 Write RTR, D 0x4000 Read RTR, ORD
// in the low 14 bits).
//
// Decisions where the texts leave room (tests pin each one):
//  - Rev 1 and Rev 2 are accepted; anything else is kBadRevision (Rev 0 is the
//    pre-IETF RDMAC framing, RFC 5044 Appendix C, which we do not speak).
//  - S exists in Rev 2 only. Decoding a Rev 1 frame treats 0x10 as one of the
//    Res bits (kept in StartupFrame::reserved, no IRD/ORD block); encoding an
//    IRD/ORD block with Rev 1 is kEnhancedNeedsRev2.
//  - Res bits are "not checked on reception" (RFC 5044 7.1.1): decoding keeps
//    them in StartupFrame::reserved unless FrameDecodeOptions asks to reject.
//  - R is "not checked on reception in the MPA Request Frame": a decoded
//    request always has reject == false.
// Bytes after the frame are the caller's business (a peer must not send any
// before the handshake completes, INTEROP.md); `size` says where it ends.
//
// Control path code, but allocation-free and never trusting the input.
#ifndef IWARPD_MPA_MPA_FRAME_H_
#define IWARPD_MPA_MPA_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "mpa/mpa_error.h"

namespace iwarp::mpa {

inline constexpr size_t kKeySize = 16;
inline constexpr size_t kStartupHeaderSize = 20;
inline constexpr size_t kMaxPrivateDataLength = 512;  // RFC 5044 7.1.1
inline constexpr size_t kIrdOrdSize = 4;              // RFC 6581
inline constexpr uint16_t kIrdOrdMax = 0x3FFF;        // low 14 bits
inline constexpr uint8_t kRevision1 = 1;
inline constexpr uint8_t kRevision2 = 2;

inline constexpr std::string_view kRequestKey = "MPA ID Req Frame";
inline constexpr std::string_view kReplyKey = "MPA ID Rep Frame";

// Wire constants: flags byte (offset 16) and IRD/ORD control bits.
inline constexpr uint8_t kFlagMarkers = 0x80;
inline constexpr uint8_t kFlagCrc = 0x40;
inline constexpr uint8_t kFlagReject = 0x20;
inline constexpr uint8_t kFlagEnhanced = 0x10;
inline constexpr uint8_t kFlagsReserved = 0x0F;
inline constexpr uint16_t kIrdPeerToPeer = 0x8000;  // A
inline constexpr uint16_t kIrdSendRtr = 0x4000;     // B
inline constexpr uint16_t kOrdWriteRtr = 0x8000;    // C
inline constexpr uint16_t kOrdReadRtr = 0x4000;     // D

enum class FrameType : uint8_t { kRequest, kReply };

// RFC 6581 IRD/ORD block.
struct IrdOrd {
  uint16_t ird = 0;  // 0..kIrdOrdMax
  uint16_t ord = 0;  // 0..kIrdOrdMax
  bool peer_to_peer = false;  // A
  bool send_rtr = false;      // B: zero-length Send as ready-to-receive
  bool write_rtr = false;     // C: zero-length RDMA Write as RTR
  bool read_rtr = false;      // D: zero-length RDMA Read as RTR
  bool operator==(const IrdOrd&) const = default;
};

struct StartupFrame {
  FrameType type = FrameType::kRequest;
  bool markers = false;  // M
  bool crc = false;      // C
  bool reject = false;   // R, Reply only
  uint8_t revision = kRevision2;
  std::optional<IrdOrd> ird_ord;  // S=1 iff present; Rev 2 only
  // The ULP's private data (after the IRD/ORD block). Decoding points it into
  // the input buffer; it is valid as long as that buffer is.
  ByteSpan private_data;
  uint8_t reserved = 0;  // Res bits as received (Rev 1: with 0x10); must be 0 to encode
};

// Same fields and same private data bytes.
bool SameFrame(const StartupFrame& a, const StartupFrame& b);

// X(enumerator, "name")
#define IWARP_MPA_FRAME_STATUSES(X)                                                         \
  X(kOk, "ok")                                                                              \
  X(kNeedMoreBytes, "need_more_bytes")  /* not an error: the frame is incomplete */         \
  X(kBadKey, "bad_key")  /* RFC 5044 7.1.2 rule 5 */                                        \
  X(kUnexpectedFrameType, "unexpected_frame_type")  /* the other key: Initiator/Initiator or Responder/Responder startup (7.1.2 rule 8) */ \
  X(kBadRevision, "bad_revision")  /* Rev not 1 or 2 */                                     \
  X(kReservedBitsSet, "reserved_bits_set")  /* Res != 0 (encode; decode only when asked) */ \
  X(kPrivateDataTooLong, "private_data_too_long")  /* PD_Length > 512 or > the local limit (rule 9) */ \
  X(kEnhancedNeedsRev2, "enhanced_needs_rev2")  /* encoding an IRD/ORD block with Rev 1 */  \
  X(kIrdOrdMissing, "ird_ord_missing")  /* S=1 but PD_Length < 4 */                         \
  X(kIrdOrdOutOfRange, "ird_ord_out_of_range")  /* encode: IRD or ORD above 0x3FFF */       \
  X(kRejectInRequest, "reject_in_request")  /* encode: R=1 in a Request */                  \
  X(kBufferTooSmall, "buffer_too_small")  /* encode: output too small */
enum class FrameStatus : uint8_t { IWARP_MPA_FRAME_STATUSES(IWARP_ENUMERATOR) };

std::string_view FrameStatusName(FrameStatus s);

// kOk and kNeedMoreBytes map to MpaError::kNone; every error to
// kInvalidStartupFrame (RFC 5044 8 code 4: close the TCP connection).
MpaError ToMpaError(FrameStatus s);

struct FrameResult {
  FrameStatus status = FrameStatus::kOk;
  // kOk: frame size in bytes (consumed, or written). kNeedMoreBytes: the
  // total input size the frame needs as far as known so far (20 until the
  // header is complete, then 20 + PD_Length). Otherwise 0.
  size_t size = 0;
};

struct FrameDecodeOptions {
  // Local limit on PD_Length (RFC 5044 7.1.2 rule 9: the private data buffer).
  // Values above 512 act as 512.
  size_t max_private_data = kMaxPrivateDataLength;
  bool reject_reserved_bits = false;
};

// Total encoded size: header + IRD/ORD block if present + private data.
size_t StartupFrameSize(const StartupFrame& f);

// Validates `f` and writes it to the front of `out`.
FrameResult EncodeStartupFrame(const StartupFrame& f, MutableByteSpan out);

// Decodes a frame of type `expected` from the front of `in`. On kOk fills
// *out (private_data points into `in`); on any other status *out is
// unspecified. A key that cannot match is reported as soon as the differing
// byte has arrived, without waiting for the whole header.
FrameResult DecodeStartupFrame(ByteSpan in, FrameType expected, StartupFrame* out,
                               const FrameDecodeOptions& options = {});

}  // namespace iwarp::mpa

#endif  // IWARPD_MPA_MPA_FRAME_H_
