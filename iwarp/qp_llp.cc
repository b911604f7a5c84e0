// The engine over a message-oriented LLP (RFC 5043, SCTP through
// iwarp/sctp_llp.h): session setup with the RFC 6581 IRD/ORD block, one DDP
// segment per message (SegmentTx), the session's end.
#include <algorithm>
#include <cstring>

#include "iwarp/qp_internal.h"

namespace iwarp::engine {

class Qp::Impl::SegmentTx final : public Qp::Impl::TxLlp {
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

std::unique_ptr<Qp::Impl::TxLlp> Qp::Impl::NewSegmentTx(Impl& m) { return std::make_unique<SegmentTx>(m); }

void Qp::Impl::LlpGone(LlpEnd how) {
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

}  // namespace iwarp::engine
