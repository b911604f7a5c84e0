// RdmaServer and RdmaClient over RDMA over SCTP (RFC 5043): the same echo
// and credit checks as rdma_transport_test.cc with both ends on
// IWARP_TRANSPORT_SCTP. usrsctp is one stack per process, so the two
// daemons share the process's endpoint and one worker thread
// (appif/wire_sctp_test_util.h); every SCTP packet really goes through it.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "appif/wire_sctp_test_util.h"
#include "gtest/gtest.h"
#include "rpcrdma/rdma_test_util.h"

namespace iwarp::rpcrdma {
namespace {

using appif::testing::kIpB;
using appif::testing::SharedWorker;
using appif::testing::ThreadedTestLink;
using testing::ClientApp;
using testing::Collect;
using testing::EchoHandler;
using testing::EchoResult;
using testing::Mode;
using testing::ModeName;
using testing::ServerThread;
using testing::StoreHead;

::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new appif::testing::EndpointEnvironment);

constexpr uint16_t kPort = 20049;

class RdmaSctpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(appif::testing::g_ep, nullptr);
    worker_ = std::make_unique<SharedWorker>(link_);
    ASSERT_TRUE(worker_->ok());
    a_ = std::make_unique<appif::TestHost>(appif::testing::SctpDaemonOptions(worker_->engine(0)));
    b_ = std::make_unique<appif::TestHost>(appif::testing::SctpDaemonOptions(worker_->engine(1)));
    ASSERT_TRUE(a_->ok() && b_->ok());
  }
  void TearDown() override {
    app_.reset();
    server_.reset();
    a_.reset();
    b_.reset();
    worker_.reset();
  }
  void Start(uint32_t credits = 32, uint32_t read_threshold = 1024) {
    RdmaServerOptions so;
    so.port = kPort;
    so.transport = IWARP_TRANSPORT_SCTP;
    so.credits = credits;
    server_ = std::make_unique<ServerThread>(b_->socket_path(), so, handler_);
    ASSERT_EQ(server_->start_rc(), 0);
    RdmaClientOptions co;
    co.server = iwarp_addr{kIpB, kPort};
    co.transport = IWARP_TRANSPORT_SCTP;
    co.ddp_read_threshold = read_threshold;
    app_ = std::make_unique<ClientApp>(a_->socket_path(), 8 << 20);
    ASSERT_EQ(app_->Connect(co), 0);
  }

  ThreadedTestLink link_;
  std::unique_ptr<SharedWorker> worker_;
  std::unique_ptr<appif::TestHost> a_, b_;
  EchoHandler handler_;
  std::unique_ptr<ServerThread> server_;
  std::unique_ptr<ClientApp> app_;
};

class RdmaSctpEchoTest : public RdmaSctpTest, public ::testing::WithParamInterface<Mode> {};

TEST_P(RdmaSctpEchoTest, EchoOverSctpFromZeroTo1MiBIsVerified) {
  const Mode mode = GetParam();
  ASSERT_NO_FATAL_FAILURE(Start(32, mode == Mode::kReadList ? 1 : 1024));
  uint32_t xid = 1;
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{1024}, size_t{4096}, size_t{65536},
                   size_t{1} << 20}) {
    ASSERT_NO_FATAL_FAILURE(testing::EchoCall(*app_, mode, n, xid++));
  }
  const RdmaCounters s = server_->counters();
  EXPECT_EQ(s.calls, 7u);
  switch (mode) {
    case Mode::kReadList:
      EXPECT_EQ(s.read_chunks, 6u);
      break;
    case Mode::kWriteList:
      EXPECT_EQ(s.write_chunks, 7u);
      break;
    case Mode::kReplyChunk:
      EXPECT_EQ(s.reply_chunks, 3u);
      break;
    case Mode::kNomsg:
      EXPECT_EQ(app_->client->counters().nomsg_calls, 3u);
      break;
    default:
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, RdmaSctpEchoTest,
                         ::testing::Values(Mode::kDefault, Mode::kWriteList, Mode::kReadList,
                                           Mode::kReplyChunk, Mode::kNomsg),
                         [](const ::testing::TestParamInfo<Mode>& i) { return ModeName(i.param); });

TEST_F(RdmaSctpTest, CreditLimitHoldsOverSctp) {
  ASSERT_NO_FATAL_FAILURE(Start(8));
  std::vector<EchoResult> r(256);
  std::vector<std::array<uint8_t, 8>> heads(256);
  for (uint32_t i = 0; i < 256; ++i) {
    StoreHead(heads[i].data(), 1000 + i, 0);
    rpc::Message call;
    call.Add(rpc::Piece{ByteSpan(heads[i].data(), 8), false, 0});
    ASSERT_EQ(app_->client->Call(call, {}, [&r, i](const rpc::ReplyView& v) { Collect(v, &r[i]); }), 0);
  }
  ASSERT_TRUE(app_->PollUntil([&] {
    for (const EchoResult& x : r) {
      if (!x.done) return false;
    }
    return true;
  }, 60000));
  for (uint32_t i = 0; i < 256; ++i) {
    EXPECT_EQ(r[i].status, 0);
    EXPECT_EQ(r[i].xid, 1000 + i);
  }
  const RdmaCounters c = app_->client->counters();
  const RdmaCounters s = server_->counters();
  EXPECT_EQ(c.credits_granted, 8u);
  EXPECT_LE(c.credits_in_use_max, 8u);
  EXPECT_LE(s.credits_in_use_max, 8u);
  EXPECT_EQ(s.calls, 256u);
  EXPECT_EQ(s.error(RdmaError::kCreditOverrun), 0u);
}

}  // namespace
}  // namespace iwarp::rpcrdma
