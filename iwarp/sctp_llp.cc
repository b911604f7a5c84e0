#include "iwarp/sctp_llp.h"

#include <cstring>

namespace iwarp::engine {

// One DDP stream's SegmentLlp: joins header and payload into one chunk
// buffer (usrsctp takes one contiguous message per DATA chunk).
class SctpStreams::Stream final : public SegmentLlp {
 public:
  Stream(SctpStreams& owner, uint16_t id) : owner_(owner), id_(id) {}

  uint32_t Mulpdu() const override {
    return owner_.assoc_ == nullptr ? 0 : owner_.assoc_->mulpdu();
  }

  LlpSendStatus SendSegment(ByteSpan header, ByteSpan payload) override {
    const size_t n = header.size() + payload.size();
    if (owner_.assoc_ == nullptr || n > buf_size_) return LlpSendStatus::kError;
    if (!header.empty()) std::memcpy(buf_.get(), header.data(), header.size());
    if (!payload.empty()) std::memcpy(buf_.get() + header.size(), payload.data(), payload.size());
    return Map(owner_.assoc_->SendSegment(id_, ByteSpan(buf_.get(), n)));
  }
  LlpSendStatus Initiate(ByteSpan pd) override {
    return owner_.assoc_ == nullptr ? LlpSendStatus::kError : Map(owner_.assoc_->Initiate(id_, pd));
  }
  LlpSendStatus Accept(ByteSpan pd) override {
    return owner_.assoc_ == nullptr ? LlpSendStatus::kError : Map(owner_.assoc_->Accept(id_, pd));
  }
  LlpSendStatus Reject(ByteSpan pd) override {
    return owner_.assoc_ == nullptr ? LlpSendStatus::kError : Map(owner_.assoc_->Reject(id_, pd));
  }
  LlpSendStatus EndStream() override {
    return owner_.assoc_ == nullptr ? LlpSendStatus::kError : Map(owner_.assoc_->Terminate(id_));
  }
  void Detach() override { qp_ = nullptr; }

  void Bind(Qp* qp, size_t buf_size) {
    qp_ = qp;
    if (buf_size > buf_size_) {
      buf_ = std::make_unique<uint8_t[]>(buf_size);
      buf_size_ = buf_size;
    }
  }
  Qp* qp() const { return qp_; }

 private:
  static LlpSendStatus Map(sctp::SendResult r) {
    switch (r) {
      case sctp::SendResult::kOk: return LlpSendStatus::kOk;
      case sctp::SendResult::kWouldBlock: return LlpSendStatus::kWouldBlock;
      default: return LlpSendStatus::kError;
    }
  }

  SctpStreams& owner_;
  uint16_t id_;
  Qp* qp_ = nullptr;
  std::unique_ptr<uint8_t[]> buf_;
  size_t buf_size_ = 0;
};

SctpStreams::SctpStreams(uint16_t streams) {
  streams_.reserve(streams);
  for (uint16_t i = 0; i < streams; ++i) streams_.push_back(std::make_unique<Stream>(*this, i));
}

SctpStreams::~SctpStreams() = default;

absl::StatusOr<std::unique_ptr<Qp>> SctpStreams::CreateQp(uint16_t stream, const QpOptions& options,
                                                          MemoryDomain& memory,
                                                          QpObserver& observer) {
  if (stream >= streams_.size()) return absl::InvalidArgumentError("stream beyond the association's");
  if (assoc_ == nullptr) return absl::FailedPreconditionError("no association set");
  Stream& s = *streams_[stream];
  if (s.qp() != nullptr) return absl::AlreadyExistsError("stream already has a QP");
  absl::StatusOr<std::unique_ptr<Qp>> qp = Qp::CreateOnLlp(options, s, memory, observer);
  if (!qp.ok()) return qp.status();
  s.Bind(qp->get(), assoc_->mulpdu());
  return qp;
}

Qp* SctpStreams::QpOn(uint16_t stream) const {
  return stream < streams_.size() ? streams_[stream]->qp() : nullptr;
}

void SctpStreams::OnAssociationDown() {
  // Every stream with a session already saw OnStreamEnded(kAssociationDown);
  // idle QPs learn it here.
  for (auto& s : streams_) {
    if (s->qp() != nullptr) s->qp()->OnLlpEnded(LlpEnd::kFailed);
  }
}

void SctpStreams::OnInitiate(uint16_t stream, ByteSpan private_data) {
  Qp* qp = QpOn(stream);
  if (qp == nullptr) {
    ++initiates_refused_;
    if (assoc_ != nullptr) (void)assoc_->Reject(stream, ByteSpan());
    return;
  }
  qp->OnLlpInitiate(private_data);
}

void SctpStreams::OnAccepted(uint16_t stream, ByteSpan private_data) {
  if (Qp* qp = QpOn(stream)) qp->OnLlpAccepted(private_data);
}

void SctpStreams::OnRejected(uint16_t stream, ByteSpan private_data) {
  if (Qp* qp = QpOn(stream)) qp->OnLlpRejected(private_data);
}

void SctpStreams::OnStreamEnded(uint16_t stream, sctp::StreamEnd why) {
  // RFC 5043 6.2: a session Terminate, ours answered or the peer's, ends the
  // session in order (the QP decides whether that was a graceful close: no
  // RDMAP Terminate, its send queue drained); everything else is a failure.
  const LlpEnd how = why == sctp::StreamEnd::kClosed || why == sctp::StreamEnd::kPeerTerminate
                         ? LlpEnd::kOrderly
                         : LlpEnd::kFailed;
  if (Qp* qp = QpOn(stream)) qp->OnLlpEnded(how);
}

void SctpStreams::OnSegment(uint16_t stream, ByteSpan ddp_segment) {
  if (Qp* qp = QpOn(stream)) qp->OnLlpSegment(ddp_segment);
}

}  // namespace iwarp::engine
