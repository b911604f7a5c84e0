// TCP segment header (RFC 9293 3.1) and option (RFC 9293 3.2, RFC 7323,
// RFC 2018) codecs on byte spans.
//
//   0..1   source port          2..3   destination port
//   4..7   sequence number      8..11  acknowledgment number
//   12     data offset (high 4 bits, 32-bit words), reserved (low 4 bits)
//   13     flags: CWR ECE URG ACK PSH RST SYN FIN (0x80 .. 0x01)
//   14..15 window               16..17 checksum       18..19 urgent pointer
//   20..   options (data offset * 4 - 20 octets), then the payload.
//
// The checksum (RFC 9293 3.1) covers the IPv4 pseudo-header (source address,
// destination address, zero, protocol 6, TCP length), the header, the options
// and the payload.
//
// Decisions where the texts leave room (tests pin each one):
//  - Reserved header bits are kept in Segment::reserved on parse (RFC 9293
//    3.1: ignored on receipt) and always sent as zero.
//  - MSS, Window Scale and SACK-permitted outside a SYN are length-checked and
//    then ignored (RFC 9293 3.7.1, RFC 7323 2.2, RFC 2018 2).
//  - A repeated option overrides the earlier one.
//  - Octets after End of Option List are padding and not looked at.
//
// Data-plane code: no allocation, no exceptions; spans in parse results point
// into the caller's input and are valid as long as it is.
#ifndef IWARPD_TCP_LITE_TCP_SEGMENT_H_
#define IWARPD_TCP_LITE_TCP_SEGMENT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "common/seq.h"

namespace iwarp::tcp {

inline constexpr size_t kHeaderSize = 20;
inline constexpr size_t kMaxOptionsSize = 40;
inline constexpr size_t kMaxHeaderSize = kHeaderSize + kMaxOptionsSize;
inline constexpr size_t kMaxSegmentSize = 0xFFFF;  // the pseudo-header length field
inline constexpr uint8_t kIpProtocolTcp = 6;

// Flags octet (offset 13), RFC 9293 3.1 and RFC 3168 for ECE/CWR.
inline constexpr uint8_t kFlagFin = 0x01;
inline constexpr uint8_t kFlagSyn = 0x02;
inline constexpr uint8_t kFlagRst = 0x04;
inline constexpr uint8_t kFlagPsh = 0x08;
inline constexpr uint8_t kFlagAck = 0x10;
inline constexpr uint8_t kFlagUrg = 0x20;
inline constexpr uint8_t kFlagEce = 0x40;
inline constexpr uint8_t kFlagCwr = 0x80;

// Option kinds (RFC 9293 3.2, RFC 7323, RFC 2018) and their fixed lengths.
inline constexpr uint8_t kOptEol = 0;
inline constexpr uint8_t kOptNop = 1;
inline constexpr uint8_t kOptMss = 2;
inline constexpr uint8_t kOptWindowScale = 3;
inline constexpr uint8_t kOptSackPermitted = 4;
inline constexpr uint8_t kOptSack = 5;
inline constexpr uint8_t kOptTimestamps = 8;
inline constexpr uint8_t kOptMssLength = 4;
inline constexpr uint8_t kOptWindowScaleLength = 3;
inline constexpr uint8_t kOptSackPermittedLength = 2;
inline constexpr uint8_t kOptTimestampsLength = 10;
inline constexpr uint8_t kMaxWindowScale = 14;  // RFC 7323 2.3
inline constexpr size_t kMaxSackBlocks = 4;     // RFC 2018 3: 40 octets hold 4

// The IPv4 addresses of the pseudo-header, host byte order.
struct Ipv4Addresses {
  uint32_t src = 0;
  uint32_t dst = 0;
};

// Header fields a sender chooses; data offset and checksum are derived.
struct SegmentHeader {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  Seq32 seq;
  Seq32 ack;
  uint8_t flags = 0;
  uint16_t window = 0;
  uint16_t urgent_pointer = 0;

  bool Has(uint8_t flag) const { return (flags & flag) != 0; }
  bool operator==(const SegmentHeader&) const = default;
};

// A parsed segment. `options` and `payload` point into the parsed input.
struct Segment {
  SegmentHeader header;
  uint8_t data_offset = 0;  // 32-bit words, 5..15
  uint8_t reserved = 0;     // low 4 bits of octet 12 as received
  uint16_t checksum = 0;    // as received
  ByteSpan options;
  ByteSpan payload;
};

// X(enumerator, "name")
#define IWARP_TCP_SEGMENT_STATUSES(X)                                                                   \
  X(kOk, "ok")                                                                                          \
  X(kTruncated, "tcp_truncated")  /* TCP length < 20, above 65535, or beyond the input span */          \
  X(kBadDataOffset, "tcp_bad_data_offset")  /* data offset < 5, or header longer than the segment */    \
  X(kBadChecksum, "tcp_bad_checksum")  /* RFC 9293 3.10.7.4: silently drop */                           \
  X(kBadOptionsLength, "tcp_bad_options_length")  /* encode: options not a multiple of 4 or above 40 */ \
  X(kSegmentTooLong, "tcp_segment_too_long")  /* encode: header + payload above 65535 */                \
  X(kBufferTooSmall, "tcp_buffer_too_small")  /* encode: output shorter than header + options */
enum class SegmentStatus : uint8_t { IWARP_TCP_SEGMENT_STATUSES(IWARP_ENUMERATOR) };

std::string_view SegmentStatusName(SegmentStatus s);

enum class ChecksumCheck : uint8_t {
  kVerify,
  kSkip,  // the NIC already verified it (offload reported good)
};

// One's-complement sum of a payload, so that callers can checksum the payload
// while it is in cache (or take it from hardware) and pass it to the encoder.
struct PayloadSum {
  size_t length = 0;
  uint32_t sum = 0;  // unfolded, as ChecksumAdd returns it
};

// Sum of a contiguous payload.
PayloadSum SumPayload(ByteSpan payload);

// Sum of a payload given as pieces (e.g. MPA header, ULPDU, CRC), each of any
// length: a piece that starts at an odd offset is accounted for by the byte
// swap of RFC 1071 2(B).
PayloadSum SumPayload(std::span<const ByteSpan> pieces);

// Copies a payload given as pieces to `dst`, which must hold their total
// length, and returns the same sum as SumPayload(pieces), in one pass over
// the data (the payload is summed while it is copied into the packet).
PayloadSum CopyAndSumPayload(std::span<const ByteSpan> pieces, uint8_t* dst);

// Completes the checksum of a header that EncodeSegmentHeader wrote with
// PayloadSum{payload.length, 0} (pseudo-header and header only) by adding
// `payload.sum`: the header is then byte-identical to one encoded with the
// payload's sum. Returns false (and changes nothing) if `tcp_header` is
// shorter than a TCP header.
bool AddPayloadSum(MutableByteSpan tcp_header, PayloadSum payload);

// Parses the segment that occupies the first `tcp_length` octets of `in`
// (octets beyond it, e.g. Ethernet padding, are ignored). `tcp_length` is the
// pseudo-header TCP length: IPv4 total length minus the IPv4 header length.
// On kOk fills *out; otherwise *out is unspecified.
SegmentStatus ParseSegment(ByteSpan in, size_t tcp_length, const Ipv4Addresses& addrs,
                           ChecksumCheck check, Segment* out);

struct SegmentEncodeResult {
  SegmentStatus status = SegmentStatus::kOk;
  size_t size = 0;  // header + options octets written on kOk, else 0
};

// Writes header and options to the front of `out` and fills in the checksum
// over pseudo-header, header, options and `payload`. The payload itself is not
// written: the caller places it after `size` octets (or in another buffer).
SegmentEncodeResult EncodeSegmentHeader(const SegmentHeader& h, ByteSpan options,
                                        const Ipv4Addresses& addrs, PayloadSum payload,
                                        MutableByteSpan out);

inline SegmentEncodeResult EncodeSegmentHeader(const SegmentHeader& h, ByteSpan options,
                                               const Ipv4Addresses& addrs, ByteSpan payload,
                                               MutableByteSpan out) {
  return EncodeSegmentHeader(h, options, addrs, SumPayload(payload), out);
}

// ---------------------------------------------------------------- options

struct SackBlock {
  Seq32 left_edge;
  Seq32 right_edge;
  bool operator==(const SackBlock&) const = default;
};

struct Timestamps {
  uint32_t ts_val = 0;  // RFC 7323 3.2 TSval
  uint32_t ts_ecr = 0;  // TSecr
  bool operator==(const Timestamps&) const = default;
};

struct Options {
  std::optional<uint16_t> mss;          // kind 2, SYN only
  std::optional<uint8_t> window_scale;  // kind 3, SYN only, 0..14
  bool window_scale_clamped = false;    // parse: received shift was above 14
  bool sack_permitted = false;          // kind 4, SYN only
  uint8_t sack_block_count = 0;         // kind 5
  std::array<SackBlock, kMaxSackBlocks> sack_blocks{};  // unused entries zero
  std::optional<Timestamps> timestamps;  // kind 8

  std::span<const SackBlock> sack() const { return {sack_blocks.data(), sack_block_count}; }
  bool operator==(const Options&) const = default;
};

// X(enumerator, "name")
#define IWARP_TCP_OPTION_STATUSES(X)                                                             \
  X(kOk, "ok")                                                                                   \
  X(kMissingLength, "tcp_opt_missing_length")  /* a kind other than EOL/NOP is the last octet */ \
  X(kBadLength, "tcp_opt_bad_length")  /* length octet 0 or 1 */                                 \
  X(kLengthPastEnd, "tcp_opt_length_past_end")  /* length runs past the option space */          \
  X(kBadMssLength, "tcp_opt_bad_mss_length")  /* kind 2, length != 4 */                          \
  X(kBadWindowScaleLength, "tcp_opt_bad_wscale_length")  /* kind 3, length != 3 */               \
  X(kBadSackPermittedLength, "tcp_opt_bad_sack_permitted_length")  /* kind 4, length != 2 */     \
  X(kBadSackLength, "tcp_opt_bad_sack_length")  /* kind 5, length not 2 + 8n with 1 <= n <= 4 */ \
  X(kBadTimestampsLength, "tcp_opt_bad_timestamps_length")  /* kind 8, length != 10 */           \
  X(kTooLong, "tcp_opt_too_long")  /* encode: options above 40 octets */                         \
  X(kBadWindowScale, "tcp_opt_bad_wscale")  /* encode: shift above 14 */                         \
  X(kBufferTooSmall, "tcp_opt_buffer_too_small")  /* encode: output too small */
enum class OptionStatus : uint8_t { IWARP_TCP_OPTION_STATUSES(IWARP_ENUMERATOR) };

std::string_view OptionStatusName(OptionStatus s);

// Parses the option space of a segment (Segment::options). `syn` says whether
// the segment carries SYN (SYN-only options are ignored otherwise). On kOk
// fills *out; otherwise *out is unspecified.
OptionStatus ParseOptions(ByteSpan in, bool syn, Options* out);

struct OptionsEncodeResult {
  OptionStatus status = OptionStatus::kOk;
  size_t size = 0;         // octets written on kOk (multiple of 4), else 0
  size_t sack_blocks = 0;  // SACK blocks written
};

// Octets EncodeOptions writes for `o` (may exceed 40, which it rejects).
size_t EncodedOptionsSize(const Options& o);

// Writes every option set in `o` in the order and NOP padding Linux uses:
// MSS; SACK-permitted and Timestamps (04 02 08 0a when both, else NOP NOP
// before either); NOP + Window Scale; NOP NOP + SACK blocks. The result is a
// multiple of 4 octets.
OptionsEncodeResult EncodeOptions(const Options& o, MutableByteSpan out);

// SYN / SYN-ACK options (RFC 9293 3.7.1, RFC 7323, RFC 2018): with all four
// present this is the 20-octet block
//   02 04 mss mss  04 02 08 0a  tsval(4)  tsecr(4)  01 03 03 shift.
struct SynOptions {
  uint16_t mss = 0;
  std::optional<uint8_t> window_scale;
  bool sack_permitted = false;
  std::optional<Timestamps> timestamps;
};
OptionsEncodeResult EncodeSynOptions(const SynOptions& s, MutableByteSpan out);

// Options of a data or ACK segment: Timestamps if on (NOP NOP 08 0a ...),
// then as many of `sack` as fit in 40 octets (3 with Timestamps, 4 without),
// first block first (RFC 2018 4: the most recent block goes first).
OptionsEncodeResult EncodeAckOptions(const std::optional<Timestamps>& ts,
                                     std::span<const SackBlock> sack, MutableByteSpan out);

}  // namespace iwarp::tcp

#endif  // IWARPD_TCP_LITE_TCP_SEGMENT_H_
