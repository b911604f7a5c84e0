// Two application processes (fork/exec of iwarp_test_app, linking libiwarp
// only) against a session server hosted in this process: loopback RDMA Write,
// Read, Sends and Send with Invalidate checked byte for byte by the apps
// themselves, and kill -9 of an application in the middle of a transfer.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "appif/test_host.h"
#include "common/testing/child_process.h"
#include "gtest/gtest.h"

namespace iwarp::appif {
namespace {

std::string TestApp() {
  const char* p = getenv("IWARP_TEST_APP");
  return p != nullptr ? p : "libiwarp/iwarp_test_app";
}

using Child = testutil::ChildProcess;

bool Exited0(int st) { return WIFEXITED(st) && WEXITSTATUS(st) == 0; }

template <typename F>
bool Eventually(F f, int ms = 5000) {
  for (int i = 0; i < ms / 10; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return f();
}

struct Ready {
  std::string stag, addr, inv;
};

bool ParseReady(const std::string& line, Ready* r) {
  std::istringstream in(line);
  std::string word;
  in >> word >> r->stag >> r->addr >> r->inv;
  return word == "READY" && !r->inv.empty();
}

TEST(TwoProcess, WriteReadSendInvalidateBetweenApplications) {
  TestHost host;
  ASSERT_TRUE(host.ok()) << host.status();
  Child target({TestApp(), "target", host.socket_path(), "4791"});
  Ready r;
  const std::string line = target.ReadLine();
  ASSERT_TRUE(ParseReady(line, &r)) << "target said: " << line << target.Drain();
  Child init({TestApp(), "initiator", host.socket_path(), "4791", r.stag, r.addr, r.inv});
  EXPECT_EQ(init.ReadLine(), "INITIATOR_OK") << init.Drain();
  EXPECT_EQ(target.ReadLine(), "TARGET_OK") << target.Drain();
  EXPECT_TRUE(Exited0(init.Wait())) << init.Drain();
  EXPECT_TRUE(Exited0(target.Wait())) << target.Drain();
  const SessionServerStats s = host.stats();
  EXPECT_EQ(s.connections, 1u);
  // 1 Write + 2 Reads of 64 KiB, 4 Sends.
  EXPECT_EQ(s.wrs_completed, 7u);
  EXPECT_EQ(s.wrs_failed, 0u);
  EXPECT_GE(s.bytes_moved, 3u * 65536u);
  EXPECT_TRUE(Eventually([&] { return host.stats().sessions_active == 0; }));
  EXPECT_EQ(host.stats().stags_in_use, 0u);
  EXPECT_EQ(host.stats().mapped_bytes, 0u);
}

TEST(TwoProcess, CApplication) {
  const char* app = getenv("IWARP_C_APP");
  if (app == nullptr) GTEST_SKIP() << "IWARP_C_APP not set (run through meson test)";
  TestHost host;
  ASSERT_TRUE(host.ok());
  Child c({app, host.socket_path()});
  EXPECT_EQ(c.ReadLine(), "C_API_OK") << c.Drain();
  EXPECT_TRUE(Exited0(c.Wait()));
  EXPECT_TRUE(Eventually([&] { return host.stats().sessions_closed == 1; }));
  EXPECT_EQ(host.stats().stags_in_use, 0u);
}

TEST(TwoProcess, KillNineMidTransferCleansUpAndOthersKeepWorking) {
  TestHost host;
  ASSERT_TRUE(host.ok()) << host.status();
  // Pair 1: a target and a hog that RDMA-Writes into it without pause.
  Child victim_target({TestApp(), "sink", host.socket_path(), "5001"});
  Ready r;
  ASSERT_TRUE(ParseReady(victim_target.ReadLine(), &r)) << victim_target.Drain();
  Child hog({TestApp(), "hog", host.socket_path(), "5001", r.stag, r.addr});
  ASSERT_EQ(hog.ReadLine(), "HOG_RUNNING") << hog.Drain();
  ASSERT_TRUE(Eventually([&] { return host.stats().wrs_completed > 50; }));
  const SessionServerStats before = host.stats();
  EXPECT_EQ(before.sessions_active, 2u);

  ASSERT_EQ(kill(hog.pid(), SIGKILL), 0);
  const int st = hog.Wait();
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  // The daemon notices the closed socket: the hog's session, QP, MR, STag and
  // mappings are gone; the target's remain.
  ASSERT_TRUE(Eventually([&] { return host.stats().sessions_active == 1; }));
  const SessionServerStats after = host.stats();
  EXPECT_EQ(after.sessions_closed, 1u);
  EXPECT_EQ(after.qps_active, 1u);
  EXPECT_EQ(after.mrs_active, 2u);  // target: its region and the invalidation one
  EXPECT_EQ(after.stags_in_use, 2u);
  EXPECT_LT(after.mapped_bytes, before.mapped_bytes);
  EXPECT_LT(after.registered_bytes, before.registered_bytes);
  // The survivor saw Disconnected (ECONNRESET) and its receives flushed.
  EXPECT_EQ(victim_target.ReadLine(), "PEER_GONE") << victim_target.Drain();
  EXPECT_GE(host.stats().wrs_flushed, 4u);
  kill(victim_target.pid(), SIGKILL);
  victim_target.Wait();
  EXPECT_TRUE(Eventually([&] { return host.stats().sessions_active == 0; }));
  EXPECT_EQ(host.stats().stags_in_use, 0u);

  // A fresh pair on the same daemon works end to end.
  Child target({TestApp(), "target", host.socket_path(), "5002"});
  ASSERT_TRUE(ParseReady(target.ReadLine(), &r)) << target.Drain();
  Child init({TestApp(), "initiator", host.socket_path(), "5002", r.stag, r.addr, r.inv});
  EXPECT_EQ(init.ReadLine(), "INITIATOR_OK") << init.Drain();
  EXPECT_EQ(target.ReadLine(), "TARGET_OK") << target.Drain();
  EXPECT_TRUE(Exited0(init.Wait()));
  EXPECT_TRUE(Exited0(target.Wait()));
  EXPECT_TRUE(Eventually([&] { return host.stats().mapped_bytes == 0; }));
  EXPECT_EQ(host.stats().stags_in_use, 0u);
}

}  // namespace
}  // namespace iwarp::appif
