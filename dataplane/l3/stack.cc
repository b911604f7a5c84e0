#include "dataplane/l3/stack.h"

#include <algorithm>
#include <array>

#include "common/checksum.h"
#include "dataplane/l3/ipv4.h"

namespace iwarp::dataplane {

L3Stack::L3Stack(std::span<const L3Port> ports, const L3Options& options,
                 LcoreStats* stats, L3Sink* sink)
    : ports_(ports.begin(), ports.end()),
      options_(options),
      stats_(stats),
      sink_(sink),
      arp_cache_(options.arp_cache_entries, uint64_t{options.arp_timeout_s} * 1000),
      pending_(kMaxPendingTargets),
      pending_pkts_(kMaxPendingTargets * std::max<uint32_t>(1, options.arp_pending_packets)) {
  options_.arp_pending_packets = std::max<uint32_t>(1, options_.arp_pending_packets);
}

const L3Port* L3Stack::FindPort(uint16_t port_id) const {
  for (const L3Port& p : ports_) {
    if (p.port_id == port_id) return &p;
  }
  return nullptr;
}

bool L3Stack::IsOurAddress(const L3Port& port, uint32_t ip) {
  for (const InterfaceAddress& a : port.addrs) {
    if (a.addr == ip) return true;
  }
  return false;
}

bool L3Stack::IsAnyOurAddress(uint32_t ip) const {
  for (const L3Port& p : ports_) {
    if (IsOurAddress(p, ip)) return true;
  }
  return false;
}

RxAction L3Stack::Drop(DropReason r) {
  stats_->Drop(r);
  return RxAction{RxAction::Kind::kDrop, r, 0};
}

RxAction L3Stack::HandleFrame(uint16_t port_id, MutableByteSpan frame, uint64_t now_ms,
                              RxOffload offload) {
  if (frame.size() < kEthHeaderLen) return Drop(DropReason::kEthTruncated);
  const L3Port* port = FindPort(port_id);
  const MacAddr dst = MacAddr::Load(frame.data() + kEthDstOffset);
  if (port == nullptr || (dst != port->mac && !dst.IsBroadcast())) {
    return Drop(DropReason::kEthNotForUs);
  }
  // IEEE 802.3: the group bit is never set in a source address.
  if (MacAddr::Load(frame.data() + kEthSrcOffset).IsMulticast()) {
    return Drop(DropReason::kEthBadSource);
  }
  switch (LoadBe16(frame.data() + kEthTypeOffset)) {
    case kEtherTypeArp:
      return HandleArp(*port, frame, now_ms);
    case kEtherTypeIpv4:
      return HandleIpv4(*port, frame, offload);
    default:
      return Drop(DropReason::kEthUnknownType);
  }
}

// RFC 826 "Packet Reception".
RxAction L3Stack::HandleArp(const L3Port& port, MutableByteSpan frame, uint64_t now_ms) {
  if (frame.size() < kArpFrameLen) return Drop(DropReason::kArpTruncated);
  uint8_t* a = frame.data() + kEthHeaderLen;
  if (LoadBe16(a + kArpHtypeOffset) != kArpHtypeEthernet ||
      LoadBe16(a + kArpPtypeOffset) != kEtherTypeIpv4 || a[kArpHlenOffset] != 6 ||
      a[kArpPlenOffset] != 4) {
    return Drop(DropReason::kArpUnsupported);
  }
  const uint16_t op = LoadBe16(a + kArpOperOffset);
  if (op == kArpOpRequest) {
    stats_->arp_requests_in.Add();
  } else if (op == kArpOpReply) {
    stats_->arp_replies_in.Add();
  } else {
    return Drop(DropReason::kArpBadOpcode);
  }
  const MacAddr sha = MacAddr::Load(a + kArpShaOffset);
  const uint32_t spa = LoadBe32(a + kArpSpaOffset);
  const uint32_t tpa = LoadBe32(a + kArpTpaOffset);
  // A sender address of 0.0.0.0 is an RFC 5227 probe: answered, not learned.
  if (sha.IsMulticast() || sha.IsZero() || IsAnyOurAddress(spa) ||
      (spa != 0 && IsBadSourceAddress(spa))) {
    return Drop(DropReason::kArpBadSender);
  }
  const bool target_ours = IsOurAddress(port, tpa);
  // Merge step: an existing entry is updated whoever the target is; a new
  // one is added only when we are the target.
  bool learned = spa != 0 && arp_cache_.Refresh(spa, sha, port.port_id, now_ms);
  if (target_ours && spa != 0 && !learned) {
    arp_cache_.Insert(spa, sha, port.port_id, now_ms);
    learned = true;
  }
  if (learned) {
    sink_->NeighborLearned(spa, port.port_id, sha);
    FlushPending(spa, sha);
  }
  if (!target_ours) {
    if (learned) return RxAction{RxAction::Kind::kConsumed, DropReason::kNone, 0};
    return Drop(DropReason::kArpNotForUs);
  }
  if (op == kArpOpReply) return RxAction{RxAction::Kind::kConsumed, DropReason::kNone, 0};

  // Swap the hardware and protocol fields, put in our address, set the
  // opcode to reply and send it to the requester.
  StoreBe16(a + kArpOperOffset, kArpOpReply);
  sha.Store(a + kArpThaOffset);
  StoreBe32(a + kArpTpaOffset, spa);
  port.mac.Store(a + kArpShaOffset);
  StoreBe32(a + kArpSpaOffset, tpa);
  sha.Store(frame.data() + kEthDstOffset);
  port.mac.Store(frame.data() + kEthSrcOffset);
  stats_->arp_replies_out.Add();
  return RxAction{RxAction::Kind::kTransmit, DropReason::kNone,
                  static_cast<uint16_t>(kArpFrameLen)};
}

RxAction L3Stack::HandleIpv4(const L3Port& port, MutableByteSpan frame, RxOffload offload) {
  MutableByteSpan ip = frame.subspan(kEthHeaderLen);
  Ipv4Header h;
  if (DropReason r = ParseIpv4(ip, &h); r != DropReason::kNone) return Drop(r);
  // RFC 1122 3.2.1.3: only datagrams to one of our addresses are accepted;
  // broadcast and multicast destinations are not served here.
  if (!IsOurAddress(port, h.dst)) return Drop(DropReason::kIpv4NotForUs);
  if (IsBadSourceAddress(h.src) || IsAnyOurAddress(h.src)) {
    return Drop(DropReason::kIpv4BadSource);
  }
  // RFC 1122 3.2.1.7: a host MUST NOT discard a datagram addressed to it
  // because its TTL is below 2, so TTL is not checked on local delivery.
  const bool tcp = h.protocol == kIpProtoTcp && options_.deliver_tcp;
  const bool sctp = h.protocol == kIpProtoSctp && options_.deliver_sctp;
  // A datagram beyond the MTU arrives only as the device's coalesced frame
  // (the peer's TSO, LRO); the segments it stands for each fitted the MTU.
  if (port.mtu != 0 && h.total_len > port.mtu && !offload.coalesced) {
    return Drop(DropReason::kIpv4OverMtu);
  }
  if (tcp || sctp) {
    if (offload.coalesced) stats_->rx_coalesced.Add();
    RxAction a;
    a.kind = tcp ? RxAction::Kind::kLocalTcp : RxAction::Kind::kLocalSctp;
    a.l4_offset = static_cast<uint16_t>(kEthHeaderLen + h.header_len);
    a.l4_length = static_cast<uint16_t>(h.total_len - h.header_len);
    a.src_ip = h.src;
    a.dst_ip = h.dst;
    a.l4_checksum_ok = tcp && offload.l4_checksum_ok;
    return a;
  }
  if (h.protocol == kIpProtoUdp && options_.udp_echo_port != 0) {
    return HandleUdp(port, frame, h);
  }
  if (h.protocol != kIpProtoIcmp) {
    // UDP without the echo service (and TCP / SCTP with their delivery off)
    // has no engine here.
    return Drop(DropReason::kIpv4UnknownProtocol);
  }

  ByteSpan icmp = ByteSpan(ip).subspan(h.header_len, h.total_len - h.header_len);
  if (icmp.size() < kIcmpHeaderLen) return Drop(DropReason::kIcmpTruncated);
  // RFC 792: the checksum covers the whole ICMP message.
  if (InternetChecksum(icmp) != 0) return Drop(DropReason::kIcmpBadChecksum);
  if (icmp[kIcmpTypeOffset] != kIcmpEchoRequest) return Drop(DropReason::kIcmpUnhandledType);
  stats_->icmp_echo_requests_in.Add();

  MakeEchoReplyInPlace(ip.first(h.total_len), h);
  const MacAddr requester = MacAddr::Load(frame.data() + kEthSrcOffset);
  requester.Store(frame.data() + kEthDstOffset);
  port.mac.Store(frame.data() + kEthSrcOffset);
  stats_->icmp_echo_replies_out.Add();
  return RxAction{RxAction::Kind::kTransmit, DropReason::kNone,
                  static_cast<uint16_t>(kEthHeaderLen + h.total_len)};
}

RxAction L3Stack::HandleUdp(const L3Port& port, MutableByteSpan frame, const Ipv4Header& h) {
  MutableByteSpan ip = frame.subspan(kEthHeaderLen, h.total_len);
  ByteSpan udp = ByteSpan(ip).subspan(h.header_len);
  if (udp.size() < kUdpHeaderLen) return Drop(DropReason::kUdpTruncated);
  // RFC 768: the length covers header and data; the datagram may not be
  // shorter than it says (link padding after it is allowed).
  const uint16_t len = LoadBe16(udp.data() + kUdpLengthOffset);
  if (len < kUdpHeaderLen || len > udp.size()) return Drop(DropReason::kUdpTruncated);
  udp = udp.first(len);
  if (LoadBe16(udp.data() + kUdpChecksumOffset) != 0) {
    // Pseudo-header (RFC 768): source, destination, zero + protocol, length.
    uint8_t pseudo[12];
    StoreBe32(pseudo, h.src);
    StoreBe32(pseudo + 4, h.dst);
    pseudo[8] = 0;
    pseudo[9] = kIpProtoUdp;
    StoreBe16(pseudo + 10, len);
    if (ChecksumFold(ChecksumAdd(ChecksumAdd(0, ByteSpan(pseudo, sizeof(pseudo))), udp)) != 0) {
      return Drop(DropReason::kUdpBadChecksum);
    }
  }
  if (LoadBe16(udp.data() + kUdpDstPortOffset) != options_.udp_echo_port) {
    return Drop(DropReason::kUdpNoService);
  }
  MakeUdpEchoInPlace(ip, h);
  const MacAddr requester = MacAddr::Load(frame.data() + kEthSrcOffset);
  requester.Store(frame.data() + kEthDstOffset);
  port.mac.Store(frame.data() + kEthSrcOffset);
  stats_->udp_echoes_out.Add();
  return RxAction{RxAction::Kind::kTransmit, DropReason::kNone,
                  static_cast<uint16_t>(kEthHeaderLen + h.total_len)};
}

bool L3Stack::Route(uint32_t dst, const L3Port** port, uint32_t* next_hop,
                    uint32_t* src_ip) const {
  for (const L3Port& p : ports_) {
    for (const InterfaceAddress& a : p.addrs) {
      if (a.Contains(dst)) {
        *port = &p;
        *next_hop = dst;
        *src_ip = a.addr;
        return true;
      }
    }
  }
  for (const L3Port& p : ports_) {
    if (p.gateway == 0) continue;
    for (const InterfaceAddress& a : p.addrs) {
      if (a.Contains(p.gateway)) {
        *port = &p;
        *next_hop = p.gateway;
        *src_ip = a.addr;
        return true;
      }
    }
  }
  return false;
}

L3Stack::PendingTarget* L3Stack::FindPending(uint32_t ip) {
  for (PendingTarget& t : pending_) {
    if (t.ip == ip) return &t;
  }
  return nullptr;
}

size_t L3Stack::pending_targets() const {
  return static_cast<size_t>(std::count_if(pending_.begin(), pending_.end(),
                                           [](const PendingTarget& t) { return t.ip != 0; }));
}

size_t L3Stack::pending_packets(uint32_t next_hop) const {
  for (const PendingTarget& t : pending_) {
    if (t.ip == next_hop && next_hop != 0) return t.count;
  }
  return 0;
}

ResolveResult L3Stack::Resolve(uint32_t dst, PacketHandle pkt, uint64_t now_ms,
                               NextHop* next_hop) {
  const L3Port* port = nullptr;
  uint32_t hop = 0;
  uint32_t src_ip = 0;
  if (!Route(dst, &port, &hop, &src_ip)) {
    stats_->Drop(DropReason::kIpv4NoRoute);
    sink_->FreePacket(pkt);
    return ResolveResult::kDropped;
  }
  if (const ArpEntry* e = arp_cache_.Lookup(hop, now_ms); e != nullptr) {
    next_hop->port = port->port_id;
    next_hop->src_mac = port->mac;
    next_hop->dst_mac = e->mac;
    next_hop->src_ip = src_ip;
    return ResolveResult::kResolved;
  }
  const uint32_t cap = options_.arp_pending_packets;
  PendingTarget* t = FindPending(hop);
  const bool new_target = t == nullptr;
  if (new_target) t = FindPending(0);
  if (t == nullptr || t->count == cap) {
    stats_->Drop(DropReason::kArpPendingOverflow);
    sink_->FreePacket(pkt);
    return ResolveResult::kDropped;
  }
  const size_t slot = static_cast<size_t>(t - pending_.data());
  if (new_target) {
    *t = PendingTarget{hop, src_ip, port->port_id, 0, 0, 0};
  }
  pending_pkts_[slot * cap + t->count] = pkt;
  ++t->count;
  if (new_target) {
    SendArpRequest(*t);
    t->tries = 1;
    t->next_retry_ms = now_ms + options_.arp_retry_ms;
  }
  return ResolveResult::kQueued;
}

void L3Stack::SendArpRequest(const PendingTarget& t) {
  const L3Port* port = FindPort(t.port);
  if (port == nullptr) return;
  std::array<uint8_t, kArpFrameLen> frame;
  const size_t n = BuildArpRequest(frame, port->mac, t.src_ip, t.ip);
  sink_->SendFrame(t.port, ByteSpan(frame.data(), n));
  stats_->arp_requests_out.Add();
}

void L3Stack::FlushPending(uint32_t ip, const MacAddr& mac) {
  PendingTarget* t = FindPending(ip);
  if (t == nullptr || ip == 0) return;
  const L3Port* port = FindPort(t->port);
  const size_t slot = static_cast<size_t>(t - pending_.data());
  const uint32_t cap = options_.arp_pending_packets;
  for (uint32_t i = 0; i < t->count; ++i) {
    PacketHandle pkt = pending_pkts_[slot * cap + i];
    sink_->TransmitResolved(pkt, t->port, port->mac, mac);
  }
  *t = PendingTarget{};
}

void L3Stack::DropPending(PendingTarget* t, DropReason r) {
  const size_t slot = static_cast<size_t>(t - pending_.data());
  const uint32_t cap = options_.arp_pending_packets;
  for (uint32_t i = 0; i < t->count; ++i) {
    stats_->Drop(r);
    sink_->FreePacket(pending_pkts_[slot * cap + i]);
  }
  *t = PendingTarget{};
}

void L3Stack::Tick(uint64_t now_ms) {
  for (PendingTarget& t : pending_) {
    if (t.ip == 0 || now_ms < t.next_retry_ms) continue;
    if (t.tries >= kArpMaxTries) {
      DropPending(&t, DropReason::kArpUnresolved);
      continue;
    }
    SendArpRequest(t);
    ++t.tries;
    t.next_retry_ms = now_ms + options_.arp_retry_ms;
  }
}

void L3Stack::ApplyNeighbor(uint32_t ip, uint16_t port, const MacAddr& mac, uint64_t now_ms) {
  arp_cache_.Insert(ip, mac, port, now_ms);
  FlushPending(ip, mac);
}

}  // namespace iwarp::dataplane
