#include "rpcrdma/rpc_server.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rpcrdma/rpc_test_prog.h"

namespace iwarp::rpc {
namespace {

std::vector<uint8_t> Words(std::initializer_list<uint32_t> ws) {
  std::vector<uint8_t> out;
  for (uint32_t w : ws) {
    uint8_t b[4];
    StoreBe32(b, w);
    out.insert(out.end(), b, b + 4);
  }
  return out;
}

std::vector<uint8_t> Flatten(const Message& m) {
  std::vector<uint8_t> out;
  for (const Piece& p : m) {
    out.insert(out.end(), p.bytes.begin(), p.bytes.end());
    if (p.ddp) out.insert(out.end(), XdrPadding(p.bytes.size()), 0);
  }
  return out;
}

// A server transport connection that records what the dispatcher does.
class FakeConnection : public ServerConnection {
 public:
  bool Reply(CallToken token, const Message& reply) override {
    if (gone) return false;
    replies[token] = Flatten(reply);
    last_reply = reply;
    return true;
  }
  void Drop(CallToken token) override { dropped.push_back(token); }
  uint32_t peer_ipv4() const override { return 0x7f000001; }
  uint16_t peer_port() const override { return 4242; }

  std::map<CallToken, std::vector<uint8_t>> replies;
  std::vector<CallToken> dropped;
  Message last_reply;
  bool gone = false;
};

class RpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterTestProgram(server_).ok()); }

  // Delivers `bytes` as call `token` (one piece).
  void Deliver(CallToken token, const std::vector<uint8_t>& bytes) {
    Message m;
    m.Add(Piece{bytes});
    server_.OnCall(conn_, token, m);
  }
  std::vector<uint8_t> Call(uint32_t prog, uint32_t vers, uint32_t proc,
                            std::initializer_list<uint32_t> cred = {0, 0},
                            std::initializer_list<uint32_t> args = {}) {
    auto b = Words({0xabcd0001, 0, 2, prog, vers, proc});
    auto c = Words(cred);
    b.insert(b.end(), c.begin(), c.end());
    auto v = Words({0, 0});
    b.insert(b.end(), v.begin(), v.end());
    auto a = Words(args);
    b.insert(b.end(), a.begin(), a.end());
    return b;
  }

  RpcServer server_;
  FakeConnection conn_;
};

TEST_F(RpcServerTest, NullProcedureSucceeds) {
  const auto call = Call(kTestProg, 1, 0);
  Deliver(1, call);
  EXPECT_EQ(conn_.replies[1], Words({0xabcd0001, 1, 0, 0, 0, 0}));
  EXPECT_EQ(server_.counters().calls, 1u);
  EXPECT_EQ(server_.counters().accept(AcceptStat::kSuccess), 1u);
}

TEST_F(RpcServerTest, EchoRepliesWithArgumentBytesUncopied) {
  auto call = Call(kTestProg, 1, 1, {0, 0}, {5});
  for (char ch : std::string("hello")) call.push_back(static_cast<uint8_t>(ch));
  call.insert(call.end(), 3, 0);
  Deliver(2, call);
  auto want = Words({0xabcd0001, 1, 0, 0, 0, 0, 5});
  for (char ch : std::string("hello")) want.push_back(static_cast<uint8_t>(ch));
  want.insert(want.end(), 3, 0);
  EXPECT_EQ(conn_.replies[2], want);
  // The body is a DDP piece pointing into the call's own bytes.
  ASSERT_GE(conn_.last_reply.count(), 2u);
  EXPECT_TRUE(conn_.last_reply[1].ddp);
  EXPECT_EQ(conn_.last_reply[1].bytes.data(), call.data() + call.size() - 8);
}

TEST_F(RpcServerTest, RpcVersionMismatch) {
  auto call = Words({0x77, 0, 3, kTestProg, 1, 0, 0, 0, 0, 0});
  Deliver(3, call);
  EXPECT_EQ(conn_.replies[3], Words({0x77, 1, 1, 0, 2, 2}));
  EXPECT_EQ(server_.counters().rpc_mismatch, 1u);
}

TEST_F(RpcServerTest, ProgramUnavailable) {
  Deliver(4, Call(0x20000001, 1, 0));
  EXPECT_EQ(conn_.replies[4], Words({0xabcd0001, 1, 0, 0, 0, 1}));
  EXPECT_EQ(server_.counters().accept(AcceptStat::kProgUnavail), 1u);
}

TEST_F(RpcServerTest, ProgramMismatchNamesRegisteredRange) {
  ASSERT_TRUE(server_.Register(kTestProg, 3, {[](CallContext&) { return ProcStatus::kSuccess; }}).ok());
  Deliver(5, Call(kTestProg, 2, 0));  // a gap between 1 and 3
  EXPECT_EQ(conn_.replies[5], Words({0xabcd0001, 1, 0, 0, 0, 2, 1, 3}));
  Deliver(6, Call(kTestProg, 9, 0));
  EXPECT_EQ(conn_.replies[6], Words({0xabcd0001, 1, 0, 0, 0, 2, 1, 3}));
  EXPECT_EQ(server_.counters().accept(AcceptStat::kProgMismatch), 2u);
  EXPECT_FALSE(server_.Register(kTestProg, 3, {}).ok());
}

TEST_F(RpcServerTest, ProcedureUnavailable) {
  Deliver(7, Call(kTestProg, 1, 2));
  EXPECT_EQ(conn_.replies[7], Words({0xabcd0001, 1, 0, 0, 0, 3}));
  EXPECT_EQ(server_.counters().accept(AcceptStat::kProcUnavail), 1u);
}

TEST_F(RpcServerTest, GarbageArguments) {
  Deliver(8, Call(kTestProg, 1, 1, {0, 0}, {5, 0}));  // 5 bytes announced, 4 present
  EXPECT_EQ(conn_.replies[8], Words({0xabcd0001, 1, 0, 0, 0, 4}));
  Deliver(9, Call(kTestProg, 1, 1, {0, 0}, {kTestEchoMax + 1}));  // over the maximum
  EXPECT_EQ(conn_.replies[9], Words({0xabcd0001, 1, 0, 0, 0, 4}));
  EXPECT_EQ(server_.counters().accept(AcceptStat::kGarbageArgs), 2u);
}

TEST_F(RpcServerTest, UnsupportedFlavorIsBadCred) {
  Deliver(10, Call(kTestProg, 1, 0, {6, 0}));  // RPCSEC_GSS
  EXPECT_EQ(conn_.replies[10], Words({0xabcd0001, 1, 1, 1, 1}));
  EXPECT_EQ(server_.counters().auth_error[1], 1u);
}

TEST_F(RpcServerTest, MalformedAuthSysIsBadCred) {
  Deliver(11, Call(kTestProg, 1, 0, {1, 8, 0, 300}));  // machinename length 300 in 8 bytes
  EXPECT_EQ(conn_.replies[11], Words({0xabcd0001, 1, 1, 1, 1}));
}

TEST_F(RpcServerTest, OversizeCredentialIsBadCredOversizeVerifierBadVerf) {
  auto call = Words({0x55, 0, 2, kTestProg, 1, 0, 0, 404});
  call.insert(call.end(), 404, 0);
  Deliver(12, call);
  EXPECT_EQ(conn_.replies[12], Words({0x55, 1, 1, 1, 1}));
  call = Words({0x56, 0, 2, kTestProg, 1, 0, 0, 0, 0, 404});
  call.insert(call.end(), 404, 0);
  Deliver(13, call);
  EXPECT_EQ(conn_.replies[13], Words({0x56, 1, 1, 1, 3}));
}

TEST_F(RpcServerTest, AuthSysRequiredMakesAuthNoneTooWeak) {
  uint32_t seen_uid = 0;
  ASSERT_TRUE(server_
                  .Register(0x20000100, 1,
                            {[](CallContext&) { return ProcStatus::kSuccess; },
                             [&](CallContext& ctx) {
                               seen_uid = ctx.auth_sys ? ctx.auth_sys->uid : 0;
                               return ProcStatus::kSuccess;
                             }},
                            ProgramOptions{.require_auth_sys = true})
                  .ok());
  Deliver(14, Call(0x20000100, 1, 1));
  EXPECT_EQ(conn_.replies[14], Words({0xabcd0001, 1, 1, 1, 5}));
  Deliver(15, Call(0x20000100, 1, 0));  // NULL stays open
  EXPECT_EQ(conn_.replies[15], Words({0xabcd0001, 1, 0, 0, 0, 0}));
  // stamp, "" , uid 1234, gid 5, no gids
  Deliver(16, Call(0x20000100, 1, 1, {1, 20, 9, 0, 1234, 5, 0}));
  EXPECT_EQ(conn_.replies[16], Words({0xabcd0001, 1, 0, 0, 0, 0}));
  EXPECT_EQ(seen_uid, 1234u);
  EXPECT_EQ(server_.counters().auth_error[5], 1u);
}

TEST_F(RpcServerTest, RepliesAndUndecodableCallsAreDroppedAndCounted) {
  Deliver(17, Words({0x99, 1, 0, 0, 0, 0}));  // a REPLY
  Deliver(18, Words({0x99, 0, 2, kTestProg}));  // cut after prog
  Deliver(19, {});
  EXPECT_TRUE(conn_.replies.empty());
  EXPECT_EQ(conn_.dropped, (std::vector<CallToken>{17, 18, 19}));
  EXPECT_EQ(server_.counters().drop(RpcDrop::kNotCall), 1u);
  EXPECT_EQ(server_.counters().drop(RpcDrop::kUndecodable), 2u);
  EXPECT_EQ(server_.counters().calls, 3u);
}

TEST_F(RpcServerTest, HandlerErrorsAndPeerAddress) {
  uint32_t peer = 0;
  uint16_t port = 0;
  ASSERT_TRUE(server_
                  .Register(0x20000200, 1,
                            {[&](CallContext& ctx) {
                               peer = ctx.peer_ipv4;
                               port = ctx.peer_port;
                               return ProcStatus::kSystemErr;
                             },
                             [](CallContext&) { return ProcStatus::kDrop; }})
                  .ok());
  Deliver(20, Call(0x20000200, 1, 0));
  EXPECT_EQ(conn_.replies[20], Words({0xabcd0001, 1, 0, 0, 0, 5}));
  EXPECT_EQ(peer, 0x7f000001u);
  EXPECT_EQ(port, 4242u);
  Deliver(21, Call(0x20000200, 1, 1));
  EXPECT_EQ(conn_.replies.count(21), 0u);
  EXPECT_EQ(server_.counters().drop(RpcDrop::kHandler), 1u);
}

TEST(RpcServerOverflowTest, ResultsLargerThanReplyBufferAreSystemErr) {
  RpcServer server(RpcServerOptions{.reply_buffer_bytes = 64});
  ASSERT_TRUE(server
                  .Register(0x20000300, 1,
                            {[](CallContext& ctx) {
                              std::array<uint8_t, 100> big{};
                              ctx.results.Opaque(big);
                              return ProcStatus::kSuccess;
                            }})
                  .ok());
  FakeConnection conn;
  const auto call = Words({3, 0, 2, 0x20000300, 1, 0, 0, 0, 0, 0});
  Message m;
  m.Add(Piece{call});
  server.OnCall(conn, 1, m);
  EXPECT_EQ(conn.replies[1], Words({3, 1, 0, 0, 0, 5}));
  EXPECT_EQ(server.counters().results_overflow, 1u);
}

TEST_F(RpcServerTest, DeferredReplyLater) {
  CallHandle kept;
  ASSERT_TRUE(server_
                  .Register(0x20000400, 1,
                            {[&](CallContext& ctx) {
                              ctx.args.U32();
                              kept = ctx.handle;
                              return ProcStatus::kDeferred;
                            }})
                  .ok());
  Deliver(30, Call(0x20000400, 1, 0, {0, 0}, {41}));
  EXPECT_TRUE(conn_.replies.empty());
  EXPECT_EQ(server_.deferred_pending(), 1u);
  EXPECT_EQ(server_.counters().deferred, 1u);
  XdrEncoder* results = server_.Results(kept);
  ASSERT_NE(results, nullptr);
  results->U32(42);
  EXPECT_TRUE(server_.Finish(kept, ProcStatus::kSuccess));
  EXPECT_EQ(conn_.replies[30], Words({0xabcd0001, 1, 0, 0, 0, 0, 42}));
  EXPECT_EQ(server_.deferred_pending(), 0u);
  // The handle is spent.
  EXPECT_EQ(server_.Results(kept), nullptr);
  EXPECT_FALSE(server_.Finish(kept, ProcStatus::kSuccess));
}

TEST_F(RpcServerTest, DeferredCallVoidAfterDisconnect) {
  CallHandle kept;
  ASSERT_TRUE(server_
                  .Register(0x20000400, 1,
                            {[&](CallContext& ctx) {
                              kept = ctx.handle;
                              return ProcStatus::kDeferred;
                            }})
                  .ok());
  Deliver(31, Call(0x20000400, 1, 0));
  server_.OnDisconnect(conn_);
  EXPECT_EQ(server_.Results(kept), nullptr);
  EXPECT_FALSE(server_.Finish(kept, ProcStatus::kSuccess));
  EXPECT_TRUE(conn_.replies.empty());
  EXPECT_EQ(server_.counters().drop(RpcDrop::kConnectionGone), 1u);
  EXPECT_EQ(server_.deferred_pending(), 0u);
}

TEST_F(RpcServerTest, ReplyCookieReportedWhenReplyDone) {
  std::vector<uint64_t> done;
  server_.set_reply_done_hook([&](uint64_t c) { done.push_back(c); });
  ASSERT_TRUE(server_
                  .Register(0x20000500, 1,
                            {[](CallContext& ctx) {
                              ctx.reply_cookie = 99;
                              return ProcStatus::kSuccess;
                            }})
                  .ok());
  Deliver(40, Call(0x20000500, 1, 0));
  EXPECT_TRUE(done.empty());
  server_.OnReplyDone(conn_, 40);
  EXPECT_EQ(done, (std::vector<uint64_t>{99}));
}

TEST_F(RpcServerTest, ConnectionGoneAtReplyIsCounted) {
  conn_.gone = true;
  Deliver(41, Call(kTestProg, 1, 0));
  EXPECT_EQ(server_.counters().drop(RpcDrop::kConnectionGone), 1u);
  EXPECT_EQ(server_.counters().accept(AcceptStat::kSuccess), 0u);
}

}  // namespace
}  // namespace iwarp::rpc
