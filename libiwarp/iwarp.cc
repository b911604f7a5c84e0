// libiwarp client: control calls over the session socket, data path on the
// shared rings (appif/).
#include "libiwarp/iwarp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>

#include "appif/proto.h"
#include "appif/shm.h"
#include "appif/shm_layout.h"
#include "appif/spsc_ring.h"

namespace ai = iwarp::appif;

// The public structs are the shared-memory entries: polling copies them as is.
static_assert(sizeof(iwarp_wc) == sizeof(ai::Cqe));
static_assert(offsetof(iwarp_wc, status) == offsetof(ai::Cqe, status));
static_assert(offsetof(iwarp_wc, term_code) == offsetof(ai::Cqe, term_code));
static_assert(sizeof(iwarp_event) == sizeof(ai::Event));
static_assert(offsetof(iwarp_event, private_data) == offsetof(ai::Event, private_data));
static_assert(offsetof(iwarp_event, peer_ipv4) == offsetof(ai::Event, peer_ip));
static_assert(sizeof(iwarp_sge) == sizeof(ai::Sge));
static_assert(IWARP_MAX_SGE == ai::kMaxSge && IWARP_MAX_PRIVATE_DATA == ai::kMaxPrivateData);
// The C API's code points are common/verbs.h's, value for value.
static_assert(IWARP_WR_SEND == static_cast<int>(ai::WrOpcode::kSend));
static_assert(IWARP_WR_SEND_WITH_INV == static_cast<int>(ai::WrOpcode::kSendInvalidate));
static_assert(IWARP_WR_SEND_WITH_SE == static_cast<int>(ai::WrOpcode::kSendSe));
static_assert(IWARP_WR_SEND_WITH_SE_INV == static_cast<int>(ai::WrOpcode::kSendSeInvalidate));
static_assert(IWARP_WR_RDMA_WRITE == static_cast<int>(ai::WrOpcode::kRdmaWrite));
static_assert(IWARP_WR_RDMA_READ == static_cast<int>(ai::WrOpcode::kRdmaRead));
static_assert(ai::kNumWrOpcodes == 6);
static_assert(IWARP_WC_SUCCESS == static_cast<int>(ai::WcStatus::kSuccess));
static_assert(IWARP_WC_LOC_LEN_ERR == static_cast<int>(ai::WcStatus::kLocalLength));
static_assert(IWARP_WC_LOC_PROT_ERR == static_cast<int>(ai::WcStatus::kLocalProtection));
static_assert(IWARP_WC_LOC_QP_OP_ERR == static_cast<int>(ai::WcStatus::kLocalQpOperation));
static_assert(IWARP_WC_WR_FLUSH_ERR == static_cast<int>(ai::WcStatus::kFlushed));
static_assert(IWARP_WC_REM_ACCESS_ERR == static_cast<int>(ai::WcStatus::kRemoteAccess));
static_assert(IWARP_WC_REM_INV_REQ_ERR == static_cast<int>(ai::WcStatus::kRemoteInvalidRequest));
static_assert(IWARP_WC_REM_OP_ERR == static_cast<int>(ai::WcStatus::kRemoteOperation));
static_assert(IWARP_WC_FATAL_ERR == static_cast<int>(ai::WcStatus::kFatal));
static_assert(iwarp::verbs::kNumWcStatuses == 9);
static_assert(IWARP_WC_SEND == static_cast<int>(ai::WcOpcode::kSend));
static_assert(IWARP_WC_RDMA_WRITE == static_cast<int>(ai::WcOpcode::kRdmaWrite));
static_assert(IWARP_WC_RDMA_READ == static_cast<int>(ai::WcOpcode::kRdmaRead));
static_assert(IWARP_WC_RECV == static_cast<int>(ai::WcOpcode::kRecv));
static_assert(iwarp::verbs::kNumWcOpcodes == 4);
static_assert(IWARP_EVENT_DEVICE_FATAL == static_cast<int>(ai::EventType::kDeviceFatal));

struct iwarp_session {
  ai::UniqueFd sock;
  ai::UniqueFd doorbell;  // our eventfd: we write, the daemon watches it
  ai::UniqueFd eventfd;   // read end of the daemon's event pipe: a byte per wake-up
  ai::Mapping eq_shm;
  ai::SpscRing<ai::Event> eq;
  std::mutex mu;  // control calls
  uint32_t seq = 0;
  std::string last_error;
  std::atomic<bool> dead{false};  // set by any thread that sees the daemon gone
  bool fatal_reported = false;
  struct Block {
    ai::Mapping map;
  };
  std::map<uintptr_t, std::unique_ptr<Block>> blocks;  // by address
  std::set<iwarp_cq*> cqs;  // released by iwarp_close if still alive
  std::set<iwarp_qp*> qps;
  ~iwarp_session();
};

struct iwarp_cq {
  iwarp_session* s;
  uint32_t id;
  ai::Mapping shm;
  ai::SpscRing<ai::Cqe> ring;
  ai::UniqueFd wake;   // read end of the CQ's wake-up pipe (the daemon writes a byte per wake-up)
  ai::UniqueFd epoll;  // the waits sleep here (MakeWaitSet)
  uint32_t arms = 0;   // waits armed since the pipe was last emptied (WaitDoorbell)
};

struct iwarp_qp {
  iwarp_session* s;
  uint32_t id;
  ai::Mapping shm;
  ai::SpscRing<ai::Sqe> sq;
  ai::SpscRing<ai::Rqe> rq;
  ai::QpNotify* notify;  // in shm
  iwarp_cq* rcq;         // its wake-up pipe carries the notify doorbell
};

iwarp_session::~iwarp_session() {
  for (iwarp_qp* qp : qps) delete qp;
  for (iwarp_cq* cq : cqs) delete cq;
}

namespace {

int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// One request/response exchange. Returns 0 or -errno; `resp_fds` (an array
// of ai::kMaxFds, or nullptr) receives the descriptors the daemon sent, in
// order.
int Call(iwarp_session* s, ai::Op op, const void* body, size_t body_len, const int* fds, int nfds,
         ai::Message* resp, ai::UniqueFd* resp_fds) {
  if (s->dead) return -EPIPE;
  ai::Message req;
  req.hdr.op = static_cast<uint32_t>(op);
  req.hdr.seq = ++s->seq;
  req.hdr.body_len = static_cast<uint32_t>(body_len);
  if (body_len > 0) std::memcpy(req.body, body, body_len);
  if (int e = ai::SendMessage(s->sock.get(), req, fds, nfds); e != 0) {
    s->dead = true;
    return -EPIPE;
  }
  for (;;) {
    pollfd p{s->sock.get(), POLLIN, 0};
    if (poll(&p, 1, -1) < 0 && errno != EINTR) return -errno;
    int rfds[ai::kMaxFds];
    int rn = 0;
    const long n = ai::RecvMessage(s->sock.get(), resp, rfds, &rn);
    if (n == -EAGAIN) continue;
    if (n <= 0) {
      s->dead = true;
      return -EPIPE;
    }
    for (int i = 0; i < rn; ++i) {
      if (resp_fds != nullptr) {
        resp_fds[i].Reset(rfds[i]);
      } else {
        close(rfds[i]);
      }
    }
    if (resp->hdr.seq != req.hdr.seq) continue;  // stale (cannot happen: one in flight)
    if (resp->hdr.error != 0) {
      const size_t l = std::min<size_t>(resp->hdr.body_len, ai::kMaxErrorText);
      s->last_error.assign(reinterpret_cast<const char*>(resp->body), strnlen(reinterpret_cast<const char*>(resp->body), l));
      return -resp->hdr.error;
    }
    s->last_error.clear();
    return 0;
  }
}

template <typename T>
int CallSimple(iwarp_session* s, ai::Op op, const T& body, uint32_t* id_out) {
  std::lock_guard<std::mutex> l(s->mu);
  ai::Message resp;
  const int e = Call(s, op, &body, sizeof(body), nullptr, 0, &resp, nullptr);
  if (e == 0 && id_out != nullptr) {
    ai::IdResp r;
    std::memcpy(&r, resp.body, sizeof(r));
    *id_out = r.id;
  }
  return e;
}

void RingDoorbell(iwarp_session* s) {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(s->doorbell.get(), &one, sizeof(one));
}

// Reads what the daemon wrote into a wake-up pipe (never blocks: the end is
// non-blocking). Bounded: a few reads of a pipe's worth at most.
void DrainPipe(int fd) {
  uint8_t buf[4096];
  for (int i = 0; i < 16 && read(fd, buf, sizeof(buf)) == static_cast<ssize_t>(sizeof(buf)); ++i) {
  }
}

// The waits sleep edge-triggered on the wake-up pipe and do not read it on
// every wake-up (one system call less each time). The daemon writes at most
// one byte per armed wait, so emptying the pipe every kArmsPerDrain arms
// keeps it far from full (a pipe holds at least one page, 4096 bytes; a
// full one would take no more bytes and so make no more edges).
constexpr uint32_t kArmsPerDrain = 1024;

// The sleep of iwarp_cq_wait and iwarp_qp_wait_writes: until `ready()`, on
// the CQ's wait set (MakeWaitSet). `arm()` announces the waiter, fences and
// rechecks (true: ready after all, nothing armed) as in the doorbell
// handshake of spsc_ring.h; `disarm()` withdraws it. One deadline for the
// whole call: a wake-up that finds nothing (a stale doorbell) must not
// restart the timeout. The session socket is watched for hang-up only: a
// response to another thread's control call must not wake this wait.
constexpr uint64_t kWaitDoorbell = 0;
constexpr uint64_t kWaitSession = 1;

template <typename Ready, typename Arm, typename Disarm>
int WaitDoorbell(iwarp_cq* cq, int timeout_ms, Ready ready, Arm arm, Disarm disarm) {
  iwarp_session* s = cq->s;
  const int epfd = cq->epoll.get();
  const int64_t deadline_ms = timeout_ms < 0 ? -1 : MonotonicMs() + timeout_ms;
  for (;;) {
    if (ready()) return 0;
    if (++cq->arms >= kArmsPerDrain) {
      cq->arms = 0;
      DrainPipe(cq->wake.get());
    }
    if (arm()) return 0;
    int wait_ms = -1;
    if (deadline_ms >= 0) {
      const int64_t left = deadline_ms - MonotonicMs();
      if (left <= 0) {
        disarm();
        return -ETIMEDOUT;
      }
      wait_ms = static_cast<int>(left);
    }
    epoll_event ev[2];
    const int r = epoll_wait(epfd, ev, 2, wait_ms);
    if (r < 0 && errno != EINTR) {
      const int e = -errno;
      disarm();
      return e;
    }
    for (int i = 0; i < r; ++i) {
      if (ev[i].data.u64 == kWaitSession &&
          (ev[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)) != 0) {
        s->dead = true;
        disarm();
        return ready() ? 0 : -EPIPE;
      }
    }
  }
}

// A CQ's wait set: its wake-up pipe edge-triggered (each write by the
// daemon is one event, whatever the pipe holds, so it is read only now and
// then: one system call per wake-up instead of poll + read) and the session
// socket for hang-up (level-triggered: it stays reported once the daemon is
// gone). Returns 0 or -errno.
int MakeWaitSet(int efd, int session_sock, ai::UniqueFd* out) {
  ai::UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return -errno;
  epoll_event door{};
  door.events = EPOLLIN | EPOLLET;
  door.data.u64 = kWaitDoorbell;
  epoll_event hup{};
  hup.events = EPOLLRDHUP;
  hup.data.u64 = kWaitSession;
  if (epoll_ctl(ep.get(), EPOLL_CTL_ADD, efd, &door) != 0 ||
      epoll_ctl(ep.get(), EPOLL_CTL_ADD, session_sock, &hup) != 0) {
    return -errno;
  }
  *out = std::move(ep);
  return 0;
}

}  // namespace

extern "C" {

int iwarp_open(const char* socket_path, iwarp_session** out) {
  *out = nullptr;
  std::string path = socket_path != nullptr ? socket_path : "";
  if (path.empty()) {
    const char* env = getenv("IWARPD_SOCKET");
    path = env != nullptr ? env : "/run/iwarpd/iwarpd.sock";
  }
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return -ENAMETOOLONG;
  auto s = std::make_unique<iwarp_session>();
  s->sock.Reset(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s->sock.valid()) return -errno;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (connect(s->sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -errno;
  s->doorbell.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s->doorbell.valid()) return -errno;
  ai::OpenReq req;
  const int fd = s->doorbell.get();
  ai::Message resp;
  ai::UniqueFd rfds[ai::kMaxFds];  // event ring memfd, event wake-up pipe
  if (int e = Call(s.get(), ai::Op::kOpen, &req, sizeof(req), &fd, 1, &resp, rfds); e != 0) {
    return e;
  }
  ai::OpenResp r;
  std::memcpy(&r, resp.body, sizeof(r));
  if (!rfds[0].valid() || !rfds[1].valid() || !ai::IsPowerOfTwo(r.event_depth)) return -EPROTO;
  s->eventfd = std::move(rfds[1]);
  auto m = ai::Mapping::MapForeign(rfds[0].get(), 0, r.event_ring_bytes);
  if (!m.ok()) return -EPROTO;
  s->eq_shm = std::move(*m);
  s->eq = ai::SpscRing<ai::Event>(s->eq_shm.data(), r.event_depth);
  s->eq.AttachAsConsumer();
  *out = s.release();
  return 0;
}

void iwarp_close(iwarp_session* s) {
  // Closing the socket is the protocol's "session over": the daemon flushes
  // and frees everything the session owned.
  delete s;
}

const char* iwarp_last_error(const iwarp_session* s) { return s->last_error.c_str(); }

int iwarp_alloc_pd(iwarp_session* s, uint32_t* pd) {
  return CallSimple(s, ai::Op::kAllocPd, ai::IdReq{}, pd);
}
int iwarp_dealloc_pd(iwarp_session* s, uint32_t pd) {
  return CallSimple(s, ai::Op::kDeallocPd, ai::IdReq{pd}, nullptr);
}

int iwarp_mem_alloc(iwarp_session* s, size_t length, uint32_t flags, void** addr) {
  auto m = ai::Mapping::CreateMemfd("iwarp-mem", length, (flags & IWARP_MEM_HUGETLB) != 0);
  if (!m.ok()) return -ENOMEM;
  auto b = std::make_unique<iwarp_session::Block>();
  b->map = std::move(*m);
  *addr = b->map.data();
  std::lock_guard<std::mutex> l(s->mu);
  s->blocks.emplace(reinterpret_cast<uintptr_t>(*addr), std::move(b));
  return 0;
}

int iwarp_mem_free(iwarp_session* s, void* addr) {
  std::lock_guard<std::mutex> l(s->mu);
  return s->blocks.erase(reinterpret_cast<uintptr_t>(addr)) == 1 ? 0 : -ENOENT;
}

int iwarp_reg_mr_fd(iwarp_session* s, uint32_t pd, int fd, uint64_t offset, size_t length,
                    void* addr, uint32_t access, iwarp_mr* out) {
  ai::RegMrReq req;
  req.pd = pd;
  req.access = access & 0xFFu;
  req.offset = offset;
  req.length = length;
  req.va = reinterpret_cast<uintptr_t>(addr);
  req.remote_invalidate = (access & IWARP_ACCESS_NO_REMOTE_INVALIDATE) ? 0 : 1;
  std::lock_guard<std::mutex> l(s->mu);
  ai::Message resp;
  const int e = Call(s, ai::Op::kRegMr, &req, sizeof(req), &fd, 1, &resp, nullptr);
  if (e != 0) return e;
  ai::IdResp r;
  std::memcpy(&r, resp.body, sizeof(r));
  out->stag = r.id;
  out->addr = req.va;
  out->length = length;
  return 0;
}

int iwarp_reg_mr(iwarp_session* s, uint32_t pd, void* addr, size_t length, uint32_t access,
                 iwarp_mr* out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  int fd = -1;
  uint64_t offset = 0;
  {
    std::lock_guard<std::mutex> l(s->mu);
    auto it = s->blocks.upper_bound(a);
    if (it == s->blocks.begin()) return -EFAULT;
    --it;
    const ai::Mapping& m = it->second->map;
    if (a - it->first > m.size() || length > m.size() - (a - it->first)) return -EFAULT;
    fd = m.fd();
    offset = a - it->first;
  }
  return iwarp_reg_mr_fd(s, pd, fd, offset, length, addr, access, out);
}

int iwarp_dereg_mr(iwarp_session* s, uint32_t stag) {
  return CallSimple(s, ai::Op::kDeregMr, ai::IdReq{stag}, nullptr);
}
int iwarp_invalidate_stag(iwarp_session* s, uint32_t stag) {
  return CallSimple(s, ai::Op::kInvalidate, ai::IdReq{stag}, nullptr);
}

int iwarp_create_cq(iwarp_session* s, uint32_t depth, iwarp_cq** out) {
  *out = nullptr;
  ai::CreateCqReq req{depth};
  std::lock_guard<std::mutex> l(s->mu);
  ai::Message resp;
  ai::UniqueFd rfds[ai::kMaxFds];  // ring memfd, wake-up pipe
  if (int e = Call(s, ai::Op::kCreateCq, &req, sizeof(req), nullptr, 0, &resp, rfds); e != 0) {
    return e;
  }
  ai::CreateCqResp r;
  std::memcpy(&r, resp.body, sizeof(r));
  if (!rfds[0].valid() || !rfds[1].valid()) return -EPROTO;
  ai::UniqueFd ep;
  if (int e = MakeWaitSet(rfds[1].get(), s->sock.get(), &ep); e != 0) return e;
  auto m = ai::Mapping::MapForeign(rfds[0].get(), 0, r.ring_bytes);
  if (!m.ok() || !ai::IsPowerOfTwo(r.depth)) return -EPROTO;
  auto cq = new (std::nothrow)
      iwarp_cq{s, r.cq, std::move(*m), {}, std::move(rfds[1]), std::move(ep), 0};
  if (cq == nullptr) return -ENOMEM;
  cq->ring = ai::SpscRing<ai::Cqe>(cq->shm.data(), r.depth);
  cq->ring.AttachAsConsumer();
  s->cqs.insert(cq);
  *out = cq;
  return 0;
}

int iwarp_destroy_cq(iwarp_cq* cq) {
  iwarp_session* s = cq->s;
  const int e = CallSimple(s, ai::Op::kDestroyCq, ai::IdReq{cq->id}, nullptr);
  if (e == 0 || e == -EPIPE) {
    std::lock_guard<std::mutex> l(s->mu);
    s->cqs.erase(cq);
    delete cq;
  }
  return e;
}

int iwarp_poll_cq(iwarp_cq* cq, iwarp_wc* wc, int max) {
  const int64_t avail = cq->ring.Available();
  if (avail < 0) return -EPROTO;
  const int n = avail < max ? static_cast<int>(avail) : max;
  for (int i = 0; i < n; ++i) {
    ai::Cqe c;
    cq->ring.Peek(static_cast<uint32_t>(i), &c);
    std::memcpy(&wc[i], &c, sizeof(c));
  }
  if (n > 0) cq->ring.Consume(static_cast<uint32_t>(n));
  return n;
}

int iwarp_cq_wait(iwarp_cq* cq, int timeout_ms) {
  return WaitDoorbell(
      cq, timeout_ms, [cq] { return cq->ring.Available() != 0; },
      [cq] {
        if (!cq->ring.PrepareToWait()) return false;
        cq->ring.CancelWait();
        return true;
      },
      [cq] { cq->ring.CancelWait(); });
}

int iwarp_cq_fd(const iwarp_cq* cq) { return cq->wake.get(); }

int iwarp_cq_arm(iwarp_cq* cq) {
  if (cq->s->dead) return -EPIPE;
  DrainPipe(cq->wake.get());
  if (!cq->ring.PrepareToWait()) return 0;
  cq->ring.CancelWait();
  return 1;
}

int iwarp_event_fd(const iwarp_session* s) { return s->eventfd.get(); }

int iwarp_event_arm(iwarp_session* s) {
  if (s->dead) return -EPIPE;
  DrainPipe(s->eventfd.get());
  if (!s->eq.PrepareToWait()) return 0;
  s->eq.CancelWait();
  return 1;
}

uint64_t iwarp_qp_writes_placed(const iwarp_qp* qp) {
  return qp->notify->writes_placed.load(std::memory_order_acquire);
}

int iwarp_qp_wait_writes(iwarp_qp* qp, uint64_t seen, int timeout_ms) {
  ai::QpNotify* n = qp->notify;
  auto placed = [n, seen] { return n->writes_placed.load(std::memory_order_acquire) != seen; };
  return WaitDoorbell(
      qp->rcq, timeout_ms, placed,
      [n, placed] {
        n->waiter.store(1, std::memory_order_relaxed);
        ai::FenceBeforeWaitCheck();
        if (!placed()) return false;
        n->waiter.store(0, std::memory_order_relaxed);
        return true;
      },
      [n] { n->waiter.store(0, std::memory_order_relaxed); });
}

int iwarp_create_qp(iwarp_session* s, const iwarp_qp_attr* attr, iwarp_qp** out) {
  *out = nullptr;
  if (attr->send_cq == nullptr || attr->recv_cq == nullptr) return -EINVAL;
  ai::CreateQpReq req{attr->pd, attr->send_cq->id, attr->recv_cq->id, attr->sq_depth,
                      attr->rq_depth};
  std::lock_guard<std::mutex> l(s->mu);
  ai::Message resp;
  ai::UniqueFd rfds[ai::kMaxFds];  // SQ/RQ memfd
  ai::UniqueFd& shm_fd = rfds[0];
  if (int e = Call(s, ai::Op::kCreateQp, &req, sizeof(req), nullptr, 0, &resp, rfds); e != 0) {
    return e;
  }
  ai::CreateQpResp r;
  std::memcpy(&r, resp.body, sizeof(r));
  ai::QpLayout layout{r.sq_depth, r.rq_depth};
  if (!ai::IsPowerOfTwo(r.sq_depth) || !ai::IsPowerOfTwo(r.rq_depth) ||
      layout.bytes() != r.shm_bytes) {
    return -EPROTO;
  }
  auto m = ai::Mapping::MapForeign(shm_fd.get(), 0, layout.bytes());
  if (!m.ok()) return -EPROTO;
  auto qp = new (std::nothrow) iwarp_qp{s, r.qp, std::move(*m), {}, {}, nullptr, attr->recv_cq};
  if (qp == nullptr) return -ENOMEM;
  qp->sq = ai::SpscRing<ai::Sqe>(qp->shm.data() + layout.sq_offset(), layout.sq_depth);
  qp->rq = ai::SpscRing<ai::Rqe>(qp->shm.data() + layout.rq_offset(), layout.rq_depth);
  qp->notify = reinterpret_cast<ai::QpNotify*>(qp->shm.data() + layout.notify_offset());
  qp->sq.AttachAsProducer();
  qp->rq.AttachAsProducer();
  s->qps.insert(qp);
  *out = qp;
  return 0;
}

int iwarp_destroy_qp(iwarp_qp* qp) {
  iwarp_session* s = qp->s;
  const int e = CallSimple(s, ai::Op::kDestroyQp, ai::IdReq{qp->id}, nullptr);
  if (e == 0 || e == -EPIPE) {
    std::lock_guard<std::mutex> l(s->mu);
    s->qps.erase(qp);
    delete qp;
  }
  return e;
}

uint32_t iwarp_qp_id(const iwarp_qp* qp) { return qp->id; }

int iwarp_post_send(iwarp_qp* qp, const iwarp_send_wr* wrs, uint32_t n) {
  const int64_t free_slots = qp->sq.FreeSlots();
  if (free_slots < 0) return -EPROTO;
  const uint32_t count = n < free_slots ? n : static_cast<uint32_t>(free_slots);
  for (uint32_t i = 0; i < count; ++i) {
    const iwarp_send_wr& w = wrs[i];
    if (w.num_sge > ai::kMaxSge || w.opcode >= ai::kNumWrOpcodes ||
        (w.num_sge > 0 && w.sg_list == nullptr)) {
      if (i > 0) qp->sq.Publish(i);
      return i > 0 ? static_cast<int>(i) : -EINVAL;
    }
    ai::Sqe e;
    e.wr_id = w.wr_id;
    e.opcode = static_cast<uint8_t>(w.opcode);
    e.flags = static_cast<uint8_t>(w.flags & ai::kWrSignaled);
    e.num_sge = static_cast<uint8_t>(w.num_sge);
    e.invalidate_stag = w.invalidate_stag;
    e.remote_addr = w.remote_addr;
    e.rkey = w.rkey;
    for (uint32_t k = 0; k < w.num_sge; ++k) e.sge[k] = {w.sg_list[k].addr, w.sg_list[k].length, w.sg_list[k].lkey};
    qp->sq.Stage(i, e);
  }
  if (count == 0) return 0;
  qp->sq.Publish(count);
  if (qp->sq.TakeWakeRequest()) RingDoorbell(qp->s);
  return static_cast<int>(count);
}

int iwarp_post_recv(iwarp_qp* qp, const iwarp_recv_wr* wrs, uint32_t n) {
  const int64_t free_slots = qp->rq.FreeSlots();
  if (free_slots < 0) return -EPROTO;
  const uint32_t count = n < free_slots ? n : static_cast<uint32_t>(free_slots);
  for (uint32_t i = 0; i < count; ++i) {
    const iwarp_recv_wr& w = wrs[i];
    if (w.num_sge > ai::kMaxSge || (w.num_sge > 0 && w.sg_list == nullptr)) {
      if (i > 0) qp->rq.Publish(i);
      return i > 0 ? static_cast<int>(i) : -EINVAL;
    }
    ai::Rqe e;
    e.wr_id = w.wr_id;
    e.num_sge = w.num_sge;
    for (uint32_t k = 0; k < w.num_sge; ++k) e.sge[k] = {w.sg_list[k].addr, w.sg_list[k].length, w.sg_list[k].lkey};
    qp->rq.Stage(i, e);
  }
  if (count > 0) qp->rq.Publish(count);
  return static_cast<int>(count);
}

int iwarp_listen(iwarp_session* s, const iwarp_addr* addr, uint32_t* listener_id) {
  return iwarp_listen_opts(s, addr, nullptr, listener_id);
}

namespace {
// -EINVAL unless `o` is a valid options struct (reserved fields zero).
int CheckOpts(const iwarp_conn_opts* o) {
  if (o == nullptr) return 0;
  for (uint32_t r : o->reserved) {
    if (r != 0) return -EINVAL;
  }
  if (o->transport != IWARP_TRANSPORT_TCP && o->transport != IWARP_TRANSPORT_SCTP) return -EINVAL;
  if ((o->flags & ~uint32_t{IWARP_CONN_MPA}) != 0) return -EINVAL;
  if ((o->mpa_flags & ~uint32_t{IWARP_MPA_CRC | IWARP_MPA_MARKERS}) != 0) return -EINVAL;
  if ((o->flags & IWARP_CONN_MPA) == 0 && o->mpa_flags != 0) return -EINVAL;
  if (o->transport == IWARP_TRANSPORT_SCTP && o->flags != 0) return -EINVAL;
  return 0;
}
}  // namespace

static_assert(IWARP_TRANSPORT_TCP == static_cast<uint32_t>(ai::Transport::kTcp) &&
              IWARP_TRANSPORT_SCTP == static_cast<uint32_t>(ai::Transport::kSctp));

int iwarp_listen_opts(iwarp_session* s, const iwarp_addr* addr, const iwarp_conn_opts* opts,
                      uint32_t* listener_id) {
  if (int err = CheckOpts(opts); err != 0) return err;
  if (opts != nullptr && opts->flags != 0) return -EINVAL;  // connect-only options
  ai::ListenReq req{addr->ipv4, addr->port, 0};
  req.transport = opts != nullptr ? opts->transport : uint32_t{IWARP_TRANSPORT_TCP};
  return CallSimple(s, ai::Op::kListen, req, listener_id);
}
int iwarp_unlisten(iwarp_session* s, uint32_t listener_id) {
  return CallSimple(s, ai::Op::kUnlisten, ai::IdReq{listener_id}, nullptr);
}

namespace {
int Connect(iwarp_qp* qp, const iwarp_addr* addr, const void* pd, uint32_t len, uint16_t flags,
            uint32_t transport = IWARP_TRANSPORT_TCP) {
  if (len > ai::kMaxPrivateData || (len > 0 && pd == nullptr)) return -EINVAL;
  ai::ConnectReq req;
  req.qp = qp->id;
  req.ipv4 = addr->ipv4;
  req.port = addr->port;
  req.mpa_flags = flags;
  req.transport = transport;
  req.private_data_len = len;
  if (len > 0) std::memcpy(req.private_data, pd, len);
  return CallSimple(qp->s, ai::Op::kConnect, req, nullptr);
}
}  // namespace

static_assert(IWARP_MPA_STATE_WIRE == ai::kEvMpaWire && IWARP_MPA_STATE_CRC == ai::kEvMpaCrc &&
              IWARP_MPA_STATE_TX_MARKERS == ai::kEvMpaTxMarkers &&
              IWARP_MPA_STATE_RX_MARKERS == ai::kEvMpaRxMarkers &&
              IWARP_MPA_STATE_SCTP == ai::kEvMpaSctp);

int iwarp_connect_opts(iwarp_qp* qp, const iwarp_addr* addr, const void* pd, uint32_t len,
                       const iwarp_conn_opts* opts) {
  if (int err = CheckOpts(opts); err != 0) return err;
  if (opts == nullptr) return Connect(qp, addr, pd, len, 0);
  uint16_t f = 0;
  if ((opts->flags & IWARP_CONN_MPA) != 0) {
    f = ai::kMpaOverride;
    if ((opts->mpa_flags & IWARP_MPA_CRC) != 0) f |= ai::kMpaCrc;
    if ((opts->mpa_flags & IWARP_MPA_MARKERS) != 0) f |= ai::kMpaMarkers;
  }
  return Connect(qp, addr, pd, len, f, opts->transport);
}

int iwarp_connect(iwarp_qp* qp, const iwarp_addr* addr, const void* pd, uint32_t len) {
  return Connect(qp, addr, pd, len, 0);
}

int iwarp_connect_mpa(iwarp_qp* qp, const iwarp_addr* addr, const void* pd, uint32_t len,
                      uint32_t mpa_flags) {
  if ((mpa_flags & ~uint32_t{IWARP_MPA_CRC | IWARP_MPA_MARKERS}) != 0) return -EINVAL;
  uint16_t f = ai::kMpaOverride;
  if ((mpa_flags & IWARP_MPA_CRC) != 0) f |= ai::kMpaCrc;
  if ((mpa_flags & IWARP_MPA_MARKERS) != 0) f |= ai::kMpaMarkers;
  return Connect(qp, addr, pd, len, f);
}

int iwarp_accept(iwarp_session* s, uint32_t request_id, iwarp_qp* qp, const void* pd,
                 uint32_t len) {
  if (len > ai::kMaxPrivateData || (len > 0 && pd == nullptr)) return -EINVAL;
  ai::AcceptReq req;
  req.request_id = request_id;
  req.qp = qp->id;
  req.private_data_len = len;
  if (len > 0) std::memcpy(req.private_data, pd, len);
  return CallSimple(s, ai::Op::kAccept, req, nullptr);
}

int iwarp_reject(iwarp_session* s, uint32_t request_id, const void* pd, uint32_t len) {
  if (len > ai::kMaxPrivateData || (len > 0 && pd == nullptr)) return -EINVAL;
  ai::RejectReq req;
  req.request_id = request_id;
  req.private_data_len = len;
  if (len > 0) std::memcpy(req.private_data, pd, len);
  return CallSimple(s, ai::Op::kReject, req, nullptr);
}

int iwarp_disconnect(iwarp_qp* qp) {
  return CallSimple(qp->s, ai::Op::kDisconnect, ai::IdReq{qp->id}, nullptr);
}

int iwarp_get_event(iwarp_session* s, iwarp_event* ev, int timeout_ms) {
  // One deadline for the whole call, as in WaitDoorbell: a wake-up that
  // finds nothing (a stale pipe byte) or a signal must not restart the
  // timeout, or a process with a periodic timer signal would never see 0.
  const int64_t deadline_ms = timeout_ms < 0 ? -1 : MonotonicMs() + timeout_ms;
  for (;;) {
    ai::Event e;
    if (s->eq.Pop(&e)) {
      std::memcpy(ev, &e, sizeof(e));
      return 1;
    }
    if (s->dead) {
      if (s->fatal_reported) return -EPIPE;
      s->fatal_reported = true;
      std::memset(ev, 0, sizeof(*ev));
      ev->type = IWARP_EVENT_DEVICE_FATAL;
      ev->reason = EPIPE;
      return 1;
    }
    if (s->eq.PrepareToWait()) {
      s->eq.CancelWait();
      continue;
    }
    int wait_ms = -1;
    if (deadline_ms >= 0) {
      const int64_t left = deadline_ms - MonotonicMs();
      if (left <= 0 && timeout_ms != 0) {
        s->eq.CancelWait();
        return 0;
      }
      wait_ms = static_cast<int>(std::max<int64_t>(left, 0));
    }
    pollfd p[2] = {{s->eventfd.get(), POLLIN, 0}, {s->sock.get(), POLLRDHUP, 0}};
    const int n = poll(p, 2, wait_ms);
    s->eq.CancelWait();
    if (n < 0 && errno != EINTR) return -errno;
    if (n == 0) return 0;
    if ((p[1].revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0) s->dead = true;
    if (p[0].revents & POLLIN) DrainPipe(s->eventfd.get());
  }
}

}  // extern "C"
