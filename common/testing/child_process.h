// A child process for tests that run a shipped binary (fork/exec), with its
// output collected through a pipe: line by line, until a marker shows up, or
// to the end. Test-only; header-only.
#ifndef IWARPD_COMMON_TESTING_CHILD_PROCESS_H_
#define IWARPD_COMMON_TESTING_CHILD_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace iwarp::testutil {

class ChildProcess {
 public:
  enum class Stderr { kInherit, kMerge };

  // Starts args[0] with args; its stdout (and stderr with kMerge) is read by
  // this object. A failed fork or exec shows as no output and exit 127.
  explicit ChildProcess(const std::vector<std::string>& args, Stderr err = Stderr::kInherit) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(p[1], 1);
      if (err == Stderr::kMerge) dup2(p[1], 2);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(p[1]);
    fd_ = p[0];
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills and reaps a child nobody waited for.
  ~ChildProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }

  // The next line of output (without its newline); "" on EOF or after
  // `timeout_ms`.
  std::string ReadLine(int timeout_ms = 15000) {
    const auto deadline = Deadline(timeout_ms);
    for (;;) {
      const size_t nl = out_.find('\n', line_pos_);
      if (nl != std::string::npos) {
        std::string line = out_.substr(line_pos_, nl - line_pos_);
        line_pos_ = nl + 1;
        return line;
      }
      if (!ReadSome(deadline)) return "";
    }
  }
  // Reads until `needle` is in the output, EOF or the timeout; true if it is.
  bool ReadUntil(const std::string& needle, int timeout_ms) {
    const auto deadline = Deadline(timeout_ms);
    while (out_.find(needle) == std::string::npos) {
      if (!ReadSome(deadline)) return false;
    }
    return true;
  }
  // Everything the child wrote until EOF or `quiet_ms` without output.
  const std::string& Drain(int quiet_ms = 2000) {
    while (ReadSome(Deadline(quiet_ms))) {
    }
    return out_;
  }
  // Waits for the child to exit; its wait status.
  int Wait() {
    int st = 0;
    waitpid(pid_, &st, 0);
    reaped_ = true;
    return st;
  }
  // Reads to EOF, then reaps the child, killing it if it has not exited after
  // `timeout_ms`; its wait status.
  int Finish(int timeout_ms) {
    const auto deadline = Deadline(timeout_ms);
    while (ReadSome(deadline)) {
    }
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) != pid_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &st, 0);
    }
    reaped_ = true;
    return st;
  }
  const std::string& output() const { return out_; }
  pid_t pid() const { return pid_; }

 private:
  using Clock = std::chrono::steady_clock;
  static Clock::time_point Deadline(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

  // Appends what the pipe has before `deadline`; false on EOF or timeout.
  bool ReadSome(Clock::time_point deadline) {
    for (;;) {
      if (eof_ || fd_ < 0) return false;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd pf{fd_, POLLIN, 0};
      if (poll(&pf, 1, static_cast<int>(left)) <= 0) continue;
      char tmp[1024];
      const ssize_t n = read(fd_, tmp, sizeof(tmp));
      if (n <= 0) {
        eof_ = true;
        return false;
      }
      out_.append(tmp, static_cast<size_t>(n));
      return true;
    }
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  bool eof_ = false;
  std::string out_;
  size_t line_pos_ = 0;
};

}  // namespace iwarp::testutil

#endif  // IWARPD_COMMON_TESTING_CHILD_PROCESS_H_
