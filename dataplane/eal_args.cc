#include "dataplane/eal_args.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace iwarp::dataplane {

namespace {

// A mount table field as the kernel writes it: space, tab, newline and
// backslash as three octal digits after a backslash (\040 for a space;
// fstab(5)). Anything else is kept as written.
std::string UnescapeMountField(std::string_view f) {
  std::string out;
  out.reserve(f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '\\' && i + 3 < f.size() && f[i + 1] >= '0' && f[i + 1] <= '3' &&
        f[i + 2] >= '0' && f[i + 2] <= '7' && f[i + 3] >= '0' && f[i + 3] <= '7') {
      const int c = (f[i + 1] - '0') * 64 + (f[i + 2] - '0') * 8 + (f[i + 3] - '0');
      out.push_back(static_cast<char>(c));
      i += 3;
    } else {
      out.push_back(f[i]);
    }
  }
  return out;
}

// The mount points of every hugetlbfs mount in a mount table, in its order.
std::vector<std::string> HugetlbfsMounts(const std::string& mounts_path) {
  std::vector<std::string> out;
  std::ifstream mounts(mounts_path);
  std::string line;
  while (std::getline(mounts, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() >= 3 && f[2] == "hugetlbfs") out.push_back(UnescapeMountField(f[1]));
  }
  return out;
}

}  // namespace

HugepageInfo ProbeHugepages(const std::string& mounts_path, const std::string& meminfo_path) {
  HugepageInfo info;
  const std::vector<std::string> mounts = HugetlbfsMounts(mounts_path);
  if (!mounts.empty()) {
    info.mounted = true;
    info.mount_point = mounts.front();
  }
  std::string line;
  std::ifstream meminfo(meminfo_path);
  while (std::getline(meminfo, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 2) continue;
    uint64_t v = 0;
    if (!absl::SimpleAtoi(f[1], &v)) continue;
    if (f[0] == "HugePages_Free:") info.free_pages = v;
    if (f[0] == "Hugepagesize:") info.page_size_bytes = v * 1024;  // "kB"
  }
  return info;
}

int RemoveHugepageFiles(const std::string& prefix, int* failed, const std::string& mounts_path) {
  *failed = 0;
  if (prefix.empty()) return 0;
  const std::string stem = prefix + "map_";
  int removed = 0;
  for (const std::string& mount : HugetlbfsMounts(mounts_path)) {
    DIR* dir = opendir(mount.c_str());
    if (dir == nullptr) continue;
    while (const dirent* e = readdir(dir)) {
      const std::string_view name(e->d_name);
      if (name.substr(0, stem.size()) != stem) continue;
      const std::string_view n = name.substr(stem.size());
      if (n.empty() || !std::all_of(n.begin(), n.end(), absl::ascii_isdigit)) continue;
      if (unlinkat(dirfd(dir), e->d_name, 0) == 0) {
        ++removed;
      } else {
        ++*failed;
      }
    }
    closedir(dir);
  }
  return removed;
}

std::string EthdevName(const config::PortConfig& port) {
  if (!port.pci.empty()) return port.pci;
  return port.vdev.substr(0, port.vdev.find(','));
}

namespace {

int EalLogLevel(config::LogLevel l) {
  // RTE_LOG_ERR .. RTE_LOG_DEBUG
  switch (l) {
    case config::LogLevel::kError: return 4;
    case config::LogLevel::kWarning: return 5;
    case config::LogLevel::kNotice: return 6;
    case config::LogLevel::kInfo: return 6;  // DPDK's own info level is per-packet chatty
    case config::LogLevel::kDebug: return 8;
  }
  return 6;
}

}  // namespace

absl::StatusOr<EalPlan> BuildEalPlan(const config::Config& cfg, const HugepageInfo& huge,
                                     const std::string& program) {
  EalPlan plan;
  std::vector<std::string>& a = plan.args;
  a.push_back(program);

  std::vector<uint32_t> lcores = cfg.workers.lcores;
  lcores.push_back(cfg.eal.main_lcore);
  std::sort(lcores.begin(), lcores.end());
  lcores.erase(std::unique(lcores.begin(), lcores.end()), lcores.end());
  if (cfg.eal.cpus.empty()) {
    a.insert(a.end(), {"-l", absl::StrJoin(lcores, ",")});
  } else {
    // Every lcore may run on any of the CPUs (more lcores than CPUs).
    a.insert(a.end(), {"--lcores", absl::StrCat("(", absl::StrJoin(lcores, ","), ")@(",
                                                 absl::StrJoin(cfg.eal.cpus, ","), ")")});
  }
  a.insert(a.end(), {"--main-lcore", absl::StrCat(cfg.eal.main_lcore), "--file-prefix",
                     cfg.eal.file_prefix});
  plan.file_prefix = cfg.eal.file_prefix;

  // The machine's own NIC is a PCI device: it is probed only when the config
  // names PCI ports, and then only those.
  bool any_pci = false;
  for (const config::PortConfig& p : cfg.ports) {
    if (!p.pci.empty()) {
      a.insert(a.end(), {"-a", p.pci});
      any_pci = true;
    }
  }
  if (!any_pci) a.push_back("--no-pci");
  for (const config::PortConfig& p : cfg.ports) {
    if (!p.vdev.empty()) a.insert(a.end(), {"--vdev", p.vdev});
  }
  a.push_back(absl::StrCat("--log-level=", EalLogLevel(cfg.logging.level)));

  const uint64_t need_bytes = uint64_t{cfg.eal.memory_mb} << 20;
  const uint64_t free_bytes = huge.free_pages * huge.page_size_bytes;
  const std::string have = absl::StrCat(
      huge.mounted ? absl::StrCat("hugetlbfs on ", huge.mount_point) : "no hugetlbfs mount",
      ", ", huge.free_pages, " free pages of ", huge.page_size_bytes >> 10, " kB (",
      free_bytes >> 20, " MiB), need ", cfg.eal.memory_mb, " MiB");
  const bool enough = huge.mounted && huge.page_size_bytes > 0 && free_bytes >= need_bytes;
  switch (cfg.eal.hugepages) {
    case config::HugepageMode::kOn:
      if (!enough) {
        return absl::FailedPreconditionError(
            absl::StrCat("eal.hugepages is 'on' but hugepages are not available: ", have,
                         " (reserve pages, e.g. tools/setup.sh --hugepages N, or use 'auto')"));
      }
      plan.use_hugepages = true;
      plan.hugepage_decision = absl::StrCat("hugepages: on (", have, ")");
      break;
    case config::HugepageMode::kAuto:
      plan.use_hugepages = enough;
      plan.hugepage_decision =
          enough ? absl::StrCat("hugepages: auto -> using hugepages (", have, ")")
                 : absl::StrCat("hugepages: auto -> falling back to --no-huge (", have, ")");
      break;
    case config::HugepageMode::kOff:
      plan.use_hugepages = false;
      plan.hugepage_decision = "hugepages: off -> --no-huge";
      break;
  }
  const std::string mem = absl::StrCat(cfg.eal.memory_mb);
  if (plan.use_hugepages) {
    a.insert(a.end(), {"-m", mem});
    // EAL refuses --huge-unlink beside --single-file-segments (which a
    // net_memif zero-copy client needs): the daemon then removes its files
    // itself when it stops cleanly (after a crash, the next start with the
    // same file prefix does). An operator's own --huge-unlink=MODE wins.
    const auto& x = cfg.eal.extra_args;
    const bool own_mode = std::any_of(x.begin(), x.end(), [](const std::string& s) {
      return absl::StartsWith(s, "--huge-unlink");
    });
    const bool single_file = std::find(x.begin(), x.end(), "--single-file-segments") != x.end();
    if (own_mode) {
      absl::StrAppend(&plan.hugepage_decision,
                      "; no --huge-unlink (eal.extra_args has its own --huge-unlink=MODE)");
    } else if (single_file) {
      plan.remove_hugepage_files_at_exit = true;
      absl::StrAppend(&plan.hugepage_decision,
                      "; no --huge-unlink (eal.extra_args has --single-file-segments, which "
                      "EAL refuses beside it): the hugepage files are removed when the "
                      "daemon stops cleanly (after a crash, by the next start with this "
                      "file prefix)");
    } else {
      a.push_back("--huge-unlink");
    }
  } else {
    // --no-shconf, not --in-memory: the latter fails together with --no-huge.
    a.insert(a.end(), {"--no-huge", "-m", mem, "--no-shconf"});
  }
  if (!cfg.telemetry.enabled) a.push_back("--no-telemetry");
  a.insert(a.end(), cfg.eal.extra_args.begin(), cfg.eal.extra_args.end());
  return plan;
}

}  // namespace iwarp::dataplane
