// IPv4 header validation (RFC 791 3.1, RFC 1122 3.2.1) and ICMP echo
// (RFC 792) on byte spans. No DPDK.
#ifndef IWARPD_DATAPLANE_L3_IPV4_H_
#define IWARPD_DATAPLANE_L3_IPV4_H_

#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "common/drop_reasons.h"

namespace iwarp::dataplane {

// RFC 791 3.1 header field offsets.
inline constexpr size_t kIpv4VersionIhlOffset = 0;
inline constexpr size_t kIpv4TotalLengthOffset = 2;
inline constexpr size_t kIpv4IdOffset = 4;
inline constexpr size_t kIpv4FlagsFragOffset = 6;
inline constexpr size_t kIpv4TtlOffset = 8;
inline constexpr size_t kIpv4ProtocolOffset = 9;
inline constexpr size_t kIpv4ChecksumOffset = 10;
inline constexpr size_t kIpv4SrcOffset = 12;
inline constexpr size_t kIpv4DstOffset = 16;
inline constexpr size_t kIpv4MinHeaderLen = 20;

inline constexpr uint16_t kIpv4FlagMoreFragments = 0x2000;
inline constexpr uint16_t kIpv4FragOffsetMask = 0x1fff;

inline constexpr uint8_t kIpProtoIcmp = 1;
inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr uint8_t kIpProtoSctp = 132;

// TTL of datagrams we originate (RFC 1700 default).
inline constexpr uint8_t kDefaultTtl = 64;

// A validated IPv4 header. Addresses are host byte order.
struct Ipv4Header {
  size_t header_len = 0;  // IHL * 4
  size_t total_len = 0;   // header + payload, <= the span it was parsed from
  uint8_t protocol = 0;
  uint32_t src = 0;
  uint32_t dst = 0;
};

// Checks the header of the datagram at the start of `packet` (the bytes after
// the Ethernet header, possibly followed by link-layer padding). Returns
// kNone and fills `out`, or the reason to drop, checked in this order:
// ipv4_truncated (fewer than 20 bytes), ipv4_bad_version, ipv4_bad_ihl
// (IHL < 5), ipv4_truncated (total length beyond the frame), ipv4_bad_ihl
// (header longer than total length), ipv4_bad_checksum, ipv4_fragment.
// Addressing is the caller's business.
DropReason ParseIpv4(ByteSpan packet, Ipv4Header* out);

// RFC 1122 3.2.1.3: a source that may not appear on a datagram we accept
// (0.0.0.0/8, 127/8, multicast/reserved 224/3, limited broadcast).
bool IsBadSourceAddress(uint32_t addr);

// RFC 768 UDP header.
inline constexpr size_t kUdpHeaderLen = 8;
inline constexpr size_t kUdpSrcPortOffset = 0;
inline constexpr size_t kUdpDstPortOffset = 2;
inline constexpr size_t kUdpLengthOffset = 4;
inline constexpr size_t kUdpChecksumOffset = 6;

// Turns the UDP datagram `ip` (validated header `hdr`, no fragments, UDP
// header checked) into its RFC 862 echo in place: addresses and ports
// swapped, TTL reset, IP header checksum recomputed. The UDP checksum stays
// valid as it is (the pseudo-header and header sums do not change when the
// pairs are swapped); a zero (absent) checksum stays zero.
void MakeUdpEchoInPlace(MutableByteSpan ip, const Ipv4Header& hdr);

// RFC 792 echo message field offsets (relative to the ICMP header).
inline constexpr size_t kIcmpTypeOffset = 0;
inline constexpr size_t kIcmpCodeOffset = 1;
inline constexpr size_t kIcmpChecksumOffset = 2;
inline constexpr size_t kIcmpHeaderLen = 8;
inline constexpr uint8_t kIcmpEchoReply = 0;
inline constexpr uint8_t kIcmpEchoRequest = 8;

// Turns the echo request datagram `ip` (a validated header of `hdr`, no
// fragments) into the echo reply in place: RFC 792 "the source and
// destination addresses are simply reversed, the type code changed to 0, and
// the checksum recomputed". The ICMP checksum is adjusted incrementally
// (RFC 1624), which is exact because the request's checksum was verified; the
// IPv4 header checksum is recomputed with TTL reset to kDefaultTtl. IP
// options are returned as received.
void MakeEchoReplyInPlace(MutableByteSpan ip, const Ipv4Header& hdr);

// Writes a 20-byte IPv4 header (no options, DF set, TTL kDefaultTtl) for a
// datagram we originate, with its checksum, into `out` (at least 20 bytes).
// `payload_len` is the length after the header; `id` the identification
// (RFC 6864 4.1: any value for atomic datagrams).
void WriteIpv4Header(MutableByteSpan out, uint8_t protocol, uint32_t src, uint32_t dst,
                     uint16_t payload_len, uint16_t id);

// Dotted quad of a host-order address; control path only (allocates).
std::string Ipv4ToString(uint32_t addr);

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_L3_IPV4_H_
