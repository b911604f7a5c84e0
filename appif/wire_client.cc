#include "appif/wire_client.h"

#include <errno.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"

namespace iwarp::appif {


// What a command the worker did not acknowledge in time (kDestroyQp,
// kDeregMr, kRegMr) leaves behind: kept mapped and allocated, since the
// worker may still use it, until the worker acknowledges the command
// (ReapZombie). `cmd` is that command; `queued` says whether it reached the
// worker's command ring (if not, FlushZombies sends it before any newer
// command, so the worker sees the commands in the order they were made).
struct WireClient::Zombie {
  WireCommand cmd;
  bool queued = false;
  std::unique_ptr<WireQpContext> ctx;
  Mapping shm;
  std::unique_ptr<Mr> mr;
  std::shared_ptr<Cq> scq, rcq;  // the QP's CQs: the worker may still write them
};

WireClient::WireClient(const SessionServerOptions& options, ddp::FixedStagTable& stags,
                       Counters& counters, Host& host)
    : options_(options),
      engine_(options.wire_engine),
      stags_(stags),
      counters_(counters),
      host_(host) {}

WireClient::~WireClient() = default;

void WireClient::Log(std::string_view line) const {
  if (options_.log) options_.log(line);
}

bool WireClient::HoldsId(uint32_t id) const {
  if (wire_qps_.count(id) != 0) return true;
  for (const auto& z : zombies_) {
    if (z->ctx != nullptr && z->ctx->qp_id == id) return true;  // the worker may still name it
  }
  return false;
}

void WireClient::Shutdown() {
  // Stand-in reject QPs still on the worker are taken back before their
  // memory goes; so are destroys not acknowledged yet.
  while (!reject_ctxs_.empty()) {
    WireCommand c;
    c.type = WireCommandType::kDestroyQp;
    c.qp = reject_ctxs_.begin()->first;
    auto ctx = std::move(reject_ctxs_.begin()->second);
    reject_ctxs_.erase(reject_ctxs_.begin());
    bool queued = false;
    if (Call(&c, &queued) == ETIMEDOUT) {
      auto z = std::make_unique<Zombie>();
      z->ctx = std::move(ctx);
      Bury(std::move(z), c, queued);
    }
  }
  // Late acknowledgements free what waits for them (ReapZombie).
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(options_.wire_ack_timeout_ms);
  while ((!async_destroys_.empty() || !zombies_.empty()) &&
         std::chrono::steady_clock::now() < deadline) {
    if (Poll() == 0) std::this_thread::yield();
  }
  if (!async_destroys_.empty() || !zombies_.empty()) {
    // The worker may still run them (it outlives this server in the
    // daemon: ~Runtime stops it later), so they are not freed here but
    // left to the process's end: a worker stalled for seconds at shutdown.
    Log(absl::StrFormat("app interface: %u wire contexts and regions never acknowledged by the "
                        "worker; left allocated and mapped until the process ends",
                        async_destroys_.size() + zombies_.size()));
    for (auto& [seq, ctx] : async_destroys_) (void)ctx.release();
    for (auto& z : zombies_) (void)z.release();
  }
}

bool WireClient::Push(const WireCommand& cmd) {
  // The worker drains commands every loop; a full ring means it is busy, so
  // the control thread retries (it never makes the worker wait).
  WireEngine* e = engine_;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.wire_ack_timeout_ms);
  // Commands left unsent go first: a kDeregMr of an STag must not follow
  // a newer command about the same STag.
  while (!FlushZombies() || !e->PushCommand(cmd)) {
    Poll();
    if (std::chrono::steady_clock::now() > deadline) {
      Add(counters_.wire_ack_timeouts, 1);
      Log("app interface: wire engine command ring stayed full; command not sent");
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

int WireClient::Call(WireCommand* cmd, bool* queued) {
  WireEngine* e = engine_;
  cmd->seq = NextSeq();
  if (queued != nullptr) *queued = false;
  if (!Push(*cmd)) return ETIMEDOUT;
  if (queued != nullptr) *queued = true;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.wire_ack_timeout_ms);
  for (;;) {
    WireEvent ev;
    if (e->PopEvent(&ev)) {
      if (ev.type == WireEventType::kAck && ev.seq == cmd->seq) return ev.status;
      HandleEvent(ev);
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      Add(counters_.wire_ack_timeouts, 1);
      Log(absl::StrFormat("app interface: wire engine did not acknowledge command %u in %u ms",
                          static_cast<unsigned>(cmd->type), options_.wire_ack_timeout_ms));
      return ETIMEDOUT;
    }
    std::this_thread::yield();
  }
}

uint32_t WireClient::NextSeq() {
  const uint32_t seq = wire_seq_++;
  if (wire_seq_ == 0) wire_seq_ = 1;
  return seq;
}

void WireClient::Bury(std::unique_ptr<Zombie> z, const WireCommand& cmd, bool queued) {
  z->cmd = cmd;
  z->queued = queued;
  zombies_.push_back(std::move(z));
  Add(counters_.wire_unacked_held, 1);
}

bool WireClient::FlushZombies() {
  for (auto& z : zombies_) {
    if (z->queued) continue;
    if (!engine_->PushCommand(z->cmd)) return false;
    z->queued = true;
  }
  return true;
}

void WireClient::ReapZombie(const WireEvent& ack) {
  for (auto it = zombies_.begin(); it != zombies_.end(); ++it) {
    Zombie& z = **it;
    if (!z.queued || z.cmd.seq != ack.seq) continue;
    if (z.cmd.type == WireCommandType::kRegMr && ack.status == 0) {
      // The worker mirrored a registration the application was told had
      // failed: it takes it out again before the bytes are unmapped.
      WireCommand c;
      c.type = WireCommandType::kDeregMr;
      c.stag = z.cmd.stag;
      c.seq = NextSeq();
      z.cmd = c;
      z.queued = engine_->PushCommand(c);
      return;
    }
    zombies_.erase(it);  // the worker let go: the context, rings and bytes are freed
    Sub(counters_.wire_unacked_held, 1);
    return;
  }
}

uint32_t WireClient::Poll() {
  if (!zombies_.empty()) FlushZombies();
  uint32_t n = 0;
  WireEvent ev;
  while (n < kPollBurst && engine_->PopEvent(&ev)) {
    HandleEvent(ev);
    ++n;
  }
  return n;
}

void WireClient::HandleEvent(const WireEvent& ev) {
  auto find_qp = [&]() -> Qp* {
    auto it = wire_qps_.find(ev.qp_id);
    return it != wire_qps_.end() && it->second->wire.get() == ev.qp ? it->second : nullptr;
  };
  switch (ev.type) {
    case WireEventType::kAck:
      async_destroys_.erase(ev.seq);  // a stand-in reject QP is free again
      if (!zombies_.empty()) ReapZombie(ev);  // a late acknowledgement
      return;
    case WireEventType::kConnectRequest:
      if (!host_.OnWireRequest(ev)) {
        WireCommand c;
        c.type = WireCommandType::kDropRequest;
        c.request_id = ev.request_id;
        Push(c);
      }
      return;
    case WireEventType::kRequestGone:
      host_.OnWireRequestGone(ev.request_id);
      return;
    case WireEventType::kRemoteInvalidate:
      // RFC 5040 6.3.1: mirrors the worker's view into the daemon's table.
      (void)stags_.Invalidate(ev.stag, ev.pd, /*remote=*/true);
      return;
    default:
      break;
  }
  // QP events.
  if (auto rit = reject_ctxs_.find(ev.qp); rit != reject_ctxs_.end()) {
    if (ev.type == WireEventType::kConnectFailed || ev.type == WireEventType::kDisconnected) {
      WireCommand c;
      c.type = WireCommandType::kDestroyQp;
      c.qp = ev.qp;
      c.seq = NextSeq();
      if (Push(c)) {
        async_destroys_.emplace(c.seq, std::move(rit->second));
        reject_ctxs_.erase(rit);
      }
    }
    return;
  }
  Qp* qp = find_qp();
  if (qp == nullptr) return;  // destroyed meanwhile
  Event out;
  out.qp_id = qp->id;
  switch (ev.type) {
    case WireEventType::kEstablished:
      qp->state = QpState::kConnected;
      Add(counters_.connections, 1);
      Add(counters_.wire_connections, 1);
      out.type = static_cast<uint32_t>(EventType::kEstablished);
      out.mpa_flags = ev.mpa_flags;
      out.private_data_len = std::min<uint32_t>(ev.private_data_len, kMaxPrivateData);
      std::memcpy(out.private_data, ev.private_data, out.private_data_len);
      break;
    case WireEventType::kConnectFailed:
      // The engine QP cannot connect again: the application destroys it.
      qp->state = QpState::kError;
      out.reason = ev.status;
      if (ev.connect_error == static_cast<uint8_t>(engine::ConnectError::kRejected)) {
        out.type = static_cast<uint32_t>(EventType::kRejected);
        out.private_data_len = std::min<uint32_t>(ev.private_data_len, kMaxPrivateData);
        std::memcpy(out.private_data, ev.private_data, out.private_data_len);
      } else {
        out.type = static_cast<uint32_t>(EventType::kConnectError);
      }
      break;
    case WireEventType::kTerminate:
      // RFC 5040 7.4: the Terminate triple, sent by us or received.
      qp->state = QpState::kError;
      out.type = static_cast<uint32_t>(EventType::kQpError);
      out.reason = ev.sent ? EIO : EREMOTEIO;
      out.term_layer = ev.term_layer;
      out.term_etype = ev.term_etype;
      out.term_code = ev.term_code;
      break;
    case WireEventType::kDisconnected:
      qp->state = QpState::kError;
      out.type = static_cast<uint32_t>(EventType::kDisconnected);
      out.reason = ev.status;  // 0 after a graceful close
      break;
    default:
      return;
  }
  PostEvent(counters_, qp->owner, out);
}

int WireClient::Prepare(Session* s, Qp* qp, const engine::MpaParams& mpa, Transport transport) {
  WireEngine* e = engine_;
  if (wire_qps_.size() + reject_ctxs_.size() >= e->options().max_qps) {
    s->last_error = "the data plane's wire QP limit is reached";
    return EDQUOT;
  }
  for (Cq* cq : {qp->scq, qp->rcq}) {
    if (cq->loopback_bound) {
      s->last_error = "a CQ of this QP serves loopback QPs; a wire QP needs CQs of its own";
      return EINVAL;
    }
  }
  auto ctx = std::make_unique<WireQpContext>();
  ctx->qp_id = qp->id;
  ctx->owner = e;
  const QpLayout layout{qp->sq.entries(), qp->rq.entries()};
  ctx->sq = SpscRing<Sqe>(qp->shm.data() + layout.sq_offset(), layout.sq_depth);
  ctx->sq.AttachAsConsumer();
  ctx->rq = SpscRing<Rqe>(qp->shm.data() + layout.rq_offset(), layout.rq_depth);
  ctx->rq.AttachAsConsumer();
  ctx->notify = qp->notify;
  engine::QpOptions o;
  o.mpa = mpa;
  o.pd = qp->pd;
  o.stream_id = qp->id;
  o.sq_depth = layout.sq_depth;
  o.rq_depth = layout.rq_depth;
  o.cq_depth = layout.sq_depth + layout.rq_depth;
  o.gather_staging = e->gather_staging();  // the engine runs all its QPs on one thread
  // Payload is read from the application's registered memory until TCP has
  // it acknowledged; a deregistration first aborts the QPs still reading
  // from the region (WireEngine, kDeregMr).
  o.zero_copy_tx = options_.wire_zero_copy_tx;
  if (transport == Transport::kSctp) {
    // The worker creates the engine QP on a DDP stream (wire_engine.h).
    ctx->sctp = true;
    ctx->llp_options = o;
  } else {
    auto eqp = engine::Qp::Create(o, e->stack(), e->memory(), *ctx);
    if (!eqp.ok()) {
      s->last_error = std::string(eqp.status().message());
      return EINVAL;
    }
    ctx->engine = std::move(*eqp);
  }
  ctx->InitSlots(layout.sq_depth);
  for (Cq* cq : {qp->scq, qp->rcq}) {
    if (cq->wire == nullptr) {
      auto w = std::make_unique<WireCq>();
      w->id = cq->id;
      w->ring = SpscRing<Cqe>(cq->shm.data(), cq->ring.entries());
      w->ring.AttachAsProducer();
      w->eventfd = cq->eventfd.get();
      cq->wire = std::move(w);
    }
  }
  ctx->scq = qp->scq->wire.get();
  ctx->rcq = qp->rcq->wire.get();
  qp->wire = std::move(ctx);
  return 0;
}

// ---- QPs --------------------------------------------------------------------------------

int WireClient::Connect(Session* s, Qp* qp, const ConnectReq& r) {
  if (static_cast<Transport>(r.transport) == Transport::kSctp && !engine_->has_sctp()) {
    s->last_error = "this daemon's data plane has no SCTP (RDMA over SCTP is not enabled "
                    "in its configuration)";
    return EPROTONOSUPPORT;
  }
  engine::MpaParams mpa = options_.wire_mpa;
  if ((r.mpa_flags & kMpaOverride) != 0) {
    mpa.crc = (r.mpa_flags & kMpaCrc) != 0;
    mpa.want_markers = (r.mpa_flags & kMpaMarkers) != 0;
  }
  if (r.port == 0) {
    s->last_error = "port 0";
    return EINVAL;
  }
  const Transport tr = static_cast<Transport>(r.transport);
  if (int err = Prepare(s, qp, mpa, tr); err != 0) return err;
  WireCommand c;
  c.type = WireCommandType::kConnect;
  c.transport = tr;
  c.qp = qp->wire.get();
  c.remote_ip = r.ipv4;
  c.port = r.port;
  c.private_data_len = r.private_data_len;
  std::memcpy(c.private_data, r.private_data, r.private_data_len);
  if (!Push(c)) {
    qp->wire.reset();
    return EAGAIN;
  }
  qp->wire_owned = true;
  qp->state = QpState::kConnecting;
  wire_qps_[qp->id] = qp;
  Add(counters_.wire_qps_active, 1);
  return 0;
}

int WireClient::Accept(Session* s, Qp* qp, Transport transport, uint32_t engine_request_id,
                       const AcceptReq& r) {
  // A remote Request: the engine answers it with our private data; the
  // QP reports kEstablished when the first FPDU / RTR arrives.
  if (int err = Prepare(s, qp, options_.wire_mpa, transport); err != 0) return err;
  WireCommand c;
  c.type = WireCommandType::kAccept;
  c.transport = transport;
  c.qp = qp->wire.get();
  c.request_id = engine_request_id;
  c.private_data_len = r.private_data_len;
  std::memcpy(c.private_data, r.private_data, r.private_data_len);
  if (!Push(c)) return EAGAIN;
  qp->wire_owned = true;
  qp->state = QpState::kConnecting;
  wire_qps_[qp->id] = qp;
  Add(counters_.wire_qps_active, 1);
  return 0;
}

int WireClient::Reject(Transport transport, uint32_t engine_request_id, const RejectReq& r) {
  if (transport == Transport::kSctp) {
    // RFC 5043 6.3: the worker answers the held Initiate with a session
    // Reject carrying our private data; no QP is involved.
    WireCommand c;
    c.type = WireCommandType::kReject;
    c.transport = Transport::kSctp;
    c.request_id = engine_request_id;
    c.private_data_len = r.private_data_len;
    std::memcpy(c.private_data, r.private_data, r.private_data_len);
    return Push(c) ? 0 : EAGAIN;
  }
  // A stand-in engine QP sends the MPA Reply with R=1 and our private
  // data (RFC 5044 7.1.2), then hands itself back.
  auto ctx = std::make_unique<WireQpContext>();
  ctx->reject_only = true;
  engine::QpOptions o;
  o.mpa = options_.wire_mpa;
  o.sq_depth = 1;
  o.rq_depth = 1;
  o.cq_depth = 2;
  o.max_send_sge = 1;  // sends only the MPA Reply
  auto eqp = engine::Qp::Create(o, engine_->stack(), engine_->memory(), *ctx);
  if (!eqp.ok()) return ENOMEM;
  ctx->engine = std::move(*eqp);
  ctx->owner = engine_;
  WireCommand c;
  c.type = WireCommandType::kReject;
  c.qp = ctx.get();
  c.request_id = engine_request_id;
  c.private_data_len = r.private_data_len;
  std::memcpy(c.private_data, r.private_data, r.private_data_len);
  if (!Push(c)) return EAGAIN;
  reject_ctxs_.emplace(ctx.get(), std::move(ctx));
  return 0;
}

int WireClient::Disconnect(Qp* qp) {
  // RFC 5040 5.5 graceful close; kDisconnected arrives from the worker.
  WireCommand c;
  c.type = WireCommandType::kDisconnect;
  c.qp = qp->wire.get();
  return Push(c) ? 0 : EAGAIN;
}

void WireClient::DestroyQp(Session* s, Qp* qp) {
  // The worker lets go of the engine QP and the rings first.
  WireCommand c;
  c.type = WireCommandType::kDestroyQp;
  c.qp = qp->wire.get();
  wire_qps_.erase(qp->id);
  Sub(counters_.wire_qps_active, 1);
  bool queued = false;
  if (Call(&c, &queued) == ETIMEDOUT) {
    auto z = std::make_unique<Zombie>();
    z->ctx = std::move(qp->wire);
    z->shm = std::move(qp->shm);
    z->scq = s->cqs[qp->scq->id];
    z->rcq = s->cqs[qp->rcq->id];
    Bury(std::move(z), c, queued);
  }
}

// ---- memory regions and listeners ----------------------------------------------------------

int WireClient::RegMr(Session* s, std::unique_ptr<Mr>* mr, const ddp::TaggedRegion& region,
                      bool remote_invalidate) {
  WireCommand c;
  c.type = WireCommandType::kRegMr;
  c.stag = region.stag;
  c.region = region;
  c.region.valid = true;
  c.mem = (*mr)->map.data();
  c.remote_invalidate = remote_invalidate;
  bool queued = false;
  const int werr = Call(&c, &queued);
  if (werr == 0) return 0;
  stags_.Deregister(region.stag, region.pd);
  if (werr == ETIMEDOUT) {
    // The worker may yet insert it: keep the bytes mapped until it
    // answers (and, if it did insert them, until it takes them out).
    auto z = std::make_unique<Zombie>();
    z->mr = std::move(*mr);
    Bury(std::move(z), c, queued);
  }
  s->last_error = "the data plane could not mirror the registration";
  return werr == ETIMEDOUT ? ETIMEDOUT : ENOSPC;
}

void WireClient::DeregMr(std::unique_ptr<Mr> mr) {
  // The worker must stop using the bytes before they are unmapped.
  WireCommand c;
  c.type = WireCommandType::kDeregMr;
  c.stag = mr->stag;
  bool queued = false;
  if (Call(&c, &queued) == ETIMEDOUT) {
    auto z = std::make_unique<Zombie>();
    z->mr = std::move(mr);
    Bury(std::move(z), c, queued);
  }
}

void WireClient::Invalidate(uint32_t stag, uint32_t pd) {
  WireCommand c;
  c.type = WireCommandType::kInvalidate;
  c.stag = stag;
  c.pd = pd;
  (void)Call(&c);  // the worker's view may already be invalid (remote)
}

int WireClient::Listen(Session* s, uint32_t listener_id, uint16_t port, Transport transport) {
  WireCommand c;
  c.type = WireCommandType::kListen;
  c.transport = transport;
  c.listener_id = listener_id;
  c.port = port;
  const int err = Call(&c);
  if (err == 0) return 0;
  const AppPortTable* ports = engine_->options().app_ports;
  if (err == EADDRINUSE && transport == Transport::kTcp && ports != nullptr &&
      ports->Reserved(port)) {
    s->last_error = absl::StrFormat(
        "TCP port %u is used by a built-in service of the daemon (its services: "
        "configuration); pick another port",
        port);
    return err;
  }
  s->last_error = err == EADDRINUSE
                      ? (transport == Transport::kSctp
                             ? "port already in use on the data plane's SCTP endpoint"
                             : "port already in use on the data plane's TCP stack")
                      : "the data plane could not listen on that port";
  return err;
}

void WireClient::Unlisten(uint32_t listener_id) {
  // The worker stops listening and resets the Requests nobody answered.
  WireCommand c;
  c.type = WireCommandType::kUnlisten;
  c.listener_id = listener_id;
  (void)Call(&c);
}

}  // namespace iwarp::appif
