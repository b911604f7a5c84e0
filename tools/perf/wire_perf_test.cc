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
#include "gtest/gtest.h"

namespace iwarp::appif {
namespace {

using testing::kIpA;
using testing::kIpB;
using testing::TestDaemon;
using testing::ThreadedTestLink;

std::string PerfBinary() {
  const char* p = getenv("IWARP_PERF");
  return p != nullptr ? p : "tools/perf/iwarp-perf";
}

// A child process; stdout and stderr collected.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(p[1], 1);
      dup2(p[1], 2);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(p[1]);
    fd_ = p[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  // Reads until `needle` shows up, EOF or the timeout; true if it showed.
  bool ReadUntil(const std::string& needle, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (out_.find(needle) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0 || eof_) return false;
      pollfd pf{fd_, POLLIN, 0};
      if (poll(&pf, 1, static_cast<int>(left)) <= 0) continue;
      char tmp[1024];
      const ssize_t n = read(fd_, tmp, sizeof(tmp));
      if (n <= 0) {
        eof_ = true;
        return false;
      }
      out_.append(tmp, static_cast<size_t>(n));
    }
    return true;
  }
  // Reads to EOF and reaps the child (killed after `timeout_ms`); the status.
  int Finish(int timeout_ms) {
    ReadUntil(std::string(1, '\0'), timeout_ms);
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) != pid_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &st, 0);
    }
    reaped_ = true;
    return st;
  }
  const std::string& output() const { return out_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  bool eof_ = false;
  std::string out_;
};

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
  const std::string test = GetParam();
  const std::string port = "18600";
  const bool lat = test.find("_lat") != std::string::npos;
  Child server({PerfBinary(), test, "-S", b_->host.socket_path(), "-p", port, "-s", "65536", "-n",
                lat ? "200" : "400", "-V"});
  ASSERT_TRUE(server.ReadUntil("waiting for a client", 10000)) << server.output();
  std::vector<std::string> client_args = {PerfBinary(), test, "-S", a_->host.socket_path(), "-p",
                                          port, "-s", "65536", "-n", lat ? "200" : "400", "-V"};
  if (test == "send_bw") client_args.push_back("--markers");  // per-connection MPA option
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
  // The whole run went through the wire engines.
  EXPECT_GE(a_->host.stats().wire_connections, 1u);
  EXPECT_GE(b_->host.stats().wire_connections, 1u);
  EXPECT_GE(a_->worker.engine()->stats().wrs_posted, 200u);
}

INSTANTIATE_TEST_SUITE_P(Tests, WirePerf,
                         ::testing::Values("write_bw", "read_bw", "send_bw", "write_lat",
                                           "read_lat", "send_lat"));

}  // namespace
}  // namespace iwarp::appif
