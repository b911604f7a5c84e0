#include "nfs/nfs_service.h"

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "nfs/text.h"
#include "absl/strings/str_format.h"
#include "libiwarp/iwarp.h"
#include "rpcrdma/rdma_transport.h"
#include "rpcrdma/rpc_rpcbind.h"
#include "rpcrdma/rpc_tcp.h"

namespace iwarp::nfs {

using rpc::CallContext;
using rpc::CallHandle;
using rpc::ProcStatus;

struct NfsService::Job {
  enum class State : uint8_t { kQueued, kRunning, kDone, kReplied };
  uint64_t id = 0;
  uint32_t proc = 0;
  NfsArgs args;
  Caller caller;
  CallHandle handle;
  NfsResult result;
  IoBuffer read_buf;
  bool drc = false;
  DrcKey drc_key;
  // Under mu_.
  State state = State::kQueued;
  bool cancelled = false;  // skip it (its call is void)
  bool dead = false;       // its call is void: free it when drained
};

namespace {

std::string Ipv4String(uint32_t ip) {
  return absl::StrFormat("%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

// Checksum of the rest of the arguments (the DRC key's last part).
uint64_t RestChecksum(const rpc::XdrDecoder& args) {
  rpc::XdrDecoder d = args;
  uint64_t h = ArgsChecksum({});
  std::array<uint8_t, 4096> scratch;
  while (d.ok() && d.remaining() >= 4) {
    const size_t n = std::min<uint64_t>(d.remaining(), scratch.size()) & ~size_t{3};
    const ByteSpan b = d.OpaqueFixed(n, scratch);
    h = ArgsChecksum(b, h);
  }
  return h;
}

}  // namespace

std::string FormatCounters(const NfsCounters& c) {
  std::string out;
  for (size_t i = 0; i < kProc3Count; ++i) {
    if (c.calls[i] != 0) CatTo(&out, "nfs_calls_", Proc3Name(static_cast<uint32_t>(i)), " ", c.calls[i], "\n");
  }
  for (size_t i = 0; i < kNfsStat3Count; ++i) {
    if (c.status[i] != 0) CatTo(&out, "nfs_status_", NfsStat3Name(kAllNfsStat3[i]), " ", c.status[i], "\n");
  }
  for (size_t i = 0; i < kMountProcCount; ++i) {
    if (c.mount_calls[i] != 0) {
      CatTo(&out, "mount_calls_", MountProcName(static_cast<uint32_t>(i)), " ", c.mount_calls[i], "\n");
    }
  }
  CatTo(&out, "mount_refused ", c.mount_refused, "\n", "garbage_args ", c.garbage_args, "\n",
                  "bytes_read ", c.bytes_read, "\n", "bytes_written ", c.bytes_written, "\n", "drc_hits ",
                  c.drc_hits, "\n", "drc_in_progress_drops ", c.drc_in_progress, "\n", "io_jobs ", c.io_jobs, "\n",
                  "io_queue_depth ", c.io_queue_depth, "\n", "io_queue_depth_max ", c.io_queue_depth_max, "\n",
                  "jobs_voided ", c.jobs_voided, "\n");
  return out;
}

NfsService::NfsService(const NfsdConfig& config, FileSystem& fs, rpc::RpcServer& rpc)
    : config_(config), fs_(fs), rpc_(rpc) {}

absl::StatusOr<std::unique_ptr<NfsService>> NfsService::Create(const NfsdConfig& config, FileSystem& fs,
                                                               rpc::RpcServer& rpc) {
  std::unique_ptr<NfsService> s(new NfsService(config, fs, rpc));
  s->event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->event_fd_ < 0) return absl::InternalError(Cat("eventfd: ", strerror(errno)));
  NfsService* self = s.get();
  std::vector<rpc::ProcHandler> nfs(kProc3Count);
  for (uint32_t p = 0; p < kProc3Count; ++p) {
    nfs[p] = [self, p](CallContext& ctx) { return self->HandleNfs(ctx, p); };
  }
  std::vector<rpc::ProcHandler> mount(kMountProcCount);
  for (uint32_t p = 0; p < kMountProcCount; ++p) {
    mount[p] = [self, p](CallContext& ctx) { return self->HandleMount(ctx, p); };
  }
  if (absl::Status st = rpc.Register(kNfsProgram, kNfsVersion, std::move(nfs)); !st.ok()) return st;
  if (absl::Status st = rpc.Register(kMountProgram, kMountVersion, std::move(mount)); !st.ok()) return st;
  rpc.set_reply_done_hook([self](uint64_t cookie) { self->OnReplyDone(cookie); });
  for (uint32_t i = 0; i < config.io_threads; ++i) s->workers_.emplace_back([self] { self->Worker(); });
  return s;
}

NfsService::~NfsService() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  rpc_.set_reply_done_hook(nullptr);
  (void)rpc_.Unregister(kNfsProgram, kNfsVersion);
  (void)rpc_.Unregister(kMountProgram, kMountVersion);
  if (event_fd_ >= 0) close(event_fd_);
}

IoBuffer NfsService::TakeReadBuffer() {
  IoBuffer b;
  if (!read_buffers_.empty()) {
    b = read_buffers_.back();
    read_buffers_.pop_back();
    return b;
  }
  if (alloc_ && alloc_(&b) && b.size >= kMaxIo) return b;
  // No registered buffer left: heap memory (an RDMA transport then copies
  // the data once into its own registered memory).
  heap_buffers_.push_back(std::make_unique<uint8_t[]>(kMaxIo));
  return IoBuffer{heap_buffers_.back().get(), kMaxIo, 0};
}

ProcStatus NfsService::HandleNfs(CallContext& ctx, uint32_t proc) {
  ++counters_.calls[proc];
  if (proc == static_cast<uint32_t>(Proc3::kNull)) return ProcStatus::kSuccess;
  // RFC 1813 4.4: non-idempotent procedures go through the DRC. WRITE is
  // left out (its replay rewrites the same bytes) and so is COMMIT.
  const bool drc = IsModifying(proc) && proc != static_cast<uint32_t>(Proc3::kWrite) &&
                   proc != static_cast<uint32_t>(Proc3::kCommit);
  DrcKey key;
  if (drc) key = DrcKey{ctx.peer_ipv4, ctx.header.xid, proc, RestChecksum(ctx.args)};
  auto job = std::make_unique<Job>();
  if (!DecodeNfsArgs(proc, ctx.args, &job->args) || ctx.args.remaining() != 0) {
    ++counters_.garbage_args;
    return ProcStatus::kGarbageArgs;
  }
  if (drc) {
    ByteSpan cached;
    switch (drc_.Begin(key, &cached)) {
      case DrcLookup::kNew: break;
      case DrcLookup::kInProgress:
        ++counters_.drc_in_progress;
        return ProcStatus::kDrop;
      case DrcLookup::kReplay:
        ++counters_.drc_hits;
        ctx.results.OpaqueFixed(cached);
        return ProcStatus::kSuccess;
    }
  }
  job->id = next_job_++;
  job->proc = proc;
  job->handle = ctx.handle;
  job->drc = drc;
  job->drc_key = key;
  Caller& c = job->caller;
  c.peer_ipv4 = ctx.peer_ipv4;
  if (ctx.auth_sys != nullptr) {
    c.auth_sys = true;
    c.uid = ctx.auth_sys->uid;
    c.gid = ctx.auth_sys->gid;
    c.gid_count = std::min<uint32_t>(ctx.auth_sys->gid_count, 16);
    std::copy(ctx.auth_sys->gids.begin(), ctx.auth_sys->gids.begin() + c.gid_count, c.gids.begin());
  }
  if (proc == static_cast<uint32_t>(Proc3::kRead)) job->read_buf = TakeReadBuffer();
  ctx.reply_cookie = job->id;
  Job* raw = job.get();
  jobs_.emplace(job->id, std::move(job));
  ++counters_.io_jobs;
  counters_.io_queue_depth = jobs_.size();
  counters_.io_queue_depth_max = std::max(counters_.io_queue_depth_max, counters_.io_queue_depth);
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(raw);
  }
  work_cv_.notify_one();
  return ProcStatus::kDeferred;
}

void NfsService::Worker() {
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock<std::mutex> l(mu_);
      work_cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = queue_.front();
      queue_.pop_front();
      if (!job->cancelled) job->state = Job::State::kRunning;
    }
    if (!job->cancelled) {
      job->result = fs_.Execute(job->proc, job->args, job->caller,
                                MutableByteSpan(job->read_buf.data, job->read_buf.size));
      if (auto* rr = std::get_if<ReadRes>(&job->result)) rr->stag = job->read_buf.stag;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      job->state = Job::State::kDone;
      completed_.push_back(job);
    }
    done_cv_.notify_all();
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(event_fd_, &one, sizeof(one));
  }
}

void NfsService::Release(uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  if (it->second->read_buf.data != nullptr) read_buffers_.push_back(it->second->read_buf);
  jobs_.erase(it);
  counters_.io_queue_depth = jobs_.size();
}

void NfsService::DrainCompletions() {
  uint64_t n;
  [[maybe_unused]] ssize_t r = read(event_fd_, &n, sizeof(n));
  std::vector<Job*> done;
  {
    std::lock_guard<std::mutex> l(mu_);
    done.swap(completed_);
  }
  for (Job* job : done) {
    if (job->dead) {
      ++counters_.jobs_voided;
      if (job->drc) drc_.Abandon(job->drc_key);
      Release(job->id);
      continue;
    }
    rpc::XdrEncoder* e = rpc_.Results(job->handle);
    if (e == nullptr) {
      if (job->drc) drc_.Abandon(job->drc_key);
      Release(job->id);
      continue;
    }
    EncodeNfsResult(*e, job->result);
    const NfsStat3 st = ResultStatus(job->result);
    const size_t si = NfsStat3Index(st);
    if (si < kNfsStat3Count) ++counters_.status[si];
    if (st == NfsStat3::kOk) {
      if (const auto* rr = std::get_if<ReadRes>(&job->result)) counters_.bytes_read += rr->count;
      if (const auto* wr = std::get_if<WriteRes>(&job->result)) counters_.bytes_written += wr->count;
    }
    if (job->drc) {
      std::array<uint8_t, 4096> buf;
      rpc::XdrEncoder copy(buf);
      EncodeNfsResult(copy, job->result);
      rpc::Message m;
      if (copy.Finish(&m) && m.count() == 1) {
        drc_.Complete(job->drc_key, m[0].bytes);
      } else {
        drc_.Abandon(job->drc_key);
      }
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      job->state = Job::State::kReplied;
    }
    // The reply-done hook (now or later) releases the job.
    rpc_.Finish(job->handle, ProcStatus::kSuccess);
  }
}

void NfsService::OnReplyDone(uint64_t cookie) {
  auto it = jobs_.find(cookie);
  if (it == jobs_.end()) return;
  Job* job = it->second.get();
  std::unique_lock<std::mutex> l(mu_);
  switch (job->state) {
    case Job::State::kQueued:
      job->cancelled = true;
      job->dead = true;
      return;
    case Job::State::kRunning:
      // The worker may be reading WRITE data from the call's pieces, which
      // the transport frees after this returns: wait for it.
      done_cv_.wait(l, [&] { return job->state == Job::State::kDone; });
      job->dead = true;
      return;
    case Job::State::kDone:
      job->dead = true;  // DrainCompletions frees it
      return;
    case Job::State::kReplied:
      l.unlock();
      Release(cookie);
      return;
  }
}

ProcStatus NfsService::HandleMount(CallContext& ctx, uint32_t proc) {
  ++counters_.mount_calls[proc];
  switch (static_cast<MountProc>(proc)) {
    case MountProc::kNull:
      return ProcStatus::kSuccess;
    case MountProc::kMnt: {
      std::string path;
      if (!DecodeDirpath(ctx.args, &path) || ctx.args.remaining() != 0) {
        ++counters_.garbage_args;
        return ProcStatus::kGarbageArgs;
      }
      MntRes res;
      const Export* e = config_.FindByPath(path);
      const Fh3* fh = e != nullptr ? fs_.RootHandle(e->id) : nullptr;
      if (fh == nullptr) {
        res.status = MountStat3::kNoent;
        ++counters_.mount_refused;
      } else if (!e->Allows(ctx.peer_ipv4)) {
        res.status = MountStat3::kAcces;
        ++counters_.mount_refused;
      } else {
        res.fhandle = *fh;
        res.auth_flavors = {static_cast<uint32_t>(rpc::AuthFlavor::kSys), static_cast<uint32_t>(rpc::AuthFlavor::kNone)};
        bool known = false;
        for (const Mount& m : mounts_) known = known || (m.ipv4 == ctx.peer_ipv4 && m.path == e->path);
        if (!known && mounts_.size() < 4096) mounts_.push_back({ctx.peer_ipv4, e->path});
      }
      Encode(ctx.results, res);
      return ProcStatus::kSuccess;
    }
    case MountProc::kDump: {
      std::vector<MountEntry> list;
      for (const Mount& m : mounts_) list.push_back({Ipv4String(m.ipv4), m.path});
      EncodeMountList(ctx.results, list);
      return ProcStatus::kSuccess;
    }
    case MountProc::kUmnt: {
      std::string path;
      if (!DecodeDirpath(ctx.args, &path) || ctx.args.remaining() != 0) {
        ++counters_.garbage_args;
        return ProcStatus::kGarbageArgs;
      }
      while (path.size() > 1 && path.back() == '/') path.pop_back();
      std::erase_if(mounts_, [&](const Mount& m) { return m.ipv4 == ctx.peer_ipv4 && m.path == path; });
      return ProcStatus::kSuccess;
    }
    case MountProc::kUmntall:
      std::erase_if(mounts_, [&](const Mount& m) { return m.ipv4 == ctx.peer_ipv4; });
      return ProcStatus::kSuccess;
    case MountProc::kExport: {
      std::vector<ExportEntry> list;
      for (const Export& e : config_.exports) {
        ExportEntry x{e.path, {}};
        for (const ClientPrefix& p : e.clients) {
          x.groups.push_back(p.length == 32 ? Ipv4String(p.address)
                                            : Cat(Ipv4String(p.address), "/", p.length));
        }
        list.push_back(std::move(x));
      }
      EncodeExports(ctx.results, list);
      return ProcStatus::kSuccess;
    }
  }
  return ProcStatus::kSystemErr;
}

// ---------------------------------------------------------------- Nfsd

struct Nfsd::Impl {
  NfsdConfig config;
  std::unique_ptr<HandleCodec> codec;
  std::unique_ptr<FileSystem> fs;
  std::unique_ptr<rpc::RpcServer> rpc;
  std::unique_ptr<NfsService> service;
  std::unique_ptr<rpc::TcpServer> nfs_tcp;
  std::unique_ptr<rpc::TcpServer> mount_tcp;
  // NFS over RPC-over-RDMA through iwarpd (config.rdma).
  iwarp_session* session = nullptr;
  uint32_t pd = 0;
  std::unique_ptr<rpcrdma::RegPool> io_pool;  // registered READ buffers
  std::unique_ptr<rpcrdma::RdmaServer> rdma;
  int epoll_fd = -1;
  bool registered = false;
  ~Impl() {
    if (registered) {
      rpc::RpcbindUnregisterTcp(kNfsProgram, kNfsVersion);
      rpc::RpcbindUnregisterTcp(kMountProgram, kMountVersion);
    }
    // Transports first (they call into the RPC server on close), then the
    // service (joins workers), then the rest.
    nfs_tcp.reset();
    mount_tcp.reset();
    if (rdma != nullptr) rdma->DisconnectAll();
    rdma.reset();
    service.reset();
    rpc.reset();
    fs.reset();
    io_pool.reset();
    if (session != nullptr) iwarp_close(session);
    if (epoll_fd >= 0) close(epoll_fd);
  }
};

namespace {

std::string RdmaSocketName(const RdmaListen& r) {
  if (!r.socket.empty()) return r.socket;
  const char* env = getenv("IWARPD_SOCKET");
  return env != nullptr ? env : "/run/iwarpd/iwarpd.sock";
}

// READ buffers: registered slabs of kMaxIo buffers, so that READ data goes
// from the page cache into memory the RDMA transport writes from directly.
constexpr uint64_t kIoPoolBytes = uint64_t{128} << 20;

}  // namespace

absl::Status Nfsd::StartRdma(Impl& m) {
  const RdmaListen& r = m.config.rdma;
  const std::string sock = RdmaSocketName(r);
  if (int e = iwarp_open(r.socket.empty() ? nullptr : r.socket.c_str(), &m.session); e != 0) {
    return absl::UnavailableError(Cat("rdma.socket ", sock, ": cannot reach iwarpd: ", strerror(-e),
                                      "; start the iwarpd instance first, or remove the rdma section to serve "
                                      "NFS over TCP only"));
  }
  if (int e = iwarp_alloc_pd(m.session, &m.pd); e != 0) {
    return absl::UnavailableError(Cat("iwarpd at ", sock, ": alloc_pd: ", iwarp_last_error(m.session)));
  }
  m.io_pool = std::make_unique<rpcrdma::RegPool>();
  m.io_pool->Init(m.session, m.pd, kMaxIo, kIoPoolBytes);
  m.service->set_io_buffer_alloc([pool = m.io_pool.get()](IoBuffer* out) {
    rpcrdma::RegPool::Buffer* b = pool->Get();
    if (b == nullptr) return false;
    *out = IoBuffer{b->data, b->size, b->stag};
    return true;
  });
  rpcrdma::RdmaServerOptions o;
  o.ipv4 = r.ipv4;
  o.port = r.port;
  o.transport = r.sctp ? IWARP_TRANSPORT_SCTP : IWARP_TRANSPORT_TCP;
  o.credits = r.credits;
  o.max_connections = r.max_connections;
  // A WRITE of kMaxIo by Read chunk, or a READDIR(PLUS) reply by Reply chunk.
  o.max_message_bytes = std::max<uint64_t>(kMaxIo, kMaxDirReply) + 65536;
  m.rdma = std::make_unique<rpcrdma::RdmaServer>(m.session, m.pd, o, *m.rpc);
  if (int e = m.rdma->Start(); e != 0) {
    return absl::UnavailableError(Cat("iwarpd at ", sock, ": listen on port ", r.port, " (",
                                      r.sctp ? "sctp" : "tcp", "): ", strerror(-e), ": ",
                                      iwarp_last_error(m.session)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Nfsd>> Nfsd::Start(const NfsdConfig& config) {
  std::unique_ptr<Nfsd> d(new Nfsd());
  d->impl_ = std::make_unique<Impl>();
  Impl& m = *d->impl_;
  m.config = config;
  if (absl::Status st = CheckExportsOnHost(m.config); !st.ok()) return st;
  absl::StatusOr<Secret> secret = LoadOrCreateSecret(m.config.state_dir);
  if (!secret.ok()) return secret.status();
  m.codec = std::make_unique<HandleCodec>(*secret);
  // RFC 1813 3.3.7: the write verifier changes on every start, so clients
  // resend UNSTABLE writes a restart may have lost.
  Verf8 verf;
  if (getrandom(verf.data(), verf.size(), 0) != static_cast<ssize_t>(verf.size())) {
    return absl::InternalError("getrandom failed");
  }
  absl::StatusOr<std::unique_ptr<FileSystem>> fs = FileSystem::Open(m.config, *m.codec, verf);
  if (!fs.ok()) return fs.status();
  m.fs = std::move(*fs);
  // Room for a READDIR(PLUS) reply of kMaxDirReply plus headers.
  m.rpc = std::make_unique<rpc::RpcServer>(rpc::RpcServerOptions{.reply_buffer_bytes = kMaxDirReply + 8192});
  absl::StatusOr<std::unique_ptr<NfsService>> svc = NfsService::Create(m.config, *m.fs, *m.rpc);
  if (!svc.ok()) return svc.status();
  m.service = std::move(*svc);
  d->service_ = m.service.get();
  rpc::TcpServerOptions o;
  o.bind_ipv4 = m.config.listen_ipv4;
  o.port = m.config.nfs_port;
  o.max_record_bytes = kMaxIo + 64 * 1024;
  auto nfs_tcp = rpc::TcpServer::Listen(o, *m.rpc);
  if (!nfs_tcp.ok()) return nfs_tcp.status();
  m.nfs_tcp = std::move(*nfs_tcp);
  o.port = m.config.mount_port;
  o.max_record_bytes = 64 * 1024;
  auto mount_tcp = rpc::TcpServer::Listen(o, *m.rpc);
  if (!mount_tcp.ok()) return mount_tcp.status();
  m.mount_tcp = std::move(*mount_tcp);

  if (m.config.rdma.enabled) {
    if (absl::Status st = StartRdma(m); !st.ok()) return st;
  }
  m.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (m.epoll_fd < 0) return absl::InternalError(Cat("epoll_create1: ", strerror(errno)));
  std::vector<int> fds = {m.nfs_tcp->wait_fd(), m.mount_tcp->wait_fd(), m.service->completion_fd()};
  if (m.rdma != nullptr) {
    for (int fd : m.rdma->wait_fds()) fds.push_back(fd);
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    if (epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) != 0) {
      return absl::InternalError(Cat("epoll_ctl: ", strerror(errno)));
    }
  }
  if (m.config.rpcbind != RpcbindMode::kOff) {
    const bool running = rpc::RpcbindRunning();
    if (running) {
      const bool a = rpc::RpcbindRegisterTcp(kNfsProgram, kNfsVersion, m.nfs_tcp->port()) == rpc::RpcbindResult::kDone;
      const bool b =
          rpc::RpcbindRegisterTcp(kMountProgram, kMountVersion, m.mount_tcp->port()) == rpc::RpcbindResult::kDone;
      m.registered = a || b;
      if (m.config.rpcbind == RpcbindMode::kOn && !(a && b)) {
        return absl::UnavailableError("rpcbind refused the NFS / MOUNT registration (rpcbind: on)");
      }
    } else if (m.config.rpcbind == RpcbindMode::kOn) {
      return absl::UnavailableError("no rpcbind is running (rpcbind: on); start rpcbind or set rpcbind: auto");
    }
  }
  return d;
}

Nfsd::~Nfsd() = default;

uint16_t Nfsd::nfs_port() const { return impl_->nfs_tcp->port(); }
uint16_t Nfsd::mount_port() const { return impl_->mount_tcp->port(); }

bool Nfsd::rdma_enabled() const { return impl_->rdma != nullptr; }

absl::Status Nfsd::Poll(int timeout_ms) {
  Impl& m = *impl_;
  if (m.rdma != nullptr) {
    // RDMA work first; sleep only when it has nothing and is armed.
    if (m.rdma->Poll(0) > 0) timeout_ms = 0;
    if (timeout_ms != 0 && m.rdma->Arm() != 0) timeout_ms = 0;
  }
  epoll_event ev[8];
  const int n = epoll_wait(m.epoll_fd, ev, 8, timeout_ms);
  bool drain = false;
  for (int i = 0; i < n; ++i) drain = drain || ev[i].data.u32 == 2;
  // Sockets always get a turn: TcpServer::Poll also settles replies sent
  // from DrainCompletions (their reply-done hooks).
  m.nfs_tcp->Poll(0);
  m.mount_tcp->Poll(0);
  if (m.rdma != nullptr) m.rdma->Poll(0);
  if (drain) {
    m.service->DrainCompletions();
    m.nfs_tcp->Poll(0);
    if (m.rdma != nullptr) m.rdma->Poll(0);
  }
  if (m.rdma != nullptr && m.rdma->device_lost()) {
    return absl::UnavailableError(Cat("the iwarpd instance at ", RdmaSocketName(m.config.rdma),
                                      " went away; NFS over RDMA cannot go on"));
  }
  return absl::OkStatus();
}

std::string Nfsd::Stats() const {
  const rpc::RpcServerCounters& r = impl_->rpc->counters();
  std::string out = FormatCounters(service_->counters());
  CatTo(&out, "rpc_calls ", r.calls, "\n", "rpc_deferred ", r.deferred, "\n", "rpc_garbage_args ",
                  r.accept(rpc::AcceptStat::kGarbageArgs), "\n", "rpc_results_overflow ", r.results_overflow, "\n",
                  "tcp_connections ", impl_->nfs_tcp->connection_count() + impl_->mount_tcp->connection_count(), "\n",
                  "drc_entries ", service_->drc().size(), "\n");
  if (impl_->rdma != nullptr) {
    const rpcrdma::RdmaCounters c = impl_->rdma->counters();
    CatTo(&out, "rdma_connections ", impl_->rdma->connection_count(), "\n", "rdma_connections_total ", c.connections,
          "\n", "rdma_disconnects ", c.disconnects, "\n", "rdma_calls ", c.calls, "\n", "rdma_replies ", c.replies,
          "\n", "rdma_read_chunks ", c.read_chunks, "\n", "rdma_write_chunks ", c.write_chunks, "\n",
          "rdma_reply_chunks ", c.reply_chunks, "\n", "rdma_read_bytes ", c.rdma_read_bytes, "\n",
          "rdma_written_bytes ", c.rdma_written_bytes, "\n", "rdma_inline_replies ", c.inline_replies, "\n",
          "rdma_credits_in_use_max ", c.credits_in_use_max, "\n", "rdma_err_vers_sent ", c.err_vers_sent, "\n",
          "rdma_err_chunk_sent ", c.err_chunk_sent, "\n");
    for (size_t i = 0; i < rpcrdma::kNumRdmaErrors; ++i) {
      if (c.errors[i] != 0) {
        CatTo(&out, "rdma_error_", rpcrdma::RdmaErrorName(static_cast<rpcrdma::RdmaError>(i)), " ", c.errors[i], "\n");
      }
    }
  }
  return out;
}

}  // namespace iwarp::nfs
