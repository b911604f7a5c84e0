// EAL command line built from the validated config, and the hugepage
// decision behind it. No DPDK: unit-tested without an EAL.
#ifndef IWARPD_DATAPLANE_EAL_ARGS_H_
#define IWARPD_DATAPLANE_EAL_ARGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"

namespace iwarp::dataplane {

// What the machine offers, read from /proc (ProbeHugepages) or made up by
// tests.
struct HugepageInfo {
  bool mounted = false;          // a hugetlbfs mount exists
  std::string mount_point;       // first hugetlbfs mount
  uint64_t page_size_bytes = 0;  // default hugepage size
  uint64_t free_pages = 0;       // free pages of the default size
};

// Reads the mount table and meminfo (the /proc files unless tests pass
// others). Never fails: missing files mean no hugepages.
HugepageInfo ProbeHugepages(const std::string& mounts_path = "/proc/mounts",
                            const std::string& meminfo_path = "/proc/meminfo");

struct EalPlan {
  std::vector<std::string> args;  // args[0] is the program name
  bool use_hugepages = false;
  std::string hugepage_decision;  // one line for the start-up log
  // No --huge-unlink because of --single-file-segments: the daemon removes
  // its hugepage files itself once EAL is cleaned up (RemoveHugepageFiles).
  bool remove_hugepage_files_at_exit = false;
  std::string file_prefix;
};

// Builds the EAL arguments:
//   -l MAIN,WORKERS --main-lcore MAIN --file-prefix P
//   --no-pci | -a PCI... ; --vdev SPEC... ; --log-level N
//   hugepages: -m MB --huge-unlink   (no hugepage files outlive the process;
//              left out when eal.extra_args has --single-file-segments, which
//              EAL refuses beside it: then remove_hugepage_files_at_exit; or
//              its own --huge-unlink=MODE, which the daemon leaves alone)
//   none:      --no-huge -m MB --no-shconf
//   [--no-telemetry] then eal.extra_args verbatim.
// hugepages auto uses hugepages when hugetlbfs is mounted and its free pages
// cover eal.memory_mb, else falls back (and says why in hugepage_decision);
// on fails with FailedPrecondition when they are missing; off never uses them.
absl::StatusOr<EalPlan> BuildEalPlan(const config::Config& cfg, const HugepageInfo& huge,
                                     const std::string& program = "iwarpd");

// Removes the hugepage files EAL names for file prefix `prefix`
// ("PREFIXmap_N", N decimal) from every hugetlbfs mount in `mounts_path`:
// what --huge-unlink would have done, for a daemon that could not use it.
// Only after rte_eal_cleanup (a live mapping keeps its pages; only the names
// go). Returns how many it removed; `failed` counts names it could not.
int RemoveHugepageFiles(const std::string& prefix, int* failed,
                        const std::string& mounts_path = "/proc/mounts");

// The DPDK device name of a port: the vdev driver instance ("net_tap0" of
// "net_tap0,iface=iw0") or the PCI address.
std::string EthdevName(const config::PortConfig& port);

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_EAL_ARGS_H_
