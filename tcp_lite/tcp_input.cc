// Segment arrival (RFC 9293 3.10.7): parsing and lookup, the checks of
// 3.10.7.4 in synchronized states (the fifth, the ACK field, is tcp_ack.cc),
// and the segment text: the receive ring, the reassembler, delayed ACKs and
// delivery to the user.
#include <cstring>

#include "tcp_lite/tcp_stack_impl.h"

namespace iwarp::tcp {

void TcpStack::Impl::Input(uint32_t src_ip, uint32_t dst_ip, ByteSpan in, uint64_t now,
                           ChecksumCheck check) {
  SetNow(now);
  Segment seg;
  const SegmentStatus st =
      ParseSegment(in, in.size(), Ipv4Addresses{src_ip, dst_ip}, check, &seg);
  if (st == SegmentStatus::kBadChecksum) return Drop(DropReason::kTcpBadChecksum);
  if (st != SegmentStatus::kOk) return Drop(DropReason::kTcpMalformed);
  if (!OwnsIp(dst_ip)) return Drop(DropReason::kTcpNotForUs);
  if (seg.header.src_port == 0 || seg.header.dst_port == 0) return Drop(DropReason::kTcpBadPort);
  Options o;
  if (ParseOptions(seg.options, seg.header.Has(kFlagSyn), &o) != OptionStatus::kOk) {
    return Drop(DropReason::kTcpBadOptions);
  }
  ++stats.segments_in;
  const FourTuple t{dst_ip, seg.header.dst_port, src_ip, seg.header.src_port};
  Conn* c = Lookup(t);
  if (c != nullptr && c->state == TcpState::kTimeWait && seg.header.Has(kFlagSyn) &&
      !seg.header.Has(kFlagAck) && !seg.header.Has(kFlagRst)) {
    // RFC 6191 2: a SYN for a 4-tuple in TIME-WAIT either opens a new
    // incarnation (the old one is released and the SYN goes to the
    // listener) or is an old duplicate, silently dropped while the old
    // incarnation stays in TIME-WAIT.
    if (!NewIncarnation(*c, seg, o)) return Drop(DropReason::kTcpTimeWaitOldSyn);
    ++stats.time_wait_reopened;
    FreeConn(*c);
    c = nullptr;
  }
  if (c == nullptr) return NoConnInput(t, seg, o);
  ++c->counters.segments_in;
  if (c->state == TcpState::kSynSent) return SynSentInput(*c, seg, o);
  return SynchronizedInput(*c, seg, o);
}

// RFC 6191 2: whether a SYN (no ACK, no RST) to TIME-WAIT connection `c`
// belongs to a new incarnation. Timestamps decide when the old incarnation
// used them and the new one would (TSval above TS.Recent, or equal with a
// sequence number above); otherwise the sequence number does (above the
// last one received, RCV.NXT; RFC 9293 3.10.7.4, RFC 1122 4.2.2.13), except
// that a timestamped SYN after an incarnation without timestamps is new.
inline bool TcpStack::Impl::NewIncarnation(const Conn& c, const Segment& seg,
                                           const Options& o) const {
  const bool ts_new = opt.timestamps && o.timestamps.has_value();
  const bool seq_above = seg.header.seq > c.reasm->rcv_nxt();
  if (c.ts_ok && ts_new) {
    const int32_t d = static_cast<int32_t>(o.timestamps->ts_val - c.ts_recent);
    return d > 0 || (d == 0 && seq_above);
  }
  if (!c.ts_ok && ts_new) return true;
  return seq_above;
}

// Sequence acceptability (RFC 9293 3.10.7.4, the four cases).
inline bool TcpStack::Impl::Acceptable(const Conn& c, Seq32 seq, uint32_t seg_len) const {
  const Seq32 rcv_nxt = c.reasm->rcv_nxt();
  const uint32_t wnd = std::max<uint32_t>(
      RcvWindow(c), c.rcv_adv > rcv_nxt ? static_cast<uint32_t>(c.rcv_adv - rcv_nxt) : 0);
  if (seg_len == 0) {
    if (wnd == 0) return seq == rcv_nxt;
    return rcv_nxt <= seq && seq < rcv_nxt + wnd;
  }
  if (wnd == 0) return false;
  const Seq32 last = seq + (seg_len - 1);
  return (rcv_nxt <= seq && seq < rcv_nxt + wnd) || (rcv_nxt <= last && last < rcv_nxt + wnd);
}

void TcpStack::Impl::SynchronizedInput(Conn& c, const Segment& seg_in, const Options& o) {
  Segment seg = seg_in;
  if (c.state == TcpState::kSynReceived && seg.header.Has(kFlagSyn) &&
      seg.header.Has(kFlagAck) && seg.header.seq == c.irs) {
    // Simultaneous open (RFC 9293 3.5 figure 8): the peer's SYN,ACK repeats
    // its SYN; what is new is the ACK of ours.
    seg.header.flags = static_cast<uint8_t>(seg.header.flags & ~kFlagSyn);
    seg.header.seq = c.irs + 1;
  }
  const SegmentHeader& h = seg.header;
  const uint32_t gen = c.generation;
  uint32_t seg_len = static_cast<uint32_t>(seg.payload.size());
  if (h.Has(kFlagSyn)) ++seg_len;
  if (h.Has(kFlagFin)) ++seg_len;

  if (c.state == TcpState::kSynReceived && h.Has(kFlagSyn) && !h.Has(kFlagAck) &&
      h.seq == c.irs) {
    // Retransmitted SYN: answer with the SYN-ACK again.
    Emit(c, c.iss, kFlagSyn | kFlagAck, 0);
    return;
  }

  // RFC 7323 5.3 R1: PAWS.
  if (c.ts_ok && o.timestamps.has_value() && !h.Has(kFlagRst) &&
      static_cast<int32_t>(o.timestamps->ts_val - c.ts_recent) < 0) {
    Drop(DropReason::kTcpPaws);
    SendAck(c);
    return;
  }

  if (c.state == TcpState::kTimeWait) {
    // RFC 9293 3.10.7.4: everything the peer can still send is old (its
    // data and FIN are all received). An unacceptable segment is answered
    // with an ACK - the peer lost ours and retransmits; a retransmitted
    // FIN also restarts the 2 MSL timer. RSTs are ignored (RFC 1337).
    Drop(DropReason::kTcpTimeWait);
    if (h.Has(kFlagRst)) return;
    if (h.Has(kFlagFin)) {
      ArmRtx(c, RtxKind::kTimeWait, uint64_t{opt.time_wait_s} * 1'000'000);
    }
    if (seg_len > 0 || !Acceptable(c, h.seq, seg_len)) SendAck(c);
    return;
  }

  // First check: sequence number.
  const bool acceptable = Acceptable(c, h.seq, seg_len);
  if (!acceptable) {
    if (h.Has(kFlagRst)) return Drop(DropReason::kTcpRstOutOfWindow);
    // RFC 9293 3.10.7.4: with a zero receive window, valid ACKs are still
    // processed; only the data is refused.
    if (h.seq == c.reasm->rcv_nxt() && h.Has(kFlagAck) && !h.Has(kFlagSyn) &&
        c.state != TcpState::kSynReceived) {
      if (!ProcessAck(c, seg, o) || !Alive(c, gen)) return;
      TrySend(c);
      if (!Alive(c, gen)) return;
    }
    Drop(seg.payload.empty() ? DropReason::kTcpOutOfWindow
                             : (h.seq + static_cast<uint32_t>(seg.payload.size()) <=
                                        c.reasm->rcv_nxt()
                                    ? DropReason::kTcpDuplicateData
                                    : DropReason::kTcpOutOfWindow));
    // A duplicate gets a D-SACK (RFC 2883) through the reassembler; only
    // wholly old data goes there, so nothing is taken that the receive
    // ring does not hold.
    if (!seg.payload.empty() && c.sack_ok &&
        h.seq + static_cast<uint32_t>(seg.payload.size()) <= c.reasm->rcv_nxt()) {
      c.reasm->Insert(ReasmSegment{h.seq, seg.payload, false, 0});
      ++stats.dsacks_out;
    }
    SendAck(c);
    return;
  }
  c.last_rx_us = now_us;
  c.keepalive_sent = 0;

  // Second check: RST (RFC 5961 3.2).
  if (h.Has(kFlagRst)) {
    if (h.seq != c.reasm->rcv_nxt()) {
      Drop(DropReason::kTcpRstChallenged);
      ChallengeAck(c);
      return;
    }
    ++stats.rsts_in;
    if (c.state == TcpState::kSynReceived && c.passive && c.user == nullptr) {
      FreeConn(c);  // back to LISTEN: the listener never saw it
      return;
    }
    return CloseConn(c, c.state == TcpState::kSynReceived ? CloseReason::kRefused
                                                           : CloseReason::kResetByPeer);
  }

  // Fourth check: SYN in a synchronized state (RFC 5961 4.2).
  if (h.Has(kFlagSyn)) {
    Drop(DropReason::kTcpSynChallenged);
    ChallengeAck(c);
    return;
  }

  // Fifth check: the ACK field (tcp_ack.cc); without the ACK bit the segment
  // is dropped.
  if (!h.Has(kFlagAck)) return Drop(DropReason::kTcpNoAck);

  // RFC 7323 4.3: TS.Recent from segments covering Last.ACK.sent.
  if (c.ts_ok && o.timestamps.has_value() && h.seq <= c.last_ack_sent) {
    c.ts_recent = o.timestamps->ts_val;
  }

  if (c.state == TcpState::kSynReceived && !AckInSynReceived(c, seg)) return;
  if (!ProcessAck(c, seg, o)) return;
  if (!Alive(c, gen)) return;

  // Segment text and FIN.
  if (!seg.payload.empty() || h.Has(kFlagFin)) {
    if (!InStates(c.state, {TcpState::kEstablished, TcpState::kFinWait1, TcpState::kFinWait2})) {
      if (!seg.payload.empty() || !h.Has(kFlagFin)) Drop(DropReason::kTcpDataAfterClose);
      if (h.Has(kFlagFin)) SendAck(c);  // retransmitted FIN
    } else {
      ReceiveData(c, seg);
      if (!Alive(c, gen)) return;
      if (c.loop_bytes != 0) LoopReceive(c);
    }
  }
  TrySend(c);
  if (!Alive(c, gen)) return;
  if (c.ack_now) SendAck(c);
}

// Copies the in-window bytes into the receive ring, runs the reassembler
// and delivers in-order data to the user.
void TcpStack::Impl::ReceiveData(Conn& c, const Segment& seg) {
  const uint32_t gen = c.generation;
  const SegmentHeader& h = seg.header;
  const uint32_t len = static_cast<uint32_t>(seg.payload.size());
  const Seq32 rcv_nxt0 = c.reasm->rcv_nxt();
  const Seq32 edge = c.rcv_consumed + c.rbuf_cap;
  Seq32 a = std::max(h.seq, rcv_nxt0);
  Seq32 b = h.seq + len;
  if (b > edge) b = edge;
  const bool fin_in_window = h.Has(kFlagFin) && h.seq + len <= edge;
  const bool was_ooo_state = c.reasm->held_segments() > 0;
  c.reasm->SetWindow(static_cast<uint32_t>(edge - rcv_nxt0));
  InsertResult last;
  bool any_ooo = false;
  bool direct = false;
  if (a < b && a == rcv_nxt0 && !was_ooo_state && c.rcv_consumed == rcv_nxt0 &&
      c.user != nullptr && !c.reasm->fin_received()) {
    // In-order fast path: nothing held, nothing unconsumed. The user reads
    // the bytes straight from the received segment; only what it leaves is
    // copied into the ring. The reassembler delivers this segment at once
    // (it is at RCV.NXT with nothing held), so it keeps no reference to the
    // input.
    direct = true;
    const uint32_t n = static_cast<uint32_t>(b - a);
    const ByteSpan in = seg.payload.subspan(static_cast<uint32_t>(a - h.seq), n);
    last = c.reasm->Insert(ReasmSegment{a, in, fin_in_window, 0});
    const size_t took =
        std::min<size_t>(c.user->OnData(IdOf(c), c.counters.bytes_in, in), n);
    if (!Alive(c, gen)) return;
    Consume(c, static_cast<uint32_t>(took));
    uint32_t done = static_cast<uint32_t>(took);
    uint32_t idx = c.rconsumed_idx;
    while (done < n) {
      const uint32_t chunk = std::min(n - done, c.rbuf_cap - idx);
      std::memcpy(c.rbuf + idx, in.data() + done, chunk);
      done += chunk;
      idx = (idx + chunk) % c.rbuf_cap;
    }
  } else if (a < b) {
    const uint32_t n = static_cast<uint32_t>(b - a);
    const uint32_t in_off = static_cast<uint32_t>(a - h.seq);
    const uint32_t ring_off = static_cast<uint32_t>(a - c.rcv_consumed);
    uint32_t idx = (c.rconsumed_idx + ring_off) % c.rbuf_cap;
    uint32_t done = 0;
    while (done < n) {
      const uint32_t chunk = std::min(n - done, c.rbuf_cap - idx);
      std::memcpy(c.rbuf + idx, seg.payload.data() + in_off + done, chunk);
      const bool last_piece = done + chunk == n;
      last = c.reasm->Insert(ReasmSegment{a + done, ByteSpan(c.rbuf + idx, chunk),
                                          last_piece && fin_in_window, 0});
      if (last.queued > 0) any_ooo = true;
      done += chunk;
      idx = (idx + chunk) % c.rbuf_cap;
    }
    if (any_ooo) {
      ++stats.ooo_segments;
      if (c.user != nullptr) {
        c.user->OnOutOfOrder(IdOf(c), StreamOffset(c, a), seg.payload.subspan(in_off, n));
        if (!Alive(c, gen)) return;
      }
    }
  } else if (fin_in_window) {
    last = c.reasm->Insert(ReasmSegment{h.seq + len, ByteSpan(), true, 0});
  }
  if (h.seq < rcv_nxt0 && len > 0) {
    // The part below RCV.NXT: reported as a D-SACK (RFC 2883 4).
    const uint32_t dup = std::min(static_cast<uint32_t>(rcv_nxt0 - h.seq), len);
    c.reasm->Insert(ReasmSegment{h.seq, seg.payload.first(dup), false, 0});
    if (c.sack_ok) ++stats.dsacks_out;
    Drop(DropReason::kTcpDuplicateData);
    c.ack_now = true;
  }
  if (len > 0 && h.seq + len > edge) Drop(DropReason::kTcpOutOfWindow);
  switch (last.drop) {
    case ReasmDrop::kSegmentCapacity:
    case ReasmDrop::kByteCapacity: Drop(DropReason::kTcpReasmFull); break;
    case ReasmDrop::kBeyondFin:
    case ReasmDrop::kFinConflict: Drop(DropReason::kTcpBeyondFin); break;
    default: break;
  }

  // Delayed ACK policy (RFC 5681 4.2, RFC 9293 3.8.6.3): an ACK for at
  // least every second full-sized segment. A coalesced frame (the peer's
  // TSO run arriving whole, LRO) counts as the segments it stands for, or a
  // lone 64 KiB frame would wait for the delayed-ACK timer while the peer
  // waits for its ACK.
  //
  // After the timer fired with no reply of ours to carry the ACK (a peer
  // streaming data, or one whose next message waits for this ACK, as an
  // RDMA sender whose completions wait for it does), the connection is in
  // quick-ACK mode (Conn::quick_ack): even a lone segment is acknowledged
  // at the end of its burst. 4 KiB Writes at MTU 9000 over vhost-user
  // sometimes settled into one 2-FPDU segment per timer tick (127 MiB/s
  // against 1100-1150 in the same run).
  const uint32_t full = std::max<uint32_t>(our_mss - (c.ts_ok ? kTsOptionBytes : 0), 1);
  c.unacked_segments += std::max<uint32_t>((len + full - 1) / full, 1);
  if (len > 0) c.data_rx_us = now_us;
  if (any_ooo || was_ooo_state || h.Has(kFlagFin)) {
    c.ack_now = true;
  } else if (c.unacked_segments >= 2 || opt.delayed_ack_us == 0 || c.quick_ack) {
    // In a receive burst the ACK for in-order data waits for the burst's
    // end: one cumulative ACK per burst, as a GRO-fed kernel receiver sends.
    // With delayed_ack_us 0 as well: the burst ends in the same poll, so
    // no ACK is late, and a bulk receiver stops acking every segment.
    if (in_burst) {
      HoldAck(c);
    } else {
      c.ack_now = true;
    }
  } else if (!c.delack_timer.armed()) {
    ArmAt(c.delack_timer, opt.delayed_ack_us);
  }

  if (!direct) {
    DeliverToUser(c);
    if (!Alive(c, gen)) return;
  }

  if (c.reasm->fin_delivered() && !c.peer_fin_reported) {
    c.peer_fin_reported = true;
    c.ack_now = true;
    bool time_wait = false;
    switch (c.state) {
      case TcpState::kEstablished: c.state = TcpState::kCloseWait; break;
      case TcpState::kFinWait1:
        if (c.fin_queued && c.snd_una > c.snd_end) time_wait = true;
        else c.state = TcpState::kClosing;
        break;
      case TcpState::kFinWait2: time_wait = true; break;
      default: break;
    }
    if (c.user != nullptr) {
      c.user->OnPeerFin(IdOf(c));
      if (!Alive(c, gen)) return;
    }
    if (time_wait) {
      SendAck(c);
      EnterTimeWait(c);
    }
  }
}

inline void TcpStack::Impl::HoldAck(Conn& c) {
  c.ack_held = true;
  if (c.on_burst_list) return;
  c.on_burst_list = true;
  burst_acks[n_burst_acks++] = c.slot;
}

inline uint64_t TcpStack::Impl::StreamOffset(const Conn& c, Seq32 s) const {
  return c.counters.bytes_in + static_cast<uint64_t>(static_cast<int64_t>(s - c.rcv_consumed));
}

// Offers unconsumed in-order bytes to the user.
void TcpStack::Impl::DeliverToUser(Conn& c) {
  const uint32_t gen = c.generation;
  for (int i = 0; i < 2 && c.user != nullptr; ++i) {
    const Seq32 data_end = c.reasm->fin_delivered() ? c.reasm->rcv_nxt() - 1u : c.reasm->rcv_nxt();
    const int32_t avail = data_end - c.rcv_consumed;
    if (avail <= 0) return;
    const uint32_t chunk = std::min(static_cast<uint32_t>(avail), c.rbuf_cap - c.rconsumed_idx);
    const uint64_t off = c.counters.bytes_in;
    const size_t took =
        c.user->OnData(IdOf(c), off, ByteSpan(c.rbuf + c.rconsumed_idx, chunk));
    if (!Alive(c, gen)) return;
    Consume(c, static_cast<uint32_t>(std::min<size_t>(took, chunk)));
    if (took < chunk) return;
  }
}

// Test mode (TcpStack::AdoptEstablished): once all of one pass of
// loop_bytes arrived in order and was consumed, the expected sequence
// returns to irs + 1 (the ring position and the stream offsets the user
// sees go on). Nothing can be held beyond the pass's end: a generator
// replaying the same pass never sends those sequence numbers.
void TcpStack::Impl::LoopReceive(Conn& c) {
  const Seq32 end = c.irs + 1u + c.loop_bytes;
  if (c.reasm->rcv_nxt() != end || c.rcv_consumed != end || c.reasm->held_segments() > 0 ||
      c.reasm->fin_received()) {
    return;
  }
  c.reasm->Reset(c.irs + 1u, c.rbuf_cap);
  c.rcv_consumed = c.irs + 1u;
  c.rcv_adv = c.rcv_adv - c.loop_bytes;
  c.snd_wl1 = c.irs;
  ++stats.test_loops;
}

}  // namespace iwarp::tcp
