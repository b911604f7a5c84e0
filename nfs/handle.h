// NFS file handles of iwarp-nfsd: opaque to clients, stable across server
// restarts, and unforgeable.
//
// Layout (all of it inside NFS3_FHSIZE = 64 bytes):
//   0      version (1)
//   1      handle_bytes: length of the kernel handle (<= kMaxKernelHandle)
//   2..3   zero
//   4..7   export id (big-endian)
//   8..11  handle_type of the kernel handle (big-endian, as name_to_handle_at gave it)
//   12..   the kernel handle's f_handle bytes
//   then   16 bytes: HMAC-SHA256(secret, every byte before), truncated (RFC 2104)
//
// The kernel handle (name_to_handle_at(2)) names the inode and its
// generation; it survives restarts and goes stale (ESTALE from
// open_by_handle_at) once the inode is freed or reused. The HMAC, keyed by a
// per-server secret kept in the state directory, binds the kernel handle to
// the export id: a client can neither make up a handle nor move one of ours
// to another export. Without the secret nothing verifies.
#ifndef IWARPD_NFS_HANDLE_H_
#define IWARPD_NFS_HANDLE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/bytes.h"
#include "nfs/nfs_xdr.h"

namespace iwarp::nfs {

inline constexpr size_t kSecretBytes = 32;
inline constexpr size_t kHandleMacBytes = 16;
inline constexpr size_t kHandleHeaderBytes = 12;
inline constexpr size_t kMaxKernelHandle = kFhSize - kHandleHeaderBytes - kHandleMacBytes;  // 36
inline constexpr uint8_t kHandleVersion = 1;

using Secret = std::array<uint8_t, kSecretBytes>;

// RFC 2104 HMAC with SHA-256 (FIPS 198-1).
std::array<uint8_t, 32> HmacSha256(ByteSpan key, ByteSpan message);

// Reads STATE_DIR/handle.key (32 bytes, mode 0600), creating it from
// getrandom(2) when it does not exist. Errors name the file.
absl::StatusOr<Secret> LoadOrCreateSecret(const std::string& state_dir);

struct KernelHandle {
  int32_t handle_type = 0;
  uint32_t length = 0;
  std::array<uint8_t, kMaxKernelHandle> bytes{};
};

enum class HandleCheck : uint8_t {
  kOk,
  kBadLength,   // not a handle of ours by its size or version: NFS3ERR_BADHANDLE
  kBadMac,      // forged or altered: NFS3ERR_BADHANDLE
};

class HandleCodec {
 public:
  explicit HandleCodec(const Secret& secret) : secret_(secret) {}

  // False if the kernel handle is longer than kMaxKernelHandle.
  bool Encode(uint32_t export_id, const KernelHandle& kh, Fh3* out) const;
  HandleCheck Verify(const Fh3& fh, uint32_t* export_id, KernelHandle* kh) const;

 private:
  Secret secret_;
};

}  // namespace iwarp::nfs

#endif  // IWARPD_NFS_HANDLE_H_
