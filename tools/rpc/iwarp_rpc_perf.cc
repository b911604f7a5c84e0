// iwarp-rpc-perf: perftest-style client and server of the RPC test program
// (rpcrdma/rpc_test_prog.h: NULL, ECHO) over RPC-over-RDMA v1 (RFC 8166) on
// iWARP or RDMA over SCTP through iwarpd, or over record-marked TCP on kernel
// sockets (RFC 5531 11).
//
//   iwarp-rpc-perf --server [--transport iwarp|sctp|tcp] [--port P] ...
//   iwarp-rpc-perf --client ADDR --test null|echo --size N --count N --depth N ...
//
// The client keeps `depth` calls outstanding, times every call from Call()
// to its completion, checks every echoed byte against the argument it sent
// and prints calls/s, round trip percentiles, MiB/s and the transport's
// counters. Run `iwarp-rpc-perf --help` for the options and exit codes.
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "libiwarp/iwarp.h"
#include "rpcrdma/rdma_transport.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/rpc_rpcbind.h"
#include "rpcrdma/rpc_server.h"
#include "rpcrdma/rpc_tcp.h"
#include "rpcrdma/rpc_test_prog.h"

namespace {

using iwarp::ByteSpan;
using iwarp::MutableByteSpan;
namespace rpc = iwarp::rpc;
namespace rdma = iwarp::rpcrdma;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // a call failed, or an echoed byte differed
constexpr int kExitUsage = 2;
constexpr int kExitSetup = 3;   // daemon, registration, listen or connect trouble

enum class Transport { kIwarp, kSctp, kTcp };
enum class Test { kNull, kEcho };

struct Options {
  bool server = false;
  const char* client_addr = nullptr;
  Transport transport = Transport::kIwarp;
  uint16_t port = 20049;
  const char* socket = nullptr;
  uint32_t bind_ipv4 = 0;  // TCP server: listen address (host order), 0 = any
  Test test = Test::kNull;
  uint64_t size = 0;
  uint64_t count = 10000;
  uint32_t depth = 1;
  uint32_t credits = 32;
  uint32_t read_threshold = 1024;
  bool reply_chunk = false;   // no Write chunk offered: long replies by Reply chunk
  bool unregistered = false;  // argument and sink with stag 0 (transport bounce copies)
  uint32_t inline_size = 4096;
  int stats_interval_s = 0;
  bool rpcbind = false;
  int timeout_ms = 30000;
};

const char* TransportName(Transport t) {
  switch (t) {
    case Transport::kIwarp: return "RPC-over-RDMA on iWARP (MPA/TCP)";
    case Transport::kSctp: return "RPC-over-RDMA on RDMA over SCTP (RFC 5043)";
    case Transport::kTcp: return "ONC RPC on kernel TCP (record marking)";
  }
  return "?";
}

[[noreturn]] void Die(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Die(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "iwarp-rpc-perf: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(code);
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// ------------------------------------------------------------ counters

void PrintRdmaCounters(const char* who, const rdma::RdmaCounters& c) {
  printf("%s transport counters (RdmaCounters):\n", who);
  const std::pair<const char*, uint64_t> rows[] = {
      {"calls", c.calls},
      {"replies", c.replies},
      {"retransmits", c.retransmits},
      {"read_chunks", c.read_chunks},
      {"write_chunks", c.write_chunks},
      {"reply_chunks", c.reply_chunks},
      {"rdma_read_bytes", c.rdma_read_bytes},
      {"rdma_written_bytes", c.rdma_written_bytes},
      {"inline_replies", c.inline_replies},
      {"nomsg_calls", c.nomsg_calls},
      {"bounce_copy_bytes", c.bounce_copy_bytes},
      {"credits_granted", c.credits_granted},
      {"credits_in_use", c.credits_in_use},
      {"credits_in_use_max", c.credits_in_use_max},
      {"connections", c.connections},
      {"disconnects", c.disconnects},
      {"reconnects", c.reconnects},
      {"err_vers_sent", c.err_vers_sent},
      {"err_chunk_sent", c.err_chunk_sent},
      {"err_vers_received", c.err_vers_received},
      {"err_chunk_received", c.err_chunk_received},
  };
  for (const auto& [name, v] : rows) printf("  %-24s %" PRIu64 "\n", name, v);
  for (size_t i = 0; i < rdma::kNumRdmaErrors; ++i) {
    if (c.errors[i] == 0) continue;
    const std::string_view n = rdma::RdmaErrorName(static_cast<rdma::RdmaError>(i));
    printf("  error.%-18.*s %" PRIu64 "\n", static_cast<int>(n.size()), n.data(), c.errors[i]);
  }
  for (size_t i = 0; i < rdma::kNumHeaderErrors; ++i) {
    if (c.header_errors[i] == 0) continue;
    const std::string_view n = rdma::HeaderErrorName(static_cast<rdma::HeaderError>(i));
    printf("  header_error.%-11.*s %" PRIu64 "\n", static_cast<int>(n.size()), n.data(),
           c.header_errors[i]);
  }
}

void PrintTcpServerCounters(const rpc::TcpServerCounters& c) {
  printf("server transport counters (TcpServer):\n");
  const std::pair<const char*, uint64_t> rows[] = {
      {"accepted", c.accepted},   {"records", c.records},     {"fragments", c.fragments},
      {"bytes_in", c.bytes_in},   {"bytes_out", c.bytes_out}, {"replies", c.replies},
      {"replies_queued", c.replies_queued},
  };
  for (const auto& [name, v] : rows) printf("  %-24s %" PRIu64 "\n", name, v);
  for (size_t i = 0; i < c.closes.size(); ++i) {
    const std::string_view n = rpc::TcpCloseName(static_cast<rpc::TcpClose>(i));
    printf("  close.%-18.*s %" PRIu64 "\n", static_cast<int>(n.size()), n.data(), c.closes[i]);
  }
}

void PrintTcpClientCounters(const rpc::TcpClientCounters& c) {
  printf("client transport counters (TcpClient):\n");
  const std::pair<const char*, uint64_t> rows[] = {
      {"calls", c.calls},
      {"replies", c.replies},
      {"unmatched_replies", c.unmatched_replies},
      {"short_replies", c.short_replies},
      {"timeouts", c.timeouts},
      {"connection_losses", c.connection_losses},
      {"reconnects", c.reconnects},
      {"retransmits", c.retransmits},
      {"failed", c.failed},
      {"record_oversize", c.record_oversize},
  };
  for (const auto& [name, v] : rows) printf("  %-24s %" PRIu64 "\n", name, v);
}

void PrintRpcServerCounters(const rpc::RpcServerCounters& c) {
  printf("server RPC counters (RpcServer):\n");
  printf("  %-24s %" PRIu64 "\n", "calls", c.calls);
  printf("  %-24s %" PRIu64 "\n", "success", c.accept(rpc::AcceptStat::kSuccess));
  printf("  %-24s %" PRIu64 "\n", "garbage_args", c.accept(rpc::AcceptStat::kGarbageArgs));
  printf("  %-24s %" PRIu64 "\n", "rpc_mismatch", c.rpc_mismatch);
}

// -------------------------------------------------------------- server

volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_dump = 0;

void OnStop(int) { g_stop = 1; }
void OnDump(int) { g_dump = 1; }

iwarp_session* OpenSession(const Options& o, uint32_t* pd) {
  iwarp_session* s = nullptr;
  if (int r = iwarp_open(o.socket, &s); r != 0) {
    Die(kExitSetup, "cannot open a session on %s: %s",
        o.socket != nullptr ? o.socket : "(default socket)", strerror(-r));
  }
  if (int r = iwarp_alloc_pd(s, pd); r != 0) Die(kExitSetup, "alloc_pd: %s", iwarp_last_error(s));
  return s;
}

int RunServer(const Options& o) {
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = OnDump;
  sigaction(SIGUSR1, &sa, nullptr);

  rpc::RpcServer dispatcher;
  if (!rpc::RegisterTestProgram(dispatcher).ok()) Die(kExitSetup, "cannot register the test program");

  iwarp_session* s = nullptr;
  std::unique_ptr<rdma::RdmaServer> rdma_server;
  std::unique_ptr<rpc::TcpServer> tcp_server;
  if (o.transport == Transport::kTcp) {
    rpc::TcpServerOptions to;
    to.bind_ipv4 = o.bind_ipv4;
    to.port = o.port;
    auto t = rpc::TcpServer::Listen(to, dispatcher);
    if (!t.ok()) Die(kExitSetup, "listen on TCP port %u: %s", o.port, std::string(t.status().message()).c_str());
    tcp_server = std::move(*t);
    if (o.rpcbind) {
      const rpc::RpcbindResult r = rpc::RpcbindRegisterTcp(rpc::kTestProg, rpc::kTestVers, tcp_server->port());
      const std::string_view n = rpc::RpcbindResultName(r);
      printf("rpcbind registration: %.*s\n", static_cast<int>(n.size()), n.data());
    }
  } else {
    uint32_t pd = 0;
    s = OpenSession(o, &pd);
    rdma::RdmaServerOptions ro;
    ro.port = o.port;
    ro.transport = o.transport == Transport::kSctp ? IWARP_TRANSPORT_SCTP : IWARP_TRANSPORT_TCP;
    ro.credits = o.credits;
    ro.max_inline_send = o.inline_size;
    ro.max_inline_recv = o.inline_size;
    rdma_server = std::make_unique<rdma::RdmaServer>(s, pd, ro, dispatcher);
    if (int r = rdma_server->Start(); r != 0) {
      Die(kExitSetup, "listen on port %u: %s (%s)", o.port, strerror(-r), iwarp_last_error(s));
    }
  }
  printf("iwarp-rpc-perf server: %s, port %u, program 0x%08x version %u; waiting for clients\n",
         TransportName(o.transport), tcp_server ? tcp_server->port() : o.port, rpc::kTestProg,
         rpc::kTestVers);
  fflush(stdout);

  auto dump = [&](const char* why) {
    printf("--- counters (%s) ---\n", why);
    if (rdma_server) {
      PrintRdmaCounters("server", rdma_server->counters());
      printf("  %-24s %zu\n", "connections_now", rdma_server->connection_count());
    } else {
      PrintTcpServerCounters(tcp_server->counters());
      printf("  %-24s %zu\n", "connections_now", tcp_server->connection_count());
    }
    PrintRpcServerCounters(dispatcher.counters());
    printf("--- end ---\n");
    fflush(stdout);
  };
  uint64_t next_stats = o.stats_interval_s > 0 ? NowNs() + uint64_t(o.stats_interval_s) * 1000000000ull : 0;
  while (!g_stop) {
    if (rdma_server) {
      rdma_server->Poll(50);
    } else {
      tcp_server->Poll(50);
    }
    if (g_dump) {
      g_dump = 0;
      dump("SIGUSR1");
    }
    if (next_stats != 0 && NowNs() >= next_stats) {
      dump("interval");
      next_stats += uint64_t(o.stats_interval_s) * 1000000000ull;
    }
  }
  dump("exit");
  if (o.rpcbind && tcp_server) rpc::RpcbindUnregisterTcp(rpc::kTestProg, rpc::kTestVers);
  tcp_server.reset();
  if (rdma_server) rdma_server->DisconnectAll();
  rdma_server.reset();
  if (s != nullptr) iwarp_close(s);
  return kExitOk;
}

// -------------------------------------------------------------- client

// One call slot: its argument, its reply sink, its header buffer; one call
// in flight at a time. Arguments carry a slot pattern with the XID stamped
// into the first and last 4 bytes, so a reply to an older call of the slot
// (or a byte placed at the wrong offset) does not verify.
struct Slot {
  uint8_t* arg = nullptr;
  uint8_t* sink = nullptr;
  std::vector<uint8_t> scratch;
  uint8_t header[rpc::kMaxCallHeaderBytes + 4];
  rpc::Message msg;
  uint32_t xid = 0;
  uint64_t start_ns = 0;
  bool busy = false;
  bool done = false;
  int status = 0;
  bool ok = false;
  std::string why;
};

uint8_t PatternByte(uint32_t slot, uint64_t i) {
  return static_cast<uint8_t>((slot * 131u) + i * 7 + (i >> 8) + 1);
}

void Stamp(uint8_t* p, uint64_t size, uint32_t xid) {
  if (size >= 4) iwarp::StoreBe32(p, xid);
  if (size >= 8) iwarp::StoreBe32(p + size - 4, ~xid);
}

int RunClient(const Options& o) {
  in_addr a{};
  if (inet_pton(AF_INET, o.client_addr, &a) != 1) Die(kExitUsage, "bad server address '%s'", o.client_addr);
  const uint32_t server_ipv4 = ntohl(a.s_addr);
  const bool echo = o.test == Test::kEcho;
  const uint64_t size = echo ? o.size : 0;
  const uint32_t depth = o.depth;
  const uint64_t stride = (size + 4095 + 8) & ~uint64_t{4095};

  iwarp_session* s = nullptr;
  uint32_t pd = 0;
  iwarp_mr mr{};
  uint8_t* mem = nullptr;
  std::vector<uint8_t> plain;
  std::unique_ptr<rdma::RdmaClient> rc;
  std::unique_ptr<rpc::TcpClient> tc;
  rpc::ClientTransport* transport = nullptr;
  const uint64_t mem_bytes = std::max<uint64_t>(4096, 2 * stride * depth);
  if (o.transport == Transport::kTcp) {
    plain.assign(mem_bytes, 0);
    mem = plain.data();
    rpc::TcpClientOptions to;
    to.server_ipv4 = server_ipv4;
    to.server_port = o.port;
    to.call_timeout_ms = o.timeout_ms;
    auto c = rpc::TcpClient::Connect(to);
    if (!c.ok()) Die(kExitSetup, "connect to %s:%u: %s", o.client_addr, o.port, std::string(c.status().message()).c_str());
    tc = std::move(*c);
    transport = tc.get();
  } else {
    s = OpenSession(o, &pd);
    void* m = nullptr;
    if (int r = iwarp_mem_alloc(s, mem_bytes, 0, &m); r != 0) Die(kExitSetup, "mem_alloc: %s", iwarp_last_error(s));
    mem = static_cast<uint8_t*>(m);
    if (int r = iwarp_reg_mr(s, pd, mem, mem_bytes,
                             IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_WRITE,
                             &mr);
        r != 0) {
      Die(kExitSetup, "reg_mr: %s", iwarp_last_error(s));
    }
    rdma::RdmaClientOptions ro;
    ro.server = iwarp_addr{server_ipv4, o.port};
    ro.transport = o.transport == Transport::kSctp ? IWARP_TRANSPORT_SCTP : IWARP_TRANSPORT_TCP;
    ro.credits = std::max(o.credits, depth);
    ro.max_inline_send = o.inline_size;
    ro.max_inline_recv = o.inline_size;
    ro.ddp_read_threshold = o.read_threshold;
    ro.call_timeout_ms = o.timeout_ms;
    rc = std::make_unique<rdma::RdmaClient>(s, pd, ro);
    if (int r = rc->Connect(); r != 0) {
      Die(kExitSetup, "connect to %s:%u: %s (%s)", o.client_addr, o.port, strerror(-r), iwarp_last_error(s));
    }
    transport = rc.get();
  }
  const uint32_t stag = (o.transport == Transport::kTcp || o.unregistered) ? 0 : mr.stag;

  std::vector<Slot> slots(depth);
  for (uint32_t i = 0; i < depth; ++i) {
    Slot& sl = slots[i];
    sl.arg = mem + 2 * stride * i;
    sl.sink = sl.arg + stride;
    for (uint64_t k = 0; k < size; ++k) sl.arg[k] = PatternByte(i, k);
    sl.scratch.resize(size + 8);
  }

  printf("iwarp-rpc-perf client: %s to %s:%u\n", TransportName(o.transport), o.client_addr, o.port);
  printf("  test %s, size %" PRIu64 ", count %" PRIu64 ", depth %u", echo ? "echo" : "null", size,
         o.count, depth);
  if (rc) {
    printf(", inline threshold send %u / receive %u, read chunk from %u bytes%s%s", rc->send_threshold(),
           rc->recv_threshold(), o.read_threshold, o.reply_chunk ? ", no Write chunk (Reply chunk)" : "",
           o.unregistered ? ", unregistered buffers" : "");
  }
  printf("\n");
  fflush(stdout);

  std::vector<uint64_t> rtt_ns;
  rtt_ns.reserve(o.count);
  uint64_t issued = 0, completed = 0, errors = 0, failed_calls = 0;
  uint32_t next_xid = static_cast<uint32_t>(NowNs()) | 1;
  std::string first_error;

  auto issue = [&](uint32_t i) -> bool {
    Slot& sl = slots[i];
    sl.xid = next_xid++;
    sl.done = false;
    sl.ok = false;
    sl.why.clear();
    Stamp(sl.arg, size, sl.xid);
    if (size >= 8) {
      memset(sl.sink, 0xEE, 4);
      memset(sl.sink + size - 4, 0xEE, 4);
    }
    if (!rpc::EncodeTestCall(sl.xid, echo ? rpc::kTestProcEcho : rpc::kTestProcNull, ByteSpan(sl.arg, size),
                             MutableByteSpan(sl.header, sizeof(sl.header)), &sl.msg, nullptr, stag)) {
      Die(kExitFailed, "cannot encode a call");
    }
    rpc::CallOptions co;
    if (echo && !o.reply_chunk && o.transport != Transport::kTcp) {
      co.ddp_sinks[0] = rpc::ReplySink{MutableByteSpan(sl.sink, size), stag};
      co.ddp_sink_count = 1;
      co.max_reply_bytes = 64;
    } else {
      co.max_reply_bytes = static_cast<uint32_t>(64 + size);
    }
    sl.busy = true;
    sl.start_ns = NowNs();
    const int r = transport->Call(sl.msg, co, [&sl, size, echo, i](const rpc::ReplyView& v) {
      sl.done = true;
      sl.status = v.status;
      if (v.status != 0) {
        sl.why = "call completed " + std::string(strerror(-v.status));
        if (v.transport_error != 0) sl.why += " (RDMA_ERROR " + std::to_string(v.transport_error) + ")";
        return;
      }
      const rpc::TestReply tr = rpc::DecodeTestReply(
          v, echo ? rpc::kTestProcEcho : rpc::kTestProcNull, MutableByteSpan(sl.scratch.data(), sl.scratch.size()));
      if (!tr.results_ok) {
        sl.why = "reply did not decode as SUCCESS with results";
        return;
      }
      if (tr.header.xid != sl.xid) {
        sl.why = "reply XID differs";
        return;
      }
      if (!echo) {
        sl.ok = true;
        return;
      }
      if (tr.data.size() != size) {
        sl.why = "echo of " + std::to_string(size) + " bytes came back with " + std::to_string(tr.data.size());
        return;
      }
      if (size > 0 && memcmp(tr.data.data(), sl.arg, size) != 0) {
        uint64_t k = 0;
        while (k < size && tr.data[k] == sl.arg[k]) ++k;
        sl.why = "echoed byte " + std::to_string(k) + " differs";
        return;
      }
      (void)i;
      sl.ok = true;
    });
    if (r != 0) {
      sl.busy = false;
      if (first_error.empty()) first_error = std::string("Call() returned ") + strerror(-r);
      ++errors;
      return false;
    }
    ++issued;
    return true;
  };

  const uint64_t t0 = NowNs();
  uint64_t last_progress = t0;
  for (uint32_t i = 0; i < depth && issued < o.count; ++i) {
    if (!issue(i)) break;
  }
  while (completed < issued) {
    transport->Poll(1);
    bool progress = false;
    for (uint32_t i = 0; i < depth; ++i) {
      Slot& sl = slots[i];
      if (!sl.busy || !sl.done) continue;
      const uint64_t now = NowNs();
      sl.busy = false;
      ++completed;
      progress = true;
      rtt_ns.push_back(now - sl.start_ns);
      if (!sl.ok) {
        ++errors;
        if (sl.status != 0) ++failed_calls;
        if (first_error.empty()) first_error = "xid " + std::to_string(sl.xid) + ": " + sl.why;
      }
      if (issued < o.count && errors == 0) issue(i);
    }
    if (progress) {
      last_progress = NowNs();
    } else if (NowNs() - last_progress > uint64_t(o.timeout_ms + 5000) * 1000000ull) {
      if (first_error.empty()) first_error = "no progress for " + std::to_string(o.timeout_ms + 5000) + " ms";
      errors += issued - completed;
      break;
    }
  }
  const uint64_t t1 = NowNs();
  const double secs = static_cast<double>(t1 - t0) / 1e9;

  std::sort(rtt_ns.begin(), rtt_ns.end());
  auto pct = [&](double p) -> double {
    if (rtt_ns.empty()) return 0;
    size_t k = static_cast<size_t>(p * static_cast<double>(rtt_ns.size() - 1) + 0.5);
    return static_cast<double>(rtt_ns[std::min(k, rtt_ns.size() - 1)]) / 1000.0;
  };
  const double rate = secs > 0 ? static_cast<double>(completed) / secs : 0;
  const double mib = rate * static_cast<double>(size) / (1024.0 * 1024.0);
  printf(" %-8s %10s %7s %12s %10s %10s %10s %10s %10s\n", "#test", "size", "depth", "calls", "calls/s",
         "MiB/s", "p50_us", "p99_us", "max_us");
  printf(" %-8s %10" PRIu64 " %7u %12" PRIu64 " %10.0f %10.2f %10.2f %10.2f %10.2f\n", echo ? "echo" : "null",
         size, depth, completed, rate, mib, pct(0.5), pct(0.99), pct(1.0));
  printf("  MiB/s is echoed payload per second in each direction\n");
  printf("verified: %" PRIu64 " calls, errors %" PRIu64 " (failed calls %" PRIu64 ")\n", completed, errors,
         failed_calls);
  if (!first_error.empty()) printf("first error: %s\n", first_error.c_str());
  if (rc) {
    PrintRdmaCounters("client", rc->counters());
  } else {
    PrintTcpClientCounters(tc->counters());
  }
  fflush(stdout);
  rc.reset();
  tc.reset();
  if (s != nullptr) iwarp_close(s);
  return errors == 0 && completed == o.count ? kExitOk : kExitFailed;
}

void Usage(FILE* f) {
  fprintf(f,
          "Usage:\n"
          "  iwarp-rpc-perf --server [--transport iwarp|sctp|tcp] [--port P] [options]\n"
          "  iwarp-rpc-perf --client ADDR --test null|echo [--size N] [--count N] [--depth N] [options]\n"
          "\n"
          "Runs the RPC test program (0x20494950 v1: NULL, ECHO of an opaque up to 1 MiB)\n"
          "over RPC-over-RDMA v1 through iwarpd (iWARP, or RDMA over SCTP) or over\n"
          "record-marked TCP on kernel sockets. The client verifies every echoed byte.\n"
          "\n"
          "Common:\n"
          "  -t, --transport T      iwarp (default: RPC-over-RDMA on MPA/TCP), sctp (RPC-over-RDMA\n"
          "                         on RDMA over SCTP) or tcp (kernel TCP, no daemon)\n"
          "  -p, --port P           port (default 20049, NFS/RDMA's; tcp server: 0 = ephemeral)\n"
          "  -S, --socket PATH      iwarpd application socket (default $IWARPD_SOCKET or the\n"
          "                         daemon's default)\n"
          "      --credits N        RPC-over-RDMA credits granted (server) / asked (client) (32)\n"
          "      --inline N         inline send and receive size announced in the RFC 8797\n"
          "                         private data (4096; a multiple of 1024)\n"
          "Server:\n"
          "      --server           serve until SIGINT / SIGTERM\n"
          "      --bind ADDR        tcp: listen address (default 0.0.0.0)\n"
          "      --rpcbind          tcp: register the program with the local rpcbind\n"
          "      --stats-interval S print the counters every S seconds\n"
          "  The server prints its transport counters (RdmaCounters or TcpServer) and the\n"
          "  RPC dispatcher's on SIGUSR1, every --stats-interval and at exit.\n"
          "Client:\n"
          "  -c, --client ADDR      server IPv4 address\n"
          "      --test T           null or echo (default null)\n"
          "  -s, --size N           echo argument bytes, 0 .. 1048576 (default 0)\n"
          "  -n, --count N          calls (default 10000)\n"
          "  -d, --depth N          calls outstanding at once (default 1)\n"
          "      --read-threshold N echo arguments of N bytes and more go by Read chunk (1024)\n"
          "      --reply-chunk      offer no Write chunk: long echo results come back in a\n"
          "                         Reply chunk instead of by the Write list\n"
          "      --unregistered     pass buffers without an STag (the transport copies them)\n"
          "      --timeout-ms N     a call without reply by then fails (30000)\n"
          "  Prints calls/s, round trip p50/p99/max, MiB/s and the client transport counters.\n"
          "\n"
          "Exit status: 0 every call verified; 1 a call failed or a byte differed; 2 usage;\n"
          "3 setup (daemon, registration, listen or connect).\n");
}

uint64_t ParseU64(const char* s, const char* what) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0') Die(kExitUsage, "bad %s '%s'", what, s);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  enum {
    kOptServer = 256, kOptTest, kOptCredits, kOptInline, kOptBind, kOptRpcbind, kOptStats,
    kOptReadThreshold, kOptReplyChunk, kOptUnregistered, kOptTimeout
  };
  static const option longopts[] = {
      {"server", no_argument, nullptr, kOptServer},
      {"client", required_argument, nullptr, 'c'},
      {"transport", required_argument, nullptr, 't'},
      {"port", required_argument, nullptr, 'p'},
      {"socket", required_argument, nullptr, 'S'},
      {"test", required_argument, nullptr, kOptTest},
      {"size", required_argument, nullptr, 's'},
      {"count", required_argument, nullptr, 'n'},
      {"depth", required_argument, nullptr, 'd'},
      {"credits", required_argument, nullptr, kOptCredits},
      {"inline", required_argument, nullptr, kOptInline},
      {"bind", required_argument, nullptr, kOptBind},
      {"rpcbind", no_argument, nullptr, kOptRpcbind},
      {"stats-interval", required_argument, nullptr, kOptStats},
      {"read-threshold", required_argument, nullptr, kOptReadThreshold},
      {"reply-chunk", no_argument, nullptr, kOptReplyChunk},
      {"unregistered", no_argument, nullptr, kOptUnregistered},
      {"timeout-ms", required_argument, nullptr, kOptTimeout},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  int ch;
  while ((ch = getopt_long(argc, argv, "c:t:p:S:s:n:d:h", longopts, nullptr)) != -1) {
    switch (ch) {
      case kOptServer: o.server = true; break;
      case 'c': o.client_addr = optarg; break;
      case 't':
        if (strcmp(optarg, "iwarp") == 0) {
          o.transport = Transport::kIwarp;
        } else if (strcmp(optarg, "sctp") == 0) {
          o.transport = Transport::kSctp;
        } else if (strcmp(optarg, "tcp") == 0) {
          o.transport = Transport::kTcp;
        } else {
          Die(kExitUsage, "unknown transport '%s' (iwarp, sctp or tcp)", optarg);
        }
        break;
      case 'p': {
        const uint64_t p = ParseU64(optarg, "port");
        if (p > 65535) Die(kExitUsage, "bad port '%s'", optarg);
        o.port = static_cast<uint16_t>(p);
        break;
      }
      case 'S': o.socket = optarg; break;
      case kOptTest:
        if (strcmp(optarg, "null") == 0) {
          o.test = Test::kNull;
        } else if (strcmp(optarg, "echo") == 0) {
          o.test = Test::kEcho;
        } else {
          Die(kExitUsage, "unknown test '%s' (null or echo)", optarg);
        }
        break;
      case 's': o.size = ParseU64(optarg, "size"); break;
      case 'n': o.count = ParseU64(optarg, "count"); break;
      case 'd': o.depth = static_cast<uint32_t>(ParseU64(optarg, "depth")); break;
      case kOptCredits: o.credits = static_cast<uint32_t>(ParseU64(optarg, "credits")); break;
      case kOptInline: o.inline_size = static_cast<uint32_t>(ParseU64(optarg, "inline size")); break;
      case kOptBind: {
        in_addr a{};
        if (inet_pton(AF_INET, optarg, &a) != 1) Die(kExitUsage, "bad bind address '%s'", optarg);
        o.bind_ipv4 = ntohl(a.s_addr);
        break;
      }
      case kOptRpcbind: o.rpcbind = true; break;
      case kOptStats: o.stats_interval_s = static_cast<int>(ParseU64(optarg, "stats interval")); break;
      case kOptReadThreshold: o.read_threshold = static_cast<uint32_t>(ParseU64(optarg, "read threshold")); break;
      case kOptReplyChunk: o.reply_chunk = true; break;
      case kOptUnregistered: o.unregistered = true; break;
      case kOptTimeout: o.timeout_ms = static_cast<int>(ParseU64(optarg, "timeout")); break;
      case 'h': Usage(stdout); return kExitOk;
      default: Usage(stderr); return kExitUsage;
    }
  }
  if (optind != argc) Die(kExitUsage, "unexpected argument '%s' (try --help)", argv[optind]);
  if (o.server == (o.client_addr != nullptr)) Die(kExitUsage, "give exactly one of --server and --client ADDR");
  if (o.size > rpc::kTestEchoMax) Die(kExitUsage, "size %" PRIu64 " over the test program's 1 MiB", o.size);
  if (o.depth < 1 || o.depth > 1024) Die(kExitUsage, "depth must be 1 .. 1024");
  if (o.credits < 1 || o.credits > 1000) Die(kExitUsage, "credits must be 1 .. 1000");
  if (o.inline_size < 1024 || o.inline_size % 1024 != 0 || o.inline_size > (256u << 10)) {
    Die(kExitUsage, "inline size must be a multiple of 1024 from 1024 to 262144");
  }
  if (o.count < 1) Die(kExitUsage, "count must be at least 1");
  setvbuf(stdout, nullptr, _IOLBF, 0);
  return o.server ? RunServer(o) : RunClient(o);
}
