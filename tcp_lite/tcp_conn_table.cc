// The connection table: Conn slots hashed by 4-tuple, the free list, the FIFO
// of TIME-WAIT slots, and the end of a connection (CloseConn, EnterTimeWait).
#include "tcp_lite/tcp_stack_impl.h"

namespace iwarp::tcp {

TcpStack::Impl::~Impl() {
  for (uint32_t i = 0; i < opt.max_connections; ++i) {
    Conn& c = conns[i];
    wheel.Cancel(c.rtx_timer);
    wheel.Cancel(c.delack_timer);
    wheel.Cancel(c.keepalive_timer);
  }
}

// The link in the free list to the first slot whose send buffer the
// output's device no longer reads (TcpOutput::SendBufferReusable); null if
// none.
inline uint32_t* TcpStack::Impl::FindReusable() {
  uint32_t* link = &free_head;
  while (*link != kNil) {
    if (!output_send_memory || out.SendBufferReusable(*link)) return link;
    ++stats.send_buffers_held;
    link = &conns[*link].free_next;
  }
  return nullptr;
}

// A free slot, recycling the oldest TIME_WAIT connection if none is free.
TcpStack::Impl::Conn* TcpStack::Impl::AllocConn(const FourTuple& t) {
  uint32_t* link = FindReusable();
  if (link == nullptr && tw_head != kNil) {
    ++stats.time_wait_recycled;
    FreeConn(conns[tw_head]);
    link = FindReusable();
  }
  if (link == nullptr) return nullptr;
  Conn& c = conns[*link];
  *link = c.free_next;
  c.free_next = kNil;
  c.in_use = true;
  ++live;
  c.tuple = t;
  const uint32_t b = HashTuple(t) & bucket_mask;
  c.hash_next = buckets[b];
  buckets[b] = c.slot;
  c.state = TcpState::kClosed;
  c.user = nullptr;
  c.listener = -1;
  c.passive = false;
  c.counted_syn_backlog = false;
  c.peer_mss = kDefaultPeerMss;
  c.snd_wscale = c.rcv_wscale = 0;
  c.sack_ok = c.ts_ok = c.wscale_on = false;
  c.snd_wnd = c.max_snd_wnd = 0;
  c.fin_queued = false;
  c.loop_bytes = 0;
  c.shead = c.sused = 0;
  c.dhead = c.dcount = c.zc_count = 0;
  c.rhead = c.rcount = 0;
  c.want_send_space = false;
  c.rconsumed_idx = 0;
  c.peer_fin_reported = false;
  c.ts_recent = 0;
  c.rtx_kind = RtxKind::kNone;
  c.syn_retries = c.persist_backoff = c.keepalive_sent = 0;
  c.last_rx_us = now_us;
  c.rto = RtoEstimator(RtoConfig{opt.rto_min_us, opt.rto_max_us, opt.rto_initial_us, tick_us});
  c.rtt_timing = false;
  c.dup_acks = 0;
  c.nsacked = 0;
  c.sack_recovery = false;
  c.unacked_segments = 0;
  c.ack_now = false;
  c.ack_held = false;
  c.quick_ack = false;
  c.data_rx_us = 0;
  c.counters = TcpConnInfo();
  return &c;
}

void TcpStack::Impl::FreeConn(Conn& c) {
  wheel.Cancel(c.rtx_timer);
  wheel.Cancel(c.delack_timer);
  wheel.Cancel(c.keepalive_timer);
  // Unhash.
  uint32_t* link = &buckets[HashTuple(c.tuple) & bucket_mask];
  while (*link != kNil && *link != c.slot) link = &conns[*link].hash_next;
  if (*link == c.slot) *link = c.hash_next;
  c.hash_next = kNil;
  if (c.state == TcpState::kTimeWait) TwUnlink(c);
  if (c.counted_syn_backlog) {
    c.counted_syn_backlog = false;
    --syn_received_total;
    if (c.listener >= 0) --listeners[c.listener].syn_received;
  }
  c.reasm->Clear();
  c.in_use = false;
  ++c.generation;
  c.state = TcpState::kClosed;
  c.free_next = free_head;
  free_head = c.slot;
  --live;
}

inline void TcpStack::Impl::TwLink(Conn& c) {
  c.tw_next = kNil;
  c.tw_prev = tw_tail;
  if (tw_tail != kNil) conns[tw_tail].tw_next = c.slot;
  else tw_head = c.slot;
  tw_tail = c.slot;
  ++tw_count;
}

inline void TcpStack::Impl::TwUnlink(Conn& c) {
  if (c.tw_prev != kNil) conns[c.tw_prev].tw_next = c.tw_next;
  else tw_head = c.tw_next;
  if (c.tw_next != kNil) conns[c.tw_next].tw_prev = c.tw_prev;
  else tw_tail = c.tw_prev;
  c.tw_prev = c.tw_next = kNil;
  --tw_count;
}

// Ends the connection: tells the user (once), completes zero-copy sends as
// not acknowledged, frees the slot.
void TcpStack::Impl::CloseConn(Conn& c, CloseReason reason) {
  switch (reason) {
    case CloseReason::kNormal: ++stats.closed_normal; break;
    case CloseReason::kResetByPeer:
    case CloseReason::kRefused: ++stats.closed_reset; break;
    case CloseReason::kTimeout: ++stats.closed_timeout; break;
    case CloseReason::kAborted: ++stats.closed_aborted; break;
  }
  TcpUser* user = c.user;
  const ConnId id = IdOf(c);
  c.user = nullptr;
  // Zero-copy buffers go back to their owner.
  if (user != nullptr) {
    for (uint32_t i = 0; i < c.dcount; ++i) {
      const SendDesc& d = c.descs[(c.dhead + i) % c.dcap];
      if (d.zero_copy) user->OnSendComplete(id, d.cookie, false);
    }
  }
  c.dcount = 0;
  FreeConn(c);
  if (user != nullptr) user->OnClosed(id, reason);
}

void TcpStack::Impl::EnterTimeWait(Conn& c) {
  if (c.state == TcpState::kTimeWait) return;
  wheel.Cancel(c.delack_timer);
  wheel.Cancel(c.keepalive_timer);
  TcpUser* user = c.user;
  const ConnId id = IdOf(c);
  c.user = nullptr;
  c.state = TcpState::kTimeWait;
  TwLink(c);
  ++stats.closed_normal;
  ArmRtx(c, RtxKind::kTimeWait, uint64_t{opt.time_wait_s} * 1'000'000);
  // The user sees the close now; the slot lingers in TIME-WAIT.
  if (user != nullptr) user->OnClosed(id, CloseReason::kNormal);
  if (tw_count > opt.max_time_wait && tw_head != kNil) {
    ++stats.time_wait_recycled;
    FreeConn(conns[tw_head]);
  }
}

}  // namespace iwarp::tcp
