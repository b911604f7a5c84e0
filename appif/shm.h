// Shared memory for the application interface: memfd creation, sealing and
// mapping. Control path only (system calls, allocation).
#ifndef IWARPD_APPIF_SHM_H_
#define IWARPD_APPIF_SHM_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace iwarp::appif {

// An owned file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.Release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A MAP_SHARED mapping of (part of) a file; unmapped on destruction.
class Mapping {
 public:
  Mapping() = default;
  ~Mapping() { Reset(); }
  Mapping(Mapping&& o) noexcept { *this = std::move(o); }
  Mapping& operator=(Mapping&& o) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  // Creates a sealed memfd of `bytes` (zeroed), maps it and keeps the fd.
  // Seals: shrink, grow and seal, so no holder of the fd can truncate it
  // under the other side. `hugetlb` tries MFD_HUGETLB first (bytes rounded to
  // the huge page size) and falls back to normal pages.
  static absl::StatusOr<Mapping> CreateMemfd(const char* name, size_t bytes, bool hugetlb = false);

  // Maps [offset, offset + length) of a memfd supplied by another process.
  // Refuses fds that are not memfds sealed against shrinking (F_SEAL_SHRINK),
  // since a truncation would turn every later access into SIGBUS, and ranges
  // beyond the file size. Does not take ownership of `fd`.
  static absl::StatusOr<Mapping> MapForeign(int fd, uint64_t offset, uint64_t length);

  void Reset();
  // First byte of the requested range (MapForeign: at `offset`).
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }  // bytes of the requested range
  size_t mapped_bytes() const { return map_len_; }
  int fd() const { return fd_.get(); }
  bool hugetlb() const { return hugetlb_; }

 private:
  UniqueFd fd_;
  void* map_ = nullptr;
  size_t map_len_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool hugetlb_ = false;
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_SHM_H_
