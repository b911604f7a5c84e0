#include "dataplane/services/iwarp_services.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace iwarp::dataplane {
// The DDP streams of one SCTP association and whether it came up or went
// down: the association's events go to the streams (and so to their QPs).
class StreamsOnAssociation : public sctp::DdpLlpEvents {
 public:
  explicit StreamsOnAssociation(uint16_t streams) : streams_(streams) {}
  ~StreamsOnAssociation() override { streams_.set_association(nullptr); }
  engine::SctpStreams& streams() { return streams_; }
  bool down() const { return down_; }

  void OnAssociationUp() override { up_ = true; }
  void OnAssociationDown() override {
    down_ = true;
    streams_.OnAssociationDown();
  }
  void OnInitiate(uint16_t s, ByteSpan pd) override { streams_.OnInitiate(s, pd); }
  void OnAccepted(uint16_t s, ByteSpan pd) override { streams_.OnAccepted(s, pd); }
  void OnRejected(uint16_t s, ByteSpan pd) override { streams_.OnRejected(s, pd); }
  void OnStreamEnded(uint16_t s, sctp::StreamEnd why) override { streams_.OnStreamEnded(s, why); }
  void OnSegment(uint16_t s, ByteSpan seg) override { streams_.OnSegment(s, seg); }

 protected:
  engine::SctpStreams streams_;
  bool up_ = false;
  bool down_ = false;
};

namespace {

using engine::Completion;
using engine::ConnectError;
using engine::PostStatus;
using engine::Qp;
using engine::QpState;
using engine::WcOpcode;
using engine::WcStatus;
using engine::WrOpcode;

constexpr uint64_t kScratchBaseTo = 0x1000'0000;
constexpr uint64_t kRecvBaseTo = 0x2000'0000;
constexpr uint64_t kSrcBaseTo = 0x3000'0000;
constexpr uint64_t kDstBaseTo = 0x4000'0000;
constexpr size_t kCqBatch = 32;

void AddQpStats(IwarpServiceCounters* to, const engine::QpStats& s) {
  to->fpdus_in += s.fpdus_in;
  to->fpdus_out += s.fpdus_out;
  to->bytes_placed += s.bytes_placed;
  to->bytes_sent += s.bytes_sent;
  to->read_responses_sent += s.read_responses_sent;
  to->crc_errors += s.crc_errors;
  to->marker_errors += s.marker_errors;
  to->terminates_sent += s.terminates_sent;
  to->terminates_received += s.terminates_received;
}

bool Failed(const Completion& c) {
  return c.status != WcStatus::kSuccess && c.status != WcStatus::kFlushed;
}

tcp::FourTuple SctpTuple(uint32_t local_ip, uint16_t local_port, uint32_t remote_ip,
                         uint16_t remote_port) {
  tcp::FourTuple t;
  t.local_addr = local_ip;
  t.local_port = local_port;
  t.remote_addr = remote_ip;
  t.remote_port = remote_port;
  return t;
}

// One accepted association of an SCTP responder: its streams, with QPs from
// the responder's pool on some of them.
class ResponderAssociation final : public StreamsOnAssociation {
 public:
  ResponderAssociation(std::unique_ptr<sctp::SctpAssociation> a, uint16_t streams)
      : StreamsOnAssociation(streams), assoc_(std::move(a)) {
    streams_.set_association(&assoc_->ddp());
    assoc_->set_events(this);
  }
  const sctp::SctpAssociation& assoc() const { return *assoc_; }

 private:
  std::unique_ptr<sctp::SctpAssociation> assoc_;
};

}  // namespace

// An association iwarp_clients share (see SctpServiceHost).
class SharedSctpAssociation final : public StreamsOnAssociation {
 public:
  SharedSctpAssociation(SctpServiceHost* host, uint32_t remote, uint16_t port)
      : StreamsOnAssociation(host->streams()), host_(host), remote_(remote), port_(port) {}

  uint32_t remote() const { return remote_; }
  uint16_t port() const { return port_; }
  // A client's stream: `wanted`, or the lowest one no earlier client took
  // (-1 when none is left). Two clients naming one stream: the second one's
  // QP is refused (SctpStreams::CreateQp) and its run fails.
  int32_t TakeStream(int32_t wanted) {
    if (wanted < 0) {
      for (int32_t s = 0; s < host_->streams(); ++s) {
        if (!Taken(s)) {
          wanted = s;
          break;
        }
      }
      if (wanted < 0) return -1;
    }
    taken_.push_back(wanted);
    return wanted;
  }
  void AddUser() { ++users_; }
  // Opens the association (first caller); later calls do nothing.
  absl::Status Start() {
    if (assoc_ != nullptr || down_) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<sctp::SctpAssociation>> a =
        host_->endpoint().Connect(remote_, port_, this);
    if (!a.ok()) {
      down_ = true;
      return a.status();
    }
    assoc_ = std::move(*a);
    streams_.set_association(&assoc_->ddp());
    return absl::OkStatus();
  }
  // A client is done with its stream. Once the last one is, PollClose()
  // shuts the association down gracefully (SCTP SHUTDOWN, RFC 9260 9.2).
  void Release(uint64_t now_ms) {
    if (users_ > 0 && --users_ == 0) closing_since_ms_ = std::max<uint64_t>(1, now_ms);
  }
  // Called by the clients every poll. With every client released, the
  // SHUTDOWN goes out once every stream a client took is idle (its session
  // Terminate exchange over both ways, RFC 5043 6.2), so no session still
  // ending is cut off as association_down. A stream that stays busy for
  // kCloseWaitMs is not waited for any longer: the association is shut
  // down anyway and true is returned (once) so the caller counts it.
  bool PollClose(uint64_t now_ms) {
    if (users_ != 0 || closing_since_ms_ == 0 || shut_ || assoc_ == nullptr || down_) return false;
    bool idle = true;
    for (int32_t s : taken_) {
      if (s >= 0 && !assoc_->ddp().StreamIdle(static_cast<uint16_t>(s))) idle = false;
    }
    const bool forced = !idle && now_ms - closing_since_ms_ >= kCloseWaitMs;
    if (idle || forced) {
      shut_ = true;
      assoc_->ddp().Shutdown();
    }
    return forced;
  }
  static constexpr uint64_t kCloseWaitMs = 10'000;
  bool up() const { return up_ && !down_; }
  const sctp::SctpAssociation* assoc() const { return assoc_.get(); }

 private:
  SctpServiceHost* host_;
  uint32_t remote_;
  uint16_t port_;
  bool Taken(int32_t s) const { return std::find(taken_.begin(), taken_.end(), s) != taken_.end(); }

  std::unique_ptr<sctp::SctpAssociation> assoc_;
  std::vector<int32_t> taken_;  // streams given to clients (control path)
  uint32_t users_ = 0;
  uint64_t closing_since_ms_ = 0;  // when the last client released (0: not yet)
  bool shut_ = false;              // SHUTDOWN requested
};

SctpServiceHost::SctpServiceHost(sctp::SctpEndpoint* endpoint, uint16_t streams)
    : endpoint_(endpoint), streams_(streams) {}
SctpServiceHost::~SctpServiceHost() = default;

SharedSctpAssociation* SctpServiceHost::Shared(uint32_t remote, uint16_t port) {
  for (auto& a : shared_) {
    if (a->remote() == remote && a->port() == port) return a.get();
  }
  shared_.push_back(std::make_unique<SharedSctpAssociation>(this, remote, port));
  return shared_.back().get();
}

namespace {

// ---------------------------------------------------------------- responder

class Responder;

class ResponderObserver final : public engine::QpObserver {
 public:
  explicit ResponderObserver(Responder* r) : r_(r) {}
  engine::AcceptDecision OnConnectRequest(Qp& qp, const mpa::StartupFrame& request) override;
  void OnEstablished(Qp& qp, ByteSpan peer_private_data) override;
  void OnConnectFailed(Qp& qp, ConnectError e, ByteSpan peer_private_data) override;
  void OnTerminate(Qp& qp, const rdmap::TerminateCode& code, bool sent) override;
  void OnDisconnected(Qp& qp) override;

 private:
  Responder* r_;
};

class Responder final : public IwarpService, private sctp::AcceptHandler {
 public:
  Responder(const config::ServiceConfig& cfg, const config::IwarpConfig& iw, tcp::TcpStack* stack,
            const ServiceClock* clock, uint32_t max_connections, SctpServiceHost* sctp,
            uint32_t local_ip)
      : IwarpService(cfg, stack, clock, max_connections),
        sctp_(sctp),
        local_ip_(local_ip),
        iw_(iw),
        options_(IwarpQpOptions(iw, cfg)),
        memory_(2 * iw.qps_per_service + 1),
        observer_(this),
        buffers_(2 * iw.recv_buffers),
        slots_(iw.qps_per_service) {
    for (Slot& s : slots_) s.free.resize(buffers_);
  }

  absl::Status Start() override {
    const uint64_t recv_len = uint64_t{buffers_} * iw_.recv_buffer_bytes;
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      // One protection domain per slot: a peer's STag works only on its own
      // connection (RFC 5041 7.1 tagged check 1, RFC 5042 5.1).
      s.pd_id = static_cast<uint32_t>(i + 1);
      absl::StatusOr<uint32_t> scratch =
          memory_.Register(iw_.scratch_bytes,
                           ddp::kAccessRemoteRead | ddp::kAccessRemoteWrite |
                               ddp::kAccessLocalWrite,
                           kScratchBaseTo, s.pd_id);
      absl::StatusOr<uint32_t> recv =
          memory_.Register(recv_len, ddp::kAccessLocalWrite, kRecvBaseTo, s.pd_id);
      if (!scratch.ok()) return scratch.status();
      if (!recv.ok()) return recv.status();
      s.scratch_stag = *scratch;
      s.recv_stag = *recv;
      // The scratch region starts with the pattern, so a Read before any
      // Write returns known bytes. It is the slot's, not the connection's:
      // the next connection on this slot sees what earlier ones wrote.
      FillPattern(0, memory_.Bytes(s.scratch_stag));
      ResponderPrivateData pd;
      pd.stag = s.scratch_stag;
      pd.to = kScratchBaseTo;
      pd.length = iw_.scratch_bytes;
      pd.recv_buffer_bytes = iw_.recv_buffer_bytes;
      pd.recv_buffers = iw_.recv_buffers;
      EncodeResponderPd(pd, MutableByteSpan(s.pd, sizeof(s.pd)));
      if (sctp_ != nullptr) continue;  // armed when an association arrives
      if (absl::Status st = Arm(s); !st.ok()) return st;
    }
    if (sctp_ != nullptr) {
      absl::StatusOr<std::unique_ptr<sctp::SctpListener>> l =
          sctp_->endpoint().Listen(cfg_.port, this);
      if (!l.ok()) return l.status();
      sctp_listener_ = std::move(*l);
      assocs_.reserve(slots_.size());
      return absl::OkStatus();
    }
    engine::MpaGateOptions g;
    g.max_pending = iw_.max_pending_requests;
    g.max_pending_per_source = iw_.max_pending_per_source;
    g.request_timeout_us = uint64_t{iw_.request_timeout_ms} * 1000;
    g.max_private_data = iw_.max_private_data;
    absl::StatusOr<std::unique_ptr<engine::Listener>> l =
        engine::Listener::Create(*stack_, iw_.qps_per_service, g);
    if (!l.ok()) return l.status();
    listener_ = std::move(*l);
    for (Slot& s : slots_) {
      if (s.qp != nullptr && s.qp->state() == QpState::kIdle) listener_->AddQp(s.qp.get());
    }
    return listener_->Listen(cfg_.port, clock_->now_us);
  }

  void Poll(uint64_t now_ms) override {
    TcpService::Poll(now_ms);
    const uint64_t now_us = clock_->now_us;
    if (listener_ != nullptr) listener_->Poll(now_us);
    for (Slot& s : slots_) {
      if (s.qp == nullptr) {
        if (sctp_ != nullptr && (s.assoc == nullptr || s.assoc->down())) continue;
        // A replacement failed earlier: try again (control path, rare).
        if (!Arm(s).ok()) continue;
      }
      s.qp->Poll(now_us);
      DrainCompletions(s);
      if (s.ended && !s.qp->conn().valid()) Finish(s);
    }
    if (sctp_ != nullptr) ReapAssociations();
  }

  // Finish() moves a QP's counters into finished_ and drops it, so every QP
  // still in a slot is counted here and nowhere else.
  void AddLiveQpStats(IwarpServiceCounters* out) const override {
    for (const Slot& s : slots_) {
      if (s.qp != nullptr) AddQpStats(out, s.qp->stats());
    }
    for (const auto& a : assocs_) out->initiates_refused += a->streams().initiates_refused();
    if (listener_ != nullptr) {
      const engine::MpaGateCounters& g = listener_->gate().counters();
      out->connect_requests += g.requests;
      out->refused_no_qp += g.refused_no_qp;
      out->refused_private_data += g.refused_private_data;
      out->refused_per_source += g.refused_per_source;
      out->pending_evicted += g.evicted;
      out->request_timeouts += g.request_timeouts;
      out->bad_requests += g.bad_requests;
      out->rejects_sent += g.rejects_sent;
    }
  }

  size_t ListQps(std::span<IwarpQpInfo> out) const override {
    size_t n = 0;
    for (const Slot& s : slots_) {
      if (n == out.size()) break;
      if (s.qp == nullptr || s.qp->state() == QpState::kIdle) continue;
      FillInfo(*s.qp, s.tuple, &out[n++]);
    }
    return n;
  }
  size_t max_qps() const override { return slots_.size(); }

  // Observer entry points.
  engine::AcceptDecision OnRequest(Qp& qp) {
    // Over TCP the gate counts every valid Request (AddLiveQpStats).
    if (sctp_ != nullptr) ++finished_.connect_requests;
    ++finished_.replies_sent;
    ++counters_.accepted;
    Slot* s = Find(qp);
    if (s == nullptr) return engine::AcceptDecision{false, {}};
    s->attached = true;
    tcp::TcpConnInfo info;
    if (sctp_ == nullptr && stack_->GetConnection(qp.conn(), &info)) {
      s->tuple = info.tuple;
      Open(qp.conn(), info.tuple);
      s->opened = qp.conn();
    }
    return engine::AcceptDecision{true, ByteSpan(s->pd, sizeof(s->pd))};
  }
  void OnEstablished(Qp&) { ++finished_.established; }
  void OnSetupFailed(Qp& qp) {
    ++finished_.setup_failed;
    if (Slot* s = Find(qp)) s->ended = true;
  }
  void OnDisconnected(Qp& qp) {
    if (Slot* s = Find(qp)) s->ended = true;
  }
  void OnTerminate(const rdmap::TerminateCode& code, bool sent) { NoteTerminate(code, sent); }

 private:
  struct Slot {
    std::unique_ptr<Qp> qp;
    ResponderAssociation* assoc = nullptr;  // sctp: the association the slot serves
    uint16_t stream = 0;                    // sctp: its DDP stream
    uint32_t scratch_stag = 0;
    uint32_t recv_stag = 0;
    uint32_t pd_id = 0;  // protection domain of the slot's QP and regions
    uint8_t pd[kResponderPdSize] = {};
    bool attached = false;  // a connection reached the QP
    bool ended = false;     // its connection is gone
    tcp::ConnId opened;     // the TcpService connection entry
    tcp::FourTuple tuple;
    uint64_t echoed_bytes = 0;
    std::vector<uint32_t> free;  // spare receive buffers (capacity buffers_)
    uint32_t free_count = 0;
    uint32_t deficit = 0;        // receives to post as soon as a buffer frees
  };

  Slot* Find(const Qp& qp) {
    for (Slot& s : slots_) {
      if (s.qp.get() == &qp) return &s;
    }
    return nullptr;
  }

  // Control path: a fresh QP with every receive posted, handed to the listener.
  absl::Status Arm(Slot& s) {
    engine::QpOptions o = options_;
    o.pd = s.pd_id;
    absl::StatusOr<std::unique_ptr<Qp>> qp =
        s.assoc != nullptr ? s.assoc->streams().CreateQp(s.stream, o, memory_, observer_)
                           : Qp::Create(o, *stack_, memory_, observer_);
    if (!qp.ok()) {
      ++finished_.qp_recycle_failed;
      return qp.status();
    }
    s.qp = std::move(*qp);
    s.attached = false;
    s.ended = false;
    s.opened = tcp::ConnId{};
    s.tuple = tcp::FourTuple{};
    s.echoed_bytes = 0;
    // recv_buffers posted, as many spare ones for echoes in flight.
    for (uint32_t k = 0; k < iw_.recv_buffers; ++k) PostBuffer(s, k);
    s.free_count = 0;
    s.deficit = 0;
    for (uint32_t k = iw_.recv_buffers; k < buffers_; ++k) s.free[s.free_count++] = k;
    if (s.assoc != nullptr) {
      s.tuple = SctpTuple(local_ip_, cfg_.port, s.assoc->assoc().remote_ip(), 0);
      return absl::OkStatus();  // passive on its stream (RFC 5043 6.2)
    }
    if (listener_ != nullptr && !listener_->AddQp(s.qp.get())) {
      return absl::ResourceExhaustedError("iwarp responder: listener pool full");
    }
    return absl::OkStatus();
  }

  void PostBuffer(Slot& s, uint32_t k) {
    engine::RecvWr wr;
    wr.wr_id = k;
    wr.local = engine::LocalSge{s.recv_stag, kRecvBaseTo + uint64_t{k} * iw_.recv_buffer_bytes,
                                iw_.recv_buffer_bytes};
    if (s.qp->PostRecv(wr) != PostStatus::kOk) ++finished_.echo_post_failed;
  }

  void DrainCompletions(Slot& s) {
    Completion cqe[kCqBatch];
    for (;;) {
      const size_t n = s.qp->PollCompletions(std::span<Completion>(cqe));
      // Echo completions first: they free the buffers the receives take
      // the place of (the engine queues receive completions as data
      // arrives, Send completions when Poll sees the acknowledgement).
      for (size_t i = 0; i < n; ++i) {
        if (cqe[i].opcode == WcOpcode::kSend) Handle(s, cqe[i]);
      }
      for (size_t i = 0; i < n; ++i) {
        if (cqe[i].opcode != WcOpcode::kSend) Handle(s, cqe[i]);
      }
      if (n < kCqBatch) return;
    }
  }

  void Handle(Slot& s, const Completion& c) {
    if (c.status != WcStatus::kSuccess) {
      if (Failed(c)) ++finished_.completion_errors;
      return;
    }
    const uint32_t k = static_cast<uint32_t>(c.wr_id);
    if (k >= buffers_) return;
    if (c.opcode == WcOpcode::kRecv) {
      // Echo: the same bytes back as a Send from the buffer they landed in;
      // a spare buffer takes its place in the receive queue at once (the
      // peer may send again before our echo is acknowledged), and the
      // buffer becomes a spare when the echo completed.
      if (s.free_count > 0) {
        PostBuffer(s, s.free[--s.free_count]);
      } else {
        ++finished_.recv_starved;  // posted when an echo completes
        ++s.deficit;
      }
      engine::SendWr wr;
      wr.wr_id = k;
      wr.opcode = WrOpcode::kSend;
      wr.local = engine::LocalSge{s.recv_stag, kRecvBaseTo + uint64_t{k} * iw_.recv_buffer_bytes,
                                  c.byte_len};
      counters_.bytes_in += c.byte_len;
      if (s.qp->PostSend(wr) != PostStatus::kOk) {
        ++finished_.echo_post_failed;
        Release(s, k);
      }
    } else if (c.opcode == WcOpcode::kSend) {
      ++finished_.sends_echoed;
      counters_.bytes_out += c.byte_len;
      s.echoed_bytes += c.byte_len;
      Release(s, k);
    }
  }

  // Buffer k is free again: posted at once if the receive queue is short.
  void Release(Slot& s, uint32_t k) {
    if (s.deficit > 0) {
      --s.deficit;
      PostBuffer(s, k);
    } else {
      s.free[s.free_count++] = k;
    }
  }

  // The slot's connection ended: record it, replace the QP.
  void Finish(Slot& s) {
    const Qp& qp = *s.qp;
    AccountFinished(qp);
    if (s.attached) {
      TransferRecord& r = recent_[recent_next_];
      r.tuple = s.tuple;
      r.bytes = qp.stats().bytes_placed;
      r.has_sha256 = false;
      // An end with no Terminate and no setup failure counts as complete:
      // kClosed, or kError from a reset or timeout after the transfer (the
      // QP's state and end() tell a graceful close apart).
      r.complete = engine::QpEnded(qp.state()) && !qp.terminate_sent().has_value() &&
                   !qp.terminate_received().has_value() &&
                   qp.connect_error() == ConnectError::kNone;
      r.reason = r.complete ? tcp::CloseReason::kNormal : tcp::CloseReason::kAborted;
      recent_next_ = (recent_next_ + 1) % kRecent;
      recent_count_ = std::min(recent_count_ + 1, kRecent);
      ++counters_.closed;
      if (!r.complete) ++counters_.closed_abnormal;
      if (s.opened.valid()) CloseEntry(s.opened);
    }
    s.qp.reset();
    ++finished_.qps_recycled;
    // sctp: a fresh QP on the same stream while the association lives;
    // otherwise the slot returns to the pool (ReapAssociations).
    if (sctp_ != nullptr && (s.assoc == nullptr || s.assoc->down())) {
      s.assoc = nullptr;
      return;
    }
    (void)Arm(s);  // on failure retried from Poll
  }

  // sctp::AcceptHandler (inside SctpEndpoint::Poll, before the
  // association's first event): QPs on its streams 0, 1, ... from the free
  // slots, so they exist before the peer can initiate.
  void OnAssociationAccepted(std::unique_ptr<sctp::SctpAssociation> a) override {
    ++finished_.associations;
    auto entry = std::make_unique<ResponderAssociation>(std::move(a), sctp_->streams());
    uint16_t stream = 0;
    for (Slot& s : slots_) {
      if (stream >= sctp_->streams()) break;
      if (s.qp != nullptr || s.assoc != nullptr) continue;
      s.assoc = entry.get();
      s.stream = stream++;
      if (!Arm(s).ok()) s.assoc = nullptr;
    }
    assocs_.push_back(std::move(entry));
  }

  // Ended associations whose QPs are gone are freed (outside their events).
  void ReapAssociations() {
    for (size_t i = 0; i < assocs_.size();) {
      ResponderAssociation* a = assocs_[i].get();
      bool used = false;
      for (Slot& s : slots_) {
        if (s.assoc != a) continue;
        if (s.qp == nullptr && a->down()) {
          s.assoc = nullptr;
        } else {
          used = true;
        }
      }
      if (!a->down() || used) {
        ++i;
        continue;
      }
      finished_.initiates_refused += a->streams().initiates_refused();
      assocs_.erase(assocs_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  SctpServiceHost* const sctp_;  // transport: sctp, else nullptr
  const uint32_t local_ip_;
  const config::IwarpConfig iw_;
  const engine::QpOptions options_;
  DaemonMemory memory_;
  ResponderObserver observer_;
  std::unique_ptr<engine::Listener> listener_;  // transport: tcp (made by Start)
  const uint32_t buffers_;  // receive buffers per QP: posted + spare
  // sctp: accepted associations; declared before slots_ so that their
  // streams outlive the QPs on them.
  std::unique_ptr<sctp::SctpListener> sctp_listener_;
  std::vector<std::unique_ptr<ResponderAssociation>> assocs_;
  std::vector<Slot> slots_;
};

engine::AcceptDecision ResponderObserver::OnConnectRequest(Qp& qp, const mpa::StartupFrame&) {
  return r_->OnRequest(qp);
}
void ResponderObserver::OnEstablished(Qp& qp, ByteSpan) { r_->OnEstablished(qp); }
void ResponderObserver::OnConnectFailed(Qp& qp, ConnectError, ByteSpan) { r_->OnSetupFailed(qp); }
void ResponderObserver::OnDisconnected(Qp& qp) { r_->OnDisconnected(qp); }
void ResponderObserver::OnTerminate(Qp&, const rdmap::TerminateCode& code, bool sent) {
  r_->OnTerminate(code, sent);
}

// ---------------------------------------------------------------- client

class Client final : public IwarpService, private engine::QpObserver {
 public:
  Client(const config::ServiceConfig& cfg, const config::IwarpConfig& iw, tcp::TcpStack* stack,
         const ServiceClock* clock, uint32_t max_connections, uint32_t local_ip,
         SctpServiceHost* sctp)
      : IwarpService(cfg, stack, clock, max_connections),
        sctp_(sctp),
        options_(IwarpQpOptions(iw, cfg)),
        local_ip_(local_ip),
        memory_(4),
        slots_(cfg.queue_depth) {}

  absl::Status Start() override {
    if (local_ip_ == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("service ", cfg_.name, ": no interface address to connect from"));
    }
    const uint64_t msg = cfg_.message_bytes;
    absl::StatusOr<uint32_t> src =
        memory_.Register(msg + kPatternPeriod, ddp::kAccessLocalWrite, kSrcBaseTo);
    absl::StatusOr<uint32_t> dst =
        memory_.Register(std::max<uint64_t>(1, msg * cfg_.queue_depth),
                         ddp::kAccessLocalWrite | ddp::kAccessRemoteWrite, kDstBaseTo);
    if (!src.ok()) return src.status();
    if (!dst.ok()) return dst.status();
    src_stag_ = *src;
    dst_stag_ = *dst;
    src_ = memory_.Bytes(src_stag_);
    dst_ = memory_.Bytes(dst_stag_);
    FillPattern(0, src_);
    if (sctp_ != nullptr) {
      // The QP is made on the shared association's stream once it is up.
      shared_ = sctp_->Shared(cfg_.remote, cfg_.remote_port);
      stream_ = shared_->TakeStream(cfg_.stream);
      if (stream_ < 0 || stream_ >= sctp_->streams()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "service ", cfg_.name, ": DDP stream ", stream_, " is beyond sctp.streams (",
            sctp_->streams(), ")"));
      }
      shared_->AddUser();
      tuple_ = SctpTuple(local_ip_, 0, cfg_.remote, cfg_.remote_port);
      return absl::OkStatus();
    }
    absl::StatusOr<std::unique_ptr<Qp>> qp = Qp::Create(options_, *stack_, memory_, *this);
    if (!qp.ok()) return qp.status();
    qp_ = std::move(*qp);
    return absl::OkStatus();
  }

  void Poll(uint64_t now_ms) override {
    TcpService::Poll(now_ms);
    const uint64_t now_us = clock_->now_us;
    if (!result_.started) {
      if (first_poll_ms_ == UINT64_MAX) first_poll_ms_ = now_ms;
      if (now_ms - first_poll_ms_ < cfg_.start_delay_ms) return;
      result_.started = true;
      if (sctp_ != nullptr) {
        const bool first = shared_->assoc() == nullptr;
        if (!shared_->Start().ok()) {
          ++counters_.connect_failed;
          End(false);
          Release(now_ms);
          return;
        }
        if (first) ++finished_.associations;
      }
    }
    if (sctp_ != nullptr) {
      PollSctp(now_ms, now_us);
      return;
    }
    if (!tcp_started_) {
      tcp_started_ = true;
      // No private data of our own; the span points at a real (unused) byte
      // because Qp::Connect copies it with memcpy even when it is empty.
      if (!qp_->Connect(local_ip_, cfg_.remote, cfg_.remote_port, ByteSpan(&no_pd_, 0), now_us)
               .ok()) {
        ++counters_.connect_failed;
        End(false);
        return;
      }
      if (qp_->conn().valid()) {
        FourTuple t;
        t.local_addr = local_ip_;
        t.remote_addr = cfg_.remote;
        t.remote_port = cfg_.remote_port;
        Open(qp_->conn(), t);
        opened_ = qp_->conn();
      }
    }
    qp_->Poll(now_us);
    Completion cqe[kCqBatch];
    for (;;) {
      const size_t n = qp_->PollCompletions(std::span<Completion>(cqe));
      for (size_t i = 0; i < n; ++i) Handle(cqe[i]);
      if (n < kCqBatch) break;
    }
    if (running_) Advance(now_us);
    if (disconnected_ && !result_.finished) End(false);
    if (disconnected_ && opened_.valid()) Close();
  }

  void AddLiveQpStats(IwarpServiceCounters* out) const override {
    if (qp_ != nullptr) AddQpStats(out, qp_->stats());
  }

  // transport: sctp. The QP is created on our stream once the shared
  // association is up (RFC 5043 11.1: the peer indicated DDP) and opens its
  // session with Initiate; the rest is the TCP client's run.
  void PollSctp(uint64_t now_ms, uint64_t now_us) {
    if (qp_ == nullptr && !result_.finished) {
      if (shared_->down()) {
        ++counters_.connect_failed;
        End(false);
      } else if (shared_->up()) {
        absl::StatusOr<std::unique_ptr<Qp>> qp = shared_->streams().CreateQp(
            static_cast<uint16_t>(stream_), options_, memory_, *this);
        if (!qp.ok() || !(*qp)->ConnectLlp(ByteSpan(&no_pd_, 0), now_us).ok()) {
          ++counters_.connect_failed;
          if (qp.ok()) qp_ = std::move(*qp);
          End(false);
        } else {
          qp_ = std::move(*qp);
          if (const sctp::SctpAssociation* a = shared_->assoc()) {
            tuple_ = SctpTuple(local_ip_, 0, a->remote_ip(), a->remote_port());
          }
        }
      }
    }
    if (qp_ != nullptr) {
      qp_->Poll(now_us);
      Completion cqe[kCqBatch];
      for (;;) {
        const size_t n = qp_->PollCompletions(std::span<Completion>(cqe));
        for (size_t i = 0; i < n; ++i) Handle(cqe[i]);
        if (n < kCqBatch) break;
      }
      if (running_) Advance(now_us);
      // A rejected or failed session may end without a disconnect event.
      if ((disconnected_ || engine::QpEnded(qp_->state())) && !result_.finished) End(false);
    }
    // Done with the stream once its session is over both ways (our
    // Terminate answered: RFC 5043 6.2). A session still not over
    // kSessionEndWaitMs after the run ended is a failure of its own
    // (session_end_timeouts, logged by the daemon); the client stops waiting
    // but the association stays up for it until PollClose gives up.
    if (result_.finished && !released_) {
      if (finished_ms_ == 0) finished_ms_ = std::max<uint64_t>(1, now_ms);
      const sctp::SctpAssociation* a = shared_->assoc();
      const bool qp_done = qp_ == nullptr || engine::QpEnded(qp_->state()) ||
                           qp_->state() == QpState::kIdle;
      const bool stream_idle = a == nullptr || shared_->down() ||
                               a->ddp().StreamIdle(static_cast<uint16_t>(stream_));
      if (qp_done && stream_idle) {
        Release(now_ms);
      } else if (now_ms - finished_ms_ >= kSessionEndWaitMs) {
        ++finished_.session_end_timeouts;
        sctp_->CountSessionEndTimeout();
        Release(now_ms);
      }
    }
    if (released_ && shared_->PollClose(now_ms)) {
      ++finished_.shutdowns_forced;
      sctp_->CountForcedShutdown();
    }
  }

  void Release(uint64_t now_ms) {
    if (released_ || shared_ == nullptr) return;
    released_ = true;
    shared_->Release(now_ms);
  }
  static constexpr uint64_t kSessionEndWaitMs = 2000;

  IwarpRunResult run_result() const override { return result_; }

  size_t ListQps(std::span<IwarpQpInfo> out) const override {
    if (out.empty() || qp_ == nullptr || qp_->state() == QpState::kIdle) return 0;
    FillInfo(*qp_, tuple_, &out[0]);
    return 1;
  }
  size_t max_qps() const override { return 1; }

 private:
  using FourTuple = tcp::FourTuple;
  enum Kind : uint8_t { kSetupWrite = 1, kWrite, kRead, kSend, kRecv };
  enum class Phase : uint8_t { kSetup, kRun };
  struct Slot {
    uint64_t message = 0;
    uint64_t expect_offset = 0;  // pattern offset of the bytes expected back
    uint64_t written_offset = 0; // pattern offset last written into the scratch slot
    uint8_t pending = 0;
    config::IwarpOp op = config::IwarpOp::kWrite;
    bool compare = false;        // bytes come back into the dst slot
  };

  // QpObserver.
  void OnEstablished(Qp& qp, ByteSpan pd) override {
    ++finished_.established;
    tcp::TcpConnInfo info;
    if (sctp_ == nullptr && stack_->GetConnection(qp.conn(), &info)) {
      tuple_ = info.tuple;
      if (opened_.valid() && opened_.slot < conns_.size()) conns_[opened_.slot].tuple = info.tuple;
    }
    ++counters_.connected;
    ResponderPrivateData r;
    const uint64_t msg = cfg_.message_bytes;
    const bool needs_recv = cfg_.op == config::IwarpOp::kSend || cfg_.op == config::IwarpOp::kMixed;
    // The peer controls these: a region too small for our slots, or no
    // receive buffer for our Sends, ends the run before any work is posted.
    if (!DecodeResponderPd(pd, &r) || r.length < msg * cfg_.queue_depth ||
        (needs_recv && (r.recv_buffer_bytes < msg || r.recv_buffers == 0))) {
      ++finished_.bad_private_data;
      End(false);
      return;
    }
    remote_ = r;
    running_ = true;
    phase_ = cfg_.op == config::IwarpOp::kRead || cfg_.op == config::IwarpOp::kMixed
                 ? Phase::kSetup
                 : Phase::kRun;
    start_us_ = clock_->now_us;
    sha_.Reset();
  }
  void OnConnectFailed(Qp& qp, ConnectError e, ByteSpan) override {
    ++finished_.setup_failed;
    result_.connect_error = e;
    (void)qp;
  }
  void OnDisconnected(Qp&) override { disconnected_ = true; }
  void OnTerminate(Qp&, const rdmap::TerminateCode& code, bool sent) override {
    NoteTerminate(code, sent);
  }

  uint64_t SlotTo(uint32_t s) const { return uint64_t{s} * cfg_.message_bytes; }

  bool Post(const engine::SendWr& wr) {
    if (qp_->PostSend(wr) == PostStatus::kOk) return true;
    ++finished_.completion_errors;
    End(false);
    return false;
  }

  engine::SendWr Wr(Kind kind, uint32_t s, WrOpcode op, uint32_t stag, uint64_t to) const {
    engine::SendWr wr;
    wr.wr_id = (uint64_t{s} << 8) | kind;
    wr.opcode = op;
    wr.local = engine::LocalSge{stag, to, cfg_.message_bytes};
    wr.remote_stag = remote_.stag;
    wr.remote_to = remote_.to + SlotTo(s);
    return wr;
  }
  uint64_t SrcTo(uint64_t pattern_offset) const { return kSrcBaseTo + pattern_offset % kPatternPeriod; }

  void Advance(uint64_t now_us) {
    const uint32_t qd = cfg_.queue_depth;
    const uint64_t msg = cfg_.message_bytes;
    if (phase_ == Phase::kSetup) {
      if (!setup_posted_) {
        setup_posted_ = true;
        for (uint32_t s = 0; s < qd; ++s) {
          slots_[s].written_offset = SlotTo(s);
          slots_[s].pending = 1;
          if (!Post(Wr(kSetupWrite, s, WrOpcode::kRdmaWrite, src_stag_, SrcTo(SlotTo(s))))) return;
        }
      }
      for (uint32_t s = 0; s < qd; ++s) {
        if (slots_[s].pending != 0) return;
      }
      phase_ = Phase::kRun;
      start_us_ = now_us;  // the setup writes are not part of the run
    }
    // Retire in message order.
    while (retired_ < posted_) {
      Slot& sl = slots_[retired_ % qd];
      if (sl.pending != 0) break;
      const uint32_t s = static_cast<uint32_t>(retired_ % qd);
      if (sl.op == config::IwarpOp::kSend) --sends_in_flight_;
      if (sl.compare) {
        const ByteSpan got(dst_.data() + SlotTo(s), msg);
        const ByteSpan want(src_.data() + sl.expect_offset % kPatternPeriod, msg);
        if (std::memcmp(got.data(), want.data(), msg) != 0) ++finished_.verify_failures;
        if (cfg_.client_sha256) sha_.Update(got);
      } else if (cfg_.client_sha256) {
        sha_.Update(ByteSpan(src_.data() + sl.expect_offset % kPatternPeriod, msg));
      }
      ++finished_.messages_done;
      ++result_.messages;
      result_.bytes += msg;
      ++retired_;
    }
    if (result_.finished) return;
    if (retired_ == cfg_.count) {
      result_.elapsed_us = now_us - start_us_;
      End(finished_.verify_failures == 0);
      return;
    }
    // Post while a slot is free (and, for a Send, while the responder has
    // a receive posted for it: at most its recv_buffers Sends unanswered).
    while (posted_ < cfg_.count && posted_ - retired_ < qd) {
      const uint64_t i = posted_;
      const uint32_t s = static_cast<uint32_t>(i % qd);
      config::IwarpOp op = cfg_.op;
      if (op == config::IwarpOp::kMixed) {
        constexpr config::IwarpOp kCycle[] = {config::IwarpOp::kWrite, config::IwarpOp::kRead,
                                              config::IwarpOp::kSend};
        op = kCycle[i % 3];
      }
      if (op == config::IwarpOp::kSend && sends_in_flight_ >= remote_.recv_buffers) break;
      Slot& sl = slots_[s];
      sl.message = i;
      sl.op = op;
      const uint64_t offset = i * msg;
      ++posted_;
      switch (sl.op) {
        case config::IwarpOp::kWrite:
          sl.written_offset = offset;
          sl.expect_offset = offset;
          sl.compare = cfg_.verify;
          sl.pending = cfg_.verify ? 2 : 1;
          if (!Post(Wr(kWrite, s, WrOpcode::kRdmaWrite, src_stag_, SrcTo(offset)))) return;
          if (cfg_.verify &&
              !Post(Wr(kRead, s, WrOpcode::kRdmaRead, dst_stag_, kDstBaseTo + SlotTo(s)))) {
            return;
          }
          break;
        case config::IwarpOp::kRead:
          sl.expect_offset = sl.written_offset;
          sl.compare = true;
          sl.pending = 1;
          if (!Post(Wr(kRead, s, WrOpcode::kRdmaRead, dst_stag_, kDstBaseTo + SlotTo(s)))) return;
          break;
        case config::IwarpOp::kSend:
        case config::IwarpOp::kMixed: {
          ++sends_in_flight_;
          sl.expect_offset = offset;
          sl.compare = true;
          sl.pending = 2;
          engine::RecvWr r;
          r.wr_id = (uint64_t{s} << 8) | kRecv;
          r.local = engine::LocalSge{dst_stag_, kDstBaseTo + SlotTo(s), cfg_.message_bytes};
          if (qp_->PostRecv(r) != PostStatus::kOk) {
            ++finished_.completion_errors;
            End(false);
            return;
          }
          if (!Post(Wr(kSend, s, WrOpcode::kSend, src_stag_, SrcTo(offset)))) return;
          break;
        }
      }
    }
  }

  void Handle(const Completion& c) {
    if (c.status != WcStatus::kSuccess) {
      if (Failed(c)) ++finished_.completion_errors;
      if (!result_.finished && running_) End(false);
      return;
    }
    const uint32_t s = static_cast<uint32_t>(c.wr_id >> 8);
    const uint8_t kind = static_cast<uint8_t>(c.wr_id & 0xFF);
    if (s >= slots_.size() || slots_[s].pending == 0) return;
    if (kind == kRecv && c.byte_len != cfg_.message_bytes) ++finished_.verify_failures;
    if (kind == kRecv || kind == kRead) counters_.bytes_in += c.byte_len;
    if (kind == kWrite || kind == kSend) counters_.bytes_out += c.byte_len;
    --slots_[s].pending;
  }

  // The run is over (ok or not): record it and close the QP gracefully.
  void End(bool ok) {
    if (result_.finished) return;
    result_.finished = true;
    result_.ok = ok && retired_ == cfg_.count;
    running_ = false;
    result_.has_sha256 = cfg_.client_sha256;
    if (cfg_.client_sha256) {
      Sha256 copy = sha_;
      result_.sha256 = copy.Finish();
    }
    TransferRecord& r = recent_[recent_next_];
    r.tuple = sctp_ != nullptr ? tuple_
              : opened_.valid() && opened_.slot < conns_.size() ? conns_[opened_.slot].tuple
                                                                : FourTuple{};
    r.bytes = result_.bytes;
    r.sha256 = result_.sha256;
    r.has_sha256 = cfg_.client_sha256;
    r.complete = result_.ok;
    r.reason = result_.ok ? tcp::CloseReason::kNormal : tcp::CloseReason::kAborted;
    recent_next_ = (recent_next_ + 1) % kRecent;
    recent_count_ = std::min(recent_count_ + 1, kRecent);
    if (qp_ != nullptr && qp_->state() != QpState::kIdle) qp_->Close(clock_->now_us);
  }

  // The TcpService connection entry of the finished QP.
  void Close() {
    if (CloseEntry(opened_)) {
      ++counters_.closed;
      if (!result_.ok) ++counters_.closed_abnormal;
    }
    opened_ = tcp::ConnId{};
  }

  SctpServiceHost* const sctp_;  // transport: sctp, else nullptr
  SharedSctpAssociation* shared_ = nullptr;
  int32_t stream_ = -1;
  bool released_ = false;
  uint64_t finished_ms_ = 0;
  bool tcp_started_ = false;
  const engine::QpOptions options_;
  const uint32_t local_ip_;
  DaemonMemory memory_;
  std::unique_ptr<Qp> qp_;
  uint32_t src_stag_ = 0;
  uint32_t dst_stag_ = 0;
  MutableByteSpan src_;
  MutableByteSpan dst_;
  ResponderPrivateData remote_;
  std::vector<Slot> slots_;
  Phase phase_ = Phase::kRun;
  bool running_ = false;
  bool setup_posted_ = false;
  bool disconnected_ = false;
  uint64_t posted_ = 0;
  uint64_t retired_ = 0;
  uint32_t sends_in_flight_ = 0;
  uint64_t start_us_ = 0;
  uint64_t first_poll_ms_ = UINT64_MAX;
  tcp::ConnId opened_;
  tcp::FourTuple tuple_;
  uint8_t no_pd_ = 0;
  Sha256 sha_;
  IwarpRunResult result_;
};

// iwarp_fpdu_test (test_mode only; iwarp_services.h): one QP on a
// connection established from configuration, its region guarded on both
// sides; a QP that sent or received a Terminate is reset and replaced at
// once with the same sequence numbers.
class FpduTest final : public IwarpService, private engine::QpObserver {
 public:
  FpduTest(const config::ServiceConfig& cfg, const config::IwarpConfig& iw, tcp::TcpStack* stack,
           const ServiceClock* clock, uint32_t max_connections, uint32_t local_ip)
      : IwarpService(cfg, stack, clock, max_connections),
        iw_(iw),
        options_(IwarpQpOptions(iw, cfg)),
        local_ip_(local_ip),
        memory_(2) {}

  absl::Status Start() override {
    if (local_ip_ == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("service ", cfg_.name, ": no interface address for the test connection"));
    }
    absl::StatusOr<uint32_t> stag = memory_.Register(
        cfg_.region_bytes, ddp::kAccessRemoteWrite | ddp::kAccessRemoteRead | ddp::kAccessLocalWrite,
        kTestBaseTo, 0, kFpduTestGuardBytes);
    if (!stag.ok()) return stag.status();
    stag_ = *stag;
    std::memset(memory_.Bytes(stag_).data(), 0, cfg_.region_bytes);
    auto [before, after] = memory_.Guards(stag_);
    std::memset(before.data(), kGuardFill, before.size());
    std::memset(after.data(), kGuardFill, after.size());
    tuple_.local_addr = local_ip_;
    tuple_.local_port = cfg_.port;
    tuple_.remote_addr = cfg_.remote;
    tuple_.remote_port = cfg_.remote_port;
    return Establish(clock_->now_us);
  }

  void Poll(uint64_t now_ms) override {
    TcpService::Poll(now_ms);
    const uint64_t now_us = clock_->now_us;
    if (qp_ != nullptr) {
      qp_->Poll(now_us);
      Completion cqe[kCqBatch];
      while (qp_->PollCompletions(std::span<Completion>(cqe)) == kCqBatch) {
      }
      if (!restart_ && !engine::QpEnded(qp_->state())) return;
      // A Terminate sent or received, or the connection ended: reset it (the
      // generator never closes) and start over with the same sequence
      // numbers, so the next pass of the capture is a new connection.
      if (!engine::QpEnded(qp_->state())) qp_->Abort(now_us);
      AccountFinished(*qp_);
      CloseRecord();
      qp_.reset();
      restart_ = false;
    }
    if (!Establish(now_us).ok()) ++finished_.qp_recycle_failed;  // retried next poll
  }

  void AddLiveQpStats(IwarpServiceCounters* out) const override {
    if (qp_ != nullptr) AddQpStats(out, qp_->stats());
    out->guard_violations += GuardBytesChanged();
  }

  size_t ListQps(std::span<IwarpQpInfo> out) const override {
    if (out.empty() || qp_ == nullptr || qp_->state() == QpState::kIdle) return 0;
    FillInfo(*qp_, tuple_, &out[0]);
    return 1;
  }
  size_t max_qps() const override { return 1; }
  bool WantsPromptPoll() const override { return restart_; }
  TestRegion test_region() const override {
    return TestRegion{true, stag_, kTestBaseTo, cfg_.region_bytes};
  }

 private:
  static constexpr uint64_t kTestBaseTo = 0x5000'0000;
  static constexpr uint8_t kGuardFill = 0xA5;

  absl::Status Establish(uint64_t now_us) {
    if (qp_ == nullptr) {
      absl::StatusOr<std::unique_ptr<Qp>> qp = Qp::Create(options_, *stack_, memory_, *this);
      if (!qp.ok()) return qp.status();
      qp_ = std::move(*qp);
    }
    absl::StatusOr<tcp::ConnId> conn = stack_->AdoptEstablished(
        tuple_, Seq32(cfg_.local_isn), Seq32(cfg_.remote_isn), 65535,
        static_cast<uint32_t>(cfg_.loop_bytes), *qp_, now_us);
    if (!conn.ok()) {
      return absl::Status(conn.status().code(),
                          absl::StrCat("service ", cfg_.name, ": ", conn.status().message()));
    }
    engine::Negotiated n;
    n.revision = iw_.revision;
    n.crc = cfg_.crc;
    n.tx_markers = cfg_.markers;
    n.rx_markers = cfg_.markers;
    n.ird = iw_.ird;
    n.ord = iw_.ord;
    if (!qp_->AttachEstablished(*conn, n)) {
      stack_->Abort(*conn, now_us);
      return absl::InternalError("test QP refused the connection");
    }
    Open(*conn, tuple_);
    opened_ = *conn;
    ++finished_.test_qps_started;
    return absl::OkStatus();
  }

  void CloseRecord() {
    if (CloseEntry(opened_)) ++counters_.closed;
    opened_ = tcp::ConnId{};
  }

  uint64_t GuardBytesChanged() const {
    auto [before, after] = const_cast<DaemonMemory&>(memory_).Guards(stag_);
    uint64_t n = 0;
    for (uint8_t b : before) n += b != kGuardFill;
    for (uint8_t b : after) n += b != kGuardFill;
    return n;
  }

  // engine::QpObserver.
  void OnEstablished(Qp&, ByteSpan) override { ++finished_.established; }
  void OnTerminate(Qp&, const rdmap::TerminateCode& code, bool sent) override {
    NoteTerminate(code, sent);
    restart_ = true;
  }
  void OnDisconnected(Qp&) override { restart_ = true; }

  const config::IwarpConfig iw_;
  const engine::QpOptions options_;
  const uint32_t local_ip_;
  DaemonMemory memory_;
  std::unique_ptr<Qp> qp_;
  uint32_t stag_ = 0;
  tcp::FourTuple tuple_;
  tcp::ConnId opened_;
  bool restart_ = false;
};

}  // namespace

bool EncodeResponderPd(const ResponderPrivateData& pd, MutableByteSpan out) {
  ByteWriter w(out);
  w.U32(kResponderPdMagic);
  w.U8(kResponderPdVersion);
  w.U8(0);
  w.U16(0);
  w.U32(pd.stag);
  w.U32(0);
  w.U64(pd.to);
  w.U64(pd.length);
  w.U32(pd.recv_buffer_bytes);
  w.U32(pd.recv_buffers);
  return w.ok();
}

bool DecodeResponderPd(ByteSpan in, ResponderPrivateData* out) {
  ByteReader r(in);
  const uint32_t magic = r.U32();
  const uint8_t version = r.U8();
  r.Skip(3);
  ResponderPrivateData pd;
  pd.stag = r.U32();
  r.Skip(4);
  pd.to = r.U64();
  pd.length = r.U64();
  pd.recv_buffer_bytes = r.U32();
  pd.recv_buffers = r.U32();
  if (!r.ok() || magic != kResponderPdMagic || version != kResponderPdVersion) return false;
  *out = pd;
  return true;
}

MutableByteSpan DaemonMemory::Resolve(uint64_t handle) {
  if (handle >= regions_.size()) return MutableByteSpan();
  return MutableByteSpan(regions_[handle].get() + guards_[handle], lengths_[handle]);
}

std::pair<MutableByteSpan, MutableByteSpan> DaemonMemory::Guards(uint32_t stag) {
  const ddp::TaggedRegion* r = table_.Find(stag);
  if (r == nullptr || r->handle >= regions_.size()) return {};
  uint8_t* base = regions_[r->handle].get();
  const uint64_t g = guards_[r->handle];
  return {MutableByteSpan(base, g), MutableByteSpan(base + g + lengths_[r->handle], g)};
}

absl::StatusOr<uint32_t> DaemonMemory::Register(uint64_t length, uint8_t access, uint64_t base_to,
                                                 uint32_t pd, uint64_t guard_bytes) {
  ddp::TaggedRegion r;
  r.base_to = base_to;
  r.length = length;
  r.access = access;
  r.pd = pd;
  r.valid = true;
  r.handle = regions_.size();
  absl::StatusOr<uint32_t> stag = table_.Register(r, /*remote_invalidate=*/false);
  if (!stag.ok()) return stag.status();
  // Not value-initialised: large regions stay untouched pages until used.
  regions_.push_back(
      std::make_unique_for_overwrite<uint8_t[]>(std::max<uint64_t>(1, length + 2 * guard_bytes)));
  lengths_.push_back(length);
  guards_.push_back(guard_bytes);
  return *stag;
}

MutableByteSpan DaemonMemory::Bytes(uint32_t stag) {
  const ddp::TaggedRegion* r = table_.Find(stag);
  return r == nullptr ? MutableByteSpan() : Resolve(r->handle);
}

engine::QpOptions IwarpQpOptions(const config::IwarpConfig& iw, const config::ServiceConfig& svc) {
  engine::QpOptions o;
  o.mpa.revision = iw.revision;
  o.mpa.enhanced = iw.enhanced;
  o.mpa.crc = svc.crc;
  o.mpa.want_markers = svc.markers;
  o.mpa.ird = iw.ird;
  o.mpa.ord = iw.ord;
  o.mpa.rtr_types = iw.rtr_types;
  o.mpa.max_private_data = iw.max_private_data;
  o.mpa.request_timeout_us = uint64_t{iw.request_timeout_ms} * 1000;
  o.mpa.reply_timeout_us = uint64_t{iw.reply_timeout_ms} * 1000;
  o.mpa.rtr_timeout_us = uint64_t{iw.rtr_timeout_ms} * 1000;
  o.sq_depth = iw.sq_depth;
  o.rq_depth = iw.rq_depth;
  o.cq_depth = iw.cq_depth;
  o.max_send_sge = 1;  // the services post one buffer per work request: no gather staging
  return o;
}

absl::StatusOr<std::unique_ptr<IwarpService>> IwarpService::Create(
    const config::ServiceConfig& cfg, const config::IwarpConfig& iw, tcp::TcpStack* stack,
    const ServiceClock* clock, uint32_t max_connections, uint32_t local_ip,
    SctpServiceHost* sctp) {
  if (cfg.transport == config::IwarpTransport::kSctp && sctp == nullptr) {
    return absl::FailedPreconditionError(
        "transport: sctp needs sctp.enabled and runs on worker 0 only");
  }
  if (cfg.transport != config::IwarpTransport::kSctp) sctp = nullptr;
  switch (cfg.type) {
    case config::ServiceType::kIwarpResponder:
      return std::unique_ptr<IwarpService>(
          new Responder(cfg, iw, stack, clock, max_connections, sctp, local_ip));
    case config::ServiceType::kIwarpClient:
      return std::unique_ptr<IwarpService>(
          new Client(cfg, iw, stack, clock, max_connections, local_ip, sctp));
    case config::ServiceType::kIwarpFpduTest:
      return std::unique_ptr<IwarpService>(
          new FpduTest(cfg, iw, stack, clock, max_connections, local_ip));
    default:
      return absl::InvalidArgumentError("not an iWARP service type");
  }
}

void IwarpService::AccountFinished(const engine::Qp& qp) { AddQpStats(&finished_, qp.stats()); }

bool IwarpService::CloseEntry(tcp::ConnId id) {
  if (id.slot >= conns_.size()) return false;
  Conn& c = conns_[id.slot];
  if (!c.active || c.generation != id.generation) return false;
  c.active = false;
  --counters_.active;
  return true;
}

IwarpServiceCounters IwarpService::iwarp_counters() const {
  IwarpServiceCounters c = finished_;
  AddLiveQpStats(&c);
  return c;
}

void IwarpService::FillInfo(const engine::Qp& qp, const tcp::FourTuple& tuple,
                            IwarpQpInfo* out) {
  out->state = qp.state();
  out->negotiated = qp.negotiated();
  out->stats = qp.stats();
  out->tuple = tuple;
  out->end = qp.end();
  out->has_term_sent = qp.terminate_sent().has_value();
  out->has_term_received = qp.terminate_received().has_value();
  out->term_sent = qp.terminate_sent().value_or(rdmap::TerminateCode{});
  out->term_received = qp.terminate_received().value_or(rdmap::TerminateCode{});
}

}  // namespace iwarp::dataplane
