// Work requests, completions (RFC 5040 5.5), flush and the end of a QP
// (RFC 5040 6.2); Qp construction. The per-concern files are listed in
// qp_internal.h.
#include "iwarp/qp.h"

#include <algorithm>
#include <cstring>

#include "iwarp/qp_internal.h"

namespace iwarp::engine {

std::string_view QpStateName(QpState s) {
  using Enum = QpState;
  switch (s) { IWARP_QP_STATES(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

std::string_view QpEndName(QpEnd e) {
  using Enum = QpEnd;
  switch (e) { IWARP_QP_ENDS(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

std::string_view ConnectErrorName(ConnectError e) {
  using Enum = ConnectError;
  switch (e) { IWARP_CONNECT_ERRORS(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

// ---------------------------------------------------------------- Impl
// ---------------------------------------------------------------- Impl: completions, memory, end

WcOpcode Qp::Impl::WcFor(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite: return WcOpcode::kRdmaWrite;
    case WrOpcode::kRdmaRead: return WcOpcode::kRdmaRead;
    default: return WcOpcode::kSend;
  }
}

void Qp::Impl::CompleteSq(uint64_t acked) {
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

void Qp::Impl::CompleteRq() {
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

void Qp::Impl::FlushAll(WcStatus status, const rdmap::TerminateCode* failed,
                        WcStatus failed_status) {
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

MutableByteSpan Qp::Impl::ResolveLocal(const LocalSge& sge, uint8_t need_access, WcStatus* status) {
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

bool Qp::Impl::GracefulEnd(QpState was) const {
  return (was == QpState::kRts || was == QpState::kClosing) && !aborted &&
         !qp.term_sent_.has_value() && !qp.term_received_.has_value();
}

void Qp::Impl::Ended(bool graceful, QpEnd why) {
  if (QpEnded(qp.state_)) return;
  qp.state_ = graceful ? QpState::kClosed : QpState::kError;
  SetEnd(graceful ? QpEnd::kClosed : why);
  FlushAll(WcStatus::kFlushed);
}

void Qp::Impl::FailSetup(ConnectError e, bool abort) {
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

void Qp::Impl::CopyPeerPd(ByteSpan pd) {
  qp.peer_pd_len_ = std::min(pd.size(), sizeof(qp.peer_pd_));
  if (qp.peer_pd_len_ > 0) std::memcpy(qp.peer_pd_, pd.data(), qp.peer_pd_len_);
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

}  // namespace iwarp::engine
