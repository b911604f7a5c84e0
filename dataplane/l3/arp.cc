#include "dataplane/l3/arp.h"

#include <algorithm>

namespace iwarp::dataplane {

size_t BuildArpRequest(MutableByteSpan out, const MacAddr& src_mac,
                       uint32_t src_ip, uint32_t target_ip) {
  if (out.size() < kArpFrameLen) return 0;
  uint8_t* f = out.data();
  MacAddr::Broadcast().Store(f + kEthDstOffset);
  src_mac.Store(f + kEthSrcOffset);
  StoreBe16(f + kEthTypeOffset, kEtherTypeArp);
  uint8_t* a = f + kEthHeaderLen;
  StoreBe16(a + kArpHtypeOffset, kArpHtypeEthernet);
  StoreBe16(a + kArpPtypeOffset, kEtherTypeIpv4);
  a[kArpHlenOffset] = 6;
  a[kArpPlenOffset] = 4;
  StoreBe16(a + kArpOperOffset, kArpOpRequest);
  src_mac.Store(a + kArpShaOffset);
  StoreBe32(a + kArpSpaOffset, src_ip);
  MacAddr{}.Store(a + kArpThaOffset);  // RFC 826: target hardware address unknown
  StoreBe32(a + kArpTpaOffset, target_ip);
  return kArpFrameLen;
}

ArpCache::ArpCache(uint32_t capacity, uint64_t lifetime_ms)
    : lifetime_ms_(lifetime_ms) {
  const size_t slots = std::max<size_t>(kWays, (capacity + kWays - 1) / kWays * kWays);
  slots_.resize(slots);
  sets_ = slots / kWays;
}

size_t ArpCache::SetOf(uint32_t ip) const {
  // Fibonacci hashing: the high bits of the product mix every address bit.
  const uint64_t h = (uint64_t{ip} * 0x9e3779b97f4a7c15ULL) >> 32;
  return static_cast<size_t>(h % sets_);
}

ArpEntry* ArpCache::Find(uint32_t ip) {
  ArpEntry* set = &slots_[SetOf(ip) * kWays];
  for (size_t w = 0; w < kWays; ++w) {
    if (set[w].ip == ip) return &set[w];
  }
  return nullptr;
}

const ArpEntry* ArpCache::Lookup(uint32_t ip, uint64_t now_ms) const {
  if (ip == 0) return nullptr;
  const ArpEntry* set = &slots_[SetOf(ip) * kWays];
  for (size_t w = 0; w < kWays; ++w) {
    if (set[w].ip == ip) return set[w].expires_ms > now_ms ? &set[w] : nullptr;
  }
  return nullptr;
}

bool ArpCache::Refresh(uint32_t ip, const MacAddr& mac, uint16_t port, uint64_t now_ms) {
  if (ip == 0) return false;
  ArpEntry* e = Find(ip);
  if (e == nullptr || e->expires_ms <= now_ms) return false;
  e->mac = mac;
  e->port = port;
  e->expires_ms = now_ms + lifetime_ms_;
  return true;
}

void ArpCache::Insert(uint32_t ip, const MacAddr& mac, uint16_t port, uint64_t now_ms) {
  if (ip == 0) return;
  ArpEntry* e = Find(ip);
  if (e == nullptr) {
    // Victim order: a free slot, else an expired one, else the one that
    // expires first.
    auto rank = [now_ms](const ArpEntry& s) -> uint64_t {
      if (s.ip == 0) return 0;
      if (s.expires_ms <= now_ms) return 1;
      return s.expires_ms;  // > now_ms >= 0, so >= 1; ties with "expired" are harmless
    };
    ArpEntry* set = &slots_[SetOf(ip) * kWays];
    e = &set[0];
    for (size_t w = 1; w < kWays; ++w) {
      if (rank(set[w]) < rank(*e)) e = &set[w];
    }
  }
  e->ip = ip;
  e->mac = mac;
  e->port = port;
  e->expires_ms = now_ms + lifetime_ms_;
}

size_t ArpCache::CountLive(uint64_t now_ms) const {
  return static_cast<size_t>(std::count_if(
      slots_.begin(), slots_.end(),
      [now_ms](const ArpEntry& e) { return e.ip != 0 && e.expires_ms > now_ms; }));
}

}  // namespace iwarp::dataplane
