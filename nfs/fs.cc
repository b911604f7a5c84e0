#include "nfs/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "nfs/text.h"

namespace iwarp::nfs {

struct FileSystem::Root {
  const Export* exp = nullptr;
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
  Fh3 fh;
};

// A handle opened: its export and an O_PATH fd (closed by the destructor).
struct FileSystem::Resolved {
  const Root* root = nullptr;
  int fd = -1;
  struct stat st {};
  ~Resolved() {
    if (fd >= 0) close(fd);
  }
};

namespace {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

NfsStat3 FromErrno(int e) {
  switch (e) {
    case 0: return NfsStat3::kOk;
    case EPERM: return NfsStat3::kPerm;
    case ENOENT: return NfsStat3::kNoent;
    case ENXIO: return NfsStat3::kNxio;
    case EACCES: return NfsStat3::kAcces;
    case EEXIST: return NfsStat3::kExist;
    case EXDEV: return NfsStat3::kXdev;
    case ENODEV: return NfsStat3::kNodev;
    case ENOTDIR: return NfsStat3::kNotdir;
    case EISDIR: return NfsStat3::kIsdir;
    case EINVAL: return NfsStat3::kInval;
    case EFBIG: return NfsStat3::kFbig;
    case ENOSPC: return NfsStat3::kNospc;
    case EROFS: return NfsStat3::kRofs;
    case EMLINK: return NfsStat3::kMlink;
    case ENAMETOOLONG: return NfsStat3::kNametoolong;
    case ENOTEMPTY: return NfsStat3::kNotempty;
    case EDQUOT: return NfsStat3::kDquot;
    case ESTALE: return NfsStat3::kStale;
    case ELOOP: return NfsStat3::kAcces;  // a symlink where the server does not follow one
    case EOPNOTSUPP: return NfsStat3::kNotsupp;
    case EBUSY: return NfsStat3::kAcces;
    default: return NfsStat3::kIo;
  }
}

// Sets the thread's file-system identity for its lifetime, then back to
// root. Raw system calls: they affect this thread only.
class IdentityScope {
 public:
  IdentityScope(uint32_t uid, uint32_t gid, const uint32_t* gids, size_t n) {
    gid_t g[16];
    for (size_t i = 0; i < n && i < 16; ++i) g[i] = gids[i];
    ok_ = syscall(SYS_setgroups, n, g) == 0;
    syscall(SYS_setfsgid, gid);
    syscall(SYS_setfsuid, uid);
    ok_ = ok_ && static_cast<uint32_t>(syscall(SYS_setfsuid, -1)) == uid &&
          static_cast<uint32_t>(syscall(SYS_setfsgid, -1)) == gid;
  }
  ~IdentityScope() {
    syscall(SYS_setfsuid, 0);
    syscall(SYS_setfsgid, 0);
    syscall(SYS_setgroups, 0, nullptr);
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

std::string ProcPath(int fd) { return Cat("/proc/self/fd/", fd); }

Fattr3 ToFattr(const struct stat& st, uint32_t fsid) {
  Fattr3 a;
  switch (st.st_mode & S_IFMT) {
    case S_IFDIR: a.type = Ftype3::kDir; break;
    case S_IFBLK: a.type = Ftype3::kBlk; break;
    case S_IFCHR: a.type = Ftype3::kChr; break;
    case S_IFLNK: a.type = Ftype3::kLnk; break;
    case S_IFSOCK: a.type = Ftype3::kSock; break;
    case S_IFIFO: a.type = Ftype3::kFifo; break;
    default: a.type = Ftype3::kReg; break;
  }
  a.mode = st.st_mode & 07777;
  a.nlink = static_cast<uint32_t>(st.st_nlink);
  a.uid = st.st_uid;
  a.gid = st.st_gid;
  a.size = static_cast<uint64_t>(st.st_size);
  a.used = static_cast<uint64_t>(st.st_blocks) * 512;
  a.rdev.specdata1 = major(st.st_rdev);
  a.rdev.specdata2 = minor(st.st_rdev);
  a.fsid = fsid;
  a.fileid = st.st_ino;
  a.atime = {static_cast<uint32_t>(st.st_atim.tv_sec), static_cast<uint32_t>(st.st_atim.tv_nsec)};
  a.mtime = {static_cast<uint32_t>(st.st_mtim.tv_sec), static_cast<uint32_t>(st.st_mtim.tv_nsec)};
  a.ctime = {static_cast<uint32_t>(st.st_ctim.tv_sec), static_cast<uint32_t>(st.st_ctim.tv_nsec)};
  return a;
}

PreOpAttr ToPreOp(const struct stat& st) {
  PreOpAttr p;
  p.present = true;
  p.attr.size = static_cast<uint64_t>(st.st_size);
  p.attr.mtime = {static_cast<uint32_t>(st.st_mtim.tv_sec), static_cast<uint32_t>(st.st_mtim.tv_nsec)};
  p.attr.ctime = {static_cast<uint32_t>(st.st_ctim.tv_sec), static_cast<uint32_t>(st.st_ctim.tv_nsec)};
  return p;
}

PostOpAttr PostOp(int fd, uint32_t fsid) {
  PostOpAttr p;
  struct stat st;
  if (fd >= 0 && fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0) {
    p.present = true;
    p.attr = ToFattr(st, fsid);
  }
  return p;
}

// RFC 1813 3.3.x: filename3 as this server accepts it (one component).
NfsStat3 CheckName(const std::string& name, bool allow_dots) {
  if (name.empty()) return NfsStat3::kAcces;
  if (name.size() > kMaxName) return NfsStat3::kNametoolong;
  if (name.find('/') != std::string::npos || name.find('\0') != std::string::npos) return NfsStat3::kAcces;
  if (!allow_dots && (name == "." || name == "..")) return NfsStat3::kInval;
  return NfsStat3::kOk;
}

int OpenBeneath(int dirfd, const char* name, uint64_t flags, uint64_t mode) {
  struct open_how how {};
  how.flags = flags | O_CLOEXEC | O_NOFOLLOW;
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return static_cast<int>(syscall(SYS_openat2, dirfd, name, &how, sizeof(how)));
}

// struct file_handle with room for MAX_HANDLE_SZ bytes of f_handle.
class KernelHandleBuf {
 public:
  KernelHandleBuf() { fh()->handle_bytes = 128; }
  struct file_handle* fh() { return reinterpret_cast<struct file_handle*>(buf_); }

 private:
  alignas(struct file_handle) unsigned char buf_[sizeof(struct file_handle) + 128];
};

}  // namespace

bool IsModifying(uint32_t proc) {
  switch (static_cast<Proc3>(proc)) {
    case Proc3::kSetattr: case Proc3::kWrite: case Proc3::kCreate: case Proc3::kMkdir:
    case Proc3::kSymlink: case Proc3::kMknod: case Proc3::kRemove: case Proc3::kRmdir:
    case Proc3::kRename: case Proc3::kLink: case Proc3::kCommit:
      return true;
    default:
      return false;
  }
}

bool DecodeNfsArgs(uint32_t proc, XdrDecoder& d, NfsArgs* out) {
  auto take = [&](auto v) {
    const bool ok = Decode(d, &v);
    *out = std::move(v);
    return ok;
  };
  switch (static_cast<Proc3>(proc)) {
    case Proc3::kNull: *out = std::monostate{}; return true;
    case Proc3::kGetattr: case Proc3::kReadlink: case Proc3::kFsstat: case Proc3::kFsinfo:
    case Proc3::kPathconf:
      return take(FhArgs{});
    case Proc3::kSetattr: return take(SetattrArgs{});
    case Proc3::kLookup: case Proc3::kRemove: case Proc3::kRmdir: return take(DirOpArgs{});
    case Proc3::kAccess: return take(AccessArgs{});
    case Proc3::kRead: return take(ReadArgs{});
    case Proc3::kWrite: {
      WriteArgs w;
      // No scratch: WRITE data spanning pieces is not taken (the transports
      // deliver a call's inline stream as one piece, and a Read chunk as its
      // own); GARBAGE_ARGS rather than a copy.
      const bool ok = Decode(d, &w);
      *out = w;
      return ok;
    }
    case Proc3::kCreate: return take(CreateArgs{});
    case Proc3::kMkdir: return take(MkdirArgs{});
    case Proc3::kSymlink: return take(SymlinkArgs{});
    case Proc3::kMknod: return take(MknodArgs{});
    case Proc3::kRename: return take(RenameArgs{});
    case Proc3::kLink: return take(LinkArgs{});
    case Proc3::kReaddir: return take(ReaddirArgs{});
    case Proc3::kReaddirplus: return take(ReaddirplusArgs{});
    case Proc3::kCommit: return take(CommitArgs{});
  }
  return false;
}

void EncodeNfsResult(XdrEncoder& e, const NfsResult& r) {
  std::visit(
      [&](const auto& v) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) Encode(e, v);
      },
      r);
}

NfsStat3 ResultStatus(const NfsResult& r) {
  return std::visit(
      [](const auto& v) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) {
          return NfsStat3::kOk;
        } else {
          return v.status;
        }
      },
      r);
}

absl::StatusOr<std::unique_ptr<FileSystem>> FileSystem::Open(const NfsdConfig& config, const HandleCodec& codec,
                                                             const Verf8& write_verifier) {
  std::unique_ptr<FileSystem> fs(new FileSystem(codec, write_verifier));
  for (const Export& e : config.exports) {
    auto r = std::make_unique<Root>();
    r->exp = &e;
    // Not O_PATH: open_by_handle_at takes no O_PATH mount fd (EBADF).
    r->fd = open(e.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (r->fd < 0) return absl::NotFoundError(Cat(e.path, ": ", strerror(errno)));
    struct stat st;
    if (fstat(r->fd, &st) != 0) return absl::InternalError(Cat(e.path, ": ", strerror(errno)));
    r->dev = st.st_dev;
    r->ino = st.st_ino;
    if (!fs->MakeHandle(*r, r->fd, "", &r->fh)) {
      close(r->fd);
      return absl::FailedPreconditionError(Cat(e.path, ": no file handle (name_to_handle_at)"));
    }
    fs->roots_.push_back(std::move(r));
  }
  return fs;
}

FileSystem::FileSystem(const HandleCodec& codec, const Verf8& verf) : codec_(codec), write_verifier_(verf) {}

FileSystem::~FileSystem() {
  for (auto& r : roots_) {
    if (r->fd >= 0) close(r->fd);
  }
}

const Fh3* FileSystem::RootHandle(uint32_t export_id) const {
  for (const auto& r : roots_) {
    if (r->exp->id == export_id) return &r->fh;
  }
  return nullptr;
}

bool FileSystem::MakeHandle(const Root& root, int fd, const char* name, Fh3* out) const {
  KernelHandleBuf h;
  int mount_id = 0;
  const int flags = name[0] == '\0' ? AT_EMPTY_PATH : 0;
  if (name_to_handle_at(fd, name, h.fh(), &mount_id, flags) != 0) return false;
  if (h.fh()->handle_bytes > kMaxKernelHandle) return false;
  KernelHandle kh;
  kh.handle_type = h.fh()->handle_type;
  kh.length = h.fh()->handle_bytes;
  std::memcpy(kh.bytes.data(), h.fh()->f_handle, kh.length);
  return codec_.Encode(root.exp->id, kh, out);
}

NfsStat3 FileSystem::Resolve(const Fh3& fh, const Caller& caller, Resolved* out) const {
  uint32_t export_id = 0;
  KernelHandle kh;
  if (codec_.Verify(fh, &export_id, &kh) != HandleCheck::kOk) return NfsStat3::kBadhandle;
  const Root* root = nullptr;
  for (const auto& r : roots_) {
    if (r->exp->id == export_id) root = r.get();
  }
  if (root == nullptr) return NfsStat3::kStale;  // an export this server no longer has
  if (!root->exp->Allows(caller.peer_ipv4)) return NfsStat3::kAcces;
  KernelHandleBuf h;
  h.fh()->handle_bytes = kh.length;
  h.fh()->handle_type = kh.handle_type;
  std::memcpy(h.fh()->f_handle, kh.bytes.data(), kh.length);
  const int fd = open_by_handle_at(root->fd, h.fh(), O_PATH | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno == ESTALE || errno == ENOENT ? NfsStat3::kStale : FromErrno(errno);
  out->fd = fd;
  out->root = root;
  if (fstatat(fd, "", &out->st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) return NfsStat3::kStale;
  if (out->st.st_dev != root->dev) return NfsStat3::kStale;
  return NfsStat3::kOk;
}

// One procedure's execution: resolution, identity, the system calls.
class FsOp {
 public:
  FsOp(const FileSystem& fs, const Caller& caller) : fs_(fs), caller_(caller) {}

  // Resolves `fh` as root; on success sets the identity for the rest of
  // this operation (once) from the export's squash rules.
  NfsStat3 Open(const Fh3& fh, FileSystem::Resolved* r) {
    const NfsStat3 s = fs_.Resolve(fh, caller_, r);
    if (s != NfsStat3::kOk) return s;
    if (identity_ == nullptr) {
      const Export& e = *r->root->exp;
      uint32_t uid = caller_.uid, gid = caller_.gid, n = caller_.gid_count;
      if (!caller_.auth_sys || (e.root_squash && uid == 0)) {
        uid = e.anon_uid;
        gid = e.anon_gid;
        n = 0;
      }
      if (e.root_squash && gid == 0) gid = e.anon_gid;
      identity_ = std::make_unique<IdentityScope>(uid, gid, caller_.gids.data(), n);
      if (!identity_->ok()) return NfsStat3::kServerfault;
    }
    return NfsStat3::kOk;
  }
  // Opens a second handle (RENAME, LINK): it must be in the same export.
  NfsStat3 OpenSecond(const Fh3& fh, const FileSystem::Resolved& first, FileSystem::Resolved* r) {
    // Root again for open_by_handle_at.
    identity_.reset();
    NfsStat3 s = fs_.Resolve(fh, caller_, r);
    if (s == NfsStat3::kOk && r->root != first.root) s = NfsStat3::kXdev;
    // Re-apply the identity from the first handle's export.
    const Export& e = *first.root->exp;
    uint32_t uid = caller_.uid, gid = caller_.gid, n = caller_.gid_count;
    if (!caller_.auth_sys || (e.root_squash && uid == 0)) {
      uid = e.anon_uid;
      gid = e.anon_gid;
      n = 0;
    }
    if (e.root_squash && gid == 0) gid = e.anon_gid;
    identity_ = std::make_unique<IdentityScope>(uid, gid, caller_.gids.data(), n);
    if (!identity_->ok()) return NfsStat3::kServerfault;
    return s;
  }
  bool read_only(const FileSystem::Resolved& r) const { return r.root->exp->read_only; }
  uint32_t fsid(const FileSystem::Resolved& r) const { return r.root->exp->id; }
  // Opens the object for I/O under the caller's identity.
  int Reopen(const FileSystem::Resolved& r, int flags) const {
    return open(ProcPath(r.fd).c_str(), flags | O_CLOEXEC);
  }
  bool MakeHandle(const FileSystem::Resolved& dir, int fd, const char* name, Fh3* out) const {
    return fs_.MakeHandle(*dir.root, fd, name, out);
  }
  const Verf8& write_verifier() const { return fs_.write_verifier_; }

 private:
  const FileSystem& fs_;
  const Caller& caller_;
  std::unique_ptr<IdentityScope> identity_;
};

namespace {

using Resolved = FileSystem::Resolved;

// Applies sattr3 (RFC 1813 3.3.2) to an object opened as `r` / `fd`.
NfsStat3 ApplySattr(const Resolved& r, int fd, const Sattr3& a) {
  const std::string path = ProcPath(fd);
  if (a.set_mode && (r.st.st_mode & S_IFMT) != S_IFLNK) {
    if (fchmodat(AT_FDCWD, path.c_str(), a.mode & 07777, 0) != 0) return FromErrno(errno);
  }
  if (a.set_uid || a.set_gid) {
    if (fchownat(fd, "", a.set_uid ? a.uid : static_cast<uid_t>(-1), a.set_gid ? a.gid : static_cast<gid_t>(-1),
                 AT_EMPTY_PATH) != 0) {
      return FromErrno(errno);
    }
  }
  if (a.set_size) {
    if ((r.st.st_mode & S_IFMT) == S_IFDIR) return NfsStat3::kIsdir;
    if ((r.st.st_mode & S_IFMT) != S_IFREG) return NfsStat3::kInval;
    if (a.size > static_cast<uint64_t>(INT64_MAX)) return NfsStat3::kFbig;
    if (truncate(path.c_str(), static_cast<off_t>(a.size)) != 0) return FromErrno(errno);
  }
  if (a.atime_how != TimeHow::kDontChange || a.mtime_how != TimeHow::kDontChange) {
    struct timespec ts[2];
    const TimeHow how[2] = {a.atime_how, a.mtime_how};
    const NfsTime3 t[2] = {a.atime, a.mtime};
    for (int i = 0; i < 2; ++i) {
      if (how[i] == TimeHow::kDontChange) {
        ts[i] = {0, UTIME_OMIT};
      } else if (how[i] == TimeHow::kServerTime) {
        ts[i] = {0, UTIME_NOW};
      } else {
        if (t[i].nseconds >= 1000000000u) return NfsStat3::kInval;
        ts[i] = {static_cast<time_t>(t[i].seconds), static_cast<long>(t[i].nseconds)};
      }
    }
    if ((r.st.st_mode & S_IFMT) == S_IFLNK) {
      if (utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) return FromErrno(errno);
    } else if (utimensat(AT_FDCWD, path.c_str(), ts, 0) != 0) {
      return FromErrno(errno);
    }
  }
  return NfsStat3::kOk;
}

// Fills obj / obj_attributes of a CREATE-like result for `name` in `dir`.
void FillCreated(FsOp& op, const Resolved& dir, const std::string& name, CreateRes* res) {
  struct stat st;
  if (fstatat(dir.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    res->obj_attributes.present = true;
    res->obj_attributes.attr = ToFattr(st, op.fsid(dir));
  }
  res->obj.present = op.MakeHandle(dir, dir.fd, name.c_str(), &res->obj.fh);
}

uint32_t CheckAccess(int fd, const struct stat& st, uint32_t want, bool read_only) {
  const std::string path = ProcPath(fd);
  auto can = [&](int mode) {
    if ((st.st_mode & S_IFMT) == S_IFLNK) return mode == R_OK;
    return faccessat(AT_FDCWD, path.c_str(), mode, AT_EACCESS) == 0;
  };
  const bool dir = (st.st_mode & S_IFMT) == S_IFDIR;
  uint32_t got = 0;
  if ((want & kAccessRead) && can(R_OK)) got |= kAccessRead;
  if (dir) {
    if ((want & kAccessLookup) && can(X_OK)) got |= kAccessLookup;
    if ((want & kAccessDelete) && can(W_OK | X_OK)) got |= kAccessDelete;
  } else if ((want & kAccessExecute) && can(X_OK)) {
    got |= kAccessExecute;
  }
  if (want & (kAccessModify | kAccessExtend)) {
    if (can(dir ? (W_OK | X_OK) : W_OK)) got |= want & (kAccessModify | kAccessExtend);
  }
  if (read_only) got &= ~(kAccessModify | kAccessExtend | kAccessDelete);
  return got;
}

// READDIR / READDIRPLUS: reads entries from `cookie` (a getdents64 d_off,
// 0 for the start) while `fits` accepts them.
struct RawEntry {
  uint64_t ino;
  uint64_t next_cookie;
  std::string name;
};
NfsStat3 ReadDir(FsOp& op, const Resolved& dir, uint64_t cookie, const std::function<bool(const RawEntry&)>& add,
                 bool* eof) {
  Fd fd(op.Reopen(dir, O_RDONLY | O_DIRECTORY));
  if (fd.get() < 0) return FromErrno(errno);
  if (cookie != 0 && lseek(fd.get(), static_cast<off_t>(cookie), SEEK_SET) < 0) return NfsStat3::kBadCookie;
  alignas(8) char buf[16384];
  *eof = false;
  for (;;) {
    const long n = syscall(SYS_getdents64, fd.get(), buf, sizeof(buf));
    if (n < 0) return FromErrno(errno);
    if (n == 0) {
      *eof = true;
      return NfsStat3::kOk;
    }
    long off = 0;
    while (off < n) {
      uint64_t ino, d_off;
      uint16_t reclen;
      std::memcpy(&ino, buf + off, 8);
      std::memcpy(&d_off, buf + off + 8, 8);
      std::memcpy(&reclen, buf + off + 16, 2);
      if (reclen < 20 || off + reclen > n) return NfsStat3::kIo;
      RawEntry e{ino, d_off, std::string(buf + off + 19, strnlen(buf + off + 19, reclen - 19u))};
      if (!add(e)) return NfsStat3::kOk;
      off += reclen;
    }
  }
}

}  // namespace

NfsResult FileSystem::Execute(uint32_t proc, const NfsArgs& args, const Caller& caller,
                              MutableByteSpan read_buf) const {
  FsOp op(*this, caller);
  switch (static_cast<Proc3>(proc)) {
    case Proc3::kNull:
      return std::monostate{};

    case Proc3::kGetattr: {
      const auto& a = std::get<FhArgs>(args);
      GetattrRes res;
      Resolved r;
      res.status = op.Open(a.object, &r);
      if (res.status == NfsStat3::kOk) res.obj_attributes = ToFattr(r.st, op.fsid(r));
      return res;
    }

    case Proc3::kSetattr: {
      const auto& a = std::get<SetattrArgs>(args);
      WccRes res;
      Resolved r;
      res.status = op.Open(a.object, &r);
      if (res.status != NfsStat3::kOk) return res;
      res.wcc.before = ToPreOp(r.st);
      if (op.read_only(r)) {
        res.status = NfsStat3::kRofs;
      } else if (a.check_guard && (a.guard_ctime.seconds != static_cast<uint32_t>(r.st.st_ctim.tv_sec) ||
                                   a.guard_ctime.nseconds != static_cast<uint32_t>(r.st.st_ctim.tv_nsec))) {
        res.status = NfsStat3::kNotSync;
      } else {
        res.status = ApplySattr(r, r.fd, a.new_attributes);
      }
      res.wcc.after = PostOp(r.fd, op.fsid(r));
      return res;
    }

    case Proc3::kLookup: {
      const auto& a = std::get<DirOpArgs>(args);
      LookupRes res;
      Resolved dir;
      res.status = op.Open(a.dir, &dir);
      if (res.status != NfsStat3::kOk) return res;
      res.dir_attributes = PostOp(dir.fd, op.fsid(dir));
      if ((dir.st.st_mode & S_IFMT) != S_IFDIR) {
        res.status = NfsStat3::kNotdir;
        return res;
      }
      if ((res.status = CheckName(a.name, true)) != NfsStat3::kOk) return res;
      Fd fd;
      if (a.name == "..") {
        // The parent of an export root is the root itself (no way out).
        if (dir.st.st_dev == dir.root->dev && dir.st.st_ino == dir.root->ino) {
          fd.reset(fcntl(dir.fd, F_DUPFD_CLOEXEC, 0));
        } else {
          fd.reset(openat(dir.fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
        }
      } else {
        fd.reset(OpenBeneath(dir.fd, a.name.c_str(), O_PATH, 0));
      }
      if (fd.get() < 0) {
        res.status = FromErrno(errno);
        return res;
      }
      struct stat st;
      if (fstatat(fd.get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0 || st.st_dev != dir.root->dev ||
          !op.MakeHandle(dir, fd.get(), "", &res.object)) {
        res.status = NfsStat3::kAcces;
        return res;
      }
      res.obj_attributes.present = true;
      res.obj_attributes.attr = ToFattr(st, op.fsid(dir));
      return res;
    }

    case Proc3::kAccess: {
      const auto& a = std::get<AccessArgs>(args);
      AccessRes res;
      Resolved r;
      res.status = op.Open(a.object, &r);
      if (res.status != NfsStat3::kOk) return res;
      res.obj_attributes = PostOp(r.fd, op.fsid(r));
      res.access = CheckAccess(r.fd, r.st, a.access, op.read_only(r));
      return res;
    }

    case Proc3::kReadlink: {
      const auto& a = std::get<FhArgs>(args);
      ReadlinkRes res;
      Resolved r;
      res.status = op.Open(a.object, &r);
      if (res.status != NfsStat3::kOk) return res;
      res.symlink_attributes = PostOp(r.fd, op.fsid(r));
      if ((r.st.st_mode & S_IFMT) != S_IFLNK) {
        res.status = NfsStat3::kInval;
        return res;
      }
      char buf[kMaxPath + 1];
      const ssize_t n = readlinkat(r.fd, "", buf, sizeof(buf));
      if (n < 0) {
        res.status = FromErrno(errno);
      } else if (static_cast<size_t>(n) > kMaxPath) {
        res.status = NfsStat3::kNametoolong;
      } else {
        res.data.assign(buf, static_cast<size_t>(n));
      }
      return res;
    }

    case Proc3::kRead: {
      const auto& a = std::get<ReadArgs>(args);
      ReadRes res;
      Resolved r;
      res.status = op.Open(a.file, &r);
      if (res.status != NfsStat3::kOk) return res;
      if ((r.st.st_mode & S_IFMT) == S_IFDIR) {
        res.status = NfsStat3::kIsdir;
      } else if ((r.st.st_mode & S_IFMT) != S_IFREG) {
        res.status = NfsStat3::kInval;
      } else {
        Fd fd(op.Reopen(r, O_RDONLY));
        if (fd.get() < 0) {
          res.status = FromErrno(errno);
        } else {
          const size_t want = std::min<size_t>({a.count, kMaxIo, read_buf.size()});
          size_t got = 0;
          while (got < want) {
            const ssize_t n = pread(fd.get(), read_buf.data() + got, want - got, static_cast<off_t>(a.offset + got));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
              res.status = FromErrno(errno);
              break;
            }
            if (n == 0) break;
            got += static_cast<size_t>(n);
          }
          struct stat st;
          fstat(fd.get(), &st);
          res.count = static_cast<uint32_t>(got);
          res.eof = a.offset + got >= static_cast<uint64_t>(st.st_size);
          res.data = ByteSpan(read_buf.data(), got);
          res.file_attributes.present = true;
          res.file_attributes.attr = ToFattr(st, op.fsid(r));
          return res;
        }
      }
      res.file_attributes = PostOp(r.fd, op.fsid(r));
      return res;
    }

    case Proc3::kWrite: {
      const auto& a = std::get<WriteArgs>(args);
      WriteRes res;
      Resolved r;
      res.status = op.Open(a.file, &r);
      if (res.status != NfsStat3::kOk) return res;
      res.file_wcc.before = ToPreOp(r.st);
      if (op.read_only(r)) {
        res.status = NfsStat3::kRofs;
      } else if ((r.st.st_mode & S_IFMT) == S_IFDIR) {
        res.status = NfsStat3::kIsdir;
      } else if ((r.st.st_mode & S_IFMT) != S_IFREG || a.count != a.data.size()) {
        res.status = NfsStat3::kInval;
      } else if (a.offset > static_cast<uint64_t>(INT64_MAX) - a.data.size()) {
        res.status = NfsStat3::kFbig;
      } else {
        Fd fd(op.Reopen(r, O_WRONLY));
        if (fd.get() < 0) {
          res.status = FromErrno(errno);
        } else {
          size_t put = 0;
          while (put < a.data.size()) {
            const ssize_t n = pwrite(fd.get(), a.data.data() + put, a.data.size() - put,
                                     static_cast<off_t>(a.offset + put));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
              res.status = FromErrno(n < 0 ? errno : EIO);
              break;
            }
            put += static_cast<size_t>(n);
          }
          if (res.status == NfsStat3::kOk) {
            // RFC 1813 3.3.7: commit at least as far as asked.
            if (a.stable == StableHow::kFileSync && fsync(fd.get()) != 0) res.status = FromErrno(errno);
            if (a.stable == StableHow::kDataSync && fdatasync(fd.get()) != 0) res.status = FromErrno(errno);
            res.count = static_cast<uint32_t>(put);
            res.committed = a.stable;
            res.verf = op.write_verifier();
          }
        }
      }
      res.file_wcc.after = PostOp(r.fd, op.fsid(r));
      return res;
    }

    case Proc3::kCreate: case Proc3::kMkdir: case Proc3::kSymlink: case Proc3::kMknod: {
      const DirOpArgs3* where = nullptr;
      if (proc == static_cast<uint32_t>(Proc3::kCreate)) where = &std::get<CreateArgs>(args).where;
      if (proc == static_cast<uint32_t>(Proc3::kMkdir)) where = &std::get<MkdirArgs>(args).where;
      if (proc == static_cast<uint32_t>(Proc3::kSymlink)) where = &std::get<SymlinkArgs>(args).where;
      if (proc == static_cast<uint32_t>(Proc3::kMknod)) where = &std::get<MknodArgs>(args).where;
      CreateRes res;
      Resolved dir;
      res.status = op.Open(where->dir, &dir);
      if (res.status != NfsStat3::kOk) return res;
      res.dir_wcc.before = ToPreOp(dir.st);
      auto done = [&]() -> NfsResult {
        res.dir_wcc.after = PostOp(dir.fd, op.fsid(dir));
        return res;
      };
      if (op.read_only(dir)) {
        res.status = NfsStat3::kRofs;
        return done();
      }
      if ((dir.st.st_mode & S_IFMT) != S_IFDIR) {
        res.status = NfsStat3::kNotdir;
        return done();
      }
      if ((res.status = CheckName(where->name, false)) != NfsStat3::kOk) return done();
      const char* name = where->name.c_str();
      Sattr3 rest;  // attributes applied after creation
      switch (static_cast<Proc3>(proc)) {
        case Proc3::kCreate: {
          const auto& a = std::get<CreateArgs>(args);
          if (a.mode == CreateMode::kExclusive) {
            // RFC 1813 3.3.8: the verifier is kept in atime / mtime (as
            // Linux knfsd does) so a retransmitted EXCLUSIVE create of the
            // same verifier succeeds.
            const uint32_t v0 = LoadBe32(a.verf.data()), v1 = LoadBe32(a.verf.data() + 4);
            Fd fd(OpenBeneath(dir.fd, name, O_CREAT | O_EXCL | O_RDONLY, 0600));
            if (fd.get() >= 0) {
              const struct timespec ts[2] = {{static_cast<time_t>(v0), 0}, {static_cast<time_t>(v1), 0}};
              futimens(fd.get(), ts);
            } else if (errno == EEXIST) {
              struct stat st;
              if (fstatat(dir.fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
                  static_cast<uint32_t>(st.st_atim.tv_sec) != v0 || static_cast<uint32_t>(st.st_mtim.tv_sec) != v1) {
                res.status = NfsStat3::kExist;
              }
            } else {
              res.status = FromErrno(errno);
            }
          } else {
            const Sattr3& s = a.obj_attributes;
            Fd fd(OpenBeneath(dir.fd, name, O_CREAT | O_EXCL | O_RDONLY, s.set_mode ? (s.mode & 07777) : 0644));
            if (fd.get() < 0 && errno == EEXIST && a.mode == CreateMode::kUnchecked) {
              // RFC 1813 3.3.8: UNCHECKED reuses an existing file. Only a
              // regular file is reused, and it is looked at, never opened:
              // opening a FIFO would block this worker and opening a device
              // node has side effects (Linux knfsd answers EXIST too).
              fd.reset(OpenBeneath(dir.fd, name, O_PATH, 0));
              struct stat st;
              if (fd.get() < 0) {
                res.status = FromErrno(errno);
              } else if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
                res.status = NfsStat3::kExist;
              }
            } else if (fd.get() < 0) {
              res.status = FromErrno(errno);
            }
            if (res.status == NfsStat3::kOk) {
              rest = s;
              rest.set_mode = false;
            }
          }
          break;
        }
        case Proc3::kMkdir: {
          const auto& a = std::get<MkdirArgs>(args);
          if (mkdirat(dir.fd, name, a.attributes.set_mode ? (a.attributes.mode & 07777) : 0755) != 0) {
            res.status = FromErrno(errno);
          } else {
            rest = a.attributes;
            rest.set_mode = false;
          }
          break;
        }
        case Proc3::kSymlink: {
          const auto& a = std::get<SymlinkArgs>(args);
          if (a.symlink_data.empty() || a.symlink_data.find('\0') != std::string::npos) {
            res.status = NfsStat3::kInval;
          } else if (symlinkat(a.symlink_data.c_str(), dir.fd, name) != 0) {
            res.status = FromErrno(errno);
          } else {
            rest = a.symlink_attributes;
            rest.set_mode = false;
            rest.set_size = false;
          }
          break;
        }
        case Proc3::kMknod: {
          // ext4, xfs, btrfs and tmpfs make every node type; only the
          // kernel's CAP_MKNOD rule (root, not squashed, for CHR / BLK)
          // refuses some: NFS3ERR_PERM. REG / DIR / LNK: NFS3ERR_BADTYPE.
          const auto& a = std::get<MknodArgs>(args);
          mode_t type = 0;
          dev_t dev = 0;
          switch (a.type) {
            case Ftype3::kFifo: type = S_IFIFO; break;
            case Ftype3::kSock: type = S_IFSOCK; break;
            case Ftype3::kChr: type = S_IFCHR; dev = makedev(a.spec.specdata1, a.spec.specdata2); break;
            case Ftype3::kBlk: type = S_IFBLK; dev = makedev(a.spec.specdata1, a.spec.specdata2); break;
            default: res.status = NfsStat3::kBadtype; break;
          }
          if (res.status == NfsStat3::kOk) {
            const mode_t mode = a.attributes.set_mode ? (a.attributes.mode & 07777) : 0644;
            if (mknodat(dir.fd, name, type | mode, dev) != 0) {
              res.status = FromErrno(errno);
            } else {
              rest = a.attributes;
              rest.set_mode = false;
              rest.set_size = false;
            }
          }
          break;
        }
        default: break;
      }
      if (res.status == NfsStat3::kOk) {
        Resolved obj;
        obj.fd = openat(dir.fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (obj.fd >= 0 && fstatat(obj.fd, "", &obj.st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0) {
          obj.root = dir.root;
          res.status = ApplySattr(obj, obj.fd, rest);
        }
        FillCreated(op, dir, where->name, &res);
      }
      return done();
    }

    case Proc3::kRemove: case Proc3::kRmdir: {
      const auto& a = std::get<DirOpArgs>(args);
      WccRes res;
      Resolved dir;
      res.status = op.Open(a.dir, &dir);
      if (res.status != NfsStat3::kOk) return res;
      res.wcc.before = ToPreOp(dir.st);
      if (op.read_only(dir)) {
        res.status = NfsStat3::kRofs;
      } else if ((dir.st.st_mode & S_IFMT) != S_IFDIR) {
        res.status = NfsStat3::kNotdir;
      } else if ((res.status = CheckName(a.name, false)) == NfsStat3::kOk) {
        const bool rmdir = proc == static_cast<uint32_t>(Proc3::kRmdir);
        if (unlinkat(dir.fd, a.name.c_str(), rmdir ? AT_REMOVEDIR : 0) != 0) {
          res.status = FromErrno(errno);
          // RFC 1813 3.3.12: REMOVE of a directory.
          if (!rmdir && errno == EISDIR) res.status = NfsStat3::kIsdir;
        }
      }
      res.wcc.after = PostOp(dir.fd, op.fsid(dir));
      return res;
    }

    case Proc3::kRename: {
      const auto& a = std::get<RenameArgs>(args);
      RenameRes res;
      Resolved from, to;
      res.status = op.Open(a.from.dir, &from);
      if (res.status != NfsStat3::kOk) return res;
      res.fromdir_wcc.before = ToPreOp(from.st);
      res.status = op.OpenSecond(a.to.dir, from, &to);
      if (res.status == NfsStat3::kOk) {
        res.todir_wcc.before = ToPreOp(to.st);
        if (op.read_only(from)) {
          res.status = NfsStat3::kRofs;
        } else if (!S_ISDIR(from.st.st_mode) || !S_ISDIR(to.st.st_mode)) {
          res.status = NfsStat3::kNotdir;
        } else if ((res.status = CheckName(a.from.name, false)) == NfsStat3::kOk &&
                   (res.status = CheckName(a.to.name, false)) == NfsStat3::kOk) {
          if (renameat(from.fd, a.from.name.c_str(), to.fd, a.to.name.c_str()) != 0) res.status = FromErrno(errno);
        }
        res.todir_wcc.after = PostOp(to.fd, op.fsid(to));
      }
      res.fromdir_wcc.after = PostOp(from.fd, op.fsid(from));
      return res;
    }

    case Proc3::kLink: {
      const auto& a = std::get<LinkArgs>(args);
      LinkRes res;
      Resolved file, dir;
      res.status = op.Open(a.file, &file);
      if (res.status != NfsStat3::kOk) return res;
      res.status = op.OpenSecond(a.link.dir, file, &dir);
      if (res.status == NfsStat3::kOk) {
        res.linkdir_wcc.before = ToPreOp(dir.st);
        if (op.read_only(file)) {
          res.status = NfsStat3::kRofs;
        } else if (!S_ISDIR(dir.st.st_mode)) {
          res.status = NfsStat3::kNotdir;
        } else if (S_ISDIR(file.st.st_mode)) {
          res.status = NfsStat3::kIsdir;
        } else if ((res.status = CheckName(a.link.name, false)) == NfsStat3::kOk) {
          // Through /proc/self/fd: linkat(AT_EMPTY_PATH) needs
          // CAP_DAC_READ_SEARCH, which the caller's identity does not have.
          if (linkat(AT_FDCWD, ProcPath(file.fd).c_str(), dir.fd, a.link.name.c_str(), AT_SYMLINK_FOLLOW) != 0) {
            res.status = FromErrno(errno);
          }
        }
        res.linkdir_wcc.after = PostOp(dir.fd, op.fsid(dir));
      }
      res.file_attributes = PostOp(file.fd, op.fsid(file));
      return res;
    }

    case Proc3::kReaddir: {
      const auto& a = std::get<ReaddirArgs>(args);
      ReaddirRes res;
      Resolved dir;
      res.status = op.Open(a.dir, &dir);
      if (res.status != NfsStat3::kOk) return res;
      res.dir_attributes = PostOp(dir.fd, op.fsid(dir));
      if (!S_ISDIR(dir.st.st_mode)) {
        res.status = NfsStat3::kNotdir;
        return res;
      }
      const size_t limit = std::min<size_t>(a.count, kMaxDirReply);
      size_t used = 4 + 4 + 84 + 8 + 4 + 4;
      res.status = ReadDir(op, dir, a.cookie,
                           [&](const RawEntry& e) {
                             Entry3 en{e.ino, e.name, e.next_cookie};
                             if (e.name == ".." && dir.st.st_ino == dir.root->ino) en.fileid = dir.root->ino;
                             const size_t sz = Entry3Size(en);
                             if (used + sz > limit) return false;
                             used += sz;
                             res.entries.push_back(std::move(en));
                             return true;
                           },
                           &res.eof);
      if (res.status == NfsStat3::kOk && res.entries.empty() && !res.eof) res.status = NfsStat3::kToosmall;
      return res;
    }

    case Proc3::kReaddirplus: {
      const auto& a = std::get<ReaddirplusArgs>(args);
      ReaddirplusRes res;
      Resolved dir;
      res.status = op.Open(a.dir, &dir);
      if (res.status != NfsStat3::kOk) return res;
      res.dir_attributes = PostOp(dir.fd, op.fsid(dir));
      if (!S_ISDIR(dir.st.st_mode)) {
        res.status = NfsStat3::kNotdir;
        return res;
      }
      const size_t limit = std::min<size_t>(a.maxcount, kMaxDirReply);
      size_t used = 4 + 4 + 84 + 8 + 4 + 4;
      size_t dir_used = 0;
      const bool is_root = dir.st.st_ino == dir.root->ino && dir.st.st_dev == dir.root->dev;
      res.status = ReadDir(op, dir, a.cookie,
                           [&](const RawEntry& e) {
                             EntryPlus3 en{e.ino, e.name, e.next_cookie, {}, {}};
                             if (e.name == "..") {
                               // No handle: a client that wants the parent LOOKUPs "..".
                               if (is_root) en.fileid = dir.root->ino;
                             } else {
                               struct stat st;
                               if (fstatat(dir.fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                                   st.st_dev == dir.root->dev) {
                                 en.name_attributes.present = true;
                                 en.name_attributes.attr = ToFattr(st, op.fsid(dir));
                                 en.name_handle.present = op.MakeHandle(
                                     dir, dir.fd, e.name == "." ? "" : e.name.c_str(), &en.name_handle.fh);
                               }
                             }
                             const size_t sz = EntryPlus3Size(en);
                             const size_t dsz = Entry3Size(Entry3{en.fileid, en.name, en.cookie});
                             if (used + sz > limit || (a.dircount != 0 && dir_used + dsz > a.dircount && !res.entries.empty())) {
                               return false;
                             }
                             used += sz;
                             dir_used += dsz;
                             res.entries.push_back(std::move(en));
                             return true;
                           },
                           &res.eof);
      if (res.status == NfsStat3::kOk && res.entries.empty() && !res.eof) res.status = NfsStat3::kToosmall;
      return res;
    }

    case Proc3::kFsstat: {
      const auto& a = std::get<FhArgs>(args);
      FsstatRes res;
      Resolved r;
      res.status = op.Open(a.object, &r);
      if (res.status != NfsStat3::kOk) return res;
      res.obj_attributes = PostOp(r.fd, op.fsid(r));
      struct statfs sf;
      if (fstatfs(r.fd, &sf) != 0) {
        res.status = FromErrno(errno);
        return res;
      }
      const uint64_t bs = static_cast<uint64_t>(sf.f_bsize);
      res.tbytes = sf.f_blocks * bs;
      res.fbytes = sf.f_bfree * bs;
      res.abytes = sf.f_bavail * bs;
      res.tfiles = sf.f_files;
      res.ffiles = sf.f_ffree;
      res.afiles = sf.f_ffree;
      res.invarsec = 0;
      return res;
    }

    case Proc3::kFsinfo: {
      const auto& a = std::get<FhArgs>(args);
      FsinfoRes res;
      Resolved r;
      res.status = op.Open(a.object, &r);
      if (res.status != NfsStat3::kOk) return res;
      res.obj_attributes = PostOp(r.fd, op.fsid(r));
      res.rtmax = res.rtpref = kMaxIo;
      res.wtmax = res.wtpref = kMaxIo;
      res.rtmult = res.wtmult = 4096;
      res.dtpref = kMaxDirReply / 2;
      res.maxfilesize = static_cast<uint64_t>(INT64_MAX);
      res.time_delta = {0, 1};
      res.properties = kFsfLink | kFsfSymlink | kFsfHomogeneous | kFsfCanSetTime;
      return res;
    }

    case Proc3::kPathconf: {
      const auto& a = std::get<FhArgs>(args);
      PathconfRes res;
      Resolved r;
      res.status = op.Open(a.object, &r);
      if (res.status != NfsStat3::kOk) return res;
      res.obj_attributes = PostOp(r.fd, op.fsid(r));
      struct statfs sf;
      res.name_max = fstatfs(r.fd, &sf) == 0 ? static_cast<uint32_t>(sf.f_namelen) : 255;
      res.linkmax = 65000;
      res.no_trunc = true;
      res.chown_restricted = true;
      res.case_insensitive = false;
      res.case_preserving = true;
      return res;
    }

    case Proc3::kCommit: {
      const auto& a = std::get<CommitArgs>(args);
      CommitRes res;
      Resolved r;
      res.status = op.Open(a.file, &r);
      if (res.status != NfsStat3::kOk) return res;
      res.file_wcc.before = ToPreOp(r.st);
      if (!S_ISREG(r.st.st_mode)) {
        res.status = NfsStat3::kInval;
      } else {
        // Any open mode may fsync: read, or write for a write-only file.
        const int fd = open(ProcPath(r.fd).c_str(), O_RDONLY | O_CLOEXEC);
        Fd f(fd >= 0 ? fd : open(ProcPath(r.fd).c_str(), O_WRONLY | O_CLOEXEC));
        if (f.get() < 0 || fsync(f.get()) != 0) res.status = FromErrno(errno);
        res.verf = op.write_verifier();
      }
      res.file_wcc.after = PostOp(r.fd, op.fsid(r));
      return res;
    }
  }
  return std::monostate{};
}

}  // namespace iwarp::nfs
