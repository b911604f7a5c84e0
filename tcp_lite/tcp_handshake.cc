// Opening a connection: segments to no connection and to a listener (RFC 9293
// 3.10.7.1, 3.10.7.2), SYN cookies (RFC 4987 3.6), the SYN-SENT state
// (3.10.7.3), the options of the peer's SYN, and SYN-RECEIVED -> ESTABLISHED.
#include "tcp_lite/tcp_stack_impl.h"

namespace iwarp::tcp {

void TcpStack::Impl::NoConnInput(const FourTuple& t, const Segment& seg, const Options& o) {
  const int li = FindListener(t.local_port);
  if (li < 0) {
    Drop(DropReason::kTcpNoConnection);
    if (!seg.header.Has(kFlagRst)) SendRstFor(t.local_addr, t.remote_addr, seg);
    return;
  }
  // RFC 9293 3.10.7.2, LISTEN.
  const SegmentHeader& h = seg.header;
  if (h.Has(kFlagRst)) return Drop(DropReason::kTcpListenBadFlags);
  if (h.Has(kFlagAck) && !h.Has(kFlagSyn)) {
    // Only while cookies we sent can still be valid (RFC 4987 3.6).
    if (opt.syn_cookies != SynCookieMode::kOff && cookies_sent_ever &&
        now_us - last_cookie_sent_us <= (kSynCookieMaxAge + 1) * kSynCookiePeriodMicros) {
      return CookieAck(li, t, seg, o);
    }
    Drop(DropReason::kTcpNoConnection);
    SendRstFor(t.local_addr, t.remote_addr, seg);
    return;
  }
  if (!h.Has(kFlagSyn) || h.Has(kFlagAck)) {
    if (h.Has(kFlagAck)) SendRstFor(t.local_addr, t.remote_addr, seg);
    return Drop(DropReason::kTcpListenBadFlags);
  }
  // Pressure: the backlog is full, or no slot is left for a new connection
  // (free or reclaimable from TIME-WAIT).
  const bool pressure = syn_received_total >= opt.syn_backlog ||
                        (free_head == kNil && tw_head == kNil);
  if (opt.syn_cookies == SynCookieMode::kAlways ||
      (pressure && opt.syn_cookies == SynCookieMode::kOnPressure)) {
    return SendCookieSynAck(t, seg, o);
  }
  if (pressure) return Drop(DropReason::kTcpSynBacklogFull);
  Conn* c = AllocConn(t);
  if (c == nullptr) return Drop(DropReason::kTcpTableFull);
  ++stats.passive_opens;
  c->passive = true;
  c->listener = li;
  c->counted_syn_backlog = true;
  ++syn_received_total;
  ++listeners[li].syn_received;
  c->iss = isn_gen.Isn(t, now_us);
  InitSendSeq(*c);
  ApplySynOptions(*c, seg, o);
  c->state = TcpState::kSynReceived;
  Emit(*c, c->iss, kFlagSyn | kFlagAck, 0);
  c->snd_nxt = c->iss + 1;
  c->snd_max = c->snd_nxt;
  ArmRtx(*c, RtxKind::kRetransmit, c->rto.rto_us());
}

void TcpStack::Impl::InitSendSeq(Conn& c) {
  c.snd_una = c.iss;
  c.snd_nxt = c.iss;
  c.snd_max = c.iss;
  c.snd_end = c.iss + 1;
  c.ts_offset = c.iss.value() * 2654435761u;
  c.high_rxt = c.iss;
}

// Options of the peer's SYN (RFC 9293 3.7.1, RFC 7323 2.2 / 3.2, RFC 2018 2),
// and the receive side initialised at IRS + 1.
void TcpStack::Impl::ApplySynOptions(Conn& c, const Segment& seg, const Options& o) {
  c.irs = seg.header.seq;
  c.peer_mss = o.mss.has_value() ? std::max<uint16_t>(*o.mss, 64) : kDefaultPeerMss;
  if (o.window_scale.has_value()) {
    c.snd_wscale = *o.window_scale;
    c.rcv_wscale = our_wscale;
    c.wscale_on = true;
  } else {
    c.snd_wscale = 0;
    c.rcv_wscale = 0;
    c.wscale_on = false;
  }
  c.sack_ok = opt.sack && o.sack_permitted;
  c.ts_ok = opt.timestamps && o.timestamps.has_value();
  if (c.ts_ok) c.ts_recent = o.timestamps->ts_val;
  c.emss = std::max<uint32_t>(
      std::min<uint32_t>(c.peer_mss, our_mss) - (c.ts_ok ? kTsOptionBytes : 0), 1);
  c.cc.Reset(opt.congestion_control, c.emss);
  c.snd_wnd = seg.header.window;  // RFC 7323 2.2: never scaled on a SYN
  c.max_snd_wnd = c.snd_wnd;
  c.snd_wl1 = seg.header.seq;
  c.snd_wl2 = seg.header.ack;
  c.rcv_consumed = c.irs + 1;
  c.rconsumed_idx = 0;
  c.reasm->Reset(c.irs + 1, c.rbuf_cap);
  c.rcv_adv = c.irs + 1;
}

void TcpStack::Impl::SendCookieSynAck(const FourTuple& t, const Segment& seg, const Options& o) {
  // RFC 4987 3.6: no state; the SYN-ACK carries only the MSS option, so
  // neither side uses window scale, SACK or timestamps on this connection.
  const uint16_t peer_mss = o.mss.value_or(kDefaultPeerMss);
  const Seq32 cookie = isn_gen.SynCookie(t, seg.header.seq, peer_mss, now_us);
  SegmentHeader h;
  h.src_port = t.local_port;
  h.dst_port = t.remote_port;
  h.seq = cookie;
  h.ack = seg.header.seq + 1;
  h.flags = kFlagSyn | kFlagAck;
  h.window = static_cast<uint16_t>(std::min<uint32_t>(opt.receive_buffer_bytes, 0xFFFF));
  uint8_t optbuf[8];
  SynOptions so;
  so.mss = our_mss;
  const size_t optlen = EncodeSynOptions(so, MutableByteSpan(optbuf)).size;
  uint8_t hdr[kMaxHeaderSize];
  const SegmentEncodeResult r =
      EncodeSegmentHeader(h, ByteSpan(optbuf, optlen), Ipv4Addresses{t.local_addr, t.remote_addr},
                          ByteSpan(), MutableByteSpan(hdr));
  if (r.status != SegmentStatus::kOk) return;
  ++stats.syn_cookies_sent;
  cookies_sent_ever = true;
  last_cookie_sent_us = now_us;
  ++stats.segments_out;
  if (!out.EmitSegment(t.local_addr, t.remote_addr, ByteSpan(hdr, r.size), {})) {
    Drop(DropReason::kTcpTxNoBuffer);
  }
}

void TcpStack::Impl::CookieAck(int li, const FourTuple& t, const Segment& seg, const Options& o) {
  const SynCookieResult cr =
      isn_gen.CheckSynCookie(t, seg.header.seq - 1u, seg.header.ack - 1u, now_us);
  if (cr.status != SynCookieStatus::kValid) {
    Drop(DropReason::kTcpBadSynCookie);
    SendRstFor(t.local_addr, t.remote_addr, seg);
    return;
  }
  Conn* c = AllocConn(t);
  if (c == nullptr) return Drop(DropReason::kTcpTableFull);
  ++stats.syn_cookies_accepted;
  ++stats.passive_opens;
  c->passive = true;
  c->listener = li;
  c->iss = seg.header.ack - 1u;
  InitSendSeq(*c);
  Segment syn = seg;
  syn.header.seq = seg.header.seq - 1u;
  Options so;
  so.mss = cr.mss;
  c->state = TcpState::kSynReceived;
  ApplySynOptions(*c, syn, so);
  c->snd_wscale = c->rcv_wscale = 0;
  c->snd_nxt = c->snd_max = c->iss + 1;
  // The ACK completes the handshake; process it as in SYN-RECEIVED.
  SynchronizedInput(*c, seg, o);
}

void TcpStack::Impl::SynSentInput(Conn& c, const Segment& seg, const Options& o) {
  // RFC 9293 3.10.7.3.
  const SegmentHeader& h = seg.header;
  if (h.Has(kFlagAck) && (h.ack <= c.iss || h.ack > c.snd_max)) {
    if (!h.Has(kFlagRst)) SendRstFor(c.tuple.local_addr, c.tuple.remote_addr, seg);
    return Drop(DropReason::kTcpSynSentBadAck);
  }
  if (h.Has(kFlagRst)) {
    // RFC 5961 3.2 / RFC 9293: only with an acceptable ACK.
    if (!h.Has(kFlagAck)) return Drop(DropReason::kTcpSynSentBadAck);
    ++stats.rsts_in;
    return CloseConn(c, CloseReason::kRefused);
  }
  if (!h.Has(kFlagSyn)) return Drop(DropReason::kTcpSynSentBadAck);
  ApplySynOptions(c, seg, o);
  c.last_rx_us = now_us;
  if (h.Has(kFlagAck)) {
    c.snd_una = h.ack;
    CancelRtx(c);
    c.rtt_timing = false;
    if (c.syn_retries == 0) c.rto.OnRttSample(now_us - c.rtt_start_us);
    c.snd_wl1 = h.seq;
    c.snd_wl2 = h.ack;
    c.state = TcpState::kEstablished;
    ++stats.established;
    SendAck(c);
    ArmKeepalive(c, uint64_t{opt.keepalive_idle_s} * 1'000'000);
    const uint32_t gen = c.generation;
    if (c.user != nullptr) c.user->OnConnected(IdOf(c));
    if (Alive(c, gen)) TrySend(c);
    return;
  }
  // Simultaneous open: SYN-RECEIVED, SYN,ACK with our ISS.
  c.state = TcpState::kSynReceived;
  Emit(c, c.iss, kFlagSyn | kFlagAck, 0);
  ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
}

// SYN-RECEIVED -> ESTABLISHED. False if the connection went away.
bool TcpStack::Impl::Establish(Conn& c, const SegmentHeader& h) {
  const uint32_t gen = c.generation;
  c.state = TcpState::kEstablished;
  ++stats.established;
  CancelRtx(c);
  c.snd_wnd = uint32_t{h.window} << c.snd_wscale;
  c.max_snd_wnd = std::max(c.max_snd_wnd, c.snd_wnd);
  c.snd_wl1 = h.seq;
  c.snd_wl2 = h.ack;
  ArmKeepalive(c, uint64_t{opt.keepalive_idle_s} * 1'000'000);
  if (c.counted_syn_backlog) {
    c.counted_syn_backlog = false;
    --syn_received_total;
    if (c.listener >= 0) --listeners[c.listener].syn_received;
  }
  if (c.passive && c.user == nullptr) {
    TcpUser* lu = (c.listener >= 0 && listeners[c.listener].in_use) ? listeners[c.listener].user
                                                                     : nullptr;
    TcpUser* u = lu != nullptr ? lu->OnAccept(IdOf(c), c.tuple) : nullptr;
    if (!Alive(c, gen)) return false;
    if (u == nullptr) {
      ++stats.listen_refused;
      SendRst(c);
      FreeConn(c);
      return false;
    }
    c.user = u;
  } else if (!c.passive && c.user != nullptr) {
    c.user->OnConnected(IdOf(c));  // simultaneous open
    if (!Alive(c, gen)) return false;
  }
  return true;
}

}  // namespace iwarp::tcp
