// DPDK telemetry commands of iwarpd:
//   /iwarpd/stats  per-lcore counters and drop reasons, and their totals
//   /iwarpd/ports  ports, MACs, addresses, link, queues, steering, ethdev stats
//   /iwarpd/tcp    per-lcore and total TCP engine counters and TCP drops
//   /iwarpd/connections[,FIRST]  TCP connections, kConnectionsPerReply from
//                  index FIRST (default 0) in worker then table order
//   /iwarpd/services  per service: counters and finished transfers (SHA-256);
//                  iwarp_* services add their iWARP counters and the client's run
//   /iwarpd/qps[,FIRST]  iWARP QPs of the iwarp_* services, kQpsPerReply from
//                  index FIRST (default 0)
//
// Contract: the control thread publishes a view before workers start and
// retracts it (RetractTelemetryView waits for any running callback) before
// the state it points to is freed. Callbacks run on DPDK's telemetry thread
// and only read: counters through relaxed atomics, ports as immutable, TCP
// state through Worker::RequestTcpSnapshot (the worker copies it on its own
// lcore; requests are serialised here).
#ifndef IWARPD_DATAPLANE_TELEMETRY_H_
#define IWARPD_DATAPLANE_TELEMETRY_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "dataplane/l3/stats.h"
#include "config/config.h"
#include "dataplane/port.h"

namespace iwarp::dataplane {

class Worker;

// Connections per /iwarpd/connections reply: DPDK telemetry replies are
// bounded (16 KiB, 256 dict entries).
inline constexpr size_t kConnectionsPerReply = 24;
// QPs per /iwarpd/qps reply (each is about 40 fields).
inline constexpr size_t kQpsPerReply = 8;

struct TelemetryView {
  std::span<const uint32_t> lcores;    // worker lcore ids
  std::span<const LcoreStats> stats;   // same order as lcores
  std::span<const PortRuntime> ports;
  std::span<Worker* const> workers = {};  // same order as lcores
  const config::Config* config = nullptr;
};

// Registers the commands; call once after rte_eal_init.
absl::Status RegisterTelemetryCommands();
void PublishTelemetryView(const TelemetryView* view);
void RetractTelemetryView();

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_TELEMETRY_H_
