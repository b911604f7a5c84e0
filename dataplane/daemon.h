// The iwarpd control thread: EAL start, ports, workers, telemetry, shutdown.
//
// Contract: RunDaemon runs on the process's main thread, which becomes the
// DPDK main lcore. It returns once a stop was requested (SIGINT/SIGTERM or
// RequestDaemonStop) and everything was torn down: workers joined, ports
// stopped and closed, mempools and rings freed, rte_eal_cleanup done.
#ifndef IWARPD_DATAPLANE_DAEMON_H_
#define IWARPD_DATAPLANE_DAEMON_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "config/config.h"
#include "dataplane/eal_args.h"

namespace iwarp::dataplane {

// Installs SIGINT/SIGTERM handlers that only set the stop flag.
void InstallStopSignalHandlers();

// Async-signal-safe.
void RequestDaemonStop();

absl::Status RunDaemon(const config::Config& cfg, const EalPlan& plan);

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_DAEMON_H_
