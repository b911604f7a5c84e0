// Internal to appif/: the loopback QP engine. Runs the QPs the session server
// connected to another QP of this daemon (both applications on this host):
// a work request is executed by copying between the two applications'
// registered regions, with the checks an RNIC applies on the wire (RFC 5042
// 5.1 local access, RFC 5041 7.1 tagged and untagged checks, RFC 5040 4.4
// Read, 6.3.1 Send with Invalidate) and the completion status and Terminate
// triple (RFC 5040 7.4) the failing operation would report; an error ends
// the stream for both QPs, which then flush (RFC 5040 5.5).
//
// Ownership: the session server creates and frees the QPs and CQs and keeps
// the connection requests; this engine changes a QP's state, peer and
// rings, the CQs' rings, and posts the connection events of its QPs. It runs
// on the control thread and is the only producer of the CQs of its QPs
// (Cq::loopback_bound).
//
// Fast path (Poll): no allocation, locks or system calls except a write to
// an application's wake-up pipe when it asked for a wake-up.
#ifndef IWARPD_APPIF_LOOPBACK_ENGINE_H_
#define IWARPD_APPIF_LOOPBACK_ENGINE_H_

#include <cstdint>
#include <vector>

#include "appif/proto.h"
#include "appif/session_objects.h"
#include "appif/shm_layout.h"
#include "ddp/rdmap.h"
#include "ddp/stag_table.h"

namespace iwarp::appif {

class LoopbackEngine {
 public:
  using Counters = SessionServer::Counters;
  using Cq = SessionServer::Cq;
  using Listener = SessionServer::Listener;
  using Mr = SessionServer::Mr;
  using Qp = SessionServer::Qp;

  // `stags` and `counters` are the session server's and outlive this engine.
  LoopbackEngine(ddp::FixedStagTable& stags, Counters& counters);

  // The QPs Poll runs: every QP not handed to the wire engine (idle ones
  // cost a state check). Rebuilt by the server on QP create and destroy.
  void ClearQps() { poll_list_.clear(); }
  void AddQp(Qp* qp) { poll_list_.push_back(qp); }

  // Connection management; the server keeps the request (its id, its
  // listener) and calls these for the QPs' side.
  // `initiator` asks `target`'s owner to accept request `request_id`.
  void Request(Qp* initiator, uint32_t request_id, const Listener& target, const ConnectReq& r);
  // Pairs the two QPs (Full Operation) and tells both owners; the
  // initiator's owner gets the acceptor's private data.
  void Establish(Qp* acceptor, Qp* initiator, const AcceptReq& r);
  // The request of `initiator` was rejected (with private data) or its
  // listener went away: the QP is idle again.
  void Reject(Qp* initiator, const RejectReq& r);
  void Refuse(Qp* initiator);
  // RFC 5040 5.5: both QPs of the pair leave Full Operation and flush.
  void Disconnect(Qp* qp, int reason);
  // `qp` is being destroyed: its peer, if still connected, is reset.
  void Detach(Qp* qp);

  // Runs queued work requests of the connected QPs and flushes QPs in
  // error, then wakes the CQs that got entries. Returns the number of
  // work requests handled.
  uint32_t Poll();
  // Arms every SQ for a doorbell before the server sleeps; true if one has
  // work already. CancelWait disarms them after the sleep.
  bool PrepareToWait();
  void CancelWait();

 private:
  uint32_t PollQp(Qp* qp);
  bool ExecuteSqe(Qp* qp, const Sqe& sqe);  // false: retry later (CQ full)
  void FailQps(Qp* qp, ddp::DdpError, const rdmap::TerminateCode& code, int reason);
  // A connected QP goes to the error state (flushing what is queued) and its
  // owner gets a kDisconnected event; any other QP (or nullptr) is left alone.
  void EndConnected(Qp* q, int reason);
  bool PostCqe(Cq* cq, const Cqe& cqe);
  void WakeCq(Cq* cq);
  void PublishWrite(Qp* qp);  // a loopback RDMA Write landed in qp

  ddp::FixedStagTable& stags_;
  Counters& counters_;
  std::vector<Qp*> poll_list_;
  std::vector<Cq*> touched_cqs_;  // CQs with new entries in this poll (preallocated)
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_LOOPBACK_ENGINE_H_
