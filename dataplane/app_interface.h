// Hosts the application interface (appif::SessionServer) inside iwarpd.
//
// The server runs on one dedicated control thread of the daemon, which
// serves the socket, owns sessions and MR registration, and runs the
// loopback QP engine (PollQueues). QPs connected to other hosts run on
// worker 0's appif::WireEngine (engine::Qp over that worker's TcpStack); the
// control thread reaches it only through the engine's command/event rings.
// Multi-worker rule: application QPs and listeners live on worker 0. The
// wire engine holds the local TCP port of each listener and connection in
// worker 0's appif::AppPortTable (appif/app_ports.h) while the stack uses
// it, and every other worker hands frames to a held port to worker 0 through
// the steering ring (counted as steered_app), so passive and active
// connections work whichever worker or RX queue a segment arrives on
// (software steering and RSS alike). Worker 0's active opens still prefer
// local ports whose replies hash to it (one hop fewer under software
// steering). Built-in TCP services' ports are reserved: an application
// cannot listen on them (EADDRINUSE, with the reason in iwarp_last_error).
#ifndef IWARPD_DATAPLANE_APP_INTERFACE_H_
#define IWARPD_DATAPLANE_APP_INTERFACE_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "appif/session_server.h"
#include "appif/wire_engine.h"
#include "config/config.h"

namespace iwarp::dataplane {

// The server options the config asks for; the socket is
// app_interface.socket_dir/eal.file_prefix.sock.
// `wire` (nullable) is worker 0's engine for QPs to other hosts; MPA
// parameters come from the iwarp: section, CRC and Markers from
// app_interface.mpa_crc / mpa_markers (an application may still ask for
// Markers per connection with iwarp_connect_mpa).
appif::SessionServerOptions AppInterfaceOptions(const config::Config& cfg,
                                                appif::WireEngine* wire = nullptr);

// A snapshot of the running server's counters (SessionServer::stats()), for
// the /iwarpd/app telemetry command; false while no server runs (disabled,
// not started yet, or stopping). When `wire` is non-null it receives worker
// 0's WireEngine counters (relaxed atomics written by the worker, so each
// value is current but the set is not one instant) and `*has_wire` says
// whether the server has a wire engine at all. Safe from any thread; control
// path only.
bool AppInterfaceStats(appif::SessionServerStats* out, appif::WireEngineStats* wire = nullptr,
                       bool* has_wire = nullptr);

class AppInterfaceHost {
 public:
  AppInterfaceHost() = default;
  ~AppInterfaceHost() { Stop(); }
  AppInterfaceHost(const AppInterfaceHost&) = delete;
  AppInterfaceHost& operator=(const AppInterfaceHost&) = delete;

  // Creates the socket directory (0755) if missing, binds the socket and
  // starts the thread. Fails if another live daemon serves the same socket.
  // `wire`: see AppInterfaceOptions; it must outlive Stop().
  absl::Status Start(const config::Config& cfg, appif::WireEngine* wire = nullptr);
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
