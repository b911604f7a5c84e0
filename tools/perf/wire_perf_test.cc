// iwarp-perf across two daemons: the server process uses daemon B's socket,
// the client process daemon A's and connects to B's address, so every byte
// crosses iWARP (MPA/TCP) between the two daemons' wire engines. The daemons
// run in this process (SessionServer + WireEngine on worker threads, stacks
// joined by the threaded test link); iwarp-perf is the shipped binary,
// fork/exec'd, verifying every byte (-V).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "appif/wire_test_util.h"
#include "tools/perf/perf_child.h"
#include "gtest/gtest.h"

namespace iwarp::appif {
namespace {

using testing::kIpA;
using testing::kIpB;
using testing::TestDaemon;
using testing::ThreadedTestLink;

using perf_testing::Child;
using perf_testing::PerfBinary;

class WirePerf : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    engine::MpaParams mpa;  // CRC on, no Markers: the daemons' defaults
    a_ = std::make_unique<TestDaemon>(link_, 0, kIpA, mpa);
    b_ = std::make_unique<TestDaemon>(link_, 1, kIpB, mpa);
    ASSERT_TRUE(a_->host.ok() && b_->host.ok());
  }
  ThreadedTestLink link_;
  std::unique_ptr<TestDaemon> a_, b_;
};

TEST_P(WirePerf, ClientAndServerOnTwoDaemonsVerifyEveryByte) {
  // "TEST [OPTION]": the option goes to both sides.
  const std::string param = GetParam();
  const size_t space = param.find(' ');
  const std::string test = param.substr(0, space);
  const std::string option = space == std::string::npos ? "" : param.substr(space + 1);
  const std::string port = "18600";
  const bool lat = test.find("_lat") != std::string::npos;
  std::vector<std::string> server_args = {PerfBinary(), test, "-S", b_->host.socket_path(), "-p",
                                          port, "-s", "65536", "-n", lat ? "200" : "400", "-V"};
  if (!option.empty()) server_args.push_back(option);
  Child server(server_args);
  ASSERT_TRUE(server.ReadUntil("waiting for a client", 10000)) << server.output();
  std::vector<std::string> client_args = {PerfBinary(), test, "-S", a_->host.socket_path(), "-p",
                                          port, "-s", "65536", "-n", lat ? "200" : "400", "-V"};
  if (test == "send_bw") client_args.push_back("--markers");  // per-connection MPA option
  if (!option.empty()) client_args.push_back(option);
  client_args.push_back("198.18.0.2");
  Child client(client_args);
  const int cst = client.Finish(60000);
  const int sst = server.Finish(10000);
  printf("%s", client.output().c_str());
  EXPECT_TRUE(WIFEXITED(cst) && WEXITSTATUS(cst) == 0) << client.output();
  EXPECT_TRUE(WIFEXITED(sst) && WEXITSTATUS(sst) == 0) << server.output();
  EXPECT_NE(client.output().find("iWARP (MPA/TCP) to 198.18.0.2"), std::string::npos)
      << client.output();
  EXPECT_NE(client.output().find("CRC             : on"), std::string::npos);
  if (test == "send_bw") {
    EXPECT_NE(client.output().find("Markers         : peer sends"), std::string::npos)
        << client.output();
  }
  if (test == "write_lat") {
    // Both ways of learning that the peer's Write arrived, as asked.
    EXPECT_NE(client.output().find(option == "--poll-byte"
                                       ? "Write arrival   : polling the last byte"
                                       : "Write arrival   : the QP's placed-Write count"),
              std::string::npos)
        << client.output();
  }
  // The whole run went through the wire engines.
  EXPECT_GE(a_->host.stats().wire_connections, 1u);
  EXPECT_GE(b_->host.stats().wire_connections, 1u);
  EXPECT_GE(a_->worker.engine()->stats().wrs_posted, 200u);
}

INSTANTIATE_TEST_SUITE_P(Tests, WirePerf,
                         ::testing::Values("write_bw", "read_bw", "send_bw", "write_lat",
                                           "write_lat --poll-byte", "read_lat", "send_lat"));

}  // namespace
}  // namespace iwarp::appif
