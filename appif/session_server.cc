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
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "appif/loopback_engine.h"
#include "appif/session_objects.h"
#include "appif/wake_pipe.h"
#include "appif/wire_client.h"
#include "appif/wire_engine.h"

namespace iwarp::appif {

namespace {
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
}  // namespace

// ---- lifecycle -----------------------------------------------------------------

class SessionServer::WireHost final : public WireClient::Host {
 public:
  explicit WireHost(SessionServer& server) : server_(server) {}
  bool OnWireRequest(const WireEvent& ev) override { return server_.AdmitWireRequest(ev); }
  void OnWireRequestGone(uint32_t engine_request_id) override {
    server_.ForgetWireRequest(engine_request_id);
  }

 private:
  SessionServer& server_;
};

SessionServer::SessionServer(SessionServerOptions options)
    : options_(std::move(options)),
      stags_(options_.stag_table_size),
      counters_(std::make_unique<Counters>()),
      loopback_(std::make_unique<LoopbackEngine>(stags_, *counters_)) {
  next_id_ = options_.first_object_id;
  if (options_.wire_engine != nullptr) {
    wire_host_ = std::make_unique<WireHost>(*this);
    wire_ = std::make_unique<WireClient>(options_, stags_, *counters_, *wire_host_);
  }
}

uint32_t SessionServer::NewId() {
  // Terminates: the limits keep far fewer than 2^32 objects alive.
  for (;;) {
    const uint32_t id = next_id_++;
    if (id != 0 && !IdInUse(id)) return id;
  }
}

bool SessionServer::IdInUse(uint32_t id) const {
  if (listeners_.count(id) != 0 || requests_.count(id) != 0) return true;
  if (wire_ != nullptr && wire_->HoldsId(id)) return true;  // the worker may still name it
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
  if (wire_ != nullptr) wire_->Shutdown();
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


// ---- requests ----------------------------------------------------------------------

const SessionServer::Command* SessionServer::FindCommand(uint32_t op) {
  // Indexed by the op code; 0 is no command.
  static constexpr Command kCommands[] = {
      {Op{0}, nullptr, false},
      {Op::kOpen, &SessionServer::DoOpen, true},
      {Op::kAllocPd, &SessionServer::DoAllocPd, false},
      {Op::kDeallocPd, &SessionServer::DoDeallocPd, false},
      {Op::kRegMr, &SessionServer::DoRegMr, true},
      {Op::kDeregMr, &SessionServer::DoDeregMr, false},
      {Op::kCreateCq, &SessionServer::DoCreateCq, true},
      {Op::kDestroyCq, &SessionServer::DoDestroyCq, false},
      {Op::kCreateQp, &SessionServer::DoCreateQp, false},
      {Op::kDestroyQp, &SessionServer::DoDestroyQp, false},
      {Op::kListen, &SessionServer::DoListen, false},
      {Op::kUnlisten, &SessionServer::DoUnlisten, false},
      {Op::kConnect, &SessionServer::DoConnect, false},
      {Op::kAccept, &SessionServer::DoAccept, false},
      {Op::kReject, &SessionServer::DoReject, false},
      {Op::kDisconnect, &SessionServer::DoDisconnect, false},
      {Op::kInvalidate, &SessionServer::DoInvalidate, false},
  };
  static_assert(std::size(kCommands) == static_cast<size_t>(Op::kInvalidate) + 1,
                "one entry per Op");
  static_assert(
      [] {
        for (size_t i = 0; i < std::size(kCommands); ++i) {
          if (static_cast<size_t>(kCommands[i].op) != i) return false;
        }
        return true;
      }(),
      "kCommands is indexed by the op code");
  if (op >= std::size(kCommands) || kCommands[op].handler == nullptr) return nullptr;
  return &kCommands[op];
}

void SessionServer::Dispatch(Session* s, const Message& req, size_t len, int* fds, int nfds) {
  Message resp;
  resp.hdr.op = req.hdr.op;
  resp.hdr.seq = req.hdr.seq;
  UniqueFd out_fd[kMaxFds];  // sent in this order
  s->last_error.clear();
  int err = 0;
  if (!s->opened && static_cast<Op>(req.hdr.op) != Op::kOpen) {
    err = EPROTO;
    s->last_error = "session not opened";
  } else if (const Command* c = FindCommand(req.hdr.op); c == nullptr) {
    err = EOPNOTSUPP;
  } else {
    err = (this->*c->handler)(s, Request{req, len, fds, nfds}, &resp, out_fd);
    if (c->takes_fds) nfds = 0;  // consumed
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

// ---- sessions and protection domains -------------------------------------------------

int SessionServer::DoOpen(Session* s, const Request& req, Message* resp, UniqueFd* out_fds) {
  UniqueFd doorbell(req.nfds > 0 ? req.fds[0] : -1);
  for (int i = 1; i < req.nfds; ++i) close(req.fds[i]);
  OpenReq r;
  if (s->opened) return EALREADY;
  if (!GetBody(req.msg, req.len, &r)) {
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
  if (req.nfds != 1) {
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


int SessionServer::DoAllocPd(Session* s, const Request&, Message* resp, UniqueFd*) {
  if (s->pds.size() >= options_.max_pds_per_session) {
    s->last_error = absl::StrFormat("max_pds_per_session (%u) reached",
                                    options_.max_pds_per_session);
    return EDQUOT;
  }
  const uint32_t pd = NewId();
  s->pds.insert(pd);
  Add(counters_->pds_active, 1);
  SetBody(resp, IdResp{pd});
  return 0;
}

int SessionServer::DoDeallocPd(Session* s, const Request& req, Message*, UniqueFd*) {
  IdReq idr;
  if (!GetBody(req.msg, req.len, &idr) || s->pds.count(idr.id) == 0) return ENOENT;
  int err = 0;
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
  return err;
}

// ---- memory regions ------------------------------------------------------------------

int SessionServer::DoRegMr(Session* s, const Request& req, Message* resp, UniqueFd*) {
  UniqueFd fd(req.nfds > 0 ? req.fds[0] : -1);
  for (int i = 1; i < req.nfds; ++i) close(req.fds[i]);
  RegMrReq r;
  if (!GetBody(req.msg, req.len, &r) || req.nfds != 1) {
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
  if (wire_ != nullptr) {
    ddp::TaggedRegion mirrored = region;
    mirrored.stag = *stag;
    if (int err = wire_->RegMr(s, &mr, mirrored, r.remote_invalidate != 0); err != 0) return err;
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


int SessionServer::DoDeregMr(Session* s, const Request& req, Message*, UniqueFd*) {
  IdReq idr;
  if (!GetBody(req.msg, req.len, &idr)) return EINVAL;
  auto it = s->mrs.find(idr.id);
  if (it == s->mrs.end()) {
    s->last_error = "no memory region of this session under that STag";
    return ENOENT;
  }
  std::unique_ptr<Mr> mr = std::move(it->second);
  s->mrs.erase(it);
  s->registered_bytes -= mr->length;
  ReleaseMr(std::move(mr));
  return 0;
}

int SessionServer::DoInvalidate(Session* s, const Request& req, Message*, UniqueFd*) {
  IdReq idr;
  if (!GetBody(req.msg, req.len, &idr) || s->mrs.count(idr.id) == 0) return ENOENT;
  const uint32_t pd = s->mrs[idr.id]->pd;
  const auto st = stags_.Invalidate(idr.id, pd, /*remote=*/false);
  if (st != ddp::StagStatus::kOk) {
    s->last_error = std::string(ddp::StagStatusName(st));
    return EINVAL;
  }
  if (wire_ != nullptr) wire_->Invalidate(idr.id, pd);
  return 0;
}

// ---- completion queues and queue pairs ------------------------------------------------

int SessionServer::DoCreateCq(Session* s, const Request& req, Message* resp, UniqueFd* out_fds) {
  for (int i = 0; i < req.nfds; ++i) close(req.fds[i]);
  CreateCqReq r;
  if (!GetBody(req.msg, req.len, &r) || req.nfds != 0 || r.depth == 0 ||
      r.depth > options_.max_queue_depth) {
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

int SessionServer::DoCreateQp(Session* s, const Request& req, Message* resp, UniqueFd* out_fds) {
  CreateQpReq r;
  if (!GetBody(req.msg, req.len, &r) || r.sq_depth == 0 || r.rq_depth == 0 ||
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

int SessionServer::DoDestroyCq(Session* s, const Request& req, Message*, UniqueFd*) {
  IdReq idr;
  if (!GetBody(req.msg, req.len, &idr) || s->cqs.count(idr.id) == 0) return ENOENT;
  Cq* cq = s->cqs[idr.id].get();
  if (cq->users != 0) {
    s->last_error = "CQ still used by a QP";
    return EBUSY;
  }
  Sub(counters_->mapped_bytes, cq->shm.mapped_bytes());
  Sub(counters_->cqs_active, 1);
  s->cqs.erase(idr.id);
  return 0;
}

int SessionServer::DoDestroyQp(Session* s, const Request& req, Message*, UniqueFd*) {
  IdReq idr;
  if (!GetBody(req.msg, req.len, &idr) || s->qps.count(idr.id) == 0) return ENOENT;
  DestroyQp(s, s->qps[idr.id].get());
  return 0;
}

// ---- listeners and connections -------------------------------------------------------

int SessionServer::DoListen(Session* s, const Request& req, Message* resp, UniqueFd*) {
  ListenReq lr;
  if (!GetBody(req.msg, req.len, &lr) || lr.port == 0 || lr.transport >= kNumTransports ||
      lr.reserved != 0) {
    return EINVAL;
  }
  if (s->listeners.size() >= options_.max_listeners_per_session) {
    s->last_error = absl::StrFormat("max_listeners_per_session (%u) reached",
                                    options_.max_listeners_per_session);
    return EDQUOT;
  }
  const Transport tr = static_cast<Transport>(lr.transport);
  for (const auto& [id, l] : listeners_) {
    if (l->transport == tr && l->port == lr.port &&
        (l->ipv4 == 0 || lr.ipv4 == 0 || l->ipv4 == lr.ipv4)) {
      return EADDRINUSE;
    }
  }
  if (tr == Transport::kSctp && wire_ != nullptr && !wire_->engine()->has_sctp()) {
    s->last_error = "this daemon's data plane has no SCTP (RDMA over SCTP is not enabled "
                    "in its configuration)";
    return EPROTONOSUPPORT;
  }
  const uint32_t lid = NewId();
  if (wire_ != nullptr) {
    if (int err = wire_->Listen(s, lid, lr.port, tr); err != 0) return err;
  }
  auto* l = new Listener{lid, s, lr.ipv4, lr.port, tr};
  listeners_.emplace(l->id, l);
  s->listeners.insert(l->id);
  SetBody(resp, IdResp{l->id});
  return 0;
}

int SessionServer::DoUnlisten(Session* s, const Request& req, Message*, UniqueFd*) {
  IdReq idr;
  if (!GetBody(req.msg, req.len, &idr) || s->listeners.count(idr.id) == 0) return ENOENT;
  DestroyListener(listeners_[idr.id]);
  return 0;
}

int SessionServer::DoConnect(Session* s, const Request& req, Message*, UniqueFd*) {
  ConnectReq r;
  if (!GetBody(req.msg, req.len, &r) || r.private_data_len > kMaxPrivateData ||
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
    if (!local && wire_ != nullptr) {
      const int err = wire_->Connect(s, qp, r);
      if (err == 0) RebuildPollList();
      return err;
    }
    s->last_error = wire_ == nullptr
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
  const uint32_t request_id = cr->id;
  requests_.emplace(request_id, std::move(cr));
  loopback_->Request(qp, request_id, *target, r);
  return 0;
}

int SessionServer::DoAccept(Session* s, const Request& req, Message*, UniqueFd*) {
  AcceptReq r;
  if (!GetBody(req.msg, req.len, &r) || r.private_data_len > kMaxPrivateData) return EINVAL;
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
    const int err = wire_->Accept(s, qp, rit->second->listener->transport,
                                  rit->second->engine_request_id, r);
    if (err != 0) return err;
    requests_.erase(r.request_id);
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
  requests_.erase(rit);
  loopback_->Establish(qp, init, r);
  return 0;
}

int SessionServer::DoReject(Session* s, const Request& req, Message*, UniqueFd*) {
  RejectReq r;
  if (!GetBody(req.msg, req.len, &r) || r.private_data_len > kMaxPrivateData) return EINVAL;
  auto rit = requests_.find(r.request_id);
  if (rit == requests_.end() || rit->second->listener->owner != s) return ENOENT;
  if (rit->second->wire) {
    const int err =
        wire_->Reject(rit->second->listener->transport, rit->second->engine_request_id, r);
    if (err == 0) requests_.erase(r.request_id);
    return err;
  }
  Qp* init = rit->second->initiator;
  requests_.erase(rit);
  loopback_->Reject(init, r);
  return 0;
}

int SessionServer::DoDisconnect(Session* s, const Request& req, Message*, UniqueFd*) {
  IdReq idr;
  if (!GetBody(req.msg, req.len, &idr) || s->qps.count(idr.id) == 0) return ENOENT;
  Qp* qp = s->qps[idr.id].get();
  if (qp->state != QpState::kConnected) return ENOTCONN;
  if (qp->wire_owned) return wire_->Disconnect(qp);
  loopback_->Disconnect(qp, 0);
  return 0;
}

// ---- teardown --------------------------------------------------------------------------

void SessionServer::DestroyListener(Listener* l) {
  if (wire_ != nullptr) wire_->Unlisten(l->id);
  // Pending requests to it are refused.
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->second->listener == l && it->second->wire) {
      it = requests_.erase(it);
    } else if (it->second->listener == l) {
      loopback_->Refuse(it->second->initiator);
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
  loopback_->Detach(qp);
  if (qp->request_id != 0) requests_.erase(qp->request_id);
  if (qp->wire_owned) wire_->DestroyQp(s, qp);
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
  if (wire_ != nullptr) wire_->DeregMr(std::move(mr));
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
  loopback_->ClearQps();
  for (const auto& [fd, s] : sessions_) {
    for (const auto& [id, qp] : s->qps) {
      if (!qp->wire_owned) loopback_->AddQp(qp.get());  // the worker polls the others
    }
  }
}

// ---- routing to the engines ------------------------------------------------------------

bool SessionServer::IsLocalAddress(uint32_t ipv4) const {
  if (ipv4 == 0 || (ipv4 >> 24) == 127) return true;
  return options_.wire_engine != nullptr && ipv4 == options_.wire_engine->local_ip();
}

bool SessionServer::AdmitWireRequest(const WireEvent& ev) {
  auto lit = listeners_.find(ev.listener_id);
  if (lit == listeners_.end()) return false;
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
  PostEvent(*counters_, lit->second->owner, out);
  return true;
}

void SessionServer::ForgetWireRequest(uint32_t engine_request_id) {
  for (auto it = requests_.begin(); it != requests_.end(); ++it) {
    if (it->second->wire && it->second->engine_request_id == engine_request_id) {
      requests_.erase(it);
      break;
    }
  }
}

// ---- polling ---------------------------------------------------------------------------

uint32_t SessionServer::PollQueues() {
  uint32_t work = wire_ != nullptr ? wire_->Poll() : 0;
  work += loopback_->Poll();
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
    bool pending = loopback_->PrepareToWait();
    if (wire_ != nullptr && wire_->PrepareToWait()) pending = true;
    if (!pending) PollControl(100);
    loopback_->CancelWait();
    if (wire_ != nullptr) wire_->CancelWait();
    // Entries that arrived while arming are taken now. Entries nothing can
    // move (a QP not connected yet, a full CQ its application does not
    // drain, an impossible ring index) keep the check reporting work: a
    // short sleep then, not a spin of this thread for as long as they stay.
    if (pending && PollQueues() == 0) PollControl(1);
    idle = 0;
  }
}

}  // namespace iwarp::appif
