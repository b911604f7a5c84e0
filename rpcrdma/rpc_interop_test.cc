// Interoperability with ONC RPC code we did not write, over 127.0.0.1:
//  (a) libtirpc's client (clnttcp_create / clnt_call) against our TcpServer;
//  (b) our TcpClient against a libtirpc server (svc_vc_create / svc_reg with
//      a dispatch function of this file) running in a thread;
//  (c) rpcinfo (package rpcbind) probing our server, skipped when absent;
//  and rpcbind registration reporting a missing rpcbind without error.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rpc/rpc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rpcrdma/rpc_rpcbind.h"
#include "rpcrdma/rpc_server.h"
#include "rpcrdma/rpc_tcp.h"
#include "rpcrdma/rpc_test_prog.h"

namespace iwarp::rpc {
namespace {

constexpr timeval kTimeout = {10, 0};

// opaque data<1 MiB> through libtirpc's own XDR.
struct Blob {
  char* data = nullptr;
  u_int len = 0;
};
extern "C" bool_t XdrBlob(XDR* x, Blob* b) { return xdr_bytes(x, &b->data, &b->len, kTestEchoMax); }
extern "C" bool_t XdrU32(XDR* x, uint32_t* v) { return xdr_u_int(x, v); }

template <typename F>
xdrproc_t Proc(F f) {
  return reinterpret_cast<xdrproc_t>(reinterpret_cast<void (*)()>(f));
}

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 10));
  return v;
}

// Our dispatcher + TCP server, polled by a background thread.
class OurServer {
 public:
  OurServer() {
    EXPECT_TRUE(RegisterTestProgram(dispatcher).ok());
    // A procedure that wants a u32 (for GARBAGE_ARGS), one that fails
    // (SYSTEM_ERR), in a program that requires AUTH_SYS for procs > 0.
    EXPECT_TRUE(dispatcher
                    .Register(kStrictProg, 1,
                              {[](CallContext&) { return ProcStatus::kSuccess; },
                               [this](CallContext& ctx) {
                                 const uint32_t v = ctx.args.U32();
                                 last_uid = ctx.auth_sys ? ctx.auth_sys->uid : UINT32_MAX;
                                 ctx.results.U32(v + 1);
                                 return ProcStatus::kSuccess;
                               },
                               [](CallContext&) { return ProcStatus::kSystemErr; }},
                              ProgramOptions{.require_auth_sys = true})
                    .ok());
    auto s = TcpServer::Listen(TcpServerOptions{}, dispatcher);
    EXPECT_TRUE(s.ok()) << s.status();
    server = std::move(*s);
    thread = std::thread([this] {
      while (!stop.load(std::memory_order_acquire)) server->Poll(20);
    });
  }
  ~OurServer() { Stop(); }
  void Stop() {
    stop.store(true, std::memory_order_release);
    if (thread.joinable()) thread.join();
  }
  uint16_t port() const { return server->port(); }

  static constexpr uint32_t kStrictProg = 0x20494951;
  RpcServer dispatcher;
  std::unique_ptr<TcpServer> server;
  std::atomic<bool> stop{false};
  std::thread thread;
  std::atomic<uint32_t> last_uid{0};
};

CLIENT* TirpcClient(uint16_t port, uint32_t prog, uint32_t vers) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);  // non-zero: no portmapper lookup
  int sock = RPC_ANYSOCK;
  return clnttcp_create(&addr, prog, vers, &sock, 0, 0);
}

TEST(RpcInteropTest, TirpcClientNullAndEchoAgainstOurServer) {
  OurServer ours;
  CLIENT* cl = TirpcClient(ours.port(), kTestProg, kTestVers);
  ASSERT_NE(cl, nullptr) << clnt_spcreateerror("clnttcp_create");
  EXPECT_EQ(clnt_call(cl, kTestProcNull, Proc(xdr_void), nullptr, Proc(xdr_void), nullptr, kTimeout),
            RPC_SUCCESS);
  std::vector<uint8_t> back(kTestEchoMax);
  for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{4096}, size_t{kTestEchoMax}}) {
    std::vector<uint8_t> data = Pattern(n, static_cast<uint8_t>(n));
    Blob arg{reinterpret_cast<char*>(data.data()), static_cast<u_int>(n)};
    Blob res{reinterpret_cast<char*>(back.data()), 0};  // decoded in place
    ASSERT_EQ(clnt_call(cl, kTestProcEcho, Proc(XdrBlob), reinterpret_cast<char*>(&arg), Proc(XdrBlob),
                        reinterpret_cast<char*>(&res), kTimeout),
              RPC_SUCCESS)
        << n;
    ASSERT_EQ(res.len, n);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin())) << n;
  }
  clnt_destroy(cl);
  ours.Stop();
  EXPECT_EQ(ours.dispatcher.counters().accept(AcceptStat::kSuccess), 6u);
  // libtirpc sends a 1 MiB argument in several fragments.
  EXPECT_GT(ours.server->counters().fragments, ours.server->counters().records);
}

TEST(RpcInteropTest, TirpcClientDecodesOurErrors) {
  OurServer ours;
  rpc_err err{};
  // PROG_MISMATCH with our registered range 1..1.
  CLIENT* cl = TirpcClient(ours.port(), kTestProg, 7);
  ASSERT_NE(cl, nullptr);
  EXPECT_EQ(clnt_call(cl, 0, Proc(xdr_void), nullptr, Proc(xdr_void), nullptr, kTimeout),
            RPC_PROGVERSMISMATCH);
  clnt_geterr(cl, &err);
  EXPECT_EQ(err.re_vers.low, 1u);
  EXPECT_EQ(err.re_vers.high, 1u);
  clnt_destroy(cl);
  // PROC_UNAVAIL
  cl = TirpcClient(ours.port(), kTestProg, kTestVers);
  ASSERT_NE(cl, nullptr);
  EXPECT_EQ(clnt_call(cl, 9, Proc(xdr_void), nullptr, Proc(xdr_void), nullptr, kTimeout), RPC_PROCUNAVAIL);
  clnt_destroy(cl);
  // PROG_UNAVAIL
  cl = TirpcClient(ours.port(), 0x20494960, 1);
  ASSERT_NE(cl, nullptr);
  EXPECT_EQ(clnt_call(cl, 0, Proc(xdr_void), nullptr, Proc(xdr_void), nullptr, kTimeout), RPC_PROGUNAVAIL);
  clnt_destroy(cl);
  // AUTH_TOOWEAK for AUTH_NONE; then AUTH_SYS passes and its uid reaches the
  // handler; GARBAGE_ARGS for missing arguments; SYSTEM_ERR.
  cl = TirpcClient(ours.port(), OurServer::kStrictProg, 1);
  ASSERT_NE(cl, nullptr);
  uint32_t in = 41, out = 0;
  EXPECT_EQ(clnt_call(cl, 1, Proc(XdrU32), reinterpret_cast<char*>(&in), Proc(XdrU32),
                      reinterpret_cast<char*>(&out), kTimeout),
            RPC_AUTHERROR);
  clnt_geterr(cl, &err);
  EXPECT_EQ(err.re_why, AUTH_TOOWEAK);
  auth_destroy(cl->cl_auth);
  cl->cl_auth = authunix_create_default();
  ASSERT_NE(cl->cl_auth, nullptr);
  EXPECT_EQ(clnt_call(cl, 1, Proc(XdrU32), reinterpret_cast<char*>(&in), Proc(XdrU32),
                      reinterpret_cast<char*>(&out), kTimeout),
            RPC_SUCCESS);
  EXPECT_EQ(out, 42u);
  EXPECT_EQ(ours.last_uid.load(), static_cast<uint32_t>(getuid()));
  EXPECT_EQ(clnt_call(cl, 1, Proc(xdr_void), nullptr, Proc(XdrU32), reinterpret_cast<char*>(&out), kTimeout),
            RPC_CANTDECODEARGS);
  EXPECT_EQ(clnt_call(cl, 2, Proc(xdr_void), nullptr, Proc(xdr_void), nullptr, kTimeout), RPC_SYSTEMERROR);
  auth_destroy(cl->cl_auth);  // clnt_destroy leaves the AUTH to its creator
  clnt_destroy(cl);
  ours.Stop();
  const RpcServerCounters& c = ours.dispatcher.counters();
  EXPECT_EQ(c.accept(AcceptStat::kProgMismatch), 1u);
  EXPECT_EQ(c.accept(AcceptStat::kProcUnavail), 1u);
  EXPECT_EQ(c.accept(AcceptStat::kProgUnavail), 1u);
  EXPECT_EQ(c.accept(AcceptStat::kGarbageArgs), 1u);
  EXPECT_EQ(c.accept(AcceptStat::kSystemErr), 1u);
  EXPECT_EQ(c.auth_error[static_cast<size_t>(AuthStat::kTooWeak)], 1u);
}

// ------------------------------------------------ (b) a libtirpc server

extern "C" void TirpcDispatch(svc_req* rq, SVCXPRT* xprt) {
  switch (rq->rq_proc) {
    case kTestProcNull:
      svc_sendreply(xprt, Proc(xdr_void), nullptr);
      return;
    case kTestProcEcho: {
      Blob b;
      if (!svc_getargs(xprt, Proc(XdrBlob), reinterpret_cast<char*>(&b))) {
        svcerr_decode(xprt);
        return;
      }
      svc_sendreply(xprt, Proc(XdrBlob), reinterpret_cast<char*>(&b));
      svc_freeargs(xprt, Proc(XdrBlob), reinterpret_cast<char*>(&b));
      return;
    }
    default:
      svcerr_noproc(xprt);
  }
}

class TirpcServer {
 public:
  TirpcServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
    xprt_ = svc_vc_create(fd_, 0, 0);
    EXPECT_NE(xprt_, nullptr);
    // nconf == nullptr: not registered with rpcbind.
    EXPECT_TRUE(svc_reg(xprt_, kTestProg, kTestVers, TirpcDispatch, nullptr));
    thread_ = std::thread([this] {
      while (!stop_.load(std::memory_order_acquire)) {
        const int n = ::poll(svc_pollfd, static_cast<nfds_t>(svc_max_pollfd), 20);
        if (n > 0) svc_getreq_poll(svc_pollfd, n);
      }
    });
  }
  ~TirpcServer() {
    stop_.store(true, std::memory_order_release);
    thread_.join();
    svc_unreg(kTestProg, kTestVers);
    SVC_DESTROY(xprt_);
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  SVCXPRT* xprt_ = nullptr;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

bool RunUntil(TcpClient& c, const std::function<bool()>& done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    c.Poll(20);
  }
  return true;
}

TEST(RpcInteropTest, OurClientAgainstTirpcServer) {
  TirpcServer theirs;
  TcpClientOptions o;
  o.server_port = theirs.port();
  auto client = TcpClient::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status();
  TcpClient& c = **client;
  const size_t sizes[] = {0, 1, 3, 4096, kTestEchoMax};
  std::vector<std::vector<uint8_t>> data;
  std::vector<std::array<uint8_t, 1024>> bufs(std::size(sizes) + 1);
  std::vector<Message> calls(std::size(sizes) + 1);
  int done = 0;
  ASSERT_TRUE(EncodeTestCall(1, kTestProcNull, {}, bufs[0], &calls[0]));
  ASSERT_EQ(c.Call(calls[0], {}, [&](const ReplyView& r) {
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(DecodeTestReply(r, kTestProcNull).results_ok);
    ++done;
  }), 0);
  for (size_t i = 0; i < std::size(sizes); ++i) {
    data.push_back(Pattern(sizes[i], static_cast<uint8_t>(i)));
  }
  for (size_t i = 0; i < std::size(sizes); ++i) {
    ASSERT_TRUE(EncodeTestCall(10 + static_cast<uint32_t>(i), kTestProcEcho, data[i], bufs[i + 1], &calls[i + 1]));
    ASSERT_EQ(c.Call(calls[i + 1], {}, [&, i](const ReplyView& r) {
      EXPECT_EQ(r.status, 0);
      const TestReply t = DecodeTestReply(r, kTestProcEcho);
      EXPECT_TRUE(t.results_ok) << sizes[i];
      EXPECT_EQ(t.header.xid, 10 + i);
      EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), data[i].begin(), data[i].end())) << sizes[i];
      ++done;
    }), 0);
  }
  ASSERT_TRUE(RunUntil(c, [&] { return done == static_cast<int>(std::size(sizes)) + 1; }));

  // libtirpc's PROG_MISMATCH and PROC_UNAVAIL, decoded by our header code.
  ReplyHeader mismatch, noproc;
  std::array<uint8_t, 64> b1{}, b2{};
  CallHeader h;
  h.xid = 50;
  h.prog = kTestProg;
  h.vers = 9;
  XdrEncoder e1(b1);
  EncodeCallHeader(e1, h);
  Message m1;
  ASSERT_TRUE(e1.Finish(&m1));
  h.xid = 51;
  h.vers = kTestVers;
  h.proc = 5;
  XdrEncoder e2(b2);
  EncodeCallHeader(e2, h);
  Message m2;
  ASSERT_TRUE(e2.Finish(&m2));
  int got = 0;
  auto decode_into = [&](ReplyHeader* out) {
    return [&, out](const ReplyView& r) {
      XdrDecoder d(r);
      EXPECT_EQ(DecodeReplyHeader(d, out), ReplyDecode::kOk);
      ++got;
    };
  };
  ASSERT_EQ(c.Call(m1, {}, decode_into(&mismatch)), 0);
  ASSERT_EQ(c.Call(m2, {}, decode_into(&noproc)), 0);
  ASSERT_TRUE(RunUntil(c, [&] { return got == 2; }));
  EXPECT_EQ(mismatch.stat, ReplyStat::kAccepted);
  EXPECT_EQ(mismatch.accept_stat, AcceptStat::kProgMismatch);
  EXPECT_EQ(mismatch.mismatch_low, 1u);
  EXPECT_EQ(mismatch.mismatch_high, 1u);
  EXPECT_EQ(noproc.accept_stat, AcceptStat::kProcUnavail);
  EXPECT_EQ(c.counters().unmatched_replies, 0u);
}

// ------------------------------------------------ (c) rpcinfo

std::string FindRpcinfo() {
  for (const char* p : {"/usr/sbin/rpcinfo", "/sbin/rpcinfo", "/usr/bin/rpcinfo"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return {};
}

// Runs `cmd`, returns its output (stdout + stderr) and exit status.
std::pair<std::string, int> RunCommand(const std::string& cmd) {
  std::string out;
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return {out, -1};
  char buf[512];
  while (std::fgets(buf, sizeof(buf), f) != nullptr) out += buf;
  return {out, ::pclose(f)};
}

TEST(RpcInteropTest, RpcinfoProbesOurServer) {
  const std::string rpcinfo = FindRpcinfo();
  if (rpcinfo.empty()) GTEST_SKIP() << "rpcinfo not installed (Debian package rpcbind; tools/setup.sh installs it)";
  OurServer ours;
  // rpcinfo 1.2.6 (Debian 12) contacts rpcbind on port 111 even with -n, so
  // without a running rpcbind the same probe goes to the RFC 5665 universal
  // address of our server (-a h1.h2.h3.h4.p1.p2 -T tcp): still rpcinfo's own
  // client calling NULL on our port.
  std::string base;
  if (RpcbindRunning()) {
    base = rpcinfo + " -n " + std::to_string(ours.port()) + " -t 127.0.0.1 " + std::to_string(kTestProg) + " ";
  } else {
    std::printf("rpcbind not running: rpcinfo -n would fail at port 111; probing with -a instead\n");
    base = rpcinfo + " -a 127.0.0.1." + std::to_string(ours.port() >> 8) + "." +
           std::to_string(ours.port() & 0xff) + " -T tcp " + std::to_string(kTestProg) + " ";
  }
  auto [ok_out, ok_rc] = RunCommand(base + "1");
  EXPECT_EQ(ok_rc, 0) << ok_out;
  EXPECT_NE(ok_out.find("program " + std::to_string(kTestProg) + " version 1 ready and waiting"),
            std::string::npos)
      << ok_out;
  auto [bad_out, bad_rc] = RunCommand(base + "2");
  EXPECT_NE(bad_rc, 0) << bad_out;
  EXPECT_NE(bad_out.find("version 2 is not available"), std::string::npos) << bad_out;
}

// ------------------------------------------------ rpcbind registration

TEST(RpcInteropTest, RpcbindAbsenceIsNotAnError) {
  if (RpcbindRunning()) {
    // A host rpcbind: register for real, look it up, remove it.
    ASSERT_EQ(RpcbindRegisterTcp(kTestProg, 77, 34567), RpcbindResult::kDone);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(pmap_getport(&a, kTestProg, 77, IPPROTO_TCP), 34567);
    EXPECT_EQ(RpcbindUnregisterTcp(kTestProg, 77), RpcbindResult::kDone);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RpcbindRegisterTcp(kTestProg, kTestVers, 34567), RpcbindResult::kNotRunning);
  EXPECT_EQ(RpcbindUnregisterTcp(kTestProg, kTestVers), RpcbindResult::kNotRunning);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace iwarp::rpc
