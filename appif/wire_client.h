// Internal to appif/: the control-thread side of the wire engine. The session
// server hands it the QPs it routes to other hosts and every memory
// registration; it turns them into WireCommands for the worker running the
// WireEngine (wire_engine.h), waits for the worker's acknowledgements, and
// turns the worker's WireEvents back into application events.
//
// Contracts (see session_server.h for the whole thread model):
//  - Call/Push never make the worker wait: a full command ring is retried,
//    handling the worker's events meanwhile, for up to wire_ack_timeout_ms.
//  - What the worker did not acknowledge in time (a QP destroy, an MR
//    registration or deregistration) stays allocated and mapped, counted in
//    wire_unacked_held, and is freed when the late kAck arrives; a command
//    that never reached the ring is sent before any newer one.
//  - From a successful Connect/Accept on, the worker alone consumes the QP's
//    SQ/RQ and produces its CQs (Qp::wire_owned, Cq::wire).
//  - Connection requests from remote peers are reported to the Host, which
//    keeps the request table shared with loopback requests.
//
// Runs on the control thread only; no part of it is on the per-packet path
// (the worker is).
#ifndef IWARPD_APPIF_WIRE_CLIENT_H_
#define IWARPD_APPIF_WIRE_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "appif/proto.h"
#include "appif/session_objects.h"
#include "appif/session_server.h"
#include "appif/wire_engine.h"
#include "ddp/stag_table.h"
#include "iwarp/qp.h"

namespace iwarp::appif {

class WireClient {
 public:
  using Counters = SessionServer::Counters;
  using Cq = SessionServer::Cq;
  using Mr = SessionServer::Mr;
  using Qp = SessionServer::Qp;
  using Session = SessionServer::Session;

  // The session server's side of remote connection requests.
  class Host {
   public:
    // A remote peer's connection request for listener `ev.listener_id`;
    // false if no such listener (the worker then resets the request).
    virtual bool OnWireRequest(const WireEvent& ev) = 0;
    // The peer of an unanswered request went away.
    virtual void OnWireRequestGone(uint32_t engine_request_id) = 0;

   protected:
    ~Host() = default;
  };

  // All references are the session server's and outlive this client;
  // options.wire_engine is not null.
  WireClient(const SessionServerOptions& options, ddp::FixedStagTable& stags, Counters& counters,
             Host& host);
  ~WireClient();

  WireEngine* engine() const { return engine_; }
  // True while the worker may still name `id` (a wire QP, or a QP whose
  // destroy it has not acknowledged).
  bool HoldsId(uint32_t id) const;

  // Memory regions: mirrors a registration into the worker's STag view
  // (0, or an errno after taking `region.stag` out of the STag table again;
  // *mr is then kept if the worker may still insert it). DeregMr takes it
  // out of the worker's view before the bytes are unmapped.
  int RegMr(Session* s, std::unique_ptr<Mr>* mr, const ddp::TaggedRegion& region,
            bool remote_invalidate);
  void DeregMr(std::unique_ptr<Mr> mr);
  void Invalidate(uint32_t stag, uint32_t pd);  // RFC 5042 5.2, local

  // Listeners on the worker's stack (0 or an errno, with s->last_error).
  int Listen(Session* s, uint32_t listener_id, uint16_t port, Transport transport);
  void Unlisten(uint32_t listener_id);

  // QPs. Connect (active open) and Accept (of remote request
  // `engine_request_id`) hand the QP to the worker on success (0);
  // otherwise an errno, with s->last_error where there is more to say.
  int Connect(Session* s, Qp* qp, const ConnectReq& r);
  int Accept(Session* s, Qp* qp, Transport transport, uint32_t engine_request_id,
             const AcceptReq& r);
  // Answers remote request `engine_request_id` with a reject (RFC 5044
  // 7.1.2 MPA Reply with R=1; RFC 5043 6.3 session Reject). 0, ENOMEM or
  // EAGAIN.
  int Reject(Transport transport, uint32_t engine_request_id, const RejectReq& r);
  int Disconnect(Qp* qp);  // RFC 5040 5.5 graceful close: 0 or EAGAIN
  // Takes the QP back from the worker before its memory goes; on timeout
  // its context, rings and CQs are held until the worker lets go.
  void DestroyQp(Session* s, Qp* qp);

  // Handles the worker's events waiting in the ring; returns how many.
  uint32_t Poll();
  // Arm / disarm the worker's event ring for a wake-up of the control thread.
  bool PrepareToWait() { return engine_->PrepareToWaitForEvents(); }
  void CancelWait() { engine_->CancelWaitForEvents(); }
  // At server shutdown, after every session closed: takes back the
  // stand-in reject QPs and waits (up to wire_ack_timeout_ms) for the
  // acknowledgements still missing.
  void Shutdown();

  // Pushes a command and waits for its acknowledgement, handling other
  // events meanwhile; returns the worker's status or ETIMEDOUT. `queued`
  // (optional): whether the command reached the worker's ring.
  int Call(WireCommand* cmd, bool* queued = nullptr);
  // Only queues (retrying while the ring is full); false on timeout.
  bool Push(const WireCommand& cmd);

 private:
  // What a timed-out kDestroyQp/kDeregMr/kRegMr leaves (Zombie) waits for
  // the worker's late kAck (ReapZombie frees it); a command that never
  // reached the ring is sent before any newer one (FlushZombies: false
  // while the ring stays full).
  struct Zombie;
  uint32_t NextSeq();
  void Bury(std::unique_ptr<Zombie> z, const WireCommand& cmd, bool queued);
  bool FlushZombies();
  void ReapZombie(const WireEvent& ack);
  void HandleEvent(const WireEvent& ev);
  int Prepare(Session* s, Qp* qp, const engine::MpaParams& mpa, Transport transport);
  void Log(std::string_view line) const;

  const SessionServerOptions& options_;
  WireEngine* const engine_;
  ddp::FixedStagTable& stags_;
  Counters& counters_;
  Host& host_;
  std::map<uint32_t, Qp*> wire_qps_;  // QPs handed to the wire engine, by id
  uint32_t wire_seq_ = 1;
  // Stand-in QPs answering a remote Request with a reject, until the worker
  // hands them back; and contexts whose destroy was never acknowledged
  // (kept, with their memory mapped, rather than freed under the worker).
  std::map<WireQpContext*, std::unique_ptr<WireQpContext>> reject_ctxs_;
  std::map<uint32_t, std::unique_ptr<WireQpContext>> async_destroys_;  // by seq
  std::vector<std::unique_ptr<Zombie>> zombies_;
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_WIRE_CLIENT_H_
