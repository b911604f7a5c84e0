// A child process for the iwarp-perf tests: the shipped binary, fork/exec'd,
// its stdout and stderr collected. Test-only.
#ifndef IWARPD_TOOLS_PERF_PERF_CHILD_H_
#define IWARPD_TOOLS_PERF_PERF_CHILD_H_

#include <cstdlib>
#include <string>
#include <vector>

#include "common/testing/child_process.h"

namespace iwarp::perf_testing {

inline std::string PerfBinary() {
  const char* p = getenv("IWARP_PERF");
  return p != nullptr ? p : "tools/perf/iwarp-perf";
}

// The shipped binary as a child process; stdout and stderr collected.
class Child : public testutil::ChildProcess {
 public:
  explicit Child(const std::vector<std::string>& args) : ChildProcess(args, Stderr::kMerge) {}
};

}  // namespace iwarp::perf_testing

#endif  // IWARPD_TOOLS_PERF_PERF_CHILD_H_
