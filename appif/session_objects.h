// Internal to appif/: the objects a session owns (memory regions, CQs, QPs,
// listeners, connection requests), shared by the session server, which
// creates, limits and frees them, and by the two engines that run QPs: the
// loopback engine (loopback_engine.h) and the wire client (wire_client.h).
// Libiwarp and the daemon's other folders see only session_server.h.
//
// All objects belong to the session server's thread (the control thread);
// the counters may be read from any thread (SessionServer::stats()).
#ifndef IWARPD_APPIF_SESSION_OBJECTS_H_
#define IWARPD_APPIF_SESSION_OBJECTS_H_

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "appif/proto.h"
#include "appif/session_server.h"
#include "appif/shm.h"
#include "appif/shm_layout.h"
#include "appif/spsc_ring.h"
#include "appif/wake_pipe.h"
#include "appif/wire_engine.h"

namespace iwarp::appif {

// Work requests (or wire events) one QP (or the event ring) handles per poll.
inline constexpr uint32_t kPollBurst = 32;

struct SessionServer::Counters {
  std::atomic<uint64_t> sessions_opened{0}, sessions_closed{0}, sessions_refused{0},
      sessions_active{0}, pds_active{0}, mrs_active{0}, cqs_active{0}, qps_active{0},
      stags_in_use{0}, registered_bytes{0}, mapped_bytes{0}, connections{0}, wrs_completed{0},
      wrs_failed{0}, wrs_flushed{0}, bytes_moved{0}, events_posted{0}, events_dropped{0},
      ring_corruptions{0}, requests_failed{0}, doorbells{0}, wire_qps_active{0},
      wire_connections{0}, wire_ack_timeouts{0}, wire_requests{0}, wire_unacked_held{0};
};

// One writer (the control thread): a relaxed load and store, no RMW.
inline void Add(std::atomic<uint64_t>& c, uint64_t v) {
  c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}
inline void Sub(std::atomic<uint64_t>& c, uint64_t v) {
  c.store(c.load(std::memory_order_relaxed) - v, std::memory_order_relaxed);
}

struct SessionServer::Mr {
  uint32_t stag = 0;
  uint32_t pd = 0;
  uint64_t length = 0;
  Mapping map;
};

struct SessionServer::Cq {
  uint32_t id = 0;
  Session* owner = nullptr;
  Mapping shm;
  SpscRing<Cqe> ring;
  UniqueFd eventfd;  // the write end of the CQ's wake-up pipe (the daemon's alone)
  uint32_t users = 0;  // QPs completing into it
  bool touched = false;
  // Producer rule: a CQ serves loopback QPs (the control thread writes it)
  // or wire QPs (the worker writes it), never both, for its whole life.
  bool loopback_bound = false;
  std::unique_ptr<WireCq> wire;  // set once a wire QP uses it
};

enum class QpState : uint8_t { kIdle, kConnecting, kConnected, kError };

struct SessionServer::Qp {
  uint32_t id = 0;
  Session* owner = nullptr;
  uint32_t pd = 0;
  Cq* scq = nullptr;
  Cq* rcq = nullptr;
  Mapping shm;
  SpscRing<Sqe> sq;
  SpscRing<Rqe> rq;
  QpNotify* notify = nullptr;  // in `shm`
  uint64_t writes_placed = 0;  // loopback: our copy of notify->writes_placed
  QpState state = QpState::kIdle;
  Qp* peer = nullptr;
  uint32_t request_id = 0;  // while connecting
  // Wire QPs: the context handed to the worker; once wire_owned is set the
  // control thread no longer touches the SQ/RQ rings.
  std::unique_ptr<WireQpContext> wire;
  bool wire_owned = false;
};

struct SessionServer::Listener {
  uint32_t id = 0;
  Session* owner = nullptr;
  uint32_t ipv4 = 0;
  uint16_t port = 0;
  Transport transport = Transport::kTcp;  // TCP and SCTP ports are separate spaces
};

struct SessionServer::ConnRequest {
  uint32_t id = 0;
  Qp* initiator = nullptr;  // loopback requests
  Listener* listener = nullptr;
  bool wire = false;        // a remote MPA Request waiting on the worker
  uint32_t engine_request_id = 0;
};

struct SessionServer::Session {
  uint32_t id = 0;
  UniqueFd sock;
  ucred cred{};
  bool opened = false;
  UniqueFd doorbell;  // app -> daemon: its eventfd, watched edge-triggered, never read
  UniqueFd eventfd;   // daemon -> app (event ring): the write end of its pipe
  Mapping eq_shm;
  SpscRing<Event> eq;
  std::set<uint32_t> pds;
  std::map<uint32_t, std::unique_ptr<Mr>> mrs;  // by STag
  // Shared: a QP whose destroy the worker never acknowledged keeps its CQs
  // (the wire client's held contexts), since the worker may still complete
  // into them.
  std::map<uint32_t, std::shared_ptr<Cq>> cqs;
  std::map<uint32_t, std::unique_ptr<Qp>> qps;
  std::set<uint32_t> listeners;
  uint64_t registered_bytes = 0;
  std::string last_error;
};

// Posts a connection event into the session's event ring (counted in
// events_posted, or events_dropped when the ring is full or not set up) and
// wakes the application if it sleeps on the ring.
inline void PostEvent(SessionServer::Counters& counters, SessionServer::Session* s,
                      const Event& ev) {
  if (!s->eq.valid() || !s->eq.Push(ev)) {
    Add(counters.events_dropped, 1);
    return;
  }
  Add(counters.events_posted, 1);
  if (s->eq.TakeWakeRequest()) RingWakePipe(s->eventfd.get());
}

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_SESSION_OBJECTS_H_
