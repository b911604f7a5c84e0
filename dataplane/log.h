// Control-path logging for iwarpd (start-up, shutdown, telemetry errors).
//
// Contract: never called from a worker's fast path. Lines go to stderr as
// "iwarpd: LEVEL: message"; messages above the configured level are dropped.
#ifndef IWARPD_DATAPLANE_LOG_H_
#define IWARPD_DATAPLANE_LOG_H_

#include <string_view>

#include "absl/strings/str_cat.h"
#include "config/config.h"

namespace iwarp::dataplane {

void SetLogLevel(config::LogLevel level);
void LogLine(config::LogLevel level, std::string_view message);

template <typename... Args>
void LogError(const Args&... args) {
  LogLine(config::LogLevel::kError, absl::StrCat(args...));
}
template <typename... Args>
void LogWarning(const Args&... args) {
  LogLine(config::LogLevel::kWarning, absl::StrCat(args...));
}
template <typename... Args>
void LogInfo(const Args&... args) {
  LogLine(config::LogLevel::kInfo, absl::StrCat(args...));
}

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_LOG_H_
