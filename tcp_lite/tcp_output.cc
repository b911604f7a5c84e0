// Output: building and emitting segments (options, SACK blocks, window), RSTs
// and challenge ACKs, and what to send when (windows, Nagle, SWS avoidance,
// SACK recovery, go back N after an RTO, the persist timer's start).
#include "tcp_lite/tcp_stack_impl.h"

namespace iwarp::tcp {

// Emits one segment. `payload_len` bytes of queued data from `seq` (must be
// available in the descriptors). Returns false when the data plane had no
// buffer (the segment counts as sent and lost).
bool TcpStack::Impl::Emit(Conn& c, Seq32 seq, uint8_t flags, uint32_t payload_len,
                          std::span<const ByteSpan> gathered) {
  uint8_t hdr[kMaxHeaderSize];
  uint8_t optbuf[kMaxOptionsSize];
  size_t optlen = 0;
  const bool syn = (flags & kFlagSyn) != 0;
  if (syn) {
    SynOptions so;
    so.mss = our_mss;
    // An active SYN offers everything enabled; a SYN-ACK answers what the
    // peer offered (RFC 7323 2.2, 3.2; RFC 2018 2).
    if (c.state == TcpState::kSynSent || c.wscale_on) so.window_scale = c.rcv_wscale;
    so.sack_permitted = c.state == TcpState::kSynSent ? opt.sack : c.sack_ok;
    const bool ts = c.state == TcpState::kSynSent ? opt.timestamps : c.ts_ok;
    if (ts) so.timestamps = Timestamps{TsVal(c), (flags & kFlagAck) ? c.ts_recent : 0};
    optlen = EncodeSynOptions(so, MutableByteSpan(optbuf)).size;
  } else if (flags & kFlagRst) {
    optlen = 0;
  } else {
    std::optional<Timestamps> ts;
    if (c.ts_ok) ts = Timestamps{TsVal(c), c.ts_recent};
    SackBlock blocks[kMaxSackBlocks];
    size_t nblocks = 0;
    if (c.sack_ok) {
      nblocks = c.reasm->SackBlocks(blocks);
      // RFC 9293 3.7.1, RFC 6691: options count against the MSS, so
      // options + payload stay within the smaller of the peer's MSS and
      // ours (our port's MTU); blocks that do not fit are left out of this
      // segment. EMSS already leaves the timestamps' room.
      const uint32_t room = c.emss + (c.ts_ok ? kTsOptionBytes : 0);
      while (nblocks > 0 && payload_len + (c.ts_ok ? kTsOptionBytes : 0) + 4 + 8 * nblocks > room) {
        --nblocks;
      }
    }
    optlen = EncodeAckOptions(ts, std::span<const SackBlock>(blocks, nblocks),
                              MutableByteSpan(optbuf)).size;
  }

  ByteSpan pieces[kMaxPieces];
  size_t npieces = 0;
  if (!gathered.empty()) {
    npieces = std::min(gathered.size(), kMaxPieces);
    std::copy(gathered.begin(), gathered.begin() + static_cast<std::ptrdiff_t>(npieces), pieces);
  } else if (payload_len > 0) {
    npieces = GatherPayload(c, seq, &payload_len, pieces);
  }

  SegmentHeader h;
  h.src_port = c.tuple.local_port;
  h.dst_port = c.tuple.remote_port;
  h.seq = seq;
  h.flags = flags;
  if (flags & kFlagAck) h.ack = c.reasm->rcv_nxt();
  uint32_t wnd = RcvWindow(c);
  if (syn) {
    h.window = static_cast<uint16_t>(std::min<uint32_t>(wnd, 0xFFFF));  // RFC 7323 2.2
  } else if (!(flags & kFlagRst)) {
    h.window = static_cast<uint16_t>(std::min<uint32_t>(wnd >> c.rcv_wscale, 0xFFFF));
  }
  const Ipv4Addresses addrs{c.tuple.local_addr, c.tuple.remote_addr};
  const std::span<const ByteSpan> payload(pieces, npieces);
  PayloadSum psum;
  if (out.SumsPayload()) {
    for (ByteSpan p : payload) psum.length += p.size();  // the output adds the sum
  } else {
    psum = SumPayload(payload);
  }
  const SegmentEncodeResult r =
      EncodeSegmentHeader(h, ByteSpan(optbuf, optlen), addrs, psum, MutableByteSpan(hdr));
  if (r.status != SegmentStatus::kOk) return false;  // cannot happen: sizes are ours
  if (flags & kFlagAck) {
    // Data leaving soon after data arrived is a reply: it carries the ACK,
    // so delaying ACKs pays again.
    if (payload_len > 0 && c.quick_ack && now_us - c.data_rx_us < opt.delayed_ack_us) {
      c.quick_ack = false;
    }
    c.last_ack_sent = h.ack;
    const Seq32 edge = h.ack + (syn ? uint32_t{h.window} : uint32_t{h.window} << c.rcv_wscale);
    if (edge > c.rcv_adv) c.rcv_adv = edge;
    c.unacked_segments = 0;
    c.ack_now = false;
    c.ack_held = false;  // this segment carries it
    wheel.Cancel(c.delack_timer);
  }
  ++stats.segments_out;
  ++c.counters.segments_out;
  if (flags & kFlagRst) ++stats.rsts_out;
  const bool ok =
      out.EmitSegment(c.tuple.local_addr, c.tuple.remote_addr, ByteSpan(hdr, r.size), payload);
  if (!ok) Drop(DropReason::kTcpTxNoBuffer);
  return ok;
}

// Collects the queued bytes [seq, seq + *len) as pieces; shortens *len if
// more than kMaxPieces pieces would be needed.
inline size_t TcpStack::Impl::GatherPayload(const Conn& c, Seq32 seq, uint32_t* len,
                                            ByteSpan* pieces) const {
  size_t n = 0;
  uint32_t need = *len;
  uint32_t got = 0;
  // The descriptors are contiguous in sequence order: the first one
  // ending after `seq` is found by bisection (zero-copy records add two
  // descriptors each, so a linear walk from the head cost one step per
  // queued FPDU for every segment sent).
  uint32_t lo = 0;
  uint32_t hi = c.dcount;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    const SendDesc& d = c.descs[(c.dhead + mid) % c.dcap];
    if (d.seq + d.len > seq) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  for (uint32_t i = lo; i < c.dcount && need > 0 && n < kMaxPieces; ++i) {
    const SendDesc& d = c.descs[(c.dhead + i) % c.dcap];
    const uint32_t off = static_cast<uint32_t>(seq - d.seq);
    const uint32_t take = std::min(need, d.len - off);
    pieces[n++] = ByteSpan(d.data + off, take);
    seq = seq + take;
    need -= take;
    got += take;
  }
  *len = got;
  return n;
}

// RFC 9293 3.10.7.1: the RST answering a segment for no connection.
void TcpStack::Impl::SendRstFor(uint32_t local_ip, uint32_t remote_ip, const Segment& seg) {
  SegmentHeader h;
  h.src_port = seg.header.dst_port;
  h.dst_port = seg.header.src_port;
  if (seg.header.Has(kFlagAck)) {
    h.seq = seg.header.ack;
    h.flags = kFlagRst;
  } else {
    uint32_t seg_len = static_cast<uint32_t>(seg.payload.size());
    if (seg.header.Has(kFlagSyn)) ++seg_len;
    if (seg.header.Has(kFlagFin)) ++seg_len;
    h.seq = Seq32(0);
    h.ack = seg.header.seq + seg_len;
    h.flags = kFlagRst | kFlagAck;
  }
  uint8_t hdr[kHeaderSize];
  const SegmentEncodeResult r = EncodeSegmentHeader(
      h, ByteSpan(), Ipv4Addresses{local_ip, remote_ip}, ByteSpan(), MutableByteSpan(hdr));
  if (r.status != SegmentStatus::kOk) return;
  ++stats.segments_out;
  ++stats.rsts_out;
  if (!out.EmitSegment(local_ip, remote_ip, ByteSpan(hdr, r.size), {})) {
    Drop(DropReason::kTcpTxNoBuffer);
  }
}

// RFC 5961 7: challenge ACKs are rate limited per stack.
void TcpStack::Impl::ChallengeAck(Conn& c) {
  if (now_us - challenge_epoch_us >= 1'000'000) {
    challenge_epoch_us = now_us;
    challenge_count = 0;
  }
  if (challenge_count >= opt.challenge_ack_limit) {
    ++stats.challenge_acks_suppressed;
    return;
  }
  ++challenge_count;
  ++stats.challenge_acks;
  SendAck(c);
}

// Bytes in flight: RFC 6675 pipe during SACK recovery, else SND.NXT - SND.UNA.
inline uint32_t TcpStack::Impl::Pipe(const Conn& c) const {
  if (!c.sack_recovery || c.nsacked == 0) return static_cast<uint32_t>(c.snd_max - c.snd_una);
  const Seq32 high_sack = c.sacked[c.nsacked - 1].right_edge;
  uint32_t pipe = c.snd_max > high_sack ? static_cast<uint32_t>(c.snd_max - high_sack) : 0;
  // Retransmitted hole bytes below high_rxt are in flight again.
  Seq32 pos = c.snd_una;
  for (uint32_t i = 0; i < c.nsacked && pos < c.high_rxt; ++i) {
    const Seq32 hole_end = std::min(c.sacked[i].left_edge, c.high_rxt);
    if (hole_end > pos) pipe += static_cast<uint32_t>(hole_end - pos);
    pos = c.sacked[i].right_edge;
  }
  return pipe;
}

// RFC 6675 NextSeg() (1): the first byte at or above high_rxt that is in a
// hole below the highest SACKed byte. Returns the hole's extent.
// RFC 6675 4 IsLost(): a hole counts as lost once more than
// (DupThresh - 1) * SMSS bytes above it are SACKed.
inline bool TcpStack::Impl::NextHole(const Conn& c, Seq32* start, uint32_t* len) const {
  Seq32 pos = std::max(c.snd_una, c.high_rxt);
  for (uint32_t i = 0; i < c.nsacked; ++i) {
    if (c.sacked[i].right_edge <= pos) continue;
    if (c.sacked[i].left_edge > pos) {
      uint32_t above = 0;
      for (uint32_t j = i; j < c.nsacked; ++j) {
        above += static_cast<uint32_t>(c.sacked[j].right_edge - c.sacked[j].left_edge);
      }
      if (above <= (kDupThresh - 1) * c.emss) return false;
      *start = pos;
      *len = static_cast<uint32_t>(c.sacked[i].left_edge - pos);
      return true;
    }
    pos = c.sacked[i].right_edge;
  }
  return false;
}

inline void TcpStack::Impl::StartRtxTimerIfIdle(Conn& c) {
  if (c.rtx_kind != RtxKind::kRetransmit || !c.rtx_timer.armed()) {
    ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
  }
}

// Sends one data segment [seq, seq + len) (+FIN if it ends the stream).
void TcpStack::Impl::SendData(Conn& c, Seq32 seq, uint32_t len, bool retransmission) {
  uint8_t flags = kFlagAck;
  const bool fin = c.fin_queued && seq + len == c.snd_end;
  if (fin) flags |= kFlagFin;
  if (len > 0 && seq + len == c.snd_end) flags |= kFlagPsh;
  uint32_t sent_len = len;
  ByteSpan pieces[kMaxPieces];
  size_t npieces = 0;
  if (len > 0) {
    // GatherPayload may shorten the segment (too many pieces).
    npieces = GatherPayload(c, seq, &sent_len, pieces);
    if (sent_len < len) flags &= static_cast<uint8_t>(~(kFlagFin | kFlagPsh));
  }
  Emit(c, seq, flags, sent_len, std::span<const ByteSpan>(pieces, npieces));
  const Seq32 end = seq + sent_len + ((flags & kFlagFin) ? 1u : 0u);
  if (retransmission || seq < c.snd_max) {
    ++stats.retransmitted_segments;
    stats.retransmitted_bytes += sent_len;
    ++c.counters.retransmitted_segments;
    c.counters.retransmitted_bytes += sent_len;
    c.rtt_timing = false;  // Karn (RFC 6298 3)
  } else if (!c.rtt_timing && sent_len > 0) {
    c.rtt_timing = true;
    c.rtt_seq = end;
    c.rtt_start_us = now_us;
  }
  if (end > c.snd_max) c.snd_max = end;
  StartRtxTimerIfIdle(c);
}

// Transmits what the windows, Nagle and the recovery state allow.
void TcpStack::Impl::TrySend(Conn& c) {
  if (!CanSendData(c)) return;
  for (int guard = 0; guard < 100000; ++guard) {
    // SACK recovery (RFC 6675 5 step C): holes first, within cwnd - pipe.
    if (c.sack_recovery) {
      const uint32_t pipe = Pipe(c);
      const uint32_t cwnd = Ssthresh(c);
      if (pipe + c.emss > cwnd && pipe != 0) return;
      Seq32 hs;
      uint32_t hl;
      if (NextHole(c, &hs, &hl)) {
        const uint32_t len = SegmentLength(c, hs, hl);
        if (len == 0) return;
        SendData(c, hs, len, true);
        c.high_rxt = hs + len;
        continue;
      }
    }
    if (c.snd_nxt < c.snd_max && !c.sack_recovery) {
      // After an RTO: go back N within cwnd, skipping SACKed ranges.
      const uint32_t flight = static_cast<uint32_t>(c.snd_nxt - c.snd_una);
      if (flight + 1 > Cwnd(c) && flight != 0) return;
      Seq32 s = c.snd_nxt;
      for (uint32_t i = 0; i < c.nsacked; ++i) {
        if (c.sacked[i].left_edge <= s && s < c.sacked[i].right_edge) s = c.sacked[i].right_edge;
      }
      if (s >= c.snd_max) {
        c.snd_nxt = c.snd_max;
        continue;
      }
      uint32_t lim = static_cast<uint32_t>(c.snd_max - s);
      for (uint32_t i = 0; i < c.nsacked; ++i) {
        if (c.sacked[i].left_edge > s) {
          lim = std::min(lim, static_cast<uint32_t>(c.sacked[i].left_edge - s));
          break;
        }
      }
      uint32_t len = SegmentLength(c, s, lim);
      if (len == 0 && !(c.fin_queued && s == c.snd_end)) return;
      SendData(c, s, len, true);
      c.snd_nxt = s + len + ((c.fin_queued && s + len == c.snd_end) ? 1u : 0u);
      continue;
    }
    // New data.
    const int32_t unsent = c.snd_end - c.snd_nxt;
    const bool fin_pending = c.fin_queued && !FinSent(c) && c.snd_nxt == c.snd_end;
    if (unsent <= 0 && !fin_pending) return;
    const uint32_t flight = c.sack_recovery ? Pipe(c) : static_cast<uint32_t>(c.snd_nxt - c.snd_una);
    uint32_t cwnd = c.sack_recovery ? Ssthresh(c) : Cwnd(c);
    // RFC 3042 limited transmit: on the first two duplicate ACKs one new
    // segment each may go out beyond cwnd (cwnd itself is unchanged).
    const bool in_cc_recovery = c.cc.With([](const auto& a) { return a.in_recovery(); });
    if (!c.sack_recovery && !in_cc_recovery && c.dup_acks > 0 && c.dup_acks < kDupThresh) {
      cwnd += c.dup_acks * c.emss;
    }
    const Seq32 wnd_edge = c.snd_una + std::min(c.snd_wnd, uint32_t{0x7FFFFFFF});
    uint32_t usable = wnd_edge > c.snd_nxt ? static_cast<uint32_t>(wnd_edge - c.snd_nxt) : 0;
    const uint32_t cwnd_room = cwnd > flight ? cwnd - flight : 0;
    usable = std::min(usable, cwnd_room);
    if (fin_pending) {
      if (cwnd_room == 0 && flight != 0) return;
      SendData(c, c.snd_nxt, 0, false);
      c.snd_nxt = c.snd_nxt + 1;
      return;
    }
    uint32_t len = SegmentLength(c, c.snd_nxt, usable);
    if (len == 0) {
      if (c.snd_wnd == 0 || (wnd_edge <= c.snd_nxt)) MaybeStartPersist(c);
      return;
    }
    // Sender SWS avoidance (RFC 9293 3.8.6.2.1) and Nagle (3.7.4).
    const uint32_t all = static_cast<uint32_t>(unsent);
    if (len < c.emss && len < all) {
      // Window-limited partial segment: only if it is at least half the
      // largest window the peer offered, or nothing is in flight.
      if (len < c.max_snd_wnd / 2 && flight != 0) return;
    }
    if (opt.nagle && len < c.emss && flight != 0) return;
    SendData(c, c.snd_nxt, len, false);
    c.snd_nxt = c.snd_nxt + len + ((c.fin_queued && c.snd_nxt + len == c.snd_end) ? 1u : 0u);
  }
}

inline void TcpStack::Impl::MaybeStartPersist(Conn& c) {
  if (c.snd_nxt == c.snd_una && c.snd_end > c.snd_nxt && c.rtx_kind != RtxKind::kPersist) {
    wheel.Cancel(c.rtx_timer);
    c.persist_backoff = 0;
    ArmRtx(c, RtxKind::kPersist, c.rto.rto_us());
  }
}

}  // namespace iwarp::tcp
