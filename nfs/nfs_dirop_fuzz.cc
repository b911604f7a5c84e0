// Fuzz target `nfs_dirop`: arbitrary argument bytes for SETATTR, LOOKUP,
// CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK
// through the real dispatcher. Input format and checks: nfs_fuzz_common.h.
#include <cstddef>
#include <cstdint>

#include "nfs/nfs_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static constexpr uint32_t kProcs[] = {2, 3, 8, 9, 10, 11, 12, 13, 14, 15};
  iwarp::nfs::fuzz::RunOne(iwarp::nfs::fuzz::Program::kNfs, kProcs, data, size);
  return 0;
}
