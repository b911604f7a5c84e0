// Readable renderings of iwarpd telemetry replies for iwarpctl.
#ifndef IWARPD_TOOLS_IWARPCTL_FORMAT_H_
#define IWARPD_TOOLS_IWARPCTL_FORMAT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/iwarpctl_json.h"

namespace iwarp::tools {

// `stats` is the value of "/iwarpd/stats": {"lcores": [...], "lcore_N": {...},
// "total": {...}}. One row per counter, one column per worker lcore and a
// total; under "drops" one row per drop reason whose total is not zero.
absl::StatusOr<std::string> FormatStats(const JsonValue& stats);

// `app` is the value of "/iwarpd/app": {"state": "running"|"off", counters...}.
// Groups: sessions, objects, memory, work requests, connections, events.
absl::StatusOr<std::string> FormatApp(const JsonValue& app);

// `ports` is the value of "/iwarpd/ports": {"port_ids": [...], "port_N": {...}}.
absl::StatusOr<std::string> FormatPorts(const JsonValue& ports);

// `pages` are values of "/iwarpd/connections,FIRST" replies: {"total": N,
// "first": F, "shown": S, "conn_I": {...}}. One row per connection.
absl::StatusOr<std::string> FormatConnections(const std::vector<JsonValue>& pages);

// `services` is the value of "/iwarpd/services": {"names": [...], "svc_I":
// {...}, "transfers_I": ["bytes sha256 status remote", ...]}.
// iwarp_* services add their iWARP counters and the client's run result.
absl::StatusOr<std::string> FormatServices(const JsonValue& services);

// `qps` is the value of "/iwarpd/qps": {"total": N, "shown": S, "qp_I":
// {...}}. One row per QP, then its Terminates when it has any.
absl::StatusOr<std::string> FormatQps(const JsonValue& qps);

}  // namespace iwarp::tools

#endif  // IWARPD_TOOLS_IWARPCTL_FORMAT_H_
