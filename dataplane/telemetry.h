// DPDK telemetry commands of iwarpd:
//   /iwarpd/stats  per-lcore counters and drop reasons, and their totals
//   /iwarpd/ports  ports, MACs, addresses, link, queues, steering, ethdev stats
//
// Contract: the control thread publishes a view before workers start and
// retracts it (RetractTelemetryView waits for any running callback) before
// the state it points to is freed. Callbacks run on DPDK's telemetry thread
// and only read: counters through relaxed atomics, ports as immutable.
#ifndef IWARPD_DATAPLANE_TELEMETRY_H_
#define IWARPD_DATAPLANE_TELEMETRY_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "dataplane/l3/stats.h"
#include "dataplane/port.h"

namespace iwarp::dataplane {

struct TelemetryView {
  std::span<const uint32_t> lcores;    // worker lcore ids
  std::span<const LcoreStats> stats;   // same order as lcores
  std::span<const PortRuntime> ports;
};

// Registers the commands; call once after rte_eal_init.
absl::Status RegisterTelemetryCommands();
void PublishTelemetryView(const TelemetryView* view);
void RetractTelemetryView();

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_TELEMETRY_H_
