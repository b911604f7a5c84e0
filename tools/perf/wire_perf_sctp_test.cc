// iwarp-perf --transport sctp across two daemons: the server uses daemon B's
// socket, the client daemon A's and connects to B's address over RDMA over
// SCTP (RFC 5043), so every byte crosses usrsctp and the RFC 5043 session
// layer between the two daemons' wire engines (which share the process's one
// usrsctp endpoint, appif/wire_sctp_test_util.h). iwarp-perf is the shipped
// binary, fork/exec'd, verifying every byte (-V). The two-daemon proof with
// real iwarpd processes is tests/appif_wire_dataplane.py.
#include <stdio.h>
#include <sys/wait.h>

#include <memory>
#include <string>
#include <vector>

#include "appif/wire_sctp_test_util.h"
#include "gtest/gtest.h"
#include "tools/perf/perf_child.h"

namespace iwarp::appif {
namespace {

using perf_testing::Child;
using perf_testing::PerfBinary;
using testing::SctpDaemonOptions;
using testing::SharedWorker;
using testing::ThreadedTestLink;

::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new testing::EndpointEnvironment);

class WirePerfSctp : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_NE(testing::g_ep, nullptr);
    worker_ = std::make_unique<SharedWorker>(link_);
    ASSERT_TRUE(worker_->ok());
    a_ = std::make_unique<TestHost>(SctpDaemonOptions(worker_->engine(0)));
    b_ = std::make_unique<TestHost>(SctpDaemonOptions(worker_->engine(1)));
    ASSERT_TRUE(a_->ok() && b_->ok());
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    worker_.reset();
  }
  ThreadedTestLink link_;
  std::unique_ptr<SharedWorker> worker_;
  std::unique_ptr<TestHost> a_, b_;
};

TEST_P(WirePerfSctp, ClientAndServerOverSctpVerifyEveryByte) {
  const std::string test = GetParam();
  const std::string port = "18700";
  const bool lat = test.find("_lat") != std::string::npos;
  Child server({PerfBinary(), test, "--transport", "sctp", "-S", b_->socket_path(), "-p", port,
                "-s", "65536", "-n", lat ? "200" : "400", "-V"});
  ASSERT_TRUE(server.ReadUntil("waiting for a client on SCTP port 18700", 10000))
      << server.output();
  Child client({PerfBinary(), test, "--sctp", "-S", a_->socket_path(), "-p", port, "-s", "65536",
                "-n", lat ? "200" : "400", "-V", "198.18.0.2"});
  const int cst = client.Finish(60000);
  const int sst = server.Finish(10000);
  printf("%s", client.output().c_str());
  EXPECT_TRUE(WIFEXITED(cst) && WEXITSTATUS(cst) == 0) << client.output();
  EXPECT_TRUE(WIFEXITED(sst) && WEXITSTATUS(sst) == 0) << server.output();
  EXPECT_NE(client.output().find("RDMA over SCTP (RFC 5043) to 198.18.0.2"), std::string::npos)
      << client.output();
  // The whole run went through the wire engines, over one association.
  EXPECT_GE(a_->stats().wire_connections, 1u);
  EXPECT_GE(b_->stats().wire_connections, 1u);
  EXPECT_EQ(worker_->engine(0)->stats().sctp_associations, 1u);
  EXPECT_GE(worker_->engine(0)->stats().wrs_posted, 200u);
}

INSTANTIATE_TEST_SUITE_P(Tests, WirePerfSctp,
                         ::testing::Values("write_bw", "read_bw", "send_bw", "send_lat"));

// A TCP client aimed at an SCTP-only server port finds no listener (the
// port spaces are separate), and says which transport it tried.
TEST_F(WirePerfSctp, TcpClientDoesNotReachAnSctpServer) {
  Child server({PerfBinary(), "write_bw", "--sctp", "-S", b_->socket_path(), "-p", "18701"});
  ASSERT_TRUE(server.ReadUntil("waiting for a client", 10000)) << server.output();
  Child client({PerfBinary(), "write_bw", "-S", a_->socket_path(), "-p", "18701", "-n", "10",
                "198.18.0.2"});
  const int cst = client.Finish(30000);
  EXPECT_TRUE(WIFEXITED(cst) && WEXITSTATUS(cst) == 3) << client.output();
  EXPECT_NE(client.output().find("connect to port 18701 failed"), std::string::npos)
      << client.output();
}

}  // namespace
}  // namespace iwarp::appif
