#include "sctp/endpoint.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace iwarp::sctp {

// The tunables' defaults are the endpoint's: a daemon without an sctp:
// section runs the endpoint the way EndpointConfig{} does.
constexpr bool TunableDefaultsAreTheEndpoints() {
  const EndpointConfig endpoint;
  const SctpTunables tunables;
#define IWARPD_SCTP_SAME_DEFAULT(kind, type, name, def, lo, hi, member) \
  if (endpoint.member != tunables.name) return false;
  IWARPD_SCTP_TUNABLES(IWARPD_SCTP_SAME_DEFAULT)
#undef IWARPD_SCTP_SAME_DEFAULT
  return true;
}
static_assert(TunableDefaultsAreTheEndpoints(),
              "sctp/sctp_tunables.h: a default differs from EndpointConfig's");

std::string_view EndpointCounterName(EndpointCounter c) {
  switch (c) {
#define IWARP_SCTP_X(e, n, d) \
  case EndpointCounter::e:    \
    return n;
    IWARP_SCTP_ENDPOINT_COUNTERS(IWARP_SCTP_X)
#undef IWARP_SCTP_X
    case EndpointCounter::kCount:
      break;
  }
  return "invalid";
}

// ---- SctpAssociation -----------------------------------------------------------

SctpAssociation::~SctpAssociation() {
  if (endpoint_ != nullptr && ddp_ != nullptr) {
    for (size_t i = 0; i < endpoint_->ended_ddp_.size(); ++i) {
      endpoint_->ended_ddp_[i] += ddp_->counter(static_cast<DdpCounter>(i));
    }
    for (size_t i = 0; i < endpoint_->ended_ends_.size(); ++i) {
      endpoint_->ended_ends_[i] += ddp_->ends(static_cast<StreamEnd>(i));
    }
  }
  ddp_.reset();  // ABORT if still alive
  if (endpoint_ != nullptr) endpoint_->Untrack(this);
}

void SctpAssociation::OnAssociationUp() {
  if (events_ != nullptr) events_->OnAssociationUp();
}
void SctpAssociation::OnAssociationDown() {
  if (events_ != nullptr) events_->OnAssociationDown();
}
void SctpAssociation::OnInitiate(uint16_t stream, ByteSpan private_data) {
  // With nobody to decide, the peer is told no (RFC 5043 6.3).
  if (events_ != nullptr) {
    events_->OnInitiate(stream, private_data);
  } else {
    ddp_->Reject(stream, {});
  }
}
void SctpAssociation::OnAccepted(uint16_t stream, ByteSpan private_data) {
  if (events_ != nullptr) events_->OnAccepted(stream, private_data);
}
void SctpAssociation::OnRejected(uint16_t stream, ByteSpan private_data) {
  if (events_ != nullptr) events_->OnRejected(stream, private_data);
}
void SctpAssociation::OnStreamEnded(uint16_t stream, StreamEnd why) {
  if (events_ != nullptr) events_->OnStreamEnded(stream, why);
}
void SctpAssociation::OnSegment(uint16_t stream, ByteSpan ddp_segment) {
  if (events_ != nullptr) events_->OnSegment(stream, ddp_segment);
}

// ---- SctpListener --------------------------------------------------------------

SctpListener::~SctpListener() {
  spare_.reset();
  ddp_.reset();
  if (endpoint_ != nullptr) endpoint_->Unlisten(this);
}

// ---- SctpEndpoint --------------------------------------------------------------

// Maps cookies back to addresses for the host's outbound queue.
class SctpEndpoint::Sink final : public PacketSink {
 public:
  Sink(SctpEndpoint* ep, DatagramSink* out) : ep_(ep), out_(out) {}
  void Transmit(void* conn, ByteSpan packet) override {
    const Peer* p = static_cast<const Peer*>(conn);
    const Peer* first = ep_->peers_.data();
    if (p < first || p >= first + ep_->peers_.size() || !p->used) {
      ep_->Count(EndpointCounter::kTxUnknownConn);
      return;
    }
    const_cast<Peer*>(p)->last_active_ms = ep_->now_ms_;
    out_->Transmit(p->ip, packet);
  }

 private:
  SctpEndpoint* ep_;
  DatagramSink* out_;
};

absl::StatusOr<std::unique_ptr<SctpEndpoint>> SctpEndpoint::Create(const EndpointConfig& config) {
  if (config.max_peers == 0 || config.max_associations == 0 || config.max_listeners == 0) {
    return absl::InvalidArgumentError(
        "sctp endpoint: max_peers, max_associations and max_listeners must be >= 1");
  }
  if (config.association.path_mtu < 20 ||
      config.association.path_mtu - (config.association.ipv6 ? 40u : 20u) >
          config.host.max_packet) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sctp endpoint: association path_mtu ", config.association.path_mtu,
        " less the IP header exceeds the host's max_packet ", config.host.max_packet));
  }
  auto host = UsrsctpHost::Create(config.host);
  if (!host.ok()) return host.status();
  return std::unique_ptr<SctpEndpoint>(new SctpEndpoint(config, std::move(*host)));
}

SctpEndpoint::SctpEndpoint(const EndpointConfig& config, std::unique_ptr<UsrsctpHost> host)
    : config_(config), host_(std::move(host)), peers_(config.max_peers) {
  assocs_.reserve(config.max_associations);
  listeners_.reserve(config.max_listeners);
}

SctpEndpoint::~SctpEndpoint() {
  // Handles outliving the endpoint would dangle: detach them (their
  // destructors then only close their sockets).
  for (SctpAssociation* a : assocs_) {
    if (a != nullptr) a->endpoint_ = nullptr;
  }
  for (SctpListener* l : listeners_) {
    if (l != nullptr) l->endpoint_ = nullptr;
  }
  for (Peer& p : peers_) {
    if (p.used) host_->DeregisterConn(&p);
  }
  host_.reset();
}

SctpEndpoint::Peer* SctpEndpoint::FindPeer(uint32_t ip) const {
  if (last_peer_ != nullptr && last_peer_->ip == ip) return last_peer_;
  // Linear over a small table (max_peers, default 64), used entries first.
  for (size_t i = 0; i < peer_count_; ++i) {
    Peer* p = const_cast<Peer*>(&peers_[i]);
    if (p->used && p->ip == ip) {
      last_peer_ = p;
      return p;
    }
  }
  return nullptr;
}

SctpEndpoint::Peer* SctpEndpoint::AddPeer(uint32_t ip) {
  if (live_peers_ == peers_.size()) return nullptr;
  Peer* p = nullptr;
  if (live_peers_ < peer_count_) {  // a reclaimed entry is free
    for (size_t i = 0; i < peer_count_ && p == nullptr; ++i) {
      if (!peers_[i].used) p = &peers_[i];
    }
  }
  if (p == nullptr) p = &peers_[peer_count_++];
  p->ip = ip;
  p->used = true;
  p->last_active_ms = now_ms_;
  ++live_peers_;
  host_->RegisterConn(p);
  Count(EndpointCounter::kPeersAdded);
  last_peer_ = p;
  return p;
}

void* SctpEndpoint::CookieOf(uint32_t ip) const { return FindPeer(ip); }

void SctpEndpoint::ReclaimIdlePeers() {
  for (size_t i = 0; i < peer_count_; ++i) {
    Peer& p = peers_[i];
    if (!p.used || now_ms_ - p.last_active_ms < config_.peer_idle_ms) continue;
    bool in_use = false;
    for (const SctpAssociation* a : assocs_) {
      in_use |= a != nullptr && a->remote_ip_ == p.ip;
    }
    if (in_use) {
      p.last_active_ms = now_ms_;  // look again after another idle period
      continue;
    }
    host_->DeregisterConn(&p);
    if (last_peer_ == &p) last_peer_ = nullptr;
    p.used = false;
    p.ip = 0;
    --live_peers_;
    Count(EndpointCounter::kPeersReclaimed);
  }
}

void SctpEndpoint::Input(uint32_t src_ip, ByteSpan sctp_packet) {
  Peer* p = FindPeer(src_ip);
  if (p == nullptr) {
    bool listening = false;
    for (const SctpListener* l : listeners_) listening |= l != nullptr;
    if (!listening) {
      Count(EndpointCounter::kRxNoPeer);
      return;
    }
    // A cookie only for a packet that really is SCTP (forged sources would
    // otherwise fill the table).
    if (!SctpCrcValid(sctp_packet)) {
      Count(EndpointCounter::kRxNewPeerBadCrc);
      return;
    }
    p = AddPeer(src_ip);
    if (p == nullptr) {
      Count(EndpointCounter::kRxPeerTableFull);
      return;
    }
  }
  p->last_active_ms = now_ms_;
  service_due_ = true;
  host_->Input(p, sctp_packet);
}

void SctpEndpoint::Poll(uint64_t now_ms) {
  if (now_ms_ == 0) {
    // First Poll: peers made before it date from now.
    for (size_t i = 0; i < peer_count_; ++i) peers_[i].last_active_ms = now_ms;
    last_reclaim_ms_ = now_ms;
  }
  now_ms_ = now_ms;
  const uint64_t ticks = host_->counter(HostCounter::kTimerTicks);
  host_->Poll(now_ms);
  if (host_->counter(HostCounter::kTimerTicks) != ticks) service_due_ = true;
  // Nothing arrived and no timer ran: no socket has anything to read, so
  // neither accept nor recv is tried (each takes usrsctp's locks).
  const bool service = service_due_;
  service_due_ = false;  // handlers below may set it again (Connect)
  // Passive opens first, so that their COMM_UP is read below in this call.
  for (size_t i = 0; service && i < listeners_.size(); ++i) {
    SctpListener* l = listeners_[i];
    if (l == nullptr || l->ddp_ == nullptr) continue;
    while (l->spare_ != nullptr) {
      void* conn = nullptr;
      // The spare handle (made ahead of time, so an idle Poll allocates
      // nothing) receives the events from the start.
      std::unique_ptr<DdpAssociation> d = l->ddp_->Accept(l->spare_.get(), &conn);
      if (d == nullptr) break;
      std::unique_ptr<SctpAssociation> a = std::move(l->spare_);
      a->ddp_ = std::move(d);
      const Peer* first = peers_.data();
      const Peer* peer = static_cast<const Peer*>(conn);
      if (peer >= first && peer < first + peers_.size()) a->remote_ip_ = peer->ip;
      l->spare_.reset(new SctpAssociation(nullptr, 0, 0, /*passive=*/true, nullptr));
      if (!Track(a.get())) {
        Count(EndpointCounter::kAcceptOverflow);
        continue;  // a's destructor aborts the association
      }
      a->endpoint_ = this;
      Count(EndpointCounter::kAccepts);
      l->handler_->OnAssociationAccepted(std::move(a));
      if (listeners_[i] != l) break;  // the handler closed the listener
    }
  }
  // Index loop: handlers may add associations (capacity is reserved) or
  // destroy other ones (their slot turns null).
  for (size_t i = 0; service && i < assocs_.size(); ++i) {
    SctpAssociation* a = assocs_[i];
    if (a != nullptr && a->ddp_ != nullptr) a->ddp_->Service();
  }
  // Compact freed slots (no reallocation: erase keeps capacity).
  if (live_associations_ < assocs_.size()) {
    assocs_.erase(std::remove(assocs_.begin(), assocs_.end(), nullptr), assocs_.end());
  }
  // Idle peers: looked at a few times per idle period (at most once a second).
  if (config_.peer_idle_ms != 0 &&
      now_ms - last_reclaim_ms_ >= std::clamp<uint64_t>(config_.peer_idle_ms / 4, 1, 1000)) {
    last_reclaim_ms_ = now_ms;
    ReclaimIdlePeers();
  }
}

size_t SctpEndpoint::Drain(DatagramSink& sink, size_t max) {
  // The batch ends: what the associations sent since the last Drain leaves
  // now, bundled (RFC 9260 6.10).
  for (SctpAssociation* a : assocs_) {
    if (a != nullptr && a->ddp_ != nullptr) a->ddp_->Flush();
  }
  Sink s(this, &sink);
  return host_->DrainOutbound(s, max);
}

AssociationConfig SctpEndpoint::WithBundling(const AssociationConfig& c) const {
  AssociationConfig out = c;
  out.bundle_sends = config_.bundle_sends;
  return out;
}

size_t SctpEndpoint::AbortAll() {
  size_t n = 0;
  // By index: an event handler may let go of another association's handle
  // (Untrack clears its slot), never of the one being aborted.
  for (size_t i = 0; i < assocs_.size(); ++i) {
    SctpAssociation* a = assocs_[i];
    if (a == nullptr || a->ddp_ == nullptr) continue;
    const DdpAssociation::State st = a->ddp_->state();
    if (st == DdpAssociation::State::kDown || st == DdpAssociation::State::kRefused) continue;
    a->ddp_->Abort();
    ++n;
  }
  return n;
}

bool SctpEndpoint::Track(SctpAssociation* a) {
  if (live_associations_ >= config_.max_associations) return false;
  for (SctpAssociation*& slot : assocs_) {
    if (slot == nullptr) {
      slot = a;
      ++live_associations_;
      return true;
    }
  }
  assocs_.push_back(a);  // within the reserved capacity
  ++live_associations_;
  return true;
}

uint64_t SctpEndpoint::ddp_total(DdpCounter c) const {
  uint64_t n = ended_ddp_[static_cast<size_t>(c)];
  for (const SctpAssociation* a : assocs_) {
    if (a != nullptr && a->ddp_ != nullptr) n += a->ddp_->counter(c);
  }
  return n;
}

uint64_t SctpEndpoint::ends_total(StreamEnd e) const {
  uint64_t n = ended_ends_[static_cast<size_t>(e)];
  for (const SctpAssociation* a : assocs_) {
    if (a != nullptr && a->ddp_ != nullptr) n += a->ddp_->ends(e);
  }
  return n;
}

void SctpEndpoint::Untrack(SctpAssociation* a) {
  for (SctpAssociation*& slot : assocs_) {
    if (slot == a) {
      slot = nullptr;
      --live_associations_;
      return;
    }
  }
}

void SctpEndpoint::Unlisten(SctpListener* l) {
  for (SctpListener*& slot : listeners_) {
    if (slot == l) slot = nullptr;
  }
}

absl::StatusOr<std::unique_ptr<SctpAssociation>> SctpEndpoint::Connect(
    uint32_t remote_ip, uint16_t remote_port, DdpLlpEvents* events,
    const std::optional<AssociationConfig>& config) {
  if (remote_port == 0) return absl::InvalidArgumentError("sctp connect: remote port 0");
  if (live_associations_ >= config_.max_associations) {
    return absl::ResourceExhaustedError(
        absl::StrCat("sctp connect: max_associations (", config_.max_associations, ") reached"));
  }
  Peer* p = FindPeer(remote_ip);
  if (p == nullptr) p = AddPeer(remote_ip);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("sctp connect: max_peers (", config_.max_peers, ") remote addresses in use"));
  }
  std::unique_ptr<SctpAssociation> a(
      new SctpAssociation(this, remote_ip, remote_port, /*passive=*/false, events));
  a->endpoint_ = nullptr;  // not tracked until the socket exists
  auto d = DdpAssociation::Connect(*host_, p, /*local_port=*/0, remote_port,
                                   WithBundling(config.value_or(config_.association)), a.get());
  if (!d.ok()) return d.status();
  a->ddp_ = std::move(*d);
  a->endpoint_ = this;
  Track(a.get());  // room checked above
  service_due_ = true;
  Count(EndpointCounter::kConnects);
  return a;
}

absl::StatusOr<std::unique_ptr<SctpListener>> SctpEndpoint::Listen(
    uint16_t port, AcceptHandler* handler, const std::optional<AssociationConfig>& config) {
  if (port == 0) return absl::InvalidArgumentError("sctp listen: port 0");
  if (handler == nullptr) return absl::InvalidArgumentError("sctp listen: no accept handler");
  SctpListener** free_slot = nullptr;
  for (SctpListener*& slot : listeners_) {
    if (slot == nullptr) {
      free_slot = &slot;
      break;
    }
  }
  if (free_slot == nullptr && listeners_.size() >= config_.max_listeners) {
    return absl::ResourceExhaustedError(
        absl::StrCat("sctp listen: max_listeners (", config_.max_listeners, ") reached"));
  }
  std::unique_ptr<SctpListener> l(new SctpListener(this, port, handler));
  l->endpoint_ = nullptr;  // not registered until the socket exists
  // The wildcard address: INITs arriving on any peer's cookie are accepted.
  auto d = DdpListener::Listen(*host_, nullptr, port,
                               WithBundling(config.value_or(config_.association)));
  if (!d.ok()) return d.status();
  l->ddp_ = std::move(*d);
  l->spare_.reset(new SctpAssociation(nullptr, 0, 0, /*passive=*/true, nullptr));
  l->endpoint_ = this;
  service_due_ = true;
  if (free_slot != nullptr) {
    *free_slot = l.get();
  } else {
    listeners_.push_back(l.get());
  }
  return l;
}

}  // namespace iwarp::sctp
