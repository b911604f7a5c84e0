#include "dataplane/log.h"

#include <atomic>
#include <cstdio>
#include <string>

namespace iwarp::dataplane {
namespace {
std::atomic<config::LogLevel> g_level{config::LogLevel::kInfo};
}  // namespace

void SetLogLevel(config::LogLevel level) { g_level.store(level, std::memory_order_relaxed); }

void LogLine(config::LogLevel level, std::string_view message) {
  if (level > g_level.load(std::memory_order_relaxed)) return;
  std::string line = absl::StrCat("iwarpd: ", std::string(config::ToString(level)), ": ",
                                  absl::string_view(message.data(), message.size()), "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace iwarp::dataplane
