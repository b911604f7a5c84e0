// Fuzz target `mount_dispatch`: arbitrary argument bytes for MOUNT v3 NULL, MNT, DUMP, UMNT, UMNTALL, EXPORT
// through the real dispatcher. Input format and checks: nfs_fuzz_common.h.
#include <cstddef>
#include <cstdint>

#include "nfs/nfs_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static constexpr uint32_t kProcs[] = {0, 1, 2, 3, 4, 5};
  iwarp::nfs::fuzz::RunOne(iwarp::nfs::fuzz::Program::kMount, kProcs, data, size);
  return 0;
}
