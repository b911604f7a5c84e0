// ARP for IPv4 over Ethernet (RFC 826): packet layout, frame builder and the
// bounded neighbour cache. No DPDK.
#ifndef IWARPD_DATAPLANE_L3_ARP_H_
#define IWARPD_DATAPLANE_L3_ARP_H_

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "dataplane/l3/mac.h"

namespace iwarp::dataplane {

// RFC 826 "Packet format" for hardware Ethernet / protocol IPv4, offsets
// relative to the start of the ARP packet.
inline constexpr size_t kArpHtypeOffset = 0;
inline constexpr size_t kArpPtypeOffset = 2;
inline constexpr size_t kArpHlenOffset = 4;
inline constexpr size_t kArpPlenOffset = 5;
inline constexpr size_t kArpOperOffset = 6;
inline constexpr size_t kArpShaOffset = 8;
inline constexpr size_t kArpSpaOffset = 14;
inline constexpr size_t kArpThaOffset = 18;
inline constexpr size_t kArpTpaOffset = 24;
inline constexpr size_t kArpPacketLen = 28;

inline constexpr uint16_t kArpHtypeEthernet = 1;
inline constexpr uint16_t kArpOpRequest = 1;
inline constexpr uint16_t kArpOpReply = 2;

inline constexpr size_t kArpFrameLen = kEthHeaderLen + kArpPacketLen;

// Writes a broadcast ARP request for `target_ip` into `out` (at least
// kArpFrameLen bytes). Returns the frame length, or 0 if `out` is too small.
size_t BuildArpRequest(MutableByteSpan out, const MacAddr& src_mac,
                       uint32_t src_ip, uint32_t target_ip);

struct ArpEntry {
  uint32_t ip = 0;  // host order; 0 marks a free slot (0.0.0.0 is never learned)
  uint16_t port = 0;
  MacAddr mac;
  uint64_t expires_ms = 0;
};

// Bounded IPv4 -> MAC cache with aging (arp.timeout_s).
//
// Contract: one cache per worker lcore, used only by that lcore. Storage is
// allocated once by the constructor (start-up); lookups and updates never
// allocate. The cache is 4-way set associative with exactly
// RoundUp(capacity, 4) slots: a new address replaces a free or expired slot of
// its set, else the slot of that set that expires first. An entry is usable
// until its expiry time; after that it is a miss and the next resolution asks
// again (no refresh probing).
class ArpCache {
 public:
  static constexpr size_t kWays = 4;

  ArpCache(uint32_t capacity, uint64_t lifetime_ms);

  // The live entry for `ip`, or nullptr when absent or expired.
  const ArpEntry* Lookup(uint32_t ip, uint64_t now_ms) const;

  // RFC 826 merge step: if a live entry for `ip` exists, updates its MAC and
  // port, restarts its lifetime and returns true; otherwise returns false.
  bool Refresh(uint32_t ip, const MacAddr& mac, uint16_t port, uint64_t now_ms);

  // Inserts or refreshes `ip` (evicting as described above).
  void Insert(uint32_t ip, const MacAddr& mac, uint16_t port, uint64_t now_ms);

  size_t capacity() const { return slots_.size(); }
  // Live entries; walks the whole table (control path and tests).
  size_t CountLive(uint64_t now_ms) const;

 private:
  size_t SetOf(uint32_t ip) const;
  ArpEntry* Find(uint32_t ip);

  std::vector<ArpEntry> slots_;
  size_t sets_ = 1;
  uint64_t lifetime_ms_ = 0;
};

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_L3_ARP_H_
