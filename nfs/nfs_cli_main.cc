// iwarp-nfs: an NFSv3 client over TCP or over RPC-over-RDMA through iwarpd.
//
//   iwarp-nfs [OPTIONS] ls [PATH] | stat PATH | get REMOTE LOCAL | put LOCAL REMOTE
//             | rm PATH | mkdir PATH | bench [--size-mib N] [--qd N] [--seconds S] [--file NAME]
//                                          [--jobs JOB,...]
//   OPTIONS: --server A.B.C.D (127.0.0.1)  --port P (2049; 20049 with --rdma)
//            --mount-port Q (20048)  --export PATH (required)  --uid U --gid G (the caller's)
//            --rdma tcp|sctp: NFS over RPC-over-RDMA (RFC 8267) on iWARP (MPA/TCP) or
//              RDMA over SCTP, through the iwarpd instance at --socket PATH (libiwarp's
//              default); MOUNT then goes on the same RDMA connection
//
// bench: sequential 1 MiB writes and reads over a file of --size-mib, then
// random 4 KiB reads and writes for --seconds each, --qd calls in flight;
// a table of MiB/s, IOPS and latency percentiles. --jobs prints only the
// named rows (seq-write-1M, seq-read-1M, rand-read-4K, rand-write-4K; the
// file is still written first, unprinted, when seq-write-1M is left out).
// Each row is flushed when its job ends, so that a reader of a pipe can
// time the jobs one by one.
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "libiwarp/iwarp.h"
#include "nfs/exports.h"
#include "nfs/nfs_client.h"
#include "nfs/text.h"
#include "rpcrdma/rdma_transport.h"
#include "rpcrdma/rpc_tcp.h"

namespace iwarp::nfs {
namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: iwarp-nfs --export PATH [--server A.B.C.D] [--port P] [--mount-port Q] [--uid U] [--gid G]\n"
               "                 [--rdma tcp|sctp [--socket IWARPD_SOCKET]]\n"
               "                 ls [PATH] | stat PATH | get REMOTE LOCAL | put LOCAL REMOTE | rm PATH |\n"
               "                 mkdir PATH | bench [--size-mib N] [--qd N] [--seconds S] [--file NAME]\n"
               "                                    [--jobs seq-write-1M,seq-read-1M,rand-read-4K,rand-write-4K]\n"
               "  --port: NFS port (2049 over TCP, 20049 with --rdma)\n"
               "  --rdma: NFS over RPC-over-RDMA through the iwarpd instance at --socket (iWARP on tcp,\n"
               "          or RDMA over SCTP); MOUNT goes on the same connection\n");
  return 2;
}

int Fail(const absl::Status& st) {
  std::fprintf(stderr, "iwarp-nfs: %s\n", std::string(st.message()).c_str());
  return 1;
}

// "a/b/c" -> ("a/b", "c").
std::pair<std::string, std::string> Split(const std::string& path) {
  const size_t s = path.rfind('/');
  if (s == std::string::npos) return {"", path};
  return {path.substr(0, s), path.substr(s + 1)};
}

const char* TypeChar(Ftype3 t) {
  switch (t) {
    case Ftype3::kDir: return "d";
    case Ftype3::kLnk: return "l";
    case Ftype3::kReg: return "-";
    default: return "?";
  }
}

// The client's 1 MiB data buffers: registered with iwarpd when NFS runs
// over RDMA, so that WRITE data is read by the server's RDMA Read straight
// from them (STag non-zero); heap memory over TCP.
class DataBuffers {
 public:
  DataBuffers(iwarp_session* s, uint32_t pd) : s_(s), pd_(pd) {}
  ~DataBuffers() {
    for (auto& [mem, stag] : regs_) iwarp_dereg_mr(s_, stag);
  }
  struct Buf {
    MutableByteSpan span;
    uint32_t stag = 0;
  };
  Buf Get(size_t size) {
    if (s_ != nullptr) {
      void* m = nullptr;
      iwarp_mr mr{};
      if (iwarp_mem_alloc(s_, size, 0, &m) == 0 &&
          iwarp_reg_mr(s_, pd_, m, size, IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_WRITE,
                       &mr) == 0) {
        regs_.emplace_back(m, mr.stag);
        return Buf{MutableByteSpan(static_cast<uint8_t*>(m), size), mr.stag};
      }
    }
    heap_.emplace_back(size);
    return Buf{MutableByteSpan(heap_.back().data(), size), 0};
  }

 private:
  iwarp_session* s_;
  uint32_t pd_;
  std::vector<std::pair<void*, uint32_t>> regs_;
  std::deque<std::vector<uint8_t>> heap_;
};

using Clock = std::chrono::steady_clock;
constexpr size_t kIoSize = 1 << 20;  // bytes per READ / WRITE of get and put
constexpr uint64_t kCommitWindow = uint64_t{64} << 20;  // put: bytes between COMMITs

struct BenchResult {
  std::string name;
  uint64_t ops = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  bool failed = false;
  std::vector<double> lat_us;
};

// Runs `total` calls (or until `seconds`), `qd` in flight; make(i) starts
// call i with a completion taking its status.
BenchResult RunBench(RpcCaller& rpc, const std::string& name, uint64_t total, double seconds, int qd,
                     uint32_t bytes_per_op,
                     const std::function<absl::Status(uint64_t, RpcCaller::Done)>& start) {
  BenchResult r;
  r.name = name;
  uint64_t started = 0;
  int inflight = 0;
  bool failed = false;
  const auto t0 = Clock::now();
  auto deadline = t0 + std::chrono::duration<double>(seconds);
  std::function<void()> launch = [&] {
    while (!failed && inflight < qd && started < total && Clock::now() < deadline) {
      const auto ts = Clock::now();
      ++inflight;
      absl::Status st = start(started++, [&, ts](const absl::Status& s) {
        --inflight;
        if (!s.ok()) {
          std::fprintf(stderr, "iwarp-nfs: %s: %s\n", name.c_str(), std::string(s.message()).c_str());
          failed = true;
          return;
        }
        ++r.ops;
        r.bytes += bytes_per_op;
        r.lat_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - ts).count());
      });
      if (!st.ok()) {
        --inflight;
        failed = true;
      }
    }
  };
  launch();
  while (inflight > 0) {
    rpc.Poll(1000);
    launch();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.failed = failed;
  return r;
}

void PrintRow(const BenchResult& r) {
  std::vector<double> l = r.lat_us;
  std::sort(l.begin(), l.end());
  auto pct = [&](double p) { return l.empty() ? 0.0 : l[std::min(l.size() - 1, static_cast<size_t>(p * l.size()))]; };
  std::printf("%-12s %10.1f %10.0f %10.1f %10.1f %10.1f %10.1f %8lu\n", r.name.c_str(),
              r.bytes / r.seconds / (1 << 20), r.ops / r.seconds, pct(0.5), pct(0.99), pct(0.999),
              l.empty() ? 0.0 : l.back(), static_cast<unsigned long>(r.ops));
}

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> SplitList(const std::string& v) {
  std::vector<std::string> out;
  for (size_t p = 0; p <= v.size();) {
    const size_t e = std::min(v.find(',', p), v.size());
    if (e > p) out.push_back(v.substr(p, e - p));
    p = e + 1;
  }
  return out;
}

int Bench(NfsClient& c, DataBuffers& bufs, const Fh3& root, int argc, char** argv) {
  uint64_t size_mib = 64;
  int qd = 8;
  double seconds = 5;
  std::string file = "iwarp-nfs-bench.dat";
  static constexpr const char* kJobs[] = {"seq-write-1M", "seq-read-1M", "rand-read-4K", "rand-write-4K"};
  std::vector<std::string> jobs(std::begin(kJobs), std::end(kJobs));
  for (int i = 0; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--size-mib") size_mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--qd") qd = std::atoi(argv[i + 1]);
    else if (k == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (k == "--file") file = argv[i + 1];
    else if (k == "--jobs") jobs = SplitList(argv[i + 1]);
    else return Usage();
  }
  if (size_mib == 0 || qd <= 0 || qd > 256 || seconds <= 0 || jobs.empty()) return Usage();
  for (const std::string& j : jobs) {
    if (std::find(std::begin(kJobs), std::end(kJobs), j) == std::end(kJobs)) return Usage();
  }
  auto want = [&](const char* job) { return std::find(jobs.begin(), jobs.end(), job) != jobs.end(); };
  // The sequential jobs move 1 MiB per call: a server whose rtmax or wtmax
  // is smaller would answer short counts (every call of the job failing).
  FsinfoRes info;
  absl::Status ist = c.nfs().Call(static_cast<uint32_t>(Proc3::kFsinfo), 256,
                                  [&](XdrEncoder& e) { Encode(e, FhArgs{root}); },
                                  [&](XdrDecoder& d) { return Decode(d, &info); });
  if (!ist.ok()) return Fail(ist);
  if (info.status != NfsStat3::kOk) return Fail(NfsError(info.status, "fsinfo"));
  if (info.rtmax < (1u << 20) || info.wtmax < (1u << 20)) {
    return Fail(absl::FailedPreconditionError(Cat("bench: the server's rtmax ", info.rtmax, " / wtmax ",
                                                  info.wtmax, " is below the jobs' 1 MiB calls")));
  }
  auto fh = c.Create(root, file, 0644, CreateMode::kUnchecked);
  if (!fh.ok()) return Fail(fh.status());
  const uint64_t size = size_mib << 20;
  const DataBuffers::Buf wbuf = bufs.Get(1 << 20);
  getrandom(wbuf.span.data(), wbuf.span.size(), 0);
  RpcCaller& rpc = c.nfs();
  std::mt19937_64 rng(42);
  // Per-call argument storage (alive until the call completes).
  std::vector<WriteArgs> wargs(static_cast<size_t>(qd) * 2);
  std::vector<ReadArgs> rargs(static_cast<size_t>(qd) * 2);
  // READ data lands here (over RDMA: placed by the server's RDMA Write).
  std::vector<DataBuffers::Buf> rbufs;
  for (size_t k = 0; k < rargs.size(); ++k) rbufs.push_back(bufs.Get(1 << 20));
  auto write_op = [&](uint32_t len, bool random) {
    return [&, len, random](uint64_t i, RpcCaller::Done done) {
      WriteArgs& a = wargs[i % wargs.size()];
      a.file = *fh;
      a.offset = random ? (rng() % (size / len)) * len : i * len;
      a.count = len;
      a.stable = StableHow::kUnstable;
      a.data = ByteSpan(wbuf.span.data(), len);
      return rpc.Start(static_cast<uint32_t>(Proc3::kWrite), 256, [&a, &wbuf](XdrEncoder& e) { Encode(e, a, wbuf.stag); },
                       [len](XdrDecoder& d) {
                         WriteRes res;
                         return Decode(d, &res) && res.status == NfsStat3::kOk && res.count == len;
                       },
                       std::move(done));
    };
  };
  auto read_op = [&](uint32_t len, bool random) {
    return [&, len, random](uint64_t i, RpcCaller::Done done) {
      ReadArgs& a = rargs[i % rargs.size()];
      a.file = *fh;
      a.offset = random ? (rng() % (size / len)) * len : i * len;
      a.count = len;
      rpc::CallOptions o;
      const DataBuffers::Buf& sink = rbufs[i % rbufs.size()];
      o.ddp_sinks[0] = rpc::ReplySink{sink.span.first(len), sink.stag};
      o.ddp_sink_count = 1;
      return rpc.Start(
          static_cast<uint32_t>(Proc3::kRead), 256, [&a](XdrEncoder& e) { Encode(e, a); },
          [len](XdrDecoder& d) {
            ReadRes res;
            return Decode(d, &res) && res.status == NfsStat3::kOk && res.count == len;
          },
          std::move(done), o);
    };
  };
  std::printf("iwarp-nfs bench: file %s, %lu MiB, queue depth %d\n", file.c_str(),
              static_cast<unsigned long>(size_mib), qd);
  std::printf("%-12s %10s %10s %10s %10s %10s %10s %8s\n", "job", "MiB/s", "IOPS", "p50_us", "p99_us", "p99.9_us",
              "max_us", "ops");
  std::fflush(stdout);
  bool failed = false;
  auto row = [&](const BenchResult& r) {
    if (want(r.name.c_str())) {
      PrintRow(r);
      std::fflush(stdout);
    }
    failed = failed || r.failed;
  };
  // Always run: it lays out the file the other jobs read and write.
  BenchResult sw = RunBench(rpc, "seq-write-1M", size_mib, 1e9, qd, 1 << 20, write_op(1 << 20, false));
  auto cm = c.Commit(*fh);
  if (!cm.ok()) return Fail(cm.status());
  row(sw);
  if (want("seq-read-1M")) {
    row(RunBench(rpc, "seq-read-1M", size_mib, 1e9, qd, 1 << 20, read_op(1 << 20, false)));
  }
  if (want("rand-read-4K")) {
    row(RunBench(rpc, "rand-read-4K", UINT64_MAX, seconds, qd, 4096, read_op(4096, true)));
  }
  if (want("rand-write-4K")) {
    row(RunBench(rpc, "rand-write-4K", UINT64_MAX, seconds, qd, 4096, write_op(4096, true)));
  }
  cm = c.Commit(*fh);
  if (!cm.ok()) return Fail(cm.status());
  // A job with a failed call printed it and its row counts only the calls
  // that succeeded: not a result.
  return c.Remove(root, file).ok() && !failed ? 0 : 1;
}

int Main(int argc, char** argv) {
  uint32_t server = 0x7f000001;
  uint16_t port = 0, mount_port = 20048;
  std::string export_path, rdma, socket;
  uint32_t uid = getuid(), gid = getgid();
  int i = 1;
  for (; i < argc && std::strncmp(argv[i], "--", 2) == 0; i += 2) {
    if (i + 1 >= argc) return Usage();
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--server") {
      if (!ParseIpv4(v, &server)) return Usage();
    } else if (k == "--port") {
      port = static_cast<uint16_t>(std::atoi(v.c_str()));
    } else if (k == "--mount-port") {
      mount_port = static_cast<uint16_t>(std::atoi(v.c_str()));
    } else if (k == "--export") {
      export_path = v;
    } else if (k == "--rdma") {
      if (v != "tcp" && v != "sctp") return Usage();
      rdma = v;
    } else if (k == "--socket") {
      socket = v;
    } else if (k == "--uid") {
      uid = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
    } else if (k == "--gid") {
      gid = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
    } else {
      return Usage();
    }
  }
  if (i >= argc || export_path.empty()) return Usage();
  const std::string cmd = argv[i++];
  iwarp_session* session = nullptr;
  uint32_t pd = 0;
  struct SessionCloser {  // last: after everything that uses the session
    iwarp_session** s;
    ~SessionCloser() {
      if (*s != nullptr) iwarp_close(*s);
    }
  } closer{&session};
  std::unique_ptr<rpc::TcpClient> mount_tcp, nfs_tcp;
  std::unique_ptr<rpcrdma::RdmaClient> nfs_rdma;
  rpc::ClientTransport* mt = nullptr;
  rpc::ClientTransport* nt = nullptr;
  if (!rdma.empty()) {
    if (int e = iwarp_open(socket.empty() ? nullptr : socket.c_str(), &session); e != 0) {
      return Fail(absl::UnavailableError(std::string("cannot reach iwarpd at ") +
                                         (socket.empty() ? "the default socket" : socket) + ": " + strerror(-e)));
    }
    if (iwarp_alloc_pd(session, &pd) != 0) return Fail(absl::UnavailableError(iwarp_last_error(session)));
    rpcrdma::RdmaClientOptions ro;
    ro.server = iwarp_addr{server, port != 0 ? port : uint16_t{20049}};
    ro.transport = rdma == "sctp" ? IWARP_TRANSPORT_SCTP : IWARP_TRANSPORT_TCP;
    // Ride out a server restart (about 16 s of attempts, 20 ms more apart
    // each time); calls in flight are sent again after the reconnect.
    ro.reconnect_attempts = 40;
    nfs_rdma = std::make_unique<rpcrdma::RdmaClient>(session, pd, ro);
    if (int e = nfs_rdma->Connect(); e != 0) {
      return Fail(absl::UnavailableError(std::string("NFS/RDMA connection to port ") +
                                         std::to_string(ro.server.port) + " failed: " + strerror(-e) + " (" +
                                         iwarp_last_error(session) + ")"));
    }
    mt = nt = nfs_rdma.get();
  } else {
    rpc::TcpClientOptions o;
    o.server_ipv4 = server;
    o.server_port = mount_port;
    auto m = rpc::TcpClient::Connect(o);
    if (!m.ok()) return Fail(m.status());
    mount_tcp = std::move(*m);
    o.server_port = port != 0 ? port : uint16_t{2049};
    auto n = rpc::TcpClient::Connect(o);
    if (!n.ok()) return Fail(n.status());
    nfs_tcp = std::move(*n);
    mt = mount_tcp.get();
    nt = nfs_tcp.get();
  }
  DataBuffers bufs(session, pd);
  char host[64] = "iwarp-nfs";
  gethostname(host, sizeof(host) - 1);
  NfsClient c(*mt, *nt, AuthSysCred(uid, gid, host));
  auto root = c.Mount(export_path);
  if (!root.ok()) return Fail(root.status());
  const int rest = argc - i;
  char** args = argv + i;

  if (cmd == "ls" && rest <= 1) {
    auto dir = c.Resolve(*root, rest == 1 ? args[0] : "");
    if (!dir.ok()) return Fail(dir.status());
    auto list = c.ListDir(*dir);
    if (!list.ok()) return Fail(list.status());
    for (const EntryPlus3& e : *list) {
      if (e.name == "." || e.name == "..") continue;
      const Fattr3& a = e.name_attributes.attr;
      std::printf("%s%04o %6u %6u %12lu %s\n", TypeChar(a.type), a.mode, a.uid, a.gid,
                  static_cast<unsigned long>(a.size), e.name.c_str());
    }
    return 0;
  }
  if (cmd == "stat" && rest == 1) {
    auto fh = c.Resolve(*root, args[0]);
    if (!fh.ok()) return Fail(fh.status());
    auto a = c.Getattr(*fh);
    if (!a.ok()) return Fail(a.status());
    std::printf("type %s mode %04o nlink %u uid %u gid %u size %lu fileid %lu mtime %u.%09u\n", TypeChar(a->type),
                a->mode, a->nlink, a->uid, a->gid, static_cast<unsigned long>(a->size),
                static_cast<unsigned long>(a->fileid), a->mtime.seconds, a->mtime.nseconds);
    return 0;
  }
  if (cmd == "get" && rest == 2) {
    auto fh = c.Resolve(*root, args[0]);
    if (!fh.ok()) return Fail(fh.status());
    std::ofstream out(args[1], std::ios::binary | std::ios::trunc);
    const DataBuffers::Buf buf = bufs.Get(kIoSize);
    uint64_t off = 0;
    for (bool eof = false; !eof;) {
      auto n = c.Read(*fh, off, buf.span, &eof, buf.stag);
      if (!n.ok()) return Fail(n.status());
      out.write(reinterpret_cast<const char*>(buf.span.data()), *n);
      off += *n;
      if (*n == 0) break;
    }
    std::printf("%lu bytes\n", static_cast<unsigned long>(off));
    return out ? 0 : 1;
  }
  if (cmd == "put" && rest == 2) {
    std::ifstream in(args[0], std::ios::binary);
    if (!in) return Fail(absl::NotFoundError(std::string(args[0]) + ": cannot open"));
    auto [parent, name] = Split(args[1]);
    auto dir = c.Resolve(*root, parent);
    if (!dir.ok()) return Fail(dir.status());
    auto fh = c.Create(*dir, name, 0644, CreateMode::kUnchecked);
    if (!fh.ok()) return Fail(fh.status());
    Sattr3 trunc;
    trunc.set_size = true;
    if (absl::Status st = c.Setattr(*fh, trunc); !st.ok()) return Fail(st);
    // UNSTABLE writes, a COMMIT every kCommitWindow bytes. RFC 1813 3.3.7:
    // a COMMIT whose verifier differs from the one the window's WRITEs
    // returned means the server restarted and may have lost them; the
    // window is written again.
    const DataBuffers::Buf buf = bufs.Get(kIoSize);
    uint64_t off = 0;
    bool end = false;
    while (!end) {
      const uint64_t window_start = off;
      const std::streampos window_pos = in.tellg();
      for (int attempt = 0;; ++attempt) {
        Verf8 verf{};
        bool have_verf = false, mixed = false;
        uint64_t o = window_start;
        end = false;
        while (o - window_start < kCommitWindow) {
          in.read(reinterpret_cast<char*>(buf.span.data()), static_cast<std::streamsize>(buf.span.size()));
          const size_t n = static_cast<size_t>(in.gcount());
          if (n == 0) {
            end = true;
            break;
          }
          // A server may write less than asked (RFC 1813 3.3.7: count),
          // e.g. when the request exceeds its wtmax: write the rest.
          for (size_t done = 0; done < n;) {
            auto w = c.Write(*fh, o, ByteSpan(buf.span.data() + done, n - done), StableHow::kUnstable, buf.stag);
            if (!w.ok()) return Fail(w.status());
            if (w->count == 0 || w->count > n - done) {
              return Fail(absl::DataLossError(Cat("write at ", o, ": the server wrote ", w->count, " of ", n - done,
                                                  " bytes")));
            }
            if (have_verf && w->verf != verf) mixed = true;
            verf = w->verf;
            have_verf = true;
            done += w->count;
            o += w->count;
          }
        }
        auto cm = c.Commit(*fh);
        if (!cm.ok()) return Fail(cm.status());
        if (!have_verf || (!mixed && cm->verf == verf)) {
          off = o;
          break;
        }
        if (attempt == 3) return Fail(absl::DataLossError("the write verifier keeps changing; giving up"));
        std::fprintf(stderr, "iwarp-nfs: the server restarted (write verifier changed): writing %lu bytes "
                             "from offset %lu again\n", static_cast<unsigned long>(o - window_start),
                     static_cast<unsigned long>(window_start));
        in.clear();
        in.seekg(window_pos);
      }
    }
    std::printf("%lu bytes\n", static_cast<unsigned long>(off));
    return 0;
  }
  if ((cmd == "rm" || cmd == "mkdir") && rest == 1) {
    auto [parent, name] = Split(args[0]);
    auto dir = c.Resolve(*root, parent);
    if (!dir.ok()) return Fail(dir.status());
    if (cmd == "mkdir") {
      auto fh = c.Mkdir(*dir, name, 0755);
      return fh.ok() ? 0 : Fail(fh.status());
    }
    absl::Status st = c.Remove(*dir, name);
    if (!st.ok() && std::string(st.message()).find("NFS3ERR_ISDIR") != std::string::npos) st = c.Rmdir(*dir, name);
    return st.ok() ? 0 : Fail(st);
  }
  if (cmd == "bench") return Bench(c, bufs, *root, rest, args);
  return Usage();
}

}  // namespace
}  // namespace iwarp::nfs

int main(int argc, char** argv) { return iwarp::nfs::Main(argc, argv); }
