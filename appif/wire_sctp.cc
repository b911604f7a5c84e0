// WireEngine over SCTP (RFC 5043): application QPs on DDP streams of SCTP
// associations of the worker's endpoint (sctp::SctpEndpoint). See wire_engine.h for
// the connection model (one association per active connect, Initiates held
// for the application's accept / reject on the passive side).
#include <errno.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "appif/wire_engine.h"
#include "iwarp/sctp_llp.h"
#include "mpa/mpa_frame.h"
#include "sctp/ddp_session.h"
#include "sctp/endpoint.h"

namespace iwarp::appif {

namespace {
void Bump(std::atomic<uint64_t>& c) {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
}  // namespace

// One association: its streams run application QPs (SctpStreams) and its
// Initiates on streams without a QP are held for the application.
struct WireEngine::SctpAssoc final : sctp::DdpLlpEvents {
  SctpAssoc(WireEngine* e, uint16_t nstreams)
      : eng(e), streams(nstreams), qps(nstreams, nullptr) {}

  WireEngine* eng;
  engine::SctpStreams streams;
  std::vector<WireQpContext*> qps;  // per DDP stream; sized once
  std::unique_ptr<sctp::SctpAssociation> handle;  // the endpoint's; aborts when reset alive
  bool used = false;
  bool passive = false;
  bool down = false;       // OnAssociationDown seen (or refused for DDP)
  bool closing = false;    // Shutdown() called: reclaimed once down
  uint32_t listener_id = 0;  // passive: the listener that accepted it
  WireQpContext* connecting = nullptr;  // active: QP waiting for the association
  uint32_t nrequests = 0;  // held Initiates (SctpRequest) on it
  uint64_t since_us = 0;   // opened / last lost its QPs or requests

  bool Idle() const {
    if (connecting != nullptr || nrequests != 0) return false;
    for (const WireQpContext* q : qps) {
      if (q != nullptr) return false;
    }
    return true;
  }

  // sctp::DdpLlpEvents (raised inside the endpoint's Poll on the worker).
  void OnAssociationDown() override;
  void OnInitiate(uint16_t stream, ByteSpan private_data) override;
  void OnAccepted(uint16_t stream, ByteSpan pd) override { streams.OnAccepted(stream, pd); }
  void OnRejected(uint16_t stream, ByteSpan pd) override { streams.OnRejected(stream, pd); }
  void OnStreamEnded(uint16_t stream, sctp::StreamEnd why) override;
  void OnSegment(uint16_t stream, ByteSpan seg) override { streams.OnSegment(stream, seg); }
};

// An Initiate held until the application answers (RFC 5043 6.4 allows the
// ULP to decide later). `pd` keeps the whole session private data, IRD/ORD
// block included, to be replayed into the accepting QP.
struct SctpRequest {
  bool used = false;
  uint32_t request_id = 0;
  uint32_t listener_id = 0;
  WireEngine::SctpAssoc* a = nullptr;
  uint16_t stream = 0;
  uint64_t since_us = 0;
  uint32_t len = 0;
  uint8_t pd[mpa::kMaxPrivateDataLength] = {};
};

void FreeRequest(SctpRequest& r) {
  if (r.a != nullptr && r.a->nrequests > 0) --r.a->nrequests;
  r = SctpRequest{};
}

// An application's SCTP listening port. The endpoint hands it completed
// associations from its Poll (on the worker).
struct WireEngine::SctpListener final : sctp::AcceptHandler {
  WireEngine* eng = nullptr;
  bool used = false;
  uint32_t id = 0;
  uint16_t port = 0;
  std::unique_ptr<sctp::SctpListener> listener;

  void OnAssociationAccepted(std::unique_ptr<sctp::SctpAssociation> association) override {
    eng->AdoptSctp(std::move(association), id);
  }
};

struct WireEngine::SctpState {
  std::vector<std::unique_ptr<SctpAssoc>> assocs;  // max_sctp_associations records
  std::vector<SctpRequest> requests;               // max_pending
  std::vector<WireEngine::SctpListener> listeners;  // max_listeners; never moved after Create
  uint32_t live = 0;  // association records in use (PollSctp has nothing to do at 0)
  std::atomic<uint64_t> live_stat{0};  // `live` for stats()
  // Written by the worker, read by stats() anywhere (relaxed).
  std::atomic<uint64_t> associations{0};
  std::atomic<uint64_t> associations_refused{0};
  std::atomic<uint64_t> initiates_refused{0};
  std::atomic<uint64_t> requests_reported{0};
};

void WireEngine::SctpStateDeleter::operator()(SctpState* s) const {
  if (s == nullptr) return;
  // QPs go before their SctpStreams, the streams' association after them.
  for (auto& a : s->assocs) a->streams.set_association(nullptr);
  delete s;
}

absl::Status WireEngine::CreateSctp() {
  const uint16_t n = options_.sctp->config().association.streams;
  if (n == 0) return absl::InvalidArgumentError("SCTP endpoint with no DDP streams");
  if (options_.max_sctp_associations == 0) {
    return absl::InvalidArgumentError("max_sctp_associations must be positive");
  }
  sctp_.reset(new SctpState);
  sctp_->assocs.reserve(options_.max_sctp_associations);
  for (uint32_t i = 0; i < options_.max_sctp_associations; ++i) {
    sctp_->assocs.push_back(std::make_unique<SctpAssoc>(this, n));
  }
  sctp_->requests.resize(options_.max_pending);
  sctp_->listeners.resize(options_.max_listeners);
  for (WireEngine::SctpListener& l : sctp_->listeners) l.eng = this;
  return absl::OkStatus();
}

void WireEngine::SctpStats(WireEngineStats* out) const {
  auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  out->requests += r(sctp_->requests_reported);
  out->sctp_associations = r(sctp_->associations);
  out->sctp_associations_active = r(sctp_->live_stat);
  out->sctp_associations_refused = r(sctp_->associations_refused);
  out->sctp_initiates_refused = r(sctp_->initiates_refused);
}

bool WireEngine::UnlistenSctp(uint32_t listener_id) {
  bool found = false;
  for (WireEngine::SctpListener& l : sctp_->listeners) {
    if (!l.used || l.id != listener_id) continue;
    l.listener.reset();
    l.used = false;
    found = true;
  }
  // Initiates held for it are rejected.
  for (SctpRequest& r : sctp_->requests) {
    if (r.used && r.listener_id == listener_id) (void)DropSctpRequest(r.request_id);
  }
  return found;
}

// ---------------------------------------------------------------- events

// From the endpoint's Poll: an association a listener of ours accepted.
void WireEngine::AdoptSctp(std::unique_ptr<sctp::SctpAssociation> association,
                           uint32_t listener_id) {
  SctpAssoc* a = nullptr;
  for (auto& rec : sctp_->assocs) {
    if (!rec->used) {
      a = rec.get();
      break;
    }
  }
  if (a == nullptr) {
    Bump(sctp_->associations_refused);
    return;  // the handle goes: the association is aborted
  }
  Bump(sctp_->associations);
  ++sctp_->live;
  sctp_->live_stat.store(sctp_->live, std::memory_order_relaxed);
  association->set_events(a);
  a->handle = std::move(association);
  a->streams.set_association(&a->handle->ddp());
  a->used = true;
  a->passive = true;
  a->down = false;
  a->closing = false;
  a->connecting = nullptr;
  a->listener_id = listener_id;
  a->since_us = now_us_;
}

void WireEngine::SctpAssoc::OnAssociationDown() {
  down = true;
  since_us = eng->now_us_;
  for (SctpRequest& r : eng->sctp_->requests) {
    if (!r.used || r.a != this) continue;
    WireEvent ev;
    ev.type = WireEventType::kRequestGone;
    ev.request_id = r.request_id;
    ev.listener_id = r.listener_id;
    eng->Emit(ev);
    FreeRequest(r);
  }
  if (connecting != nullptr) {
    // Never came up (or the peer is no DDP endpoint, RFC 5043 11.1).
    const bool refused = handle != nullptr &&
                         handle->ddp().state() == sctp::DdpAssociation::State::kRefused;
    eng->FailCommand(connecting, refused ? EPROTONOSUPPORT : ECONNREFUSED);
    connecting = nullptr;
  }
  streams.OnAssociationDown();
}

void WireEngine::SctpAssoc::OnInitiate(uint16_t stream, ByteSpan private_data) {
  if (stream < qps.size() && qps[stream] != nullptr) {
    streams.OnInitiate(stream, private_data);  // the QP answers (e.g. already busy)
    return;
  }
  // A new session from the peer: held for the application of the listener.
  bool listening = false;
  if (passive) {
    for (const WireEngine::SctpListener& l : eng->sctp_->listeners) listening |= l.used && l.id == listener_id;
  }
  SctpRequest* slot = nullptr;
  if (listening && private_data.size() >= mpa::kIrdOrdSize &&
      private_data.size() <= mpa::kMaxPrivateDataLength) {
    for (SctpRequest& r : eng->sctp_->requests) {
      if (!r.used) {
        slot = &r;
        break;
      }
    }
  }
  if (slot == nullptr) {
    // No listener, no request slot, or not an RFC 6581 IRD/ORD block.
    Bump(eng->sctp_->initiates_refused);
    (void)handle->ddp().Reject(stream, ByteSpan());
    return;
  }
  *slot = SctpRequest{};
  slot->used = true;
  ++nrequests;
  slot->request_id = eng->next_request_id_++;
  if (eng->next_request_id_ == 0) eng->next_request_id_ = 1;
  slot->listener_id = listener_id;
  slot->a = this;
  slot->stream = stream;
  slot->since_us = eng->now_us_;
  slot->len = static_cast<uint32_t>(private_data.size());
  std::memcpy(slot->pd, private_data.data(), private_data.size());
  Bump(eng->sctp_->requests_reported);
  WireEvent ev;
  ev.type = WireEventType::kConnectRequest;
  ev.listener_id = listener_id;
  ev.request_id = slot->request_id;
  ev.peer_ip = handle->remote_ip();
  ev.peer_port = handle->remote_port();
  // The application sees its peer's private data, after the IRD/ORD block.
  ev.private_data_len = std::min<uint32_t>(slot->len - mpa::kIrdOrdSize, kMaxPrivateData);
  std::memcpy(ev.private_data, slot->pd + mpa::kIrdOrdSize, ev.private_data_len);
  eng->Emit(ev);
}

void WireEngine::SctpAssoc::OnStreamEnded(uint16_t stream, sctp::StreamEnd why) {
  for (SctpRequest& r : eng->sctp_->requests) {
    if (!r.used || r.a != this || r.stream != stream) continue;
    // The peer gave up on its Initiate before the application answered.
    WireEvent ev;
    ev.type = WireEventType::kRequestGone;
    ev.request_id = r.request_id;
    ev.listener_id = r.listener_id;
    eng->Emit(ev);
    FreeRequest(r);
    return;
  }
  streams.OnStreamEnded(stream, why);
}

// ---------------------------------------------------------------- commands

bool WireEngine::DropSctpRequest(uint32_t request_id) {
  for (SctpRequest& r : sctp_->requests) {
    if (!r.used || r.request_id != request_id) continue;
    Bump(sctp_->initiates_refused);
    if (r.a->handle != nullptr) (void)r.a->handle->ddp().Reject(r.stream, ByteSpan());
    r.a->since_us = now_us_;
    FreeRequest(r);
    return true;
  }
  return false;
}

void WireEngine::HandleSctpCommand(const WireCommand& c) {
  sctp::SctpEndpoint& ep = *options_.sctp;
  switch (c.type) {
    case WireCommandType::kListen: {
      WireEngine::SctpListener* free_slot = nullptr;
      for (WireEngine::SctpListener& l : sctp_->listeners) {
        if (!l.used) {
          free_slot = &l;
          break;
        }
      }
      if (free_slot == nullptr) {
        Ack(c.seq, ENOSPC);
        return;
      }
      for (const WireEngine::SctpListener& l : sctp_->listeners) {
        if (l.used && l.port == c.port) {
          Ack(c.seq, EADDRINUSE);
          return;
        }
      }
      absl::StatusOr<std::unique_ptr<sctp::SctpListener>> sl = ep.Listen(c.port, free_slot);
      if (!sl.ok()) {
        // The endpoint's listener table is full, or the port is taken (a
        // built-in service listens on it).
        Ack(c.seq, absl::IsResourceExhausted(sl.status()) ? ENOSPC : EADDRINUSE);
        return;
      }
      free_slot->listener = std::move(*sl);
      free_slot->used = true;
      free_slot->id = c.listener_id;
      free_slot->port = c.port;
      Ack(c.seq, 0);
      return;
    }
    case WireCommandType::kConnect: {
      WireQpContext* qp = c.qp;
      SctpAssoc* a = nullptr;
      for (auto& rec : sctp_->assocs) {
        if (!rec->used) {
          a = rec.get();
          break;
        }
      }
      if (a == nullptr) {
        Bump(sctp_->associations_refused);
        FailCommand(qp, ENOBUFS);
        return;
      }
      if (!Activate(qp)) {
        FailCommand(qp, ENOBUFS);
        return;
      }
      absl::StatusOr<std::unique_ptr<sctp::SctpAssociation>> as =
          ep.Connect(c.remote_ip, c.port, a);
      if (!as.ok()) {
        Deactivate(qp);
        FailCommand(qp, absl::IsResourceExhausted(as.status()) ? ENOBUFS : ENETUNREACH);
        return;
      }
      a->handle = std::move(*as);
      a->streams.set_association(&a->handle->ddp());
      absl::StatusOr<std::unique_ptr<engine::Qp>> eq =
          a->streams.CreateQp(0, qp->llp_options, memory(), *qp);
      if (!eq.ok()) {
        a->streams.set_association(nullptr);
        a->handle.reset();  // ABORT
        Deactivate(qp);
        FailCommand(qp, EINVAL);
        return;
      }
      Bump(sctp_->associations);
      ++sctp_->live;
      sctp_->live_stat.store(sctp_->live, std::memory_order_relaxed);
      a->used = true;
      a->passive = false;
      a->down = false;
      a->closing = false;
      a->since_us = now_us_;
      a->qps[0] = qp;
      a->connecting = qp;
      qp->engine = std::move(*eq);
      qp->sctp_assoc = a;
      qp->sctp_stream = 0;
      qp->reply_pd_len = std::min<uint32_t>(c.private_data_len, kMaxPrivateData);
      std::memcpy(qp->reply_pd, c.private_data, qp->reply_pd_len);
      return;  // the Initiate follows when the association is up (PollSctp)
    }
    case WireCommandType::kAccept: {
      WireQpContext* qp = c.qp;
      SctpRequest* r = nullptr;
      for (SctpRequest& x : sctp_->requests) {
        if (x.used && x.request_id == c.request_id) r = &x;
      }
      if (r == nullptr || r->a->handle == nullptr || r->a->down) {
        FailCommand(qp, ECONNRESET);
        return;
      }
      SctpAssoc* a = r->a;
      if (a->qps[r->stream] != nullptr || !Activate(qp)) {
        FailCommand(qp, ENOBUFS);
        return;
      }
      absl::StatusOr<std::unique_ptr<engine::Qp>> eq =
          a->streams.CreateQp(r->stream, qp->llp_options, memory(), *qp);
      if (!eq.ok()) {
        Deactivate(qp);
        FailCommand(qp, EINVAL);
        return;
      }
      qp->engine = std::move(*eq);
      qp->sctp_assoc = a;
      qp->sctp_stream = r->stream;
      qp->accept = true;
      qp->reply_pd_len = std::min<uint32_t>(c.private_data_len, kMaxPrivateData);
      std::memcpy(qp->reply_pd, c.private_data, qp->reply_pd_len);
      a->qps[r->stream] = qp;
      const SctpRequest held = *r;
      FreeRequest(*r);
      // The engine sees the held Initiate as if it had just arrived and
      // answers it with the application's decision (RFC 5043 6.2).
      qp->engine->Poll(now_us_);
      qp->engine->OnLlpInitiate(ByteSpan(held.pd, held.len));
      return;
    }
    case WireCommandType::kReject: {
      // RFC 5043 6.3: the session Reject carries the application's private
      // data as is (no IRD/ORD block: the session never opens).
      for (SctpRequest& r : sctp_->requests) {
        if (!r.used || r.request_id != c.request_id) continue;
        if (r.a->handle != nullptr && !r.a->down) {
          (void)r.a->handle->ddp().Reject(r.stream,
                                   ByteSpan(c.private_data,
                                            std::min<uint32_t>(c.private_data_len, kMaxPrivateData)));
        }
        r.a->since_us = now_us_;
        FreeRequest(r);
        break;
      }
      return;
    }
    default:
      return;
  }
}

void WireEngine::ReleaseSctp(WireQpContext* qp) {
  SctpAssoc* a = static_cast<SctpAssoc*>(qp->sctp_assoc);
  if (qp->engine != nullptr) {
    const engine::QpState st = qp->engine->state();
    if (st != engine::QpState::kIdle && !engine::QpEnded(st)) qp->engine->Abort(now_us_);
    qp->engine.reset();  // detaches from its stream (worker-side destroy)
  }
  qp->sctp_assoc = nullptr;
  if (a == nullptr) return;
  if (qp->sctp_stream < a->qps.size() && a->qps[qp->sctp_stream] == qp) {
    a->qps[qp->sctp_stream] = nullptr;
  }
  if (a->connecting == qp) a->connecting = nullptr;
  a->since_us = now_us_;
  if (!a->passive && a->Idle() && a->handle != nullptr && !a->down && !a->closing) {
    // One association per active connect: it ends with its QP.
    a->handle->ddp().Shutdown();
    a->closing = true;
  }
}

// ---------------------------------------------------------------- poll

uint32_t WireEngine::PollSctp() {
  if (sctp_->live == 0) return 0;  // held Initiates need an association too
  uint32_t work = 0;
  // Unanswered Initiates are rejected (a peer cannot hold the slots).
  for (SctpRequest& r : sctp_->requests) {
    if (r.used && now_us_ - r.since_us > options_.pending_timeout_us) {
      WireEvent ev;
      ev.type = WireEventType::kRequestGone;
      ev.request_id = r.request_id;
      ev.listener_id = r.listener_id;
      Emit(ev);
      (void)DropSctpRequest(r.request_id);
    }
  }
  for (auto& rec : sctp_->assocs) {
    SctpAssoc* a = rec.get();
    if (!a->used) continue;
    if (a->connecting != nullptr) {
      WireQpContext* qp = a->connecting;
      const sctp::DdpAssociation::State st = a->handle->ddp().state();
      if (st == sctp::DdpAssociation::State::kUp) {
        a->connecting = nullptr;
        const absl::Status s =
            qp->engine->ConnectLlp(ByteSpan(qp->reply_pd, qp->reply_pd_len), now_us_);
        if (!s.ok()) FailCommand(qp, absl::IsInvalidArgument(s) ? EINVAL : EAGAIN);
        ++work;
      } else if (now_us_ - a->since_us > options_.sctp_connect_timeout_us) {
        a->connecting = nullptr;
        FailCommand(qp, ETIMEDOUT);
      }
    }
    const sctp::DdpAssociation::State st = a->handle->ddp().state();
    const bool gone = a->down || st == sctp::DdpAssociation::State::kDown ||
                      st == sctp::DdpAssociation::State::kRefused;
    if (!a->Idle()) continue;
    if (gone || (a->closing && now_us_ - a->since_us > options_.pending_timeout_us)) {
      a->streams.set_association(nullptr);
      a->handle.reset();  // aborts what is still alive
      a->used = false;
      --sctp_->live;
      sctp_->live_stat.store(sctp_->live, std::memory_order_relaxed);
      ++work;
    } else if (a->passive && !a->closing && now_us_ - a->since_us > options_.pending_timeout_us) {
      a->handle->ddp().Shutdown();  // nobody uses it any more
      a->closing = true;
      a->since_us = now_us_;
    }
  }
  return work;
}

}  // namespace iwarp::appif
