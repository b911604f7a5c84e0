// RdmaServer and RdmaClient over iWARP (MPA/TCP) between two in-process
// daemons (appif/wire_test_util.h): the whole path from the transport's
// work requests through both daemons' wire engines and TCP stacks is the
// real code. Every echoed byte is compared; counters are checked against
// what the transfer mode must have used.
#include <errno.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "appif/wire_test_util.h"
#include "gtest/gtest.h"
#include "libiwarp/wire_app_test_util.h"
#include "rpcrdma/rdma_test_util.h"

namespace iwarp::rpcrdma {
namespace {

using appif::testing::kIpA;
using appif::testing::kIpB;
using appif::testing::TestDaemon;
using appif::testing::ThreadedTestLink;
using testing::ClientApp;
using testing::Collect;
using testing::EchoHandler;
using testing::EchoResult;
using testing::Pattern;
using testing::ServerThread;
using testing::StoreHead;
using testing::Mode;
using testing::ModeName;

constexpr uint16_t kPort = 20049;

class RdmaTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine::MpaParams mpa;
    a_ = std::make_unique<TestDaemon>(link_, 0, kIpA, mpa);
    b_ = std::make_unique<TestDaemon>(link_, 1, kIpB, mpa);
    ASSERT_TRUE(a_->worker.ok() && b_->worker.ok());
    ASSERT_TRUE(a_->host.ok() && b_->host.ok());
  }
  void TearDown() override {
    app_.reset();
    server_.reset();
    a_.reset();
    b_.reset();
  }
  void StartServer(RdmaServerOptions o = {}) {
    o.port = kPort;
    server_ = std::make_unique<ServerThread>(b_->host.socket_path(), o, handler_);
    ASSERT_EQ(server_->start_rc(), 0);
  }
  void StartClient(RdmaClientOptions o = {}) {
    o.server = iwarp_addr{kIpB, kPort};
    app_ = std::make_unique<ClientApp>(a_->host.socket_path(), 8 << 20);
    ASSERT_EQ(app_->Connect(o), 0);
  }
  void Echo(Mode mode, size_t n, uint32_t xid) { testing::EchoCall(*app_, mode, n, xid); }

  ThreadedTestLink link_;
  std::unique_ptr<TestDaemon> a_, b_;
  EchoHandler handler_;
  std::unique_ptr<ServerThread> server_;
  std::unique_ptr<ClientApp> app_;
};

TEST_F(RdmaTransportTest, NullCallsGoInlineBothWays) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartClient());
  // RFC 8797: both sides announced 4096.
  EXPECT_EQ(app_->client->send_threshold(), 4096u);
  EXPECT_EQ(app_->client->recv_threshold(), 4096u);
  for (uint32_t i = 0; i < 50; ++i) ASSERT_NO_FATAL_FAILURE(Echo(Mode::kDefault, 0, 100 + i));
  const RdmaCounters c = app_->client->counters();
  EXPECT_EQ(c.calls, 50u);
  EXPECT_EQ(c.replies, 50u);
  EXPECT_EQ(c.read_chunks + c.write_chunks + c.reply_chunks, 0u);
  const RdmaCounters s = server_->counters();
  EXPECT_EQ(s.calls, 50u);
  EXPECT_EQ(s.inline_replies, 50u);
  EXPECT_EQ(s.rdma_read_bytes + s.rdma_written_bytes, 0u);
}

class RdmaEchoTest : public RdmaTransportTest, public ::testing::WithParamInterface<Mode> {};

TEST_P(RdmaEchoTest, EchoFromZeroTo1MiBIsVerified) {
  const Mode mode = GetParam();
  ASSERT_NO_FATAL_FAILURE(StartServer());
  RdmaClientOptions o;
  if (mode == Mode::kReadList) o.ddp_read_threshold = 1;
  ASSERT_NO_FATAL_FAILURE(StartClient(o));
  const size_t sizes[] = {0, 1, 1000, 1024, 4096, 65536, size_t{1} << 20};
  uint32_t xid = 1;
  for (size_t n : sizes) ASSERT_NO_FATAL_FAILURE(Echo(mode, n, xid++));
  const RdmaCounters c = app_->client->counters();
  const RdmaCounters s = server_->counters();
  EXPECT_EQ(c.replies, 7u);
  EXPECT_EQ(s.calls, 7u);
  switch (mode) {
    case Mode::kReadList:
      // Every non-empty argument was pulled by RDMA Read (6 of 7).
      EXPECT_EQ(s.read_chunks, 6u);
      EXPECT_EQ(s.rdma_read_bytes, 1u + 1000 + 1024 + 4096 + 65536 + (1 << 20));
      EXPECT_EQ(c.nomsg_calls, 0u);
      break;
    case Mode::kWriteList:
    case Mode::kUnregistered:
      // Every result went by RDMA Write into the Write chunk.
      EXPECT_EQ(s.write_chunks, 7u);
      EXPECT_EQ(s.rdma_written_bytes, 1u + 1000 + 1024 + 4096 + 65536 + (1 << 20));
      // Arguments of 1024 bytes and more by Read chunk (the default threshold).
      EXPECT_EQ(s.read_chunks, 4u);
      break;
    case Mode::kReplyChunk:
      // Replies longer than the 4096-byte inline threshold: 4096 (plus
      // headers), 64 KiB, 1 MiB through the Reply chunk with RDMA_NOMSG.
      EXPECT_EQ(s.reply_chunks, 3u);
      EXPECT_EQ(s.inline_replies, 4u);
      EXPECT_EQ(s.write_chunks, 0u);
      break;
    case Mode::kNomsg:
      // The argument is not DDP-eligible: calls over the inline threshold
      // go whole as a Position Zero Read chunk (RDMA_NOMSG).
      EXPECT_EQ(c.nomsg_calls, 3u);
      EXPECT_EQ(s.read_chunks, 3u);
      break;
    case Mode::kDefault:
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, RdmaEchoTest,
                         ::testing::Values(Mode::kWriteList, Mode::kReadList, Mode::kReplyChunk,
                                           Mode::kNomsg, Mode::kUnregistered),
                         [](const ::testing::TestParamInfo<Mode>& i) { return ModeName(i.param); });

// 256 calls queued at once against 8 credits: the client never has more
// than the grant outstanding, the server never more than 8 in progress.
TEST_F(RdmaTransportTest, CreditLimitHoldsUnderADeepQueue) {
  RdmaServerOptions so;
  so.credits = 8;
  ASSERT_NO_FATAL_FAILURE(StartServer(so));
  ASSERT_NO_FATAL_FAILURE(StartClient());
  server_->Run([&](RdmaServer&) { handler_.hold = true; });
  std::vector<EchoResult> r(256);
  std::vector<std::array<uint8_t, 8>> heads(256);
  for (uint32_t i = 0; i < 256; ++i) {
    StoreHead(heads[i].data(), 1000 + i, 0);
    rpc::Message call;
    call.Add(rpc::Piece{ByteSpan(heads[i].data(), 8), false, 0});
    ASSERT_EQ(app_->client->Call(call, {}, [&r, i](const rpc::ReplyView& v) { Collect(v, &r[i]); }), 0);
  }
  // Before any reply the client has one credit (RFC 8166 3.3.1).
  app_->PollUntil([] { return false; }, 200);
  EXPECT_EQ(handler_.held_count(), 1u);
  EXPECT_EQ(app_->client->outstanding(), 1u);
  // Its reply grants 8: the server then holds exactly 8.
  server_->Run([&](RdmaServer&) { handler_.ReleaseHeld(); });
  app_->PollUntil([&] { return handler_.held_count() == 8; }, 5000);
  app_->PollUntil([] { return false; }, 200);
  EXPECT_EQ(handler_.held_count(), 8u);
  EXPECT_EQ(app_->client->outstanding(), 8u);
  server_->Run([&](RdmaServer&) {
    handler_.hold = false;
    handler_.ReleaseHeld();
  });
  ASSERT_TRUE(app_->PollUntil([&] {
    for (const EchoResult& x : r) {
      if (!x.done) return false;
    }
    return true;
  }));
  for (uint32_t i = 0; i < 256; ++i) {
    EXPECT_EQ(r[i].status, 0);
    EXPECT_EQ(r[i].xid, 1000 + i);
  }
  const RdmaCounters c = app_->client->counters();
  const RdmaCounters s = server_->counters();
  EXPECT_EQ(c.credits_granted, 8u);
  EXPECT_EQ(c.credits_in_use_max, 8u);
  EXPECT_EQ(s.credits_in_use_max, 8u);
  EXPECT_EQ(s.calls, 256u);
  EXPECT_EQ(s.error(RdmaError::kCreditOverrun), 0u);
  EXPECT_EQ(handler_.max_held, 8u);
}

// A raw test QP speaks to the server: the RFC 8166 4.5 error replies,
// byte for byte.
class RawPeerTest : public RdmaTransportTest {
 protected:
  void ConnectRaw() {
    raw_ = std::make_unique<appif::testing::WireApp>();
    raw_->Open(a_->host.socket_path(), 1 << 16);
    for (uint64_t i = 0; i < 4; ++i) raw_->PostRecv(i, raw_->mr.addr + 4096 * (i + 1), 4096, raw_->mr.stag);
    iwarp_addr to{kIpB, kPort};
    ASSERT_EQ(iwarp_connect(raw_->qp, &to, nullptr, 0), 0);
    raw_->Event(IWARP_EVENT_ESTABLISHED);
  }
  // Sends `words` as one Send and returns the Send the server answers with.
  std::vector<uint8_t> Exchange(const std::vector<uint32_t>& words) {
    for (size_t i = 0; i < words.size(); ++i) StoreBe32(raw_->mem + 4 * i, words[i]);
    raw_->Post(99, IWARP_WR_SEND, raw_->mr.addr, static_cast<uint32_t>(4 * words.size()), raw_->mr.stag);
    std::vector<uint8_t> got;
    for (int k = 0; k < 2; ++k) {
      iwarp_wc wc = raw_->Wc();
      EXPECT_EQ(wc.status, IWARP_WC_SUCCESS);
      if (wc.opcode == IWARP_WC_RECV) {
        const uint8_t* p = raw_->mem + 4096 * (wc.wr_id + 1);
        got.assign(p, p + wc.byte_len);
        raw_->PostRecv(wc.wr_id, raw_->mr.addr + 4096 * (wc.wr_id + 1), 4096, raw_->mr.stag);
      }
    }
    return got;
  }
  static std::vector<uint8_t> Bytes(const std::vector<uint32_t>& w) {
    std::vector<uint8_t> v(4 * w.size());
    for (size_t i = 0; i < w.size(); ++i) StoreBe32(v.data() + 4 * i, w[i]);
    return v;
  }
  std::unique_ptr<appif::testing::WireApp> raw_;
};

TEST_F(RawPeerTest, VersionTwoGetsErrVersAndMsgpGetsErrChunk) {
  RdmaServerOptions so;
  so.credits = 4;
  ASSERT_NO_FATAL_FAILURE(StartServer(so));
  ASSERT_NO_FATAL_FAILURE(ConnectRaw());
  // xid, vers 2, credit, RDMA_MSG, three empty lists (RFC 8166 4.5.1).
  EXPECT_EQ(Exchange({0x11223344, 2, 8, 0, 0, 0, 0, 0x11223344}),
            Bytes({0x11223344, 2, 4, 4, 1, 1, 1}));
  // RDMA_MSGP (RFC 8166 4.6.1): ERR_CHUNK.
  EXPECT_EQ(Exchange({0x55667788, 1, 8, 2, 0, 0, 0, 0x55667788}), Bytes({0x55667788, 1, 4, 4, 2}));
  // The connection still serves calls: a NULL-like call is echoed inline.
  EXPECT_EQ(Exchange({0xA, 1, 8, 0, 0, 0, 0, 0xA, 0}), Bytes({0xA, 1, 4, 0, 0, 0, 0, 0xA, 0}));
  const RdmaCounters s = server_->counters();
  EXPECT_EQ(s.err_vers_sent, 1u);
  EXPECT_EQ(s.err_chunk_sent, 1u);
  EXPECT_EQ(s.header_error(HeaderError::kBadVersion), 1u);
  EXPECT_EQ(s.header_error(HeaderError::kMsgpUnsupported), 1u);
  EXPECT_EQ(s.calls, 1u);
}

// A peer without RFC 8797 private data gets RFC 8166's 1024-byte inline
// threshold: a 900-byte echo comes back inline, a 2000-byte one (which
// would fit the 4096 bytes a Linux peer announces) does not fit and, with
// no Reply chunk offered, is answered with ERR_CHUNK.
TEST_F(RawPeerTest, WithoutPrivateDataTheInlineThresholdIs1024) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(ConnectRaw());
  std::vector<uint32_t> call = {0xB, 1, 8, 0, 0, 0, 0, 0xB, 900};
  call.resize(call.size() + 225, 0x01020304);
  const std::vector<uint8_t> reply = Exchange(call);
  ASSERT_EQ(reply.size(), 28u + 8 + 900);
  EXPECT_EQ(LoadBe32(reply.data() + 12), 0u);  // RDMA_MSG
  call = {0xC, 1, 8, 0, 0, 0, 0, 0xC, 2000};
  call.resize(call.size() + 500, 0x01020304);
  EXPECT_EQ(Exchange(call), Bytes({0xC, 1, 32, 4, 2}));
  EXPECT_EQ(server_->counters().error(RdmaError::kReplyTooLong), 1u);
}

TEST_F(RawPeerTest, MoreCallsThanCreditsEndTheConnectionWithANamedReason) {
  RdmaServerOptions so;
  so.credits = 2;
  ASSERT_NO_FATAL_FAILURE(StartServer(so));
  server_->Run([&](RdmaServer&) { handler_.hold = true; });
  ASSERT_NO_FATAL_FAILURE(ConnectRaw());
  for (uint32_t i = 0; i < 3; ++i) {
    for (uint32_t w = 0; w < 8; ++w) StoreBe32(raw_->mem + 64 * i + 4 * w, 0);
    StoreBe32(raw_->mem + 64 * i, 0x100 + i);
    StoreBe32(raw_->mem + 64 * i + 4, 1);
    StoreBe32(raw_->mem + 64 * i + 28, 0x100 + i);
    raw_->Post(i, IWARP_WR_SEND, raw_->mr.addr + 64 * i, 32, raw_->mr.stag);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  RdmaCounters s;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = server_->counters();
  } while (s.error(RdmaError::kCreditOverrun) == 0 && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(s.error(RdmaError::kCreditOverrun), 1u);
  EXPECT_EQ(s.calls, 2u);
  EXPECT_EQ(s.disconnects, 1u);
  size_t n = 1;
  server_->Run([&](RdmaServer& srv) { n = srv.connection_count(); });
  EXPECT_EQ(n, 0u);
}

// The server cannot fit the reply in what the client offered: RDMA_ERROR /
// ERR_CHUNK, which completes the call with -EPROTO.
TEST_F(RdmaTransportTest, ReplyTooLongIsErrChunkAndTheClientCompletesWithEproto) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartClient());
  server_->Run([&](RdmaServer&) { handler_.big_reply = 8192; });
  uint8_t head[8];
  StoreHead(head, 77, 0);
  rpc::Message call;
  call.Add(rpc::Piece{ByteSpan(head, 8), false, 0});
  EchoResult r;
  ASSERT_EQ(app_->client->Call(call, {}, [&](const rpc::ReplyView& v) { Collect(v, &r); }), 0);
  ASSERT_TRUE(app_->PollUntil([&] { return r.done; }));
  EXPECT_EQ(r.status, -EPROTO);
  EXPECT_EQ(r.transport_error, static_cast<uint32_t>(ErrCode::kChunk));
  EXPECT_EQ(app_->client->counters().err_chunk_received, 1u);
  EXPECT_EQ(app_->client->counters().error(RdmaError::kRdmaErrorReceived), 1u);
  const RdmaCounters s = server_->counters();
  EXPECT_EQ(s.err_chunk_sent, 1u);
  EXPECT_EQ(s.error(RdmaError::kReplyTooLong), 1u);
  // The same call with room for the reply (a Reply chunk) succeeds.
  rpc::CallOptions co;
  co.max_reply_bytes = 16384;
  StoreHead(head, 78, 0);
  EchoResult r2;
  ASSERT_EQ(app_->client->Call(call, co, [&](const rpc::ReplyView& v) { Collect(v, &r2); }), 0);
  ASSERT_TRUE(app_->PollUntil([&] { return r2.done; }));
  EXPECT_EQ(r2.status, 0);
  EXPECT_EQ(r2.xid, 78u);
}

// The server drops the connection with calls outstanding: the client
// reconnects and sends them again with the same XIDs.
TEST_F(RdmaTransportTest, LostConnectionReconnectsAndRetransmitsWithTheSameXids) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartClient());
  ASSERT_NO_FATAL_FAILURE(Echo(Mode::kDefault, 0, 1));  // the grant goes up to 32
  server_->Run([&](RdmaServer&) { handler_.hold = true; });
  std::vector<EchoResult> r(4);
  std::vector<std::array<uint8_t, 8>> heads(4);
  for (uint32_t i = 0; i < 4; ++i) {
    StoreHead(heads[i].data(), 500 + i, 0);
    rpc::Message call;
    call.Add(rpc::Piece{ByteSpan(heads[i].data(), 8), false, 0});
    ASSERT_EQ(app_->client->Call(call, {}, [&r, i](const rpc::ReplyView& v) { Collect(v, &r[i]); }), 0);
  }
  ASSERT_TRUE(app_->PollUntil([&] { return handler_.held_count() == 4; }, 5000));
  server_->Run([&](RdmaServer& s) {
    handler_.hold = false;
    s.DisconnectAll();
  });
  ASSERT_TRUE(app_->PollUntil([&] {
    for (const EchoResult& x : r) {
      if (!x.done) return false;
    }
    return true;
  }));
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r[i].status, 0);
    EXPECT_EQ(r[i].xid, 500 + i);
  }
  std::vector<uint32_t> seen;
  server_->Run([&](RdmaServer&) { seen = handler_.xids; });
  // 1, then 500..503 before and again after the reconnect.
  ASSERT_EQ(seen.size(), 9u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 500 + i), 2);
  }
  const RdmaCounters c = app_->client->counters();
  EXPECT_EQ(c.reconnects, 1u);
  EXPECT_EQ(c.retransmits, 4u);
  EXPECT_EQ(c.calls, 5u);
}

// A call whose Read chunk names an STag the client never registered: the
// server's RDMA Read fails, and only that connection ends, with the named
// reason (rpcrdma_read_chunk_failed); another client's connection keeps
// working. The failing client has no reconnect attempts left: its call
// completes -ECONNRESET.
TEST_F(RdmaTransportTest, FailedReadOfABogusChunkEndsOnlyThatConnection) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(StartClient());
  ASSERT_NO_FATAL_FAILURE(Echo(Mode::kDefault, 4096, 1));
  ClientApp bad(a_->host.socket_path(), 1 << 16);
  RdmaClientOptions o;
  o.server = iwarp_addr{kIpB, kPort};
  o.reconnect_attempts = 0;
  ASSERT_EQ(bad.Connect(o), 0);
  uint8_t head[8];
  StoreHead(head, 0xBAD, 4096);
  rpc::Message call;
  ASSERT_TRUE(call.Add(rpc::Piece{ByteSpan(head, 8), false, 0}));
  // A registered-looking piece: exposed by its STag as a Read chunk.
  ASSERT_TRUE(call.Add(rpc::Piece{ByteSpan(bad.mem, 4096), true, bad.mr.stag ^ 0x00ABCD00u}));
  EchoResult r;
  ASSERT_EQ(bad.client->Call(call, {}, [&](const rpc::ReplyView& v) { Collect(v, &r); }), 0);
  ASSERT_TRUE(bad.PollUntil([&] { return r.done; }));
  EXPECT_EQ(r.status, -ECONNRESET);
  EXPECT_EQ(bad.client->counters().error(RdmaError::kReconnectFailed), 1u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  RdmaCounters s;
  do {
    s = server_->counters();
  } while (s.disconnects == 0 && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(s.error(RdmaError::kReadChunkFailed), 1u);
  EXPECT_EQ(s.disconnects, 1u);
  EXPECT_EQ(s.calls, 1u);  // the bogus call was never delivered
  size_t n = 0;
  server_->Run([&](RdmaServer& srv) { n = srv.connection_count(); });
  EXPECT_EQ(n, 1u);
  // The other connection still carries calls, Read chunks included.
  ASSERT_NO_FATAL_FAILURE(Echo(Mode::kDefault, 4096, 2));
  ASSERT_NO_FATAL_FAILURE(Echo(Mode::kDefault, 65536, 3));
  EXPECT_EQ(app_->client->counters().disconnects, 0u);
}

// The server goes away for good: the client's reconnect attempts run out
// and its outstanding call completes -ECONNRESET (rpcrdma_reconnect_failed);
// later calls are refused at once.
TEST_F(RdmaTransportTest, RunningOutOfReconnectAttemptsCompletesCallsWithEconnreset) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  RdmaClientOptions o;
  o.reconnect_attempts = 3;
  ASSERT_NO_FATAL_FAILURE(StartClient(o));
  ASSERT_NO_FATAL_FAILURE(Echo(Mode::kDefault, 0, 1));
  server_.reset();  // listener and connection gone
  uint8_t head[8];
  StoreHead(head, 2, 0);
  rpc::Message call;
  ASSERT_TRUE(call.Add(rpc::Piece{ByteSpan(head, 8), false, 0}));
  EchoResult r;
  ASSERT_EQ(app_->client->Call(call, {}, [&](const rpc::ReplyView& v) { Collect(v, &r); }), 0);
  ASSERT_TRUE(app_->PollUntil([&] { return r.done; }));
  EXPECT_EQ(r.status, -ECONNRESET);
  const RdmaCounters c = app_->client->counters();
  EXPECT_EQ(c.error(RdmaError::kReconnectFailed), 1u);
  EXPECT_GE(c.disconnects, 1u);
  EXPECT_EQ(c.reconnects, 0u);
  EXPECT_FALSE(app_->client->connected());
  StoreHead(head, 3, 0);
  EXPECT_EQ(app_->client->Call(call, {}, [](const rpc::ReplyView&) {}), -ECONNRESET);
}

// A call the server does not answer in time completes -ETIMEDOUT; its late
// reply is dropped (late_replies) and gives its credit back, and the
// connection goes on serving calls.
TEST_F(RdmaTransportTest, CallWithoutReplyTimesOutAndItsLateReplyIsDropped) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  RdmaClientOptions o;
  o.call_timeout_ms = 300;
  ASSERT_NO_FATAL_FAILURE(StartClient(o));
  server_->Run([&](RdmaServer&) { handler_.hold = true; });
  uint8_t head[8];
  StoreHead(head, 40, 0);
  rpc::Message call;
  ASSERT_TRUE(call.Add(rpc::Piece{ByteSpan(head, 8), false, 0}));
  EchoResult r;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(app_->client->Call(call, {}, [&](const rpc::ReplyView& v) { Collect(v, &r); }), 0);
  ASSERT_TRUE(app_->PollUntil([&] { return r.done; }, 5000));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status, -ETIMEDOUT);
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_LT(waited, std::chrono::milliseconds(3000));
  EXPECT_EQ(app_->client->counters().timeouts, 1u);
  EXPECT_EQ(app_->client->counters().error(RdmaError::kCallTimeout), 1u);
  EXPECT_EQ(app_->client->outstanding(), 1u);  // its credit until the reply comes
  server_->Run([&](RdmaServer&) {
    handler_.hold = false;
    handler_.ReleaseHeld();
  });
  ASSERT_TRUE(app_->PollUntil([&] { return app_->client->counters().late_replies == 1; }, 5000));
  EXPECT_EQ(app_->client->outstanding(), 0u);
  ASSERT_NO_FATAL_FAILURE(Echo(Mode::kDefault, 100, 41));
  EXPECT_EQ(app_->client->counters().replies, 1u);
}

// A server that answers with RDMA_ERROR / ERR_VERS (RFC 8166 4.2.4: the
// versions it supports, here 1..1): the client completes the call -EPROTO
// naming ERR_VERS and counts it.
TEST_F(RdmaTransportTest, ErrVersFromTheServerCompletesTheCallWithEproto) {
  appif::testing::WireApp raw;
  raw.Open(b_->host.socket_path(), 1 << 16);
  uint32_t lid = 0;
  iwarp_addr at{0, kPort};
  ASSERT_EQ(iwarp_listen(raw.s, &at, &lid), 0);
  std::atomic<bool> served{false};
  std::thread peer([&] {
    iwarp_event ev = raw.Event(IWARP_EVENT_CONNECT_REQUEST);
    raw.PostRecv(0, raw.mr.addr + 4096, 4096, raw.mr.stag);
    ASSERT_EQ(iwarp_accept(raw.s, ev.request_id, raw.qp, nullptr, 0), 0);
    raw.Event(IWARP_EVENT_ESTABLISHED);
    iwarp_wc wc = raw.Wc();
    ASSERT_EQ(wc.status, IWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, IWARP_WC_RECV);
    const uint32_t xid = LoadBe32(raw.mem + 4096);
    const uint32_t words[] = {xid, 1, 1, 4 /* RDMA_ERROR */, 1 /* ERR_VERS */, 1, 1};
    for (size_t i = 0; i < 7; ++i) StoreBe32(raw.mem + 4 * i, words[i]);
    raw.Post(1, IWARP_WR_SEND, raw.mr.addr, 28, raw.mr.stag);
    EXPECT_EQ(raw.Wc().status, IWARP_WC_SUCCESS);
    served = true;
  });
  RdmaClientOptions o;
  o.server = iwarp_addr{kIpB, kPort};
  app_ = std::make_unique<ClientApp>(a_->host.socket_path(), 1 << 20);
  const int rc = app_->Connect(o);
  EXPECT_EQ(rc, 0);
  EchoResult r;
  if (rc == 0) {
    uint8_t head[8];
    StoreHead(head, 0x5151, 0);
    rpc::Message call;
    call.Add(rpc::Piece{ByteSpan(head, 8), false, 0});
    ASSERT_EQ(app_->client->Call(call, {}, [&](const rpc::ReplyView& v) { Collect(v, &r); }), 0);
    EXPECT_TRUE(app_->PollUntil([&] { return r.done; }, 10000));
  }
  peer.join();
  EXPECT_TRUE(served);
  EXPECT_EQ(r.status, -EPROTO);
  EXPECT_EQ(r.transport_error, static_cast<uint32_t>(ErrCode::kVers));
  const RdmaCounters c = app_->client->counters();
  EXPECT_EQ(c.err_vers_received, 1u);
  EXPECT_EQ(c.error(RdmaError::kRdmaErrorReceived), 1u);
  EXPECT_EQ(c.replies, 0u);
  app_.reset();
}

}  // namespace
}  // namespace iwarp::rpcrdma
