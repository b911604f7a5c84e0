// Fuzz target `nfs_write`: arbitrary argument bytes for WRITE (data taken as a span of the call)
// through the real dispatcher. Input format and checks: nfs_fuzz_common.h.
#include <cstddef>
#include <cstdint>

#include "nfs/nfs_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static constexpr uint32_t kProcs[] = {7};
  iwarp::nfs::fuzz::RunOne(iwarp::nfs::fuzz::Program::kNfs, kProcs, data, size);
  return 0;
}
