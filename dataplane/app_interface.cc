#include "dataplane/app_interface.h"

#include <errno.h>
#include <sys/stat.h>

#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "dataplane/log.h"

namespace iwarp::dataplane {
namespace {

// The server telemetry may read; guarded so Stop() cannot free it under a
// reader.
std::mutex g_stats_mu;
const appif::SessionServer* g_stats_server = nullptr;
const appif::WireEngine* g_stats_wire = nullptr;

}  // namespace

bool AppInterfaceStats(appif::SessionServerStats* out, appif::WireEngineStats* wire,
                       bool* has_wire) {
  std::lock_guard<std::mutex> lock(g_stats_mu);
  if (g_stats_server == nullptr) return false;
  *out = g_stats_server->stats();
  if (has_wire != nullptr) *has_wire = g_stats_wire != nullptr;
  if (wire != nullptr) *wire = g_stats_wire != nullptr ? g_stats_wire->stats() : appif::WireEngineStats{};
  return true;
}

appif::SessionServerOptions AppInterfaceOptions(const config::Config& cfg,
                                                appif::WireEngine* wire) {
  const config::AppInterfaceConfig& a = cfg.app_interface;
  appif::SessionServerOptions o;
  o.socket_path = absl::StrCat(a.socket_dir, "/", cfg.eal.file_prefix, ".sock");
  o.socket_mode = a.socket_mode;
  o.allowed_uids = a.allowed_uids;
  o.max_sessions = a.max_sessions;
  o.max_qps_per_session = a.max_qps_per_session;
  o.max_cqs_per_session = a.max_cqs_per_session;
  o.max_mrs_per_session = a.max_mrs_per_session;
  o.max_pds_per_session = a.max_pds_per_session;
  o.max_listeners_per_session = a.max_listeners_per_session;
  o.max_registered_bytes_per_session = uint64_t{a.max_registered_mb_per_session} << 20;
  o.max_queue_depth = a.max_queue_depth;
  o.event_queue_depth = a.event_queue_depth;
  o.stag_table_size = a.stag_table_size;
  o.wire_engine = wire;
  const config::IwarpConfig& iw = cfg.iwarp;
  o.wire_mpa.revision = iw.revision;
  o.wire_mpa.enhanced = iw.enhanced;
  o.wire_mpa.crc = a.mpa_crc;
  o.wire_mpa.want_markers = a.mpa_markers;
  o.wire_zero_copy_tx = a.zero_copy_tx;
  o.wire_ack_timeout_ms = a.wire_ack_timeout_ms;
  o.wire_mpa.ird = iw.ird;
  o.wire_mpa.ord = iw.ord;
  o.wire_mpa.rtr_types = iw.rtr_types;
  o.wire_mpa.max_private_data = iw.max_private_data;
  o.wire_mpa.request_timeout_us = uint64_t{iw.request_timeout_ms} * 1000;
  o.wire_mpa.reply_timeout_us = uint64_t{iw.reply_timeout_ms} * 1000;
  o.wire_mpa.rtr_timeout_us = uint64_t{iw.rtr_timeout_ms} * 1000;
  o.log = [](std::string_view line) { LogLine(config::LogLevel::kInfo, line); };
  return o;
}

absl::Status AppInterfaceHost::Start(const config::Config& cfg, appif::WireEngine* wire) {
  const std::string& dir = cfg.app_interface.socket_dir;
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::ErrnoToStatus(errno, absl::StrCat("app_interface.socket_dir ", dir));
  }
  auto server = appif::SessionServer::Create(AppInterfaceOptions(cfg, wire));
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  stop_.store(false);
  thread_ = std::thread([this] { server_->Run(stop_); });
  std::lock_guard<std::mutex> lock(g_stats_mu);
  g_stats_server = server_.get();
  g_stats_wire = wire;
  return absl::OkStatus();
}

void AppInterfaceHost::Stop() {
  {
    std::lock_guard<std::mutex> lock(g_stats_mu);
    if (g_stats_server == server_.get()) {
      g_stats_server = nullptr;
      g_stats_wire = nullptr;
    }
  }
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (server_ != nullptr) {
    const appif::SessionServerStats s = server_->stats();
    LogInfo("app interface stopped: ", s.sessions_opened, " sessions served, ",
            s.connections - s.wire_connections, " loopback connections, ", s.wire_connections,
            " iWARP connections, ", s.wrs_completed, " loopback work requests, ", s.bytes_moved,
            " loopback bytes moved");
  }
  server_.reset();
}

}  // namespace iwarp::dataplane
