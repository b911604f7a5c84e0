#include "nfs/handle.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "nfs/text.h"
#include "common/sha256.h"

namespace iwarp::nfs {

std::array<uint8_t, 32> HmacSha256(ByteSpan key, ByteSpan message) {
  std::array<uint8_t, Sha256::kBlockBytes> k{};
  if (key.size() > k.size()) {
    const Sha256::Digest kd = Sha256::Hash(key);
    std::copy(kd.begin(), kd.end(), k.begin());
  } else {
    std::copy(key.begin(), key.end(), k.begin());
  }
  std::array<uint8_t, Sha256::kBlockBytes> pad;
  for (size_t i = 0; i < pad.size(); ++i) pad[i] = k[i] ^ 0x36;
  Sha256 inner;
  inner.Update(pad);
  inner.Update(message);
  const Sha256::Digest ih = inner.Finish();
  for (size_t i = 0; i < pad.size(); ++i) pad[i] = k[i] ^ 0x5c;
  Sha256 outer;
  outer.Update(pad);
  outer.Update(ih);
  return outer.Finish();
}

absl::StatusOr<Secret> LoadOrCreateSecret(const std::string& state_dir) {
  const std::string path = state_dir + "/handle.key";
  Secret s{};
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    const ssize_t n = read(fd, s.data(), s.size());
    close(fd);
    if (n != static_cast<ssize_t>(s.size())) {
      return absl::DataLossError(Cat(path, ": expected ", s.size(),
                                              " bytes of handle secret; remove it to make a new one "
                                              "(every file handle clients hold then goes stale)"));
    }
    return s;
  }
  if (errno != ENOENT) return absl::PermissionDeniedError(Cat(path, ": ", strerror(errno)));
  if (mkdir(state_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::PermissionDeniedError(Cat(state_dir, ": cannot create the state directory: ",
                                                    strerror(errno)));
  }
  if (getrandom(s.data(), s.size(), 0) != static_cast<ssize_t>(s.size())) {
    return absl::InternalError("getrandom failed");
  }
  const std::string tmp = path + ".tmp";
  fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return absl::PermissionDeniedError(Cat(tmp, ": ", strerror(errno)));
  const bool ok = write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size()) && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(Cat(path, ": cannot write the handle secret: ", strerror(errno)));
  }
  return s;
}

bool HandleCodec::Encode(uint32_t export_id, const KernelHandle& kh, Fh3* out) const {
  if (kh.length > kMaxKernelHandle) return false;
  uint8_t* p = out->data.data();
  p[0] = kHandleVersion;
  p[1] = static_cast<uint8_t>(kh.length);
  p[2] = 0;
  p[3] = 0;
  StoreBe32(p + 4, export_id);
  StoreBe32(p + 8, static_cast<uint32_t>(kh.handle_type));
  std::memcpy(p + kHandleHeaderBytes, kh.bytes.data(), kh.length);
  const size_t body = kHandleHeaderBytes + kh.length;
  const auto mac = HmacSha256(secret_, ByteSpan(p, body));
  std::memcpy(p + body, mac.data(), kHandleMacBytes);
  out->length = static_cast<uint32_t>(body + kHandleMacBytes);
  return true;
}

HandleCheck HandleCodec::Verify(const Fh3& fh, uint32_t* export_id, KernelHandle* kh) const {
  const uint8_t* p = fh.data.data();
  if (fh.length < kHandleHeaderBytes + kHandleMacBytes || p[0] != kHandleVersion || p[2] != 0 || p[3] != 0 ||
      p[1] > kMaxKernelHandle || fh.length != kHandleHeaderBytes + p[1] + kHandleMacBytes) {
    return HandleCheck::kBadLength;
  }
  const size_t body = kHandleHeaderBytes + p[1];
  const auto mac = HmacSha256(secret_, ByteSpan(p, body));
  // Constant-time compare: a timing oracle must not help forge a MAC.
  uint8_t diff = 0;
  for (size_t i = 0; i < kHandleMacBytes; ++i) diff |= static_cast<uint8_t>(mac[i] ^ p[body + i]);
  if (diff != 0) return HandleCheck::kBadMac;
  *export_id = LoadBe32(p + 4);
  kh->handle_type = static_cast<int32_t>(LoadBe32(p + 8));
  kh->length = p[1];
  std::memcpy(kh->bytes.data(), p + kHandleHeaderBytes, kh->length);
  return HandleCheck::kOk;
}

}  // namespace iwarp::nfs
