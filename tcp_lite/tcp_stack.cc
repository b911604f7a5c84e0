// TcpStack: the public API (tcp_stack.h). Create() checks the options and
// allocates every table and buffer; the other methods check their arguments
// and call into TcpStack::Impl (tcp_stack_impl.h, which lists the files that
// define it).
#include "tcp_lite/tcp_stack.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tcp_lite/tcp_stack_impl.h"

namespace iwarp::tcp {

std::string_view SynCookieModeName(SynCookieMode m) {
  using Enum = SynCookieMode;
  switch (m) { IWARP_TCP_SYN_COOKIE_MODES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

std::string_view TcpStateName(TcpState s) {
  using Enum = TcpState;
  switch (s) { IWARP_TCP_STATES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

std::string_view CloseReasonName(CloseReason r) {
  using Enum = CloseReason;
  switch (r) { IWARP_TCP_CLOSE_REASONS(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

std::string_view SendStatusName(SendStatus s) {
  using Enum = SendStatus;
  switch (s) { IWARP_TCP_SEND_STATUSES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

// ==================================================================== TcpStack

TcpStack::TcpStack(const TcpOptions& options) : options_(options) {}

TcpStack::~TcpStack() = default;

absl::StatusOr<std::unique_ptr<TcpStack>> TcpStack::Create(const TcpOptions& given,
                                                           std::span<const uint32_t> local_ips,
                                                           TcpOutput& output,
                                                           const IsnGenerator& isn,
                                                           uint64_t now_us) {
  TcpOptions o = given;
  o.max_send_records = EffectiveMaxSendRecords(o.max_send_records, o.send_buffer_bytes);
  auto bad = [](const char* field, const char* why) {
    return absl::InvalidArgumentError(absl::StrCat("tcp option ", field, ": ", why));
  };
  if (o.max_connections == 0 || o.max_connections > (1u << 24)) {
    return bad("max_connections", "must be 1..16777216");
  }
  if (o.max_listeners == 0 || o.max_listeners > 4096) return bad("max_listeners", "must be 1..4096");
  if (o.mtu < 576 || o.mtu > 9216) return bad("mtu", "must be 576..9216");
  if (o.mss != 0 && (o.mss < 64 || o.mss > o.mtu - 40)) return bad("mss", "must be 64..mtu-40");
  if (o.send_buffer_bytes < 1024 || o.send_buffer_bytes > (1u << 30)) {
    return bad("send_buffer_bytes", "must be 1 KiB..1 GiB");
  }
  if (o.receive_buffer_bytes < 1024 || o.receive_buffer_bytes > (1u << 30)) {
    return bad("receive_buffer_bytes", "must be 1 KiB..1 GiB");
  }
  if (o.window_scale < -1 || o.window_scale > kMaxWindowScale) {
    return bad("window_scale", "must be -1 (auto) or 0..14");
  }
  if (o.window_scale >= 0 && (uint64_t{0xFFFF} << o.window_scale) < o.receive_buffer_bytes &&
      o.receive_buffer_bytes > 0xFFFF) {
    return bad("window_scale", "too small for receive_buffer_bytes");
  }
  if (o.max_ooo_segments == 0) return bad("max_ooo_segments", "must be at least 1");
  if (o.timer_tick_us == 0) return bad("timer_tick_us", "must be positive");
  if (o.rto_min_us == 0 || o.rto_max_us < o.rto_min_us) return bad("rto_min_us/rto_max_us", "need 0 < min <= max");
  if (o.rto_initial_us < o.rto_min_us || o.rto_initial_us > o.rto_max_us) {
    return bad("rto_initial_us", "must lie in [rto_min_us, rto_max_us]");
  }
  if (o.ephemeral_port_min == 0 || o.ephemeral_port_max < o.ephemeral_port_min) {
    return bad("ephemeral_port_min/max", "need 0 < min <= max");
  }
  if (o.keepalive && (o.keepalive_interval_s == 0 || o.keepalive_count == 0)) {
    return bad("keepalive_interval_s/count", "must be positive when keepalive is on");
  }
  if (local_ips.empty() || local_ips.size() > 16) return bad("local_ips", "need 1..16 addresses");

  std::unique_ptr<TcpStack> s(new TcpStack(o));
  s->impl_ = std::make_unique<Impl>(*s, s->options_, s->stats_, output, isn, now_us);
  Impl& m = *s->impl_;
  for (size_t i = 0; i < local_ips.size(); ++i) m.local_ips[i] = local_ips[i];
  m.n_local_ips = local_ips.size();
  m.our_mss = o.mss != 0 ? o.mss : static_cast<uint16_t>(o.mtu - 40);
  if (o.window_scale >= 0) {
    m.our_wscale = static_cast<uint8_t>(o.window_scale);
  } else {
    uint8_t w = 0;
    while (w < kMaxWindowScale && (uint64_t{0xFFFF} << w) < o.receive_buffer_bytes) ++w;
    m.our_wscale = w;
  }
  m.tick_us = o.timer_tick_us;
  const uint32_t n = o.max_connections;
  m.conns = std::make_unique<Impl::Conn[]>(n);
  m.burst_acks = std::make_unique<uint32_t[]>(n);
  const size_t send_bytes = size_t{n} * o.send_buffer_bytes;
  const MutableByteSpan provided = output.SendMemory(n, o.send_buffer_bytes);
  uint8_t* send_base = provided.data();
  m.output_send_memory = send_base != nullptr && provided.size() >= send_bytes;
  if (!m.output_send_memory) {
    m.send_mem.reset(new uint8_t[send_bytes]);
    send_base = m.send_mem.get();
  }
  m.recv_mem.reset(new uint8_t[size_t{n} * o.receive_buffer_bytes]);
  const uint32_t dcap = 2 * o.max_zero_copy_sends + 8;
  m.desc_mem = std::make_unique<Impl::SendDesc[]>(size_t{n} * dcap);
  m.rec_mem = std::make_unique<Seq32[]>(size_t{n} * o.max_send_records);
  m.reasm_mem = std::make_unique<std::optional<Reassembler>[]>(n);
  uint32_t nb = 1;
  while (nb < 2 * n) nb <<= 1;
  m.buckets = std::make_unique<uint32_t[]>(nb);
  std::fill(m.buckets.get(), m.buckets.get() + nb, Impl::kNil);
  m.bucket_mask = nb - 1;
  m.listeners = std::make_unique<Impl::Listener[]>(o.max_listeners);
  ReasmConfig rc;
  rc.max_segments = o.max_ooo_segments;
  rc.max_bytes = o.receive_buffer_bytes;
  rc.window = o.receive_buffer_bytes;
  for (uint32_t i = n; i-- > 0;) {
    Impl::Conn& c = m.conns[i];
    c.stack = &m;
    c.slot = i;
    c.sbuf = send_base + size_t{i} * o.send_buffer_bytes;
    c.scap = o.send_buffer_bytes;
    c.rbuf = m.recv_mem.get() + size_t{i} * o.receive_buffer_bytes;
    c.rbuf_cap = o.receive_buffer_bytes;
    c.descs = m.desc_mem.get() + size_t{i} * dcap;
    c.dcap = dcap;
    c.recs = m.rec_mem.get() + size_t{i} * o.max_send_records;
    c.rcap_recs = o.max_send_records;
    m.reasm_mem[i].emplace(rc, Seq32(0), m.null_sink);
    c.reasm = &*m.reasm_mem[i];
    c.rtx_timer.Init(&Impl::OnRtxTimer, &c);
    c.delack_timer.Init(&Impl::OnDelackTimer, &c);
    c.keepalive_timer.Init(&Impl::OnKeepaliveTimer, &c);
    c.free_next = m.free_head;
    m.free_head = i;
  }
  m.next_ephemeral = o.ephemeral_port_min;
  return s;
}

absl::Status TcpStack::Listen(uint16_t port, TcpUser& user) {
  if (port == 0) return absl::InvalidArgumentError("tcp listen: port 0");
  Impl& m = *impl_;
  if (m.FindListener(port) >= 0) {
    return absl::AlreadyExistsError(absl::StrCat("tcp listen: port ", port, " already listening"));
  }
  for (uint32_t i = 0; i < options_.max_listeners; ++i) {
    if (!m.listeners[i].in_use) {
      m.listeners[i] = Impl::Listener{true, port, &user, 0};
      return absl::OkStatus();
    }
  }
  return absl::ResourceExhaustedError("tcp listen: max_listeners reached");
}

absl::Status TcpStack::Unlisten(uint16_t port) {
  Impl& m = *impl_;
  const int li = m.FindListener(port);
  if (li < 0) return absl::NotFoundError(absl::StrCat("tcp unlisten: port ", port, " not listening"));
  for (uint32_t i = 0; i < options_.max_connections; ++i) {
    Impl::Conn& c = m.conns[i];
    if (c.in_use && c.listener == li && c.state == TcpState::kSynReceived && c.user == nullptr) {
      m.SendRst(c);
      m.FreeConn(c);
    }
    if (c.in_use && c.listener == li) c.listener = -1;
  }
  m.listeners[li] = Impl::Listener();
  return absl::OkStatus();
}

void TcpStack::SetPortFilter(PortFilter filter, void* context) {
  impl_->port_filter = filter;
  impl_->port_filter_ctx = context;
}

absl::StatusOr<ConnId> TcpStack::Connect(uint32_t local_ip, uint32_t remote_ip,
                                         uint16_t remote_port, TcpUser& user,
                                         uint16_t local_port, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  if (!m.OwnsIp(local_ip)) return absl::InvalidArgumentError("tcp connect: local address not ours");
  if (remote_port == 0) return absl::InvalidArgumentError("tcp connect: remote port 0");
  FourTuple t{local_ip, local_port, remote_ip, remote_port};
  if (local_port == 0) {
    const uint32_t range = uint32_t{options_.ephemeral_port_max} - options_.ephemeral_port_min + 1;
    bool found = false;
    for (uint32_t i = 0; i < range; ++i) {
      uint16_t p = m.next_ephemeral;
      m.next_ephemeral = p >= options_.ephemeral_port_max ? options_.ephemeral_port_min
                                                          : static_cast<uint16_t>(p + 1);
      t.local_port = p;
      if (m.FindListener(p) >= 0 || m.Lookup(t) != nullptr) continue;
      if (m.port_filter != nullptr && !m.port_filter(m.port_filter_ctx, t)) continue;
      found = true;
      break;
    }
    if (!found) return absl::ResourceExhaustedError("tcp connect: no ephemeral port");
  } else if (Impl::Conn* old = m.Lookup(t)) {
    if (old->state != TcpState::kTimeWait) {
      return absl::AlreadyExistsError("tcp connect: 4-tuple in use");
    }
    m.FreeConn(*old);
  }
  Impl::Conn* c = m.AllocConn(t);
  if (c == nullptr) return absl::ResourceExhaustedError("tcp connect: connection table full");
  ++stats_.active_opens;
  c->user = &user;
  c->iss = m.isn_gen.Isn(t, now_us);
  m.InitSendSeq(*c);
  c->rcv_wscale = m.our_wscale;
  c->rcv_consumed = Seq32(0);
  c->reasm->Reset(Seq32(0), c->rbuf_cap);
  c->state = TcpState::kSynSent;
  c->cc.Reset(options_.congestion_control, c->emss);
  c->rtt_start_us = now_us;
  m.Emit(*c, c->iss, kFlagSyn, 0);
  c->snd_nxt = c->iss + 1;
  c->snd_max = c->snd_nxt;
  m.ArmRtx(*c, Impl::RtxKind::kRetransmit, c->rto.rto_us());
  return Impl::IdOf(*c);
}

absl::StatusOr<ConnId> TcpStack::AdoptEstablished(const FourTuple& t, Seq32 iss, Seq32 irs,
                                                  uint16_t peer_window, uint32_t loop_bytes,
                                                  TcpUser& user, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  if (!m.OwnsIp(t.local_addr)) return absl::InvalidArgumentError("tcp adopt: local address not ours");
  if (t.local_port == 0 || t.remote_port == 0) return absl::InvalidArgumentError("tcp adopt: port 0");
  if (loop_bytes > (1u << 30)) return absl::InvalidArgumentError("tcp adopt: loop_bytes over 1 GiB");
  if (Impl::Conn* old = m.Lookup(t)) {
    if (old->state != TcpState::kTimeWait) return absl::AlreadyExistsError("tcp adopt: 4-tuple in use");
    m.FreeConn(*old);
  }
  Impl::Conn* c = m.AllocConn(t);
  if (c == nullptr) return absl::ResourceExhaustedError("tcp adopt: connection table full");
  c->user = &user;
  c->iss = iss;
  m.InitSendSeq(*c);
  c->snd_una = iss + 1u;
  c->snd_nxt = iss + 1u;
  c->snd_max = iss + 1u;
  // As if the peer's SYN had carried no options: no window scale, SACK or
  // timestamps; its MSS is taken to be ours.
  Segment syn;
  syn.header.seq = irs;
  syn.header.ack = iss + 1u;
  syn.header.window = peer_window;
  Options o;
  o.mss = m.our_mss;
  m.ApplySynOptions(*c, syn, o);
  c->last_rx_us = now_us;
  c->loop_bytes = loop_bytes;
  c->state = TcpState::kEstablished;
  ++stats_.established;
  ++stats_.test_adopted;
  return Impl::IdOf(*c);
}

void TcpStack::Input(uint32_t src_ip, uint32_t dst_ip, ByteSpan tcp_segment, uint64_t now_us,
                     ChecksumCheck check) {
  impl_->Input(src_ip, dst_ip, tcp_segment, now_us, check);
}

void TcpStack::BeginBurst() { impl_->in_burst = true; }

void TcpStack::EndBurst(uint64_t now_us) {
  Impl& m = *impl_;
  m.in_burst = false;
  m.SetNow(now_us);
  for (uint32_t i = 0; i < m.n_burst_acks; ++i) {
    Impl::Conn& c = m.conns[m.burst_acks[i]];
    c.on_burst_list = false;
    // Clear when an ACK-bearing segment went out meanwhile or the slot was
    // reused (AllocConn clears it).
    if (!c.in_use || !c.ack_held) continue;
    c.ack_held = false;
    if (c.state != TcpState::kTimeWait && c.state != TcpState::kSynSent) m.SendAck(c);
  }
  m.n_burst_acks = 0;
}

void TcpStack::RunTimers(uint64_t now_us) {
  impl_->SetNow(now_us);
  impl_->wheel.Advance(impl_->now_us / impl_->tick_us);
}

std::optional<uint64_t> TcpStack::NextTimerUs() const {
  const std::optional<uint64_t> tick = impl_->wheel.next_expiry();
  if (!tick.has_value()) return std::nullopt;
  return *tick * impl_->tick_us;
}

size_t TcpStack::Send(ConnId id, ByteSpan data, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) {
    last_send_status_ = SendStatus::kBadConn;
    return 0;
  }
  if (!m.SendOpen(*c)) {
    last_send_status_ = SendStatus::kNotConnected;
    return 0;
  }
  const size_t n = std::min(data.size(), m.SendSpaceOf(*c));
  last_send_status_ = n < data.size() ? SendStatus::kNoSpace : SendStatus::kOk;
  if (n < data.size()) c->want_send_space = true;
  if (n == 0) return 0;
  m.AppendCopy(*c, data.first(n));
  m.TrySend(*c);
  return n;
}

SendStatus TcpStack::SendRecord(ConnId id, ByteSpan record, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return last_send_status_ = SendStatus::kBadConn;
  if (!m.SendOpen(*c)) return last_send_status_ = SendStatus::kNotConnected;
  if (record.size() > m.SendSpaceOf(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kNoSpace;
  }
  if (!m.AddRecord(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  m.AppendCopy(*c, record);
  m.TrySend(*c);
  return last_send_status_ = SendStatus::kOk;
}

MutableByteSpan TcpStack::ReserveRecord(ConnId id, size_t len) {
  Impl& m = *impl_;
  Impl::Conn* c = m.Get(id);
  if (c == nullptr || len == 0 || !m.SendOpen(*c) || len > m.SendSpaceOf(*c) ||
      c->rcount == c->rcap_recs) {
    return MutableByteSpan();
  }
  const uint32_t widx = (c->shead + c->sused) % c->scap;
  if (len > c->scap - widx) return MutableByteSpan();  // would wrap
  return MutableByteSpan(c->sbuf + widx, len);
}

SendStatus TcpStack::CommitRecord(ConnId id, size_t len, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return last_send_status_ = SendStatus::kBadConn;
  if (!m.SendOpen(*c)) return last_send_status_ = SendStatus::kNotConnected;
  const uint32_t widx = (c->shead + c->sused) % c->scap;
  if (len == 0 || len > m.SendSpaceOf(*c) || len > c->scap - widx) {
    return last_send_status_ = SendStatus::kNoSpace;  // not what ReserveRecord gave
  }
  if (!m.AddRecord(*c)) return last_send_status_ = SendStatus::kTooManyRecords;
  m.AppendRing(*c, nullptr, len);
  m.TrySend(*c);
  return last_send_status_ = SendStatus::kOk;
}

SendStatus TcpStack::SendZeroCopy(ConnId id, ByteSpan data, uint64_t cookie, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return last_send_status_ = SendStatus::kBadConn;
  if (!m.SendOpen(*c)) return last_send_status_ = SendStatus::kNotConnected;
  if (data.empty()) return last_send_status_ = SendStatus::kOk;
  if (c->zc_count >= options_.max_zero_copy_sends || c->dcount + 2 > c->dcap ||
      data.size() > (1u << 30)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  if (!m.AddRecord(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  m.AppendZeroCopy(*c, data, cookie);
  m.TrySend(*c);
  return last_send_status_ = SendStatus::kOk;
}

SendStatus TcpStack::SendRecordZeroCopy(ConnId id, ByteSpan head, ByteSpan data, ByteSpan tail,
                                        uint64_t cookie, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return last_send_status_ = SendStatus::kBadConn;
  if (!m.SendOpen(*c)) return last_send_status_ = SendStatus::kNotConnected;
  // Descriptors: head and tail may each wrap the ring (two each), plus the
  // referenced bytes; SendSpaceOf keeps two more free. Without referenced
  // bytes it is an ordinary record of head and tail.
  if (!data.empty() && (c->zc_count >= options_.max_zero_copy_sends || c->dcount + 7 > c->dcap ||
                        data.size() > (1u << 30))) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  if (head.size() + tail.size() > m.SendSpaceOf(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kNoSpace;
  }
  if (!m.AddRecord(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  m.AppendCopy(*c, head);
  if (!data.empty()) m.AppendZeroCopy(*c, data, cookie);
  m.AppendCopy(*c, tail);
  m.TrySend(*c);
  return last_send_status_ = SendStatus::kOk;
}

bool TcpStack::ZeroCopyReferences(ConnId id, ByteSpan range) const {
  const Impl::Conn* c = impl_->Get(id);
  if (c == nullptr || c->zc_count == 0 || range.empty()) return false;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(range.data());
  const uintptr_t hi = lo + range.size();
  for (uint32_t i = 0; i < c->dcount; ++i) {
    const Impl::SendDesc& d = c->descs[(c->dhead + i) % c->dcap];
    if (!d.zero_copy) continue;
    const uintptr_t a = reinterpret_cast<uintptr_t>(d.data);
    if (a < hi && lo < a + d.len) return true;
  }
  return false;
}

size_t TcpStack::SendSpace(ConnId id) const {
  const Impl::Conn* c = impl_->Get(id);
  if (c == nullptr || !impl_->SendOpen(*c)) return 0;
  return impl_->SendSpaceOf(*c);
}

void TcpStack::ConsumeReceived(ConnId id, size_t bytes, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr || c->user == nullptr) return;  // closed for the user (TIME-WAIT)
  const Seq32 data_end = c->reasm->fin_delivered() ? c->reasm->rcv_nxt() - 1u : c->reasm->rcv_nxt();
  const int32_t avail = data_end - c->rcv_consumed;
  if (avail <= 0) return;
  m.Consume(*c, static_cast<uint32_t>(std::min<size_t>(bytes, static_cast<uint32_t>(avail))));
  if (c->loop_bytes != 0) m.LoopReceive(*c);
  if (c->ack_now && c->state != TcpState::kTimeWait && c->state != TcpState::kSynSent) {
    m.SendAck(*c);
  }
}

void TcpStack::DeliverPending(ConnId id, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr || c->user == nullptr) return;
  const uint32_t gen = c->generation;
  m.DeliverToUser(*c);
  if (Impl::Alive(*c, gen) && c->ack_now) m.SendAck(*c);
}

void TcpStack::Shutdown(ConnId id, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr || c->fin_queued) return;
  switch (c->state) {
    case TcpState::kSynSent:
      m.CloseConn(*c, CloseReason::kNormal);
      return;
    case TcpState::kSynReceived:
    case TcpState::kEstablished: c->state = TcpState::kFinWait1; break;
    case TcpState::kCloseWait: c->state = TcpState::kLastAck; break;
    default: return;
  }
  c->fin_queued = true;
  m.TrySend(*c);
}

void TcpStack::Abort(ConnId id, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return;
  if (c->state != TcpState::kSynSent && c->state != TcpState::kTimeWait) m.SendRst(*c);
  m.CloseConn(*c, CloseReason::kAborted);
}

bool TcpStack::SetUser(ConnId id, TcpUser& user) {
  Impl::Conn* c = impl_->Get(id);
  if (c == nullptr || c->user == nullptr) return false;
  c->user = &user;
  return true;
}

uint32_t TcpStack::Emss(ConnId id) const {
  const Impl::Conn* c = impl_->Get(id);
  return c == nullptr ? 0 : c->emss;
}

TcpState TcpStack::State(ConnId id) const {
  const Impl::Conn* c = impl_->Get(id);
  return c == nullptr ? TcpState::kClosed : c->state;
}

std::optional<uint64_t> TcpStack::BytesAcked(ConnId id) const {
  const Impl::Conn* c = impl_->Get(id);
  if (c == nullptr) return std::nullopt;
  return c->counters.bytes_out;
}

bool TcpStack::GetConnection(ConnId id, TcpConnInfo* out) const {
  const Impl::Conn* c = impl_->Get(id);
  if (c == nullptr) return false;
  const Impl& m = *impl_;
  *out = c->counters;
  out->id = id;
  out->tuple = c->tuple;
  out->state = c->state;
  out->srtt_us = c->rto.srtt_us();
  out->rttvar_us = c->rto.rttvar_us();
  out->rto_us = c->rto.rto_us();
  out->cwnd = m.Cwnd(*c);
  out->ssthresh = m.Ssthresh(*c);
  out->snd_wnd = c->snd_wnd;
  out->rcv_wnd = m.RcvWindow(*c);
  out->emss = c->emss;
  out->unacked_bytes = static_cast<uint32_t>(c->snd_max - c->snd_una);
  out->send_queued = static_cast<uint32_t>(c->snd_end - std::min(c->snd_una, c->snd_end) );
  {
    const Seq32 data_end =
        c->reasm->fin_delivered() ? c->reasm->rcv_nxt() - 1u : c->reasm->rcv_nxt();
    const int32_t q = data_end - c->rcv_consumed;
    out->recv_queued = q > 0 ? static_cast<uint32_t>(q) : 0;
  }
  out->snd_wscale = c->snd_wscale;
  out->rcv_wscale = c->rcv_wscale;
  out->sack = c->sack_ok;
  out->timestamps = c->ts_ok;
  return true;
}

size_t TcpStack::ListConnections(std::span<TcpConnInfo> out) const {
  size_t k = 0;
  for (uint32_t i = 0; i < options_.max_connections && k < out.size(); ++i) {
    const Impl::Conn& c = impl_->conns[i];
    if (!c.in_use) continue;
    GetConnection(Impl::IdOf(c), &out[k++]);
  }
  return k;
}

size_t TcpStack::connection_count() const { return impl_->live; }

}  // namespace iwarp::tcp
