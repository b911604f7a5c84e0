#include "dataplane/l3/ipv4.h"

#include "absl/strings/str_format.h"
#include "common/checksum.h"
#include "dataplane/l3/mac.h"

namespace iwarp::dataplane {

DropReason ParseIpv4(ByteSpan packet, Ipv4Header* out) {
  if (packet.size() < kIpv4MinHeaderLen) return DropReason::kIpv4Truncated;
  const uint8_t* p = packet.data();
  const uint8_t version = p[kIpv4VersionIhlOffset] >> 4;
  const size_t ihl = p[kIpv4VersionIhlOffset] & 0x0f;
  if (version != 4) return DropReason::kIpv4BadVersion;
  if (ihl < 5) return DropReason::kIpv4BadHeaderLength;
  const size_t header_len = ihl * 4;
  // RFC 791 3.1: Total Length covers header and data; anything after it in
  // the frame is link-layer padding.
  const size_t total_len = LoadBe16(p + kIpv4TotalLengthOffset);
  if (total_len > packet.size()) return DropReason::kIpv4Truncated;
  if (header_len > total_len) return DropReason::kIpv4BadHeaderLength;
  // RFC 1122 3.2.1.2: a host MUST verify the header checksum.
  if (InternetChecksum(packet.first(header_len)) != 0) {
    return DropReason::kIpv4BadChecksum;
  }
  // RFC 791 3.2 fragmentation: no reassembly here, so a fragment (MF set or a
  // non-zero offset) is dropped.
  const uint16_t frag = LoadBe16(p + kIpv4FlagsFragOffset);
  if ((frag & (kIpv4FlagMoreFragments | kIpv4FragOffsetMask)) != 0) {
    return DropReason::kIpv4Fragment;
  }
  out->header_len = header_len;
  out->total_len = total_len;
  out->protocol = p[kIpv4ProtocolOffset];
  out->src = LoadBe32(p + kIpv4SrcOffset);
  out->dst = LoadBe32(p + kIpv4DstOffset);
  return DropReason::kNone;
}

bool IsBadSourceAddress(uint32_t addr) {
  const uint32_t first = addr >> 24;
  return first == 0 || first == 127 || first >= 224;
}

void MakeEchoReplyInPlace(MutableByteSpan ip, const Ipv4Header& hdr) {
  uint8_t* p = ip.data();
  StoreBe32(p + kIpv4SrcOffset, hdr.dst);
  StoreBe32(p + kIpv4DstOffset, hdr.src);
  p[kIpv4TtlOffset] = kDefaultTtl;
  StoreBe16(p + kIpv4ChecksumOffset, 0);
  StoreBe16(p + kIpv4ChecksumOffset,
            InternetChecksum(ByteSpan(p, hdr.header_len)));

  uint8_t* icmp = p + hdr.header_len;
  const uint16_t old_word = LoadBe16(icmp + kIcmpTypeOffset);  // type, code
  icmp[kIcmpTypeOffset] = kIcmpEchoReply;
  const uint16_t new_word = LoadBe16(icmp + kIcmpTypeOffset);
  StoreBe16(icmp + kIcmpChecksumOffset,
            ChecksumAdjust(LoadBe16(icmp + kIcmpChecksumOffset), old_word, new_word));
}

void MakeUdpEchoInPlace(MutableByteSpan ip, const Ipv4Header& hdr) {
  uint8_t* p = ip.data();
  StoreBe32(p + kIpv4SrcOffset, hdr.dst);
  StoreBe32(p + kIpv4DstOffset, hdr.src);
  p[kIpv4TtlOffset] = kDefaultTtl;
  StoreBe16(p + kIpv4ChecksumOffset, 0);
  StoreBe16(p + kIpv4ChecksumOffset, InternetChecksum(ByteSpan(p, hdr.header_len)));
  uint8_t* udp = p + hdr.header_len;
  const uint16_t sport = LoadBe16(udp + kUdpSrcPortOffset);
  StoreBe16(udp + kUdpSrcPortOffset, LoadBe16(udp + kUdpDstPortOffset));
  StoreBe16(udp + kUdpDstPortOffset, sport);
}

void WriteIpv4Header(MutableByteSpan out, uint8_t protocol, uint32_t src, uint32_t dst,
                     uint16_t payload_len, uint16_t id) {
  uint8_t* p = out.data();
  p[kIpv4VersionIhlOffset] = 0x45;
  p[kIpv4VersionIhlOffset + 1] = 0;  // DSCP/ECN
  StoreBe16(p + kIpv4TotalLengthOffset, static_cast<uint16_t>(kIpv4MinHeaderLen + payload_len));
  StoreBe16(p + kIpv4IdOffset, id);
  StoreBe16(p + kIpv4FlagsFragOffset, 0x4000);  // DF (RFC 791 3.1)
  p[kIpv4TtlOffset] = kDefaultTtl;
  p[kIpv4ProtocolOffset] = protocol;
  StoreBe16(p + kIpv4ChecksumOffset, 0);
  StoreBe32(p + kIpv4SrcOffset, src);
  StoreBe32(p + kIpv4DstOffset, dst);
  StoreBe16(p + kIpv4ChecksumOffset, InternetChecksum(ByteSpan(p, kIpv4MinHeaderLen)));
}

std::string Ipv4ToString(uint32_t addr) {
  return absl::StrFormat("%u.%u.%u.%u", addr >> 24, (addr >> 16) & 0xff,
                         (addr >> 8) & 0xff, addr & 0xff);
}

std::string MacAddr::ToString() const {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1],
                         bytes[2], bytes[3], bytes[4], bytes[5]);
}

}  // namespace iwarp::dataplane
