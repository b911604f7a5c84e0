// Hosts the application interface (appif::SessionServer) inside iwarpd.
//
// For now the server runs on one dedicated control thread of the daemon,
// which serves the socket and also runs the loopback QP engine (its
// PollQueues). Loopback QPs touch no packets, so no worker lcore is involved;
// when the iWARP engine places QPs on the wire, a worker will call
// PollQueues() for the QPs it owns instead.
#ifndef IWARPD_DATAPLANE_APP_INTERFACE_H_
#define IWARPD_DATAPLANE_APP_INTERFACE_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "appif/session_server.h"
#include "config/config.h"

namespace iwarp::dataplane {

// The server options the config asks for; the socket is
// app_interface.socket_dir/eal.file_prefix.sock.
appif::SessionServerOptions AppInterfaceOptions(const config::Config& cfg);

// A snapshot of the running server's counters (SessionServer::stats()), for
// the /iwarpd/app telemetry command; false while no server runs (disabled,
// not started yet, or stopping). Safe from any thread; control path only.
bool AppInterfaceStats(appif::SessionServerStats* out);

class AppInterfaceHost {
 public:
  AppInterfaceHost() = default;
  ~AppInterfaceHost() { Stop(); }
  AppInterfaceHost(const AppInterfaceHost&) = delete;
  AppInterfaceHost& operator=(const AppInterfaceHost&) = delete;

  // Creates the socket directory (0755) if missing, binds the socket and
  // starts the thread. Fails if another live daemon serves the same socket.
  absl::Status Start(const config::Config& cfg);
  // Stops the thread; closing every session makes applications see
  // IWARP_EVENT_DEVICE_FATAL. Idempotent.
  void Stop();
  const appif::SessionServer* server() const { return server_.get(); }

 private:
  std::unique_ptr<appif::SessionServer> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_APP_INTERFACE_H_
