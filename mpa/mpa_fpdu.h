// MPA FPDU framing on the send side, FPDU sizing, and locating FPDUs from
// Markers (RFC 5044 sections 4 and 6, Appendix A.3).
//
// An FPDU on the wire, in TCP sequence order:
//   [Marker]? ULPDU_Length(2) ULPDU [Marker]* ... PAD(0-3) [Marker]? CRC(4)
// Markers sit at every 512th octet of sequence space counted from the marker
// origin (the first octet of Full Operation, RFC 5044 4.3), wherever that
// falls inside the FPDU. A Marker exactly at the FPDU's first octet "falls
// between FPDUs": FPDUPTR 0, belongs to (and is in the CRC of) the following
// FPDU. Any other Marker's FPDUPTR is the distance back from the Marker to
// the ULPDU_Length field. A Marker right after the CRC belongs to the next
// FPDU. Every FPDU size is a multiple of 4, so as long as FPDUs start at
// origin + 4k a Marker never splits the ULPDU_Length or CRC field.
#ifndef IWARPD_MPA_MPA_FPDU_H_
#define IWARPD_MPA_MPA_FPDU_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "common/seq.h"

namespace iwarp::mpa {

inline constexpr uint32_t kMarkerInterval = 512;  // RFC 5044 4.3
inline constexpr size_t kMarkerSize = 4;
inline constexpr size_t kUlpduLengthSize = 2;
inline constexpr size_t kCrcSize = 4;
// RFC 5044 section 3: DDP MUST NOT post a larger ULPDU; the decoder never
// accepts more either, which also keeps every FPDUPTR below 65536.
inline constexpr size_t kMaxUlpduLength = 64768;
inline constexpr uint32_t kMinMulpdu = 128;  // RFC 5044 4.5

// Per direction of a connection, fixed when Full Operation starts.
struct FpduConfig {
  bool markers = false;    // insert (send) / expect (receive) Markers
  bool crc = true;         // generate / check CRC32c (else the field is 0 / ignored)
  Seq32 marker_origin{0};  // sequence number of the first Marker
};

// Octets of ULPDU_Length + ULPDU + PAD + CRC (no Markers).
constexpr size_t FpduSizeWithoutMarkers(size_t ulpdu_len) {
  return ((kUlpduLengthSize + ulpdu_len + 3) & ~size_t{3}) + kCrcSize;
}

// Sequence distance from `seq` to the next Marker position at or after it
// (0 when a Marker starts at `seq`).
inline uint32_t DistanceToMarker(Seq32 seq, Seq32 marker_origin) {
  const uint32_t phase = static_cast<uint32_t>(seq - marker_origin) % kMarkerInterval;
  return (kMarkerInterval - phase) % kMarkerInterval;
}

// Markers inside the FPDU that starts at start_seq (see the file comment for
// which FPDU a Marker belongs to). 0 when config.markers is false.
size_t FpduMarkerCount(size_t ulpdu_len, Seq32 start_seq, const FpduConfig& config);

// Octets the FPDU starting at start_seq occupies in sequence space, Markers
// included: what EncodeFpdu writes. Lets the sender size TCP segments first.
inline size_t FpduWireSize(size_t ulpdu_len, Seq32 start_seq, const FpduConfig& config) {
  return FpduSizeWithoutMarkers(ulpdu_len) +
         kMarkerSize * FpduMarkerCount(ulpdu_len, start_seq, config);
}

enum class FpduStatus : uint8_t {
  kOk,
  kUlpduTooLong,    // header + payload > kMaxUlpduLength
  kBufferTooSmall,  // out smaller than FpduWireSize
  kMisaligned,      // Markers on and start_seq not at marker_origin + 4k
};

struct FpduEncodeResult {
  FpduStatus status = FpduStatus::kOk;
  size_t size = 0;  // octets written on kOk
};

// Frames one ULPDU, given as the DDP header followed by the payload (read
// once, straight from where it lies: copied and CRCed in one pass), into an
// FPDU starting at TCP sequence start_seq. Writes FpduWireSize() octets to
// the front of `out`: Markers (RFC 5044 4.3), ULPDU_Length, the ULPDU, zero
// PAD and the CRC32c over all of it including Markers (4.4), or a zero CRC
// field when config.crc is false.
FpduEncodeResult EncodeFpdu(ByteSpan ulpdu_header, ByteSpan payload, Seq32 start_seq,
                            const FpduConfig& config, MutableByteSpan out);

// An FPDU without Markers whose payload is not copied (a zero-copy send):
// `head` receives ULPDU_Length and the DDP header, `tail` the zero PAD and
// the CRC32c over ULPDU_Length, header, payload and PAD (the payload is read
// once, in place), or a zero CRC field when `crc` is false. On the wire the
// FPDU is head, payload, tail: FpduSizeWithoutMarkers(header + payload)
// octets. Sizes: head at least kUlpduLengthSize + header, tail at least
// kMaxFpduTail.
inline constexpr size_t kMaxFpduTail = 3 + kCrcSize;
struct FpduParts {
  FpduStatus status = FpduStatus::kOk;
  size_t head_size = 0;
  size_t tail_size = 0;
};
FpduParts FrameFpduAround(ByteSpan ulpdu_header, ByteSpan payload, bool crc, MutableByteSpan head,
                          MutableByteSpan tail);

// RFC 5044 4.5: the largest ULPDU whose FPDU fits in one segment of `emss`
// octets, with or without Markers (worst-case Marker count), clamped to
// [128, 64768] as 4.5 and section 3 require.
uint32_t Mulpdu(uint32_t emss, bool markers);

// A Marker found in an out-of-order segment (RFC 5044 4.3, Appendix A.3).
struct MarkerHit {
  Seq32 marker_seq;  // where the Marker starts
  Seq32 fpdu_seq;    // the ULPDU_Length field of the FPDU it designates
};

// Finds the first Marker lying wholly inside `segment` (whose first octet is
// at sequence segment_seq) and returns the FPDU it points to: the FPDU whose
// header follows the Marker when FPDUPTR is 0, else the one FPDUPTR octets
// before the Marker (low two bits ignored, sequence wrap handled). nullopt
// when the segment holds no complete Marker. The result comes from the wire:
// the caller validates the FPDU it designates (length, CRC) before use.
std::optional<MarkerHit> LocateFpduFromMarker(ByteSpan segment, Seq32 segment_seq,
                                              Seq32 marker_origin);

}  // namespace iwarp::mpa

#endif  // IWARPD_MPA_MPA_FPDU_H_
