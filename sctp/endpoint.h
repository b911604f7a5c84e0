// SctpEndpoint: the process's one usrsctp stack seen as an IPv4 endpoint.
//
// It owns the UsrsctpHost and gives every remote IPv4 address it talks to an
// AF_CONN link cookie of its own, so users open RFC 5043 associations by
// remote address and SCTP port without knowing about AF_CONN cookies, IP
// headers or DPDK:
//   - inbound: the IPv4 layer strips the IP header and calls
//     Input(src_ip, sctp_packet); the packet goes to usrsctp on the cookie of
//     `src_ip` (a cookie is made on first contact while a listener exists,
//     otherwise the packet is dropped and counted);
//   - outbound: usrsctp's packets wait in the host's bounded queue; Drain()
//     hands each to a DatagramSink with the remote IPv4 address of its
//     cookie, and the IPv4 layer adds the header (protocol 132);
//   - Poll(now_ms) advances usrsctp's timers, accepts completed passive
//     associations on every listener, and calls Service() of every
//     association it tracks, which raises their DdpLlpEvents. Only usrsctp
//     input (Input) and timers make anything readable, so a Poll after
//     neither (same millisecond, no packet) skips the listeners and
//     associations: an idle busy-polling loop makes no usrsctp calls;
//   - send batches (EndpointConfig::bundle_sends): sends made between two
//     Drain() calls leave bundled; Drain() first flushes every association
//     (DdpAssociation::Flush), then hands out the packets.
//
// Cookies (AF_CONN, INTEROP.md SCTP section): an association to remote
// address R binds and connects with R's cookie; listeners bind the wildcard
// (no cookie), so an INIT arriving on any cookie is accepted. At most
// max_peers cookies exist at once; a remote address that has had no tracked
// association and no packet in either direction for peer_idle_ms gives its
// cookie back (usrsctp keeps no association on it by then: every association
// on a cookie is tracked from its COOKIE ECHO or INIT on, and a dropped
// handle aborts its association), so a node serving many clients over time
// does not run out of peers.
//
// Threading: usrsctp has one global stack per process, so at most one
// SctpEndpoint exists (Create() fails otherwise). Every call, and every call
// into an association or listener it made, comes from the one thread that
// owns it (worker 0 in iwarpd). Event handlers run inside Poll().
//
// Lifetime: SctpAssociation and SctpListener handles must be destroyed
// before the endpoint, and never from inside an event of the same
// association (destroy it after Poll() returns). Destroying an association
// that is still alive aborts it (SCTP ABORT).
//
// Fast path: Input, Poll and Drain use only preallocated tables (usrsctp
// itself allocates mbufs internally). The first packet from a new remote
// address registers its cookie with usrsctp (a control-path event, once per
// peer, bounded by max_peers).
#ifndef IWARPD_SCTP_ENDPOINT_H_
#define IWARPD_SCTP_ENDPOINT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/bytes.h"
#include "sctp/ddp_session.h"
#include "sctp/sctp_tunables.h"
#include "sctp/session_engine.h"
#include "sctp/usrsctp_host.h"

namespace iwarp::sctp {

// X(enum_name, "wire_name", "description")
#define IWARP_SCTP_ENDPOINT_COUNTERS(X)                                                          \
  X(kRxNoPeer, "sctp_rx_no_peer",                                                                 \
    "drop: SCTP packet from an address with no association while nothing listens")               \
  X(kRxPeerTableFull, "sctp_rx_peer_table_full",                                                  \
    "drop: SCTP packet from a new address with the peer table (max_peers) full")                 \
  X(kRxNewPeerBadCrc, "sctp_rx_new_peer_bad_crc",                                                \
    "drop: first packet from a new address failed the CRC32c (no link made)")                    \
  X(kPeersAdded, "sctp_peers_added", "remote addresses given an AF_CONN link")                    \
  X(kPeersReclaimed, "sctp_peers_reclaimed",                                                     \
    "AF_CONN links given back: no association and no packet for peer_idle_ms")                   \
  X(kConnects, "sctp_connects", "associations opened actively")                                  \
  X(kAccepts, "sctp_accepts", "associations accepted by a listener")                             \
  X(kAcceptOverflow, "sctp_accept_overflow",                                                      \
    "associations aborted at accept: max_associations reached")                                  \
  X(kTxUnknownConn, "sctp_tx_unknown_conn", "drop: outbound packet on a cookie with no peer")

enum class EndpointCounter : uint8_t {
#define IWARP_SCTP_X(e, n, d) e,
  IWARP_SCTP_ENDPOINT_COUNTERS(IWARP_SCTP_X)
#undef IWARP_SCTP_X
      kCount
};
std::string_view EndpointCounterName(EndpointCounter c);

struct EndpointConfig {
  // Our IPv4 address (host byte order); informational (telemetry, logs).
  uint32_t local_ip = 0;
  // usrsctp host: max_packet must be >= association.path_mtu - 20.
  HostConfig host;
  // Default socket options of associations and listeners.
  AssociationConfig association;
  // Remote addresses that can have a link cookie at once.
  uint32_t max_peers = 64;
  // A remote address with no tracked association and no packet either way
  // for this long gives its cookie back (0: cookies are kept until the
  // endpoint goes). Longer than the SCTP handshake can take (RTO.Max).
  uint32_t peer_idle_ms = 120'000;
  // Associations tracked (serviced by Poll) at once, active plus passive.
  uint32_t max_associations = 256;
  // Listeners at once.
  uint32_t max_listeners = 8;
  // AssociationConfig::bundle_sends for every association and listener of
  // the endpoint (overrides the value in `association` and in per-call
  // configs): chunks sent between two Drain() calls share packets.
  bool bundle_sends = true;
};

// Copies the tunables (sctp/sctp_tunables.h: the daemon's sctp: keys) into
// the EndpointConfig members their table rows name; the members no tunable
// names (local_ip, host.max_packet, association.path_mtu, the reorder store,
// max_listeners, ...) are left as they are.
inline void ApplyTunables(const SctpTunables& t, EndpointConfig* config) {
#define IWARPD_SCTP_APPLY(kind, type, name, def, lo, hi, member) config->member = t.name;
  IWARPD_SCTP_TUNABLES(IWARPD_SCTP_APPLY)
#undef IWARPD_SCTP_APPLY
}

// Where Drain() delivers packets: one SCTP packet (common header + chunks,
// CRC32c filled in) for the IPv4 address `dst_ip` (host byte order). The span
// is valid only during the call.
class DatagramSink {
 public:
  virtual ~DatagramSink() = default;
  virtual void Transmit(uint32_t dst_ip, ByteSpan sctp_packet) = 0;
};

class SctpEndpoint;

// One association the endpoint tracks: owns the DdpAssociation, forwards its
// events to the user's DdpLlpEvents (set at Connect, or with set_events()
// for accepted ones; with none set, events are ignored).
class SctpAssociation final : public DdpLlpEvents {
 public:
  ~SctpAssociation() override;  // aborts if alive; stops tracking
  SctpAssociation(const SctpAssociation&) = delete;
  SctpAssociation& operator=(const SctpAssociation&) = delete;

  DdpAssociation& ddp() { return *ddp_; }
  const DdpAssociation& ddp() const { return *ddp_; }
  uint32_t remote_ip() const { return remote_ip_; }
  uint16_t remote_port() const { return remote_port_; }
  bool passive() const { return passive_; }
  void set_events(DdpLlpEvents* events) { events_ = events; }
  DdpLlpEvents* events() const { return events_; }

  // DdpLlpEvents: forwarded.
  void OnAssociationUp() override;
  void OnAssociationDown() override;
  void OnInitiate(uint16_t stream, ByteSpan private_data) override;
  void OnAccepted(uint16_t stream, ByteSpan private_data) override;
  void OnRejected(uint16_t stream, ByteSpan private_data) override;
  void OnStreamEnded(uint16_t stream, StreamEnd why) override;
  void OnSegment(uint16_t stream, ByteSpan ddp_segment) override;

 private:
  friend class SctpEndpoint;
  SctpAssociation(SctpEndpoint* endpoint, uint32_t remote_ip, uint16_t remote_port, bool passive,
                  DdpLlpEvents* events)
      : endpoint_(endpoint),
        remote_ip_(remote_ip),
        remote_port_(remote_port),
        passive_(passive),
        events_(events) {}

  SctpEndpoint* endpoint_;
  std::unique_ptr<DdpAssociation> ddp_;
  uint32_t remote_ip_;
  uint16_t remote_port_;
  bool passive_;
  DdpLlpEvents* events_;
};

// Receives associations a listener accepted.
class AcceptHandler {
 public:
  virtual ~AcceptHandler() = default;
  // Called from Poll() once the SCTP handshake completed (before the
  // association's OnAssociationUp). Keep the handle and call set_events()
  // now, or let it go (it is aborted).
  virtual void OnAssociationAccepted(std::unique_ptr<SctpAssociation> association) = 0;
};

// A listening SCTP port (all remote addresses). Destroying it stops
// listening; associations it accepted are not affected.
class SctpListener {
 public:
  ~SctpListener();
  SctpListener(const SctpListener&) = delete;
  SctpListener& operator=(const SctpListener&) = delete;
  uint16_t port() const { return port_; }

 private:
  friend class SctpEndpoint;
  SctpListener(SctpEndpoint* endpoint, uint16_t port, AcceptHandler* accept_handler)
      : endpoint_(endpoint), port_(port), handler_(accept_handler) {}
  SctpEndpoint* endpoint_;
  uint16_t port_;
  AcceptHandler* handler_;
  std::unique_ptr<DdpListener> ddp_;
  // The handle the next accepted association gets (untracked until then).
  std::unique_ptr<SctpAssociation> spare_;
};

class SctpEndpoint {
 public:
  // Creates the process's usrsctp host. FailedPrecondition if a host exists
  // already; InvalidArgument for a bad configuration.
  static absl::StatusOr<std::unique_ptr<SctpEndpoint>> Create(const EndpointConfig& config);
  // Every association and listener handle must be gone.
  ~SctpEndpoint();
  SctpEndpoint(const SctpEndpoint&) = delete;
  SctpEndpoint& operator=(const SctpEndpoint&) = delete;

  // One received SCTP packet (IPv4 payload, header stripped) from `src_ip`
  // (host byte order). Bad CRC32c, truncated and oversize packets are
  // counted by the host (HostCounter), unknown senders here.
  void Input(uint32_t src_ip, ByteSpan sctp_packet);

  // Advances usrsctp timers to `now_ms` (monotonic, real-time milliseconds:
  // see UsrsctpHost::Poll), accepts pending associations on every listener,
  // and services every tracked association (events are raised here).
  void Poll(uint64_t now_ms);

  // Ends the send batch of every association (DdpAssociation::Flush), then
  // hands up to `max` queued packets to `sink`, oldest first; returns how
  // many. Never call from inside an event handler.
  size_t Drain(DatagramSink& sink, size_t max = SIZE_MAX);
  // Stop path: aborts every tracked association (DdpAssociation::Abort,
  // events raised now); their ABORT packets wait in the outbound queue for
  // Drain(). Returns how many were aborted. Never call from inside an event
  // handler.
  size_t AbortAll();
  size_t outbound_pending() const { return host_->outbound_pending(); }

  // Active open to remote_ip:remote_port from an ephemeral local port, with
  // the endpoint's association options or `config`. `events` (may be null,
  // then set later with set_events) receives the association's events.
  absl::StatusOr<std::unique_ptr<SctpAssociation>> Connect(
      uint32_t remote_ip, uint16_t remote_port, DdpLlpEvents* events,
      const std::optional<AssociationConfig>& config = std::nullopt);

  // Listens on `port` for associations from any address; `handler` must
  // outlive the listener.
  absl::StatusOr<std::unique_ptr<SctpListener>> Listen(
      uint16_t port, AcceptHandler* handler,
      const std::optional<AssociationConfig>& config = std::nullopt);

  // ---- observation (same thread) ----
  uint64_t counter(EndpointCounter c) const { return counters_[static_cast<size_t>(c)]; }
  uint64_t host_counter(HostCounter c) const { return host_->counter(c); }
  size_t associations() const { return live_associations_; }
  // DDP session counters and stream ends summed over every association the
  // endpoint tracked, ended ones included.
  uint64_t ddp_total(DdpCounter c) const;
  uint64_t ends_total(StreamEnd e) const;
  // Remote addresses holding a cookie now.
  size_t peers() const { return live_peers_; }
  const EndpointConfig& config() const { return config_; }
  UsrsctpHost& host() { return *host_; }
  // Calls f(const SctpAssociation&) for every tracked association.
  template <typename F>
  void ForEachAssociation(F&& f) const {
    for (const SctpAssociation* a : assocs_) {
      if (a != nullptr) f(*a);
    }
  }

  // The AF_CONN cookie of `ip`, or nullptr if it has none (for tests).
  void* CookieOf(uint32_t ip) const;

 private:
  friend class SctpAssociation;
  friend class SctpListener;
  struct Peer {
    uint32_t ip = 0;
    bool used = false;
    uint64_t last_active_ms = 0;  // Poll clock of the last packet either way
  };
  class Sink;

  SctpEndpoint(const EndpointConfig& config, std::unique_ptr<UsrsctpHost> host);
  Peer* FindPeer(uint32_t ip) const;
  Peer* AddPeer(uint32_t ip);
  // Gives back the cookies of idle peers without associations (Poll).
  void ReclaimIdlePeers();
  bool Track(SctpAssociation* a);
  void Untrack(SctpAssociation* a);
  void Unlisten(SctpListener* l);
  void Count(EndpointCounter c) { ++counters_[static_cast<size_t>(c)]; }

  EndpointConfig config_;
  std::unique_ptr<UsrsctpHost> host_;
  std::vector<Peer> peers_;  // fixed size max_peers; cookies point into it
  size_t peer_count_ = 0;  // entries ever used (high-water mark)
  size_t live_peers_ = 0;
  mutable Peer* last_peer_ = nullptr;
  uint64_t now_ms_ = 0;  // clock of the last Poll
  // usrsctp may have something readable: input, a timer tick or a new
  // socket since the last Poll serviced the associations.
  bool service_due_ = true;
  // The association options with the endpoint's bundle_sends applied.
  AssociationConfig WithBundling(const AssociationConfig& c) const;
  uint64_t last_reclaim_ms_ = 0;
  std::vector<SctpAssociation*> assocs_;  // capacity max_associations; null = free slot
  size_t live_associations_ = 0;
  std::vector<SctpListener*> listeners_;  // capacity max_listeners; null = free slot
  std::array<uint64_t, static_cast<size_t>(EndpointCounter::kCount)> counters_{};
  // Of associations no longer tracked (added when their handle goes).
  std::array<uint64_t, static_cast<size_t>(DdpCounter::kCount)> ended_ddp_{};
  std::array<uint64_t, static_cast<size_t>(StreamEnd::kCount)> ended_ends_{};
};

}  // namespace iwarp::sctp

#endif  // IWARPD_SCTP_ENDPOINT_H_
