// One DPDK EAL per unit-test process, for tests that run real workers and
// ports (net_ring, net_null): no hugepages, no PCI, no shared config, a file
// prefix of the test's own (name + pid), and its runtime directory removed
// at the end. Register it once per test binary:
//
//   const auto* const kEal = RegisterEalTestEnvironment("worker_test");
//   ... if (!EalTestUp()) GTEST_SKIP() << EalTestError();
#ifndef IWARPD_DATAPLANE_EAL_TEST_ENV_H_
#define IWARPD_DATAPLANE_EAL_TEST_ENV_H_

#include <rte_eal.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::dataplane {

inline bool& EalTestUpFlag() {
  static bool up = false;
  return up;
}
inline std::string& EalTestErrorText() {
  static std::string error;
  return error;
}
inline bool EalTestUp() { return EalTestUpFlag(); }
inline const std::string& EalTestError() { return EalTestErrorText(); }

class EalTestEnvironment : public ::testing::Environment {
 public:
  explicit EalTestEnvironment(std::string name) : name_(std::move(name)) {}
  void SetUp() override {
    std::vector<std::string> args = {
        name_, "--no-huge", "-m", "64", "--no-shconf", "--no-pci", "--no-telemetry",
        "-l", "0", "--log-level=4", "--file-prefix", "iwt_" + name_ + "_" + std::to_string(getpid())};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
      EalTestErrorText() = "rte_eal_init failed (no EAL in this environment)";
      return;
    }
    EalTestUpFlag() = true;
  }
  void TearDown() override {
    if (!EalTestUp()) return;
    // The runtime directory is this process's own (unique file prefix).
    const std::string run_dir = rte_eal_get_runtime_dir();
    rte_eal_cleanup();
    std::error_code ec;
    std::filesystem::remove_all(run_dir, ec);
  }

 private:
  std::string name_;
};

inline const ::testing::Environment* RegisterEalTestEnvironment(const std::string& name) {
  return ::testing::AddGlobalTestEnvironment(new EalTestEnvironment(name));
}

}  // namespace iwarp::dataplane

#endif  // IWARPD_DATAPLANE_EAL_TEST_ENV_H_
