// Timer expiry: retransmission (RFC 6298), SYN retransmission, zero-window
// probes (RFC 9293 3.8.6.1), TIME-WAIT's end, delayed ACK and keepalive
// (RFC 9293 3.8.4). Arming is inline in tcp_stack_impl.h.
#include "tcp_lite/tcp_stack_impl.h"

namespace iwarp::tcp {

void TcpStack::Impl::OnRtxTimer(Timer&, void* ctx) {
  Conn& c = *static_cast<Conn*>(ctx);
  c.stack->RtxExpired(c);
}

void TcpStack::Impl::OnDelackTimer(Timer&, void* ctx) {
  Conn& c = *static_cast<Conn*>(ctx);
  ++c.stack->stats.delayed_acks;
  if (!c.quick_ack) {
    c.quick_ack = true;
    ++c.stack->stats.quick_ack_entries;
  }
  c.stack->SendAck(c);
}

void TcpStack::Impl::OnKeepaliveTimer(Timer&, void* ctx) {
  Conn& c = *static_cast<Conn*>(ctx);
  c.stack->KeepaliveExpired(c);
}

void TcpStack::Impl::RtxExpired(Conn& c) {
  const RtxKind kind = c.rtx_kind;
  c.rtx_kind = RtxKind::kNone;
  switch (kind) {
    case RtxKind::kNone: return;
    case RtxKind::kTimeWait: FreeConn(c); return;  // the user was told on entry
    case RtxKind::kPersist: {
      // RFC 9293 3.8.6.1: probe the zero window with one byte.
      if (c.snd_wnd != 0 || !(c.snd_end > c.snd_una)) return;
      ++stats.window_probes;
      const Seq32 probe = c.snd_una;
      SendData(c, probe, 1, c.snd_max > probe);
      wheel.Cancel(c.rtx_timer);
      if (c.snd_nxt == c.snd_una) c.snd_nxt = c.snd_una + 1;
      c.persist_backoff = std::min<uint32_t>(c.persist_backoff + 1, 16);
      const uint64_t delay = std::min<uint64_t>(c.rto.rto_us() << c.persist_backoff,
                                                opt.rto_max_us);
      ArmRtx(c, RtxKind::kPersist, delay);
      return;
    }
    case RtxKind::kRetransmit: break;
  }
  ++stats.timeouts;
  ++c.counters.timeouts;
  if (c.state == TcpState::kSynSent || c.state == TcpState::kSynReceived) {
    if (++c.syn_retries > opt.max_syn_retransmissions) {
      if (c.state == TcpState::kSynReceived) SendRst(c);
      CloseConn(c, CloseReason::kTimeout);
      return;
    }
    c.rto.OnTimeout();
    ++stats.retransmitted_segments;
    ++c.counters.retransmitted_segments;
    Emit(c, c.iss, c.state == TcpState::kSynSent ? kFlagSyn : (kFlagSyn | kFlagAck), 0);
    ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
    return;
  }
  if (c.snd_max == c.snd_una) return;  // nothing outstanding
  if (c.rto.backoff_count() >= opt.max_retransmissions) {
    SendRst(c);
    CloseConn(c, CloseReason::kTimeout);
    return;
  }
  c.rto.OnTimeout();
  const uint32_t flight = static_cast<uint32_t>(c.snd_max - c.snd_una);
  c.cc.With([&](auto& a) {
    a.OnRetransmitTimeout(c.snd_max, flight);
    return 0;
  });
  // RFC 6675 5.1: after an RTO the scoreboard is kept but the recovery
  // ends; RFC 2018 8: SACKed data may be reneged, so it is cleared.
  c.nsacked = 0;
  c.sack_recovery = false;
  c.dup_acks = 0;
  c.snd_nxt = c.snd_una;  // go back N (RFC 5681 3.1 retransmits from SND.UNA)
  c.rtt_timing = false;
  ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
  TrySend(c);
}

void TcpStack::Impl::KeepaliveExpired(Conn& c) {
  if (!InStates(c.state, {TcpState::kEstablished, TcpState::kCloseWait})) return;
  const uint64_t idle = now_us - c.last_rx_us;
  const uint64_t idle_limit = uint64_t{opt.keepalive_idle_s} * 1'000'000;
  if (idle < idle_limit && c.keepalive_sent == 0) {
    ArmKeepalive(c, idle_limit - idle);
    return;
  }
  if (c.keepalive_sent >= opt.keepalive_count) {
    SendRst(c);
    CloseConn(c, CloseReason::kTimeout);
    return;
  }
  // RFC 9293 3.8.4: a segment with SEG.SEQ = SND.NXT - 1 and no data.
  ++c.keepalive_sent;
  ++stats.keepalive_probes;
  Emit(c, c.snd_una - 1u, kFlagAck, 0);
  ArmKeepalive(c, uint64_t{opt.keepalive_interval_s} * 1'000'000);
}

}  // namespace iwarp::tcp
