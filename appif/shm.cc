#include "appif/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace iwarp::appif {

namespace {
constexpr size_t kHugePage = 2u << 20;

absl::Status Errno(const char* what) {
  return absl::ErrnoToStatus(errno, what);
}
}  // namespace

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    Reset();
    fd_ = std::move(o.fd_);
    map_ = std::exchange(o.map_, nullptr);
    map_len_ = std::exchange(o.map_len_, 0);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    hugetlb_ = std::exchange(o.hugetlb_, false);
  }
  return *this;
}

void Mapping::Reset() {
  if (map_ != nullptr) munmap(map_, map_len_);
  map_ = nullptr;
  map_len_ = 0;
  data_ = nullptr;
  size_ = 0;
  fd_.Reset();
}

absl::StatusOr<Mapping> Mapping::CreateMemfd(const char* name, size_t bytes, bool hugetlb) {
  if (bytes == 0) return absl::InvalidArgumentError("zero-sized shared memory");
  Mapping m;
  size_t len = bytes;
  int fd = -1;
  if (hugetlb) {
    len = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(len)) != 0) {
      close(fd);
      fd = -1;
    }
    if (fd >= 0) {
      void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
      if (p == MAP_FAILED) {  // no huge pages reserved
        close(fd);
        fd = -1;
      } else {
        m.map_ = p;
        m.hugetlb_ = true;
      }
    }
  }
  if (fd < 0) {
    len = (bytes + 4095) / 4096 * 4096;
    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return Errno("memfd_create");
    if (ftruncate(fd, static_cast<off_t>(len)) != 0) {
      const absl::Status s = Errno("ftruncate");
      close(fd);
      return s;
    }
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const absl::Status s = Errno("mmap");
      close(fd);
      return s;
    }
    m.map_ = p;
  }
  m.fd_.Reset(fd);
  m.map_len_ = len;
  m.data_ = static_cast<uint8_t*>(m.map_);
  m.size_ = bytes;
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return Errno("F_ADD_SEALS");
  }
  return m;
}

absl::StatusOr<Mapping> Mapping::MapForeign(int fd, uint64_t offset, uint64_t length) {
  if (length == 0) return absl::InvalidArgumentError("zero-length range");
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    return absl::InvalidArgumentError("memory fd is not a memfd (F_GET_SEALS failed)");
  }
  if ((seals & F_SEAL_SHRINK) == 0) {
    return absl::InvalidArgumentError("memfd must be sealed with F_SEAL_SHRINK");
  }
  struct stat st;
  if (fstat(fd, &st) != 0) return Errno("fstat");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (offset > size || length > size - offset) {
    return absl::OutOfRangeError(absl::StrFormat(
        "range [%u, +%u) beyond memfd size %u", offset, length, size));
  }
  // hugetlbfs reports its page size as the block size; mmap offsets must be
  // multiples of it.
  const uint64_t align = st.st_blksize > 4096 ? static_cast<uint64_t>(st.st_blksize) : 4096;
  const uint64_t start = offset / align * align;
  const uint64_t end = (offset + length + align - 1) / align * align;
  void* p = mmap(nullptr, end - start, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                 static_cast<off_t>(start));
  if (p == MAP_FAILED) return Errno("mmap of registered memory");
  Mapping m;
  m.map_ = p;
  m.map_len_ = end - start;
  m.data_ = static_cast<uint8_t*>(p) + (offset - start);
  m.size_ = length;
  m.hugetlb_ = align > 4096;
  return m;
}

}  // namespace iwarp::appif
