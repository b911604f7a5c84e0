// The file-system side of iwarp-nfsd: executes one NFSv3 procedure against
// the exported directories, in the calling thread (an I/O worker), with the
// caller's AUTH_SYS identity.
//
// Containment (no `..`, symlink or handle trick leaves an export):
//  - A handle is accepted only with a valid MAC for an export this server
//    has (handle.h), from a client that export allows; it is opened with
//    open_by_handle_at(2) relative to that export's root, and must be on the
//    export's file system (st_dev) or it is NFS3ERR_STALE.
//  - Names are single components: empty names and names with '/' or NUL are
//    refused before any system call. LOOKUP resolves with openat2(2)
//    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
//    RESOLVE_NO_XDEV and O_PATH | O_NOFOLLOW: the server never follows a
//    symlink (clients READLINK and resolve it themselves) and never crosses
//    into another mount. LOOKUP of ".." in an export root returns the root.
//  - Every other name operation is an *at(2) call relative to a directory
//    fd that came from a verified handle, so the name cannot escape either.
//  Known limit (as Linux knfsd's no_subtree_check): a handle we issued stays
//  valid if the file is later moved, by someone on the server, out of the
//  export within the same file system.
//
// Identity: each operation runs with the thread's fsuid / fsgid /
// supplementary groups set to the caller's (raw setfsuid, setfsgid,
// setgroups system calls: per thread, unlike glibc's setgroups), with
// root squash and AUTH_NONE mapped to the export's anonymous ids, so the
// kernel makes every permission decision. Handles are opened as root first
// (open_by_handle_at needs CAP_DAC_READ_SEARCH, which a non-zero fsuid
// drops); files are then reopened through /proc/self/fd under the caller's
// identity, which is where the kernel checks access.
#ifndef IWARPD_NFS_FS_H_
#define IWARPD_NFS_FS_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "common/bytes.h"
#include "nfs/exports.h"
#include "nfs/handle.h"
#include "nfs/nfs_xdr.h"

namespace iwarp::nfs {

// The caller as the RPC credential names it.
struct Caller {
  bool auth_sys = false;  // false: AUTH_NONE (anonymous)
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t gid_count = 0;
  std::array<uint32_t, 16> gids{};
  uint32_t peer_ipv4 = 0;
};

using NfsArgs = std::variant<std::monostate, FhArgs, SetattrArgs, DirOpArgs, AccessArgs, ReadArgs, WriteArgs,
                             CreateArgs, MkdirArgs, SymlinkArgs, MknodArgs, RenameArgs, LinkArgs, ReaddirArgs,
                             ReaddirplusArgs, CommitArgs>;
using NfsResult = std::variant<std::monostate, GetattrRes, WccRes, LookupRes, AccessRes, ReadlinkRes, ReadRes,
                               WriteRes, CreateRes, RenameRes, LinkRes, ReaddirRes, ReaddirplusRes, FsstatRes,
                               FsinfoRes, PathconfRes, CommitRes>;

// Decodes the arguments of NFSv3 procedure `proc` (1..21; NULL has none).
// False on GARBAGE_ARGS.
bool DecodeNfsArgs(uint32_t proc, XdrDecoder& d, NfsArgs* out);
// Encodes a result (what the procedure's reply carries after the RPC header).
void EncodeNfsResult(XdrEncoder& e, const NfsResult& r);
// The status of a result.
NfsStat3 ResultStatus(const NfsResult& r);
// True for procedures that change the file system (refused on a read-only
// export, cached by the DRC).
bool IsModifying(uint32_t proc);

inline constexpr uint32_t kMaxIo = 1u << 20;        // rtmax / wtmax
inline constexpr uint32_t kMaxDirReply = 64 * 1024;  // READDIR count / READDIRPLUS maxcount cap

class FileSystem {
 public:
  // Opens every export root (O_PATH); the config and codec outlive this.
  static absl::StatusOr<std::unique_ptr<FileSystem>> Open(const NfsdConfig& config, const HandleCodec& codec,
                                                          const Verf8& write_verifier);
  ~FileSystem();
  FileSystem(const FileSystem&) = delete;
  FileSystem& operator=(const FileSystem&) = delete;

  // Runs procedure `proc` (1..21) with decoded `args`. READ places its data
  // in `read_buf` (at least kMaxIo bytes) and the result references it.
  // Thread-safe: any number of workers may call it at once.
  NfsResult Execute(uint32_t proc, const NfsArgs& args, const Caller& caller, MutableByteSpan read_buf) const;

  // The root handle of an export, for MNT; nullptr if there is none.
  const Fh3* RootHandle(uint32_t export_id) const;

  struct Root;      // an export's root directory (fs.cc)
  struct Resolved;  // a handle opened (fs.cc)

 private:
  FileSystem(const HandleCodec& codec, const Verf8& verf);

  NfsStat3 Resolve(const Fh3& fh, const Caller& caller, Resolved* out) const;
  bool MakeHandle(const Root& root, int fd, const char* name, Fh3* out) const;

  const HandleCodec& codec_;
  Verf8 write_verifier_;
  std::vector<std::unique_ptr<Root>> roots_;

  friend class FsOp;
};

}  // namespace iwarp::nfs

#endif  // IWARPD_NFS_FS_H_
