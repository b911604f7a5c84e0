// iwarp/sctp_llp: the DDP/RDMAP engine (engine::Qp) over the DDP streams of
// one SCTP association (RFC 5043). SctpStreams is the association's
// DdpLlpEvents: it hands each DDP stream's session events and segments to the
// Qp bound to that stream and gives each Qp a SegmentLlp on its stream.
//
// Wire behaviour (RFC 5043): no MPA, no CRC, no Markers (SCTP's CRC32c
// covers every chunk); each DDP segment is one unordered DATA chunk sized to
// the association's MULPDU (RFC 5043 9); session Initiate / Accept carry the
// RFC 6581 IRD/ORD block in front of the application's private data (see
// SegmentLlp in iwarp/qp.h); a Terminate message is followed by the session
// Terminate (RFC 5043 6.2). Sends and Writes complete when SCTP's send
// buffer took their last segment: from there on SCTP delivers reliably or
// the association ends (and with it every stream, whose work is flushed).
//
// Use:
//   SctpStreams streams(association_config.streams);
//   auto assoc = sctp::DdpAssociation::Connect(host, conn, lport, rport, cfg, &streams);
//   streams.set_association(assoc->get());   // (passive: listener->Accept(&streams))
//   auto qp = streams.CreateQp(stream, options, memory, observer);
//   qp->ConnectLlp(private_data, now_us);    // or wait: passive by default
//   loop: host.Poll / Input; assoc->Service(); qp->Poll(now_us)
//
// Threading: everything on the core that owns the UsrsctpHost. A Qp must be
// destroyed before its SctpStreams. Destroy the QPs before the association,
// or call set_association(nullptr) first (their sends then fail and they go
// to kError).
//
// Passive side: an Initiate on a stream without a Qp is rejected (counted in
// initiates_refused()); create the responder's Qp on the stream before the
// peer initiates.
#ifndef IWARPD_IWARP_SCTP_LLP_H_
#define IWARPD_IWARP_SCTP_LLP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "iwarp/qp.h"
#include "sctp/ddp_session.h"

namespace iwarp::engine {

class SctpStreams final : public sctp::DdpLlpEvents {
 public:
  // `streams`: the association's DDP stream count (AssociationConfig::streams).
  explicit SctpStreams(uint16_t streams);
  ~SctpStreams() override;
  SctpStreams(const SctpStreams&) = delete;
  SctpStreams& operator=(const SctpStreams&) = delete;

  // The association the streams run on (null: none, sends fail).
  void set_association(sctp::DdpAssociation* association) { assoc_ = association; }
  sctp::DdpAssociation* association() const { return assoc_; }

  // Control path: a Qp on DDP stream `stream` (idle, passive until
  // ConnectLlp). One Qp per stream at a time; the association must be set
  // (its MULPDU sizes the segments and the transmit buffer).
  absl::StatusOr<std::unique_ptr<Qp>> CreateQp(uint16_t stream, const QpOptions& options,
                                               MemoryDomain& memory, QpObserver& observer);

  // Initiates on a stream without a Qp, refused (RFC 5043 6.3 Reject).
  uint64_t initiates_refused() const { return initiates_refused_; }

  // sctp::DdpLlpEvents.
  void OnAssociationDown() override;
  void OnInitiate(uint16_t stream, ByteSpan private_data) override;
  void OnAccepted(uint16_t stream, ByteSpan private_data) override;
  void OnRejected(uint16_t stream, ByteSpan private_data) override;
  void OnStreamEnded(uint16_t stream, sctp::StreamEnd why) override;
  void OnSegment(uint16_t stream, ByteSpan ddp_segment) override;

 private:
  class Stream;
  Qp* QpOn(uint16_t stream) const;

  sctp::DdpAssociation* assoc_ = nullptr;
  std::vector<std::unique_ptr<Stream>> streams_;
  uint64_t initiates_refused_ = 0;
};

}  // namespace iwarp::engine

#endif  // IWARPD_IWARP_SCTP_LLP_H_
