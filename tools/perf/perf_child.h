// A child process for the iwarp-perf tests: the shipped binary, fork/exec'd,
// its stdout and stderr collected. Test-only.
#ifndef IWARPD_TOOLS_PERF_PERF_CHILD_H_
#define IWARPD_TOOLS_PERF_PERF_CHILD_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace iwarp::perf_testing {

inline std::string PerfBinary() {
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

}  // namespace iwarp::perf_testing

#endif  // IWARPD_TOOLS_PERF_PERF_CHILD_H_
