// WireEngine driven directly, on one thread: the test plays the control
// thread (commands, events) and the applications (SQ/RQ/CQ rings in plain
// memory), two engines over two TcpStacks joined by tcp_lite's preallocated
// packet ring. Proves house rule 13 (after setup, Send / Write / Read through
// the rings allocate nothing, also with SG lists of several entries) and that
// garbage an application writes into its rings (bad opcode, SGE count,
// impossible ring index) fails only its own QP, with the verbs status and a
// named counter.
//
// Own binary: it replaces global operator new (alloc_counter_dep).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "appif/wake_pipe.h"
#include "appif/wire_engine.h"
#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::appif {
namespace {

constexpr uint16_t kPort = 4791;
constexpr uint32_t kDepth = 64;
constexpr uint32_t kRegion = 256 * 1024;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Mem = std::unique_ptr<uint8_t, FreeDeleter>;
Mem Alloc(size_t n) {
  const size_t r = (n + kCacheLine - 1) / kCacheLine * kCacheLine;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kCacheLine, r));
  std::memset(p, 0, r);
  return Mem(p);
}

// One application QP as the control thread sets it up (SessionServer's
// PrepareWire), with the application's own views of the rings.
struct AppQp {
  Mem qp_mem, cq_mem, region;
  QpLayout layout{kDepth, kDepth};
  SpscRing<Sqe> sq;  // application: producer
  SpscRing<Rqe> rq;
  SpscRing<Cqe> cq;  // application: consumer
  WireCq wcq;
  // The CQ's wake-up pipe (as the session server makes it): the engine
  // writes a byte per wake-up into the write end; the test reads the other.
  UniqueFd cq_wake_read, cq_wake_write;
  std::unique_ptr<WireQpContext> ctx;
  uint32_t stag = 0;
  uint64_t base_to = 0x7000'0000;
  bool markers = true;     // asked for (MPA); the peer's answer decides
  bool zero_copy = false;  // engine::QpOptions::zero_copy_tx

  void Init(WireEngine& e, uint32_t qp_id, uint32_t pd, uint32_t stag_index) {
    qp_mem = Alloc(layout.bytes());
    cq_mem = Alloc(RingBytes<Cqe>(2 * kDepth));
    region = Alloc(kRegion);
    sq = SpscRing<Sqe>(qp_mem.get() + layout.sq_offset(), kDepth);
    sq.Init();
    rq = SpscRing<Rqe>(qp_mem.get() + layout.rq_offset(), kDepth);
    rq.Init();
    cq = SpscRing<Cqe>(cq_mem.get(), 2 * kDepth);
    cq.Init();
    wcq.id = qp_id;
    wcq.ring = SpscRing<Cqe>(cq_mem.get(), 2 * kDepth);
    wcq.ring.AttachAsProducer();
    WakePipe wake;
    if (MakeWakePipe(&wake) == 0) {
      cq_wake_read = std::move(wake.app_end);
      cq_wake_write = std::move(wake.daemon_end);
    }
    wcq.eventfd = cq_wake_write.get();
    ctx = std::make_unique<WireQpContext>();
    ctx->qp_id = qp_id;
    ctx->owner = &e;
    ctx->sq = SpscRing<Sqe>(qp_mem.get() + layout.sq_offset(), kDepth);
    ctx->sq.AttachAsConsumer();
    ctx->rq = SpscRing<Rqe>(qp_mem.get() + layout.rq_offset(), kDepth);
    ctx->rq.AttachAsConsumer();
    ctx->scq = &wcq;
    ctx->rcq = &wcq;
    ctx->notify = Notify();
    engine::QpOptions o;
    o.mpa.crc = true;
    o.mpa.want_markers = markers;
    o.zero_copy_tx = zero_copy;
    o.pd = pd;
    o.sq_depth = kDepth;
    o.rq_depth = kDepth;
    o.cq_depth = 2 * kDepth;
    ctx->engine = *engine::Qp::Create(o, e.stack(), e.memory(), *ctx);
    ctx->InitSlots(kDepth);
    stag = ddp::MakeStag(stag_index, 0x42);
  }
  QpNotify* Notify() { return reinterpret_cast<QpNotify*>(qp_mem.get() + layout.notify_offset()); }
  // How many wake-ups the CQ's pipe holds (0: not rung), emptying it.
  uint64_t TakeDoorbell() {
    uint8_t buf[64];
    const ssize_t n = read(cq_wake_read.get(), buf, sizeof(buf));
    return n > 0 ? static_cast<uint64_t>(n) : 0;
  }
  WireCommand RegCommand(uint32_t pd) const {
    WireCommand c;
    c.type = WireCommandType::kRegMr;
    c.stag = stag;
    c.region.base_to = base_to;
    c.region.length = kRegion;
    c.region.access = ddp::kAccessAll;
    c.region.pd = pd;
    c.region.valid = true;
    c.mem = region.get();
    return c;
  }
};

class WireEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_.markers = b_.markers = markers_;
    a_.zero_copy = b_.zero_copy = zero_copy_;
    tcp::TcpOptions t;
    t.max_connections = 8;
    t.send_buffer_bytes = 1 << 20;
    t.receive_buffer_bytes = 1 << 20;
    t.delayed_ack_us = 0;
    const uint32_t ip_a[] = {tcp::testing::kIpA};
    const uint32_t ip_b[] = {tcp::testing::kIpB};
    sa_ = *tcp::TcpStack::Create(t, ip_a, link_.to_b, isn_, now_);
    sb_ = *tcp::TcpStack::Create(t, ip_b, link_.to_a, isn_, now_);
    WireEngineOptions o;
    o.max_qps = 4;
    o.max_pending = 4;
    o.max_listeners = 2;
    o.stag_capacity = 64;
    o.event_depth = 64;
    o.pending_timeout_us = 200'000;
    o.local_ip = tcp::testing::kIpA;
    o.app_ports = &ports_a_;
    ea_ = *WireEngine::Create(o, *sa_);
    o.local_ip = tcp::testing::kIpB;
    o.app_ports = &ports_b_;
    eb_ = *WireEngine::Create(o, *sb_);
    a_.Init(*ea_, 11, 1, 3);
    b_.Init(*eb_, 22, 2, 5);
    ASSERT_EQ(Call(*ea_, a_.RegCommand(1)), 0);
    ASSERT_EQ(Call(*eb_, b_.RegCommand(2)), 0);
    WireCommand l;
    l.type = WireCommandType::kListen;
    l.listener_id = 7;
    l.port = kPort;
    ASSERT_EQ(Call(*eb_, l), 0);
    WireCommand c;
    c.type = WireCommandType::kConnect;
    c.qp = a_.ctx.get();
    c.remote_ip = tcp::testing::kIpB;
    c.port = kPort;
    ASSERT_TRUE(ea_->PushCommand(c));
    // B's application accepts the request when it shows up.
    bool a_up = false, b_up = false;
    for (int i = 0; i < 20000 && !(a_up && b_up); ++i) {
      Step();
      WireEvent ev;
      while (eb_->PopEvent(&ev)) {
        if (ev.type == WireEventType::kConnectRequest) {
          WireCommand acc;
          acc.type = WireCommandType::kAccept;
          acc.qp = b_.ctx.get();
          acc.request_id = ev.request_id;
          ASSERT_TRUE(eb_->PushCommand(acc));
        }
        if (ev.type == WireEventType::kEstablished) b_up = true;
      }
      while (ea_->PopEvent(&ev)) {
        if (ev.type == WireEventType::kEstablished) a_up = true;
      }
    }
    ASSERT_TRUE(a_up && b_up);
  }
  void TearDown() override {
    // Stacks first: they may still hold the engines' proxies.
    sa_.reset();
    sb_.reset();
  }

  void Step() {
    now_ += 20;
    link_.Deliver(1, *sb_, now_);
    link_.Deliver(0, *sa_, now_);
    sa_->RunTimers(now_);
    sb_->RunTimers(now_);
    ea_->Poll(now_);
    eb_->Poll(now_);
  }
  // Pushes `c` and steps until its kAck; returns the status.
  int Call(WireEngine& e, WireCommand c) {
    c.seq = ++seq_;
    if (!e.PushCommand(c)) return -1;
    for (int i = 0; i < 1000; ++i) {
      Step();
      WireEvent ev;
      while (e.PopEvent(&ev)) {
        if (ev.type == WireEventType::kAck && ev.seq == c.seq) return ev.status;
      }
    }
    return -2;
  }
  // Collects up to `want` CQEs of `q` within a step budget.
  size_t Reap(AppQp& q, Cqe* out, size_t want) {
    size_t n = 0;
    for (int i = 0; i < 200000 && n < want; ++i) {
      while (n < want && q.cq.Pop(&out[n])) ++n;
      if (n < want) Step();
    }
    return n;
  }

  void DisconnectDestroyAndWaitOutTimeWait(bool a_closes);

  bool markers_ = true;
  bool zero_copy_ = false;
  tcp::testing::RingLink link_;
  tcp::IsnGenerator isn_ = tcp::testing::TestIsn();
  uint64_t now_ = 1'000'000;
  uint32_t seq_ = 0;
  AppPortTable ports_a_, ports_b_;       // outlive the engines that write them
  std::unique_ptr<WireEngine> ea_, eb_;  // destroyed after the stacks
  std::unique_ptr<tcp::TcpStack> sa_, sb_;
  AppQp a_, b_;
};

Sqe MakeSqe(uint64_t id, WrOpcode op, const AppQp& local, uint32_t len, const AppQp* remote) {
  Sqe s;
  s.wr_id = id;
  s.opcode = static_cast<uint8_t>(op);
  s.flags = kWrSignaled;
  s.num_sge = 1;
  s.sge[0] = Sge{local.base_to, len, local.stag};
  if (remote != nullptr) {
    s.remote_addr = remote->base_to;
    s.rkey = remote->stag;
  }
  return s;
}

TEST_F(WireEngineTest, SteadyStateSendWriteReadThroughRingsAllocatesNothing) {
  const uint32_t len = 64 * 1024;
  auto round = [&](uint64_t id) {
    Rqe r;
    r.wr_id = id;
    r.num_sge = 1;
    r.sge[0] = Sge{b_.base_to, kRegion, b_.stag};
    if (!b_.rq.Push(r)) return false;
    // The receive must be in the engine before the Send can arrive.
    eb_->PostReceives();
    if (!a_.sq.Push(MakeSqe(id, WrOpcode::kSend, a_, len, nullptr))) return false;
    if (!a_.sq.Push(MakeSqe(id + 1, WrOpcode::kRdmaWrite, a_, len, &b_))) return false;
    if (!a_.sq.Push(MakeSqe(id + 2, WrOpcode::kRdmaRead, a_, len, &b_))) return false;
    Cqe c[3];
    if (Reap(a_, c, 3) != 3) return false;
    for (const Cqe& e : c) {
      if (e.status != static_cast<uint8_t>(WcStatus::kSuccess)) return false;
    }
    Cqe rc;
    return Reap(b_, &rc, 1) == 1 && rc.status == 0 && rc.byte_len == len && rc.wr_id == id;
  };
  for (uint32_t i = 0; i < kRegion; ++i) a_.region.get()[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(round(10));  // warm-up
  const uint64_t before = testutil::AllocationCount();
  ASSERT_GT(before, 0u);  // the counting hook is live
  for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(round(100 + 10 * i));
  EXPECT_EQ(testutil::AllocationCount() - before, 0u);
  EXPECT_EQ(std::memcmp(b_.region.get(), a_.region.get(), len), 0);
  EXPECT_EQ(ea_->stats().wrs_posted, 27u);
  EXPECT_EQ(eb_->stats().recvs_posted, 9u);
  EXPECT_EQ(ea_->stats().events_dropped + eb_->stats().events_dropped, 0u);
}

// The Data Sink of an RDMA Write gets no completion (RFC 5040), so the
// worker counts placed Writes in the QP's notify block. The count moves only
// once every byte of the Write is in memory (checked after every step of a
// multi-segment Write), rings the CQ's wake-up pipe only for an application that
// announced it sleeps (and clears that), counts a zero-length Write, and
// ignores Sends.
TEST_F(WireEngineTest, PlacedWritesAreCountedOnceWholeAndRingOnlyASleeper) {
  constexpr uint32_t kLen = 200 * 1000;  // ~140 segments at this MSS
  for (uint32_t i = 0; i < kRegion; ++i) a_.region.get()[i] = static_cast<uint8_t>(i * 5 + 3);
  QpNotify* n = b_.Notify();
  ASSERT_EQ(n->writes_placed.load(), 0u);
  n->waiter.store(1);
  ASSERT_TRUE(a_.sq.Push(MakeSqe(1, WrOpcode::kRdmaWrite, a_, kLen, &b_)));
  uint32_t steps_before_whole = 0;
  for (int i = 0; i < 200000 && n->writes_placed.load() == 0; ++i) {
    Step();
    if (n->writes_placed.load() == 0) {
      ++steps_before_whole;
    } else {
      ASSERT_EQ(std::memcmp(a_.region.get(), b_.region.get(), kLen), 0) << "counted before whole";
    }
  }
  ASSERT_EQ(n->writes_placed.load(), 1u);
  EXPECT_GT(steps_before_whole, 1u);  // it did take several steps to arrive
  EXPECT_EQ(n->waiter.load(), 0u);
  EXPECT_EQ(b_.TakeDoorbell(), 1u);
  Cqe c;
  ASSERT_EQ(Reap(a_, &c, 1), 1u);
  EXPECT_EQ(c.status, static_cast<uint8_t>(WcStatus::kSuccess));

  // Nobody waits: counted, no doorbell. A zero-length Write counts too.
  ASSERT_TRUE(a_.sq.Push(MakeSqe(2, WrOpcode::kRdmaWrite, a_, 0, &b_)));
  ASSERT_EQ(Reap(a_, &c, 1), 1u);
  for (int i = 0; i < 100; ++i) Step();
  EXPECT_EQ(n->writes_placed.load(), 2u);
  EXPECT_EQ(b_.TakeDoorbell(), 0u);

  // A Send is not a Write.
  Rqe r;
  r.wr_id = 9;
  r.num_sge = 1;
  r.sge[0] = Sge{b_.base_to, kRegion, b_.stag};
  ASSERT_TRUE(b_.rq.Push(r));
  eb_->PostReceives();
  ASSERT_TRUE(a_.sq.Push(MakeSqe(3, WrOpcode::kSend, a_, 64, nullptr)));
  ASSERT_EQ(Reap(b_, &c, 1), 1u);
  EXPECT_EQ(c.opcode, static_cast<uint8_t>(WcOpcode::kRecv));
  EXPECT_EQ(n->writes_placed.load(), 2u);
  EXPECT_EQ(b_.ctx->engine->stats().writes_placed, 2u);
  // The count is the worker's own: what the application scribbles there is
  // overwritten by the next Write, not added to.
  n->writes_placed.store(1000);
  ASSERT_TRUE(a_.sq.Push(MakeSqe(4, WrOpcode::kRdmaWrite, a_, 64, &b_)));
  ASSERT_EQ(Reap(a_, &c, 1), 1u);
  for (int i = 0; i < 100; ++i) Step();
  EXPECT_EQ(n->writes_placed.load(), 3u);
}

// SG lists through the rings: a Send gathered from 4 SGEs (one empty) into
// a receive of 3 SGEs, every byte checked, with no allocation in the steady
// state; then an RDMA Read with two separate sink SGEs (RFC 5040 4.4: one
// sink per Read Request) completes LOC_QP_OP_ERR, counted in bad_sqes.
TEST_F(WireEngineTest, MultiSgeSendIntoMultiSgeRecvAllocatesNothing) {
  constexpr uint32_t kLen = 3000 + 17 + 9000;
  for (uint32_t i = 0; i < kRegion; ++i) a_.region.get()[i] = static_cast<uint8_t>(i * 13 + 1);
  auto round = [&](uint64_t id) {
    std::memset(b_.region.get(), 0, kRegion);
    Rqe r;
    r.wr_id = id;
    r.num_sge = 3;
    r.sge[0] = Sge{b_.base_to + 100000, 5000, b_.stag};
    r.sge[1] = Sge{b_.base_to + 1000, 10, b_.stag};
    r.sge[2] = Sge{b_.base_to + 50000, 8000, b_.stag};
    if (!b_.rq.Push(r)) return false;
    eb_->PostReceives();
    Sqe sqe = MakeSqe(id, WrOpcode::kSend, a_, 0, nullptr);
    sqe.num_sge = 4;
    sqe.sge[0] = Sge{a_.base_to + 7, 3000, a_.stag};
    sqe.sge[1] = Sge{0, 0, 0};
    sqe.sge[2] = Sge{a_.base_to + 20000, 17, a_.stag};
    sqe.sge[3] = Sge{a_.base_to + 40000, 9000, a_.stag};
    if (!a_.sq.Push(sqe)) return false;
    Cqe c, rc;
    if (Reap(a_, &c, 1) != 1 || c.status != 0 || c.byte_len != kLen) return false;
    if (Reap(b_, &rc, 1) != 1 || rc.status != 0 || rc.byte_len != kLen || rc.wr_id != id) {
      return false;
    }
    // The message, in order, across the receive's SGEs (no allocation here:
    // the steady state is measured).
    const uint8_t* a = a_.region.get();
    const uint8_t* b = b_.region.get();
    auto msg = [a](uint32_t i) {
      return i < 3000 ? a[7 + i] : i < 3017 ? a[20000 + i - 3000] : a[40000 + i - 3017];
    };
    auto placed = [b](uint32_t i) {
      return i < 5000 ? b[100000 + i] : i < 5010 ? b[1000 + i - 5000] : b[50000 + i - 5010];
    };
    for (uint32_t i = 0; i < kLen; ++i) {
      if (msg(i) != placed(i)) return false;
    }
    return b[50000 + kLen - 5010] == 0 && b[99999] == 0 && b[105000] == 0 && b[1010] == 0;
  };
  ASSERT_TRUE(round(10));  // warm-up
  const uint64_t before = testutil::AllocationCount();
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(round(100 + i));
  EXPECT_EQ(testutil::AllocationCount() - before, 0u);
  EXPECT_EQ(ea_->stats().bad_sqes, 0u);
  EXPECT_EQ(eb_->stats().bad_rqes, 0u);

  Sqe rd = MakeSqe(7, WrOpcode::kRdmaRead, a_, 64, &b_);
  rd.num_sge = 2;
  rd.sge[1] = Sge{a_.base_to + 4096, 64, a_.stag};
  ASSERT_TRUE(a_.sq.Push(rd));
  Cqe c;
  ASSERT_EQ(Reap(a_, &c, 1), 1u);
  EXPECT_EQ(c.wr_id, 7u);
  EXPECT_EQ(c.status, static_cast<uint8_t>(WcStatus::kLocalQpOperation));
  EXPECT_EQ(ea_->stats().bad_sqes, 1u);
}

TEST_F(WireEngineTest, GarbageSqeCompletesInErrorAndEndsOnlyThatQp) {
  Sqe bad = MakeSqe(5, WrOpcode::kSend, a_, 16, nullptr);
  bad.opcode = 0xEE;  // written straight into shared memory, past libiwarp
  ASSERT_TRUE(a_.sq.Push(bad));
  Cqe c;
  ASSERT_EQ(Reap(a_, &c, 1), 1u);
  EXPECT_EQ(c.wr_id, 5u);
  EXPECT_EQ(c.status, static_cast<uint8_t>(WcStatus::kLocalQpOperation));
  EXPECT_EQ(ea_->stats().bad_sqes, 1u);
  // The QP was aborted: the peer sees the connection reset; nothing was
  // placed.
  bool b_down = false;
  int b_status = -1;
  for (int i = 0; i < 20000 && !b_down; ++i) {
    Step();
    WireEvent ev;
    while (eb_->PopEvent(&ev)) {
      if (ev.type != WireEventType::kDisconnected) continue;
      b_down = true;
      b_status = ev.status;
    }
  }
  EXPECT_TRUE(b_down);
  EXPECT_EQ(b_status, ECONNRESET);
  EXPECT_EQ(b_.ctx->engine->state(), engine::QpState::kError);
  for (uint32_t i = 0; i < kRegion; ++i) ASSERT_EQ(b_.region.get()[i], 0) << i;
}

// The application's disconnect (RFC 5040 5.5 graceful close): both sides
// get kDisconnected with status 0, their engine QPs end CLOSED (not ERROR)
// and what was still posted is flushed.
TEST_F(WireEngineTest, GracefulDisconnectIsNoError) {
  Rqe r;
  r.wr_id = 31;
  r.num_sge = 1;
  r.sge[0] = Sge{b_.base_to, 64, b_.stag};
  ASSERT_TRUE(b_.rq.Push(r));
  for (int i = 0; i < 100; ++i) Step();
  WireCommand d;
  d.type = WireCommandType::kDisconnect;
  d.qp = a_.ctx.get();
  ASSERT_TRUE(ea_->PushCommand(d));
  int a_status = -1, b_status = -1;
  for (int i = 0; i < 200000 && (a_status < 0 || b_status < 0); ++i) {
    Step();
    WireEvent ev;
    while (ea_->PopEvent(&ev)) {
      if (ev.type == WireEventType::kDisconnected) a_status = ev.status;
    }
    while (eb_->PopEvent(&ev)) {
      if (ev.type == WireEventType::kDisconnected) b_status = ev.status;
    }
  }
  EXPECT_EQ(a_status, 0);
  EXPECT_EQ(b_status, 0);
  EXPECT_EQ(a_.ctx->engine->state(), engine::QpState::kClosed);
  EXPECT_EQ(b_.ctx->engine->state(), engine::QpState::kClosed);
  Cqe c;
  ASSERT_EQ(Reap(b_, &c, 1), 1u);
  EXPECT_EQ(c.wr_id, 31u);
  EXPECT_EQ(c.status, static_cast<uint8_t>(WcStatus::kFlushed));
}

TEST_F(WireEngineTest, ImpossibleRingIndexIsCountedNotFollowed) {
  // An RQE whose SGE count is beyond kMaxSge fails alone; the QP stays up.
  Rqe r;
  r.wr_id = 9;
  r.num_sge = 200;
  ASSERT_TRUE(b_.rq.Push(r));
  Cqe c;
  ASSERT_EQ(Reap(b_, &c, 1), 1u);
  EXPECT_EQ(c.wr_id, 9u);
  EXPECT_EQ(c.status, static_cast<uint8_t>(WcStatus::kLocalQpOperation));
  EXPECT_EQ(c.opcode, static_cast<uint8_t>(WcOpcode::kRecv));
  EXPECT_EQ(eb_->stats().bad_rqes, 1u);
  EXPECT_EQ(eb_->stats().bad_sqes, 0u);
  EXPECT_EQ(b_.ctx->engine->state(), engine::QpState::kRts);
  // The application claims 1000 entries in an SQ of 64: counted, the QP
  // fails, no entry is read.
  a_.sq.header()->producer.store(1000, std::memory_order_release);
  for (int i = 0; i < 100; ++i) Step();
  EXPECT_EQ(ea_->stats().ring_corruptions, 1u);
  EXPECT_EQ(ea_->stats().wrs_posted, 0u);
  EXPECT_EQ(a_.ctx->engine->state(), engine::QpState::kError);
}

// The local ports application connections and listeners use are held for
// receive steering (app_ports.h) exactly while the stack uses them: A's
// active open holds its ephemeral port until the QP is destroyed; B holds
// the listening port for the listener and again for the accepted
// connection, until the listener is closed and the TCP connection is gone.
TEST_F(WireEngineTest, PortsAreHeldWhileTheStackUsesThem) {
  tcp::TcpConnInfo ia;
  ASSERT_TRUE(sa_->GetConnection(a_.ctx->engine->conn(), &ia));
  ASSERT_NE(ia.tuple.local_port, kPort);
  EXPECT_TRUE(ports_a_.Held(ia.tuple.local_port));
  EXPECT_EQ(ports_a_.holds(ia.tuple.local_port), 1u);
  EXPECT_EQ(ports_a_.held_ports(), 1u);
  EXPECT_EQ(ea_->stats().tcp_port_holds, 1u);
  EXPECT_EQ(ports_b_.holds(kPort), 2u);
  EXPECT_EQ(ports_b_.held_ports(), 1u);
  EXPECT_EQ(eb_->stats().tcp_port_holds, 2u);

  WireCommand unlisten;
  unlisten.type = WireCommandType::kUnlisten;
  unlisten.listener_id = 7;
  EXPECT_EQ(Call(*eb_, unlisten), 0);
  EXPECT_EQ(ports_b_.holds(kPort), 1u);  // the connection still uses it
  EXPECT_TRUE(ports_b_.Held(kPort));

  WireCommand d;
  d.type = WireCommandType::kDestroyQp;
  d.qp = a_.ctx.get();
  EXPECT_EQ(Call(*ea_, d), 0);
  EXPECT_FALSE(ports_a_.Held(ia.tuple.local_port));
  EXPECT_EQ(ports_a_.held_ports(), 0u);
  EXPECT_EQ(ea_->stats().tcp_port_holds, 0u);
  d.qp = b_.ctx.get();
  EXPECT_EQ(Call(*eb_, d), 0);
  for (int i = 0; i < 20000 && ports_b_.held_ports() != 0; ++i) Step();
  EXPECT_FALSE(ports_b_.Held(kPort));
  EXPECT_EQ(eb_->stats().tcp_port_holds, 0u);
}

// A port stays held while its connection lingers in TIME-WAIT after the
// QP that used it is gone, so a late segment of the old connection (the
// peer's retransmitted FIN) still reaches this worker's stack rather than
// another worker's RST; the hold goes when the TIME-WAIT ends. `closer` is
// the side whose application disconnects (the active closer, RFC 9293
// 3.6): A's connection is an active open (the QP holds its port), B's an
// accepted one (the listener's connection proxy holds it).
void WireEngineTest::DisconnectDestroyAndWaitOutTimeWait(bool a_closes) {
  AppQp& closer = a_closes ? a_ : b_;
  WireEngine& ec = a_closes ? *ea_ : *eb_;
  tcp::TcpStack& sc = a_closes ? *sa_ : *sb_;
  AppPortTable& pc = a_closes ? ports_a_ : ports_b_;
  const tcp::ConnId conn = closer.ctx->engine->conn();
  tcp::TcpConnInfo info;
  ASSERT_TRUE(sc.GetConnection(conn, &info));
  const uint16_t port = info.tuple.local_port;
  if (!a_closes) {  // only the connection holds B's port from here on
    WireCommand unlisten;
    unlisten.type = WireCommandType::kUnlisten;
    unlisten.listener_id = 7;
    ASSERT_EQ(Call(*eb_, unlisten), 0);
  }
  ASSERT_EQ(pc.holds(port), 1u);

  WireCommand d;
  d.type = WireCommandType::kDisconnect;
  d.qp = closer.ctx.get();
  ASSERT_TRUE(ec.PushCommand(d));
  for (int i = 0; i < 200000 && sc.State(conn) != tcp::TcpState::kTimeWait; ++i) Step();
  ASSERT_EQ(sc.State(conn), tcp::TcpState::kTimeWait);
  for (int i = 0; i < 200; ++i) Step();  // the engine's scans run
  EXPECT_EQ(pc.holds(port), 1u);
  WireCommand destroy;
  destroy.type = WireCommandType::kDestroyQp;
  destroy.qp = closer.ctx.get();
  ASSERT_EQ(Call(ec, destroy), 0);
  for (int i = 0; i < 200; ++i) Step();
  EXPECT_EQ(sc.State(conn), tcp::TcpState::kTimeWait);
  EXPECT_TRUE(pc.Held(port)) << "the port went while its connection is in TIME-WAIT";
  EXPECT_EQ(ec.stats().tcp_port_holds, 1u);

  // 2*MSL later the stack frees the connection and the hold goes with it.
  now_ += uint64_t{sc.options().time_wait_s} * 1'000'000;
  for (int i = 0; i < 200; ++i) Step();
  EXPECT_EQ(sc.State(conn), tcp::TcpState::kClosed);
  EXPECT_FALSE(pc.Held(port));
  EXPECT_EQ(pc.held_ports(), 0u);
  EXPECT_EQ(ec.stats().tcp_port_holds, 0u);
}

TEST_F(WireEngineTest, ActiveOpenPortIsHeldThroughTimeWait) {
  DisconnectDestroyAndWaitOutTimeWait(/*a_closes=*/true);
}

TEST_F(WireEngineTest, AcceptedConnectionPortIsHeldThroughTimeWait) {
  DisconnectDestroyAndWaitOutTimeWait(/*a_closes=*/false);
}

// A listen on a port the table reserves for a built-in service is refused.
TEST_F(WireEngineTest, ListenOnAReservedPortIsRefused) {
  // Reserve is start-up only; here the engine is idle between polls.
  ports_b_.Reserve(9999);
  WireCommand l;
  l.type = WireCommandType::kListen;
  l.listener_id = 8;
  l.port = 9999;
  EXPECT_EQ(Call(*eb_, l), EADDRINUSE);
  EXPECT_EQ(eb_->stats().listens_reserved, 1u);
  EXPECT_FALSE(ports_b_.Held(9999));
  l.port = 9998;
  EXPECT_EQ(Call(*eb_, l), 0);
  EXPECT_TRUE(ports_b_.Held(9998));
}

// A peer whose Request nobody answers cannot keep a pending slot: after
// pending_timeout_us the connection is reset and the request id withdrawn.
TEST_F(WireEngineTest, UnansweredRequestIsResetAfterTheTimeout) {
  AppQp c;
  c.Init(*ea_, 33, 1, 7);
  WireCommand cmd;
  cmd.type = WireCommandType::kConnect;
  cmd.qp = c.ctx.get();
  cmd.remote_ip = tcp::testing::kIpB;
  cmd.port = kPort;
  ASSERT_TRUE(ea_->PushCommand(cmd));
  uint32_t request = 0;
  bool gone = false, failed = false;
  const uint64_t start = now_;
  for (int i = 0; i < 30000 && !(gone && failed); ++i) {
    Step();
    WireEvent ev;
    while (eb_->PopEvent(&ev)) {
      if (ev.type == WireEventType::kConnectRequest) request = ev.request_id;
      if (ev.type == WireEventType::kRequestGone && ev.request_id == request) gone = true;
    }
    while (ea_->PopEvent(&ev)) {
      if (ev.type == WireEventType::kConnectFailed && ev.qp == c.ctx.get()) failed = true;
    }
  }
  EXPECT_NE(request, 0u);
  EXPECT_TRUE(gone);
  EXPECT_TRUE(failed);
  EXPECT_GE(now_ - start, 200'000u);
  EXPECT_EQ(eb_->stats().requests_refused, 1u);
  // An accept of the withdrawn request is answered with ECONNRESET and
  // changes nothing (the QP named keeps its connection).
  WireCommand acc;
  acc.type = WireCommandType::kAccept;
  acc.qp = b_.ctx.get();
  acc.request_id = request;
  ASSERT_TRUE(eb_->PushCommand(acc));
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {
    Step();
    WireEvent ev;
    while (eb_->PopEvent(&ev)) {
      refused |= ev.type == WireEventType::kConnectFailed && ev.status == ECONNRESET;
    }
  }
  EXPECT_TRUE(refused);
  EXPECT_EQ(b_.ctx->engine->state(), engine::QpState::kRts);
  WireCommand d;
  d.type = WireCommandType::kDestroyQp;
  d.qp = c.ctx.get();
  EXPECT_EQ(Call(*ea_, d), 0);
  // The reset connection gave its port back on both sides: what remains is
  // the first connection (and B's listener).
  EXPECT_EQ(ports_a_.held_ports(), 1u);
  EXPECT_EQ(ea_->stats().tcp_port_holds, 1u);
  EXPECT_EQ(ports_b_.holds(kPort), 2u);
}

}  // namespace
}  // namespace iwarp::appif

namespace iwarp::appif {
namespace {

// Application QPs with zero-copy transmit (the daemon's default) and no
// Markers: the payload is read from the application's region until TCP has
// it acknowledged.
class WireEngineZeroCopyTest : public WireEngineTest {
 protected:
  void SetUp() override {
    markers_ = false;
    zero_copy_ = true;
    WireEngineTest::SetUp();
  }
};

// An application deregisters the region an RDMA Write is still being sent
// from. The worker aborts that QP before acknowledging the deregistration
// (the control thread unmaps the region after the Ack), so no byte leaves
// from the region afterwards: the peer holds only bytes of the original
// pattern, the Write completes in error and the counter names why.
TEST_F(WireEngineZeroCopyTest, DeregisteringMemoryInFlightAbortsTheQpFirst) {
  for (uint32_t i = 0; i < kRegion; ++i) a_.region.get()[i] = static_cast<uint8_t>(1 + i % 251);
  ASSERT_TRUE(a_.sq.Push(MakeSqe(1, WrOpcode::kRdmaWrite, a_, kRegion, &b_)));
  ea_->Poll(now_);  // the Write is taken: the first window leaves, the rest is queued
  WireCommand d;
  d.type = WireCommandType::kDeregMr;
  d.stag = a_.stag;
  ASSERT_EQ(Call(*ea_, d), 0);
  EXPECT_EQ(ea_->stats().dereg_aborts, 1u);
  // What the control thread's munmap would do to the bytes.
  std::memset(a_.region.get(), 0xEE, kRegion);
  Cqe c;
  ASSERT_EQ(Reap(a_, &c, 1), 1u);
  EXPECT_EQ(c.wr_id, 1u);
  EXPECT_NE(c.status, static_cast<uint8_t>(WcStatus::kSuccess));
  for (int i = 0; i < 2000; ++i) Step();
  size_t placed = 0;
  for (uint32_t i = 0; i < kRegion; ++i) {
    const uint8_t v = b_.region.get()[i];
    if (v == 0) continue;
    ASSERT_EQ(v, static_cast<uint8_t>(1 + i % 251)) << "byte " << i << " left after dereg";
    ++placed;
  }
  EXPECT_GT(placed, 0u);
  EXPECT_LT(placed, size_t{kRegion});
}

// Without a deregistration the same Write completes and every byte arrives;
// the region is no longer referenced once it has.
TEST_F(WireEngineZeroCopyTest, WriteFromTheRegionArrivesWhole) {
  for (uint32_t i = 0; i < kRegion; ++i) a_.region.get()[i] = static_cast<uint8_t>(1 + i % 251);
  ASSERT_TRUE(a_.sq.Push(MakeSqe(1, WrOpcode::kRdmaWrite, a_, kRegion, &b_)));
  Cqe c;
  ASSERT_EQ(Reap(a_, &c, 1), 1u);
  EXPECT_EQ(c.status, static_cast<uint8_t>(WcStatus::kSuccess));
  EXPECT_EQ(std::memcmp(a_.region.get(), b_.region.get(), kRegion), 0);
  EXPECT_GT(a_.ctx->engine->stats().fpdus_zero_copy, 0u);
  EXPECT_FALSE(a_.ctx->engine->SendsFrom(ByteSpan(a_.region.get(), kRegion)));
  WireCommand d;
  d.type = WireCommandType::kDeregMr;
  d.stag = a_.stag;
  ASSERT_EQ(Call(*ea_, d), 0);
  EXPECT_EQ(ea_->stats().dereg_aborts, 0u);
}

}  // namespace
}  // namespace iwarp::appif
