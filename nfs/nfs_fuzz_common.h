// Shared harness of the nfs/ fuzz targets: arbitrary bytes as the arguments
// of an NFS v3 or MOUNT v3 call, through the real dispatcher (RpcServer +
// NfsService + FileSystem on a scratch export under /tmp, one I/O thread).
//
// Input: byte 0 picks the procedure among the target's family, byte 1 the
// handle put in front of the arguments (0: none, the bytes start with the
// handle; 1: the export root; 2: a regular file; 3: a symlink), then the
// rest of the arguments. Traps (beyond crashes and sanitizer reports) when:
//  - a call gets no reply, or more than one;
//  - the reply does not decode as an RPC reply with the call's XID;
//  - an accepted reply is neither GARBAGE_ARGS nor a SUCCESS whose results
//    decode completely as the procedure's result type (an NFS status from
//    RFC 1813's list, or a mountstat3).
#ifndef IWARPD_NFS_NFS_FUZZ_COMMON_H_
#define IWARPD_NFS_NFS_FUZZ_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace iwarp::nfs::fuzz {

enum class Program { kNfs, kMount };

// Runs one input; `procs` is the family (procedure numbers).
void RunOne(Program prog, std::span<const uint32_t> procs, const uint8_t* data, size_t size);

}  // namespace iwarp::nfs::fuzz

#endif  // IWARPD_NFS_NFS_FUZZ_COMMON_H_
