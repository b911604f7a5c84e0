#include "dataplane/eal_args.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace iwarp::dataplane {
namespace {

config::Config TapConfig() {
  config::Config c;
  c.eal.main_lcore = 0;
  c.eal.memory_mb = 256;
  c.eal.file_prefix = "iwarpd";
  config::PortConfig p;
  p.name = "tap0";
  p.vdev = "net_tap0,iface=iw0";
  c.ports.push_back(p);
  c.workers.lcores = {1};
  return c;
}

HugepageInfo Huge(uint64_t free_pages) {
  return HugepageInfo{true, "/dev/hugepages", 2u << 20, free_pages};
}

std::string Joined(const EalPlan& p) { return absl::StrJoin(p.args, " "); }

TEST(EalArgs, TapWithoutHugepagesFallsBack) {
  auto plan = BuildEalPlan(TapConfig(), HugepageInfo{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->use_hugepages);
  EXPECT_EQ(Joined(*plan),
            "iwarpd -l 0,1 --main-lcore 0 --file-prefix iwarpd --no-pci "
            "--vdev net_tap0,iface=iw0 --log-level=6 --no-huge -m 256 --no-shconf");
  EXPECT_NE(plan->hugepage_decision.find("falling back to --no-huge"), std::string::npos);
  EXPECT_NE(plan->hugepage_decision.find("no hugetlbfs mount"), std::string::npos);
}

TEST(EalArgs, LcoresFloatOverTheConfiguredCpus) {
  config::Config c = TapConfig();
  c.workers.lcores = {1, 2};
  c.eal.cpus = {0, 1};
  auto plan = BuildEalPlan(c, HugepageInfo{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Joined(*plan),
            "iwarpd --lcores (0,1,2)@(0,1) --main-lcore 0 --file-prefix iwarpd --no-pci "
            "--vdev net_tap0,iface=iw0 --log-level=6 --no-huge -m 256 --no-shconf");
}

TEST(EalArgs, AutoUsesHugepagesWhenEnoughAreFree) {
  auto plan = BuildEalPlan(TapConfig(), Huge(128));  // exactly 256 MiB
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->use_hugepages);
  EXPECT_EQ(Joined(*plan),
            "iwarpd -l 0,1 --main-lcore 0 --file-prefix iwarpd --no-pci "
            "--vdev net_tap0,iface=iw0 --log-level=6 -m 256 --huge-unlink");
}

TEST(EalArgs, SingleFileSegmentsOrOwnHugeUnlinkDropTheGeneratedHugeUnlink) {
  // EAL fails at start-up on --single-file-segments with --huge-unlink (the
  // former is what a net_memif zero-copy client needs).
  config::Config c = TapConfig();
  c.eal.extra_args = {"--single-file-segments"};
  auto plan = BuildEalPlan(c, Huge(128));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Joined(*plan),
            "iwarpd -l 0,1 --main-lcore 0 --file-prefix iwarpd --no-pci "
            "--vdev net_tap0,iface=iw0 --log-level=6 -m 256 --single-file-segments");
  EXPECT_NE(plan->hugepage_decision.find("no --huge-unlink"), std::string::npos)
      << plan->hugepage_decision;
  // The daemon removes the files itself when it stops.
  EXPECT_TRUE(plan->remove_hugepage_files_at_exit);
  EXPECT_EQ(plan->file_prefix, "iwarpd");
  EXPECT_NE(plan->hugepage_decision.find("removed when the daemon stops"), std::string::npos)
      << plan->hugepage_decision;
  c.eal.extra_args = {"--huge-unlink=never"};
  plan = BuildEalPlan(c, Huge(128));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Joined(*plan),
            "iwarpd -l 0,1 --main-lcore 0 --file-prefix iwarpd --no-pci "
            "--vdev net_tap0,iface=iw0 --log-level=6 -m 256 --huge-unlink=never");
  // The operator's own mode wins, also beside --single-file-segments.
  EXPECT_FALSE(plan->remove_hugepage_files_at_exit);
  c.eal.extra_args = {"--single-file-segments", "--huge-unlink=never"};
  plan = BuildEalPlan(c, Huge(128));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->remove_hugepage_files_at_exit);
  // Without hugepages there is nothing to unlink either way.
  c.eal.hugepages = config::HugepageMode::kOff;
  c.eal.extra_args = {"--single-file-segments"};
  plan = BuildEalPlan(c, Huge(128));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->hugepage_decision.find("no --huge-unlink"), std::string::npos);
  EXPECT_FALSE(plan->remove_hugepage_files_at_exit);
  // With --huge-unlink generated, nothing to remove at exit.
  plan = BuildEalPlan(TapConfig(), Huge(128));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->remove_hugepage_files_at_exit);
}

TEST(EalArgs, RemoveHugepageFilesTakesOnlyThisPrefixsFilesFromHugetlbfsMounts) {
  // Two directories stand in for hugetlbfs mounts (the mount table names the
  // file system; the removal reads nothing else of it), a third is a tmpfs.
  const std::filesystem::path root =
      std::filesystem::path(::testing::TempDir()) / ("hugefiles_" + std::to_string(getpid()));
  std::filesystem::remove_all(root);
  // The second one's path has a space and a backslash, which the mount
  // table writes as \040 and \134.
  const auto h1 = root / "huge1", h2 = root / "huge 2\\x", t = root / "tmp";
  for (const auto& d : {h1, h2, t}) std::filesystem::create_directories(d);
  auto touch = [](const std::filesystem::path& p) { FILE* f = fopen(p.c_str(), "w"); fclose(f); };
  for (const char* n : {"pmap_0", "pmap_17", "p2map_0", "pmap_", "pmap_1x", "xpmap_0", "pmap"}) {
    touch(h1 / n);
  }
  touch(h2 / "pmap_3");
  touch(t / "pmap_0");
  const auto mounts = root / "mounts";
  {
    FILE* f = fopen(mounts.c_str(), "w");
    fprintf(f, "proc /proc proc rw 0 0\n");
    fprintf(f, "nodev %s hugetlbfs rw,relatime,pagesize=2M 0 0\n", h1.c_str());
    fprintf(f, "tmpfs %s tmpfs rw 0 0\n", t.c_str());
    const std::string escaped =
        absl::StrReplaceAll(h2.string(), {{"\\", "\\134"}, {" ", "\\040"}});
    fprintf(f, "nodev %s hugetlbfs rw,relatime,pagesize=1024M 0 0\n", escaped.c_str());
    fprintf(f, "nodev %s/missing hugetlbfs rw 0 0\n", root.c_str());
    fclose(f);
  }
  int failed = -1;
  EXPECT_EQ(RemoveHugepageFiles("p", &failed, mounts.string()), 3);
  EXPECT_EQ(failed, 0);
  for (const char* n : {"pmap_0", "pmap_17"}) EXPECT_FALSE(std::filesystem::exists(h1 / n)) << n;
  EXPECT_FALSE(std::filesystem::exists(h2 / "pmap_3"));
  // Another prefix's files, names that are not EAL's, and other file systems stay.
  for (const char* n : {"p2map_0", "pmap_", "pmap_1x", "xpmap_0", "pmap"}) {
    EXPECT_TRUE(std::filesystem::exists(h1 / n)) << n;
  }
  EXPECT_TRUE(std::filesystem::exists(t / "pmap_0"));
  // Nothing left of ours: a second call removes nothing.
  EXPECT_EQ(RemoveHugepageFiles("p", &failed, mounts.string()), 0);
  EXPECT_EQ(RemoveHugepageFiles("", &failed, mounts.string()), 0);
  std::filesystem::remove_all(root);
}

TEST(EalArgs, AutoFallsBackWhenTooFewAreFree) {
  auto plan = BuildEalPlan(TapConfig(), Huge(127));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->use_hugepages);
  EXPECT_NE(plan->hugepage_decision.find("127 free pages"), std::string::npos)
      << plan->hugepage_decision;
}

TEST(EalArgs, OnFailsWithoutHugepagesAndOffNeverUsesThem) {
  config::Config c = TapConfig();
  c.eal.hugepages = config::HugepageMode::kOn;
  auto on = BuildEalPlan(c, Huge(1));
  ASSERT_FALSE(on.ok());
  EXPECT_EQ(on.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(on.status().message().find("need 256 MiB"), std::string::npos);
  c.eal.hugepages = config::HugepageMode::kOff;
  auto off = BuildEalPlan(c, Huge(100000));
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->use_hugepages);
  EXPECT_NE(Joined(*off).find("--no-huge -m 256 --no-shconf"), std::string::npos);
}

TEST(EalArgs, PciPortsAreAllowListedAndDisableNoPci) {
  config::Config c = TapConfig();
  config::PortConfig pci;
  pci.name = "nic";
  pci.pci = "0000:03:00.0";
  c.ports.push_back(pci);
  c.workers.lcores = {3, 2};
  c.eal.main_lcore = 1;
  c.eal.extra_args = {"--log-level=pmd.net.tap:8"};
  c.telemetry.enabled = false;
  auto plan = BuildEalPlan(c, HugepageInfo{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Joined(*plan),
            "iwarpd -l 1,2,3 --main-lcore 1 --file-prefix iwarpd -a 0000:03:00.0 "
            "--vdev net_tap0,iface=iw0 --log-level=6 --no-huge -m 256 --no-shconf "
            "--no-telemetry --log-level=pmd.net.tap:8");
}

TEST(EalArgs, EthdevNames) {
  config::PortConfig p;
  p.vdev = "net_tap0,iface=iw0";
  EXPECT_EQ(EthdevName(p), "net_tap0");
  p.vdev = "net_null1";
  EXPECT_EQ(EthdevName(p), "net_null1");
  p.vdev.clear();
  p.pci = "0000:03:00.0";
  EXPECT_EQ(EthdevName(p), "0000:03:00.0");
}

void WriteFile(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

TEST(EalArgs, ProbeParsesMountsAndMeminfo) {
  const std::string dir = ::testing::TempDir() + "/iwarpd_probe_" + std::to_string(getpid());
  ASSERT_EQ(mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST, true);
  WriteFile(dir + "/mounts",
            "proc /proc proc rw,nosuid 0 0\n"
            "nodev /mnt/huge hugetlbfs rw,relatime,pagesize=2M 0 0\n");
  WriteFile(dir + "/meminfo",
            "MemTotal:       24000000 kB\n"
            "HugePages_Total:      64\n"
            "HugePages_Free:       60\n"
            "Hugepagesize:       2048 kB\n");
  HugepageInfo h = ProbeHugepages(dir + "/mounts", dir + "/meminfo");
  EXPECT_TRUE(h.mounted);
  EXPECT_EQ(h.mount_point, "/mnt/huge");
  EXPECT_EQ(h.free_pages, 60u);
  EXPECT_EQ(h.page_size_bytes, 2u << 20);

  WriteFile(dir + "/mounts", "proc /proc proc rw 0 0\n");
  h = ProbeHugepages(dir + "/mounts", dir + "/does-not-exist");
  EXPECT_FALSE(h.mounted);
  EXPECT_EQ(h.free_pages, 0u);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace iwarp::dataplane
