// iwarp-perf: perftest-style bandwidth and latency tests on libiwarp.
//
//   iwarp-perf TEST [options]              server: listens, waits for a client
//   iwarp-perf TEST [options] SERVER_IPV4  client: connects, runs, prints
//
// TEST is write_bw, read_bw, send_bw, write_lat, read_lat or send_lat; both
// sides must name the same one. Run `iwarp-perf --help` for the options.
//
// How the two sides talk (all through the daemon, like any RDMA pair):
//   - connect private data (client -> server): a Hello with the test, the
//     largest size, the queue depth and the client's STag/TO/length;
//     accept private data (server -> client): the server's STag/TO/length.
//   - then a control channel of Sends (64-byte CtrlMsg) on the same QP:
//     kBegin (size, iterations) -> kReady; kRound (count) -> kReady;
//     kEnd -> kResult (errors the server found); kBye ends the server.
// iWARP has no receiver-not-ready retry (a Send without a posted receive
// terminates the stream, RFC 5041 7.1), so every Send the peer makes is
// matched by a receive posted before the peer is told to go: send tests run
// in rounds of at most the receives the server posted for that round.
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "libiwarp/iwarp.h"
#include "tools/perf/byte_wait.h"

namespace {

enum class Test : uint32_t { kWriteBw, kReadBw, kSendBw, kWriteLat, kReadLat, kSendLat };
constexpr const char* kTestNames[] = {"write_bw", "read_bw", "send_bw",
                                      "write_lat", "read_lat", "send_lat"};
constexpr const char* kTestTitles[] = {"RDMA_Write BW Test", "RDMA_Read BW Test",
                                       "Send BW Test",       "RDMA_Write Latency Test",
                                       "RDMA_Read Latency Test", "Send Latency Test"};

// Exit codes.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // a completion failed or data did not verify
constexpr int kExitUsage = 2;
constexpr int kExitSetup = 3;   // daemon, registration or connection trouble

constexpr uint32_t kMagic = 0x46505749;  // "IWPF"
constexpr uint32_t kVersion = 1;
constexpr uint64_t kDataBudget = 64ull << 20;  // data area cap per side
constexpr uint64_t kCtrlBytes = 4096;
constexpr uint32_t kCtrlMsgBytes = 64;
constexpr uint32_t kQpDepth = 1024;
constexpr int kIdleTimeoutMs = 10000;  // no progress for this long: fail

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint32_t test;
  uint32_t flags;  // bit 0: verify
  uint32_t queue_depth;
  uint32_t reserved;
  uint64_t max_size;
  uint64_t addr;
  uint64_t length;
  uint32_t stag;
  uint32_t reserved2;
};

struct Welcome {
  uint32_t magic;
  uint32_t stag;
  uint64_t addr;
  uint64_t length;
};

enum CtrlType : uint32_t { kBegin = 1, kReady, kRound, kEnd, kResult, kBye };
struct CtrlMsg {
  uint32_t type;
  uint32_t reserved;
  uint64_t size;
  uint64_t count;   // kBegin: iterations; kRound: messages in the round
  uint64_t errors;  // kResult
  uint8_t pad[kCtrlMsgBytes - 32];
};
static_assert(sizeof(CtrlMsg) == kCtrlMsgBytes);

struct Options {
  Test test = Test::kWriteBw;
  bool server = true;
  uint32_t server_ipv4 = 0x7F000001u;
  uint16_t port = 18515;
  uint64_t size = 65536;
  uint64_t iterations = 0;  // 0: default for the test
  uint32_t queue_depth = 128;
  // Bandwidth tests signal every cq_mod-th work request (and the last), as
  // perftest's --cq-mod. The send queue completes in order (RFC 5040 5.5),
  // so a completion covers every request posted before it. Default 1: on the
  // 2-core machines here half-window moderation measured no clear gain
  // (64 KiB write_bw 1501-1701 against 1679-1952 MiB/s, alternated).
  uint32_t cq_mod = 1;
  bool all_sizes = false;
  bool verify = false;
  // write_lat: poll the last byte of the buffer (as perftest) instead of
  // sleeping on the QP's placed-Write count (iwarp_qp_wait_writes).
  bool poll_byte = false;
  // Latency tests, client: a pause before every iteration (untimed), so each
  // one starts from idle daemons (workers.idle_block_after_us).
  uint64_t gap_us = 0;
  bool crc = false;
  bool markers = false;
  uint32_t transport = IWARP_TRANSPORT_TCP;  // --transport: both sides name the same one
  const char* socket = nullptr;
};

// --gap-us: the untimed pause before a latency iteration.
void Gap(const Options& o) {
  if (o.gap_us == 0) return;
  timespec ts{static_cast<time_t>(o.gap_us / 1000000), static_cast<long>(o.gap_us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

const char* TransportName(uint32_t t) { return t == IWARP_TRANSPORT_SCTP ? "SCTP" : "TCP"; }

uint8_t Pattern(uint64_t slot, uint64_t off) {
  return static_cast<uint8_t>(slot * 31 + off * 7 + (off >> 9) + 1);
}
uint8_t Tag(uint64_t i) { return static_cast<uint8_t>(i % 255 + 1); }

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Sizes both sides derive from the Hello.
uint64_t DataBytes(uint64_t max_size, uint32_t q) {
  uint64_t want = max_size * std::max<uint32_t>(q, 2);
  want = std::clamp<uint64_t>(want, 2 * max_size, std::max<uint64_t>(kDataBudget, 2 * max_size));
  return (want + 4095) & ~uint64_t{4095};
}
uint64_t Slots(uint64_t data_bytes, uint64_t size, uint32_t q) {
  return std::max<uint64_t>(1, std::min<uint64_t>(q, data_bytes / size));
}

struct Side {
  iwarp_session* s = nullptr;
  uint32_t pd = 0;
  uint8_t* mem = nullptr;
  iwarp_mr mr{};
  uint64_t data_bytes = 0;
  iwarp_cq* scq = nullptr;
  iwarp_cq* rcq = nullptr;
  iwarp_qp* qp = nullptr;
  uint8_t* ctrl_rx() { return mem + data_bytes; }
  uint8_t* ctrl_tx() { return mem + data_bytes + 2048; }
};

[[noreturn]] void Die(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Die(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "iwarp-perf: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(code);
}

const char* Err(const Side& side) {
  const char* e = side.s != nullptr ? iwarp_last_error(side.s) : nullptr;
  return e != nullptr && *e != '\0' ? e : "-";
}

void SetUp(const Options& o, uint64_t data_bytes, Side* side) {
  int r = iwarp_open(o.socket, &side->s);
  if (r != 0) {
    Die(kExitSetup, "cannot open a session on %s: %s", o.socket != nullptr ? o.socket : "(default socket)",
        strerror(-r));
  }
  if ((r = iwarp_alloc_pd(side->s, &side->pd)) != 0) Die(kExitSetup, "alloc_pd: %s", Err(*side));
  side->data_bytes = data_bytes;
  void* m = nullptr;
  if ((r = iwarp_mem_alloc(side->s, data_bytes + kCtrlBytes, 0, &m)) != 0) {
    Die(kExitSetup, "mem_alloc of %" PRIu64 " bytes: %s (%s)", data_bytes + kCtrlBytes,
        strerror(-r), Err(*side));
  }
  side->mem = static_cast<uint8_t*>(m);
  r = iwarp_reg_mr(side->s, side->pd, m, data_bytes + kCtrlBytes,
                   IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_WRITE,
                   &side->mr);
  if (r != 0) Die(kExitSetup, "reg_mr: %s (%s)", strerror(-r), Err(*side));
  if (iwarp_create_cq(side->s, 2 * kQpDepth, &side->scq) != 0 ||
      iwarp_create_cq(side->s, 2 * kQpDepth, &side->rcq) != 0) {
    Die(kExitSetup, "create_cq: %s", Err(*side));
  }
  iwarp_qp_attr a{side->pd, side->scq, side->rcq, kQpDepth, kQpDepth};
  if (iwarp_create_qp(side->s, &a, &side->qp) != 0) Die(kExitSetup, "create_qp: %s", Err(*side));
}

// One completion from `cq`; spins a little, then sleeps on the CQ.
// Waits for one completion on `cq`; fails after `timeout_ms` without one
// (0: no limit; a QP that breaks still ends the wait, with a flush error).
iwarp_wc WaitWc(iwarp_cq* cq, const char* what, uint64_t timeout_ms = kIdleTimeoutMs) {
  iwarp_wc wc;
  uint64_t idle_since = 0;
  for (uint32_t spins = 0;; ++spins) {
    const int n = iwarp_poll_cq(cq, &wc, 1);
    if (n < 0) Die(kExitFailed, "poll_cq (%s): %s", what, strerror(-n));
    if (n == 1) break;
    if (spins < 256) continue;
    if (idle_since == 0) idle_since = NowNs();
    const int w = iwarp_cq_wait(cq, 100);
    if (w == -EPIPE) Die(kExitFailed, "the daemon went away (%s)", what);
    if (timeout_ms != 0 && NowNs() - idle_since > timeout_ms * 1000000ull) {
      Die(kExitFailed, "no completion for %" PRIu64 " s (%s)", timeout_ms / 1000, what);
    }
  }
  if (wc.status != IWARP_WC_SUCCESS) {
    Die(kExitFailed, "%s: completion wr_id %" PRIu64 " failed with status %u (terminate %u/%u/0x%02x)",
        what, wc.wr_id, wc.status, wc.term_layer, wc.term_etype, wc.term_code);
  }
  return wc;
}

void PostSend(Side* side, uint64_t wr_id, uint32_t opcode, uint64_t laddr, uint64_t len,
              uint64_t raddr, uint32_t rkey, bool signaled = true) {
  iwarp_sge sge{laddr, static_cast<uint32_t>(len), side->mr.stag};
  iwarp_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = opcode;
  wr.flags = signaled ? static_cast<uint32_t>(IWARP_SEND_SIGNALED) : 0u;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = raddr;
  wr.rkey = rkey;
  const int r = iwarp_post_send(side->qp, &wr, 1);
  if (r != 1) Die(kExitFailed, "post_send: %d (%s)", r, r < 0 ? strerror(-r) : "send queue full");
}

// Every how many work requests a bandwidth test asks for a completion.
uint64_t CqMod(const Options& o, uint64_t window) {
  return std::clamp<uint64_t>(o.cq_mod, 1, window);
}

// A send-queue completion retires its request and every one posted before it
// (in-order completion); returns the count retired so far. A wr_id outside
// the requests in flight, [done, posted), ends the run.
uint64_t Retired(const iwarp_wc& wc, uint64_t done, uint64_t posted) {
  if (wc.wr_id < done || wc.wr_id >= posted) {
    Die(kExitFailed, "completion for wr_id %" PRIu64 " outside %" PRIu64 "..%" PRIu64, wc.wr_id,
        done, posted - 1);
  }
  return wc.wr_id + 1;
}

void PostRecv(Side* side, uint64_t wr_id, uint8_t* buf, uint64_t len) {
  iwarp_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(len), side->mr.stag};
  iwarp_recv_wr wr{wr_id, &sge, 1};
  const int r = iwarp_post_recv(side->qp, &wr, 1);
  if (r != 1) Die(kExitFailed, "post_recv: %d (%s)", r, r < 0 ? strerror(-r) : "receive queue full");
}

constexpr uint64_t kCtrlWrId = ~uint64_t{0};

void PostCtrlRecv(Side* side) { PostRecv(side, kCtrlWrId, side->ctrl_rx(), kCtrlMsgBytes); }

void SendCtrl(Side* side, const CtrlMsg& m) {
  memcpy(side->ctrl_tx(), &m, sizeof(m));
  PostSend(side, kCtrlWrId, IWARP_WR_SEND, reinterpret_cast<uintptr_t>(side->ctrl_tx()), sizeof(m),
           0, 0);
  WaitWc(side->scq, "control send");
}

CtrlMsg RecvCtrl(Side* side, uint32_t want, uint64_t timeout_ms = kIdleTimeoutMs) {
  const iwarp_wc wc = WaitWc(side->rcq, "control receive", timeout_ms);
  CtrlMsg m{};
  if (wc.wr_id != kCtrlWrId || wc.byte_len != sizeof(m)) {
    Die(kExitFailed, "protocol: expected a control message, got wr_id %" PRIu64 " (%u bytes)",
        wc.wr_id, wc.byte_len);
  }
  memcpy(&m, side->ctrl_rx(), sizeof(m));
  if (want != 0 && m.type != want) Die(kExitFailed, "protocol: message %u, expected %u", m.type, want);
  return m;
}

void WaitEvent(Side* side, iwarp_event* ev, uint32_t type, int timeout_ms) {
  const int r = iwarp_get_event(side->s, ev, timeout_ms);
  if (r == 0) Die(kExitSetup, "no connection event within %d s", timeout_ms / 1000);
  if (r < 0) Die(kExitSetup, "get_event: %s", strerror(-r));
  if (ev->type != type) {
    Die(kExitSetup, "connection event %u (reason %s), expected %u", ev->type,
        ev->reason != 0 ? strerror(ev->reason) : "none", type);
  }
}

void WaitByte(const uint8_t* p, uint8_t want) {
  if (!iwarp::perf::WaitForByte(p, want, kIdleTimeoutMs * 1000000ull)) {
    Die(kExitFailed, "RDMA Write did not arrive within %d s", kIdleTimeoutMs / 1000);
  }
}

// write_lat: waits until the QP's count of placed RDMA Writes reaches
// `target`, sleeping on the daemon's doorbell (RFC 5040 gives the Data Sink
// of a Write no completion; iwarp_qp_wait_writes stands in), then checks the
// Write's last byte. With --poll-byte it polls that byte instead.
void WaitWrite(const Options& o, Side* side, uint64_t target, const uint8_t* last, uint8_t want) {
  if (o.poll_byte) {
    WaitByte(last, want);
    return;
  }
  for (;;) {
    const uint64_t placed = iwarp_qp_writes_placed(side->qp);
    if (static_cast<int64_t>(placed - target) >= 0) break;
    const int r = iwarp_qp_wait_writes(side->qp, placed, kIdleTimeoutMs);
    if (r == -ETIMEDOUT) {
      Die(kExitFailed, "RDMA Write did not arrive within %d s", kIdleTimeoutMs / 1000);
    }
    if (r < 0) Die(kExitFailed, "waiting for an RDMA Write: %s", strerror(-r));
  }
  const uint8_t got = iwarp::perf::LoadByte(last);
  if (got != want) {
    Die(kExitFailed, "an RDMA Write counted as placed ends in %u, not %u", got, want);
  }
}

// ---------------------------------------------------------------------------
// Server

uint64_t CheckSlots(const uint8_t* data, uint64_t size, uint64_t slots, bool tagged_last) {
  uint64_t errors = 0;
  for (uint64_t k = 0; k < slots; ++k) {
    const uint64_t n = tagged_last ? size - 1 : size;
    for (uint64_t off = 0; off < n; ++off) errors += data[k * size + off] != Pattern(k, off);
  }
  return errors;
}

int RunServer(const Options& o) {
  Side side;
  // The session is opened first, so the client can connect as soon as we
  // print that we listen; the region is sized from the client's Hello.
  int r = iwarp_open(o.socket, &side.s);
  if (r != 0) {
    Die(kExitSetup, "cannot open a session on %s: %s",
        o.socket != nullptr ? o.socket : "(default socket)", strerror(-r));
  }
  iwarp_addr addr{0, o.port};
  uint32_t lid = 0;
  iwarp_conn_opts lo{};
  lo.transport = o.transport;
  if ((r = iwarp_listen_opts(side.s, &addr, &lo, &lid)) != 0) {
    Die(kExitSetup, "listen on %s port %u: %s (%s)", TransportName(o.transport), o.port,
        strerror(-r), Err(side));
  }
  printf("iwarp-perf server: %s, waiting for a client on %s port %u\n", kTestNames[int(o.test)],
         TransportName(o.transport), o.port);
  fflush(stdout);
  iwarp_event ev;
  WaitEvent(&side, &ev, IWARP_EVENT_CONNECT_REQUEST, -1);
  Hello h{};
  if (ev.private_data_len != sizeof(h)) {
    iwarp_reject(side.s, ev.request_id, nullptr, 0);
    Die(kExitSetup, "a client without an iwarp-perf Hello (private data %u bytes)",
        ev.private_data_len);
  }
  memcpy(&h, ev.private_data, sizeof(h));
  if (h.magic != kMagic || h.version != kVersion || h.test != uint32_t(o.test)) {
    iwarp_reject(side.s, ev.request_id, nullptr, 0);
    Die(kExitSetup, "client runs %s (version %u), this server %s: rejected",
        h.test < 6 ? kTestNames[h.test] : "?", h.version, kTestNames[int(o.test)]);
  }
  const bool verify = (h.flags & 1) != 0;
  iwarp_session* s = side.s;
  side.s = nullptr;
  {
    // SetUp opens its own session; reuse ours instead.
    Side tmp;
    tmp.s = s;
    const uint64_t data_bytes = DataBytes(h.max_size, h.queue_depth);
    if ((r = iwarp_alloc_pd(s, &tmp.pd)) != 0) Die(kExitSetup, "alloc_pd: %s", Err(tmp));
    tmp.data_bytes = data_bytes;
    void* m = nullptr;
    if ((r = iwarp_mem_alloc(s, data_bytes + kCtrlBytes, 0, &m)) != 0) {
      Die(kExitSetup, "mem_alloc: %s (%s)", strerror(-r), Err(tmp));
    }
    tmp.mem = static_cast<uint8_t*>(m);
    r = iwarp_reg_mr(s, tmp.pd, m, data_bytes + kCtrlBytes,
                     IWARP_ACCESS_LOCAL_WRITE | IWARP_ACCESS_REMOTE_READ | IWARP_ACCESS_REMOTE_WRITE,
                     &tmp.mr);
    if (r != 0) Die(kExitSetup, "reg_mr: %s (%s)", strerror(-r), Err(tmp));
    if (iwarp_create_cq(s, 2 * kQpDepth, &tmp.scq) != 0 ||
        iwarp_create_cq(s, 2 * kQpDepth, &tmp.rcq) != 0) {
      Die(kExitSetup, "create_cq: %s", Err(tmp));
    }
    iwarp_qp_attr a{tmp.pd, tmp.scq, tmp.rcq, kQpDepth, kQpDepth};
    if (iwarp_create_qp(s, &a, &tmp.qp) != 0) Die(kExitSetup, "create_qp: %s", Err(tmp));
    side = tmp;
  }
  PostCtrlRecv(&side);
  Welcome w{kMagic, side.mr.stag, side.mr.addr, side.data_bytes};
  if ((r = iwarp_accept(side.s, ev.request_id, side.qp, &w, sizeof(w))) != 0) {
    Die(kExitSetup, "accept: %s (%s)", strerror(-r), Err(side));
  }
  WaitEvent(&side, &ev, IWARP_EVENT_ESTABLISHED, 10000);

  uint64_t size = 0, iterations = 0, slots = 1, errors = 0, sizes_done = 0, received = 0;
  for (;;) {
    // No time limit: between control messages the client may run a Write or
    // Read test of any length, which completes nothing here (a lost
    // connection still ends the wait with a flushed receive).
    const CtrlMsg m = RecvCtrl(&side, 0, 0);
    CtrlMsg reply{};
    reply.type = kReady;
    if (m.type == kBye) break;
    if (m.type == kBegin) {
      size = m.size;
      iterations = m.count;
      if (size == 0 || size > h.max_size) Die(kExitFailed, "protocol: size %" PRIu64, size);
      slots = Slots(side.data_bytes, size, h.queue_depth);
      errors = 0;
      received = 0;
      // Read tests read our pattern; write tests must overwrite zeros.
      if (o.test == Test::kReadBw || o.test == Test::kReadLat) {
        for (uint64_t k = 0; k < slots; ++k) {
          for (uint64_t off = 0; off < size; ++off) side.mem[k * size + off] = Pattern(k, off);
        }
      } else {
        memset(side.mem, 0, std::min(side.data_bytes, slots * size));
      }
      if (o.test == Test::kWriteLat) {
        // Our source is slot 1 (the client writes our slot 0).
        uint8_t* src = side.mem + (slots > 1 ? size : 0);
        if (slots < 2) Die(kExitFailed, "write_lat needs two slots");
        for (uint64_t off = 0; off < size; ++off) src[off] = Pattern(0, off);
        PostCtrlRecv(&side);
        const uint64_t base = iwarp_qp_writes_placed(side.qp);
        SendCtrl(&side, reply);
        for (uint64_t i = 0; i < iterations; ++i) {
          WaitWrite(o, &side, base + i + 1, side.mem + size - 1, Tag(i));
          src[size - 1] = Tag(i);
          PostSend(&side, i, IWARP_WR_RDMA_WRITE, reinterpret_cast<uintptr_t>(src), size,
                   h.addr + size, h.stag);
          WaitWc(side.scq, "write_lat pong");
        }
        continue;
      }
      PostCtrlRecv(&side);
      SendCtrl(&side, reply);
      continue;
    }
    if (m.type == kRound) {
      // Receives for every Send of the round, then one for the next control
      // message, before the client is told to go.
      const uint64_t count = m.count;
      if (count == 0 || count >= kQpDepth) Die(kExitFailed, "protocol: round of %" PRIu64, count);
      for (uint64_t j = 0; j < count; ++j) {
        PostRecv(&side, j, side.mem + (j % slots) * size, size);
      }
      PostCtrlRecv(&side);
      SendCtrl(&side, reply);
      for (uint64_t j = 0; j < count; ++j) {
        const iwarp_wc wc = WaitWc(side.rcq, "data receive");
        if (wc.wr_id != j || wc.byte_len != size) {
          ++errors;
        } else if (verify) {
          const uint64_t slot = o.test == Test::kSendLat ? 0 : received % slots;
          const uint8_t* p = side.mem + (j % slots) * size;
          for (uint64_t off = 0; off < size; ++off) errors += p[off] != Pattern(slot, off);
        }
        ++received;
        if (o.test == Test::kSendLat) {
          PostSend(&side, j, IWARP_WR_SEND, reinterpret_cast<uintptr_t>(side.mem + (j % slots) * size),
                   size, 0, 0);
          WaitWc(side.scq, "send_lat pong");
        }
      }
      continue;
    }
    if (m.type == kEnd) {
      if (verify && o.test == Test::kWriteBw) {
        errors += CheckSlots(side.mem, size, std::min<uint64_t>(slots, iterations), false);
      }
      if (verify && o.test == Test::kWriteLat && iterations > 0) {
        errors += CheckSlots(side.mem, size, 1, true);
        errors += side.mem[size - 1] != Tag(iterations - 1);
      }
      if ((o.test == Test::kSendBw || o.test == Test::kSendLat) && received != iterations) {
        ++errors;
      }
      reply.type = kResult;
      reply.size = size;
      reply.errors = errors;
      PostCtrlRecv(&side);
      SendCtrl(&side, reply);
      printf("server: %" PRIu64 " bytes x %" PRIu64 " %s%s\n", size, iterations,
             verify ? "verified, errors " : "done", verify ? std::to_string(errors).c_str() : "");
      fflush(stdout);
      ++sizes_done;
      if (errors != 0) Die(kExitFailed, "%" PRIu64 " bytes did not verify at size %" PRIu64, errors, size);
      continue;
    }
    Die(kExitFailed, "protocol: unexpected message %u", m.type);
  }
  iwarp_get_event(side.s, &ev, 2000);  // the client's disconnect
  iwarp_close(side.s);
  printf("server: %" PRIu64 " sizes done\n", sizes_done);
  return kExitOk;
}

// ---------------------------------------------------------------------------
// Client

struct Row {
  uint64_t size;
  uint64_t iterations;
  double seconds;            // bandwidth tests
  double copy_mib = 0;       // baseline: memcpy of the same messages, one core
  std::vector<double> usec;  // latency tests, one per iteration
};

// The baseline printed beside each bandwidth figure, measured in the same
// run: one core copying the same messages between two places of our region
// (what the daemon does per message for a loopback QP, without the queues).
double CopyBaseline(uint8_t* mem, uint64_t size, uint64_t iters) {
  const uint64_t n = std::max<uint64_t>(1, std::min<uint64_t>(iters, (256ull << 20) / size));
  const uint64_t t0 = NowNs();
  for (uint64_t i = 0; i < n; ++i) {
    memcpy(mem + size, mem, size);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // keep every copy
    mem[0] = static_cast<uint8_t>(mem[size + size - 1] + 1);
  }
  const double secs = std::max(double(NowNs() - t0) / 1e9, 1e-9);
  return double(size) * double(n) / secs / (1024.0 * 1024.0);
}

// `mpa` is iwarp_event.mpa_flags of the ESTABLISHED event (what the MPA
// exchange negotiated; 0 for a loopback QP).
void PrintHeader(const Options& o, uint32_t mpa) {
  const bool lat = o.test == Test::kWriteLat || o.test == Test::kReadLat || o.test == Test::kSendLat;
  printf("---------------------------------------------------------------------------------------\n");
  printf("                    %s\n", kTestTitles[int(o.test)]);
  if ((mpa & IWARP_MPA_STATE_SCTP) != 0) {
    printf(" Transport       : RDMA over SCTP (RFC 5043) to %u.%u.%u.%u:%u through two iwarpd\n",
           o.server_ipv4 >> 24, (o.server_ipv4 >> 16) & 255, (o.server_ipv4 >> 8) & 255,
           o.server_ipv4 & 255, o.port);
  } else if ((mpa & IWARP_MPA_STATE_WIRE) != 0) {
    printf(" Transport       : iWARP (MPA/TCP) to %u.%u.%u.%u:%u through two iwarpd\n",
           o.server_ipv4 >> 24, (o.server_ipv4 >> 16) & 255, (o.server_ipv4 >> 8) & 255,
           o.server_ipv4 & 255, o.port);
  } else {
    printf(" Transport       : loopback QP through iwarpd (same daemon)\n");
  }
  printf(" TX depth        : %u\n", lat ? 1 : o.queue_depth);
  if (!lat) {
    printf(" CQ moderation   : a completion every %" PRIu64 " work requests\n",
           CqMod(o, std::min<uint64_t>(o.queue_depth, kQpDepth)));
  }
  if ((mpa & IWARP_MPA_STATE_SCTP) != 0) {
    printf(" CRC             : SCTP CRC32c on every packet (no MPA over SCTP)\n");
    printf(" Markers         : n/a (no MPA over SCTP)\n");
  } else if ((mpa & IWARP_MPA_STATE_WIRE) != 0) {
    printf(" CRC             : %s (negotiated%s)\n", (mpa & IWARP_MPA_STATE_CRC) != 0 ? "on" : "off",
           o.crc ? "; --crc asked" : "");
    const bool tx = (mpa & IWARP_MPA_STATE_TX_MARKERS) != 0;
    const bool rx = (mpa & IWARP_MPA_STATE_RX_MARKERS) != 0;
    printf(" Markers         : %s (negotiated%s)\n",
           tx && rx ? "both ways" : tx ? "we send" : rx ? "peer sends" : "off",
           o.markers ? "; --markers asked" : "");
  } else {
    printf(" CRC             : %s\n", o.crc ? "requested; n/a for loopback QPs" : "off (n/a for loopback QPs)");
    printf(" Markers         : %s\n", o.markers ? "requested; n/a for loopback QPs" : "off (n/a for loopback QPs)");
  }
  printf(" Data verified   : %s\n", o.verify ? "yes" : "no");
  if (lat && o.test != Test::kReadLat) printf(" Latency         : half the round trip (as perftest)\n");
  if (o.test == Test::kWriteLat) {
    printf(" Write arrival   : %s\n", o.poll_byte ? "polling the last byte (--poll-byte)"
                                                  : "the QP's placed-Write count (sleeps)");
  }
  printf("---------------------------------------------------------------------------------------\n");
  if (lat) {
    printf(" #bytes     #iterations    t_min[usec]    t_max[usec]    t_typical[usec]  t_avg[usec]    "
           "t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n");
  } else {
    printf(" #bytes     #iterations    BW average[MiB/sec]   MsgRate[Mpps]   memcpy baseline[MiB/sec]\n");
  }
  fflush(stdout);
}

void PrintRow(const Options& o, Row& row) {
  const bool lat = !row.usec.empty();
  if (!lat) {
    const double mib = double(row.size) * double(row.iterations) / row.seconds / (1024.0 * 1024.0);
    const double mpps = double(row.iterations) / row.seconds / 1e6;
    printf(" %-10" PRIu64 " %-14" PRIu64 " %-21.2f %-15.6f %.2f\n", row.size, row.iterations, mib,
           mpps, row.copy_mib);
  } else {
    std::vector<double>& v = row.usec;
    std::sort(v.begin(), v.end());
    double sum = 0, sq = 0;
    for (double x : v) sum += x;
    const double avg = sum / double(v.size());
    for (double x : v) sq += (x - avg) * (x - avg);
    const double stdev = std::sqrt(sq / double(v.size()));
    auto pct = [&](double p) {
      size_t i = static_cast<size_t>(std::ceil(p * double(v.size()))) ;
      return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
    };
    printf(" %-10" PRIu64 " %-14" PRIu64 " %-14.2f %-14.2f %-16.2f %-14.2f %-15.2f %-22.2f %.2f\n",
           row.size, row.iterations, v.front(), v.back(), v[v.size() / 2], avg, stdev, pct(0.99),
           pct(0.999));
  }
  (void)o;
  fflush(stdout);
}

int RunClient(const Options& o) {
  std::vector<uint64_t> sizes;
  if (o.all_sizes) {
    for (uint64_t s = 2; s <= (8ull << 20); s *= 2) sizes.push_back(s);
  } else {
    sizes.push_back(o.size);
  }
  const uint64_t max_size = sizes.back();
  const bool lat = o.test == Test::kWriteLat || o.test == Test::kReadLat || o.test == Test::kSendLat;
  Side side;
  SetUp(o, DataBytes(max_size, o.queue_depth), &side);
  Hello h{kMagic, kVersion, uint32_t(o.test), o.verify ? 1u : 0u, o.queue_depth, 0,
          max_size, side.mr.addr, side.data_bytes, side.mr.stag, 0};
  iwarp_addr addr{o.server_ipv4, o.port};
  // --crc / --markers replace the daemon's MPA defaults for this connection.
  iwarp_conn_opts co{};
  co.transport = o.transport;
  if (o.crc || o.markers) {
    co.flags = IWARP_CONN_MPA;
    co.mpa_flags = (o.crc ? uint32_t{IWARP_MPA_CRC} : 0u) |
                   (o.markers ? uint32_t{IWARP_MPA_MARKERS} : 0u);
  }
  int r = iwarp_connect_opts(side.qp, &addr, &h, sizeof(h), &co);
  if (r != 0) {
    Die(kExitSetup, "connect to %s port %u: %s (%s)", TransportName(o.transport), o.port,
        strerror(-r), Err(side));
  }
  iwarp_event ev;
  const int er = iwarp_get_event(side.s, &ev, 10000);
  if (er != 1) Die(kExitSetup, "no answer to the connect within 10 s");
  if (ev.type == IWARP_EVENT_REJECTED) {
    Die(kExitSetup, "the server on port %u rejected us: it runs another test or version than %s",
        o.port, kTestNames[int(o.test)]);
  }
  if (ev.type != IWARP_EVENT_ESTABLISHED) {
    Die(kExitSetup, "connect to port %u failed: event %u, %s (is an iwarp-perf %s server listening?)",
        o.port, ev.type, ev.reason != 0 ? strerror(ev.reason) : "no reason", kTestNames[int(o.test)]);
  }
  Welcome w{};
  if (ev.private_data_len != sizeof(w)) Die(kExitSetup, "server sent no iwarp-perf Welcome");
  memcpy(&w, ev.private_data, sizeof(w));
  if (w.magic != kMagic) Die(kExitSetup, "server sent a bad Welcome");
  PrintHeader(o, ev.mpa_flags);

  int rc = kExitOk;
  // What the daemon moves for us and the server: payload of the tests, the
  // control messages both ways, and the send-queue work requests.
  uint64_t data_bytes = 0, ctrl_msgs = 0, wrs = 0;
  for (uint64_t size : sizes) {
    const uint64_t slots = Slots(side.data_bytes, size, o.queue_depth);
    const uint64_t rslots = Slots(w.length, size, o.queue_depth);
    uint64_t iters = o.iterations;
    if (iters == 0) iters = lat ? 1000 : (size >= (1u << 20) ? 1000 : 5000);
    // Our sources carry the pattern of their slot; sinks start zeroed.
    if (o.test == Test::kReadBw || o.test == Test::kReadLat) {
      memset(side.mem, 0, std::min(side.data_bytes, slots * size));
    } else {
      for (uint64_t k = 0; k < slots; ++k) {
        for (uint64_t off = 0; off < size; ++off) side.mem[k * size + off] = Pattern(k, off);
      }
    }
    if (o.test == Test::kWriteLat) memset(side.mem + size, 0, size);  // the server writes here
    CtrlMsg m{};
    m.type = kBegin;
    m.size = size;
    m.count = iters;
    PostCtrlRecv(&side);
    SendCtrl(&side, m);
    RecvCtrl(&side, kReady);

    Row row{size, iters, 0, 0, {}};
    if (lat) row.usec.reserve(iters);  // no allocation inside the timed loop
    uint64_t errors = 0;
    const uint64_t t0 = NowNs();
    if (o.test == Test::kWriteBw || o.test == Test::kReadBw) {
      const bool read = o.test == Test::kReadBw;
      const uint64_t window = std::min<uint64_t>(o.queue_depth, kQpDepth);
      const uint64_t mod = CqMod(o, window);
      uint64_t posted = 0, done = 0;
      while (done < iters) {
        while (posted < iters && posted - done < window) {
          const uint64_t k = posted % std::min(slots, rslots);
          PostSend(&side, posted, read ? IWARP_WR_RDMA_READ : IWARP_WR_RDMA_WRITE,
                   side.mr.addr + k * size, size, w.addr + k * size, w.stag,
                   (posted + 1) % mod == 0 || posted + 1 == iters);
          ++posted;
        }
        const iwarp_wc wc = WaitWc(side.scq, read ? "RDMA Read" : "RDMA Write");
        const uint64_t retired = Retired(wc, done, posted);
        if (wc.byte_len != size) ++errors;
        for (; done < retired; ++done) {
          if (!read || !o.verify) continue;
          const uint64_t k = done % std::min(slots, rslots);
          const uint8_t* p = side.mem + k * size;
          for (uint64_t off = 0; off < size; ++off) errors += p[off] != Pattern(k, off);
        }
      }
      row.seconds = double(NowNs() - t0) / 1e9;
    } else if (o.test == Test::kSendBw || o.test == Test::kSendLat) {
      const bool pingpong = o.test == Test::kSendLat;
      const uint64_t window = std::min<uint64_t>(o.queue_depth, kQpDepth);
      const uint64_t mod = CqMod(o, window);
      // Rounds of at most the receives the server can hold (distinct buffers
      // when verifying, so none is overwritten before it is checked).
      const uint64_t round_max = std::min<uint64_t>(kQpDepth - 2, o.verify ? rslots : kQpDepth - 2);
      uint64_t sent = 0;
      uint64_t round_time = 0;
      while (sent < iters) {
        const uint64_t count = std::min(round_max, iters - sent);
        CtrlMsg rm{};
        rm.type = kRound;
        rm.count = count;
        rm.size = size;
        const uint64_t rt0 = NowNs();
        PostCtrlRecv(&side);
        SendCtrl(&side, rm);
        RecvCtrl(&side, kReady);
        round_time += NowNs() - rt0;
        uint64_t posted = 0, done = 0;
        while (done < count) {
          if (pingpong) {
            const uint64_t k = 0;  // ping from slot 0, pong into slot 1
            PostRecv(&side, posted, side.mem + size, size);
            Gap(o);
            const uint64_t l0 = NowNs();
            PostSend(&side, posted, IWARP_WR_SEND, side.mr.addr + k * size, size, 0, 0);
            const iwarp_wc rwc = WaitWc(side.rcq, "send_lat pong");
            row.usec.push_back(double(NowNs() - l0) / 2000.0);
            WaitWc(side.scq, "send_lat ping");
            if (rwc.byte_len != size) ++errors;
            if (o.verify) {
              const uint8_t* p = side.mem + size;  // the server echoes our ping
              for (uint64_t off = 0; off < size; ++off) errors += p[off] != Pattern(k, off);
            }
            ++posted;
            ++done;
            continue;
          }
          while (posted < count && posted - done < window) {
            const uint64_t k = (sent + posted) % slots;
            PostSend(&side, posted, IWARP_WR_SEND, side.mr.addr + k * size, size, 0, 0,
                     (posted + 1) % mod == 0 || posted + 1 == count);
            ++posted;
          }
          done = Retired(WaitWc(side.scq, "Send"), done, posted);
        }
        sent += count;
        ctrl_msgs += 2;
      }
      row.seconds = double(NowNs() - t0) / 1e9;
      (void)round_time;
    } else if (o.test == Test::kReadLat) {
      for (uint64_t i = 0; i < iters; ++i) {
        const uint64_t k = i % std::min(slots, rslots);
        Gap(o);
        const uint64_t l0 = NowNs();
        PostSend(&side, i, IWARP_WR_RDMA_READ, side.mr.addr + k * size, size, w.addr + k * size,
                 w.stag);
        const iwarp_wc wc = WaitWc(side.scq, "RDMA Read");
        row.usec.push_back(double(NowNs() - l0) / 1000.0);
        if (wc.byte_len != size) ++errors;
        if (o.verify) {
          const uint8_t* p = side.mem + k * size;
          for (uint64_t off = 0; off < size; ++off) errors += p[off] != Pattern(k, off);
        }
      }
    } else {  // write_lat: ping-pong on the last byte (as perftest)
      if (slots < 2) Die(kExitFailed, "write_lat needs two slots of %" PRIu64 " bytes", size);
      uint8_t* src = side.mem;
      const uint8_t* dst = side.mem + size;
      const uint64_t base = iwarp_qp_writes_placed(side.qp);
      for (uint64_t i = 0; i < iters; ++i) {
        Gap(o);
        const uint64_t l0 = NowNs();
        src[size - 1] = Tag(i);
        PostSend(&side, i, IWARP_WR_RDMA_WRITE, side.mr.addr, size, w.addr, w.stag);
        // As perftest: our Write's completion first, then the peer's Write.
        // The completion comes with the TCP ACK, which the peer's Write
        // usually carries, so by then the pong is usually placed too.
        WaitWc(side.scq, "write_lat ping");
        WaitWrite(o, &side, base + i + 1, dst + size - 1, Tag(i));
        row.usec.push_back(double(NowNs() - l0) / 2000.0);
      }
    }
    CtrlMsg em{};
    em.type = kEnd;
    PostCtrlRecv(&side);
    SendCtrl(&side, em);
    const CtrlMsg res = RecvCtrl(&side, kResult);
    if (o.test == Test::kWriteLat && o.verify) {
      // The server's last Write has completed (it waited for it before
      // answering kEnd): its pattern with the last tag.
      for (uint64_t off = 0; off + 1 < size; ++off) errors += side.mem[size + off] != Pattern(0, off);
      errors += side.mem[2 * size - 1] != Tag(iters - 1);
    }
    if (!lat) row.copy_mib = CopyBaseline(side.mem, size, iters);
    PrintRow(o, row);
    const bool both_ways = o.test == Test::kWriteLat || o.test == Test::kSendLat;
    data_bytes += size * iters * (both_ways ? 2 : 1);
    wrs += iters * (both_ways ? 2 : 1);
    ctrl_msgs += 4;
    if (errors != 0 || res.errors != 0) {
      fprintf(stderr, "iwarp-perf: size %" PRIu64 ": %" PRIu64 " errors here, %" PRIu64
              " at the server (data did not verify)\n", size, errors, res.errors);
      rc = kExitFailed;
      break;
    }
  }
  printf("---------------------------------------------------------------------------------------\n");
  CtrlMsg bye{};
  bye.type = kBye;
  SendCtrl(&side, bye);
  ctrl_msgs += 1;
  wrs += ctrl_msgs;
  printf(" moved by the daemon: %" PRIu64 " data bytes, %" PRIu64 " control bytes, %" PRIu64
         " work requests\n", data_bytes, ctrl_msgs * kCtrlMsgBytes, wrs);
  iwarp_disconnect(side.qp);
  iwarp_get_event(side.s, &ev, 2000);
  iwarp_close(side.s);
  return rc;
}

void Usage(FILE* f) {
  fprintf(f,
          "usage: iwarp-perf TEST [options]               (server)\n"
          "       iwarp-perf TEST [options] SERVER_IPV4   (client)\n"
          "TEST: write_bw read_bw send_bw write_lat read_lat send_lat (same on both sides)\n"
          "  -s, --size BYTES       message size (default 65536)\n"
          "  -a, --all              all sizes 2 .. 8 MiB (powers of two)\n"
          "  -n, --iters N          iterations per size (default 5000, 1000 from 1 MiB;\n"
          "                         1000 for latency tests)\n"
          "  -q, --tx-depth N       outstanding work requests, bandwidth tests (default 128)\n"
          "  -Q, --cq-mod N         bandwidth tests: a completion every N work requests and\n"
          "                         for the last (default 1: every one; at most the tx depth)\n"
          "  -p, --port PORT        server port (default 18515)\n"
          "  -S, --socket PATH      iwarpd application socket (default $IWARPD_SOCKET or\n"
          "                         /run/iwarpd/iwarpd.sock)\n"
          "  -V, --verify           check every byte (client and server); slower\n"
          "      --gap-us N         latency tests, client: pause N us before every\n"
          "                         iteration (untimed), so each starts from idle daemons\n"
          "      --poll-byte        write_lat: poll the last byte of the buffer for the\n"
          "                         peer's Write (as perftest) instead of sleeping until\n"
          "                         the daemon counts it placed (iwarp_qp_wait_writes)\n"
          "      --crc, --markers   client: ask for MPA CRC / Markers on this connection\n"
          "                         (RFC 5044; otherwise the daemon's defaults apply). Only\n"
          "                         iWARP QPs to another daemon have MPA framing; loopback\n"
          "                         QPs (SERVER_IPV4 of this daemon or 127.x) ignore them\n"
          "      --transport tcp|sctp  iWARP over TCP (default) or RDMA over SCTP (RFC 5043);\n"
          "                         name the same on both sides (SCTP ports are not TCP\n"
          "                         ports); --sctp is short for --transport sctp. SCTP needs\n"
          "                         the daemons' data planes to have SCTP enabled\n"
          "  -h, --help\n"
          "The server serves one client, then exits.\n"
          "Output (client): a perftest-like table; MiB = 2^20 bytes; bandwidth rows end with\n"
          "a memcpy baseline (one core copying the same messages, same run); latency tests give\n"
          "t_min/t_max/t_typical(median)/t_avg/t_stdev/99%%/99.9%% in usec (half the round\n"
          "trip for write_lat and send_lat, the whole Read for read_lat).\n"
          "Exit: 0 ok, 1 a completion failed or data did not verify, 2 usage,\n"
          "      3 daemon/registration/connection trouble.\n");
}

bool ParseU64(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0' || s[0] == '-') return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  static const option kLong[] = {
      {"size", required_argument, nullptr, 's'},  {"all", no_argument, nullptr, 'a'},
      {"iters", required_argument, nullptr, 'n'}, {"tx-depth", required_argument, nullptr, 'q'},
      {"port", required_argument, nullptr, 'p'},  {"socket", required_argument, nullptr, 'S'},
      {"verify", no_argument, nullptr, 'V'},      {"crc", no_argument, nullptr, 'C'},
      {"markers", no_argument, nullptr, 'M'},     {"help", no_argument, nullptr, 'h'},
      {"transport", required_argument, nullptr, 'T'}, {"sctp", no_argument, nullptr, 'Z'},
      {"cq-mod", required_argument, nullptr, 'Q'},
      {"poll-byte", no_argument, nullptr, 'P'},
      {"gap-us", required_argument, nullptr, 'G'},
      {nullptr, 0, nullptr, 0}};
  int c;
  uint64_t v = 0;
  while ((c = getopt_long(argc, argv, "s:an:q:Q:p:S:Vh", kLong, nullptr)) != -1) {
    switch (c) {
      case 's':
        if (!ParseU64(optarg, &v) || v == 0 || v > (8ull << 20)) {
          fprintf(stderr, "iwarp-perf: -s wants 1 .. 8388608, not '%s'\n", optarg);
          return kExitUsage;
        }
        o.size = v;
        break;
      case 'a': o.all_sizes = true; break;
      case 'n':
        if (!ParseU64(optarg, &v) || v == 0) {
          fprintf(stderr, "iwarp-perf: -n wants a positive count, not '%s'\n", optarg);
          return kExitUsage;
        }
        o.iterations = v;
        break;
      case 'q':
        if (!ParseU64(optarg, &v) || v == 0 || v > kQpDepth) {
          fprintf(stderr, "iwarp-perf: -q wants 1 .. %u, not '%s'\n", kQpDepth, optarg);
          return kExitUsage;
        }
        o.queue_depth = static_cast<uint32_t>(v);
        break;
      case 'Q':
        if (!ParseU64(optarg, &v) || v == 0 || v > kQpDepth) {
          fprintf(stderr, "iwarp-perf: -Q wants 1 .. %u, not '%s'\n", kQpDepth, optarg);
          return kExitUsage;
        }
        o.cq_mod = static_cast<uint32_t>(v);
        break;
      case 'p':
        if (!ParseU64(optarg, &v) || v == 0 || v > 65535) {
          fprintf(stderr, "iwarp-perf: -p wants 1 .. 65535, not '%s'\n", optarg);
          return kExitUsage;
        }
        o.port = static_cast<uint16_t>(v);
        break;
      case 'S': o.socket = optarg; break;
      case 'V': o.verify = true; break;
      case 'P': o.poll_byte = true; break;
      case 'G':
        if (!ParseU64(optarg, &v) || v > 10000000) {
          fprintf(stderr, "iwarp-perf: --gap-us wants 0 .. 10000000, not '%s'\n", optarg);
          return kExitUsage;
        }
        o.gap_us = v;
        break;
      case 'C': o.crc = true; break;
      case 'M': o.markers = true; break;
      case 'T':
        if (strcmp(optarg, "tcp") == 0) {
          o.transport = IWARP_TRANSPORT_TCP;
        } else if (strcmp(optarg, "sctp") == 0) {
          o.transport = IWARP_TRANSPORT_SCTP;
        } else {
          fprintf(stderr, "iwarp-perf: --transport wants tcp or sctp, not '%s'\n", optarg);
          return kExitUsage;
        }
        break;
      case 'Z': o.transport = IWARP_TRANSPORT_SCTP; break;
      case 'h': Usage(stdout); return kExitOk;
      default: Usage(stderr); return kExitUsage;
    }
  }
  if (optind >= argc) {
    Usage(stderr);
    return kExitUsage;
  }
  const std::string test = argv[optind++];
  bool found = false;
  for (int i = 0; i < 6; ++i) {
    if (test == kTestNames[i]) {
      o.test = static_cast<Test>(i);
      found = true;
    }
  }
  if (!found) {
    fprintf(stderr, "iwarp-perf: unknown test '%s' (write_bw read_bw send_bw write_lat read_lat send_lat)\n",
            test.c_str());
    return kExitUsage;
  }
  if (optind < argc) {
    unsigned a, b, cc, d;
    char tail;
    if (sscanf(argv[optind], "%u.%u.%u.%u%c", &a, &b, &cc, &d, &tail) != 4 || a > 255 || b > 255 ||
        cc > 255 || d > 255) {
      fprintf(stderr, "iwarp-perf: server address '%s' is not an IPv4 address\n", argv[optind]);
      return kExitUsage;
    }
    o.server = false;
    o.server_ipv4 = (a << 24) | (b << 16) | (cc << 8) | d;
    ++optind;
  }
  if (optind < argc) {
    fprintf(stderr, "iwarp-perf: unexpected argument '%s'\n", argv[optind]);
    return kExitUsage;
  }
  if (o.test == Test::kWriteLat && o.size < 1) return kExitUsage;
  if (o.transport == IWARP_TRANSPORT_SCTP && (o.crc || o.markers)) {
    fprintf(stderr, "iwarp-perf: --crc/--markers are MPA options; RDMA over SCTP has no MPA\n");
    return kExitUsage;
  }
  if (o.server && (o.crc || o.markers)) {
    fprintf(stderr, "iwarp-perf: --crc/--markers act on the client's connect; the server "
                    "answers with its daemon's settings\n");
  }
  iwarp::perf::LowerTimerSlack();  // WaitByte's naps
  return o.server ? RunServer(o) : RunClient(o);
}
