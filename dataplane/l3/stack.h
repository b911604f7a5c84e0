// The per-worker L2/L3 engine: Ethernet, ARP (RFC 826), IPv4 (RFC 791,
// RFC 1122) and ICMP echo (RFC 792) on byte spans, with no DPDK.
//
// Contract: one L3Stack per worker lcore, used only by that lcore (it is not
// thread-safe and needs no locks). It owns the worker's ARP cache and the
// queue of packets waiting for address resolution. The port table it is
// given is copied at construction and never changes. After construction no
// method allocates, blocks, logs or throws; every discarded frame is counted
// once in the worker's LcoreStats under its named drop reason.
#ifndef IWARPD_DATAPLANE_L3_STACK_H_
#define IWARPD_DATAPLANE_L3_STACK_H_

#include <cstdint>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/drop_reasons.h"
#include "dataplane/l3/arp.h"
#include "dataplane/l3/ipv4.h"
#include "dataplane/l3/mac.h"
#include "dataplane/l3/stats.h"

namespace iwarp::dataplane {

struct InterfaceAddress {
  uint32_t addr = 0;  // host order
  uint8_t prefix_len = 0;

  bool Contains(uint32_t ip) const {
    const uint32_t mask = prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - prefix_len);
    return (ip & mask) == (addr & mask);
  }
};

// One port as the L3 engine sees it.
struct L3Port {
  uint16_t port_id = 0;
  MacAddr mac;
  std::vector<InterfaceAddress> addrs;
  uint32_t gateway = 0;  // host order; 0 = none
  // IPv4 datagrams longer than this are dropped (ipv4_over_mtu) unless the
  // device reports them coalesced (RxOffload::coalesced); 0 = no limit.
  uint32_t mtu = 0;
};

// What the device reported about a received frame (its receive offload
// flags), in terms the engine understands. Default: nothing verified.
struct RxOffload {
  // The device verified the TCP checksum, or vouched for the data's
  // integrity and left the field unfilled (a peer's checksum or TSO offload
  // on a virtual link): the transport skips its software check.
  bool l4_checksum_ok = false;
  // The frame is several segments the device (or the peer's TSO) merged:
  // it may exceed the MTU.
  bool coalesced = false;
};

struct L3Options {
  uint32_t arp_cache_entries = 1024;
  uint32_t arp_timeout_s = 300;
  uint32_t arp_pending_packets = 64;  // per unresolved next hop
  uint32_t arp_retry_ms = 1000;
  // Hand TCP datagrams to our addresses to the caller (RxAction::kLocalTcp);
  // false drops them as ipv4_unknown_protocol.
  bool deliver_tcp = false;
  // Hand SCTP datagrams (IPv4 protocol 132) to our addresses to the caller
  // (RxAction::kLocalSctp); false drops them as ipv4_unknown_protocol.
  bool deliver_sctp = false;
  // RFC 862 echo: UDP datagrams to this port on our addresses are sent back
  // (for a packet generator's latency probes); 0 = off, and every UDP
  // datagram is dropped as ipv4_unknown_protocol.
  uint16_t udp_echo_port = 0;
};

// An opaque packet the caller owns (an mbuf in the data plane).
using PacketHandle = void*;

// What the engine needs from its environment. Implemented by the mbuf adapter
// in the data plane and by fakes in tests. Called only from the owning lcore.
class L3Sink {
 public:
  virtual ~L3Sink() = default;
  // Transmits a frame the engine built (an ARP request) on `port`. The
  // implementation copies it; if it has no buffer it counts no_mbuf.
  virtual void SendFrame(uint16_t port, ByteSpan frame) = 0;
  // A queued packet's next hop resolved: write `src`/`dst` into its Ethernet
  // header and transmit it on `port`. Ownership passes back to the sink.
  virtual void TransmitResolved(PacketHandle pkt, uint16_t port, const MacAddr& src,
                                const MacAddr& dst) = 0;
  // Frees a packet the engine dropped (the drop is already counted).
  virtual void FreePacket(PacketHandle pkt) = 0;
  // The engine learned or refreshed a neighbour from an ARP packet; the data
  // plane tells the other workers (their ApplyNeighbor).
  virtual void NeighborLearned(uint32_t ip, uint16_t port, const MacAddr& mac) = 0;
};

struct RxAction {
  enum class Kind : uint8_t {
    kDrop,      // counted under `reason`; the caller frees the frame
    kTransmit,  // rewritten in place: send tx_length bytes back out the same port
    kConsumed,  // fully handled (e.g. an ARP reply); the caller frees the frame
    // A TCP segment to one of our addresses (deliver_tcp): the segment is
    // frame[l4_offset, l4_offset + l4_length); IPv4 is validated. The caller
    // passes it to its TCP stack and frees the frame.
    kLocalTcp,
    // An SCTP packet (protocol 132) to one of our addresses (deliver_sctp),
    // laid out as for kLocalTcp. The caller hands it to its SCTP endpoint.
    kLocalSctp,
  };
  Kind kind = Kind::kDrop;
  DropReason reason = DropReason::kNone;
  uint16_t tx_length = 0;
  uint16_t l4_offset = 0;   // kLocalTcp, kLocalSctp
  uint16_t l4_length = 0;   // kLocalTcp, kLocalSctp
  uint32_t src_ip = 0;      // kLocalTcp, kLocalSctp; host order
  uint32_t dst_ip = 0;      // kLocalTcp, kLocalSctp; host order
  // kLocalTcp: the device verified the TCP checksum (RxOffload).
  bool l4_checksum_ok = false;
};

struct NextHop {
  uint16_t port = 0;
  MacAddr src_mac;
  MacAddr dst_mac;
  uint32_t src_ip = 0;
};

enum class ResolveResult : uint8_t {
  kResolved,  // *next_hop filled in; the caller still owns the packet
  kQueued,    // the engine owns the packet until TransmitResolved/FreePacket
  kDropped,   // freed through FreePacket and counted
};

class L3Stack {
 public:
  // RFC 1122 2.3.2.1: requests for one address at most once per retry_ms;
  // queued packets are dropped (arp_unresolved) after this many requests went
  // unanswered for retry_ms each.
  static constexpr uint32_t kArpMaxTries = 3;
  // Next hops that may be unresolved at the same time, per worker.
  static constexpr size_t kMaxPendingTargets = 16;

  // Start-up only: allocates the ARP cache and the pending queues.
  L3Stack(std::span<const L3Port> ports, const L3Options& options,
          LcoreStats* stats, L3Sink* sink);

  L3Stack(const L3Stack&) = delete;
  L3Stack& operator=(const L3Stack&) = delete;

  // Handles one received Ethernet frame (the whole frame, which the engine may
  // rewrite in place).
  // `offload` is what the device said about it; a coalesced frame is
  // counted (rx_coalesced) when delivered.
  RxAction HandleFrame(uint16_t port, MutableByteSpan frame, uint64_t now_ms,
                       RxOffload offload = {});

  // Resolves the link-layer next hop for a datagram to `dst` (host order).
  // Without a cached entry the packet joins the bounded queue of its next hop
  // and an ARP request goes out (arp_pending_overflow when the queue or the
  // table of next hops is full, ipv4_no_route when no interface or gateway
  // covers `dst`).
  ResolveResult Resolve(uint32_t dst, PacketHandle pkt, uint64_t now_ms, NextHop* next_hop);

  // Retransmits ARP requests and expires pending queues. Call at least every
  // few milliseconds.
  void Tick(uint64_t now_ms);

  // A neighbour another worker learned: cache it and release packets waiting
  // for it.
  void ApplyNeighbor(uint32_t ip, uint16_t port, const MacAddr& mac, uint64_t now_ms);

  const ArpCache& arp_cache() const { return arp_cache_; }
  size_t pending_targets() const;
  size_t pending_packets(uint32_t next_hop) const;

 private:
  struct PendingTarget {
    uint32_t ip = 0;  // next hop; 0 = free slot
    uint32_t src_ip = 0;
    uint16_t port = 0;
    uint32_t tries = 0;
    uint64_t next_retry_ms = 0;
    uint32_t count = 0;  // packets queued in this slot's arp_pending_packets cells
  };

  const L3Port* FindPort(uint16_t port_id) const;
  static bool IsOurAddress(const L3Port& port, uint32_t ip);
  bool IsAnyOurAddress(uint32_t ip) const;
  bool Route(uint32_t dst, const L3Port** port, uint32_t* next_hop, uint32_t* src_ip) const;
  RxAction Drop(DropReason r);
  RxAction HandleArp(const L3Port& port, MutableByteSpan frame, uint64_t now_ms);
  RxAction HandleIpv4(const L3Port& port, MutableByteSpan frame, RxOffload offload);
  RxAction HandleUdp(const L3Port& port, MutableByteSpan frame, const Ipv4Header& h);
  PendingTarget* FindPending(uint32_t ip);
  void SendArpRequest(const PendingTarget& t);
  void FlushPending(uint32_t ip, const MacAddr& mac);
  void DropPending(PendingTarget* t, DropReason r);

  std::vector<L3Port> ports_;
  L3Options options_;
  LcoreStats* stats_;
  L3Sink* sink_;
  ArpCache arp_cache_;
  std::vector<PendingTarget> pending_;
  std::vector<PacketHandle> pending_pkts_;  // kMaxPendingTargets rings of arp_pending_packets
};

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_L3_STACK_H_
