#include "appif/loopback_engine.h"

#include <errno.h>

#include <algorithm>
#include <cstring>

#include "appif/wake_pipe.h"

namespace iwarp::appif {

namespace {

// RFC 5040 7.4.1 code for a Read Request whose source failed the RFC 5041
// tagged checks (RDMAP reports them as remote protection errors).
rdmap::TerminateCode ReadSourceCode(ddp::DdpError e) {
  switch (e) {
    case ddp::DdpError::kTaggedBaseBounds: return rdmap::codes::kBaseBounds;
    case ddp::DdpError::kTaggedStagNotAssociated: return rdmap::codes::kStagNotAssociated;
    case ddp::DdpError::kTaggedToWrap: return rdmap::codes::kToWrap;
    default: return rdmap::codes::kInvalidStag;
  }
}

bool IsWriteOpcode(uint8_t op) { return op == static_cast<uint8_t>(WrOpcode::kRdmaWrite); }
bool IsReadOpcode(uint8_t op) { return op == static_cast<uint8_t>(WrOpcode::kRdmaRead); }
bool IsInvalidateOpcode(uint8_t op) {
  return op == static_cast<uint8_t>(WrOpcode::kSendInvalidate) ||
         op == static_cast<uint8_t>(WrOpcode::kSendSeInvalidate);
}
bool IsSolicitedOpcode(uint8_t op) {
  return op == static_cast<uint8_t>(WrOpcode::kSendSe) ||
         op == static_cast<uint8_t>(WrOpcode::kSendSeInvalidate);
}

struct Segment {
  uint8_t* ptr;
  uint32_t length;
};

// Resolves an SG list against regions of `pd` (local access, RFC 5042 5.1:
// the lkey's region must belong to the QP's PD). Returns kSuccess and fills
// `segs` (zero-length SGEs skipped) and `total`.
WcStatus ResolveLocal(const ddp::FixedStagTable& stags, uint32_t pd, const Sge* sge,
                      uint32_t num_sge, uint8_t need, Segment* segs, uint32_t* nsegs,
                      uint64_t* total) {
  *nsegs = 0;
  *total = 0;
  for (uint32_t i = 0; i < num_sge; ++i) {
    if (sge[i].length == 0) continue;
    const ddp::TaggedRegion* r = stags.Find(sge[i].lkey);
    if (ddp::CheckRegion(r, sge[i].lkey, sge[i].addr, sge[i].length, {pd, ddp::kAnyStream}) !=
        ddp::DdpError::kNone) {
      return WcStatus::kLocalProtection;
    }
    if ((r->access & need) != need) return WcStatus::kLocalProtection;
    auto* mr = reinterpret_cast<SessionServer::Mr*>(static_cast<uintptr_t>(r->handle));
    segs[*nsegs] = {mr->map.data() + (sge[i].addr - r->base_to), sge[i].length};
    ++*nsegs;
    *total += sge[i].length;
  }
  return WcStatus::kSuccess;
}

// Copies the gather list into the scatter list; both hold `total` bytes or
// the scatter list more.
void CopySg(const Segment* src, uint32_t nsrc, const Segment* dst, uint32_t ndst) {
  uint32_t si = 0, so = 0, di = 0, dof = 0;
  while (si < nsrc && di < ndst) {
    const uint32_t n = std::min(src[si].length - so, dst[di].length - dof);
    // memmove: both sides may map the same memfd.
    std::memmove(dst[di].ptr + dof, src[si].ptr + so, n);
    so += n;
    dof += n;
    if (so == src[si].length) { ++si; so = 0; }
    if (dof == dst[di].length) { ++di; dof = 0; }
  }
}

}  // namespace

LoopbackEngine::LoopbackEngine(ddp::FixedStagTable& stags, Counters& counters)
    : stags_(stags), counters_(counters) {
  touched_cqs_.reserve(1024);
}

// ---- connection management -------------------------------------------------------

void LoopbackEngine::Request(Qp* initiator, uint32_t request_id, const Listener& target,
                             const ConnectReq& r) {
  initiator->state = QpState::kConnecting;
  initiator->request_id = request_id;
  Event ev;
  ev.type = static_cast<uint32_t>(EventType::kConnectRequest);
  ev.listener_id = target.id;
  ev.request_id = request_id;
  ev.private_data_len = r.private_data_len;
  std::memcpy(ev.private_data, r.private_data, r.private_data_len);
  ev.peer_ip = 0x7f000001;  // loopback: a process on this host
  ev.peer_port = static_cast<uint16_t>(initiator->id);
  PostEvent(counters_, target.owner, ev);
}

void LoopbackEngine::Establish(Qp* qp, Qp* init, const AcceptReq& r) {
  for (Cq* cq : {qp->scq, qp->rcq, init->scq, init->rcq}) cq->loopback_bound = true;
  init->request_id = 0;
  qp->peer = init;
  init->peer = qp;
  qp->state = QpState::kConnected;
  init->state = QpState::kConnected;
  Add(counters_.connections, 1);
  Event ev;
  ev.type = static_cast<uint32_t>(EventType::kEstablished);
  ev.qp_id = qp->id;
  PostEvent(counters_, qp->owner, ev);
  ev.qp_id = init->id;
  ev.private_data_len = r.private_data_len;
  std::memcpy(ev.private_data, r.private_data, r.private_data_len);
  PostEvent(counters_, init->owner, ev);
}

void LoopbackEngine::Reject(Qp* init, const RejectReq& r) {
  init->request_id = 0;
  init->state = QpState::kIdle;
  Event ev;
  ev.type = static_cast<uint32_t>(EventType::kRejected);
  ev.qp_id = init->id;
  ev.reason = ECONNREFUSED;
  ev.private_data_len = r.private_data_len;
  std::memcpy(ev.private_data, r.private_data, r.private_data_len);
  PostEvent(counters_, init->owner, ev);
}

void LoopbackEngine::Refuse(Qp* init) {
  init->state = QpState::kIdle;
  init->request_id = 0;
  Event ev;
  ev.type = static_cast<uint32_t>(EventType::kConnectError);
  ev.qp_id = init->id;
  ev.reason = ECONNREFUSED;
  PostEvent(counters_, init->owner, ev);
}

void LoopbackEngine::Detach(Qp* qp) {
  if (qp->peer == nullptr) return;
  Qp* peer = qp->peer;
  peer->peer = nullptr;
  // RFC 5040 5.5: the stream ends; the survivor flushes what it had queued.
  EndConnected(peer, ECONNRESET);
}

void LoopbackEngine::EndConnected(Qp* q, int reason) {
  if (q == nullptr || q->state != QpState::kConnected) return;
  q->state = QpState::kError;  // flushes what is still queued
  Event ev;
  ev.type = static_cast<uint32_t>(EventType::kDisconnected);
  ev.qp_id = q->id;
  ev.reason = reason;
  PostEvent(counters_, q->owner, ev);
}

// ---- completions ---------------------------------------------------------------------

bool LoopbackEngine::PostCqe(Cq* cq, const Cqe& cqe) {
  if (!cq->ring.Push(cqe)) return false;
  if (!cq->touched) {
    cq->touched = true;
    touched_cqs_.push_back(cq);  // capacity reserved: no allocation in steady state
  }
  return true;
}

void LoopbackEngine::WakeCq(Cq* cq) {
  if (cq->ring.TakeWakeRequest()) RingWakePipe(cq->eventfd.get());
}

// A loopback RDMA Write was placed into `qp`'s memory: as the worker does for
// wire QPs (WireEngine::PublishWrites), count it in the notify block and ring
// the receive CQ's eventfd if the application sleeps on it.
void LoopbackEngine::PublishWrite(Qp* qp) {
  if (PublishPlacedWrites(qp->notify, ++qp->writes_placed)) RingWakePipe(qp->rcq->eventfd.get());
}

// ---- data path ----------------------------------------------------------------------

// The Terminate triple the failing operation reports. The initiating QP gets
// a CQE carrying it; both QPs go to the error state and flush (RFC 5040 5.5
// and 7: a Terminate ends the stream).
void LoopbackEngine::FailQps(Qp* qp, ddp::DdpError, const rdmap::TerminateCode& code, int reason) {
  Qp* peer = qp->peer;
  for (Qp* q : {qp, peer}) {
    if (q == nullptr || q->state == QpState::kError) continue;
    q->state = QpState::kError;
    Event ev;
    ev.type = static_cast<uint32_t>(EventType::kQpError);
    ev.qp_id = q->id;
    ev.reason = reason;
    ev.term_layer = code.layer;
    ev.term_etype = code.etype;
    ev.term_code = code.code;
    PostEvent(counters_, q->owner, ev);
  }
}

void LoopbackEngine::Disconnect(Qp* qp, int reason) {
  Qp* peer = qp->peer;
  EndConnected(qp, reason);
  EndConnected(peer, reason);
}

bool LoopbackEngine::ExecuteSqe(Qp* qp, const Sqe& sqe) {
  Qp* peer = qp->peer;
  Cqe cqe;
  cqe.wr_id = sqe.wr_id;
  cqe.qp_id = qp->id;
  const uint8_t op = sqe.opcode;
  cqe.opcode = static_cast<uint8_t>(IsWriteOpcode(op)  ? WcOpcode::kRdmaWrite
                                    : IsReadOpcode(op) ? WcOpcode::kRdmaRead
                                                       : WcOpcode::kSend);
  const bool signaled = (sqe.flags & kWrSignaled) != 0;
  // Room for our completion (and the peer's receive completion) first, so an
  // executed request always completes. A full CQ holds the SQ back.
  const bool is_send = !IsWriteOpcode(op) && !IsReadOpcode(op);
  const int64_t own_free = qp->scq->ring.FreeSlots();
  const int64_t peer_free = is_send ? peer->rcq->ring.FreeSlots() : 2;
  if (own_free < 0 || peer_free < 0) {
    // An application wrote an impossible CQ index: its CQ can take nothing
    // more, so the stream ends rather than stalling the other side forever.
    Add(counters_.ring_corruptions, 1);
    FailQps(qp, ddp::DdpError::kNone, rdmap::codes::kCatastrophicStream, EPROTO);
    return true;
  }
  if (own_free < 2 || peer_free < 2) return false;

  auto fail_local = [&](WcStatus st) {
    cqe.status = static_cast<uint8_t>(st);
    PostCqe(qp->scq, cqe);
    Add(counters_.wrs_failed, 1);
    // A local error ends the stream as well (RFC 5040 7: local catastrophic).
    FailQps(qp, ddp::DdpError::kNone, rdmap::codes::kLocalCatastrophic, EIO);
    return true;
  };
  auto fail_remote = [&](WcStatus st, const rdmap::TerminateCode& code) {
    cqe.status = static_cast<uint8_t>(st);
    cqe.term_layer = code.layer;
    cqe.term_etype = code.etype;
    cqe.term_code = code.code;
    PostCqe(qp->scq, cqe);
    Add(counters_.wrs_failed, 1);
    FailQps(qp, ddp::DdpError::kNone, code, EREMOTEIO);
    return true;
  };

  if (op >= kNumWrOpcodes || sqe.num_sge > kMaxSge) return fail_local(WcStatus::kLocalQpOperation);

  Segment local[kMaxSge];
  uint32_t nlocal = 0;
  uint64_t total = 0;
  if (IsReadOpcode(op)) {
    // Sink of a Read: local write, and remote write as iWARP requires of a
    // Read sink (RFC 5040 4.4; verbs on iWARP devices ask for it).
    const WcStatus st = ResolveLocal(stags_, qp->pd, sqe.sge, sqe.num_sge,
                                     ddp::kAccessLocalWrite | ddp::kAccessRemoteWrite, local,
                                     &nlocal, &total);
    if (st != WcStatus::kSuccess) return fail_local(st);
  } else {
    const WcStatus st =
        ResolveLocal(stags_, qp->pd, sqe.sge, sqe.num_sge, 0, local, &nlocal, &total);
    if (st != WcStatus::kSuccess) return fail_local(st);
  }
  if (total > UINT32_MAX) return fail_local(WcStatus::kLocalLength);
  cqe.byte_len = static_cast<uint32_t>(total);
  const ddp::StreamIdentity peer_stream{peer->pd, ddp::kAnyStream};

  if (IsWriteOpcode(op) || IsReadOpcode(op)) {
    if (total > 0) {
      // RFC 5041 7.1 tagged checks at the data sink (Write) / RFC 5040 4.4
      // source checks at the Read responder; then the RFC 5040 access right.
      const ddp::TaggedRegion* r = stags_.Find(sqe.rkey);
      const ddp::DdpError e = ddp::CheckRegion(r, sqe.rkey, sqe.remote_addr, total, peer_stream);
      if (e != ddp::DdpError::kNone) {
        return fail_remote(WcStatus::kRemoteAccess,
                           IsWriteOpcode(op) ? rdmap::FromDdpError(e) : ReadSourceCode(e));
      }
      const uint8_t need = IsWriteOpcode(op) ? ddp::kAccessRemoteWrite : ddp::kAccessRemoteRead;
      if ((r->access & need) == 0) {
        return fail_remote(WcStatus::kRemoteAccess, rdmap::codes::kAccessRights);
      }
      auto* mr = reinterpret_cast<Mr*>(static_cast<uintptr_t>(r->handle));
      const Segment remote{mr->map.data() + (sqe.remote_addr - r->base_to),
                           static_cast<uint32_t>(total)};
      if (IsWriteOpcode(op)) {
        CopySg(local, nlocal, &remote, 1);
      } else {
        CopySg(&remote, 1, local, nlocal);
      }
    }
    if (IsWriteOpcode(op)) PublishWrite(peer);
    Add(counters_.bytes_moved, total);
    Add(counters_.wrs_completed, 1);
    if (signaled) PostCqe(qp->scq, cqe);
    return true;
  }

  // Sends: RFC 5041 7.1 untagged checks at the receiver.
  const int64_t avail = peer->rq.Available();
  if (avail < 0) {
    Add(counters_.ring_corruptions, 1);
    return fail_remote(WcStatus::kRemoteOperation, rdmap::codes::kCatastrophicStream);
  }
  if (avail == 0) {
    return fail_remote(WcStatus::kRemoteInvalidRequest,
                       rdmap::FromDdpError(ddp::DdpError::kUntaggedNoBuffer));
  }
  Rqe rqe;
  peer->rq.Peek(0, &rqe);
  Cqe rcqe;
  rcqe.wr_id = rqe.wr_id;
  rcqe.qp_id = peer->id;
  rcqe.opcode = static_cast<uint8_t>(WcOpcode::kRecv);
  Segment sink[kMaxSge];
  uint32_t nsink = 0;
  uint64_t capacity = 0;
  WcStatus rst = rqe.num_sge > kMaxSge ? WcStatus::kLocalQpOperation
                                       : ResolveLocal(stags_, peer->pd, rqe.sge, rqe.num_sge,
                                                      ddp::kAccessLocalWrite, sink, &nsink,
                                                      &capacity);
  if (rst == WcStatus::kSuccess && total > capacity) rst = WcStatus::kLocalLength;
  if (rst != WcStatus::kSuccess) {
    peer->rq.Consume(1);
    rcqe.status = static_cast<uint8_t>(rst);
    PostCqe(peer->rcq, rcqe);
    const rdmap::TerminateCode code = rst == WcStatus::kLocalLength
                                          ? rdmap::FromDdpError(ddp::DdpError::kUntaggedTooLong)
                                          : rdmap::codes::kLocalCatastrophic;
    return fail_remote(rst == WcStatus::kLocalLength ? WcStatus::kRemoteInvalidRequest
                                                     : WcStatus::kRemoteOperation,
                       code);
  }
  if (IsInvalidateOpcode(op)) {
    // RFC 5040 6.3.1: the STag must name a region of the receiver's PD that
    // may be invalidated; checked before anything is placed.
    const ddp::TaggedRegion* r = stags_.Find(sqe.invalidate_stag);
    if (r == nullptr || !r->valid || r->stag != sqe.invalidate_stag) {
      return fail_remote(WcStatus::kRemoteOperation, rdmap::codes::kInvalidStag);
    }
    if (r->pd != peer->pd) {
      return fail_remote(WcStatus::kRemoteOperation, rdmap::codes::kStagNotAssociated);
    }
  }
  CopySg(local, nlocal, sink, nsink);
  if (IsInvalidateOpcode(op)) {
    const ddp::StagStatus st = stags_.Invalidate(sqe.invalidate_stag, peer->pd, /*remote=*/true);
    if (st != ddp::StagStatus::kOk) {
      // Placed, but the region refused invalidation: the receive completes
      // in error (RFC 5040 7.4.1, STag cannot be invalidated).
      peer->rq.Consume(1);
      rcqe.status = static_cast<uint8_t>(WcStatus::kRemoteOperation);
      PostCqe(peer->rcq, rcqe);
      return fail_remote(WcStatus::kRemoteOperation, rdmap::codes::kProtectionCannotInvalidate);
    }
    rcqe.flags |= kWcWithInvalidate;
    rcqe.invalidated_stag = sqe.invalidate_stag;
  }
  if (IsSolicitedOpcode(op)) rcqe.flags |= kWcSolicited;
  rcqe.byte_len = static_cast<uint32_t>(total);
  peer->rq.Consume(1);
  PostCqe(peer->rcq, rcqe);
  Add(counters_.bytes_moved, total);
  Add(counters_.wrs_completed, 1);
  if (signaled) PostCqe(qp->scq, cqe);
  return true;
}

uint32_t LoopbackEngine::PollQp(Qp* qp) {
  if (qp->state == QpState::kConnected) {
    const int64_t avail = qp->sq.Available();
    if (avail < 0) {
      Add(counters_.ring_corruptions, 1);
      FailQps(qp, ddp::DdpError::kNone, rdmap::codes::kCatastrophicStream, EPROTO);
      return 0;
    }
    const uint32_t n = static_cast<uint32_t>(std::min<int64_t>(avail, kPollBurst));
    uint32_t done = 0;
    for (; done < n && qp->state == QpState::kConnected; ++done) {
      Sqe sqe;
      qp->sq.Peek(0, &sqe);  // copied out: the application may rewrite the slot
      if (!ExecuteSqe(qp, sqe)) break;
      qp->sq.Consume(1);
    }
    return done;
  }
  if (qp->state != QpState::kError) return 0;
  // Flush (verbs "WR flush error"): every queued SQE and RQE completes with
  // kFlushed, as far as the CQs have room.
  uint32_t done = 0;
  for (;;) {
    const int64_t sa = qp->sq.Available();
    if (sa <= 0 || qp->scq->ring.FreeSlots() < 1) break;
    Sqe sqe;
    qp->sq.Peek(0, &sqe);
    Cqe cqe;
    cqe.wr_id = sqe.wr_id;
    cqe.qp_id = qp->id;
    cqe.opcode = static_cast<uint8_t>(IsWriteOpcode(sqe.opcode)  ? WcOpcode::kRdmaWrite
                                      : IsReadOpcode(sqe.opcode) ? WcOpcode::kRdmaRead
                                                                 : WcOpcode::kSend);
    cqe.status = static_cast<uint8_t>(WcStatus::kFlushed);
    PostCqe(qp->scq, cqe);
    qp->sq.Consume(1);
    Add(counters_.wrs_flushed, 1);
    ++done;
  }
  for (;;) {
    const int64_t ra = qp->rq.Available();
    if (ra <= 0 || qp->rcq->ring.FreeSlots() < 1) break;
    Rqe rqe;
    qp->rq.Peek(0, &rqe);
    Cqe cqe;
    cqe.wr_id = rqe.wr_id;
    cqe.qp_id = qp->id;
    cqe.opcode = static_cast<uint8_t>(WcOpcode::kRecv);
    cqe.status = static_cast<uint8_t>(WcStatus::kFlushed);
    PostCqe(qp->rcq, cqe);
    qp->rq.Consume(1);
    Add(counters_.wrs_flushed, 1);
    ++done;
  }
  return done;
}

uint32_t LoopbackEngine::Poll() {
  uint32_t work = 0;
  for (Qp* qp : poll_list_) work += PollQp(qp);
  for (Cq* cq : touched_cqs_) {
    cq->touched = false;
    WakeCq(cq);
  }
  touched_cqs_.clear();
  return work;
}

bool LoopbackEngine::PrepareToWait() {
  bool pending = false;
  for (Qp* qp : poll_list_) {
    if (qp->sq.PrepareToWait()) pending = true;
  }
  return pending;
}

void LoopbackEngine::CancelWait() {
  for (Qp* qp : poll_list_) qp->sq.CancelWait();
}

}  // namespace iwarp::appif
