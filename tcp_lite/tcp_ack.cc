// The ACK field of a segment in a synchronized state (RFC 9293 3.10.7.4,
// fifth check), one function per step of the RFC, and what hangs on those
// steps: the RFC 5961 5.2 acceptability check, the SACK scoreboard (RFC 2018,
// 2883), RTT samples (RFC 6298, RFC 7323 4.1), congestion control and loss
// recovery (RFC 5681, 6582, 6675), releasing acknowledged send data.
#include "tcp_lite/tcp_stack_impl.h"

namespace iwarp::tcp {

// RFC 9293 3.10.7.4, fifth, check the ACK field, SYN-RECEIVED STATE: an ACK
// with SND.UNA < SEG.ACK =< SND.NXT enters ESTABLISHED (Establish sets
// SND.WND, SND.WL1 and SND.WL2) and processing goes on as in ESTABLISHED;
// an unacceptable one is answered with <SEQ=SEG.ACK><CTL=RST>.
bool TcpStack::Impl::AckInSynReceived(Conn& c, const Segment& seg) {
  const SegmentHeader& h = seg.header;
  const uint32_t gen = c.generation;
  if (!(c.snd_una < h.ack && h.ack <= c.snd_max)) {
    Drop(DropReason::kTcpAckInvalid);
    SendRstFor(c.tuple.local_addr, c.tuple.remote_addr, seg);
    return false;
  }
  if (!Establish(c, h)) return false;
  return Alive(c, gen);
}

// RFC 9293 3.10.7.4, fifth, check the ACK field, in ESTABLISHED and the
// states that do the same processing (CLOSE-WAIT) or add to it (FIN-WAIT-1,
// FIN-WAIT-2, CLOSING, LAST-ACK); SYN-RECEIVED went through
// AckInSynReceived first, TIME-WAIT never comes here (SynchronizedInput).
// Returns false if the segment must not be processed further.
bool TcpStack::Impl::ProcessAck(Conn& c, const Segment& seg, const Options& o) {
  const SegmentHeader& h = seg.header;
  const Seq32 ack = h.ack;
  if (!AckAcceptable(c, ack)) return false;
  const uint32_t new_wnd = uint32_t{h.window} << c.snd_wscale;
  if (c.sack_ok) UpdateScoreboard(c, o, ack);
  if (ack > c.snd_una) {
    if (!AckNewData(c, ack, o)) return false;
  } else if (IsDuplicateAck(c, seg, new_wnd)) {
    DuplicateAck(c, ack);
  }
  UpdateSendWindow(c, h, new_wnd);
  return OfferSendSpace(c);
}

// RFC 9293 3.10.7.4 (RFC 5961 5.2): the ACK is acceptable if
// SND.UNA - MAX.SND.WND =< SEG.ACK =< SND.NXT; otherwise the segment is
// dropped and a (rate-limited, RFC 5961 7) ACK sent. This covers "if the ACK
// acks something not yet sent (SEG.ACK > SND.NXT), then send an ACK, drop the
// segment, and return". SND.MAX stands for SND.NXT: after an RTO SND.NXT is
// rewound to SND.UNA.
inline bool TcpStack::Impl::AckAcceptable(Conn& c, Seq32 ack) {
  if (ack > c.snd_max) {
    Drop(DropReason::kTcpAckInvalid);
    ChallengeAck(c);
    return false;
  }
  if (ack < c.snd_una - std::max(c.max_snd_wnd, uint32_t{1})) {
    Drop(DropReason::kTcpAckInvalid);
    ChallengeAck(c);
    return false;
  }
  return true;
}

// SACK scoreboard (RFC 2018, RFC 2883 4: a first block below SEG.ACK or
// inside the second one is a D-SACK and not scoreboard information).
inline void TcpStack::Impl::UpdateScoreboard(Conn& c, const Options& o, Seq32 ack) {
  const auto blocks = o.sack();
  for (size_t i = 0; i < blocks.size(); ++i) {
    const SackBlock& b = blocks[i];
    if (!(b.left_edge < b.right_edge)) continue;
    if (b.right_edge <= ack) continue;
    if (i == 0 && blocks.size() > 1 && blocks[1].left_edge <= b.left_edge &&
        b.right_edge <= blocks[1].right_edge) {
      continue;
    }
    ScoreboardAdd(c, b.left_edge, b.right_edge);
  }
}

// RFC 9293 3.10.7.4, ESTABLISHED STATE: "If SND.UNA < SEG.ACK =< SND.NXT,
// then set SND.UNA <- SEG.ACK. Any segments on the retransmission queue that
// are thereby entirely acknowledged are removed." With it: the RTT sample,
// congestion control, the retransmission timer (RFC 6298 5.2, 5.3), and the
// states in which our FIN may now be acknowledged (AckOfOurFin).
inline bool TcpStack::Impl::AckNewData(Conn& c, Seq32 ack, const Options& o) {
  const uint32_t gen = c.generation;
  const uint32_t acked = static_cast<uint32_t>(ack - c.snd_una);
  c.snd_una = ack;
  if (c.snd_nxt < c.snd_una) c.snd_nxt = c.snd_una;
  ScoreboardPrune(c);
  const uint64_t rtt = RttSample(c, ack, o);
  CcNewAck(c, ack, acked, rtt);
  ReleaseAcked(c, ack);
  if (!Alive(c, gen)) return false;
  // RFC 6298 5.2 / 5.3: restart or stop the retransmission timer.
  if (c.rtx_kind == RtxKind::kRetransmit || c.rtx_kind == RtxKind::kNone) {
    if (c.snd_max > c.snd_una) ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
    else CancelRtx(c);
  }
  c.persist_backoff = 0;
  return AckOfOurFin(c);
}

// The RTT sample of an ACK of new data, or kNoRttSample: the timed segment
// (RFC 6298 with Karn's rule), else the echoed timestamp during an RTO
// backoff.
inline uint64_t TcpStack::Impl::RttSample(Conn& c, Seq32 ack, const Options& o) {
  uint64_t rtt = kNoRttSample;
  if (c.rtt_timing && ack >= c.rtt_seq) {
    rtt = now_us - c.rtt_start_us;
    c.rtt_timing = false;
    c.rto.OnRttSample(rtt);
  } else if (c.ts_ok && c.rto.backoff_count() > 0 && o.timestamps.has_value() &&
             o.timestamps->ts_ecr != 0) {
    // RFC 7323 4.1: the echoed timestamp names the segment, so the sample
    // is valid even for a retransmission (no Karn ambiguity). Used only
    // to end an RTO backoff, when no timed segment can give one; the
    // 1 ms clock is too coarse to feed SRTT otherwise.
    const int32_t ms = static_cast<int32_t>(TsVal(c) - o.timestamps->ts_ecr);
    if (ms >= 0 && ms < 600'000) {
      rtt = std::max<uint64_t>(uint64_t{static_cast<uint32_t>(ms)} * 1000, 1);
      c.rto.OnRttSample(rtt);
    }
  }
  return rtt;
}

// Congestion control on an ACK of new data (SND.UNA already advanced): the
// end of SACK recovery (RFC 6675 5), or the algorithm's ACK with a partial
// ACK's retransmission (RFC 6582 3.2).
inline void TcpStack::Impl::CcNewAck(Conn& c, Seq32 ack, uint32_t acked, uint64_t rtt) {
  const uint32_t flight = static_cast<uint32_t>(c.snd_max - c.snd_una);
  c.dup_acks = 0;
  if (c.sack_recovery) {
    if (ack >= c.recovery_point) {
      c.sack_recovery = false;
      c.cc.With([&](auto& a) {
        a.ExitRecovery(flight);
        return 0;
      });
    } else if (c.high_rxt < c.snd_una) {
      c.high_rxt = c.snd_una;
    }
  } else {
    const CcAction act = c.cc.With([&](auto& a) {
      return a.OnAck(CcAck{ack, acked, flight, now_us, rtt});
    });
    if (act == CcAction::kRetransmitNext) {
      // RFC 6582 3.2 step 3: partial ACK, resend the first unacked segment.
      const uint32_t len = SegmentLength(c, c.snd_una, c.emss);
      if (len > 0 || (c.fin_queued && c.snd_una == c.snd_end)) {
        SendData(c, c.snd_una, len, true);
      }
    }
  }
}

// RFC 9293 3.10.7.4, the states that add to the ESTABLISHED processing once
// our FIN is acknowledged:
//  - FIN-WAIT-1 STATE: enter FIN-WAIT-2 and continue processing in that
//    state.
//  - FIN-WAIT-2 STATE: the user's CLOSE could be acknowledged; this API has
//    no such event (OnClosed comes with TIME-WAIT or CLOSED).
//  - CLOSING STATE: enter the TIME-WAIT state.
//  - LAST-ACK STATE: delete the TCB, enter the CLOSED state, and return.
// Returns false when the connection left the synchronized states.
inline bool TcpStack::Impl::AckOfOurFin(Conn& c) {
  if (!(c.fin_queued && c.snd_una > c.snd_end)) return true;
  switch (c.state) {
    case TcpState::kFinWait1: c.state = TcpState::kFinWait2; break;
    case TcpState::kClosing: EnterTimeWait(c); return false;
    case TcpState::kLastAck: CloseConn(c, CloseReason::kNormal); return false;
    default: break;
  }
  return true;
}

// RFC 9293 3.10.7.4, ESTABLISHED STATE: "If the ACK is a duplicate
// (SEG.ACK =< SND.UNA), it can be ignored." It is not ignored when it is a
// duplicate ACK in the sense of RFC 5681 2 (no data, no FIN, data
// outstanding, the same window): those drive loss recovery.
inline bool TcpStack::Impl::IsDuplicateAck(const Conn& c, const Segment& seg, uint32_t new_wnd) {
  return seg.header.ack == c.snd_una && seg.payload.empty() && !seg.header.Has(kFlagFin) &&
         c.snd_max > c.snd_una && new_wnd == c.snd_wnd && new_wnd != 0;
}

// RFC 5681 2: duplicate ACK.
inline void TcpStack::Impl::DuplicateAck(Conn& c, Seq32 ack) {
  ++stats.dup_acks_in;
  ++c.dup_acks;
  if (c.sack_ok && c.nsacked > 0) {
    SackDuplicateAck(c, ack);
  } else {
    RenoDuplicateAck(c, ack);
  }
}

// RFC 6675 5: enter recovery on DupThresh duplicate ACKs or when more than
// (DupThresh - 1) * SMSS bytes above SND.UNA are SACKed.
inline void TcpStack::Impl::SackDuplicateAck(Conn& c, Seq32 ack) {
  if (!c.sack_recovery &&
      (c.dup_acks >= kDupThresh || SackedBytes(c) > (kDupThresh - 1) * c.emss) &&
      (!c.cc.With([](auto& a) { return a.has_recover(); }) ||
       ack > c.cc.With([](auto& a) { return a.recover(); }))) {
    const uint32_t flight = static_cast<uint32_t>(c.snd_max - c.snd_una);
    c.cc.With([&](auto& a) {
      a.EnterRecovery(c.snd_max, flight);
      return 0;
    });
    c.sack_recovery = true;
    c.recovery_point = c.snd_max;
    c.high_rxt = c.snd_una;
    ++stats.sack_recoveries;
    ++stats.fast_retransmits;
    ++c.counters.fast_retransmits;
    // RFC 6675 5 step (4.3): the first unacknowledged segment is
    // retransmitted at once, whatever pipe says.
    const uint32_t hole = c.nsacked > 0 && c.sacked[0].left_edge > c.snd_una
                              ? static_cast<uint32_t>(c.sacked[0].left_edge - c.snd_una)
                              : c.emss;
    const uint32_t len = SegmentLength(c, c.snd_una, hole);
    if (len > 0) {
      SendData(c, c.snd_una, len, true);
      c.high_rxt = c.snd_una + len;
    }
    ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
  }
}

// Without SACK information: the algorithm counts duplicate ACKs and asks for
// the fast retransmit (RFC 5681 3.2, RFC 6582 3.2).
inline void TcpStack::Impl::RenoDuplicateAck(Conn& c, Seq32 ack) {
  const CcAction act = c.cc.With([&](auto& a) {
    return a.OnDupAck(ack, c.snd_max, static_cast<uint32_t>(c.snd_max - c.snd_una));
  });
  if (act == CcAction::kFastRetransmit) {
    ++stats.fast_retransmits;
    ++c.counters.fast_retransmits;
    const uint32_t len = SegmentLength(c, c.snd_una, c.emss);
    if (len > 0 || (c.fin_queued && c.snd_una == c.snd_end)) {
      SendData(c, c.snd_una, len, true);
    }
  }
}

// RFC 9293 3.10.7.4, ESTABLISHED STATE: "If SND.UNA =< SEG.ACK =< SND.NXT,
// the send window should be updated. If (SND.WL1 < SEG.SEQ or (SND.WL1 =
// SEG.SEQ and SND.WL2 =< SEG.ACK)), set SND.WND <- SEG.WND, set SND.WL1 <-
// SEG.SEQ, and set SND.WL2 <- SEG.ACK." A window opening from zero stops the
// persist timer (RFC 9293 3.8.6.1).
inline void TcpStack::Impl::UpdateSendWindow(Conn& c, const SegmentHeader& h, uint32_t new_wnd) {
  if (c.snd_wl1 < h.seq || (c.snd_wl1 == h.seq && c.snd_wl2 <= h.ack)) {
    const bool was_zero = c.snd_wnd == 0;
    c.snd_wnd = new_wnd;
    c.max_snd_wnd = std::max(c.max_snd_wnd, c.snd_wnd);
    c.snd_wl1 = h.seq;
    c.snd_wl2 = h.ack;
    if (was_zero && c.snd_wnd > 0 && c.rtx_kind == RtxKind::kPersist) {
      CancelRtx(c);
      if (c.snd_max > c.snd_una) ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
    }
  }
}

// Send space freed by the ACK goes to a user that asked for it. False if the
// connection went away in the callback.
inline bool TcpStack::Impl::OfferSendSpace(Conn& c) {
  if (!c.want_send_space || c.user == nullptr) return true;
  const size_t space = SendSpaceOf(c);
  if (space == 0) return true;
  const uint32_t gen = c.generation;
  c.want_send_space = false;
  c.user->OnSendSpace(IdOf(c), space);
  return Alive(c, gen);
}

// Adds [l, r) to the SACK scoreboard (sorted, merged, above snd_una).
inline void TcpStack::Impl::ScoreboardAdd(Conn& c, Seq32 l, Seq32 r) {
  if (l < c.snd_una) l = c.snd_una;
  if (r > c.snd_max) r = c.snd_max;
  if (!(l < r)) return;
  SackBlock merged{l, r};
  SackBlock tmp[kScoreboardBlocks + 1];
  uint32_t n = 0;
  bool placed = false;
  for (uint32_t i = 0; i < c.nsacked; ++i) {
    const SackBlock& b = c.sacked[i];
    if (b.right_edge < merged.left_edge) {
      tmp[n++] = b;
    } else if (merged.right_edge < b.left_edge) {
      if (!placed) tmp[n++] = merged, placed = true;
      tmp[n++] = b;
    } else {
      merged.left_edge = std::min(merged.left_edge, b.left_edge);
      merged.right_edge = std::max(merged.right_edge, b.right_edge);
    }
  }
  if (!placed) tmp[n++] = merged;
  // Full: forget the highest ranges (they are re-reported by the peer).
  n = std::min<uint32_t>(n, kScoreboardBlocks);
  std::copy(tmp, tmp + n, c.sacked);
  c.nsacked = n;
}

inline void TcpStack::Impl::ScoreboardPrune(Conn& c) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < c.nsacked; ++i) {
    SackBlock b = c.sacked[i];
    if (b.right_edge <= c.snd_una) continue;
    if (b.left_edge < c.snd_una) b.left_edge = c.snd_una;
    c.sacked[k++] = b;
  }
  c.nsacked = k;
}

inline uint32_t TcpStack::Impl::SackedBytes(const Conn& c) const {
  uint32_t n = 0;
  for (uint32_t i = 0; i < c.nsacked; ++i) {
    n += static_cast<uint32_t>(c.sacked[i].right_edge - c.sacked[i].left_edge);
  }
  return n;
}

// Frees acknowledged send data up to `ack` and completes zero-copy sends.
inline void TcpStack::Impl::ReleaseAcked(Conn& c, Seq32 ack) {
  const Seq32 data_ack = std::min(ack, c.snd_end);
  while (c.dcount > 0) {
    SendDesc& d = c.descs[c.dhead];
    if (!(d.seq < data_ack)) break;
    const uint32_t acked = std::min(static_cast<uint32_t>(data_ack - d.seq), d.len);
    if (!d.zero_copy) {
      c.shead = (c.shead + acked) % c.scap;
      c.sused -= acked;
    }
    c.counters.bytes_out += acked;
    stats.bytes_out += acked;
    if (acked == d.len) {
      const SendDesc done = d;
      c.dhead = (c.dhead + 1) % c.dcap;
      --c.dcount;
      if (done.zero_copy) {
        --c.zc_count;
        c.want_send_space = true;
        const uint32_t gen = c.generation;
        if (c.user != nullptr) c.user->OnSendComplete(IdOf(c), done.cookie, true);
        if (!Alive(c, gen)) return;
      }
    } else {
      d.seq = d.seq + acked;
      d.data += acked;
      d.len -= acked;
      break;
    }
  }
  while (c.rcount > 0 && c.recs[c.rhead] <= data_ack) {
    // A record starting at or below SND.UNA can no longer start a new
    // segment; keep none at or below it.
    c.rhead = (c.rhead + 1) % c.rcap_recs;
    --c.rcount;
  }
}

}  // namespace iwarp::tcp
