#include "appif/wire_engine.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "appif/wake_pipe.h"
#include "mpa/mpa_frame.h"

namespace iwarp::appif {

namespace {

constexpr uint32_t kCommandsPerPoll = 16;
// Pending-connection timeouts are checked at least this often (they may
// fire this much late; pending_timeout_us is seconds).
constexpr uint64_t kPendingScanUs = 1000;
// Events one command can cause at most; a command is taken only when the
// event ring has this much room (back-pressure instead of a lost event).
constexpr int64_t kEventsPerCommand = 4;

void RingEventfd(int fd) {
  if (fd < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(fd, &one, sizeof(one));
}

void* AllocRing(size_t bytes) {
  const size_t rounded = (bytes + kCacheLine - 1) / kCacheLine * kCacheLine;
  void* p = std::aligned_alloc(kCacheLine, rounded);
  if (p != nullptr) std::memset(p, 0, rounded);
  return p;
}

int ConnectErrno(engine::ConnectError e) {
  switch (e) {
    case engine::ConnectError::kTcpFailed: return ECONNREFUSED;
    case engine::ConnectError::kTimeout: return ETIMEDOUT;
    case engine::ConnectError::kRejected: return ECONNREFUSED;
    case engine::ConnectError::kRejectedLocally: return ECONNABORTED;
    case engine::ConnectError::kNoMatchingRtr:
    case engine::ConnectError::kInsufficientIrd:
    case engine::ConnectError::kInvalidStartupFrame: return EPROTO;
    case engine::ConnectError::kNone: break;
  }
  return EIO;
}

// The errno a kDisconnected event carries: 0 after a graceful close (the
// engine QP kClosed), else why the connection failed.
int DisconnectErrno(const engine::Qp& qp) {
  if (qp.state() == engine::QpState::kClosed) return 0;
  switch (qp.end()) {
    case engine::QpEnd::kReset: return ECONNRESET;
    case engine::QpEnd::kTimeout: return ETIMEDOUT;
    case engine::QpEnd::kSetupFailed: return ConnectErrno(qp.connect_error());
    case engine::QpEnd::kTerminate: return EPROTO;
    case engine::QpEnd::kNone:
    case engine::QpEnd::kClosed:
    case engine::QpEnd::kAborted:
    case engine::QpEnd::kLlpFailed: break;
  }
  return ECONNABORTED;
}

WcOpcode SqWcOpcode(uint8_t op) {
  if (op == static_cast<uint8_t>(WrOpcode::kRdmaWrite)) return WcOpcode::kRdmaWrite;
  if (op == static_cast<uint8_t>(WrOpcode::kRdmaRead)) return WcOpcode::kRdmaRead;
  return WcOpcode::kSend;
}

// The ring's SG list as the engine's (the engine gathers Sends and Writes
// and scatters receives over up to kMaxSge SGEs). SGEs of zero length name
// no memory and are left out. False for more than kMaxSge entries.
static_assert(engine::kMaxSge == kMaxSge);
bool ToSgeList(const Sge* sge, uint32_t num_sge, engine::SgeList* out) {
  *out = engine::SgeList{};
  if (num_sge > kMaxSge) return false;
  for (uint32_t i = 0; i < num_sge; ++i) {
    if (sge[i].length == 0) continue;
    out->Add(engine::LocalSge{sge[i].lkey, sge[i].addr, sge[i].length});
  }
  return true;
}

}  // namespace

struct WireEngine::Counters {
#define WIRE_COUNTER(f) std::atomic<uint64_t> f{0};
  WIRE_COUNTER(commands)
  WIRE_COUNTER(events)
  WIRE_COUNTER(events_dropped)
  WIRE_COUNTER(wrs_posted)
  WIRE_COUNTER(recvs_posted)
  WIRE_COUNTER(completions)
  WIRE_COUNTER(wrs_flushed)
  WIRE_COUNTER(bad_sqes)
  WIRE_COUNTER(bad_rqes)
  WIRE_COUNTER(ring_corruptions)
  WIRE_COUNTER(requests)
  WIRE_COUNTER(requests_refused)
  WIRE_COUNTER(replies_sent)
  WIRE_COUNTER(rejects_sent)
  WIRE_COUNTER(connections)
  WIRE_COUNTER(tcp_port_holds)
  WIRE_COUNTER(listens_reserved)
  WIRE_COUNTER(dereg_aborts)
  WIRE_COUNTER(zero_copy_fpdus)
#undef WIRE_COUNTER
  // Published by the worker (PublishListenerStats), read by stats().
  static constexpr size_t kGateFields = 0
#define IWARP_WIRE_COUNT_FIELD(f) +1
      IWARP_MPA_GATE_COUNTERS(IWARP_WIRE_COUNT_FIELD);
#undef IWARP_WIRE_COUNT_FIELD
  struct ListenerSnap {
    std::atomic<uint32_t> id{0};
    std::atomic<uint32_t> port{0};  // 0: no listener in this slot
    std::atomic<uint64_t> fields[kGateFields + 2];  // gate counters, replies, rejects
  };
  std::atomic<uint64_t> gate_total[kGateFields];
  std::unique_ptr<ListenerSnap[]> listeners;
};

namespace {
// Single writer (the worker): a relaxed load + store is enough.
void Bump(std::atomic<uint64_t>& c, uint64_t v = 1) {
  c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}
}  // namespace

void WireEngine::FreeDeleter::operator()(void* p) const { std::free(p); }

// ---------------------------------------------------------------- STag view

WireStagView::WireStagView(uint32_t capacity) : slots_(size_t{capacity} + 1) {}

const ddp::TaggedRegion* WireStagView::Find(uint32_t stag) const {
  const uint32_t idx = ddp::StagIndex(stag);
  if (idx == 0 || idx >= slots_.size() || !slots_[idx].used) return nullptr;
  const Slot& s = slots_[idx];
  return s.region.stag == stag ? &s.region : nullptr;
}

bool WireStagView::Insert(const ddp::TaggedRegion& r, uint8_t* mem, bool remote_invalidate) {
  const uint32_t idx = ddp::StagIndex(r.stag);
  if (idx == 0 || idx >= slots_.size() || mem == nullptr) return false;
  Slot& s = slots_[idx];
  s.region = r;
  s.region.handle = idx;
  s.mem = mem;
  s.used = true;
  s.remote_invalidate = remote_invalidate;
  return true;
}

void WireStagView::Remove(uint32_t stag) {
  const uint32_t idx = ddp::StagIndex(stag);
  if (idx == 0 || idx >= slots_.size() || slots_[idx].region.stag != stag) return;
  slots_[idx] = Slot{};
}

ddp::StagStatus WireStagView::Invalidate(uint32_t stag, uint32_t pd, bool remote) {
  const uint32_t idx = ddp::StagIndex(stag);
  if (idx == 0 || idx >= slots_.size()) return ddp::StagStatus::kInvalidStag;
  Slot& s = slots_[idx];
  if (!s.used || s.region.stag != stag || !s.region.valid) return ddp::StagStatus::kInvalidStag;
  if (s.region.pd != pd) return ddp::StagStatus::kWrongPd;
  if (remote && !s.remote_invalidate) return ddp::StagStatus::kNotInvalidatable;
  s.region.valid = false;
  return ddp::StagStatus::kOk;
}

MutableByteSpan WireStagView::Bytes(uint64_t handle) {
  if (handle == 0 || handle >= slots_.size() || !slots_[handle].used) return MutableByteSpan();
  Slot& s = slots_[handle];
  return MutableByteSpan(s.mem, s.region.length);
}

// ---------------------------------------------------------------- passive side

// A listening port of an application (iwarp_listen) on this worker's stack.
// Its MpaGate holds each accepted connection until a valid MPA Request
// arrived (iwarp/mpa_gate.h: bounded per port and per source, timed out);
// only then does the connection take a Pending slot and the application see
// a connect request.
struct WireEngine::Listener final : engine::MpaGateOwner {
  WireEngine* eng = nullptr;
  uint32_t id = 0;
  uint16_t port = 0;
  bool used = false;
  std::unique_ptr<engine::MpaGate> gate;  // made at listen (control command)
  uint64_t replies_sent = 0;  // iwarp_accept / iwarp_reject answers to its requests
  uint64_t rejects_sent = 0;

  engine::GateDecision OnMpaRequest(tcp::ConnId conn, const tcp::FourTuple& tuple,
                                    const mpa::StartupFrame& request, ByteSpan frame) override;
};

// A passive connection whose valid MPA Request was reported to the
// application. Until the application answers, it keeps the Request (consumed
// from TCP, so the window stays open for nothing else); after iwarp_accept /
// iwarp_reject it forwards every TCP callback to the engine::Qp that answers.
// Lives until the stack's OnClosed.
struct WireEngine::Pending final : tcp::TcpUser {
  WireEngine* eng = nullptr;
  bool used = false;
  bool dropped = false;    // reset by us: nothing to report
  bool detached = false;   // its QP was released: discard everything
  uint32_t request_id = 0;
  uint32_t listener_id = 0;
  uint16_t held_port = 0;  // the connection's local port, held in the AppPortTable (0: none)
  uint64_t since_us = 0;  // reported to the application at (engine clock)
  tcp::ConnId conn;
  WireQpContext* target = nullptr;
  size_t len = 0;
  uint8_t buf[engine::kMaxRequestBytes] = {};

  // Bytes after the Request (an initiator may send none before our Reply)
  // are kept behind it; the QP that answers sees them and fails the setup.
  size_t OnData(tcp::ConnId c, uint64_t off, ByteSpan data) override {
    if (target != nullptr) return target->engine->OnData(c, off, data);
    if (detached || dropped) return data.size();
    if (off != len) return 0;
    const size_t take = std::min(data.size(), sizeof(buf) - len);
    std::memcpy(buf + len, data.data(), take);
    len += take;
    return take;
  }
  void OnOutOfOrder(tcp::ConnId c, uint64_t off, ByteSpan d) override {
    if (target != nullptr) target->engine->OnOutOfOrder(c, off, d);
  }
  void OnPeerFin(tcp::ConnId c) override {
    if (target != nullptr) target->engine->OnPeerFin(c);
  }
  void OnSendSpace(tcp::ConnId c, size_t space) override {
    if (target != nullptr) target->engine->OnSendSpace(c, space);
  }
  void OnSendComplete(tcp::ConnId c, uint64_t cookie, bool acked) override {
    if (target != nullptr) target->engine->OnSendComplete(c, cookie, acked);
  }
  void OnClosed(tcp::ConnId c, tcp::CloseReason reason) override {
    if (target != nullptr) {
      target->engine->OnClosed(c, reason);
      target->pending_slot = UINT32_MAX;
    } else if (!dropped && !detached) {
      WireEvent ev;
      ev.type = WireEventType::kRequestGone;
      ev.request_id = request_id;
      ev.listener_id = listener_id;
      eng->Emit(ev);
    }
    // The user is done with the connection: its port no longer needs
    // worker 0 (unless a listener or another connection holds it) once the
    // stack is done with it too.
    if (held_port != 0) eng->UnholdPortAfter(c, held_port);
    *this = Pending{};
    eng = nullptr;
  }
};

engine::GateDecision WireEngine::Listener::OnMpaRequest(tcp::ConnId conn,
                                                      const tcp::FourTuple& tuple,
                                                      const mpa::StartupFrame& request,
                                                      ByteSpan frame) {
  for (uint32_t i = 0; i < eng->options_.max_pending; ++i) {
    Pending& p = eng->pending_[i];
    if (p.used) continue;
    // The connection keeps its port on worker 0 for as long as the stack
    // has it, also after the application closes the listener.
    if (!eng->HoldPort(tuple.local_port)) break;
    p = Pending{};
    p.held_port = eng->options_.app_ports != nullptr ? tuple.local_port : 0;
    p.eng = eng;
    p.used = true;
    p.conn = conn;
    p.listener_id = id;
    p.since_us = eng->now_us_;
    p.request_id = eng->next_request_id_++;
    if (eng->next_request_id_ == 0) eng->next_request_id_ = 1;
    p.len = std::min(frame.size(), sizeof(p.buf));
    std::memcpy(p.buf, frame.data(), p.len);
    eng->stack_.SetUser(conn, p);
    Bump(eng->counters_->requests);
    WireEvent ev;
    ev.type = WireEventType::kConnectRequest;
    ev.listener_id = id;
    ev.request_id = p.request_id;
    ev.peer_ip = tuple.remote_addr;
    ev.peer_port = tuple.remote_port;
    ev.private_data_len =
        static_cast<uint32_t>(std::min<size_t>(request.private_data.size(), kMaxPrivateData));
    std::memcpy(ev.private_data, request.private_data.data(), ev.private_data_len);
    eng->Emit(ev);
    return engine::GateDecision{.taken = true};
  }
  Bump(eng->counters_->requests_refused);
  static constexpr std::string_view kWhy = "iwarpd: too many requests waiting for the application";
  return engine::GateDecision{
      .taken = false,
      .private_data = ByteSpan(reinterpret_cast<const uint8_t*>(kWhy.data()), kWhy.size())};
}

// ---------------------------------------------------------------- observer

void WireQpContext::InitSlots(uint32_t depth) {
  sq_slots = std::make_unique<SqSlot[]>(depth);
  free_slots = std::make_unique<uint32_t[]>(depth);
  for (uint32_t i = 0; i < depth; ++i) free_slots[i] = depth - 1 - i;
  nfree = depth;
}

engine::AcceptDecision WireQpContext::OnConnectRequest(engine::Qp&, const mpa::StartupFrame&) {
  return engine::AcceptDecision{accept, ByteSpan(reply_pd, reply_pd_len)};
}

void WireQpContext::OnEstablished(engine::Qp& qp, ByteSpan peer_private_data) {
  established = true;
  Bump(owner->counters_->connections);
  WireEvent ev;
  ev.type = WireEventType::kEstablished;
  const engine::Negotiated& n = qp.negotiated();
  ev.mpa_flags = sctp ? kEvMpaWire | kEvMpaSctp
                      : kEvMpaWire | (n.crc ? kEvMpaCrc : 0) | (n.tx_markers ? kEvMpaTxMarkers : 0) |
                            (n.rx_markers ? kEvMpaRxMarkers : 0);
  ev.qp = this;
  ev.qp_id = qp_id;
  ev.private_data_len =
      static_cast<uint32_t>(std::min<size_t>(peer_private_data.size(), kMaxPrivateData));
  std::memcpy(ev.private_data, peer_private_data.data(), ev.private_data_len);
  owner->Emit(ev);
}

void WireQpContext::OnConnectFailed(engine::Qp&, engine::ConnectError e,
                                    ByteSpan peer_private_data) {
  failed_reported = true;
  WireEvent ev;
  ev.type = WireEventType::kConnectFailed;
  ev.qp = this;
  ev.qp_id = qp_id;
  ev.connect_error = static_cast<uint8_t>(e);
  ev.status = ConnectErrno(e);
  ev.private_data_len =
      static_cast<uint32_t>(std::min<size_t>(peer_private_data.size(), kMaxPrivateData));
  std::memcpy(ev.private_data, peer_private_data.data(), ev.private_data_len);
  owner->Emit(ev);
}

void WireQpContext::OnTerminate(engine::Qp&, const rdmap::TerminateCode& code, bool sent) {
  WireEvent ev;
  ev.type = WireEventType::kTerminate;
  ev.qp = this;
  ev.qp_id = qp_id;
  ev.sent = sent;
  ev.term_layer = code.layer;
  ev.term_etype = code.etype;
  ev.term_code = code.code;
  owner->Emit(ev);
}

void WireQpContext::OnDisconnected(engine::Qp& qp) {
  WireEvent ev;
  ev.type = WireEventType::kDisconnected;
  ev.status = DisconnectErrno(qp);
  ev.qp = this;
  ev.qp_id = qp_id;
  owner->Emit(ev);
}

// ---------------------------------------------------------------- lifecycle

WireEngine::WireEngine(const WireEngineOptions& options, tcp::TcpStack& stack)
    : options_(options), stack_(stack), view_(options.stag_capacity),
      counters_(std::make_unique<Counters>()) {}

// The stack may still hold listeners and proxies of this engine: its owner
// destroys the TcpStack first (after the SessionServer released every QP).
WireEngine::~WireEngine() = default;

absl::StatusOr<std::unique_ptr<WireEngine>> WireEngine::Create(const WireEngineOptions& options,
                                                               tcp::TcpStack& stack) {
  if (!IsPowerOfTwo(options.command_depth) || !IsPowerOfTwo(options.event_depth)) {
    return absl::InvalidArgumentError("command_depth and event_depth must be powers of two");
  }
  if (options.max_qps == 0 || options.max_listeners == 0 || options.max_pending == 0 ||
      options.burst == 0 || options.stag_capacity == 0 ||
      options.stag_capacity > ddp::kStagMaxIndex) {
    return absl::InvalidArgumentError("wire engine limits must be positive");
  }
  if (options.event_depth < 4 * options.max_qps + 2 * options.max_pending + kEventsPerCommand) {
    return absl::InvalidArgumentError(
        "event_depth must cover 4 events per QP and 2 per pending request");
  }
  std::unique_ptr<WireEngine> e(new WireEngine(options, stack));
  e->command_mem_.reset(AllocRing(RingBytes<WireCommand>(options.command_depth)));
  e->event_mem_.reset(AllocRing(RingBytes<WireEvent>(options.event_depth)));
  if (!e->command_mem_ || !e->event_mem_) return absl::ResourceExhaustedError("wire rings");
  e->commands_ = SpscRing<WireCommand>(e->command_mem_.get(), options.command_depth);
  e->commands_.Init();
  e->commands_producer_ = SpscRing<WireCommand>(e->command_mem_.get(), options.command_depth);
  e->commands_producer_.AttachAsProducer();
  e->events_ = SpscRing<WireEvent>(e->event_mem_.get(), options.event_depth);
  e->events_.Init();
  e->events_producer_ = SpscRing<WireEvent>(e->event_mem_.get(), options.event_depth);
  e->events_producer_.AttachAsProducer();
  e->event_fd_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!e->event_fd_.valid()) return absl::ErrnoToStatus(errno, "eventfd");
  e->active_.reserve(options.max_qps);
  e->touched_.reserve(2 * size_t{options.max_qps});
  e->lingering_.reserve(size_t{stack.options().max_time_wait} + options.max_qps +
                        options.max_pending + 1);
  e->listeners_ = std::make_unique<Listener[]>(options.max_listeners);
  e->counters_->listeners = std::make_unique<Counters::ListenerSnap[]>(options.max_listeners);
  for (uint32_t i = 0; i < options.max_listeners; ++i) e->listeners_[i].eng = e.get();
  e->pending_ = std::make_unique<Pending[]>(options.max_pending);
  e->gather_staging_ = std::make_unique<uint8_t[]>(engine::kGatherStagingSize);
  if (options.sctp != nullptr) {
    if (absl::Status st = e->CreateSctp(); !st.ok()) return st;
  }
  return e;
}

WireEngineStats WireEngine::stats() const {
  const Counters& c = *counters_;
  auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  WireEngineStats s;
  s.commands = r(c.commands);
  s.events = r(c.events);
  s.events_dropped = r(c.events_dropped);
  s.wrs_posted = r(c.wrs_posted);
  s.recvs_posted = r(c.recvs_posted);
  s.completions = r(c.completions);
  s.wrs_flushed = r(c.wrs_flushed);
  s.bad_sqes = r(c.bad_sqes);
  s.bad_rqes = r(c.bad_rqes);
  s.ring_corruptions = r(c.ring_corruptions);
  s.requests = r(c.requests);
  s.requests_refused = r(c.requests_refused);
  s.replies_sent = r(c.replies_sent);
  s.rejects_sent = r(c.rejects_sent);
  {
    size_t k = 0;
#define IWARP_WIRE_READ_TOTAL(f) s.gate.f = r(c.gate_total[k++]);
    IWARP_MPA_GATE_COUNTERS(IWARP_WIRE_READ_TOTAL)
#undef IWARP_WIRE_READ_TOTAL
  }
  for (uint32_t i = 0; i < options_.max_listeners; ++i) {
    const Counters::ListenerSnap& ls = c.listeners[i];
    WireListenerStats l;
    l.port = static_cast<uint16_t>(ls.port.load(std::memory_order_relaxed));
    if (l.port == 0) continue;
    l.listener_id = ls.id.load(std::memory_order_relaxed);
    size_t k = 0;
#define IWARP_WIRE_READ_FIELD(f) l.gate.f = r(ls.fields[k++]);
    IWARP_MPA_GATE_COUNTERS(IWARP_WIRE_READ_FIELD)
#undef IWARP_WIRE_READ_FIELD
    l.replies_sent = r(ls.fields[k++]);
    l.rejects_sent = r(ls.fields[k]);
    s.listeners.push_back(l);
  }
  s.connections = r(c.connections);
  s.tcp_port_holds = r(c.tcp_port_holds);
  s.listens_reserved = r(c.listens_reserved);
  s.dereg_aborts = r(c.dereg_aborts);
  s.zero_copy_fpdus = r(c.zero_copy_fpdus);
  if (sctp_ != nullptr) SctpStats(&s);
  return s;
}

void WireEngine::PublishListenerStats() {
  Counters& c = *counters_;
  engine::MpaGateCounters total = gate_totals_;
  for (uint32_t i = 0; i < options_.max_listeners; ++i) {
    const Listener& l = listeners_[i];
    Counters::ListenerSnap& ls = c.listeners[i];
    if (!l.used || l.gate == nullptr) {
      ls.port.store(0, std::memory_order_relaxed);
      continue;
    }
    const engine::MpaGateCounters& g = l.gate->counters();
    total += g;
    ls.id.store(l.id, std::memory_order_relaxed);
    ls.port.store(l.port, std::memory_order_relaxed);
    size_t k = 0;
#define IWARP_WIRE_PUB_FIELD(f) ls.fields[k++].store(g.f, std::memory_order_relaxed);
    IWARP_MPA_GATE_COUNTERS(IWARP_WIRE_PUB_FIELD)
#undef IWARP_WIRE_PUB_FIELD
    ls.fields[k++].store(l.replies_sent, std::memory_order_relaxed);
    ls.fields[k].store(l.rejects_sent, std::memory_order_relaxed);
  }
  size_t k = 0;
#define IWARP_WIRE_PUB_TOTAL(f) c.gate_total[k++].store(total.f, std::memory_order_relaxed);
  IWARP_MPA_GATE_COUNTERS(IWARP_WIRE_PUB_TOTAL)
#undef IWARP_WIRE_PUB_TOTAL
}

// ---------------------------------------------------------------- rings

bool WireEngine::PushCommand(const WireCommand& cmd) {
  if (!commands_producer_.Push(cmd)) return false;
  WakeWorker();
  return true;
}

namespace {
// A QP whose SQ the worker consumes (a stand-in reject QP has none in use;
// an SCTP QP has none until it is on a stream).
bool ConsumesSq(const WireQpContext* qp) { return !qp->reject_only && qp->engine != nullptr; }
}  // namespace

bool WireEngine::PrepareToSleep() {
  if (pending_dirty_) return false;
  bool work = false;
  for (WireQpContext* qp : active_) {
    if (!ConsumesSq(qp)) continue;
    if (qp->engine->completions_pending() != 0 || qp->sq.PrepareToWait()) {
      work = true;
      break;
    }
  }
  // Also orders the caller's own flag before this read of the command ring.
  FenceBeforeWaitCheck();
  if (!work && commands_.Available() == 0) return true;
  EndSleep();
  return false;
}

void WireEngine::EndSleep() {
  for (WireQpContext* qp : active_) {
    if (ConsumesSq(qp)) qp->sq.CancelWait();
  }
}

bool WireEngine::PopEvent(WireEvent* ev) { return events_.Pop(ev); }

bool WireEngine::Emit(const WireEvent& ev) {
  if (!events_producer_.Push(ev)) {
    Bump(counters_->events_dropped);
    return false;
  }
  Bump(counters_->events);
  events_touched_ = true;
  return true;
}

void WireEngine::Ack(uint32_t seq, int status) {
  WireEvent ev;
  ev.type = WireEventType::kAck;
  ev.seq = seq;
  ev.status = status;
  Emit(ev);
}

ddp::StagStatus WireEngine::InvalidateRemote(uint32_t stag, uint32_t pd) {
  const ddp::StagStatus st = view_.Invalidate(stag, pd, /*remote=*/true);
  if (st == ddp::StagStatus::kOk) {
    WireEvent ev;
    ev.type = WireEventType::kRemoteInvalidate;
    ev.stag = stag;
    ev.pd = pd;
    Emit(ev);
  }
  return st;
}

// ---------------------------------------------------------------- commands

WireEngine::Pending* WireEngine::FindPending(uint32_t request_id) {
  for (uint32_t i = 0; i < options_.max_pending; ++i) {
    Pending& p = pending_[i];
    if (p.used && p.request_id == request_id) return &p;
  }
  return nullptr;
}

bool WireEngine::HoldPort(uint16_t port) {
  if (options_.app_ports == nullptr) return true;
  if (!options_.app_ports->Acquire(port)) return false;
  Bump(counters_->tcp_port_holds);
  return true;
}

void WireEngine::UnholdPort(uint16_t port) {
  if (options_.app_ports == nullptr || !options_.app_ports->Release(port)) return;
  counters_->tcp_port_holds.store(counters_->tcp_port_holds.load(std::memory_order_relaxed) - 1,
                                  std::memory_order_relaxed);
}

void WireEngine::UnholdPortAfter(tcp::ConnId conn, uint16_t port) {
  if (stack_.State(conn) == tcp::TcpState::kTimeWait) {
    if (lingering_.size() == lingering_.capacity()) ReapLingeringPorts();
    // Never full after the reap (the stack keeps at most max_time_wait
    // connections there); if it were, the port goes now, as it did before.
    if (lingering_.size() < lingering_.capacity()) {
      lingering_.push_back(LingeringPort{conn, port});
      return;
    }
  }
  UnholdPort(port);
}

void WireEngine::ReapLingeringPorts() {
  for (size_t i = 0; i < lingering_.size();) {
    // A recycled or expired TIME-WAIT reads kClosed (the ConnId's
    // generation no longer matches); a TIME-WAIT reopened by a new SYN
    // (RFC 6191) is a new connection with holds of its own.
    if (stack_.State(lingering_[i].conn) != tcp::TcpState::kTimeWait) {
      UnholdPort(lingering_[i].port);
      lingering_[i] = lingering_.back();
      lingering_.pop_back();
    } else {
      ++i;
    }
  }
}

bool WireEngine::Activate(WireQpContext* qp) {
  if (qp->in_active_list) return true;
  if (active_.size() == active_.capacity()) return false;  // never reallocate here
  qp->owner = this;
  qp->in_active_list = true;
  active_.push_back(qp);
  return true;
}

void WireEngine::FailCommand(WireQpContext* qp, int status) {
  WireEvent ev;
  ev.type = WireEventType::kConnectFailed;
  ev.qp = qp;
  ev.qp_id = qp->qp_id;
  ev.status = status;
  Emit(ev);
}

void WireEngine::Deactivate(WireQpContext* qp) {
  if (!qp->in_active_list) return;
  qp->in_active_list = false;
  auto it = std::find(active_.begin(), active_.end(), qp);
  if (it != active_.end()) {
    *it = active_.back();
    active_.pop_back();
  }
}

void WireEngine::Release(WireQpContext* qp) {
  engine::Qp& e = *qp->engine;
  Bump(counters_->zero_copy_fpdus, e.stats().fpdus_zero_copy);
  const engine::QpState st = e.state();
  if (st != engine::QpState::kIdle && !engine::QpEnded(st)) e.Abort(now_us_);
  if (qp->pending_slot != UINT32_MAX) {
    Pending& p = pending_[qp->pending_slot];
    if (p.used && p.target == qp) {
      // The proxy outlives the engine QP and discards what still comes. A
      // failed or closed QP closes gracefully (a reject's MPA Reply and FIN
      // are already queued); otherwise the connection is reset.
      p.target = nullptr;
      p.detached = true;
      pending_dirty_ = true;
      p.since_us = now_us_;  // a graceful close gets pending_timeout_us to finish
      const tcp::TcpState ts = stack_.State(p.conn);
      if (!engine::QpEnded(st) && ts != tcp::TcpState::kClosed &&
          ts != tcp::TcpState::kTimeWait) {
        stack_.Abort(p.conn, now_us_);
      }
    }
    qp->pending_slot = UINT32_MAX;
  } else if (e.conn().valid()) {
    const tcp::TcpState ts = stack_.State(e.conn());
    if (ts != tcp::TcpState::kClosed && ts != tcp::TcpState::kTimeWait) {
      stack_.Abort(e.conn(), now_us_);
    }
  }
  // Active open: the connection is closed, aborted, or in TIME-WAIT now.
  if (qp->held_port != 0) {
    UnholdPortAfter(qp->held_conn, qp->held_port);
    qp->held_port = 0;
    qp->held_conn = tcp::ConnId{};
  }
}

bool WireEngine::HandleCommand(const WireCommand& c) {
  if (events_producer_.FreeSlots() < kEventsPerCommand) return false;
  Bump(counters_->commands);
  if (c.transport == Transport::kSctp &&
      (c.type == WireCommandType::kListen || c.type == WireCommandType::kConnect ||
       c.type == WireCommandType::kAccept || c.type == WireCommandType::kReject)) {
    if (sctp_ == nullptr) {
      if (c.type == WireCommandType::kListen) {
        Ack(c.seq, EPROTONOSUPPORT);
      } else if (c.qp != nullptr) {
        FailCommand(c.qp, EPROTONOSUPPORT);
      }
      return true;
    }
    HandleSctpCommand(c);
    return true;
  }
  switch (c.type) {
    case WireCommandType::kRegMr: {
      ddp::TaggedRegion r = c.region;
      r.stag = c.stag;
      Ack(c.seq, view_.Insert(r, c.mem, c.remote_invalidate) ? 0 : ENOSPC);
      break;
    }
    case WireCommandType::kDeregMr:
      // The region is unmapped after the Ack. A TCP QP whose unacknowledged
      // FPDUs still read from it (zero_copy_tx) is aborted first, as an
      // RNIC's QP fails on a DMA from memory it no longer may read: its
      // connection is reset and its work flushed, and no retransmission
      // reads the unmapped bytes.
      if (const ddp::TaggedRegion* r = view_.Find(c.stag); r != nullptr) {
        const MutableByteSpan bytes = view_.Bytes(r->handle);
        for (size_t i = 0; i < active_.size(); ++i) {
          WireQpContext* qp = active_[i];
          if (qp->sctp || qp->engine == nullptr || !qp->engine->SendsFrom(bytes)) continue;
          qp->engine->Abort(now_us_);
          Bump(counters_->dereg_aborts);
        }
      }
      view_.Remove(c.stag);
      Ack(c.seq, 0);
      break;
    case WireCommandType::kInvalidate:
      Ack(c.seq, view_.Invalidate(c.stag, c.pd, /*remote=*/false) == ddp::StagStatus::kOk ? 0 : EINVAL);
      break;
    case WireCommandType::kListen: {
      Listener* free_slot = nullptr;
      for (uint32_t i = 0; i < options_.max_listeners; ++i) {
        if (!listeners_[i].used) {
          free_slot = &listeners_[i];
          break;
        }
      }
      if (free_slot == nullptr) {
        Ack(c.seq, ENOSPC);
        break;
      }
      // A built-in service listens on every worker: its port cannot be
      // steered to worker 0 for an application (app_ports.h).
      if (options_.app_ports != nullptr && options_.app_ports->Reserved(c.port)) {
        Bump(counters_->listens_reserved);
        Ack(c.seq, EADDRINUSE);
        break;
      }
      // Control path: the gate's slots are allocated here, on the worker
      // (iwarp_listen is connection setup, not the per-packet path).
      absl::StatusOr<std::unique_ptr<engine::MpaGate>> gate =
          engine::MpaGate::Create(options_.gate, stack_, *free_slot);
      if (!gate.ok()) {
        Ack(c.seq, ENOSPC);
        break;
      }
      const absl::Status st = (*gate)->Listen(c.port, now_us_);
      if (!st.ok()) {
        Ack(c.seq, absl::IsAlreadyExists(st) ? EADDRINUSE : ENOSPC);
        break;
      }
      if (!HoldPort(c.port)) {
        (*gate)->Close(now_us_);
        Ack(c.seq, ENOSPC);
        break;
      }
      free_slot->gate = std::move(*gate);
      free_slot->used = true;
      free_slot->id = c.listener_id;
      free_slot->port = c.port;
      PublishListenerStats();
      Ack(c.seq, 0);
      break;
    }
    case WireCommandType::kUnlisten: {
      int status = ENOENT;
      for (uint32_t i = 0; i < options_.max_listeners; ++i) {
        Listener& l = listeners_[i];
        if (!l.used || l.id != c.listener_id) continue;
        // Connections still waiting for their Request are reset.
        l.gate->Close(now_us_);
        gate_totals_ += l.gate->counters();
        l.gate.reset();
        UnholdPort(l.port);
        l.used = false;
        l.replies_sent = l.rejects_sent = 0;
        PublishListenerStats();
        status = 0;
      }
      if (sctp_ != nullptr && UnlistenSctp(c.listener_id)) status = 0;
      // Requests nobody will answer now are reset.
      for (uint32_t i = 0; i < options_.max_pending; ++i) {
        Pending& p = pending_[i];
        if (p.used && p.target == nullptr && !p.detached && p.listener_id == c.listener_id) {
          p.dropped = true;
          pending_dirty_ = true;
          stack_.Abort(p.conn, now_us_);
        }
      }
      Ack(c.seq, status);
      break;
    }
    case WireCommandType::kConnect: {
      WireQpContext* qp = c.qp;
      if (!Activate(qp)) {
        FailCommand(qp, ENOBUFS);
        break;
      }
      const absl::Status st = qp->engine->Connect(
          options_.local_ip, c.remote_ip, c.port, ByteSpan(c.private_data, c.private_data_len),
          now_us_);
      if (!st.ok()) {
        FailCommand(qp, absl::IsInvalidArgument(st) ? EINVAL : EAGAIN);
        break;
      }
      // The SYN is still in the worker's TX buffer (sent at the end of this
      // poll): the port is published before any reply can arrive.
      tcp::TcpConnInfo info;
      if (qp->held_port == 0 && stack_.GetConnection(qp->engine->conn(), &info) &&
          options_.app_ports != nullptr) {
        if (HoldPort(info.tuple.local_port)) {
          qp->held_port = info.tuple.local_port;
          qp->held_conn = qp->engine->conn();
        } else {
          qp->engine->Abort(now_us_);  // only with 65535 holds of one port
        }
      }
      break;
    }
    case WireCommandType::kAccept:
    case WireCommandType::kReject: {
      WireQpContext* qp = c.qp;
      Pending* p = FindPending(c.request_id);
      if (p == nullptr || p->target != nullptr || p->dropped || p->detached) {
        FailCommand(qp, ECONNRESET);
        break;
      }
      if (!Activate(qp)) {
        FailCommand(qp, ENOBUFS);
        break;
      }
      qp->accept = c.type == WireCommandType::kAccept;
      qp->reply_pd_len = std::min<uint32_t>(c.private_data_len, kMaxPrivateData);
      std::memcpy(qp->reply_pd, c.private_data, qp->reply_pd_len);
      if (!qp->engine->AttachPassive(p->conn)) {
        FailCommand(qp, EISCONN);
        break;
      }
      p->target = qp;
      qp->pending_slot = static_cast<uint32_t>(p - pending_.get());
      Bump(qp->accept ? counters_->replies_sent : counters_->rejects_sent);
      for (uint32_t i = 0; i < options_.max_listeners; ++i) {
        Listener& l = listeners_[i];
        if (l.used && l.id == p->listener_id) ++(qp->accept ? l.replies_sent : l.rejects_sent);
      }
      qp->engine->Poll(now_us_);  // the engine's clock, before it sends the Reply
      // The engine sees the Request as if it had just arrived (stream offset
      // 0) and answers with the application's decision.
      const size_t used = qp->engine->OnData(p->conn, 0, ByteSpan(p->buf, p->len));
      if (used != p->len && qp->engine->state() == engine::QpState::kAwaitRequest) {
        qp->engine->Abort(now_us_);
      }
      break;
    }
    case WireCommandType::kDropRequest: {
      Pending* p = FindPending(c.request_id);
      if (p != nullptr && p->target == nullptr) {
        p->dropped = true;
        pending_dirty_ = true;
        stack_.Abort(p->conn, now_us_);
      } else if (p == nullptr && sctp_ != nullptr) {
        (void)DropSctpRequest(c.request_id);
      }
      break;
    }
    case WireCommandType::kDisconnect:
      c.qp->engine->Close(now_us_);
      break;
    case WireCommandType::kDestroyQp:
      if (c.qp->sctp) {
        ReleaseSctp(c.qp);
      } else {
        Release(c.qp);
      }
      Deactivate(c.qp);
      Ack(c.seq, 0);
      break;
  }
  return true;
}

// ---------------------------------------------------------------- data path

bool WireEngine::PushCqe(WireCq* cq, const Cqe& cqe) {
  if (!cq->ring.Push(cqe)) return false;
  Bump(counters_->completions);
  if (!cq->touched) {
    cq->touched = true;
    touched_.push_back(cq);  // capacity reserved
  }
  return true;
}

bool WireEngine::PushMalformedCqe(WireQpContext* qp, WireCq* cq, uint64_t wr_id,
                                  WcOpcode opcode) {
  Cqe cqe;
  cqe.wr_id = wr_id;
  cqe.qp_id = qp->qp_id;
  cqe.opcode = static_cast<uint8_t>(opcode);
  cqe.status = static_cast<uint8_t>(WcStatus::kLocalQpOperation);
  return PushCqe(cq, cqe);
}

uint32_t WireEngine::FeedRq(WireQpContext* qp) {
  const int64_t avail = qp->rq.Available();
  if (avail < 0) {
    Bump(counters_->ring_corruptions);
    qp->engine->Abort(now_us_);
    return 0;
  }
  const uint32_t n = static_cast<uint32_t>(std::min<int64_t>(avail, options_.burst));
  uint32_t done = 0;
  for (; done < n; ++done) {
    Rqe rqe;
    qp->rq.Peek(0, &rqe);  // copied out: the application may rewrite the slot
    engine::RecvWr wr;
    wr.wr_id = rqe.wr_id;
    if (!ToSgeList(rqe.sge, rqe.num_sge, &wr.local)) {
      if (!PushMalformedCqe(qp, qp->rcq, rqe.wr_id, WcOpcode::kRecv)) break;
      qp->rq.Consume(1);
      Bump(counters_->bad_rqes);
      continue;
    }
    const engine::PostStatus ps = qp->engine->PostRecv(wr);
    if (ps == engine::PostStatus::kInvalidWr) {
      if (!PushMalformedCqe(qp, qp->rcq, rqe.wr_id, WcOpcode::kRecv)) break;
      qp->rq.Consume(1);
      Bump(counters_->bad_rqes);
      continue;
    }
    if (ps != engine::PostStatus::kOk) break;
    qp->rq.Consume(1);
    Bump(counters_->recvs_posted);
  }
  return done;
}

uint32_t WireEngine::FeedSq(WireQpContext* qp) {
  const engine::QpState st = qp->engine->state();
  if (st == engine::QpState::kIdle || st == engine::QpState::kClosing ||
      st == engine::QpState::kTerminating || engine::QpEnded(st)) {
    return 0;
  }
  const int64_t avail = qp->sq.Available();
  if (avail < 0) {
    Bump(counters_->ring_corruptions);
    qp->engine->Abort(now_us_);
    return 0;
  }
  const uint32_t n = static_cast<uint32_t>(std::min<int64_t>(avail, options_.burst));
  uint32_t done = 0;
  for (; done < n && qp->nfree > 0; ++done) {
    Sqe sqe;
    qp->sq.Peek(0, &sqe);  // copied out before validation
    engine::SendWr wr;
    // The engine refuses (kInvalidWr, below) an RDMA Read whose sink SGEs
    // are not one contiguous buffer (RFC 5040 4.4: one sink STag and TO).
    const std::optional<WrOpcode> opcode = verbs::WrOpcodeFromByte(sqe.opcode);
    const bool shape_ok = opcode.has_value() && ToSgeList(sqe.sge, sqe.num_sge, &wr.local);
    if (!shape_ok) {
      // A malformed request completes in error and ends the stream (as the
      // loopback engine does; RFC 5040 7: local catastrophic error).
      if (!PushMalformedCqe(qp, qp->scq, sqe.wr_id, SqWcOpcode(sqe.opcode))) break;
      qp->sq.Consume(1);
      Bump(counters_->bad_sqes);
      qp->engine->Abort(now_us_);
      return done + 1;
    }
    const uint32_t slot = qp->free_slots[qp->nfree - 1];
    wr.wr_id = slot;
    wr.opcode = *opcode;
    wr.remote_stag = sqe.rkey;
    wr.remote_to = sqe.remote_addr;
    wr.invalidate_stag = sqe.invalidate_stag;
    const engine::PostStatus ps = qp->engine->PostSend(wr);
    if (ps == engine::PostStatus::kInvalidWr) {
      // Refused by the engine (a Read with a scattered sink): treated like a
      // malformed request.
      if (!PushMalformedCqe(qp, qp->scq, sqe.wr_id, SqWcOpcode(sqe.opcode))) break;
      qp->sq.Consume(1);
      Bump(counters_->bad_sqes);
      qp->engine->Abort(now_us_);
      return done + 1;
    }
    if (ps != engine::PostStatus::kOk) break;  // full: retry; not connected: flushed later
    --qp->nfree;
    qp->sq_slots[slot] = WireQpContext::SqSlot{sqe.wr_id, (sqe.flags & kWrSignaled) != 0};
    qp->sq.Consume(1);
    Bump(counters_->wrs_posted);
  }
  return done;
}

uint32_t WireEngine::MoveCompletions(WireQpContext* qp) {
  uint32_t done = 0;
  for (uint32_t i = 0; i < options_.burst; ++i) {
    const int64_t sfree = qp->scq->ring.FreeSlots();
    const int64_t rfree = qp->rcq->ring.FreeSlots();
    if (sfree < 0 || rfree < 0) {
      // The application wrote an impossible CQ index: nothing more can
      // complete into it, so the stream ends instead of stalling.
      Bump(counters_->ring_corruptions);
      qp->engine->Abort(now_us_);
      return done;
    }
    if (sfree < 1 || rfree < 1) break;
    engine::Completion c;
    if (qp->engine->PollCompletions(std::span<engine::Completion>(&c, 1)) == 0) break;
    ++done;
    Cqe cqe;
    cqe.qp_id = qp->qp_id;
    cqe.byte_len = c.byte_len;
    cqe.invalidated_stag = c.invalidated_stag;
    cqe.opcode = static_cast<uint8_t>(c.opcode);
    cqe.status = static_cast<uint8_t>(c.status);
    cqe.flags = c.flags;
    cqe.term_layer = c.term.layer;
    cqe.term_etype = c.term.etype;
    cqe.term_code = c.term.code;
    if (c.opcode == engine::WcOpcode::kRecv) {
      cqe.wr_id = c.wr_id;
      PushCqe(qp->rcq, cqe);
      continue;
    }
    if (c.wr_id >= qp->sq.entries()) continue;  // never issued by us
    const WireQpContext::SqSlot s = qp->sq_slots[c.wr_id];
    qp->free_slots[qp->nfree++] = static_cast<uint32_t>(c.wr_id);
    if (c.status == engine::WcStatus::kSuccess && !s.signaled) continue;
    cqe.wr_id = s.wr_id;
    PushCqe(qp->scq, cqe);
  }
  return done;
}

// Verbs "WR flush error": once the QP failed, every entry still in the
// application's rings completes with kFlushed as far as the CQs have room.
uint32_t WireEngine::FlushRings(WireQpContext* qp) {
  uint32_t done = 0;
  while (done < options_.burst && qp->sq.Available() > 0 && qp->scq->ring.FreeSlots() > 0) {
    Sqe sqe;
    qp->sq.Peek(0, &sqe);
    Cqe cqe;
    cqe.wr_id = sqe.wr_id;
    cqe.qp_id = qp->qp_id;
    cqe.opcode = static_cast<uint8_t>(SqWcOpcode(sqe.opcode));
    cqe.status = static_cast<uint8_t>(WcStatus::kFlushed);
    PushCqe(qp->scq, cqe);
    qp->sq.Consume(1);
    Bump(counters_->wrs_flushed);
    ++done;
  }
  while (done < options_.burst && qp->rq.Available() > 0 && qp->rcq->ring.FreeSlots() > 0) {
    Rqe rqe;
    qp->rq.Peek(0, &rqe);
    Cqe cqe;
    cqe.wr_id = rqe.wr_id;
    cqe.qp_id = qp->qp_id;
    cqe.opcode = static_cast<uint8_t>(WcOpcode::kRecv);
    cqe.status = static_cast<uint8_t>(WcStatus::kFlushed);
    PushCqe(qp->rcq, cqe);
    qp->rq.Consume(1);
    Bump(counters_->wrs_flushed);
    ++done;
  }
  return done;
}

uint32_t WireEngine::PollQp(WireQpContext* qp) {
  if (qp->engine == nullptr) return 0;  // SCTP: not on a stream (yet)
  qp->engine->Poll(now_us_);
  if (qp->reject_only) return 0;
  uint32_t work = 0;
  const engine::QpState st = qp->engine->state();
  if (st != engine::QpState::kTerminating && !engine::QpEnded(st)) work += FeedRq(qp);
  work += FeedSq(qp);
  work += MoveCompletions(qp);
  PublishWrites(qp);
  if (engine::QpEnded(qp->engine->state())) work += FlushRings(qp);
  return work;
}

// RDMA Writes placed since the last poll: the count goes to the QP's notify
// block and, if the application sleeps on it, its receive CQ's eventfd rings.
void WireEngine::PublishWrites(WireQpContext* qp) {
  const uint64_t placed = qp->engine->stats().writes_placed;
  if (placed == qp->writes_published || qp->notify == nullptr) return;
  qp->writes_published = placed;
  if (PublishPlacedWrites(qp->notify, placed) && qp->rcq != nullptr) RingWakePipe(qp->rcq->eventfd);
}

uint32_t WireEngine::PostReceives() {
  uint32_t work = 0;
  for (WireQpContext* qp : active_) {
    if (qp->reject_only || qp->engine == nullptr) continue;
    const engine::QpState st = qp->engine->state();
    if (st != engine::QpState::kTerminating && !engine::QpEnded(st)) work += FeedRq(qp);
  }
  return work;
}

uint32_t WireEngine::Poll(uint64_t now_us) {
  now_us_ = now_us;
  uint32_t work = 0;
  for (uint32_t i = 0; i < kCommandsPerPoll; ++i) {
    const int64_t avail = commands_.Available();
    if (avail <= 0) break;
    WireCommand c;
    commands_.Peek(0, &c);
    if (!HandleCommand(c)) break;
    commands_.Consume(1);
    ++work;
  }
  if (pending_dirty_ || now_us_ - pending_scan_us_ >= kPendingScanUs) {
    pending_dirty_ = false;
    pending_scan_us_ = now_us_;
    for (uint32_t i = 0; i < options_.max_listeners; ++i) {
      if (listeners_[i].gate != nullptr) listeners_[i].gate->Poll(now_us_);
    }
    PublishListenerStats();
    for (uint32_t i = 0; i < options_.max_pending; ++i) {
      Pending& p = pending_[i];
      if (p.used && !p.dropped && !p.detached && p.target == nullptr &&
          now_us_ - p.since_us > options_.pending_timeout_us) {
        // Unanswered: reset; the application's request id stops working.
        Bump(counters_->requests_refused);
        WireEvent ev;
        ev.type = WireEventType::kRequestGone;
        ev.request_id = p.request_id;
        ev.listener_id = p.listener_id;
        Emit(ev);
        p.dropped = true;
      }
      if (p.used && p.detached && now_us_ - p.since_us > options_.pending_timeout_us) {
        p.dropped = true;  // the graceful close of a released QP never ended
      }
      if (p.used && p.dropped && p.target == nullptr) {
        const tcp::TcpState ts = stack_.State(p.conn);
        if (ts != tcp::TcpState::kClosed && ts != tcp::TcpState::kTimeWait) {
          stack_.Abort(p.conn, now_us_);
          pending_dirty_ = true;  // its state is looked at again next time
        } else {
          if (p.held_port != 0) UnholdPortAfter(p.conn, p.held_port);
          p = Pending{};
        }
      }
    }
  }
  if (!lingering_.empty() && now_us_ - linger_scan_us_ >= kPendingScanUs) {
    linger_scan_us_ = now_us_;
    ReapLingeringPorts();
  }
  if (sctp_ != nullptr) work += PollSctp();
  for (size_t i = 0; i < active_.size(); ++i) work += PollQp(active_[i]);
  for (WireCq* cq : touched_) {
    cq->touched = false;
    if (cq->ring.TakeWakeRequest()) RingWakePipe(cq->eventfd);
  }
  touched_.clear();
  if (events_touched_) {
    events_touched_ = false;
    if (events_producer_.TakeWakeRequest()) RingEventfd(event_fd_.get());
  }
  return work;
}

}  // namespace iwarp::appif
