// Internal to iwarp/: the state and the functions of one Qp (Qp::Impl),
// shared by the files of the engine, each named for its concern:
//   qp.cc        work requests, completions, flush, the QP's end (RFC 5040 5.5, 6.2)
//   qp_tx.cc     transmit: message selection, DDP segmentation, the TxLlp pump
//   qp_rx.cc     receive: one function per RDMAP opcode (RFC 5040 4.2), placement
//   qp_mpa.cc    MPA over TCP: setup (RFC 5044 7, RFC 6581), FPDU framing both ways
//   qp_llp.cc    a message-oriented SegmentLlp (RFC 5043): session setup, segments
// Not an API: applications and the data plane include iwarp/qp.h only.
// Functions declared `inline` here are per-segment work defined in, and
// called only from, the file of their section, so the compiler may inline
// them into their callers there.
#ifndef IWARPD_IWARP_QP_INTERNAL_H_
#define IWARPD_IWARP_QP_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "iwarp/qp.h"

namespace iwarp::engine {

// Largest FPDU we ever build: a whole maximum ULPDU with its worst-case
// Markers (RFC 5044 3, 4.3).
inline constexpr size_t kTxScratchSize =
    mpa::FpduSizeWithoutMarkers(mpa::kMaxUlpduLength) +
    mpa::kMarkerSize * (mpa::kMaxUlpduLength / mpa::kMarkerInterval + 3);
inline constexpr size_t kHandshakeBufSize = mpa::kStartupHeaderSize + mpa::kMaxPrivateDataLength;
// RFC 6581: RTR frames carry a non-zero STag (siw uses 1; cxgb4 rejects 0).
inline constexpr uint32_t kRtrStag = 1;

// MPA error as a Terminate code point: Layer LLP, EType 0 (MPA), the RFC 5044
// section 8 / RFC 6581 error code.
inline rdmap::TerminateCode LlpCode(mpa::MpaError e) {
  return rdmap::TerminateCode{rdmap::kLayerLlp, 0, static_cast<uint8_t>(e)};
}

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
  // The transmit LLP of this Qp: MpaTcpTx (qp_mpa.cc) over TCP, SegmentTx
  // (qp_llp.cc) over a SegmentLlp.
  class MpaTcpTx;
  class SegmentTx;
  static std::unique_ptr<TxLlp> NewMpaTcpTx(Impl& m);
  static std::unique_ptr<TxLlp> NewSegmentTx(Impl& m);
  void SetTx();

  // ---- completions, local memory, the QP's end (qp.cc)
  void PushCompletion(const Completion& c) {
    if (cq_count == qp.options_.cq_depth) {
      ++qp.stats_.cq_overflow;
      return;
    }
    cq[(cq_head + cq_count) % qp.options_.cq_depth] = c;
    ++cq_count;
  }
  // Records why the QP ends; the first cause stays.
  void SetEnd(QpEnd e) {
    if (qp.end_ == QpEnd::kNone) qp.end_ = e;
  }
  static WcOpcode WcFor(WrOpcode op);
  // RFC 5040 5.5: completions in posting order. Sends and Writes complete
  // once TCP acknowledged their last byte; Reads once the Response is placed.
  void CompleteSq(uint64_t acked);
  void CompleteRq();
  // Everything outstanding ends with `status` (flush on close or Terminate).
  // Work already acknowledged completes normally first. With `failed` set,
  // the oldest unfinished send work request (the one the peer's Terminate
  // answers, RFC 5040 5.5 ordering) gets `failed_status` and the Terminate
  // code; the rest gets `status`.
  void FlushAll(WcStatus status, const rdmap::TerminateCode* failed = nullptr,
                WcStatus failed_status = WcStatus::kFlushed);
  // The bytes of a local SGE, or empty with *status set.
  MutableByteSpan ResolveLocal(const LocalSge& sge, uint8_t need_access, WcStatus* status);
  // Whether the connection, now over, ended as a graceful close: from Full
  // Operation or Closing, with no Terminate either way and no Abort().
  bool GracefulEnd(QpState was) const;
  // The connection is over: the terminal state (kClosed when `graceful`,
  // else kError with `why` unless a cause was recorded before), then
  // everything still outstanding is flushed (RFC 5040 6.2: in both cases).
  void Ended(bool graceful, QpEnd why);
  void FailSetup(ConnectError e, bool abort);
  void CopyPeerPd(ByteSpan pd);

  // ---- transmit (qp_tx.cc)
  // Resolves every non-empty SGE of a Send/Write source into cur_src (or, for
  // at most one, into cur_payload with cur_src_n = 0: the single-buffer path).
  // False with *status set when one fails its check or the sum exceeds a DDP
  // message (RFC 5041 5.2: < 2^32 bytes).
  bool ResolveSource(const SgeList& l, WcStatus* status);
  // The payload of the segment at message offset `off`, `len` bytes, of the
  // current message: a slice of one SGE, or gathered into `gather` when it
  // straddles SGEs. Segments come in message order, so src_i only advances.
  inline ByteSpan SourceSlice(uint32_t off, uint32_t len);
  // Queues a Terminate (RFC 5040 Terminate message on QN 2) reporting `code`;
  // `v`/`segment` (optional) supply the offending headers. Ends all work.
  void SendTerminate(const rdmap::TerminateCode& code, const rdmap::SegmentVerdict* v,
                     ByteSpan segment);
  // RFC 5040 4.4: the Read Request `rr` becomes the current message (QN 1,
  // the next outbound Read Request MSN) and `o` takes an ORD slot until its
  // Read Response is placed.
  void StartReadRequest(const rdmap::ReadRequest& rr, const OutRead& o);
  // Picks the next outbound message. False when there is none (or the SQ is
  // stalled on ORD).
  bool StartNext();
  void FinishMessage();
  // Segments the current message to the LLP's MULPDU and hands the segments
  // over until nothing is left or the LLP is full.
  void Pump();

  // ---- receive (qp_rx.cc)
  void OnUlpdu(ByteSpan ulpdu, Seq32) override;
  // Whether `ulpdu` is an untagged RDMAP Terminate on QN 2 (RFC 5040 5.4).
  static bool IsTerminate(ByteSpan ulpdu);
  inline void Place(MutableByteSpan dst, uint64_t offset, ByteSpan payload);
  // Tagged placement of a checked segment's payload at its region offset.
  // False when the region's mapping is shorter than the STag table said
  // (our fault, never the peer's): the stream ends with a Terminate.
  inline bool PlaceTagged(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu);
  // RFC 5041 5.3: untagged placement of `payload` at message offset `offset`
  // into the receive buffer `e` (the concatenation of its SGEs). Every SGE
  // touched is checked first; false (e.status set) when one fails.
  bool PlaceUntagged(RqEntry& e, uint64_t offset, ByteSpan payload);
  // RFC 5040 4.2 / 5041 7.1: checks one DDP segment (CheckSegment) and hands
  // it to the handler of its RDMAP opcode (kRxByOpcode), or answers it with
  // a Terminate.
  void HandleSegment(ByteSpan ulpdu);
  // The handler of one RDMAP opcode: `v` passed CheckSegment, `payload` is
  // the segment after its DDP header, `ulpdu` the whole segment (quoted in a
  // Terminate).
  using RxHandler = void (Impl::*)(const rdmap::SegmentVerdict& v, ByteSpan payload,
                                   ByteSpan ulpdu);
  static constexpr size_t kRdmapOpcodes = 8;  // RFC 5040 4.2: 0x0..0x7 defined
  static const RxHandler kRxByOpcode[kRdmapOpcodes];
  void RxRdmaWrite(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu);
  void RxReadRequest(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu);
  void RxReadResponse(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu);
  void RxSend(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu);
  void RxSendInvalidate(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu);
  void RxSendSe(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu);
  void RxSendSeInvalidate(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu);
  void RxTerminate(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu);
  // RFC 5041 5.3 untagged placement into the posted receive of the Send's
  // MSN; on the last segment the Send (with Invalidate: RFC 5040 6.3.1, with
  // Solicited Event: kWcSolicited) completes in MSN order.
  void ReceiveSend(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu,
                   bool invalidate, bool solicited);

  // ---- MPA over TCP (qp_mpa.cc)
  void StartFullOperation(uint64_t rx_origin, uint64_t tx_origin);
  // RFC 5044 4.5 with Markers: the largest ULPDU whose FPDU, with the
  // Markers that fall into it at the current stream position, fills the
  // EMSS exactly. The worst-case MULPDU leaves segments short of the MSS,
  // and short segments do not trigger the receiver's every-second-segment
  // ACK (RFC 5681 4.2), which throttles the stream to the delayed-ACK timer.
  inline uint32_t MarkerMulpdu() const;
  // RFC 6581: the responder's first FPDU must be the agreed RTR. Returns true
  // when `ulpdu` should still be processed as a normal segment.
  bool CheckRtr(ByteSpan ulpdu);
  void SendFrame(const mpa::StartupFrame& f);
  // After the FPDU decoder stopped on an error: count it and end the stream
  // with a Terminate. RFC 5044 8: CRC and Marker errors are reported as MPA
  // (LLP layer) errors. An FPDU longer than we accept (kUlpduTooLong) has no
  // MPA code and cannot be delimited or checked: DDP Local Catastrophic
  // (RFC 5041 7.2, Layer 1 / Type 0 / Code 0), the stream being unusable.
  inline void CheckDecoder();
  void SendRequest();
  // Buffers startup-frame bytes of `data` and decodes the frame expected in
  // this state; returns the bytes of `data` taken, *status the decoder's
  // verdict and, when kOk, *frame_end_in_data where the frame ends in `data`.
  size_t FeedHandshake(ByteSpan data, size_t* frame_end_in_data, mpa::StartupFrame* f,
                       mpa::FrameStatus* status);
  void OnRequest(const mpa::StartupFrame& req, size_t frame_size);
  void OnReply(const mpa::StartupFrame& rep, size_t frame_size);
  // The in-order TCP payload of the connection (TcpUser::OnData): the
  // startup frame while setup waits for it (RFC 5044 7.1), FPDUs from Full
  // Operation on (RFC 5044 4); nothing after a Terminate or failure (counted
  // as rx_bytes_discarded). Returns the bytes of `data` consumed.
  inline size_t OnStream(ByteSpan data);
  // The MPA Request or Reply: decoded, answered or checked; the bytes after
  // a Reply are the first FPDUs.
  size_t OnStartupBytes(ByteSpan data);
  // FPDUs to the decoder, which hands each ULPDU to OnUlpdu; a decoder error
  // ends the stream (CheckDecoder).
  inline void FeedFpdus(ByteSpan data);

  // ---- over a SegmentLlp (qp_llp.cc)
  // The LLP session is over (ended, or refused a send for good).
  void LlpGone(LlpEnd how);
};

}  // namespace iwarp::engine

#endif  // IWARPD_IWARP_QP_INTERNAL_H_
