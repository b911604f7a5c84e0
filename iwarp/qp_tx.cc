// Transmit: picks the next outbound message (Terminate, RTR, Read Response,
// send queue), segments it to the LLP's MULPDU (RFC 5041 5) and hands the
// segments to the TxLlp (MPA over TCP or a SegmentLlp).
#include <algorithm>
#include <cstring>

#include "iwarp/qp_internal.h"

namespace iwarp::engine {

void Qp::Impl::SetTx() { tx = qp.llp_ != nullptr ? NewSegmentTx(*this) : NewMpaTcpTx(*this); }

bool Qp::Impl::ResolveSource(const SgeList& l, WcStatus* status) {
  if (l.TotalLength() > UINT32_MAX) {
    *status = WcStatus::kLocalLength;
    return false;
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < l.num_sge; ++i) {
    if (l.sge[i].length == 0) continue;
    const MutableByteSpan mem = ResolveLocal(l.sge[i], 0, status);
    if (mem.empty()) return false;
    cur_src[n++] = mem;
  }
  cur_payload = n == 1 ? ByteSpan(cur_src[0]) : ByteSpan();
  cur_src_n = n > 1 ? n : 0;
  src_i = 0;
  src_base = 0;
  return true;
}

ByteSpan Qp::Impl::SourceSlice(uint32_t off, uint32_t len) {
  slice_gathered = false;
  if (cur_src_n == 0) return cur_payload.subspan(off, len);
  while (src_i + 1 < cur_src_n && off >= src_base + cur_src[src_i].size()) {
    src_base += cur_src[src_i].size();
    ++src_i;
  }
  const uint64_t in = off - src_base;
  if (in + len <= cur_src[src_i].size()) return cur_src[src_i].subspan(in, len);
  // Straddles: the segmenter was capped at kGatherStagingSize for this message.
  size_t done = 0;
  uint32_t i = src_i;
  uint64_t at = in;
  while (done < len && i < cur_src_n) {
    const size_t n = std::min<size_t>(len - done, cur_src[i].size() - at);
    std::memcpy(gather + done, cur_src[i].data() + at, n);
    done += n;
    at = 0;
    ++i;
  }
  slice_gathered = true;
  return ByteSpan(gather, done);
}

void Qp::Impl::SendTerminate(const rdmap::TerminateCode& code, const rdmap::SegmentVerdict* v,
                             ByteSpan segment) {
  if (qp.state_ == QpState::kTerminating || QpEnded(qp.state_)) return;
  size_t n = 0;
  if (v != nullptr) {
    rdmap::SegmentVerdict vv = *v;
    vv.error = code;
    n = rdmap::BuildTerminate(vv, segment, MutableByteSpan(term_buf));
  }
  if (n == 0) {
    rdmap::Terminate t;
    t.code = code;
    n = rdmap::EncodeTerminate(t, MutableByteSpan(term_buf));
  }
  term_len = n;
  qp.term_sent_ = code;
  SetEnd(QpEnd::kTerminate);
  ++qp.stats_.terminates_sent;
  // The peer broke the stream: our own work did not fail, it is flushed.
  FlushAll(WcStatus::kFlushed);
  term_pending = true;
  tx_allowed = true;
  qp.state_ = QpState::kTerminating;
  qp.observer_.OnTerminate(qp, code, true);
  Pump();
}

void Qp::Impl::StartReadRequest(const rdmap::ReadRequest& rr, const OutRead& o) {
  rdmap::EncodeReadRequest(rr, MutableByteSpan(small_payload));
  cur_payload = ByteSpan(small_payload, rdmap::kReadRequestSize);
  seg.emplace(rdmap::ReadRequestMessage(rreq_msn), mulpdu);
  rreq_msn += 1;
  oreads[(oreads_head + oreads_count) % oreads_cap] = o;
  ++oreads_count;
}

bool Qp::Impl::StartNext() {
  cur_src_n = 0;
  if (term_pending) {
    term_pending = false;
    seg.emplace(rdmap::TerminateMessage(term_msn, static_cast<uint32_t>(term_len)), mulpdu);
    term_msn += 1;
    cur_payload = ByteSpan(term_buf, term_len);
    cur = TxKind::kTerminate;
    return true;
  }
  if (qp.state_ == QpState::kTerminating || QpEnded(qp.state_)) return false;
  if (rtr_pending) {
    rtr_pending = false;
    cur = TxKind::kRtr;
    cur_payload = ByteSpan();
    if (qp.neg_.rtr == kRtrWrite) {
      seg.emplace(rdmap::RdmaWriteMessage(kRtrStag, 0, 0), mulpdu);
    } else if (qp.neg_.rtr == kRtrSend) {
      seg.emplace(rdmap::SendMessage(rdmap::Opcode::kSend, send_msn, 0), mulpdu);
      send_msn += 1;
    } else {
      // Read RTR: a zero-length Read Request consumes one ORD slot.
      rdmap::ReadRequest rr;
      rr.sink_stag = kRtrStag;
      OutRead o;
      o.rtr = true;
      o.sink_stag = kRtrStag;
      StartReadRequest(rr, o);
    }
    return true;
  }
  if (rresp_count > 0) {
    const ReadResp& r = rresp[rresp_head];
    seg.emplace(rdmap::ReadResponseMessage(r.sink_stag, r.sink_to,
                                           static_cast<uint32_t>(r.src.size())),
                mulpdu);
    cur_payload = r.src;
    // The IRD slot stays taken until the whole Response is handed to TCP
    // (FinishMessage).
    cur = TxKind::kReadResponse;
    ++qp.stats_.read_responses_sent;
    return true;
  }
  while (sq_next < sq_count) {
    const uint32_t idx = (sq_head + sq_next) % qp.options_.sq_depth;
    SqEntry& e = sq[idx];
    const SendWr& wr = e.wr;
    if (wr.opcode == WrOpcode::kRdmaRead) {
      if (oreads_count >= qp.neg_.ord || oreads_count >= oreads_cap) return false;  // RFC 5040: ORD bound
      WcStatus st = WcStatus::kSuccess;
      const LocalSge& sink = wr.local.sge[0];  // one buffer, normalised by PostSend
      (void)ResolveLocal(sink, ddp::kAccessRemoteWrite, &st);
      if (st != WcStatus::kSuccess) {
        e.st = SqState::kDone;
        e.status = st;
        ++sq_next;
        continue;
      }
      rdmap::ReadRequest rr;
      rr.sink_stag = sink.stag;
      rr.sink_to = sink.to;
      rr.read_size = sink.length;
      rr.source_stag = wr.remote_stag;
      rr.source_to = wr.remote_to;
      OutRead o;
      o.sq_index = idx;
      o.sink_stag = sink.stag;
      o.sink_to = sink.to;
      o.length = sink.length;
      StartReadRequest(rr, o);
    } else {
      WcStatus st = WcStatus::kSuccess;
      if (!ResolveSource(wr.local, &st)) {
        e.st = SqState::kDone;
        e.status = st;
        ++sq_next;
        continue;
      }
      const uint32_t length = static_cast<uint32_t>(wr.local.TotalLength());
      const uint32_t seg_mulpdu =
          cur_src_n == 0 ? mulpdu : std::min<uint32_t>(mulpdu, kGatherStagingSize);
      if (wr.opcode == WrOpcode::kRdmaWrite) {
        seg.emplace(rdmap::RdmaWriteMessage(wr.remote_stag, wr.remote_to, length), seg_mulpdu);
      } else {
        rdmap::Opcode op = rdmap::Opcode::kSend;
        if (wr.opcode == WrOpcode::kSendInvalidate) op = rdmap::Opcode::kSendInvalidate;
        if (wr.opcode == WrOpcode::kSendSe) op = rdmap::Opcode::kSendSe;
        if (wr.opcode == WrOpcode::kSendSeInvalidate) op = rdmap::Opcode::kSendSeInvalidate;
        seg.emplace(rdmap::SendMessage(op, send_msn, length, wr.invalidate_stag), seg_mulpdu);
        send_msn += 1;
      }
    }
    if (seg->status() != ddp::SegmentStatus::kOk) {
      e.st = SqState::kDone;
      e.status = WcStatus::kLocalLength;
      seg.reset();
      cur_src_n = 0;
      ++sq_next;
      continue;
    }
    e.st = SqState::kSending;
    cur_sq = sq_next;
    ++sq_next;
    cur = TxKind::kSq;
    return true;
  }
  return false;
}

void Qp::Impl::FinishMessage() {
  if (cur == TxKind::kSq) {
    SqEntry& e = sq[(sq_head + cur_sq) % qp.options_.sq_depth];
    if (e.wr.opcode == WrOpcode::kRdmaRead) {
      e.st = SqState::kReadOutstanding;
    } else {
      e.st = SqState::kSent;
      e.end_offset = tx_off;
      // Over a SegmentLlp a segment taken is a segment delivered.
      if (tx->CompletesOnTake()) {
        cur = TxKind::kNone;
        seg.reset();
        CompleteSq(tx_off);
        return;
      }
    }
  } else if (cur == TxKind::kReadResponse) {
    rresp_head = (rresp_head + 1) % rresp_cap;
    --rresp_count;
    if (!tx->CompletesOnTake()) {
      rresp_sent_end[(rresp_sent_head + rresp_sent_count) % rresp_cap] = tx_off;
      ++rresp_sent_count;
    }
  } else if (cur == TxKind::kTerminate) {
    // RFC 5040: after a Terminate the stream is closed (FIN after it; over
    // SCTP the session Terminate, RFC 5043 6.2).
    fin_sent = true;
    tx->EndStream();
  }
  cur = TxKind::kNone;
  seg.reset();
}

void Qp::Impl::Pump() {
  if (!tx_allowed || !tx->Usable()) return;
  for (;;) {
    if (pend_valid) {
      size_t wire = 0;
      const LlpSendStatus st =
          tx->Send(ByteSpan(pend_hdr, pend_hdr_len), pend_payload, &wire);
      if (st == LlpSendStatus::kWouldBlock) {
        ++qp.stats_.tx_blocked;
        return;  // OnSendSpace / Poll resumes
      }
      pend_valid = false;
      if (st != LlpSendStatus::kOk) {
        ++qp.stats_.local_errors;  // never from a peer
        tx->Failed();
        return;
      }
      tx_off += wire;
      qp.stats_.bytes_sent += wire;
      ++qp.stats_.fpdus_out;
      if (pend_last) FinishMessage();
      if (!tx->Usable()) return;
    }
    if (cur == TxKind::kNone && !StartNext()) break;
    if (const uint32_t m = tx->NextMulpdu(); m != 0) {
      seg->SetMulpdu(cur_src_n == 0 ? m : std::min<uint32_t>(m, kGatherStagingSize));
    }
    ddp::SegmentDesc d;
    if (!seg->Next(MutableByteSpan(pend_hdr), &d)) {
      FinishMessage();
      continue;
    }
    pend_hdr_len = d.header_length;
    pend_payload = SourceSlice(d.message_offset, d.payload_length);
    // Sends and Writes (TxKind::kSq, except the small Read Request body)
    // and Read Responses take their payload from registered memory.
    pend_in_region = !slice_gathered && !pend_payload.empty() &&
                     (cur == TxKind::kReadResponse ||
                      (cur == TxKind::kSq && pend_payload.data() != small_payload));
    pend_last = d.last;
    pend_valid = true;
  }
  if (qp.state_ == QpState::kClosing && !fin_sent && sq_next == sq_count && cur == TxKind::kNone &&
      rresp_count == 0) {
    fin_sent = true;
    tx->EndStream();
  }
}

}  // namespace iwarp::engine
