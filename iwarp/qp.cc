#include "iwarp/qp.h"

#include <algorithm>
#include <cstring>

namespace iwarp::engine {

namespace {

// Largest FPDU we ever build: a whole maximum ULPDU with its worst-case
// Markers (RFC 5044 3, 4.3).
constexpr size_t kTxScratchSize =
    mpa::FpduSizeWithoutMarkers(mpa::kMaxUlpduLength) +
    mpa::kMarkerSize * (mpa::kMaxUlpduLength / mpa::kMarkerInterval + 3);
// Below this a payload is copied even with zero_copy_tx: the copy costs
// less than the send descriptor and the completion callback it saves.
constexpr size_t kZeroCopyMinPayload = 512;
constexpr size_t kHandshakeBufSize = mpa::kStartupHeaderSize + mpa::kMaxPrivateDataLength;
// RFC 6581: RTR frames carry a non-zero STag (siw uses 1; cxgb4 rejects 0).
constexpr uint32_t kRtrStag = 1;
// MPA error as a Terminate code point: Layer LLP, EType 0 (MPA), the RFC 5044
// section 8 / RFC 6581 error code.
rdmap::TerminateCode LlpCode(mpa::MpaError e) {
  return rdmap::TerminateCode{rdmap::kLayerLlp, 0, static_cast<uint8_t>(e)};
}

WcStatus StatusForTerminate(const rdmap::TerminateCode& c) {
  if (c.layer == rdmap::kLayerRdmap && c.etype == rdmap::kEtypeRemoteProtection) {
    return WcStatus::kRemoteAccess;
  }
  if (c.layer == rdmap::kLayerDdp && c.etype == ddp::kEtypeTaggedBuffer) return WcStatus::kRemoteAccess;
  if (c.layer == rdmap::kLayerDdp && c.etype == ddp::kEtypeUntaggedBuffer) {
    return WcStatus::kRemoteInvalidRequest;
  }
  return WcStatus::kRemoteOperation;
}

}  // namespace

std::string_view QpStateName(QpState s) {
  switch (s) {
    case QpState::kIdle: return "IDLE";
    case QpState::kTcpConnecting: return "TCP_CONNECTING";
    case QpState::kAwaitRequest: return "AWAIT_REQUEST";
    case QpState::kAwaitReply: return "AWAIT_REPLY";
    case QpState::kAwaitRtr: return "AWAIT_RTR";
    case QpState::kRts: return "RTS";
    case QpState::kClosing: return "CLOSING";
    case QpState::kTerminating: return "TERMINATING";
    case QpState::kError: return "ERROR";
    case QpState::kClosed: return "CLOSED";
  }
  return "invalid";
}

std::string_view QpEndName(QpEnd e) {
  switch (e) {
    case QpEnd::kNone: return "-";
    case QpEnd::kClosed: return "closed";
    case QpEnd::kSetupFailed: return "setup_failed";
    case QpEnd::kTerminate: return "terminate";
    case QpEnd::kReset: return "reset";
    case QpEnd::kTimeout: return "timeout";
    case QpEnd::kAborted: return "aborted";
    case QpEnd::kLlpFailed: return "llp_failed";
  }
  return "invalid";
}

std::string_view ConnectErrorName(ConnectError e) {
  switch (e) {
    case ConnectError::kNone: return "none";
    case ConnectError::kTcpFailed: return "tcp_failed";
    case ConnectError::kTimeout: return "timeout";
    case ConnectError::kRejected: return "rejected";
    case ConnectError::kRejectedLocally: return "rejected_locally";
    case ConnectError::kInvalidStartupFrame: return "invalid_startup_frame";
    case ConnectError::kNoMatchingRtr: return "no_matching_rtr";
    case ConnectError::kInsufficientIrd: return "insufficient_ird";
  }
  return "invalid";
}

// ---------------------------------------------------------------- Impl

struct Qp::Impl final : public mpa::UlpduSink {
  enum class SqState : uint8_t { kQueued, kSending, kSent, kReadOutstanding, kDone };
  struct SqEntry {
    SendWr wr;
    SqState st = SqState::kQueued;
    WcStatus status = WcStatus::kSuccess;
    rdmap::TerminateCode term;
    uint64_t end_offset = 0;  // stream offset after its last FPDU
  };
  struct RqEntry {
    RecvWr wr;
    ddp::UntaggedBuffer ub;
    bool done = false;
    uint32_t byte_len = 0;
    uint8_t flags = 0;
    uint32_t invalidated_stag = 0;
    // Set when one of the buffer's SGEs failed its local check during
    // placement: the completion reports it instead of kFlushed.
    WcStatus status = WcStatus::kSuccess;
  };
  struct ReadResp {
    uint32_t sink_stag = 0;
    uint64_t sink_to = 0;
    ByteSpan src;
  };
  struct OutRead {
    bool rtr = false;
    uint32_t sq_index = 0;
    uint32_t sink_stag = 0;
    uint64_t sink_to = 0;
    uint32_t length = 0;
    uint64_t placed = 0;
  };
  enum class TxKind : uint8_t { kNone, kTerminate, kRtr, kReadResponse, kSq };

  Qp& qp;
  // Queues, allocated once.
  std::unique_ptr<SqEntry[]> sq;
  uint32_t sq_head = 0, sq_count = 0, sq_next = 0;  // sq_next: entries already started
  std::unique_ptr<RqEntry[]> rq;
  uint32_t rq_head = 0, rq_count = 0;
  std::unique_ptr<Completion[]> cq;
  uint32_t cq_head = 0, cq_count = 0;
  std::unique_ptr<ReadResp[]> rresp;
  uint32_t rresp_cap = 0, rresp_head = 0, rresp_count = 0;
  // Read Responses handed to TCP whose last byte the peer has not
  // acknowledged: their stream end offsets, oldest first (capacity
  // rresp_cap). Until acknowledged a Response may still be outstanding at the
  // requester, so it keeps its IRD slot (RFC 5040 4.8 bounds outstanding
  // Read Requests; the ACK of every Response the peer has received is
  // processed before the data of the segment carrying its next Request).
  std::unique_ptr<uint64_t[]> rresp_sent_end;
  uint32_t rresp_sent_head = 0, rresp_sent_count = 0;
  std::unique_ptr<OutRead[]> oreads;
  uint32_t oreads_cap = 0, oreads_head = 0, oreads_count = 0;
  std::unique_ptr<uint8_t[]> scratch;
  size_t scratch_pending = 0;  // encoded FPDU not yet taken by TcpStack
  // Over an LLP: the DDP segment built but not yet taken (would-block).
  uint8_t pend_hdr[ddp::kMaxHeaderSize] = {};
  size_t pend_hdr_len = 0;
  ByteSpan pend_payload;
  // pend_payload lies in registered memory (not in staging or a small
  // buffer of this Impl): it may be sent without a copy (zero_copy_tx).
  bool pend_in_region = false;
  bool slice_gathered = false;  // the last SourceSlice came from `gather`
  bool pend_valid = false;
  bool pend_last = false;
  bool llp_ended = false;
  bool aborted = false;  // Abort() called: the end is not a graceful close

  // The LLP under DDP (transmit side): MpaTcpTx or SegmentTx.
  class TxLlp;
  std::unique_ptr<TxLlp> tx;

  // Handshake.
  uint8_t hs_buf[kHandshakeBufSize] = {};
  size_t hs_len = 0;
  uint8_t local_pd[mpa::kMaxPrivateDataLength] = {};
  size_t local_pd_len = 0;
  uint64_t deadline_us = 0;  // 0: none armed
  bool deadline_pending = false;  // arm at the next Poll (no clock in callbacks)
  uint64_t now_us = 0;

  // Full Operation.
  std::optional<mpa::FpduDecoder> decoder;
  mpa::FpduConfig tx_cfg;
  uint32_t mulpdu = 0;  // worst case with Markers (RFC 5044 4.5)
  uint32_t emss = 0;
  uint64_t tx_off = 0;  // stream offset of the next byte we send
  bool tx_allowed = false;
  bool rtr_pending = false;
  bool fin_sent = false;
  Seq32 send_msn{1}, rreq_msn{1}, term_msn{1};           // outbound, per queue
  Seq32 rq_msn{1}, rreq_in_msn{1}, term_in_msn{1};       // inbound, per queue

  // Current outbound message.
  TxKind cur = TxKind::kNone;
  std::optional<ddp::Segmenter> seg;
  ByteSpan cur_payload;  // the message's bytes when contiguous (cur_src_n == 0)
  // A multi-SGE Send or Write: the resolved non-empty SGEs in order, and the
  // SGE the next segment starts in (src_i, at message offset src_base).
  ByteSpan cur_src[kMaxSge];
  uint32_t cur_src_n = 0;
  uint32_t src_i = 0;
  uint64_t src_base = 0;
  std::unique_ptr<uint8_t[]> own_gather;  // when QpOptions gives no staging
  uint8_t* gather = nullptr;               // kGatherStagingSize bytes (max_send_sge > 1)
  uint32_t cur_sq = 0;
  uint8_t small_payload[rdmap::kMaxTerminateSize] = {};
  uint8_t term_buf[rdmap::kMaxTerminateSize] = {};
  size_t term_len = 0;
  bool term_pending = false;

  ddp::UntaggedBuffer rreq_buf{0, rdmap::kReadRequestSize};
  ddp::UntaggedBuffer term_in_buf{0, rdmap::kMaxTerminateSize};

  explicit Impl(Qp& q) : qp(q) {}
  void SetTx();  // MpaTcpTx or SegmentTx, by the Qp's LLP

  // ---- completions
  void PushCompletion(const Completion& c) {
    if (cq_count == qp.options_.cq_depth) {
      ++qp.stats_.cq_overflow;
      return;
    }
    cq[(cq_head + cq_count) % qp.options_.cq_depth] = c;
    ++cq_count;
  }

  static WcOpcode WcFor(WrOpcode op) {
    switch (op) {
      case WrOpcode::kRdmaWrite: return WcOpcode::kRdmaWrite;
      case WrOpcode::kRdmaRead: return WcOpcode::kRdmaRead;
      default: return WcOpcode::kSend;
    }
  }

  // RFC 5040 5.5: completions in posting order. Sends and Writes complete
  // once TCP acknowledged their last byte; Reads once the Response is placed.
  void CompleteSq(uint64_t acked) {
    while (sq_count > 0) {
      SqEntry& e = sq[sq_head];
      const bool ready = e.st == SqState::kDone || (e.st == SqState::kSent && e.end_offset <= acked);
      if (!ready) break;
      Completion c;
      c.wr_id = e.wr.wr_id;
      c.opcode = WcFor(e.wr.opcode);
      c.status = e.status;
      c.byte_len = static_cast<uint32_t>(std::min<uint64_t>(e.wr.local.TotalLength(), UINT32_MAX));
      c.term = e.term;
      PushCompletion(c);
      sq_head = (sq_head + 1) % qp.options_.sq_depth;
      --sq_count;
      if (sq_next > 0) --sq_next;
      if (cur == TxKind::kSq && cur_sq > 0) --cur_sq;
    }
  }

  void CompleteRq() {
    while (rq_count > 0 && rq[rq_head].done) {
      RqEntry& e = rq[rq_head];
      Completion c;
      c.wr_id = e.wr.wr_id;
      c.opcode = WcOpcode::kRecv;
      c.byte_len = e.byte_len;
      c.flags = e.flags;
      c.invalidated_stag = e.invalidated_stag;
      PushCompletion(c);
      e = RqEntry{};
      rq_head = (rq_head + 1) % qp.options_.rq_depth;
      --rq_count;
      rq_msn += 1;
    }
  }

  // Everything outstanding ends with `status` (flush on close or Terminate).
  // Work already acknowledged completes normally first. With `failed` set,
  // the oldest unfinished send work request (the one the peer's Terminate
  // answers, RFC 5040 5.5 ordering) gets `failed_status` and the Terminate
  // code; the rest gets `status`.
  void FlushAll(WcStatus status, const rdmap::TerminateCode* failed = nullptr,
                WcStatus failed_status = WcStatus::kFlushed) {
    if (tx->Usable() || tx->CompletesOnTake()) CompleteSq(tx->CompleteUpTo());
    for (uint32_t i = 0; i < sq_count; ++i) {
      SqEntry& e = sq[(sq_head + i) % qp.options_.sq_depth];
      if (e.st != SqState::kDone) {
        e.st = SqState::kDone;
        e.status = status;
        if (failed != nullptr) {
          e.status = failed_status;
          e.term = *failed;
          failed = nullptr;
        }
      }
    }
    CompleteSq(0);
    for (uint32_t i = 0; i < rq_count; ++i) {
      RqEntry& e = rq[(rq_head + i) % qp.options_.rq_depth];
      Completion c;
      c.wr_id = e.wr.wr_id;
      c.opcode = WcOpcode::kRecv;
      c.status = e.done ? WcStatus::kSuccess : (e.status != WcStatus::kSuccess ? e.status : status);
      c.byte_len = e.done ? e.byte_len : 0;
      PushCompletion(c);
    }
    rq_count = 0;
    rresp_count = 0;
    rresp_sent_count = 0;
    oreads_count = 0;
    cur = TxKind::kNone;
    cur_src_n = 0;
    seg.reset();
    scratch_pending = 0;
    pend_valid = false;
    sq_next = 0;
  }

  // ---- local memory
  // The bytes of a local SGE, or empty with *status set.
  MutableByteSpan ResolveLocal(const LocalSge& sge, uint8_t need_access, WcStatus* status) {
    if (sge.length == 0) return MutableByteSpan();
    const ddp::TaggedRegion* r = qp.memory_.stags().Find(sge.stag);
    const ddp::StreamIdentity id{qp.options_.pd, qp.options_.stream_id};
    if (ddp::CheckRegion(r, sge.stag, sge.to, sge.length, id) != ddp::DdpError::kNone ||
        (r->access & need_access) != need_access) {
      *status = WcStatus::kLocalProtection;
      return MutableByteSpan();
    }
    MutableByteSpan mem = qp.memory_.Resolve(r->handle);
    const uint64_t off = sge.to - r->base_to;
    if (mem.size() < off + sge.length) {
      *status = WcStatus::kLocalProtection;
      ++qp.stats_.local_errors;
      return MutableByteSpan();
    }
    return mem.subspan(off, sge.length);
  }

  // Resolves every non-empty SGE of a Send/Write source into cur_src (or, for
  // at most one, into cur_payload with cur_src_n = 0: the single-buffer path).
  // False with *status set when one fails its check or the sum exceeds a DDP
  // message (RFC 5041 5.2: < 2^32 bytes).
  bool ResolveSource(const SgeList& l, WcStatus* status) {
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

  // The payload of the segment at message offset `off`, `len` bytes, of the
  // current message: a slice of one SGE, or gathered into `gather` when it
  // straddles SGEs. Segments come in message order, so src_i only advances.
  ByteSpan SourceSlice(uint32_t off, uint32_t len) {
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

  // RFC 5041 5.3: untagged placement of `payload` at message offset `offset`
  // into the receive buffer `e` (the concatenation of its SGEs). Every SGE
  // touched is checked first; false (e.status set) when one fails.
  bool PlaceUntagged(RqEntry& e, uint64_t offset, ByteSpan payload) {
    const SgeList& l = e.wr.local;
    uint64_t base = 0;
    for (uint32_t i = 0; i < l.num_sge && !payload.empty(); ++i) {
      const LocalSge& sge = l.sge[i];
      const uint64_t end = base + sge.length;
      if (offset < end) {
        WcStatus st = WcStatus::kSuccess;
        const MutableByteSpan mem = ResolveLocal(sge, ddp::kAccessLocalWrite, &st);
        if (mem.empty()) {
          e.status = st == WcStatus::kSuccess ? WcStatus::kLocalProtection : st;
          return false;
        }
        const size_t in = static_cast<size_t>(offset - base);
        const size_t n = std::min<size_t>(payload.size(), mem.size() - in);
        Place(mem, in, payload.first(n));
        payload = payload.subspan(n);
        offset += n;
      }
      base = end;
    }
    // CheckSegment bounded MO + length by the posted length (the sum).
    if (!payload.empty()) {
      e.status = WcStatus::kLocalLength;
      return false;
    }
    return true;
  }

  // ---- transmit
  void StartFullOperation(uint64_t rx_origin, uint64_t tx_origin) {
    const mpa::FpduConfig rx_cfg{qp.neg_.rx_markers, qp.neg_.crc,
                                 Seq32(static_cast<uint32_t>(rx_origin))};
    decoder.emplace(rx_cfg, Seq32(static_cast<uint32_t>(rx_origin)), mpa::kMaxUlpduLength);
    tx_cfg = mpa::FpduConfig{qp.neg_.tx_markers, qp.neg_.crc,
                             Seq32(static_cast<uint32_t>(tx_origin))};
    const uint32_t emss_now = qp.stack_->Emss(qp.conn_);
    emss = emss_now == 0 ? 536 : emss_now;
    mulpdu = mpa::Mulpdu(emss, qp.neg_.tx_markers);
  }

  // Queues a Terminate (RFC 5040 Terminate message on QN 2) reporting `code`;
  // `v`/`segment` (optional) supply the offending headers. Ends all work.
  void SendTerminate(const rdmap::TerminateCode& code, const rdmap::SegmentVerdict* v,
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

  // Picks the next outbound message. False when there is none (or the SQ is
  // stalled on ORD).
  bool StartNext() {
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
        rdmap::EncodeReadRequest(rr, MutableByteSpan(small_payload));
        cur_payload = ByteSpan(small_payload, rdmap::kReadRequestSize);
        seg.emplace(rdmap::ReadRequestMessage(rreq_msn), mulpdu);
        rreq_msn += 1;
        OutRead& o = oreads[(oreads_head + oreads_count) % oreads_cap];
        o = OutRead{};
        o.rtr = true;
        o.sink_stag = kRtrStag;
        ++oreads_count;
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
        rdmap::EncodeReadRequest(rr, MutableByteSpan(small_payload));
        cur_payload = ByteSpan(small_payload, rdmap::kReadRequestSize);
        seg.emplace(rdmap::ReadRequestMessage(rreq_msn), mulpdu);
        rreq_msn += 1;
        OutRead& o = oreads[(oreads_head + oreads_count) % oreads_cap];
        o = OutRead{};
        o.sq_index = idx;
        o.sink_stag = sink.stag;
        o.sink_to = sink.to;
        o.length = sink.length;
        ++oreads_count;
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

  void FinishMessage() {
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

  // RFC 5044 4.5 with Markers: the largest ULPDU whose FPDU, with the
  // Markers that fall into it at the current stream position, fills the
  // EMSS exactly. The worst-case MULPDU leaves segments short of the MSS,
  // and short segments do not trigger the receiver's every-second-segment
  // ACK (RFC 5681 4.2), which throttles the stream to the delayed-ACK timer.
  uint32_t MarkerMulpdu() const {
    uint32_t m = mpa::Mulpdu(emss, false);
    const Seq32 at(static_cast<uint32_t>(tx_off));
    while (m > mulpdu && mpa::FpduWireSize(m, at, tx_cfg) > emss) --m;
    return m;
  }

  // Records why the QP ends; the first cause stays.
  void SetEnd(QpEnd e) {
    if (qp.end_ == QpEnd::kNone) qp.end_ = e;
  }

  // Whether the connection, now over, ended as a graceful close: from Full
  // Operation or Closing, with no Terminate either way and no Abort().
  bool GracefulEnd(QpState was) const {
    return (was == QpState::kRts || was == QpState::kClosing) && !aborted &&
           !qp.term_sent_.has_value() && !qp.term_received_.has_value();
  }

  // The connection is over: the terminal state (kClosed when `graceful`,
  // else kError with `why` unless a cause was recorded before), then
  // everything still outstanding is flushed (RFC 5040 6.2: in both cases).
  void Ended(bool graceful, QpEnd why) {
    if (QpEnded(qp.state_)) return;
    qp.state_ = graceful ? QpState::kClosed : QpState::kError;
    SetEnd(graceful ? QpEnd::kClosed : why);
    FlushAll(WcStatus::kFlushed);
  }

  // The LLP session is over (ended, or refused a send for good).
  void LlpGone(LlpEnd how) {
    if (llp_ended) return;
    llp_ended = true;
    const QpState was = qp.state_;
    if (was == QpState::kAwaitRequest || was == QpState::kAwaitReply) {
      FailSetup(ConnectError::kTcpFailed, false);
    }
    Ended(how == LlpEnd::kOrderly && GracefulEnd(was),
          aborted ? QpEnd::kAborted : QpEnd::kLlpFailed);
    qp.observer_.OnDisconnected(qp);
  }

  // ---- the LLP under DDP (transmit side)
  //
  // DDP segmentation, queues, RDMAP and completions run on this interface;
  // MPA/TCP (FPDU framing with CRC and Markers into the TCP send buffer,
  // completion on TCP acknowledgement) and a SegmentLlp (RFC 5043: one DDP
  // segment per SCTP message, completion when taken) implement it. Receive
  // needs no interface: both deliver whole DDP segments to OnUlpdu.
  class TxLlp {
   public:
    virtual ~TxLlp() = default;
    // False once the LLP connection is gone (nothing more can be sent).
    virtual bool Usable() const = 0;
    // MULPDU for the next segment at the current stream position, 0: the
    // one fixed at setup (Impl::mulpdu).
    virtual uint32_t NextMulpdu() const = 0;
    // One DDP segment. kWouldBlock: offered again (same segment) later;
    // *wire: bytes the LLP put on its stream for it.
    virtual LlpSendStatus Send(ByteSpan header, ByteSpan payload, size_t* wire) = 0;
    // A send failed for good.
    virtual void Failed() = 0;
    // Ends the stream (FIN / session Terminate) after a Terminate or Close.
    virtual void EndStream() = 0;
    // Stream offset up to which Sends and Writes count as complete.
    virtual uint64_t CompleteUpTo() const = 0;
    // Whether a message completes as soon as its last segment is taken.
    virtual bool CompletesOnTake() const = 0;
  };

  class MpaTcpTx final : public TxLlp {
   public:
    explicit MpaTcpTx(Impl& m) : m_(m) {}
    bool Usable() const override { return m_.qp.conn_.valid(); }
    uint32_t NextMulpdu() const override { return m_.tx_cfg.markers ? m_.MarkerMulpdu() : 0; }
    LlpSendStatus Send(ByteSpan header, ByteSpan payload, size_t* wire) override {
      // No copy (zero_copy_tx): header before and PAD + CRC after the
      // payload go to TCP's send buffer, the payload stays in the region.
      if (m_.scratch_pending == 0 && m_.qp.options_.zero_copy_tx && !m_.tx_cfg.markers &&
          m_.pend_in_region && payload.size() >= kZeroCopyMinPayload) {
        uint8_t head[mpa::kUlpduLengthSize + ddp::kMaxHeaderSize];
        uint8_t tail[mpa::kMaxFpduTail];
        const mpa::FpduParts p =
            mpa::FrameFpduAround(header, payload, m_.tx_cfg.crc, MutableByteSpan(head),
                                 MutableByteSpan(tail));
        if (p.status != mpa::FpduStatus::kOk) return LlpSendStatus::kError;  // our sizing bug
        const tcp::SendStatus st = m_.qp.stack_->SendRecordZeroCopy(
            m_.qp.conn_, ByteSpan(head, p.head_size), payload, ByteSpan(tail, p.tail_size),
            /*cookie=*/0, m_.now_us);
        if (st == tcp::SendStatus::kOk) {
          *wire = p.head_size + payload.size() + p.tail_size;
          ++m_.qp.stats_.fpdus_zero_copy;
          return LlpSendStatus::kOk;
        }
        if (st != tcp::SendStatus::kTooManyRecords) return LlpSendStatus::kWouldBlock;
        // Every zero-copy slot is taken: this one is copied.
      }
      // Single copy: the FPDU is encoded (payload copied, CRC computed in
      // the same pass over the bytes) straight into TCP's send buffer.
      if (m_.scratch_pending == 0) {
        const size_t need = mpa::FpduWireSize(header.size() + payload.size(),
                                              Seq32(static_cast<uint32_t>(m_.tx_off)), m_.tx_cfg);
        const MutableByteSpan dst = m_.qp.stack_->ReserveRecord(m_.qp.conn_, need);
        if (dst.size() == need) {
          const mpa::FpduEncodeResult r = mpa::EncodeFpdu(
              header, payload, Seq32(static_cast<uint32_t>(m_.tx_off)), m_.tx_cfg, dst);
          if (r.status != mpa::FpduStatus::kOk || r.size != need) return LlpSendStatus::kError;
          if (m_.qp.stack_->CommitRecord(m_.qp.conn_, need, m_.now_us) != tcp::SendStatus::kOk) {
            return LlpSendStatus::kError;  // cannot happen: reserved just now
          }
          *wire = need;
          return LlpSendStatus::kOk;
        }
      }
      // Otherwise (no room, or the ring wraps inside the record) through the
      // scratch buffer. An FPDU refused for send space stays encoded there
      // (CRC computed once) and is offered again as is.
      if (m_.scratch_pending == 0) {
        const mpa::FpduEncodeResult r =
            mpa::EncodeFpdu(header, payload, Seq32(static_cast<uint32_t>(m_.tx_off)), m_.tx_cfg,
                            MutableByteSpan(m_.scratch.get(), kTxScratchSize));
        if (r.status != mpa::FpduStatus::kOk) return LlpSendStatus::kError;  // our sizing bug
        m_.scratch_pending = r.size;
      }
      const tcp::SendStatus st = m_.qp.stack_->SendRecord(
          m_.qp.conn_, ByteSpan(m_.scratch.get(), m_.scratch_pending), m_.now_us);
      if (st != tcp::SendStatus::kOk) return LlpSendStatus::kWouldBlock;  // OnSendSpace resumes
      *wire = m_.scratch_pending;
      m_.scratch_pending = 0;
      return LlpSendStatus::kOk;
    }
    void Failed() override {}
    void EndStream() override { m_.qp.stack_->Shutdown(m_.qp.conn_, m_.now_us); }
    uint64_t CompleteUpTo() const override {
      if (!m_.qp.conn_.valid()) return 0;
      return m_.qp.stack_->BytesAcked(m_.qp.conn_).value_or(0);
    }
    bool CompletesOnTake() const override { return false; }

   private:
    Impl& m_;
  };

  class SegmentTx final : public TxLlp {
   public:
    explicit SegmentTx(Impl& m) : m_(m) {}
    bool Usable() const override { return !m_.llp_ended; }
    uint32_t NextMulpdu() const override { return 0; }
    LlpSendStatus Send(ByteSpan header, ByteSpan payload, size_t* wire) override {
      const LlpSendStatus st = m_.qp.llp_->SendSegment(header, payload);
      if (st == LlpSendStatus::kOk) *wire = header.size() + payload.size();
      return st;
    }
    void Failed() override { m_.LlpGone(LlpEnd::kFailed); }
    void EndStream() override {
      if (m_.qp.llp_->EndStream() != LlpSendStatus::kOk) m_.LlpGone(LlpEnd::kFailed);
    }
    uint64_t CompleteUpTo() const override { return m_.tx_off; }
    bool CompletesOnTake() const override { return true; }

   private:
    Impl& m_;
  };

  // Segments the current message to the LLP's MULPDU and hands the segments
  // over until nothing is left or the LLP is full.
  void Pump() {
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

  // ---- receive
  void OnUlpdu(ByteSpan ulpdu, Seq32) override {
    if (qp.state_ != QpState::kRts && qp.state_ != QpState::kClosing &&
        qp.state_ != QpState::kAwaitRtr) {
      // After a Terminate nothing more is processed (RFC 5040).
      qp.stats_.rx_bytes_discarded += ulpdu.size();
      return;
    }
    ++qp.stats_.fpdus_in;
    if (qp.state_ == QpState::kAwaitRtr) {
      if (!CheckRtr(ulpdu)) return;
    }
    HandleSegment(ulpdu);
  }

  // Whether `ulpdu` is an untagged RDMAP Terminate on QN 2 (RFC 5040 5.4).
  static bool IsTerminate(ByteSpan ulpdu) {
    ddp::DdpHeader h;
    rdmap::Opcode op;
    return ddp::ParseHeader(ulpdu, &h) == ddp::HeaderStatus::kOk && !h.tagged &&
           h.qn == rdmap::kQnTerminate &&
           rdmap::ParseControl(h.rsvd_ulp0, &op) == rdmap::ControlStatus::kOk &&
           op == rdmap::Opcode::kTerminate;
  }

  // RFC 6581: the responder's first FPDU must be the agreed RTR. Returns true
  // when `ulpdu` should still be processed as a normal segment.
  bool CheckRtr(ByteSpan ulpdu) {
    const uint8_t rtr = qp.neg_.rtr;
    bool consumed = false;
    if (rtr != 0) {
      ddp::DdpHeader h;
      rdmap::Opcode op;
      bool ok = ddp::ParseHeader(ulpdu, &h) == ddp::HeaderStatus::kOk &&
                rdmap::ParseControl(h.rsvd_ulp0, &op) == rdmap::ControlStatus::kOk && h.last;
      const size_t len = ok ? ulpdu.size() - h.size() : 0;
      if (ok && rtr == kRtrWrite) {
        ok = h.tagged && op == rdmap::Opcode::kRdmaWrite && len == 0;
        consumed = true;
      } else if (ok && rtr == kRtrSend) {
        ok = !h.tagged && op == rdmap::Opcode::kSend && h.qn == rdmap::kQnSend && len == 0 &&
             h.msn == rq_msn;
        consumed = true;
      } else if (ok && rtr == kRtrRead) {
        rdmap::ReadRequest rr;
        ok = !h.tagged && op == rdmap::Opcode::kReadRequest && h.qn == rdmap::kQnReadRequest &&
             rdmap::ParseReadRequest(ulpdu.subspan(h.size()), &rr) == rdmap::BodyStatus::kOk &&
             rr.read_size == 0;
      }
      if (!ok && IsTerminate(ulpdu)) {
        // The initiator refused our Reply (RFC 6581: insufficient IRD, no
        // matching RTR) with a Terminate in place of the RTR. Its stream ends
        // there: record it and close, never answer a Terminate with one.
        rdmap::Terminate t;
        size_t used = 0;
        rdmap::TerminateCode code = rdmap::codes::kOperationUnspecified;
        if (rdmap::ParseTerminate(ulpdu.subspan(ddp::kUntaggedHeaderSize), &t, &used) ==
            rdmap::BodyStatus::kOk) {
          code = t.code;
        }
        qp.term_received_ = code;
        SetEnd(QpEnd::kTerminate);
        ++qp.stats_.terminates_received;
        qp.observer_.OnTerminate(qp, code, false);
        ConnectError e = ConnectError::kRejected;
        if (code == LlpCode(mpa::MpaError::kInsufficientIrd)) e = ConnectError::kInsufficientIrd;
        if (code == LlpCode(mpa::MpaError::kNoMatchingRtr)) e = ConnectError::kNoMatchingRtr;
        FailSetup(e, /*abort=*/false);
        return false;
      }
      if (!ok) {
        qp.connect_error_ = ConnectError::kNoMatchingRtr;
        SendTerminate(LlpCode(mpa::MpaError::kNoMatchingRtr), nullptr, ByteSpan());
        return false;
      }
      if (rtr == kRtrSend) rq_msn += 1;  // the RTR Send used MSN 1, without a buffer
    }
    qp.state_ = QpState::kRts;
    tx_allowed = true;
    deadline_us = 0;
    qp.observer_.OnEstablished(qp, qp.peer_private_data());
    return !consumed;
  }

  void Place(MutableByteSpan dst, uint64_t offset, ByteSpan payload) {
    if (payload.empty()) return;  // zero-length segments place nothing (and may carry null)
    std::memcpy(dst.data() + offset, payload.data(), payload.size());
    qp.stats_.bytes_placed += payload.size();
  }

  // Tagged placement of a checked segment's payload at its region offset.
  // False when the region's mapping is shorter than the STag table said
  // (our fault, never the peer's): the stream ends with a Terminate.
  bool PlaceTagged(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu) {
    if (payload.empty()) return true;
    MutableByteSpan mem = qp.memory_.Resolve(v.placement.handle);
    if (mem.size() < v.placement.offset + payload.size()) {
      ++qp.stats_.local_errors;
      SendTerminate(rdmap::codes::kLocalCatastrophic, &v, ulpdu);
      return false;
    }
    Place(mem, v.placement.offset, payload);
    return true;
  }

  void HandleSegment(ByteSpan ulpdu) {
    rdmap::RxContext ctx;
    ctx.stream = ddp::StreamIdentity{qp.options_.pd, qp.options_.stream_id};
    ctx.stags = &qp.memory_.stags();
    ctx.queues = &qp;
    const rdmap::SegmentVerdict v = rdmap::CheckSegment(ulpdu, ctx);
    if (!v.ok) {
      SendTerminate(v.error, &v, ulpdu);
      return;
    }
    const ByteSpan payload = ulpdu.subspan(v.header.size());
    switch (v.opcode) {
      case rdmap::Opcode::kRdmaWrite: {
        if (!PlaceTagged(v, payload, ulpdu)) return;
        if (v.header.last) {
          // The LLP delivers in order, so every earlier segment of this
          // Write is placed too (a zero-length Write counts as well).
          ++qp.stats_.messages_in;
          ++qp.stats_.writes_placed;
        }
        return;
      }
      case rdmap::Opcode::kReadResponse: {
        // RFC 5040 4.4: Read Responses answer our Read Requests in order.
        if (oreads_count == 0) {
          SendTerminate(rdmap::codes::kUnexpectedOpcode, &v, ulpdu);
          return;
        }
        OutRead& o = oreads[oreads_head];
        if (!payload.empty()) {
          if (o.rtr || v.header.stag != o.sink_stag || v.header.to < o.sink_to ||
              v.header.to - o.sink_to + payload.size() > o.length) {
            SendTerminate(rdmap::codes::kBaseBounds, &v, ulpdu);
            return;
          }
          if (!PlaceTagged(v, payload, ulpdu)) return;
          o.placed += payload.size();
        }
        if (v.header.last) {
          ++qp.stats_.messages_in;
          if (!o.rtr) {
            SqEntry& e = sq[o.sq_index];
            e.st = SqState::kDone;
          }
          oreads_head = (oreads_head + 1) % oreads_cap;
          --oreads_count;
          CompleteSq(0);
          Pump();  // an ORD slot freed
        }
        return;
      }
      case rdmap::Opcode::kSend:
      case rdmap::Opcode::kSendInvalidate:
      case rdmap::Opcode::kSendSe:
      case rdmap::Opcode::kSendSeInvalidate: {
        const uint32_t slot = static_cast<uint32_t>(v.placement.handle);
        RqEntry& e = rq[slot];
        if (!payload.empty() && !PlaceUntagged(e, v.placement.offset, payload)) {
          ++qp.stats_.local_errors;
          SendTerminate(rdmap::codes::kLocalCatastrophic, &v, ulpdu);
          return;
        }
        if (v.header.last) {
          const bool inv = v.opcode == rdmap::Opcode::kSendInvalidate ||
                           v.opcode == rdmap::Opcode::kSendSeInvalidate;
          if (inv) {
            // RFC 5040 6.3.1: invalidate before the completion is reported.
            if (qp.memory_.InvalidateRemote(v.header.rsvd_ulp1, qp.options_.pd) !=
                ddp::StagStatus::kOk) {
              SendTerminate(rdmap::codes::kProtectionCannotInvalidate, &v, ulpdu);
              return;
            }
            e.flags |= kWcWithInvalidate;
            e.invalidated_stag = v.header.rsvd_ulp1;
          }
          if (v.opcode == rdmap::Opcode::kSendSe || v.opcode == rdmap::Opcode::kSendSeInvalidate) {
            e.flags |= kWcSolicited;
          }
          // RFC 5041 5.4: the message length is MO + length of the last segment.
          e.byte_len = static_cast<uint32_t>(v.header.mo + payload.size());
          e.done = true;
          ++qp.stats_.messages_in;
          CompleteRq();  // RFC 5041 5.3: delivered in MSN order
        }
        return;
      }
      case rdmap::Opcode::kReadRequest: {
        rdmap::ReadRequest rr;
        if (rdmap::ParseReadRequest(payload, &rr) != rdmap::BodyStatus::kOk) {
          SendTerminate(rdmap::codes::kOperationUnspecified, &v, ulpdu);
          return;
        }
        rdmap::TerminateCode err;
        const ddp::TaggedRegion* region = nullptr;
        const ddp::StreamIdentity id{qp.options_.pd, qp.options_.stream_id};
        if (!rdmap::CheckReadSource(rr, id, qp.memory_.stags(), &err, &region)) {
          SendTerminate(err, &v, ulpdu);
          return;
        }
        ByteSpan src;
        if (region != nullptr) {
          MutableByteSpan mem = qp.memory_.Resolve(region->handle);
          const uint64_t off = rr.source_to - region->base_to;
          if (mem.size() < off + rr.read_size) {
            ++qp.stats_.local_errors;
            SendTerminate(rdmap::codes::kLocalCatastrophic, &v, ulpdu);
            return;
          }
          src = ByteSpan(mem.data() + off, rr.read_size);
        }
        // The QN 1 window (IRD slots) was checked by CheckSegment.
        ReadResp& r = rresp[(rresp_head + rresp_count) % rresp_cap];
        r.sink_stag = rr.sink_stag;
        r.sink_to = rr.sink_to;
        r.src = src;
        ++rresp_count;
        rreq_in_msn += 1;
        ++qp.stats_.messages_in;
        Pump();
        return;
      }
      case rdmap::Opcode::kTerminate: {
        rdmap::Terminate t;
        size_t used = 0;
        rdmap::TerminateCode code = rdmap::codes::kOperationUnspecified;
        if (rdmap::ParseTerminate(payload, &t, &used) == rdmap::BodyStatus::kOk) code = t.code;
        term_in_msn += 1;
        qp.term_received_ = code;
        SetEnd(QpEnd::kTerminate);
        ++qp.stats_.terminates_received;
        qp.state_ = QpState::kTerminating;
        FlushAll(WcStatus::kFlushed, &code, StatusForTerminate(code));
        qp.observer_.OnTerminate(qp, code, false);
        if (!fin_sent && qp.conn_.valid()) {
          qp.stack_->Shutdown(qp.conn_, now_us);
          fin_sent = true;
        }
        return;
      }
    }
  }

  // ---- MPA connection setup
  void SendFrame(const mpa::StartupFrame& f) {
    uint8_t buf[mpa::kStartupHeaderSize + mpa::kMaxPrivateDataLength];
    const mpa::FrameResult r = mpa::EncodeStartupFrame(f, MutableByteSpan(buf));
    if (r.status != mpa::FrameStatus::kOk) {
      ++qp.stats_.local_errors;
      return;
    }
    // The send buffer is empty during setup: all or nothing always fits.
    if (qp.stack_->SendRecord(qp.conn_, ByteSpan(buf, r.size), now_us) == tcp::SendStatus::kOk) {
      tx_off += r.size;
    } else {
      ++qp.stats_.local_errors;
    }
  }

  void FailSetup(ConnectError e, bool abort) {
    qp.connect_error_ = e;
    const bool was_live = qp.conn_.valid();
    qp.state_ = QpState::kError;
    SetEnd(QpEnd::kSetupFailed);
    FlushAll(WcStatus::kFlushed);
    qp.observer_.OnConnectFailed(qp, e, qp.peer_private_data());
    if (qp.llp_ != nullptr && !fin_sent && !llp_ended) {
      fin_sent = true;
      (void)qp.llp_->EndStream();
    }
    if (was_live && qp.conn_.valid()) {
      if (abort) {
        qp.stack_->Abort(qp.conn_, now_us);
      } else {
        qp.stack_->Shutdown(qp.conn_, now_us);
        fin_sent = true;
      }
    }
  }

  // After the FPDU decoder stopped on an error: count it and end the stream
  // with a Terminate. RFC 5044 8: CRC and Marker errors are reported as MPA
  // (LLP layer) errors. An FPDU longer than we accept (kUlpduTooLong) has no
  // MPA code and cannot be delimited or checked: DDP Local Catastrophic
  // (RFC 5041 7.2, Layer 1 / Type 0 / Code 0), the stream being unusable.
  void CheckDecoder() {
    switch (decoder->status()) {
      case mpa::DecodeStatus::kOk: return;
      case mpa::DecodeStatus::kCrcError: ++qp.stats_.crc_errors; break;
      case mpa::DecodeStatus::kMarkerMismatch: ++qp.stats_.marker_errors; break;
      case mpa::DecodeStatus::kUlpduTooLong:
        ++qp.stats_.ulpdu_too_long;
        SendTerminate(rdmap::TerminateCode{rdmap::kLayerDdp, rdmap::kEtypeLocalCatastrophic, 0x00},
                      nullptr, ByteSpan());
        return;
    }
    SendTerminate(LlpCode(mpa::ToMpaError(decoder->status())), nullptr, ByteSpan());
  }

  void CopyPeerPd(ByteSpan pd) {
    qp.peer_pd_len_ = std::min(pd.size(), sizeof(qp.peer_pd_));
    if (qp.peer_pd_len_ > 0) std::memcpy(qp.peer_pd_, pd.data(), qp.peer_pd_len_);
  }

  void SendRequest() {
    const MpaParams& m = qp.options_.mpa;
    mpa::StartupFrame f;
    f.type = mpa::FrameType::kRequest;
    f.markers = m.want_markers;
    f.crc = m.crc;
    f.revision = m.revision;
    if (m.enhanced && m.revision == mpa::kRevision2) {
      mpa::IrdOrd io;
      io.ird = m.ird;
      io.ord = m.ord;
      io.peer_to_peer = m.peer_to_peer;
      io.send_rtr = m.peer_to_peer && (m.rtr_types & kRtrSend) != 0;
      io.write_rtr = m.peer_to_peer && (m.rtr_types & kRtrWrite) != 0;
      io.read_rtr = m.peer_to_peer && (m.rtr_types & kRtrRead) != 0;
      f.ird_ord = io;
    }
    f.private_data = ByteSpan(local_pd, local_pd_len);
    SendFrame(f);
    qp.state_ = QpState::kAwaitReply;
    deadline_pending = true;
  }

  // Returns bytes of `data` used for the frame, or SIZE_MAX when the caller
  // must stop (failure), or data.size() when more bytes are needed.
  size_t FeedHandshake(ByteSpan data, size_t* frame_end_in_data, mpa::StartupFrame* f,
                       mpa::FrameStatus* status) {
    const size_t take = std::min(data.size(), kHandshakeBufSize - hs_len);
    std::memcpy(hs_buf + hs_len, data.data(), take);
    const size_t before = hs_len;
    hs_len += take;
    mpa::FrameDecodeOptions o;
    // The limit is the ULP's private data; PD_Length also counts the
    // RFC 6581 IRD/ORD block (checked after decoding: OnRequest, OnReply).
    o.max_private_data = std::min<size_t>(mpa::kMaxPrivateDataLength,
                                          size_t{qp.options_.mpa.max_private_data} + mpa::kIrdOrdSize);
    const mpa::FrameType want = qp.state_ == QpState::kAwaitRequest ? mpa::FrameType::kRequest
                                                                    : mpa::FrameType::kReply;
    const mpa::FrameResult r = mpa::DecodeStartupFrame(ByteSpan(hs_buf, hs_len), want, f, o);
    *status = r.status;
    if (r.status == mpa::FrameStatus::kOk) *frame_end_in_data = r.size - before;
    return take;
  }

  void OnRequest(const mpa::StartupFrame& req, size_t frame_size) {
    const MpaParams& m = qp.options_.mpa;
    CopyPeerPd(req.private_data);
    // RFC 5044 7.1.2 rule 2: private data we do not accept gets a Reject.
    const bool pd_ok = req.private_data.size() <= m.max_private_data;
    const AcceptDecision d =
        pd_ok ? qp.observer_.OnConnectRequest(qp, req) : AcceptDecision{false, {}};
    Negotiated& n = qp.neg_;
    n.revision = req.revision;
    n.crc = req.crc || m.crc;  // RFC 5044 7.1.2: C if either side asks
    n.tx_markers = req.markers;
    n.rx_markers = m.want_markers;
    n.enhanced = req.ird_ord.has_value() && m.enhanced;
    n.ird = m.ird;
    n.ord = m.ord;
    ConnectError reject = d.accept ? ConnectError::kNone : ConnectError::kRejectedLocally;
    if (n.enhanced) {
      const mpa::IrdOrd& p = *req.ird_ord;
      if (p.ird != mpa::kIrdOrdMax) n.ord = std::min<uint16_t>(m.ord, p.ird);
      n.peer_to_peer = p.peer_to_peer && m.peer_to_peer;
      if (p.peer_to_peer) {
        const uint8_t offered = (p.send_rtr ? kRtrSend : 0) | (p.write_rtr ? kRtrWrite : 0) |
                                (p.read_rtr ? kRtrRead : 0);
        const uint8_t both = offered & m.rtr_types;
        if ((both & kRtrWrite) != 0) {
          n.rtr = kRtrWrite;
        } else if ((both & kRtrRead) != 0) {
          n.rtr = kRtrRead;
        } else if ((both & kRtrSend) != 0) {
          n.rtr = kRtrSend;
        } else if (offered != 0 && reject == ConnectError::kNone) {
          reject = ConnectError::kNoMatchingRtr;
        }
        n.peer_to_peer = true;  // A echoed (INTEROP.md)
      }
    }
    mpa::StartupFrame rep;
    rep.type = mpa::FrameType::kReply;
    rep.markers = m.want_markers;
    rep.crc = n.crc;
    rep.reject = reject != ConnectError::kNone;
    rep.revision = req.revision;
    if (n.enhanced) {
      mpa::IrdOrd io;
      io.ird = n.ird;
      io.ord = n.ord;
      io.peer_to_peer = n.peer_to_peer;
      io.send_rtr = n.rtr == kRtrSend;
      io.write_rtr = n.rtr == kRtrWrite;
      io.read_rtr = n.rtr == kRtrRead;
      rep.ird_ord = io;
    }
    const size_t pd_max = mpa::kMaxPrivateDataLength - (n.enhanced ? mpa::kIrdOrdSize : 0);
    rep.private_data = d.private_data.subspan(0, std::min(d.private_data.size(), pd_max));
    SendFrame(rep);
    if (reject != ConnectError::kNone) {
      FailSetup(reject, false);
      return;
    }
    StartFullOperation(frame_size, tx_off);
    qp.state_ = QpState::kAwaitRtr;
    deadline_pending = true;
  }

  void OnReply(const mpa::StartupFrame& rep, size_t frame_size) {
    const MpaParams& m = qp.options_.mpa;
    CopyPeerPd(rep.private_data);
    if (rep.reject) {
      FailSetup(ConnectError::kRejected, false);
      return;
    }
    if (rep.private_data.size() > m.max_private_data) {
      FailSetup(ConnectError::kInvalidStartupFrame, true);
      return;
    }
    if (rep.revision != m.revision) {
      FailSetup(ConnectError::kInvalidStartupFrame, true);
      return;
    }
    Negotiated& n = qp.neg_;
    n.revision = rep.revision;
    n.crc = m.crc || rep.crc;
    n.tx_markers = rep.markers;
    n.rx_markers = m.want_markers;
    const bool sent_enhanced = m.enhanced && m.revision == mpa::kRevision2;
    n.enhanced = sent_enhanced && rep.ird_ord.has_value();
    n.ird = m.ird;
    n.ord = m.ord;
    deadline_us = 0;
    deadline_pending = false;
    StartFullOperation(frame_size, tx_off);
    tx_allowed = true;
    qp.state_ = QpState::kRts;
    if (n.enhanced) {
      const mpa::IrdOrd& r = *rep.ird_ord;
      if (r.ird != mpa::kIrdOrdMax) n.ord = std::min<uint16_t>(m.ord, r.ird);
      const uint8_t chosen = (r.send_rtr ? kRtrSend : 0) | (r.write_rtr ? kRtrWrite : 0) |
                             (r.read_rtr ? kRtrRead : 0);
      const uint8_t offered = m.peer_to_peer ? m.rtr_types : 0;
      n.peer_to_peer = m.peer_to_peer && r.peer_to_peer;
      // RFC 6581: the responder's IRD must cover our ORD (we clamp ours), and
      // our IRD must cover the ORD it announced.
      if (r.ord != mpa::kIrdOrdMax && r.ord > m.ird) {
        qp.connect_error_ = ConnectError::kInsufficientIrd;
        SendTerminate(LlpCode(mpa::MpaError::kInsufficientIrd), nullptr, ByteSpan());
        return;
      }
      if (n.peer_to_peer && offered != 0) {
        const bool exactly_one = chosen == kRtrSend || chosen == kRtrWrite || chosen == kRtrRead;
        if (!exactly_one || (chosen & offered) == 0) {
          qp.connect_error_ = ConnectError::kNoMatchingRtr;
          SendTerminate(LlpCode(mpa::MpaError::kNoMatchingRtr), nullptr, ByteSpan());
          return;
        }
        n.rtr = chosen;
        rtr_pending = true;
      }
    }
    qp.observer_.OnEstablished(qp, qp.peer_private_data());
    Pump();
  }
};

void Qp::Impl::SetTx() {
  if (qp.llp_ != nullptr) {
    tx = std::make_unique<SegmentTx>(*this);
  } else {
    tx = std::make_unique<MpaTcpTx>(*this);
  }
}

// ---------------------------------------------------------------- Qp

Qp::Qp(const QpOptions& options, tcp::TcpStack* stack, SegmentLlp* llp, MemoryDomain& memory,
       QpObserver& observer)
    : options_(options), stack_(stack), llp_(llp), memory_(memory), observer_(observer) {}

Qp::~Qp() {
  if (llp_ != nullptr) llp_->Detach();
}

absl::StatusOr<std::unique_ptr<Qp>> Qp::Create(const QpOptions& options, tcp::TcpStack& stack,
                                               MemoryDomain& memory, QpObserver& observer) {
  return Make(options, &stack, nullptr, memory, observer);
}

absl::StatusOr<std::unique_ptr<Qp>> Qp::CreateOnLlp(const QpOptions& options, SegmentLlp& llp,
                                                    MemoryDomain& memory, QpObserver& observer) {
  if (llp.Mulpdu() < ddp::kMaxHeaderSize + 1) {
    return absl::InvalidArgumentError("LLP MULPDU too small for a DDP segment");
  }
  return Make(options, nullptr, &llp, memory, observer);
}

absl::StatusOr<std::unique_ptr<Qp>> Qp::Make(const QpOptions& options, tcp::TcpStack* stack,
                                             SegmentLlp* llp, MemoryDomain& memory,
                                             QpObserver& observer) {
  const MpaParams& m = options.mpa;
  if (m.revision != mpa::kRevision1 && m.revision != mpa::kRevision2) {
    return absl::InvalidArgumentError("mpa.revision must be 1 or 2");
  }
  if (m.ird > mpa::kIrdOrdMax || m.ord > mpa::kIrdOrdMax) {
    return absl::InvalidArgumentError("mpa.ird/ord above 0x3FFF");
  }
  if (m.max_private_data > mpa::kMaxPrivateDataLength) {
    return absl::InvalidArgumentError("mpa.max_private_data above 512");
  }
  if (options.sq_depth == 0 || options.rq_depth == 0 || options.cq_depth == 0) {
    return absl::InvalidArgumentError("sq_depth, rq_depth and cq_depth must be positive");
  }
  if (options.max_send_sge == 0 || options.max_send_sge > kMaxSge) {
    return absl::InvalidArgumentError("max_send_sge must be 1 to 4");
  }
  if (!options.gather_staging.empty() && options.gather_staging.size() < kGatherStagingSize) {
    return absl::InvalidArgumentError("gather_staging smaller than kGatherStagingSize");
  }
  std::unique_ptr<Qp> qp(new Qp(options, stack, llp, memory, observer));
  auto impl = std::make_unique<Impl>(*qp);
  impl->sq = std::make_unique<Impl::SqEntry[]>(options.sq_depth);
  impl->rq = std::make_unique<Impl::RqEntry[]>(options.rq_depth);
  impl->cq = std::make_unique<Completion[]>(options.cq_depth);
  impl->rresp_cap = std::max<uint32_t>(m.ird, 1);
  impl->rresp = std::make_unique<Impl::ReadResp[]>(impl->rresp_cap);
  impl->rresp_sent_end = std::make_unique<uint64_t[]>(impl->rresp_cap);
  impl->oreads_cap = static_cast<uint32_t>(m.ord) + 1;  // + the Read RTR
  impl->oreads = std::make_unique<Impl::OutRead[]>(impl->oreads_cap);
  impl->scratch = std::make_unique<uint8_t[]>(kTxScratchSize);
  if (options.max_send_sge > 1) {
    if (!options.gather_staging.empty()) {
      impl->gather = options.gather_staging.data();
    } else {
      impl->own_gather = std::make_unique<uint8_t[]>(kGatherStagingSize);
      impl->gather = impl->own_gather.get();
    }
  }
  impl->SetTx();
  qp->impl_ = std::move(impl);
  return qp;
}

absl::Status Qp::Connect(uint32_t local_ip, uint32_t remote_ip, uint16_t remote_port,
                         ByteSpan private_data, uint64_t now_us) {
  if (state_ != QpState::kIdle) return absl::FailedPreconditionError("QP not idle");
  if (stack_ == nullptr) return absl::FailedPreconditionError("QP runs over an LLP: use ConnectLlp");
  const size_t limit = mpa::kMaxPrivateDataLength -
                       (options_.mpa.enhanced && options_.mpa.revision == mpa::kRevision2
                            ? mpa::kIrdOrdSize
                            : 0);
  if (private_data.size() > limit) {
    return absl::InvalidArgumentError("private data longer than 512 bytes with IRD/ORD");
  }
  // memcpy needs valid pointers even for 0 bytes; empty spans may hold null.
  if (!private_data.empty()) {
    std::memcpy(impl_->local_pd, private_data.data(), private_data.size());
  }
  impl_->local_pd_len = private_data.size();
  impl_->now_us = now_us;
  state_ = QpState::kTcpConnecting;
  absl::StatusOr<tcp::ConnId> c = stack_->Connect(local_ip, remote_ip, remote_port, *this, 0, now_us);
  if (!c.ok()) {
    state_ = QpState::kIdle;
    return c.status();
  }
  conn_ = *c;
  impl_->deadline_us = now_us + options_.mpa.reply_timeout_us;
  return absl::OkStatus();
}

bool Qp::SendsFrom(ByteSpan range) const {
  return stack_ != nullptr && conn_.valid() && stack_->ZeroCopyReferences(conn_, range);
}

bool Qp::AttachPassive(tcp::ConnId conn) {
  if (state_ != QpState::kIdle || stack_ == nullptr) return false;
  conn_ = conn;
  state_ = QpState::kAwaitRequest;
  impl_->deadline_pending = true;
  return true;
}

bool Qp::AttachEstablished(tcp::ConnId conn, const Negotiated& negotiated) {
  if (state_ != QpState::kIdle || stack_ == nullptr) return false;
  conn_ = conn;
  neg_ = negotiated;
  Impl& m = *impl_;
  // No MPA frames were exchanged: FPDUs start at stream offset 0 both ways.
  m.StartFullOperation(0, 0);
  m.tx_allowed = true;
  m.deadline_us = 0;
  m.deadline_pending = false;
  state_ = QpState::kRts;
  observer_.OnEstablished(*this, ByteSpan());
  return true;
}

PostStatus Qp::PostSend(const SendWr& wr) {
  if (state_ == QpState::kIdle || state_ == QpState::kClosing ||
      state_ == QpState::kTerminating || QpEnded(state_)) {
    return PostStatus::kNotConnected;
  }
  if (wr.local.num_sge > options_.max_send_sge) return PostStatus::kInvalidWr;
  // RFC 5040 4.4: one sink STag and TO per Read Request. Non-empty sink SGEs
  // are merged when they are one contiguous range of one STag; anything else
  // is refused. A zero-length Read names its first SGE's STag.
  const bool read = wr.opcode == WrOpcode::kRdmaRead;
  LocalSge sink = wr.local.num_sge > 0 ? wr.local.sge[0] : LocalSge{};
  if (read) {
    bool have = false;
    for (uint32_t i = 0; i < wr.local.num_sge; ++i) {
      const LocalSge& s = wr.local.sge[i];
      if (s.length == 0) continue;
      if (!have) {
        sink = s;
        have = true;
      } else if (s.stag == sink.stag && sink.to + sink.length == s.to &&
                 uint64_t{sink.length} + s.length <= UINT32_MAX) {
        sink.length += s.length;
      } else {
        return PostStatus::kInvalidWr;
      }
    }
  }
  Impl& m = *impl_;
  if (m.sq_count == options_.sq_depth) return PostStatus::kQueueFull;
  Impl::SqEntry& e = m.sq[(m.sq_head + m.sq_count) % options_.sq_depth];
  e = Impl::SqEntry{};
  e.wr = wr;
  if (read) e.wr.local = SgeList(sink);
  ++m.sq_count;
  m.Pump();
  return PostStatus::kOk;
}

PostStatus Qp::PostRecv(const RecvWr& wr) {
  if (state_ == QpState::kTerminating || QpEnded(state_)) return PostStatus::kNotConnected;
  if (wr.local.num_sge > kMaxSge) return PostStatus::kInvalidWr;
  Impl& m = *impl_;
  if (m.rq_count == options_.rq_depth) return PostStatus::kQueueFull;
  const uint32_t slot = (m.rq_head + m.rq_count) % options_.rq_depth;
  Impl::RqEntry& e = m.rq[slot];
  e = Impl::RqEntry{};
  e.wr = wr;
  e.ub.handle = slot;
  // A DDP message is < 2^32 bytes (RFC 5041 5.2): a larger sum never fills.
  e.ub.length = static_cast<uint32_t>(std::min<uint64_t>(wr.local.TotalLength(), UINT32_MAX));
  ++m.rq_count;
  return PostStatus::kOk;
}

size_t Qp::PollCompletions(std::span<Completion> out) {
  Impl& m = *impl_;
  size_t n = 0;
  while (n < out.size() && m.cq_count > 0) {
    out[n++] = m.cq[m.cq_head];
    m.cq_head = (m.cq_head + 1) % options_.cq_depth;
    --m.cq_count;
  }
  return n;
}

size_t Qp::completions_pending() const { return impl_->cq_count; }

void Qp::Poll(uint64_t now_us) {
  Impl& m = *impl_;
  m.now_us = now_us;
  if (m.deadline_pending) {
    m.deadline_pending = false;
    const MpaParams& p = options_.mpa;
    if (state_ == QpState::kAwaitRequest) m.deadline_us = now_us + p.request_timeout_us;
    if (state_ == QpState::kAwaitReply) m.deadline_us = now_us + p.reply_timeout_us;
    if (state_ == QpState::kAwaitRtr) m.deadline_us = now_us + p.rtr_timeout_us;
  }
  const bool setup = state_ == QpState::kTcpConnecting || state_ == QpState::kAwaitRequest ||
                     state_ == QpState::kAwaitReply || state_ == QpState::kAwaitRtr;
  if (setup && m.deadline_us != 0 && now_us >= m.deadline_us) {
    m.deadline_us = 0;
    m.FailSetup(ConnectError::kTimeout, true);
    return;
  }
  // Only a Send or Write waiting for its acknowledgement at the head of the
  // queue needs the stack's acknowledged offset.
  if (m.tx->CompletesOnTake()) {
    m.CompleteSq(m.tx_off);
  } else if (conn_.valid() && m.sq_count > 0 &&
      (m.sq[m.sq_head].st == Impl::SqState::kSent || m.sq[m.sq_head].st == Impl::SqState::kDone)) {
    if (const std::optional<uint64_t> acked = stack_->BytesAcked(conn_)) m.CompleteSq(*acked);
  }
  m.Pump();
}

void Qp::Close(uint64_t now_us) {
  impl_->now_us = now_us;
  if (state_ == QpState::kRts) {
    state_ = QpState::kClosing;
    impl_->Pump();
  } else if (!QpEnded(state_) && state_ != QpState::kTerminating &&
             (conn_.valid() || (llp_ != nullptr && state_ != QpState::kIdle))) {
    Abort(now_us);
  }
}

void Qp::Abort(uint64_t now_us) {
  impl_->now_us = now_us;
  if (llp_ != nullptr) {
    Impl& m = *impl_;
    if (m.llp_ended || state_ == QpState::kIdle) return;
    // The session Terminate; OnLlpEnded flushes when the peer answers.
    m.aborted = true;
    m.fin_sent = true;
    if (llp_->EndStream() != LlpSendStatus::kOk) m.LlpGone(LlpEnd::kFailed);
    return;
  }
  if (conn_.valid()) {
    impl_->aborted = true;
    stack_->Abort(conn_, now_us);  // OnClosed flushes
  }
}

// ---------------------------------------------------------------- over an LLP

namespace {

// The RFC 6581 IRD/ORD block in front of LLP session private data (A/B/C/D
// bits zero: no RTR over a session LLP).
void PutIrdOrd(uint16_t ird, uint16_t ord, uint8_t* out) {
  StoreBe16(out, static_cast<uint16_t>(ird & mpa::kIrdOrdMax));
  StoreBe16(out + 2, static_cast<uint16_t>(ord & mpa::kIrdOrdMax));
}

bool GetIrdOrd(ByteSpan pd, mpa::IrdOrd* out) {
  ByteReader r(pd);
  const uint16_t ird = r.U16();
  const uint16_t ord = r.U16();
  if (!r.ok()) return false;
  out->ird = ird & mpa::kIrdOrdMax;
  out->ord = ord & mpa::kIrdOrdMax;
  return true;
}

// IRD/ORD block + private data into `buf`; returns the bytes used.
size_t BuildLlpPd(uint16_t ird, uint16_t ord, ByteSpan pd, uint8_t* buf) {
  PutIrdOrd(ird, ord, buf);
  const size_t n = std::min(pd.size(), mpa::kMaxPrivateDataLength - mpa::kIrdOrdSize);
  if (n > 0) std::memcpy(buf + mpa::kIrdOrdSize, pd.data(), n);
  return mpa::kIrdOrdSize + n;
}

}  // namespace

absl::Status Qp::ConnectLlp(ByteSpan private_data, uint64_t now_us) {
  if (llp_ == nullptr) return absl::FailedPreconditionError("QP runs over TCP: use Connect");
  if (state_ != QpState::kIdle) return absl::FailedPreconditionError("QP not idle");
  if (private_data.size() > mpa::kMaxPrivateDataLength - mpa::kIrdOrdSize) {
    return absl::InvalidArgumentError("private data longer than 512 bytes with IRD/ORD");
  }
  Impl& m = *impl_;
  uint8_t buf[mpa::kMaxPrivateDataLength];
  const size_t n = BuildLlpPd(options_.mpa.ird, options_.mpa.ord, private_data, buf);
  m.now_us = now_us;
  const LlpSendStatus st = llp_->Initiate(ByteSpan(buf, n));
  if (st != LlpSendStatus::kOk) {
    return absl::UnavailableError(st == LlpSendStatus::kWouldBlock ? "LLP has no send space"
                                                                   : "LLP refused the Initiate");
  }
  state_ = QpState::kAwaitReply;
  m.deadline_us = now_us + options_.mpa.reply_timeout_us;
  return absl::OkStatus();
}

void Qp::OnLlpInitiate(ByteSpan private_data) {
  Impl& m = *impl_;
  if (llp_ == nullptr) return;
  if (state_ != QpState::kIdle) {
    (void)llp_->Reject(ByteSpan());
    return;
  }
  state_ = QpState::kAwaitRequest;
  mpa::IrdOrd peer;
  if (private_data.size() > options_.mpa.max_private_data + mpa::kIrdOrdSize ||
      !GetIrdOrd(private_data, &peer)) {
    m.CopyPeerPd(private_data);
    (void)llp_->Reject(ByteSpan());
    m.fin_sent = true;  // the session never opened
    m.FailSetup(ConnectError::kInvalidStartupFrame, false);
    return;
  }
  m.CopyPeerPd(private_data.subspan(mpa::kIrdOrdSize));
  mpa::StartupFrame req;
  req.type = mpa::FrameType::kRequest;
  req.revision = 0;  // no MPA over this LLP
  req.ird_ord = peer;
  req.private_data = peer_private_data();
  const AcceptDecision d = observer_.OnConnectRequest(*this, req);
  const MpaParams& p = options_.mpa;
  neg_ = Negotiated{};
  neg_.enhanced = true;
  neg_.ird = p.ird;
  neg_.ord = peer.ird == mpa::kIrdOrdMax ? p.ord : std::min<uint16_t>(p.ord, peer.ird);
  uint8_t buf[mpa::kMaxPrivateDataLength];
  if (!d.accept) {
    const size_t n = std::min(d.private_data.size(), mpa::kMaxPrivateDataLength);
    if (n > 0) std::memcpy(buf, d.private_data.data(), n);
    (void)llp_->Reject(ByteSpan(buf, n));
    m.fin_sent = true;  // the session never opened
    m.FailSetup(ConnectError::kRejectedLocally, false);
    return;
  }
  const size_t n = BuildLlpPd(neg_.ird, neg_.ord, d.private_data, buf);
  if (llp_->Accept(ByteSpan(buf, n)) != LlpSendStatus::kOk) {
    m.FailSetup(ConnectError::kTcpFailed, true);
    return;
  }
  m.mulpdu = llp_->Mulpdu();
  state_ = QpState::kRts;
  m.tx_allowed = true;
  m.deadline_us = 0;
  m.deadline_pending = false;
  observer_.OnEstablished(*this, peer_private_data());
  m.Pump();
}

void Qp::OnLlpAccepted(ByteSpan private_data) {
  Impl& m = *impl_;
  if (state_ != QpState::kAwaitReply) return;
  mpa::IrdOrd peer;
  if (!GetIrdOrd(private_data, &peer)) {
    m.CopyPeerPd(private_data);
    m.FailSetup(ConnectError::kInvalidStartupFrame, true);
    return;
  }
  m.CopyPeerPd(private_data.subspan(mpa::kIrdOrdSize));
  const MpaParams& p = options_.mpa;
  neg_ = Negotiated{};
  neg_.enhanced = true;
  neg_.ird = p.ird;
  neg_.ord = peer.ird == mpa::kIrdOrdMax ? p.ord : std::min<uint16_t>(p.ord, peer.ird);
  m.mulpdu = llp_->Mulpdu();
  m.deadline_us = 0;
  m.deadline_pending = false;
  m.tx_allowed = true;
  state_ = QpState::kRts;
  // RFC 6581: our IRD must cover the ORD the responder announced.
  if (peer.ord != mpa::kIrdOrdMax && peer.ord > p.ird) {
    connect_error_ = ConnectError::kInsufficientIrd;
    m.SendTerminate(LlpCode(mpa::MpaError::kInsufficientIrd), nullptr, ByteSpan());
    return;
  }
  observer_.OnEstablished(*this, peer_private_data());
  m.Pump();
}

void Qp::OnLlpRejected(ByteSpan private_data) {
  Impl& m = *impl_;
  if (state_ != QpState::kAwaitReply) return;
  m.CopyPeerPd(private_data);
  m.fin_sent = true;  // the session never opened
  m.FailSetup(ConnectError::kRejected, false);
}

void Qp::OnLlpSegment(ByteSpan ddp_segment) { impl_->OnUlpdu(ddp_segment, Seq32(0)); }

void Qp::OnLlpEnded(LlpEnd how) { impl_->LlpGone(how); }

void Qp::OnConnected(tcp::ConnId conn) {
  if (conn != conn_) return;
  impl_->SendRequest();
}

size_t Qp::OnData(tcp::ConnId conn, uint64_t stream_offset, ByteSpan data) {
  (void)stream_offset;
  Impl& m = *impl_;
  if (conn != conn_) {
    stats_.rx_bytes_discarded += data.size();
    return data.size();
  }
  if (state_ == QpState::kAwaitRequest || state_ == QpState::kAwaitReply) {
    size_t frame_end = 0;
    mpa::StartupFrame f;
    mpa::FrameStatus st;
    const size_t take = m.FeedHandshake(data, &frame_end, &f, &st);
    if (st == mpa::FrameStatus::kNeedMoreBytes) return take;
    if (st != mpa::FrameStatus::kOk) {
      m.FailSetup(ConnectError::kInvalidStartupFrame, true);
      return data.size();
    }
    const size_t frame_size = m.hs_len - (take - frame_end);
    if (state_ == QpState::kAwaitRequest) {
      // RFC 5044 7.1.2 / INTEROP.md: the initiator sends nothing after its
      // Request until the Reply arrives.
      if (frame_end != data.size()) {
        m.FailSetup(ConnectError::kInvalidStartupFrame, true);
        return data.size();
      }
      m.OnRequest(f, frame_size);
      return data.size();
    }
    m.OnReply(f, frame_size);
    data = data.subspan(frame_end);
    if (data.empty() || !m.decoder.has_value()) return frame_end + data.size();
    m.decoder->Feed(data, m);
    m.CheckDecoder();
    return frame_end + data.size();
  }
  if (!m.decoder.has_value() || QpEnded(state_) || state_ == QpState::kTerminating) {
    stats_.rx_bytes_discarded += data.size();  // nothing is processed after a Terminate
    return data.size();
  }
  m.decoder->Feed(data, m);
  m.CheckDecoder();
  return data.size();
}

void Qp::OnPeerFin(tcp::ConnId conn) {
  if (conn != conn_) return;
  Impl& m = *impl_;
  switch (state_) {
    case QpState::kTcpConnecting:
    case QpState::kAwaitRequest:
    case QpState::kAwaitReply:
    case QpState::kAwaitRtr:
      m.FailSetup(ConnectError::kTcpFailed, false);
      return;
    case QpState::kRts:
      state_ = QpState::kClosing;
      m.Pump();
      return;
    default:
      if (!m.fin_sent) {
        stack_->Shutdown(conn_, m.now_us);
        m.fin_sent = true;
      }
      return;
  }
}

void Qp::OnSendSpace(tcp::ConnId conn, size_t space) {
  (void)space;
  if (conn != conn_) return;
  impl_->Pump();
}

void Qp::OnClosed(tcp::ConnId conn, tcp::CloseReason reason) {
  if (conn != conn_) return;
  Impl& m = *impl_;
  const QpState was = state_;
  // RFC 9293: a normal close means our FIN, and so every byte before it, was
  // acknowledged: Sends and Writes already sent complete successfully.
  if (reason == tcp::CloseReason::kNormal) m.CompleteSq(UINT64_MAX);
  conn_ = tcp::ConnId{};
  if (was == QpState::kTcpConnecting || was == QpState::kAwaitRequest ||
      was == QpState::kAwaitReply || was == QpState::kAwaitRtr) {
    m.FailSetup(ConnectError::kTcpFailed, false);
  }
  // RFC 5040 / 5041 6.2 graceful teardown: both FINs exchanged and
  // acknowledged, no Terminate, no RST: kClosed. Anything else: kError.
  QpEnd why = QpEnd::kAborted;
  switch (reason) {
    // An orderly TCP close that was no graceful close: a Terminate (its
    // cause recorded already) or an ended setup.
    case tcp::CloseReason::kNormal: why = QpEnd::kTerminate; break;
    case tcp::CloseReason::kResetByPeer: why = QpEnd::kReset; break;
    case tcp::CloseReason::kRefused: why = QpEnd::kSetupFailed; break;
    case tcp::CloseReason::kTimeout: why = QpEnd::kTimeout; break;
    case tcp::CloseReason::kAborted: why = QpEnd::kAborted; break;
  }
  m.Ended(reason == tcp::CloseReason::kNormal && m.GracefulEnd(was), why);
  observer_.OnDisconnected(*this);
}

bool Qp::Window(uint32_t qn, ddp::QueueWindow* out) const {
  const Impl& m = *impl_;
  switch (qn) {
    case rdmap::kQnSend:
      out->first_msn = m.rq_msn;
      out->posted = m.rq_count;
      out->depth = options_.rq_depth;
      return true;
    case rdmap::kQnReadRequest: {
      // RFC 5040 4.8 / RFC 6581: inbound Read Requests are bounded by our
      // IRD. A slot is taken from the Request until the peer acknowledged
      // the last byte of its Response.
      // (Acknowledged Responses are dropped here, on the Request's arrival:
      // the window is not otherwise observable state of the const Qp.)
      Impl& ring = *impl_;
      if (ring.rresp_sent_count > 0 && stack_ != nullptr) {
        const std::optional<uint64_t> acked = stack_->BytesAcked(conn_);
        while (acked.has_value() && ring.rresp_sent_count > 0 &&
               ring.rresp_sent_end[ring.rresp_sent_head] <= *acked) {
          ring.rresp_sent_head = (ring.rresp_sent_head + 1) % ring.rresp_cap;
          --ring.rresp_sent_count;
        }
      }
      const uint32_t taken = m.rresp_count + m.rresp_sent_count;
      out->first_msn = m.rreq_in_msn;
      out->posted = neg_.ird > taken ? neg_.ird - taken : 0;
      out->depth = neg_.ird;
      return true;
    }
    case rdmap::kQnTerminate:
      out->first_msn = m.term_in_msn;
      out->posted = 1;
      out->depth = 1;
      return true;
    default:
      return false;
  }
}

const ddp::UntaggedBuffer* Qp::Buffer(uint32_t qn, uint32_t index) const {
  const Impl& m = *impl_;
  switch (qn) {
    case rdmap::kQnSend:
      return &m.rq[(m.rq_head + index) % options_.rq_depth].ub;
    case rdmap::kQnReadRequest:
      return &m.rreq_buf;
    case rdmap::kQnTerminate:
      return &m.term_in_buf;
    default:
      return nullptr;
  }
}

// ---------------------------------------------------------------- Listener

absl::StatusOr<std::unique_ptr<Listener>> Listener::Create(tcp::TcpStack& stack,
                                                          uint32_t pool_capacity,
                                                          const MpaGateOptions& gate) {
  std::unique_ptr<Listener> l(new Listener(stack, pool_capacity));
  absl::StatusOr<std::unique_ptr<MpaGate>> g = MpaGate::Create(gate, stack, *l);
  if (!g.ok()) return g.status();
  l->gate_ = std::move(*g);
  return l;
}

Listener::Listener(tcp::TcpStack& stack, uint32_t pool_capacity)
    : stack_(stack), pool_(new Qp*[pool_capacity == 0 ? 1 : pool_capacity]),
      cap_(pool_capacity == 0 ? 1 : pool_capacity) {}

bool Listener::AddQp(Qp* qp) {
  if (count_ == cap_ || qp == nullptr) return false;
  pool_[(head_ + count_) % cap_] = qp;
  ++count_;
  return true;
}

GateDecision Listener::OnMpaRequest(tcp::ConnId conn, const tcp::FourTuple&,
                                    const mpa::StartupFrame&, ByteSpan frame) {
  while (count_ > 0) {
    Qp* qp = pool_[head_];
    head_ = (head_ + 1) % cap_;
    --count_;
    if (!qp->AttachPassive(conn)) continue;
    stack_.SetUser(conn, *qp);
    // The QP sees the Request as if it had just arrived and answers it.
    qp->OnData(conn, 0, frame);
    return GateDecision{.taken = true};
  }
  static constexpr std::string_view kWhy = "iwarpd: no QP free on this listener";
  return GateDecision{.taken = false,
                      .private_data = ByteSpan(reinterpret_cast<const uint8_t*>(kWhy.data()),
                                               kWhy.size())};
}

}  // namespace iwarp::engine
