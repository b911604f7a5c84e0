// iwarpd: the iWARP / RDMA-over-SCTP data-plane daemon.
//
//   iwarpd --config FILE        run until SIGINT/SIGTERM
//   iwarpd --check-config FILE  validate FILE, print the EAL plan, exit 0/1
//   iwarpd --help | --version
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/str_join.h"
#include "config/config.h"
#include "dataplane/daemon.h"
#include "dataplane/eal_args.h"

namespace {

constexpr char kUsage[] =
    "usage: iwarpd --config FILE\n"
    "       iwarpd --check-config FILE\n"
    "       iwarpd --help | --version\n"
    "\n"
    "  --config FILE        load FILE (YAML, schema v1), start the data plane and run\n"
    "                       until SIGINT or SIGTERM; exit 0 after a clean shutdown\n"
    "  --check-config FILE  validate FILE, print the EAL arguments it would use and\n"
    "                       exit 0, or print the error and exit 1\n"
    "  --help               this text\n"
    "  --version            the version\n"
    "\n"
    "Statistics: iwarpctl [--prefix FILE_PREFIX] stats|ports\n";

int Usage(int rc) {
  std::fputs(kUsage, rc == 0 ? stdout : stderr);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  namespace dp = iwarp::dataplane;
  std::string_view mode;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--help" || a == "-h") return Usage(0);
    if (a == "--version") {
      std::printf("iwarpd %s\n", IWARPD_VERSION);
      return 0;
    }
    if ((a == "--config" || a == "--check-config") && i + 1 < argc && mode.empty()) {
      mode = a;
      file = argv[++i];
      continue;
    }
    std::fprintf(stderr, "iwarpd: unexpected argument '%s'\n", argv[i]);
    return Usage(2);
  }
  if (mode.empty()) return Usage(2);

  absl::StatusOr<iwarp::config::Config> cfg = iwarp::config::LoadConfigFile(file);
  if (!cfg.ok()) {
    std::fprintf(stderr, "iwarpd: %s\n", std::string(cfg.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<dp::EalPlan> plan = dp::BuildEalPlan(*cfg, dp::ProbeHugepages(), argv[0]);
  if (!plan.ok()) {
    std::fprintf(stderr, "iwarpd: %s: %s\n", file.c_str(),
                 std::string(plan.status().message()).c_str());
    return 1;
  }
  if (mode == "--check-config") {
    std::printf("%s: OK (%zu ports, %zu interfaces, %zu workers)\n%s\nEAL arguments: %s\n",
                file.c_str(), cfg->ports.size(), cfg->interfaces.size(),
                cfg->workers.lcores.size(), plan->hugepage_decision.c_str(),
                absl::StrJoin(plan->args, " ").c_str());
    return 0;
  }
  dp::InstallStopSignalHandlers();
  absl::Status s = dp::RunDaemon(*cfg, *plan);
  if (!s.ok()) {
    std::fprintf(stderr, "iwarpd: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
