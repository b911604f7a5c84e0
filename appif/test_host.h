// Test host for the session server: runs SessionServer::Run on its own thread
// with a socket in a private temporary directory. Used by the appif and
// libiwarp tests (the daemon hosts the same class in iwarpd).
#ifndef IWARPD_APPIF_TEST_HOST_H_
#define IWARPD_APPIF_TEST_HOST_H_

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "appif/session_server.h"

namespace iwarp::appif {

class TestHost {
 public:
  explicit TestHost(SessionServerOptions opts = {}) {
    char tmpl[] = "/tmp/iwarp-appif-XXXXXX";
    dir_ = mkdtemp(tmpl);
    socket_path_ = dir_ + "/iwarpd.sock";
    opts.socket_path = socket_path_;
    if (opts.idle_polls_before_sleep == 2048) opts.idle_polls_before_sleep = 256;
    if (!opts.log && getenv("IWARP_TEST_LOG") != nullptr) {
      opts.log = [](std::string_view l) { fprintf(stderr, "%.*s\n", static_cast<int>(l.size()), l.data()); };
    }
    auto s = SessionServer::Create(std::move(opts));
    if (!s.ok()) {
      status_ = s.status();
      return;
    }
    server_ = std::move(*s);
    thread_ = std::thread([this] { server_->Run(stop_); });
  }
  ~TestHost() { Stop(); rmdir(dir_.c_str()); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }
  bool ok() const { return server_ != nullptr; }
  const absl::Status& status() const { return status_; }
  const std::string& socket_path() const { return socket_path_; }
  SessionServer* server() const { return server_.get(); }
  SessionServerStats stats() const { return server_->stats(); }

 private:
  std::string dir_;
  std::string socket_path_;
  absl::Status status_;
  std::unique_ptr<SessionServer> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_TEST_HOST_H_
