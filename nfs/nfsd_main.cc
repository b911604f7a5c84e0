// iwarp-nfsd: the NFSv3 + MOUNT v3 server of the storage node.
//
//   iwarp-nfsd --config FILE        run (SIGTERM / SIGINT: stop;
//                                   SIGUSR1: write the counters to the stats
//                                   file and stderr)
//   iwarp-nfsd --check-config FILE  validate FILE and the exported
//                                   directories, print the first problem
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "nfs/exports.h"
#include "nfs/nfs_service.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: iwarp-nfsd --config FILE | --check-config FILE\n"
               "  SIGUSR1 writes the counters to stats_file (default STATE_DIR/stats) and stderr\n");
  return 2;
}

void WriteStats(const iwarp::nfs::NfsdConfig& c, const std::string& text) {
  const std::string path = c.stats_file.empty() ? c.state_dir + "/stats" : c.stats_file;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) std::fprintf(stderr, "iwarp-nfsd: %s: %s\n", path.c_str(), strerror(errno));
  std::fprintf(stderr, "%s", text.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return Usage();
  const std::string mode = argv[1];
  if (mode != "--config" && mode != "--check-config") return Usage();
  auto config = iwarp::nfs::LoadNfsdConfigFile(argv[2]);
  if (!config.ok()) {
    std::fprintf(stderr, "iwarp-nfsd: %s\n", std::string(config.status().message()).c_str());
    return 1;
  }
  if (absl::Status st = iwarp::nfs::CheckExportsOnHost(*config); !st.ok()) {
    std::fprintf(stderr, "iwarp-nfsd: %s: %s\n", argv[2], std::string(st.message()).c_str());
    return 1;
  }
  if (mode == "--check-config") {
    std::printf("%s: ok (%zu exports)\n", argv[2], config->exports.size());
    return 0;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGPIPE);
  // Blocked before any thread starts, so every thread inherits the mask.
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  auto nfsd = iwarp::nfs::Nfsd::Start(*config);
  if (!nfsd.ok()) {
    std::fprintf(stderr, "iwarp-nfsd: %s\n", std::string(nfsd.status().message()).c_str());
    return 1;
  }
  std::fprintf(stderr, "iwarp-nfsd: serving %zu exports: nfs port %u, mount port %u", config->exports.size(),
               (*nfsd)->nfs_port(), (*nfsd)->mount_port());
  if ((*nfsd)->rdma_enabled()) {
    std::fprintf(stderr, ", NFS/RDMA port %u (%s)", config->rdma.port, config->rdma.sctp ? "sctp" : "tcp");
  }
  std::fprintf(stderr, "\n");
  for (;;) {
    if (absl::Status st = (*nfsd)->Poll(100); !st.ok()) {
      std::fprintf(stderr, "iwarp-nfsd: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    signalfd_siginfo si;
    while (read(sfd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
      if (si.ssi_signo == SIGUSR1) WriteStats(*config, (*nfsd)->Stats());
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
        std::fprintf(stderr, "iwarp-nfsd: stopping\n");
        return 0;
      }
    }
  }
}
