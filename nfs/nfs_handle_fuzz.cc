// Fuzz target `nfs_handle`: arbitrary argument bytes for GETATTR, ACCESS,
// READLINK, READ, READDIR, READDIRPLUS, FSSTAT, FSINFO, PATHCONF, COMMIT
// through the real dispatcher. Input format and checks: nfs_fuzz_common.h.
#include <cstddef>
#include <cstdint>

#include "nfs/nfs_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static constexpr uint32_t kProcs[] = {1, 4, 5, 6, 16, 17, 18, 19, 20, 21};
  iwarp::nfs::fuzz::RunOne(iwarp::nfs::fuzz::Program::kNfs, kProcs, data, size);
  return 0;
}
