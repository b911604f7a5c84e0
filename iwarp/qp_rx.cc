// Receive: whole DDP segments from either LLP, checked by rdmap::CheckSegment
// (RFC 5041 7.1, RFC 5040 4.2), then handled by one function per RDMAP
// opcode, dispatched through a table indexed by the opcode; placement.
#include <algorithm>
#include <cstring>
#include <iterator>

#include "iwarp/qp_internal.h"

namespace iwarp::engine {

namespace {

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

void Qp::Impl::OnUlpdu(ByteSpan ulpdu, Seq32) {
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

bool Qp::Impl::IsTerminate(ByteSpan ulpdu) {
  ddp::DdpHeader h;
  rdmap::Opcode op;
  return ddp::ParseHeader(ulpdu, &h) == ddp::HeaderStatus::kOk && !h.tagged &&
         h.qn == rdmap::kQnTerminate &&
         rdmap::ParseControl(h.rsvd_ulp0, &op) == rdmap::ControlStatus::kOk &&
         op == rdmap::Opcode::kTerminate;
}

void Qp::Impl::Place(MutableByteSpan dst, uint64_t offset, ByteSpan payload) {
  if (payload.empty()) return;  // zero-length segments place nothing (and may carry null)
  std::memcpy(dst.data() + offset, payload.data(), payload.size());
  qp.stats_.bytes_placed += payload.size();
}

bool Qp::Impl::PlaceTagged(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu) {
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

bool Qp::Impl::PlaceUntagged(RqEntry& e, uint64_t offset, ByteSpan payload) {
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

// RFC 5040 4.2: the handler of each RDMAP opcode, at the index of its value.
// CheckSegment accepts only these eight (0x8..0xF are reserved), so every
// opcode of an accepted segment has an entry.
const Qp::Impl::RxHandler Qp::Impl::kRxByOpcode[kRdmapOpcodes] = {
    &Qp::Impl::RxRdmaWrite,          // 0x0 RDMA Write
    &Qp::Impl::RxReadRequest,        // 0x1 RDMA Read Request
    &Qp::Impl::RxReadResponse,       // 0x2 RDMA Read Response
    &Qp::Impl::RxSend,               // 0x3 Send
    &Qp::Impl::RxSendInvalidate,     // 0x4 Send with Invalidate
    &Qp::Impl::RxSendSe,             // 0x5 Send with Solicited Event
    &Qp::Impl::RxSendSeInvalidate,   // 0x6 Send with Solicited Event and Invalidate
    &Qp::Impl::RxTerminate,          // 0x7 Terminate
};
static_assert(static_cast<size_t>(rdmap::Opcode::kRdmaWrite) == 0x0 &&
              static_cast<size_t>(rdmap::Opcode::kReadRequest) == 0x1 &&
              static_cast<size_t>(rdmap::Opcode::kReadResponse) == 0x2 &&
              static_cast<size_t>(rdmap::Opcode::kSend) == 0x3 &&
              static_cast<size_t>(rdmap::Opcode::kSendInvalidate) == 0x4 &&
              static_cast<size_t>(rdmap::Opcode::kSendSe) == 0x5 &&
              static_cast<size_t>(rdmap::Opcode::kSendSeInvalidate) == 0x6 &&
              static_cast<size_t>(rdmap::Opcode::kTerminate) == 0x7);

void Qp::Impl::HandleSegment(ByteSpan ulpdu) {
  rdmap::RxContext ctx;
  ctx.stream = ddp::StreamIdentity{qp.options_.pd, qp.options_.stream_id};
  ctx.stags = &qp.memory_.stags();
  ctx.queues = &qp;
  const rdmap::SegmentVerdict v = rdmap::CheckSegment(ulpdu, ctx);
  if (!v.ok) {
    SendTerminate(v.error, &v, ulpdu);
    return;
  }
  static_assert(kRdmapOpcodes == static_cast<size_t>(rdmap::Opcode::kTerminate) + 1);
  const size_t op = static_cast<size_t>(v.opcode);
  if (op >= kRdmapOpcodes) {  // never: CheckSegment accepts no reserved opcode
    ++qp.stats_.local_errors;
    return;
  }
  (this->*kRxByOpcode[op])(v, ulpdu.subspan(v.header.size()), ulpdu);
}

// RFC 5040 4.3: tagged placement at the sink STag / TO.
void Qp::Impl::RxRdmaWrite(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu) {
  if (!PlaceTagged(v, payload, ulpdu)) return;
  if (v.header.last) {
    // The LLP delivers in order, so every earlier segment of this
    // Write is placed too (a zero-length Write counts as well).
    ++qp.stats_.messages_in;
    ++qp.stats_.writes_placed;
  }
}

// RFC 5040 4.4: a Read Request queues a Read Response from the named source.
void Qp::Impl::RxReadRequest(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu) {
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
}

// RFC 5040 4.4: Read Responses answer our Read Requests in order.
void Qp::Impl::RxReadResponse(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu) {
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
}

void Qp::Impl::RxSend(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu) {
  ReceiveSend(v, payload, ulpdu, /*invalidate=*/false, /*solicited=*/false);
}

void Qp::Impl::RxSendInvalidate(const rdmap::SegmentVerdict& v, ByteSpan payload,
                                ByteSpan ulpdu) {
  ReceiveSend(v, payload, ulpdu, /*invalidate=*/true, /*solicited=*/false);
}

void Qp::Impl::RxSendSe(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu) {
  ReceiveSend(v, payload, ulpdu, /*invalidate=*/false, /*solicited=*/true);
}

void Qp::Impl::RxSendSeInvalidate(const rdmap::SegmentVerdict& v, ByteSpan payload,
                                  ByteSpan ulpdu) {
  ReceiveSend(v, payload, ulpdu, /*invalidate=*/true, /*solicited=*/true);
}

void Qp::Impl::ReceiveSend(const rdmap::SegmentVerdict& v, ByteSpan payload, ByteSpan ulpdu,
                           bool invalidate, bool solicited) {
  const uint32_t slot = static_cast<uint32_t>(v.placement.handle);
  RqEntry& e = rq[slot];
  if (!payload.empty() && !PlaceUntagged(e, v.placement.offset, payload)) {
    ++qp.stats_.local_errors;
    SendTerminate(rdmap::codes::kLocalCatastrophic, &v, ulpdu);
    return;
  }
  if (!v.header.last) return;
  if (invalidate) {
    // RFC 5040 6.3.1: invalidate before the completion is reported.
    if (qp.memory_.InvalidateRemote(v.header.rsvd_ulp1, qp.options_.pd) != ddp::StagStatus::kOk) {
      SendTerminate(rdmap::codes::kProtectionCannotInvalidate, &v, ulpdu);
      return;
    }
    e.flags |= kWcWithInvalidate;
    e.invalidated_stag = v.header.rsvd_ulp1;
  }
  if (solicited) e.flags |= kWcSolicited;
  // RFC 5041 5.4: the message length is MO + length of the last segment.
  e.byte_len = static_cast<uint32_t>(v.header.mo + payload.size());
  e.done = true;
  ++qp.stats_.messages_in;
  CompleteRq();  // RFC 5041 5.3: delivered in MSN order
}

// RFC 5040 5.4 / 6: the peer's Terminate ends the stream; the oldest
// unfinished work request reports it.
void Qp::Impl::RxTerminate(const rdmap::SegmentVerdict&, ByteSpan payload, ByteSpan) {
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

}  // namespace iwarp::engine
