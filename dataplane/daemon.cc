#include "dataplane/daemon.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataplane/app_interface.h"
#include "dataplane/l3/ipv4.h"
#include "dataplane/log.h"
#include "dataplane/port.h"
#include "dataplane/telemetry.h"
#include "dataplane/worker.h"

namespace iwarp::dataplane {
namespace {

// Set by the signal handler or RequestDaemonStop; read by the control loop.
std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void OnStopSignal(int) { g_stop_requested.store(true, std::memory_order_relaxed); }

// Everything the daemon created after rte_eal_init, torn down in reverse.
struct Runtime {
  std::vector<PortRuntime> ports;
  std::vector<uint32_t> lcores;
  std::unique_ptr<LcoreStats[]> stats;
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<Worker*> worker_ptrs;  // same order; for telemetry
  // Read by the workers; set once to stop them.
  std::atomic<bool> workers_stop{false};
  bool launched = false;
  bool telemetry_published = false;
  TelemetryView view;

  ~Runtime() {
    if (telemetry_published) RetractTelemetryView();
    if (launched) {
      workers_stop.store(true, std::memory_order_release);
      for (const std::unique_ptr<Worker>& w : workers) w->Wake();  // those that block
      rte_eal_mp_wait_lcore();
    }
    workers.clear();  // frees their rings
    for (PortRuntime& p : ports) ClosePort(&p);
  }
};

std::string LinkText(uint16_t port_id) {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id, &link) != 0) return "unknown";
  if (!link.link_status) return "down";
  return absl::StrCat("up ", link.link_speed, " Mb/s ", link.link_duplex ? "full" : "half",
                      "-duplex");
}

absl::Status Serve(const config::Config& cfg) {
  Runtime rt;
  rt.lcores = cfg.workers.lcores;
  for (uint32_t l : rt.lcores) {
    if (!rte_lcore_is_enabled(l)) {
      return absl::InvalidArgumentError(absl::StrCat("worker lcore ", l, " is not enabled"));
    }
  }
  for (size_t i = 0; i < cfg.ports.size(); ++i) {
    absl::StatusOr<PortRuntime> p = SetupPort(cfg, i);
    if (!p.ok()) return p.status();
    rt.ports.push_back(std::move(*p));
  }
  rt.stats = std::make_unique<LcoreStats[]>(rt.lcores.size());
  for (size_t i = 0; i < rt.lcores.size(); ++i) {
    rt.workers.push_back(std::make_unique<Worker>(static_cast<uint32_t>(i), rt.lcores[i], rt.ports,
                                                  cfg, &rt.stats[i], &rt.workers_stop));
    if (absl::Status s = rt.workers.back()->Init(); !s.ok()) return s;
  }
  for (auto& w : rt.workers) rt.worker_ptrs.push_back(w.get());
  for (auto& w : rt.workers) w->SetPeers(rt.worker_ptrs);

  if (cfg.telemetry.enabled) {
    rt.view = TelemetryView{rt.lcores, std::span<const LcoreStats>(rt.stats.get(), rt.lcores.size()),
                            rt.ports, rt.worker_ptrs, &cfg};
    PublishTelemetryView(&rt.view);
    rt.telemetry_published = true;
  }

  LogInfo("main lcore ", rte_get_main_lcore(), ", worker lcores ", absl::StrJoin(rt.lcores, ","));
  for (const PortRuntime& p : rt.ports) {
    std::vector<std::string> addrs;
    for (const InterfaceAddress& a : p.addrs) {
      addrs.push_back(absl::StrCat(Ipv4ToString(a.addr), "/", a.prefix_len));
    }
    LogInfo("port ", p.port_id, " '", p.name, "' ", p.ethdev, " (", p.driver, ") mac ",
            p.mac.ToString(), " ipv4 ", addrs.empty() ? "none" : absl::StrJoin(addrs, ","),
            p.gateway ? absl::StrCat(" gateway ", Ipv4ToString(p.gateway)) : "", " mtu ", p.mtu,
            " socket ", p.socket, " queues rx ", p.nb_rxq, " tx ", p.nb_txq, " descriptors rx ",
            p.nb_rxd, " tx ", p.nb_txd, " steering ", SteeringName(p.steering), " link ",
            LinkText(p.port_id));
  }
  if (cfg.telemetry.enabled) {
    LogInfo("telemetry: ", rte_eal_get_runtime_dir(), "/dpdk_telemetry.v2 (iwarpctl --prefix ",
            cfg.eal.file_prefix, " stats)");
  }

  for (auto& w : rt.workers) {
    int rc = rte_eal_remote_launch(WorkerMain, w.get(), w->lcore());
    if (rc != 0) {
      rt.launched = true;  // stop those already running
      return absl::InternalError(absl::StrCat("launching the worker on lcore ", w->lcore(),
                                              " failed: ", rte_strerror(-rc)));
    }
    rt.launched = true;
  }
  // Applications (libiwarp) connect once the data plane runs. Declared after
  // `rt`, so it stops first: sessions end before the workers and ports.
  AppInterfaceHost app_interface;
  if (cfg.app_interface.enabled) {
    // Worker 0 hosts the application QPs that go on the wire.
    appif::WireEngine* wire = rt.workers.empty() ? nullptr : rt.workers[0]->wire_engine();
    if (absl::Status s = app_interface.Start(cfg, wire); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("app interface: ", s.message()));
    }
  }
  LogInfo("running; SIGINT or SIGTERM stops");

  // The control loop: watch for a stop request and report link changes.
  std::vector<std::string> links;
  for (const PortRuntime& p : rt.ports) links.push_back(LinkText(p.port_id));
  uint64_t logged_end_timeouts = 0;
  uint64_t logged_forced = 0;
  for (uint32_t tick = 1; !g_stop_requested.load(std::memory_order_relaxed); ++tick) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (tick % 25 != 0) continue;
    // SCTP client teardown failures, counted on worker 0 (iwarp_services.h).
    if (!rt.lcores.empty()) {
      const uint64_t t = rt.stats[0].sctp_session_end_timeouts.Get();
      const uint64_t f = rt.stats[0].sctp_shutdowns_forced.Get();
      if (t != logged_end_timeouts) {
        LogWarning("sctp: ", t - logged_end_timeouts,
                   " iwarp_client session(s) not ended 2 s after the run (session Terminate "
                   "unanswered; sctp_session_end_timeouts ", t,
                   "); their association stays up until every stream is idle");
        logged_end_timeouts = t;
      }
      if (f != logged_forced) {
        LogWarning("sctp: ", f - logged_forced,
                   " iwarp_client association(s) shut down with a session still not ended 10 s "
                   "after the last run (sctp_shutdowns_forced ", f, ")");
        logged_forced = f;
      }
    }
    for (size_t i = 0; i < rt.ports.size(); ++i) {
      std::string now = LinkText(rt.ports[i].port_id);
      if (now != links[i]) {
        LogInfo("port ", rt.ports[i].port_id, " '", rt.ports[i].name, "' link ", now);
        links[i] = std::move(now);
      }
    }
  }
  LogInfo("stopping");
  return absl::OkStatus();  // ~Runtime stops workers and closes ports
}

}  // namespace

void InstallStopSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void RequestDaemonStop() { g_stop_requested.store(true, std::memory_order_relaxed); }

absl::Status RunDaemon(const config::Config& cfg, const EalPlan& plan) {
  SetLogLevel(cfg.logging.level);
  LogInfo(plan.hugepage_decision);
  LogInfo("EAL arguments: ", absl::StrJoin(plan.args, " "));
  std::vector<char*> argv;
  std::vector<std::string> args = plan.args;  // EAL may permute argv
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // SIGIO is for the polling workers (Worker::Run unblocks it there): net_tap
  // counts it to know its queues have frames, and the kernel prefers the main
  // thread for a process signal; asleep here, it would wake first and the
  // workers would see the frames late. Blocked before EAL starts its threads,
  // which inherit the mask.
  sigset_t io;
  sigemptyset(&io);
  sigaddset(&io, SIGIO);
  pthread_sigmask(SIG_BLOCK, &io, nullptr);
  if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0) {
    return absl::InternalError(absl::StrCat("rte_eal_init failed: ", rte_strerror(rte_errno),
                                            " (arguments: ", absl::StrJoin(plan.args, " "), ")"));
  }
  absl::Status status;
  if (cfg.telemetry.enabled) status = RegisterTelemetryCommands();
  if (status.ok()) status = Serve(cfg);
  const int rc = rte_eal_cleanup();
  if (rc != 0 && status.ok()) {
    status = absl::InternalError(absl::StrCat("rte_eal_cleanup failed: ", rte_strerror(-rc)));
  }
  if (plan.remove_hugepage_files_at_exit) {
    // What --huge-unlink would have done (EAL refuses it beside
    // --single-file-segments): the pages go back to the pool now, not at the
    // next start with this prefix.
    int failed = 0;
    const int removed = RemoveHugepageFiles(plan.file_prefix, &failed);
    LogInfo("removed ", removed, " hugepage file(s) of file prefix '", plan.file_prefix, "'");
    if (failed != 0) {
      LogWarning("could not remove ", failed, " hugepage file(s) of file prefix '",
                 plan.file_prefix, "' (hugetlbfs mounts in /proc/mounts)");
    }
  }
  if (status.ok()) LogInfo("stopped cleanly");
  return status;
}

}  // namespace iwarp::dataplane
