#include "appif/session_server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "appif/wake_pipe.h"
#include "appif/wire_engine.h"

namespace iwarp::appif {

namespace {
constexpr uint32_t kBurst = 32;
// epoll user data: sessions carry their socket fd; these tag the others.
constexpr uint64_t kTagListen = 1ull << 40;
constexpr uint64_t kTagDoorbell = 2ull << 40;
constexpr uint64_t kTagWire = 3ull << 40;
constexpr uint64_t kFdMask = (1ull << 32) - 1;

uint32_t RoundUpPow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v && p < (1u << 31)) p <<= 1;
  return p;
}

// True if `fd` is an eventfd (the application's doorbell). The daemon only
// watches it, edge-triggered, and never reads it: a read could block on a
// descriptor whose flags the application controls.
bool IsEventfd(int fd) {
  char link[64];
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
  if (n <= 0) return false;
  link[n] = '\0';
  return std::strcmp(link, "anon_inode:[eventfd]") == 0;
}

// The wire engine's event descriptor: an eventfd of the daemon's own.
void Drain(int eventfd) {
  uint64_t v;
  [[maybe_unused]] const ssize_t n = read(eventfd, &v, sizeof(v));
}

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
}  // namespace

// ---- objects -----------------------------------------------------------------

struct SessionServer::Counters {
  std::atomic<uint64_t> sessions_opened{0}, sessions_closed{0}, sessions_refused{0},
      sessions_active{0}, pds_active{0}, mrs_active{0}, cqs_active{0}, qps_active{0},
      stags_in_use{0}, registered_bytes{0}, mapped_bytes{0}, connections{0}, wrs_completed{0},
      wrs_failed{0}, wrs_flushed{0}, bytes_moved{0}, events_posted{0}, events_dropped{0},
      ring_corruptions{0}, requests_failed{0}, doorbells{0}, wire_qps_active{0},
      wire_connections{0}, wire_ack_timeouts{0}, wire_requests{0}, wire_unacked_held{0};
};

namespace {
void Add(std::atomic<uint64_t>& c, uint64_t v) { c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed); }
void Sub(std::atomic<uint64_t>& c, uint64_t v) { c.store(c.load(std::memory_order_relaxed) - v, std::memory_order_relaxed); }
}  // namespace

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

// What a command the worker did not acknowledge in time (kDestroyQp,
// kDeregMr, kRegMr) leaves behind: kept mapped and allocated, since the
// worker may still use it, until the worker acknowledges the command
// (ReapZombie). `cmd` is that command; `queued` says whether it reached the
// worker's command ring (if not, FlushZombies sends it before any newer
// command, so the worker sees the commands in the order they were made).
struct SessionServer::Zombie {
  WireCommand cmd;
  bool queued = false;
  std::unique_ptr<WireQpContext> ctx;
  Mapping shm;
  std::unique_ptr<Mr> mr;
  std::shared_ptr<Cq> scq, rcq;  // the QP's CQs: the worker may still write them
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
  // (Zombie), since the worker may still complete into them.
  std::map<uint32_t, std::shared_ptr<Cq>> cqs;
  std::map<uint32_t, std::unique_ptr<Qp>> qps;
  std::set<uint32_t> listeners;
  uint64_t registered_bytes = 0;
  std::string last_error;
};

// ---- lifecycle -----------------------------------------------------------------

SessionServer::SessionServer(SessionServerOptions options)
    : options_(std::move(options)),
      stags_(options_.stag_table_size),
      counters_(std::make_unique<Counters>()) {
  next_id_ = options_.first_object_id;
}

uint32_t SessionServer::NewId() {
  // Terminates: the limits keep far fewer than 2^32 objects alive.
  for (;;) {
    const uint32_t id = next_id_++;
    if (id != 0 && !IdInUse(id)) return id;
  }
}

bool SessionServer::IdInUse(uint32_t id) const {
  if (listeners_.count(id) != 0 || requests_.count(id) != 0 || wire_qps_.count(id) != 0) {
    return true;
  }
  for (const auto& z : zombies_) {
    if (z->ctx != nullptr && z->ctx->qp_id == id) return true;  // the worker may still name it
  }
  for (const auto& [fd, s] : sessions_) {
    if (s->id == id || s->pds.count(id) != 0 || s->cqs.count(id) != 0 || s->qps.count(id) != 0 ||
        s->listeners.count(id) != 0) {
      return true;
    }
  }
  return false;
}

SessionServer::~SessionServer() {
  while (!sessions_.empty()) CloseSession(sessions_.begin()->second.get(), "server shutdown");
  if (options_.wire_engine != nullptr) {
    // Stand-in reject QPs still on the worker are taken back before their
    // memory goes; so are destroys not acknowledged yet.
    while (!reject_ctxs_.empty()) {
      WireCommand c;
      c.type = WireCommandType::kDestroyQp;
      c.qp = reject_ctxs_.begin()->first;
      auto ctx = std::move(reject_ctxs_.begin()->second);
      reject_ctxs_.erase(reject_ctxs_.begin());
      bool queued = false;
      if (WireCall(&c, &queued) == ETIMEDOUT) {
        auto z = std::make_unique<Zombie>();
        z->ctx = std::move(ctx);
        Bury(std::move(z), c, queued);
      }
    }
    // Late acknowledgements free what waits for them (ReapZombie).
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(options_.wire_ack_timeout_ms);
    while ((!async_destroys_.empty() || !zombies_.empty()) &&
           std::chrono::steady_clock::now() < deadline) {
      if (PollWire() == 0) std::this_thread::yield();
    }
    if (!async_destroys_.empty() || !zombies_.empty()) {
      // The worker may still run them (it outlives this server in the
      // daemon: ~Runtime stops it later), so they are not freed here but
      // left to the process's end: a worker stalled for seconds at shutdown.
      Log(absl::StrFormat("app interface: %u wire contexts and regions never acknowledged by the "
                          "worker; left allocated and mapped until the process ends",
                          async_destroys_.size() + zombies_.size()));
      for (auto& [seq, ctx] : async_destroys_) (void)ctx.release();
      for (auto& z : zombies_) (void)z.release();
    }
  }
  if (listen_fd_.valid()) unlink(options_.socket_path.c_str());
}

absl::StatusOr<std::unique_ptr<SessionServer>> SessionServer::Create(SessionServerOptions options) {
  if (options.socket_path.empty() || options.socket_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return absl::InvalidArgumentError("socket path empty or longer than sun_path");
  }
  if (options.max_queue_depth == 0 || options.event_queue_depth == 0 ||
      options.stag_table_size == 0 || options.stag_table_size > ddp::kStagMaxIndex) {
    return absl::InvalidArgumentError("queue depths and STag table size must be positive");
  }
  options.max_queue_depth = RoundUpPow2(options.max_queue_depth);
  options.event_queue_depth = RoundUpPow2(options.event_queue_depth);
  // The daemon writes into wake-up pipes whose read ends applications hold;
  // an application that closed its end must cost an EPIPE, not a signal
  // that ends the daemon (process-wide: the worker lcores write them too).
  signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<SessionServer> s(new SessionServer(std::move(options)));
  if (absl::Status st = s->Listen(); !st.ok()) return st;
  return s;
}

void SessionServer::Log(std::string_view line) const {
  if (options_.log) options_.log(line);
}

absl::Status SessionServer::Listen() {
  epoll_fd_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd_.valid()) return absl::ErrnoToStatus(errno, "epoll_create1");
  listen_fd_.Reset(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd_.valid()) return absl::ErrnoToStatus(errno, "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, options_.socket_path.data(), options_.socket_path.size());
  // A socket file whose server still answers belongs to a live daemon: refuse
  // rather than steal it. A stale one (crashed daemon) is replaced.
  {
    UniqueFd probe(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (probe.valid() &&
        connect(probe.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      return absl::AlreadyExistsError(
          absl::StrCat(options_.socket_path, " is served by another running daemon"));
    }
  }
  unlink(options_.socket_path.c_str());
  if (bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("bind ", options_.socket_path));
  }
  if (chmod(options_.socket_path.c_str(), options_.socket_mode) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("chmod ", options_.socket_path));
  }
  if (listen(listen_fd_.get(), 64) != 0) return absl::ErrnoToStatus(errno, "listen");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kTagListen | static_cast<uint32_t>(listen_fd_.get());
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl");
  }
  if (options_.wire_engine != nullptr) {
    epoll_event wev{};
    wev.events = EPOLLIN;
    wev.data.u64 = kTagWire | static_cast<uint32_t>(options_.wire_engine->event_fd());
    if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, options_.wire_engine->event_fd(), &wev) != 0) {
      return absl::ErrnoToStatus(errno, "epoll_ctl wire engine");
    }
  }
  touched_cqs_.reserve(1024);
  Log(absl::StrCat("app interface listening on ", options_.socket_path));
  return absl::OkStatus();
}

SessionServerStats SessionServer::stats() const {
  const Counters& c = *counters_;
  SessionServerStats s;
  auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  s.sessions_opened = r(c.sessions_opened);
  s.sessions_closed = r(c.sessions_closed);
  s.sessions_refused = r(c.sessions_refused);
  s.sessions_active = r(c.sessions_active);
  s.pds_active = r(c.pds_active);
  s.mrs_active = r(c.mrs_active);
  s.cqs_active = r(c.cqs_active);
  s.qps_active = r(c.qps_active);
  s.stags_in_use = r(c.stags_in_use);
  s.registered_bytes = r(c.registered_bytes);
  s.mapped_bytes = r(c.mapped_bytes);
  s.connections = r(c.connections);
  s.wrs_completed = r(c.wrs_completed);
  s.wrs_failed = r(c.wrs_failed);
  s.wrs_flushed = r(c.wrs_flushed);
  s.bytes_moved = r(c.bytes_moved);
  s.events_posted = r(c.events_posted);
  s.events_dropped = r(c.events_dropped);
  s.ring_corruptions = r(c.ring_corruptions);
  s.requests_failed = r(c.requests_failed);
  s.doorbells = r(c.doorbells);
  s.wire_qps_active = r(c.wire_qps_active);
  s.wire_connections = r(c.wire_connections);
  s.wire_ack_timeouts = r(c.wire_ack_timeouts);
  s.wire_requests = r(c.wire_requests);
  s.wire_unacked_held = r(c.wire_unacked_held);
  return s;
}

// ---- control path ----------------------------------------------------------------

int SessionServer::PollControl(int timeout_ms) {
  epoll_event evs[32];
  const int n = epoll_wait(epoll_fd_.get(), evs, 32, timeout_ms);
  if (n <= 0) return 0;
  // Collect first: handling one session may close another (loopback peers).
  int handled = 0;
  std::vector<int> ready;
  for (int i = 0; i < n; ++i) {
    const uint64_t tag = evs[i].data.u64 & ~kFdMask;
    const int fd = static_cast<int>(evs[i].data.u64 & kFdMask);
    if (tag == kTagListen) {
      AcceptSessions();
    } else if (tag == kTagDoorbell) {
      // Edge-triggered: one event per write by the application; never read.
      // The application posted while the worker slept (wire QPs).
      Add(counters_->doorbells, 1);
      if (options_.wire_engine != nullptr) options_.wire_engine->WakeWorker();
    } else if (tag == kTagWire) {
      Drain(fd);  // the events themselves are taken by PollWire
    } else {
      ready.push_back(fd);
    }
    ++handled;
  }
  for (int fd : ready) {
    auto it = sessions_.find(fd);
    if (it != sessions_.end()) HandleSession(it->second.get());
  }
  return handled;
}

void SessionServer::AcceptSessions() {
  for (;;) {
    const int fd = accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    UniqueFd sock(fd);
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      Add(counters_->sessions_refused, 1);
      Log("app interface: SO_PEERCRED failed; connection refused");
      continue;
    }
    if (!options_.allowed_uids.empty() &&
        std::find(options_.allowed_uids.begin(), options_.allowed_uids.end(), cred.uid) ==
            options_.allowed_uids.end()) {
      Add(counters_->sessions_refused, 1);
      Log(absl::StrFormat("app interface: uid %u (pid %d) not in allowed_uids; refused", cred.uid,
                          cred.pid));
      continue;
    }
    if (sessions_.size() >= options_.max_sessions) {
      Add(counters_->sessions_refused, 1);
      Log(absl::StrFormat("app interface: max_sessions %u reached; pid %d refused",
                          options_.max_sessions, cred.pid));
      continue;
    }
    auto s = std::make_unique<Session>();
    s->id = NewId();
    s->cred = cred;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<uint32_t>(fd);
    if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) continue;
    s->sock = std::move(sock);
    Log(absl::StrFormat("app interface: session %u connected: pid %d uid %u gid %u", s->id,
                        cred.pid, cred.uid, cred.gid));
    Add(counters_->sessions_opened, 1);
    Add(counters_->sessions_active, 1);
    sessions_.emplace(fd, std::move(s));
  }
}

void SessionServer::HandleSession(Session* s) {
  for (int i = 0; i < 16; ++i) {
    Message req;
    int fds[kMaxFds];
    int nfds = 0;
    const long n = RecvMessage(s->sock.get(), &req, fds, &nfds);
    if (n == -EAGAIN) return;
    if (n == 0) {
      CloseSession(s, "application closed the session");
      return;
    }
    if (n < 0 && n != -EBADMSG) {
      CloseSession(s, "socket error");
      return;
    }
    if (n == -EBADMSG || static_cast<size_t>(n) < sizeof(MsgHeader)) {
      Message resp;
      resp.hdr.op = req.hdr.op;
      resp.hdr.seq = req.hdr.seq;
      resp.hdr.error = EBADMSG;
      Add(counters_->requests_failed, 1);
      SendMessage(s->sock.get(), resp, nullptr, 0);
      continue;
    }
    Dispatch(s, req, static_cast<size_t>(n), fds, nfds);
  }
}

void SessionServer::Dispatch(Session* s, const Message& req, size_t len, int* fds, int nfds) {
  Message resp;
  resp.hdr.op = req.hdr.op;
  resp.hdr.seq = req.hdr.seq;
  UniqueFd out_fd[kMaxFds];  // sent in this order
  s->last_error.clear();
  int err = 0;
  IdReq idr;
  const Op op = static_cast<Op>(req.hdr.op);
  if (!s->opened && op != Op::kOpen) {
    err = EPROTO;
    s->last_error = "session not opened";
  } else {
    switch (op) {
      case Op::kOpen:
        err = DoOpen(s, req, len, fds, nfds, &resp, out_fd);
        nfds = 0;  // consumed
        break;
      case Op::kAllocPd: {
        if (s->pds.size() >= options_.max_pds_per_session) {
          err = EDQUOT;
          s->last_error = absl::StrFormat("max_pds_per_session (%u) reached",
                                          options_.max_pds_per_session);
          break;
        }
        const uint32_t pd = NewId();
        s->pds.insert(pd);
        Add(counters_->pds_active, 1);
        SetBody(&resp, IdResp{pd});
        break;
      }
      case Op::kDeallocPd:
        if (!GetBody(req, len, &idr) || s->pds.count(idr.id) == 0) {
          err = ENOENT;
          break;
        }
        for (const auto& [stag, mr] : s->mrs) {
          if (mr->pd == idr.id) err = EBUSY;
        }
        for (const auto& [id, qp] : s->qps) {
          if (qp->pd == idr.id) err = EBUSY;
        }
        if (err == 0) {
          s->pds.erase(idr.id);
          Sub(counters_->pds_active, 1);
        } else {
          s->last_error = "protection domain still has memory regions or QPs";
        }
        break;
      case Op::kRegMr:
        err = DoRegMr(s, req, len, fds, nfds, &resp);
        nfds = 0;
        break;
      case Op::kDeregMr: {
        if (!GetBody(req, len, &idr)) {
          err = EINVAL;
          break;
        }
        auto it = s->mrs.find(idr.id);
        if (it == s->mrs.end()) {
          err = ENOENT;
          s->last_error = "no memory region of this session under that STag";
          break;
        }
        std::unique_ptr<Mr> mr = std::move(it->second);
        s->mrs.erase(it);
        s->registered_bytes -= mr->length;
        ReleaseMr(std::move(mr));
        break;
      }
      case Op::kInvalidate: {
        if (!GetBody(req, len, &idr) || s->mrs.count(idr.id) == 0) {
          err = ENOENT;
          break;
        }
        const auto st = stags_.Invalidate(idr.id, s->mrs[idr.id]->pd, /*remote=*/false);
        if (st != ddp::StagStatus::kOk) {
          err = EINVAL;
          s->last_error = std::string(ddp::StagStatusName(st));
        } else if (options_.wire_engine != nullptr) {
          WireCommand c;
          c.type = WireCommandType::kInvalidate;
          c.stag = idr.id;
          c.pd = s->mrs[idr.id]->pd;
          (void)WireCall(&c);  // the worker's view may already be invalid (remote)
        }
        break;
      }
      case Op::kCreateCq:
        err = DoCreateCq(s, req, len, fds, nfds, &resp, out_fd);
        nfds = 0;
        break;
      case Op::kDestroyCq: {
        if (!GetBody(req, len, &idr) || s->cqs.count(idr.id) == 0) {
          err = ENOENT;
          break;
        }
        Cq* cq = s->cqs[idr.id].get();
        if (cq->users != 0) {
          err = EBUSY;
          s->last_error = "CQ still used by a QP";
          break;
        }
        Sub(counters_->mapped_bytes, cq->shm.mapped_bytes());
        Sub(counters_->cqs_active, 1);
        s->cqs.erase(idr.id);
        break;
      }
      case Op::kCreateQp:
        err = DoCreateQp(s, req, len, &resp, out_fd);
        break;
      case Op::kDestroyQp:
        if (!GetBody(req, len, &idr) || s->qps.count(idr.id) == 0) {
          err = ENOENT;
          break;
        }
        DestroyQp(s, s->qps[idr.id].get());
        break;
      case Op::kListen: {
        ListenReq lr;
        if (!GetBody(req, len, &lr) || lr.port == 0 || lr.transport >= kNumTransports ||
            lr.reserved != 0) {
          err = EINVAL;
          break;
        }
        if (s->listeners.size() >= options_.max_listeners_per_session) {
          err = EDQUOT;
          s->last_error = absl::StrFormat("max_listeners_per_session (%u) reached",
                                          options_.max_listeners_per_session);
          break;
        }
        const Transport tr = static_cast<Transport>(lr.transport);
        for (const auto& [id, l] : listeners_) {
          if (l->transport == tr && l->port == lr.port &&
              (l->ipv4 == 0 || lr.ipv4 == 0 || l->ipv4 == lr.ipv4)) {
            err = EADDRINUSE;
          }
        }
        if (err != 0) break;
        if (tr == Transport::kSctp && options_.wire_engine != nullptr &&
            !options_.wire_engine->has_sctp()) {
          s->last_error = "this daemon's data plane has no SCTP (RDMA over SCTP is not enabled "
                          "in its configuration)";
          err = EPROTONOSUPPORT;
          break;
        }
        const uint32_t lid = NewId();
        if (options_.wire_engine != nullptr) {
          WireCommand c;
          c.type = WireCommandType::kListen;
          c.transport = tr;
          c.listener_id = lid;
          c.port = lr.port;
          err = WireCall(&c);
          if (err != 0) {
            const AppPortTable* ports = options_.wire_engine->options().app_ports;
            if (err == EADDRINUSE && tr == Transport::kTcp && ports != nullptr &&
                ports->Reserved(lr.port)) {
              s->last_error = absl::StrFormat(
                  "TCP port %u is used by a built-in service of the daemon (its services: "
                  "configuration); pick another port",
                  lr.port);
              break;
            }
            s->last_error = err == EADDRINUSE
                                ? (tr == Transport::kSctp
                                       ? "port already in use on the data plane's SCTP endpoint"
                                       : "port already in use on the data plane's TCP stack")
                                : "the data plane could not listen on that port";
            break;
          }
        }
        auto* l = new Listener{lid, s, lr.ipv4, lr.port, tr};
        listeners_.emplace(l->id, l);
        s->listeners.insert(l->id);
        SetBody(&resp, IdResp{l->id});
        break;
      }
      case Op::kUnlisten:
        if (!GetBody(req, len, &idr) || s->listeners.count(idr.id) == 0) {
          err = ENOENT;
          break;
        }
        DestroyListener(listeners_[idr.id]);
        break;
      case Op::kConnect:
        err = DoConnect(s, req, len, &resp);
        break;
      case Op::kAccept:
        err = DoAccept(s, req, len, &resp);
        break;
      case Op::kReject:
        err = DoReject(s, req, len, &resp);
        break;
      case Op::kDisconnect:
        if (!GetBody(req, len, &idr) || s->qps.count(idr.id) == 0) {
          err = ENOENT;
          break;
        }
        if (s->qps[idr.id]->state != QpState::kConnected) {
          err = ENOTCONN;
          break;
        }
        if (s->qps[idr.id]->wire_owned) {
          // RFC 5040 5.5 graceful close; kDisconnected arrives from the worker.
          WireCommand c;
          c.type = WireCommandType::kDisconnect;
          c.qp = s->qps[idr.id]->wire.get();
          if (!WirePush(c)) err = EAGAIN;
          break;
        }
        Disconnect(s->qps[idr.id].get(), 0);
        break;
      default:
        err = EOPNOTSUPP;
        break;
    }
  }
  for (int i = 0; i < nfds; ++i) close(fds[i]);  // not consumed by the request
  resp.hdr.error = err;
  if (err != 0) {
    Add(counters_->requests_failed, 1);
    if (s->last_error.empty()) s->last_error = strerror(err);
    const size_t n = std::min(s->last_error.size(), kMaxErrorText - 1);
    std::memset(resp.body, 0, kMaxErrorText);
    std::memcpy(resp.body, s->last_error.data(), n);
    resp.hdr.body_len = static_cast<uint32_t>(n + 1);
  }
  int out[kMaxFds];
  int nout = 0;
  for (int i = 0; err == 0 && i < kMaxFds && out_fd[i].valid(); ++i) out[nout++] = out_fd[i].get();
  SendMessage(s->sock.get(), resp, out, nout);
}

int SessionServer::DoOpen(Session* s, const Message& req, size_t len, int* fds, int nfds,
                          Message* resp, UniqueFd* out_fds) {
  UniqueFd doorbell(nfds > 0 ? fds[0] : -1);
  for (int i = 1; i < nfds; ++i) close(fds[i]);
  OpenReq r;
  if (s->opened) return EALREADY;
  if (!GetBody(req, len, &r)) {
    s->last_error = "open needs OpenReq";
    return EINVAL;
  }
  // Before the descriptor count, which changed with the ABI: a libiwarp of
  // another release learns why it cannot talk to this daemon.
  if (r.abi_version != kAbiVersion) {
    s->last_error = absl::StrFormat(
        "libiwarp ABI version %u, daemon speaks %u: use the libiwarp of the daemon's release",
        r.abi_version, kAbiVersion);
    return EPROTONOSUPPORT;
  }
  if (nfds != 1) {
    s->last_error = "open needs one eventfd (the doorbell)";
    return EINVAL;
  }
  if (!IsEventfd(doorbell.get())) {
    s->last_error = "the doorbell descriptor must be an eventfd";
    return EINVAL;
  }
  WakePipe events;
  if (int e = MakeWakePipe(&events); e != 0) return e;
  const uint32_t depth = RoundUpPow2(std::clamp<uint32_t>(
      r.event_depth == 0 ? options_.event_queue_depth : r.event_depth, 4,
      options_.event_queue_depth));
  auto shm = Mapping::CreateMemfd("iwarp-events", RingBytes<Event>(depth));
  if (!shm.ok()) return ENOMEM;
  s->eq_shm = std::move(*shm);
  s->eq = SpscRing<Event>(s->eq_shm.data(), depth);
  s->eq.Init();
  Add(counters_->mapped_bytes, s->eq_shm.mapped_bytes());
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.u64 = kTagDoorbell | static_cast<uint32_t>(doorbell.get());
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, doorbell.get(), &ev) != 0) return errno;
  s->doorbell = std::move(doorbell);
  s->eventfd = std::move(events.daemon_end);
  s->opened = true;
  out_fds[0].Reset(dup(s->eq_shm.fd()));
  out_fds[1] = std::move(events.app_end);
  SetBody(resp, OpenResp{s->id, depth, RingBytes<Event>(depth)});
  return 0;
}

int SessionServer::DoRegMr(Session* s, const Message& req, size_t len, int* fds, int nfds,
                           Message* resp) {
  UniqueFd fd(nfds > 0 ? fds[0] : -1);
  for (int i = 1; i < nfds; ++i) close(fds[i]);
  RegMrReq r;
  if (!GetBody(req, len, &r) || nfds != 1) {
    s->last_error = "register needs RegMrReq and one memfd";
    return EINVAL;
  }
  if (s->pds.count(r.pd) == 0) {
    s->last_error = "no such protection domain in this session";
    return ENOENT;
  }
  if ((r.access & ~uint32_t{ddp::kAccessAll}) != 0 || r.length == 0 || r.va + r.length < r.va) {
    s->last_error = "bad access flags, zero length or address range wraps";
    return EINVAL;
  }
  if (s->mrs.size() >= options_.max_mrs_per_session) {
    s->last_error = "max_mrs_per_session reached";
    return EDQUOT;
  }
  if (r.length > options_.max_registered_bytes_per_session - s->registered_bytes) {
    s->last_error = "max_registered_bytes_per_session reached";
    return EDQUOT;
  }
  auto map = Mapping::MapForeign(fd.get(), r.offset, r.length);
  if (!map.ok()) {
    s->last_error = std::string(map.status().message());
    return EINVAL;
  }
  auto mr = std::make_unique<Mr>();
  mr->pd = r.pd;
  mr->length = r.length;
  mr->map = std::move(*map);
  ddp::TaggedRegion region;
  region.base_to = r.va;
  region.length = r.length;
  region.access = static_cast<uint8_t>(r.access);
  region.pd = r.pd;
  region.handle = reinterpret_cast<uintptr_t>(mr.get());
  auto stag = stags_.Register(region, r.remote_invalidate != 0);
  if (!stag.ok()) {
    s->last_error = "STag table full";
    return ENOSPC;
  }
  mr->stag = *stag;
  if (options_.wire_engine != nullptr) {
    WireCommand c;
    c.type = WireCommandType::kRegMr;
    c.stag = *stag;
    c.region = region;
    c.region.stag = *stag;
    c.region.valid = true;
    c.mem = mr->map.data();
    c.remote_invalidate = r.remote_invalidate != 0;
    bool queued = false;
    const int werr = WireCall(&c, &queued);
    if (werr != 0) {
      stags_.Deregister(*stag, r.pd);
      if (werr == ETIMEDOUT) {
        // The worker may yet insert it: keep the bytes mapped until it
        // answers (and, if it did insert them, until it takes them out).
        auto z = std::make_unique<Zombie>();
        z->mr = std::move(mr);
        Bury(std::move(z), c, queued);
      }
      s->last_error = "the data plane could not mirror the registration";
      return werr == ETIMEDOUT ? ETIMEDOUT : ENOSPC;
    }
  }
  s->registered_bytes += r.length;
  Add(counters_->registered_bytes, r.length);
  Add(counters_->mapped_bytes, mr->map.mapped_bytes());
  Add(counters_->mrs_active, 1);
  Add(counters_->stags_in_use, 1);
  s->mrs.emplace(*stag, std::move(mr));
  SetBody(resp, IdResp{*stag});
  return 0;
}

int SessionServer::DoCreateCq(Session* s, const Message& req, size_t len, int* fds, int nfds,
                              Message* resp, UniqueFd* out_fds) {
  for (int i = 0; i < nfds; ++i) close(fds[i]);
  CreateCqReq r;
  if (!GetBody(req, len, &r) || nfds != 0 || r.depth == 0 || r.depth > options_.max_queue_depth) {
    s->last_error = "CQ needs a depth in 1..max_queue_depth (and no descriptor)";
    return EINVAL;
  }
  if (s->cqs.size() >= options_.max_cqs_per_session) {
    s->last_error = "max_cqs_per_session reached";
    return EDQUOT;
  }
  WakePipe wake;
  if (int e = MakeWakePipe(&wake); e != 0) return e;
  const uint32_t depth = RoundUpPow2(r.depth);
  auto shm = Mapping::CreateMemfd("iwarp-cq", RingBytes<Cqe>(depth));
  if (!shm.ok()) return ENOMEM;
  auto cq = std::make_shared<Cq>();
  cq->id = NewId();
  cq->owner = s;
  cq->shm = std::move(*shm);
  cq->ring = SpscRing<Cqe>(cq->shm.data(), depth);
  cq->ring.Init();
  cq->eventfd = std::move(wake.daemon_end);
  out_fds[0].Reset(dup(cq->shm.fd()));
  out_fds[1] = std::move(wake.app_end);
  SetBody(resp, CreateCqResp{cq->id, depth, RingBytes<Cqe>(depth)});
  Add(counters_->mapped_bytes, cq->shm.mapped_bytes());
  Add(counters_->cqs_active, 1);
  s->cqs.emplace(cq->id, std::move(cq));
  return 0;
}

int SessionServer::DoCreateQp(Session* s, const Message& req, size_t len, Message* resp,
                              UniqueFd* out_fds) {
  CreateQpReq r;
  if (!GetBody(req, len, &r) || r.sq_depth == 0 || r.rq_depth == 0 ||
      r.sq_depth > options_.max_queue_depth || r.rq_depth > options_.max_queue_depth) {
    s->last_error = "QP depths must be in 1..max_queue_depth";
    return EINVAL;
  }
  if (s->pds.count(r.pd) == 0 || s->cqs.count(r.send_cq) == 0 || s->cqs.count(r.recv_cq) == 0) {
    s->last_error = "PD or CQ not of this session";
    return ENOENT;
  }
  if (s->qps.size() >= options_.max_qps_per_session) {
    s->last_error = "max_qps_per_session reached";
    return EDQUOT;
  }
  QpLayout layout{RoundUpPow2(r.sq_depth), RoundUpPow2(r.rq_depth)};
  auto shm = Mapping::CreateMemfd("iwarp-qp", layout.bytes());
  if (!shm.ok()) return ENOMEM;
  auto qp = std::make_unique<Qp>();
  qp->id = NewId();
  qp->owner = s;
  qp->pd = r.pd;
  qp->scq = s->cqs[r.send_cq].get();
  qp->rcq = s->cqs[r.recv_cq].get();
  qp->scq->users++;
  qp->rcq->users++;
  qp->shm = std::move(*shm);
  qp->sq = SpscRing<Sqe>(qp->shm.data() + layout.sq_offset(), layout.sq_depth);
  qp->rq = SpscRing<Rqe>(qp->shm.data() + layout.rq_offset(), layout.rq_depth);
  qp->sq.Init();
  qp->rq.Init();
  qp->notify = reinterpret_cast<QpNotify*>(qp->shm.data() + layout.notify_offset());
  qp->notify->writes_placed.store(0, std::memory_order_relaxed);
  qp->notify->waiter.store(0, std::memory_order_relaxed);
  out_fds[0].Reset(dup(qp->shm.fd()));
  SetBody(resp, CreateQpResp{qp->id, layout.sq_depth, layout.rq_depth, 0, layout.bytes()});
  Add(counters_->mapped_bytes, qp->shm.mapped_bytes());
  Add(counters_->qps_active, 1);
  s->qps.emplace(qp->id, std::move(qp));
  RebuildPollList();
  return 0;
}

int SessionServer::DoConnect(Session* s, const Message& req, size_t len, Message*) {
  ConnectReq r;
  if (!GetBody(req, len, &r) || r.private_data_len > kMaxPrivateData ||
      r.transport >= kNumTransports) {
    return EINVAL;
  }
  const Transport tr = static_cast<Transport>(r.transport);
  if (tr == Transport::kSctp && r.mpa_flags != 0) {
    s->last_error = "MPA options do not apply to RDMA over SCTP (RFC 5043 has no MPA)";
    return EINVAL;
  }
  auto it = s->qps.find(r.qp);
  if (it == s->qps.end()) return ENOENT;
  Qp* qp = it->second.get();
  if (qp->state != QpState::kIdle || qp->wire_owned) {
    s->last_error = "QP is not idle";
    return EISCONN;
  }
  const bool local = IsLocalAddress(r.ipv4);
  Listener* target = nullptr;
  if (local) {
    for (const auto& [id, l] : listeners_) {
      if (l->transport == tr && l->port == r.port &&
          (l->ipv4 == 0 || r.ipv4 == 0 || l->ipv4 == r.ipv4)) {
        target = l;
      }
    }
  }
  if (target == nullptr) {
    if (!local && options_.wire_engine != nullptr) {
      if (tr == Transport::kSctp && !options_.wire_engine->has_sctp()) {
        s->last_error = "this daemon's data plane has no SCTP (RDMA over SCTP is not enabled "
                        "in its configuration)";
        return EPROTONOSUPPORT;
      }
      return ConnectWire(s, qp, r);
    }
    s->last_error = options_.wire_engine == nullptr
                        ? "no listener of this daemon at that address (this daemon has no "
                          "data plane: loopback QPs only)"
                        : "no listener of this daemon at that address";
    return ECONNREFUSED;
  }
  if (qp->scq->wire != nullptr || qp->rcq->wire != nullptr) {
    s->last_error = "a CQ of this QP serves wire QPs; a loopback QP needs CQs of its own";
    return EINVAL;
  }
  auto cr = std::make_unique<ConnRequest>();
  cr->id = NewId();
  cr->initiator = qp;
  cr->listener = target;
  qp->state = QpState::kConnecting;
  qp->request_id = cr->id;
  Event ev;
  ev.type = static_cast<uint32_t>(EventType::kConnectRequest);
  ev.listener_id = target->id;
  ev.request_id = cr->id;
  ev.private_data_len = r.private_data_len;
  std::memcpy(ev.private_data, r.private_data, r.private_data_len);
  ev.peer_ip = 0x7f000001;  // loopback: a process on this host
  ev.peer_port = static_cast<uint16_t>(qp->id);
  requests_.emplace(cr->id, std::move(cr));
  PostEvent(target->owner, ev);
  return 0;
}

int SessionServer::DoAccept(Session* s, const Message& req, size_t len, Message*) {
  AcceptReq r;
  if (!GetBody(req, len, &r) || r.private_data_len > kMaxPrivateData) return EINVAL;
  auto rit = requests_.find(r.request_id);
  if (rit == requests_.end() || rit->second->listener->owner != s) {
    s->last_error = "no pending connection request of this session with that id";
    return ENOENT;
  }
  auto qit = s->qps.find(r.qp);
  if (qit == s->qps.end()) return ENOENT;
  Qp* qp = qit->second.get();
  if (qp->state != QpState::kIdle || qp->wire_owned) {
    s->last_error = "accepting QP is not idle";
    return EISCONN;
  }
  if (rit->second->wire) {
    // A remote Request: the engine answers it with our private data; the
    // QP reports kEstablished when the first FPDU / RTR arrives.
    const Transport tr = rit->second->listener->transport;
    if (int err = PrepareWire(s, qp, options_.wire_mpa, tr); err != 0) return err;
    WireCommand c;
    c.type = WireCommandType::kAccept;
    c.transport = tr;
    c.qp = qp->wire.get();
    c.request_id = rit->second->engine_request_id;
    c.private_data_len = r.private_data_len;
    std::memcpy(c.private_data, r.private_data, r.private_data_len);
    if (!WirePush(c)) return EAGAIN;
    requests_.erase(rit);
    qp->wire_owned = true;
    qp->state = QpState::kConnecting;
    wire_qps_[qp->id] = qp;
    Add(counters_->wire_qps_active, 1);
    RebuildPollList();
    return 0;
  }
  Qp* init = rit->second->initiator;
  for (Cq* cq : {qp->scq, qp->rcq, init->scq, init->rcq}) {
    if (cq->wire != nullptr) {
      s->last_error = "a CQ of these QPs serves wire QPs; a loopback QP needs CQs of its own";
      return EINVAL;
    }
  }
  for (Cq* cq : {qp->scq, qp->rcq, init->scq, init->rcq}) cq->loopback_bound = true;
  requests_.erase(rit);
  init->request_id = 0;
  qp->peer = init;
  init->peer = qp;
  qp->state = QpState::kConnected;
  init->state = QpState::kConnected;
  Add(counters_->connections, 1);
  Event ev;
  ev.type = static_cast<uint32_t>(EventType::kEstablished);
  ev.qp_id = qp->id;
  PostEvent(s, ev);
  ev.qp_id = init->id;
  ev.private_data_len = r.private_data_len;
  std::memcpy(ev.private_data, r.private_data, r.private_data_len);
  PostEvent(init->owner, ev);
  return 0;
}

int SessionServer::DoReject(Session* s, const Message& req, size_t len, Message*) {
  RejectReq r;
  if (!GetBody(req, len, &r) || r.private_data_len > kMaxPrivateData) return EINVAL;
  auto rit = requests_.find(r.request_id);
  if (rit == requests_.end() || rit->second->listener->owner != s) return ENOENT;
  if (rit->second->wire && rit->second->listener->transport == Transport::kSctp) {
    // RFC 5043 6.3: the worker answers the held Initiate with a session
    // Reject carrying our private data; no QP is involved.
    WireCommand c;
    c.type = WireCommandType::kReject;
    c.transport = Transport::kSctp;
    c.request_id = rit->second->engine_request_id;
    c.private_data_len = r.private_data_len;
    std::memcpy(c.private_data, r.private_data, r.private_data_len);
    if (!WirePush(c)) return EAGAIN;
    requests_.erase(rit);
    return 0;
  }
  if (rit->second->wire) {
    // A stand-in engine QP sends the MPA Reply with R=1 and our private
    // data (RFC 5044 7.1.2), then hands itself back.
    auto ctx = std::make_unique<WireQpContext>();
    ctx->reject_only = true;
    engine::QpOptions o;
    o.mpa = options_.wire_mpa;
    o.sq_depth = 1;
    o.rq_depth = 1;
    o.cq_depth = 2;
    o.max_send_sge = 1;  // sends only the MPA Reply
    auto eqp = engine::Qp::Create(o, options_.wire_engine->stack(),
                                  options_.wire_engine->memory(), *ctx);
    if (!eqp.ok()) return ENOMEM;
    ctx->engine = std::move(*eqp);
    ctx->owner = options_.wire_engine;
    WireCommand c;
    c.type = WireCommandType::kReject;
    c.qp = ctx.get();
    c.request_id = rit->second->engine_request_id;
    c.private_data_len = r.private_data_len;
    std::memcpy(c.private_data, r.private_data, r.private_data_len);
    if (!WirePush(c)) return EAGAIN;
    requests_.erase(rit);
    reject_ctxs_.emplace(ctx.get(), std::move(ctx));
    return 0;
  }
  Qp* init = rit->second->initiator;
  requests_.erase(rit);
  init->request_id = 0;
  init->state = QpState::kIdle;
  Event ev;
  ev.type = static_cast<uint32_t>(EventType::kRejected);
  ev.qp_id = init->id;
  ev.reason = ECONNREFUSED;
  ev.private_data_len = r.private_data_len;
  std::memcpy(ev.private_data, r.private_data, r.private_data_len);
  PostEvent(init->owner, ev);
  return 0;
}

void SessionServer::DestroyListener(Listener* l) {
  if (options_.wire_engine != nullptr) {
    // The worker stops listening and resets the Requests nobody answered.
    WireCommand c;
    c.type = WireCommandType::kUnlisten;
    c.listener_id = l->id;
    (void)WireCall(&c);
  }
  // Pending requests to it are refused.
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->second->listener == l && it->second->wire) {
      it = requests_.erase(it);
    } else if (it->second->listener == l) {
      Qp* init = it->second->initiator;
      init->state = QpState::kIdle;
      init->request_id = 0;
      Event ev;
      ev.type = static_cast<uint32_t>(EventType::kConnectError);
      ev.qp_id = init->id;
      ev.reason = ECONNREFUSED;
      PostEvent(init->owner, ev);
      it = requests_.erase(it);
    } else {
      ++it;
    }
  }
  l->owner->listeners.erase(l->id);
  listeners_.erase(l->id);
  delete l;
}

void SessionServer::DestroyQp(Session* s, Qp* qp) {
  if (qp->peer != nullptr) {
    Qp* peer = qp->peer;
    peer->peer = nullptr;
    if (peer->state == QpState::kConnected) {
      // RFC 5040 5.5: the stream ends; the survivor flushes what it had queued.
      peer->state = QpState::kError;
      Event ev;
      ev.type = static_cast<uint32_t>(EventType::kDisconnected);
      ev.qp_id = peer->id;
      ev.reason = ECONNRESET;
      PostEvent(peer->owner, ev);
    }
  }
  if (qp->request_id != 0) requests_.erase(qp->request_id);
  if (qp->wire_owned) {
    // The worker lets go of the engine QP and the rings first.
    WireCommand c;
    c.type = WireCommandType::kDestroyQp;
    c.qp = qp->wire.get();
    wire_qps_.erase(qp->id);
    Sub(counters_->wire_qps_active, 1);
    bool queued = false;
    if (WireCall(&c, &queued) == ETIMEDOUT) {
      auto z = std::make_unique<Zombie>();
      z->ctx = std::move(qp->wire);
      z->shm = std::move(qp->shm);
      z->scq = s->cqs[qp->scq->id];
      z->rcq = s->cqs[qp->rcq->id];
      Bury(std::move(z), c, queued);
    }
  }
  qp->scq->users--;
  qp->rcq->users--;
  Sub(counters_->mapped_bytes, qp->shm.mapped_bytes());
  Sub(counters_->qps_active, 1);
  s->qps.erase(qp->id);
  RebuildPollList();
}

void SessionServer::ReleaseMr(std::unique_ptr<Mr> mr) {
  stags_.Deregister(mr->stag, mr->pd);  // the STag can never match again
  Sub(counters_->registered_bytes, mr->length);
  Sub(counters_->mapped_bytes, mr->map.mapped_bytes());
  Sub(counters_->mrs_active, 1);
  Sub(counters_->stags_in_use, 1);
  if (options_.wire_engine == nullptr) return;
  // The worker must stop using the bytes before they are unmapped.
  WireCommand c;
  c.type = WireCommandType::kDeregMr;
  c.stag = mr->stag;
  bool queued = false;
  if (WireCall(&c, &queued) == ETIMEDOUT) {
    auto z = std::make_unique<Zombie>();
    z->mr = std::move(mr);
    Bury(std::move(z), c, queued);
  }
}

void SessionServer::CloseSession(Session* s, const char* why) {
  Log(absl::StrFormat("app interface: session %u (pid %d) closed: %s; %u QPs, %u MRs released",
                      s->id, s->cred.pid, why, s->qps.size(), s->mrs.size()));
  while (!s->qps.empty()) DestroyQp(s, s->qps.begin()->second.get());
  while (!s->listeners.empty()) DestroyListener(listeners_[*s->listeners.begin()]);
  for (auto& [stag, mr] : s->mrs) ReleaseMr(std::move(mr));
  s->mrs.clear();
  for (auto& [id, cq] : s->cqs) {
    Sub(counters_->mapped_bytes, cq->shm.mapped_bytes());
    Sub(counters_->cqs_active, 1);
  }
  s->cqs.clear();
  Sub(counters_->pds_active, s->pds.size());
  if (s->eq.valid()) Sub(counters_->mapped_bytes, s->eq_shm.mapped_bytes());
  if (s->doorbell.valid()) epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, s->doorbell.get(), nullptr);
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, s->sock.get(), nullptr);
  Add(counters_->sessions_closed, 1);
  Sub(counters_->sessions_active, 1);
  sessions_.erase(s->sock.get());
}

void SessionServer::RebuildPollList() {
  poll_list_.clear();
  for (const auto& [fd, s] : sessions_) {
    for (const auto& [id, qp] : s->qps) {
      if (!qp->wire_owned) poll_list_.push_back(qp.get());  // the worker polls the others
    }
  }
}

// ---- wire engine (control side) ------------------------------------------------------

bool SessionServer::IsLocalAddress(uint32_t ipv4) const {
  if (ipv4 == 0 || (ipv4 >> 24) == 127) return true;
  return options_.wire_engine != nullptr && ipv4 == options_.wire_engine->local_ip();
}

bool SessionServer::WirePush(const WireCommand& cmd) {
  // The worker drains commands every loop; a full ring means it is busy, so
  // the control thread retries (it never makes the worker wait).
  WireEngine* e = options_.wire_engine;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.wire_ack_timeout_ms);
  // Commands left unsent go first: a kDeregMr of an STag must not follow
  // a newer command about the same STag.
  while (!FlushZombies() || !e->PushCommand(cmd)) {
    PollWire();
    if (std::chrono::steady_clock::now() > deadline) {
      Add(counters_->wire_ack_timeouts, 1);
      Log("app interface: wire engine command ring stayed full; command not sent");
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

int SessionServer::WireCall(WireCommand* cmd, bool* queued) {
  WireEngine* e = options_.wire_engine;
  cmd->seq = NextWireSeq();
  if (queued != nullptr) *queued = false;
  if (!WirePush(*cmd)) return ETIMEDOUT;
  if (queued != nullptr) *queued = true;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.wire_ack_timeout_ms);
  for (;;) {
    WireEvent ev;
    if (e->PopEvent(&ev)) {
      if (ev.type == WireEventType::kAck && ev.seq == cmd->seq) return ev.status;
      HandleWireEvent(ev);
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      Add(counters_->wire_ack_timeouts, 1);
      Log(absl::StrFormat("app interface: wire engine did not acknowledge command %u in %u ms",
                          static_cast<unsigned>(cmd->type), options_.wire_ack_timeout_ms));
      return ETIMEDOUT;
    }
    std::this_thread::yield();
  }
}

uint32_t SessionServer::NextWireSeq() {
  const uint32_t seq = wire_seq_++;
  if (wire_seq_ == 0) wire_seq_ = 1;
  return seq;
}

void SessionServer::Bury(std::unique_ptr<Zombie> z, const WireCommand& cmd, bool queued) {
  z->cmd = cmd;
  z->queued = queued;
  zombies_.push_back(std::move(z));
  Add(counters_->wire_unacked_held, 1);
}

bool SessionServer::FlushZombies() {
  for (auto& z : zombies_) {
    if (z->queued) continue;
    if (!options_.wire_engine->PushCommand(z->cmd)) return false;
    z->queued = true;
  }
  return true;
}

void SessionServer::ReapZombie(const WireEvent& ack) {
  for (auto it = zombies_.begin(); it != zombies_.end(); ++it) {
    Zombie& z = **it;
    if (!z.queued || z.cmd.seq != ack.seq) continue;
    if (z.cmd.type == WireCommandType::kRegMr && ack.status == 0) {
      // The worker mirrored a registration the application was told had
      // failed: it takes it out again before the bytes are unmapped.
      WireCommand c;
      c.type = WireCommandType::kDeregMr;
      c.stag = z.cmd.stag;
      c.seq = NextWireSeq();
      z.cmd = c;
      z.queued = options_.wire_engine->PushCommand(c);
      return;
    }
    zombies_.erase(it);  // the worker let go: the context, rings and bytes are freed
    Sub(counters_->wire_unacked_held, 1);
    return;
  }
}

uint32_t SessionServer::PollWire() {
  if (options_.wire_engine == nullptr) return 0;
  if (!zombies_.empty()) FlushZombies();
  uint32_t n = 0;
  WireEvent ev;
  while (n < kBurst && options_.wire_engine->PopEvent(&ev)) {
    HandleWireEvent(ev);
    ++n;
  }
  return n;
}

void SessionServer::HandleWireEvent(const WireEvent& ev) {
  auto find_qp = [&]() -> Qp* {
    auto it = wire_qps_.find(ev.qp_id);
    return it != wire_qps_.end() && it->second->wire.get() == ev.qp ? it->second : nullptr;
  };
  switch (ev.type) {
    case WireEventType::kAck:
      async_destroys_.erase(ev.seq);  // a stand-in reject QP is free again
      if (!zombies_.empty()) ReapZombie(ev);  // a late acknowledgement
      return;
    case WireEventType::kConnectRequest: {
      auto lit = listeners_.find(ev.listener_id);
      if (lit == listeners_.end()) {
        WireCommand c;
        c.type = WireCommandType::kDropRequest;
        c.request_id = ev.request_id;
        WirePush(c);
        return;
      }
      auto cr = std::make_unique<ConnRequest>();
      cr->id = NewId();
      cr->listener = lit->second;
      cr->wire = true;
      cr->engine_request_id = ev.request_id;
      Event out;
      out.type = static_cast<uint32_t>(EventType::kConnectRequest);
      out.listener_id = ev.listener_id;
      out.request_id = cr->id;
      out.private_data_len = std::min<uint32_t>(ev.private_data_len, kMaxPrivateData);
      std::memcpy(out.private_data, ev.private_data, out.private_data_len);
      out.peer_ip = ev.peer_ip;
      out.peer_port = ev.peer_port;
      requests_.emplace(cr->id, std::move(cr));
      Add(counters_->wire_requests, 1);
      PostEvent(lit->second->owner, out);
      return;
    }
    case WireEventType::kRequestGone:
      for (auto it = requests_.begin(); it != requests_.end(); ++it) {
        if (it->second->wire && it->second->engine_request_id == ev.request_id) {
          requests_.erase(it);
          break;
        }
      }
      return;
    case WireEventType::kRemoteInvalidate:
      // RFC 5040 6.3.1: mirrors the worker's view into the daemon's table.
      (void)stags_.Invalidate(ev.stag, ev.pd, /*remote=*/true);
      return;
    default:
      break;
  }
  // QP events.
  if (auto rit = reject_ctxs_.find(ev.qp); rit != reject_ctxs_.end()) {
    if (ev.type == WireEventType::kConnectFailed || ev.type == WireEventType::kDisconnected) {
      WireCommand c;
      c.type = WireCommandType::kDestroyQp;
      c.qp = ev.qp;
      c.seq = NextWireSeq();
      if (WirePush(c)) {
        async_destroys_.emplace(c.seq, std::move(rit->second));
        reject_ctxs_.erase(rit);
      }
    }
    return;
  }
  Qp* qp = find_qp();
  if (qp == nullptr) return;  // destroyed meanwhile
  Event out;
  out.qp_id = qp->id;
  switch (ev.type) {
    case WireEventType::kEstablished:
      qp->state = QpState::kConnected;
      Add(counters_->connections, 1);
      Add(counters_->wire_connections, 1);
      out.type = static_cast<uint32_t>(EventType::kEstablished);
      out.mpa_flags = ev.mpa_flags;
      out.private_data_len = std::min<uint32_t>(ev.private_data_len, kMaxPrivateData);
      std::memcpy(out.private_data, ev.private_data, out.private_data_len);
      break;
    case WireEventType::kConnectFailed:
      // The engine QP cannot connect again: the application destroys it.
      qp->state = QpState::kError;
      out.reason = ev.status;
      if (ev.connect_error == static_cast<uint8_t>(engine::ConnectError::kRejected)) {
        out.type = static_cast<uint32_t>(EventType::kRejected);
        out.private_data_len = std::min<uint32_t>(ev.private_data_len, kMaxPrivateData);
        std::memcpy(out.private_data, ev.private_data, out.private_data_len);
      } else {
        out.type = static_cast<uint32_t>(EventType::kConnectError);
      }
      break;
    case WireEventType::kTerminate:
      // RFC 5040 7.4: the Terminate triple, sent by us or received.
      qp->state = QpState::kError;
      out.type = static_cast<uint32_t>(EventType::kQpError);
      out.reason = ev.sent ? EIO : EREMOTEIO;
      out.term_layer = ev.term_layer;
      out.term_etype = ev.term_etype;
      out.term_code = ev.term_code;
      break;
    case WireEventType::kDisconnected:
      qp->state = QpState::kError;
      out.type = static_cast<uint32_t>(EventType::kDisconnected);
      out.reason = ev.status;  // 0 after a graceful close
      break;
    default:
      return;
  }
  PostEvent(qp->owner, out);
}

int SessionServer::PrepareWire(Session* s, Qp* qp, const engine::MpaParams& mpa,
                               Transport transport) {
  WireEngine* e = options_.wire_engine;
  if (wire_qps_.size() + reject_ctxs_.size() >= e->options().max_qps) {
    s->last_error = "the data plane's wire QP limit is reached";
    return EDQUOT;
  }
  for (Cq* cq : {qp->scq, qp->rcq}) {
    if (cq->loopback_bound) {
      s->last_error = "a CQ of this QP serves loopback QPs; a wire QP needs CQs of its own";
      return EINVAL;
    }
  }
  auto ctx = std::make_unique<WireQpContext>();
  ctx->qp_id = qp->id;
  ctx->owner = e;
  const QpLayout layout{qp->sq.entries(), qp->rq.entries()};
  ctx->sq = SpscRing<Sqe>(qp->shm.data() + layout.sq_offset(), layout.sq_depth);
  ctx->sq.AttachAsConsumer();
  ctx->rq = SpscRing<Rqe>(qp->shm.data() + layout.rq_offset(), layout.rq_depth);
  ctx->rq.AttachAsConsumer();
  ctx->notify = qp->notify;
  engine::QpOptions o;
  o.mpa = mpa;
  o.pd = qp->pd;
  o.stream_id = qp->id;
  o.sq_depth = layout.sq_depth;
  o.rq_depth = layout.rq_depth;
  o.cq_depth = layout.sq_depth + layout.rq_depth;
  o.gather_staging = e->gather_staging();  // the engine runs all its QPs on one thread
  // Payload is read from the application's registered memory until TCP has
  // it acknowledged; a deregistration first aborts the QPs still reading
  // from the region (WireEngine, kDeregMr).
  o.zero_copy_tx = options_.wire_zero_copy_tx;
  if (transport == Transport::kSctp) {
    // The worker creates the engine QP on a DDP stream (wire_engine.h).
    ctx->sctp = true;
    ctx->llp_options = o;
  } else {
    auto eqp = engine::Qp::Create(o, e->stack(), e->memory(), *ctx);
    if (!eqp.ok()) {
      s->last_error = std::string(eqp.status().message());
      return EINVAL;
    }
    ctx->engine = std::move(*eqp);
  }
  ctx->InitSlots(layout.sq_depth);
  for (Cq* cq : {qp->scq, qp->rcq}) {
    if (cq->wire == nullptr) {
      auto w = std::make_unique<WireCq>();
      w->id = cq->id;
      w->ring = SpscRing<Cqe>(cq->shm.data(), cq->ring.entries());
      w->ring.AttachAsProducer();
      w->eventfd = cq->eventfd.get();
      cq->wire = std::move(w);
    }
  }
  ctx->scq = qp->scq->wire.get();
  ctx->rcq = qp->rcq->wire.get();
  qp->wire = std::move(ctx);
  return 0;
}

int SessionServer::ConnectWire(Session* s, Qp* qp, const ConnectReq& r) {
  engine::MpaParams mpa = options_.wire_mpa;
  if ((r.mpa_flags & kMpaOverride) != 0) {
    mpa.crc = (r.mpa_flags & kMpaCrc) != 0;
    mpa.want_markers = (r.mpa_flags & kMpaMarkers) != 0;
  }
  if (r.port == 0) {
    s->last_error = "port 0";
    return EINVAL;
  }
  const Transport tr = static_cast<Transport>(r.transport);
  if (int err = PrepareWire(s, qp, mpa, tr); err != 0) return err;
  WireCommand c;
  c.type = WireCommandType::kConnect;
  c.transport = tr;
  c.qp = qp->wire.get();
  c.remote_ip = r.ipv4;
  c.port = r.port;
  c.private_data_len = r.private_data_len;
  std::memcpy(c.private_data, r.private_data, r.private_data_len);
  if (!WirePush(c)) {
    qp->wire.reset();
    return EAGAIN;
  }
  qp->wire_owned = true;
  qp->state = QpState::kConnecting;
  wire_qps_[qp->id] = qp;
  Add(counters_->wire_qps_active, 1);
  RebuildPollList();
  return 0;
}

// ---- events and completions ------------------------------------------------------

void SessionServer::PostEvent(Session* s, const Event& ev) {
  if (!s->eq.valid() || !s->eq.Push(ev)) {
    Add(counters_->events_dropped, 1);
    return;
  }
  Add(counters_->events_posted, 1);
  if (s->eq.TakeWakeRequest()) RingWakePipe(s->eventfd.get());
}

bool SessionServer::PostCqe(Cq* cq, const Cqe& cqe) {
  if (!cq->ring.Push(cqe)) return false;
  if (!cq->touched) {
    cq->touched = true;
    touched_cqs_.push_back(cq);  // capacity reserved: no allocation in steady state
  }
  return true;
}

void SessionServer::WakeCq(Cq* cq) {
  if (cq->ring.TakeWakeRequest()) RingWakePipe(cq->eventfd.get());
}

// A loopback RDMA Write was placed into `qp`'s memory: as the worker does for
// wire QPs (WireEngine::PublishWrites), count it in the notify block and ring
// the receive CQ's eventfd if the application sleeps on it.
void SessionServer::PublishWrite(Qp* qp) {
  if (PublishPlacedWrites(qp->notify, ++qp->writes_placed)) RingWakePipe(qp->rcq->eventfd.get());
}

// ---- data path ----------------------------------------------------------------------

namespace {

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

// The Terminate triple the failing operation reports. The initiating QP gets
// a CQE carrying it; both QPs go to the error state and flush (RFC 5040 5.5
// and 7: a Terminate ends the stream).
void SessionServer::FailQps(Qp* qp, ddp::DdpError, const rdmap::TerminateCode& code, int reason) {
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
    PostEvent(q->owner, ev);
  }
}

void SessionServer::Disconnect(Qp* qp, int reason) {
  Qp* peer = qp->peer;
  for (Qp* q : {qp, peer}) {
    if (q == nullptr || q->state != QpState::kConnected) continue;
    q->state = QpState::kError;  // flushes what is still queued
    Event ev;
    ev.type = static_cast<uint32_t>(EventType::kDisconnected);
    ev.qp_id = q->id;
    ev.reason = reason;
    PostEvent(q->owner, ev);
  }
}

bool SessionServer::ExecuteSqe(Qp* qp, const Sqe& sqe) {
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
    Add(counters_->ring_corruptions, 1);
    FailQps(qp, ddp::DdpError::kNone, rdmap::codes::kCatastrophicStream, EPROTO);
    return true;
  }
  if (own_free < 2 || peer_free < 2) return false;

  auto fail_local = [&](WcStatus st) {
    cqe.status = static_cast<uint8_t>(st);
    PostCqe(qp->scq, cqe);
    Add(counters_->wrs_failed, 1);
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
    Add(counters_->wrs_failed, 1);
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
    Add(counters_->bytes_moved, total);
    Add(counters_->wrs_completed, 1);
    if (signaled) PostCqe(qp->scq, cqe);
    return true;
  }

  // Sends: RFC 5041 7.1 untagged checks at the receiver.
  const int64_t avail = peer->rq.Available();
  if (avail < 0) {
    Add(counters_->ring_corruptions, 1);
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
  Add(counters_->bytes_moved, total);
  Add(counters_->wrs_completed, 1);
  if (signaled) PostCqe(qp->scq, cqe);
  return true;
}

uint32_t SessionServer::PollQp(Qp* qp) {
  if (qp->state == QpState::kConnected) {
    const int64_t avail = qp->sq.Available();
    if (avail < 0) {
      Add(counters_->ring_corruptions, 1);
      FailQps(qp, ddp::DdpError::kNone, rdmap::codes::kCatastrophicStream, EPROTO);
      return 0;
    }
    const uint32_t n = static_cast<uint32_t>(std::min<int64_t>(avail, kBurst));
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
    Add(counters_->wrs_flushed, 1);
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
    Add(counters_->wrs_flushed, 1);
    ++done;
  }
  return done;
}

uint32_t SessionServer::PollQueues() {
  uint32_t work = PollWire();
  for (Qp* qp : poll_list_) work += PollQp(qp);
  for (Cq* cq : touched_cqs_) {
    cq->touched = false;
    WakeCq(cq);
  }
  touched_cqs_.clear();
  return work;
}

void SessionServer::Run(const std::atomic<bool>& stop) {
  uint32_t idle = 0;
  uint32_t rounds = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    const uint32_t work = PollQueues();
    if (work != 0) {
      idle = 0;
      // The socket side gets a look every 1024 busy rounds.
      if ((++rounds & 1023) == 0) PollControl(0);
      continue;
    }
    if (++idle < options_.idle_polls_before_sleep) {
      if ((idle & 63) == 0) PollControl(0);
      continue;
    }
    // Arm every SQ for a doorbell, re-check, then sleep (spsc_ring.h).
    bool pending = false;
    for (Qp* qp : poll_list_) {
      if (qp->sq.PrepareToWait()) pending = true;
    }
    if (options_.wire_engine != nullptr && options_.wire_engine->PrepareToWaitForEvents()) {
      pending = true;
    }
    if (!pending) PollControl(100);
    for (Qp* qp : poll_list_) qp->sq.CancelWait();
    if (options_.wire_engine != nullptr) options_.wire_engine->CancelWaitForEvents();
    // Entries that arrived while arming are taken now. Entries nothing can
    // move (a QP not connected yet, a full CQ its application does not
    // drain, an impossible ring index) keep the check reporting work: a
    // short sleep then, not a spin of this thread for as long as they stay.
    if (pending && PollQueues() == 0) PollControl(1);
    idle = 0;
  }
}

}  // namespace iwarp::appif
