// MPA over TCP (RFC 5044, RFC 6581): connection setup (Request, Reply, RTR),
// FPDU framing on transmit (MpaTcpTx: CRC fused with the copy, Markers,
// zero-copy) and the FPDU decoder on receive; the TcpUser callbacks.
#include <algorithm>
#include <cstring>

#include "iwarp/qp_internal.h"

namespace iwarp::engine {

namespace {

// Below this a payload is copied even with zero_copy_tx: the copy costs
// less than the send descriptor and the completion callback it saves.
constexpr size_t kZeroCopyMinPayload = 512;

}  // namespace

class Qp::Impl::MpaTcpTx final : public Qp::Impl::TxLlp {
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

std::unique_ptr<Qp::Impl::TxLlp> Qp::Impl::NewMpaTcpTx(Impl& m) { return std::make_unique<MpaTcpTx>(m); }

void Qp::Impl::StartFullOperation(uint64_t rx_origin, uint64_t tx_origin) {
  const mpa::FpduConfig rx_cfg{qp.neg_.rx_markers, qp.neg_.crc,
                               Seq32(static_cast<uint32_t>(rx_origin))};
  decoder.emplace(rx_cfg, Seq32(static_cast<uint32_t>(rx_origin)), mpa::kMaxUlpduLength);
  tx_cfg = mpa::FpduConfig{qp.neg_.tx_markers, qp.neg_.crc,
                           Seq32(static_cast<uint32_t>(tx_origin))};
  const uint32_t emss_now = qp.stack_->Emss(qp.conn_);
  emss = emss_now == 0 ? 536 : emss_now;
  mulpdu = mpa::Mulpdu(emss, qp.neg_.tx_markers);
}

uint32_t Qp::Impl::MarkerMulpdu() const {
  uint32_t m = mpa::Mulpdu(emss, false);
  const Seq32 at(static_cast<uint32_t>(tx_off));
  while (m > mulpdu && mpa::FpduWireSize(m, at, tx_cfg) > emss) --m;
  return m;
}

bool Qp::Impl::CheckRtr(ByteSpan ulpdu) {
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

void Qp::Impl::SendFrame(const mpa::StartupFrame& f) {
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

void Qp::Impl::CheckDecoder() {
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

void Qp::Impl::SendRequest() {
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

size_t Qp::Impl::FeedHandshake(ByteSpan data, size_t* frame_end_in_data, mpa::StartupFrame* f,
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

void Qp::Impl::OnRequest(const mpa::StartupFrame& req, size_t frame_size) {
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

void Qp::Impl::OnReply(const mpa::StartupFrame& rep, size_t frame_size) {
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

size_t Qp::Impl::OnStream(ByteSpan data) {
  if (qp.state_ == QpState::kAwaitRequest || qp.state_ == QpState::kAwaitReply) {
    return OnStartupBytes(data);
  }
  if (!decoder.has_value() || QpEnded(qp.state_) || qp.state_ == QpState::kTerminating) {
    qp.stats_.rx_bytes_discarded += data.size();  // nothing is processed after a Terminate
    return data.size();
  }
  FeedFpdus(data);
  return data.size();
}

size_t Qp::Impl::OnStartupBytes(ByteSpan data) {
  size_t frame_end = 0;
  mpa::StartupFrame f;
  mpa::FrameStatus st;
  const size_t take = FeedHandshake(data, &frame_end, &f, &st);
  if (st == mpa::FrameStatus::kNeedMoreBytes) return take;
  if (st != mpa::FrameStatus::kOk) {
    FailSetup(ConnectError::kInvalidStartupFrame, true);
    return data.size();
  }
  const size_t frame_size = hs_len - (take - frame_end);
  if (qp.state_ == QpState::kAwaitRequest) {
    // RFC 5044 7.1.2 / INTEROP.md: the initiator sends nothing after its
    // Request until the Reply arrives.
    if (frame_end != data.size()) {
      FailSetup(ConnectError::kInvalidStartupFrame, true);
      return data.size();
    }
    OnRequest(f, frame_size);
    return data.size();
  }
  OnReply(f, frame_size);
  data = data.subspan(frame_end);
  if (data.empty() || !decoder.has_value()) return frame_end + data.size();
  FeedFpdus(data);
  return frame_end + data.size();
}

void Qp::Impl::FeedFpdus(ByteSpan data) {
  decoder->Feed(data, *this);
  CheckDecoder();
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

void Qp::OnConnected(tcp::ConnId conn) {
  if (conn != conn_) return;
  impl_->SendRequest();
}

size_t Qp::OnData(tcp::ConnId conn, uint64_t stream_offset, ByteSpan data) {
  (void)stream_offset;
  if (conn != conn_) {
    stats_.rx_bytes_discarded += data.size();
    return data.size();
  }
  return impl_->OnStream(data);
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

}  // namespace iwarp::engine
