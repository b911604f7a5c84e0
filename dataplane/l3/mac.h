// Ethernet MAC addresses and the Ethernet II header layout (IEEE 802.3).
//
// A MacAddr is six bytes in wire order; loads and stores go through byte
// pointers the caller has bounds-checked.
#ifndef IWARPD_DATAPLANE_L3_MAC_H_
#define IWARPD_DATAPLANE_L3_MAC_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace iwarp::dataplane {

struct MacAddr {
  std::array<uint8_t, 6> bytes{};

  static MacAddr Load(const uint8_t* p) {
    MacAddr m;
    std::memcpy(m.bytes.data(), p, 6);
    return m;
  }
  void Store(uint8_t* p) const { std::memcpy(p, bytes.data(), 6); }

  bool IsBroadcast() const {
    for (uint8_t b : bytes) {
      if (b != 0xff) return false;
    }
    return true;
  }
  // Group bit (I/G) set: multicast or broadcast.
  bool IsMulticast() const { return (bytes[0] & 0x01) != 0; }
  bool IsZero() const {
    for (uint8_t b : bytes) {
      if (b != 0) return false;
    }
    return true;
  }
  bool operator==(const MacAddr&) const = default;

  static MacAddr Broadcast() {
    MacAddr m;
    m.bytes.fill(0xff);
    return m;
  }
  // "aa:bb:cc:dd:ee:ff"; control path only (allocates).
  std::string ToString() const;
};

// Ethernet II header: destination, source, EtherType.
inline constexpr size_t kEthDstOffset = 0;
inline constexpr size_t kEthSrcOffset = 6;
inline constexpr size_t kEthTypeOffset = 12;
inline constexpr size_t kEthHeaderLen = 14;

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_L3_MAC_H_
