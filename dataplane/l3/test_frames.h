// Frame builders for the L3 tests. They write every field by hand with
// ByteWriter so that the tests do not depend on the code they check.
#ifndef IWARPD_DATAPLANE_L3_TEST_FRAMES_H_
#define IWARPD_DATAPLANE_L3_TEST_FRAMES_H_

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "common/checksum.h"
#include "dataplane/l3/mac.h"

namespace iwarp::dataplane::testing {

inline constexpr MacAddr kOurMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
inline constexpr MacAddr kPeerMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}};
inline constexpr uint32_t kOurIp = 0xc6120001;   // 198.18.0.1
inline constexpr uint32_t kPeerIp = 0xc6120002;  // 198.18.0.2

inline void PutMac(ByteWriter& w, const MacAddr& m) {
  w.Bytes(ByteSpan(m.bytes.data(), m.bytes.size()));
}

inline std::vector<uint8_t> ArpFrame(uint16_t op, const MacAddr& eth_dst,
                                     const MacAddr& sha, uint32_t spa,
                                     const MacAddr& tha, uint32_t tpa) {
  std::vector<uint8_t> f(42);
  ByteWriter w(f);
  PutMac(w, eth_dst);
  PutMac(w, sha);
  w.U16(0x0806);
  w.U16(1);
  w.U16(0x0800);
  w.U8(6);
  w.U8(4);
  w.U16(op);
  PutMac(w, sha);
  w.U32(spa);
  PutMac(w, tha);
  w.U32(tpa);
  return f;
}

struct Ipv4Fields {
  uint8_t version_ihl = 0x45;
  uint16_t total_length = 0;  // 0 = computed
  uint16_t id = 0x1234;
  uint16_t flags_frag = 0x4000;  // DF
  uint8_t ttl = 64;
  uint8_t protocol = 1;
  uint32_t src = kPeerIp;
  uint32_t dst = kOurIp;
  bool fix_checksum = true;
  uint16_t checksum = 0;  // used when !fix_checksum
};

// Ethernet + IPv4 (+ options of IHL) + `l4`.
inline std::vector<uint8_t> Ipv4Frame(const Ipv4Fields& ip, const std::vector<uint8_t>& l4,
                                      const MacAddr& eth_dst = kOurMac,
                                      const MacAddr& eth_src = kPeerMac) {
  const size_t ihl = (ip.version_ihl & 0x0f) * size_t{4};
  const size_t hdr = ihl < 20 ? 20 : ihl;
  std::vector<uint8_t> f(14 + hdr + l4.size());
  ByteWriter w(f);
  PutMac(w, eth_dst);
  PutMac(w, eth_src);
  w.U16(0x0800);
  w.U8(ip.version_ihl);
  w.U8(0);
  w.U16(ip.total_length ? ip.total_length : static_cast<uint16_t>(hdr + l4.size()));
  w.U16(ip.id);
  w.U16(ip.flags_frag);
  w.U8(ip.ttl);
  w.U8(ip.protocol);
  w.U16(0);
  w.U32(ip.src);
  w.U32(ip.dst);
  w.Zeros(hdr - 20);
  w.Bytes(l4);
  const uint16_t c = ip.fix_checksum ? InternetChecksum(ByteSpan(f).subspan(14, hdr)) : ip.checksum;
  StoreBe16(f.data() + 14 + 10, c);
  return f;
}

inline std::vector<uint8_t> IcmpEcho(uint8_t type, uint16_t ident, uint16_t seq,
                                     size_t payload_len, bool fix_checksum = true) {
  std::vector<uint8_t> m(8 + payload_len);
  ByteWriter w(m);
  w.U8(type);
  w.U8(0);
  w.U16(0);
  w.U16(ident);
  w.U16(seq);
  for (size_t i = 0; i < payload_len; ++i) w.U8(static_cast<uint8_t>(i * 7 + 3));
  if (fix_checksum) StoreBe16(m.data() + 2, InternetChecksum(m));
  return m;
}

}  // namespace iwarp::dataplane::testing

#endif  // IWARPD_DATAPLANE_L3_TEST_FRAMES_H_
