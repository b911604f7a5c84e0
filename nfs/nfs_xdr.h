// NFS version 3 (RFC 1813) and MOUNT version 3 (RFC 1813 appendix I) on
// the wire: the argument and result types of every procedure, with XDR
// encoders and decoders over rpcrdma/rpc_xdr.h.
//
// One Encode / Decode pair per type, shared by the server (decodes
// arguments, encodes results) and the client (the reverse), so a round trip
// through both is a test of each. Decoders bound every variable-length item
// (file handles <= 64 bytes, names <= kMaxName, paths <= kMaxPath, WRITE data
// <= kMaxData, directory listings <= kMaxEntries) and report failure through
// XdrDecoder::ok(); nothing here asserts on peer data. WRITE data and READ
// results are spans of the message (never copied); READ's data is encoded as
// a DDP-eligible piece (RFC 8267 3: the READ3resok data item).
#ifndef IWARPD_NFS_NFS_XDR_H_
#define IWARPD_NFS_NFS_XDR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "rpcrdma/rpc_xdr.h"

namespace iwarp::nfs {

using rpc::XdrDecoder;
using rpc::XdrEncoder;

inline constexpr uint32_t kNfsProgram = 100003;
inline constexpr uint32_t kNfsVersion = 3;
inline constexpr uint32_t kMountProgram = 100005;
inline constexpr uint32_t kMountVersion = 3;

inline constexpr size_t kFhSize = 64;          // RFC 1813 2.4: NFS3_FHSIZE
inline constexpr size_t kCookieVerfSize = 8;   // NFS3_COOKIEVERFSIZE
inline constexpr size_t kCreateVerfSize = 8;   // NFS3_CREATEVERFSIZE
inline constexpr size_t kWriteVerfSize = 8;    // NFS3_WRITEVERFSIZE
inline constexpr uint32_t kMaxName = 255;      // filename3 bound we accept
inline constexpr uint32_t kMaxPath = 1024;     // nfspath3 / dirpath (MNTPATHLEN)
inline constexpr uint32_t kMaxData = 1u << 20; // READ / WRITE data bound (rtmax / wtmax)
inline constexpr uint32_t kMaxEntries = 4096;  // directory entries in one decoded reply
inline constexpr uint32_t kMaxMountName = 255; // MNTNAMLEN

// RFC 1813 3: procedure numbers.
enum class Proc3 : uint32_t {
  kNull = 0, kGetattr = 1, kSetattr = 2, kLookup = 3, kAccess = 4, kReadlink = 5, kRead = 6,
  kWrite = 7, kCreate = 8, kMkdir = 9, kSymlink = 10, kMknod = 11, kRemove = 12, kRmdir = 13,
  kRename = 14, kLink = 15, kReaddir = 16, kReaddirplus = 17, kFsstat = 18, kFsinfo = 19,
  kPathconf = 20, kCommit = 21,
};
inline constexpr size_t kProc3Count = 22;
std::string_view Proc3Name(uint32_t proc);

// RFC 1813 appendix I: MOUNT procedure numbers.
enum class MountProc : uint32_t { kNull = 0, kMnt = 1, kDump = 2, kUmnt = 3, kUmntall = 4, kExport = 5 };
inline constexpr size_t kMountProcCount = 6;
std::string_view MountProcName(uint32_t proc);

// RFC 1813 2.6: nfsstat3.
// X(enumerator, value, "name")
#define IWARP_NFS_STAT3(X)                      \
  X(kOk, 0, "NFS3_OK")                          \
  X(kPerm, 1, "NFS3ERR_PERM")                   \
  X(kNoent, 2, "NFS3ERR_NOENT")                 \
  X(kIo, 5, "NFS3ERR_IO")                       \
  X(kNxio, 6, "NFS3ERR_NXIO")                   \
  X(kAcces, 13, "NFS3ERR_ACCES")                \
  X(kExist, 17, "NFS3ERR_EXIST")                \
  X(kXdev, 18, "NFS3ERR_XDEV")                  \
  X(kNodev, 19, "NFS3ERR_NODEV")                \
  X(kNotdir, 20, "NFS3ERR_NOTDIR")              \
  X(kIsdir, 21, "NFS3ERR_ISDIR")                \
  X(kInval, 22, "NFS3ERR_INVAL")                \
  X(kFbig, 27, "NFS3ERR_FBIG")                  \
  X(kNospc, 28, "NFS3ERR_NOSPC")                \
  X(kRofs, 30, "NFS3ERR_ROFS")                  \
  X(kMlink, 31, "NFS3ERR_MLINK")                \
  X(kNametoolong, 63, "NFS3ERR_NAMETOOLONG")    \
  X(kNotempty, 66, "NFS3ERR_NOTEMPTY")          \
  X(kDquot, 69, "NFS3ERR_DQUOT")                \
  X(kStale, 70, "NFS3ERR_STALE")                \
  X(kRemote, 71, "NFS3ERR_REMOTE")              \
  X(kBadhandle, 10001, "NFS3ERR_BADHANDLE")     \
  X(kNotSync, 10002, "NFS3ERR_NOT_SYNC")        \
  X(kBadCookie, 10003, "NFS3ERR_BAD_COOKIE")    \
  X(kNotsupp, 10004, "NFS3ERR_NOTSUPP")         \
  X(kToosmall, 10005, "NFS3ERR_TOOSMALL")       \
  X(kServerfault, 10006, "NFS3ERR_SERVERFAULT") \
  X(kBadtype, 10007, "NFS3ERR_BADTYPE")         \
  X(kJukebox, 10008, "NFS3ERR_JUKEBOX")
enum class NfsStat3 : uint32_t { IWARP_NFS_STAT3(IWARP_ENUMERATOR_VALUE) };
std::string_view NfsStat3Name(NfsStat3 s);
// Every nfsstat3 value, for counters indexed by position.
#define IWARP_NFS_STAT3_ALL(e, value, name) NfsStat3::e,
inline constexpr NfsStat3 kAllNfsStat3[] = {IWARP_NFS_STAT3(IWARP_NFS_STAT3_ALL)};
#undef IWARP_NFS_STAT3_ALL
inline constexpr size_t kNfsStat3Count = std::size(kAllNfsStat3);
size_t NfsStat3Index(NfsStat3 s);  // position in kAllNfsStat3, kNfsStat3Count if unknown
bool IsNfsStat3(uint32_t v);

// RFC 1813 appendix I: mountstat3.
enum class MountStat3 : uint32_t {
  kOk = 0, kPerm = 1, kNoent = 2, kIo = 5, kAcces = 13, kNotdir = 20, kInval = 22,
  kNametoolong = 63, kNotsupp = 10004, kServerfault = 10006,
};

enum class Ftype3 : uint32_t { kReg = 1, kDir = 2, kBlk = 3, kChr = 4, kLnk = 5, kSock = 6, kFifo = 7 };
enum class StableHow : uint32_t { kUnstable = 0, kDataSync = 1, kFileSync = 2 };
enum class CreateMode : uint32_t { kUnchecked = 0, kGuarded = 1, kExclusive = 2 };
enum class TimeHow : uint32_t { kDontChange = 0, kServerTime = 1, kClientTime = 2 };

// RFC 1813 3.3.4: ACCESS bits.
inline constexpr uint32_t kAccessRead = 0x01, kAccessLookup = 0x02, kAccessModify = 0x04,
                          kAccessExtend = 0x08, kAccessDelete = 0x10, kAccessExecute = 0x20;
// RFC 1813 3.3.19: FSINFO properties.
inline constexpr uint32_t kFsfLink = 0x01, kFsfSymlink = 0x02, kFsfHomogeneous = 0x08,
                          kFsfCanSetTime = 0x10;

using Verf8 = std::array<uint8_t, 8>;

// nfs_fh3: opaque data<NFS3_FHSIZE>.
struct Fh3 {
  uint32_t length = 0;
  std::array<uint8_t, kFhSize> data{};
  ByteSpan bytes() const { return ByteSpan(data.data(), length); }
  bool Set(ByteSpan b);
  friend bool operator==(const Fh3& a, const Fh3& b) {
    return a.length == b.length && std::equal(a.data.begin(), a.data.begin() + a.length, b.data.begin());
  }
};

struct NfsTime3 {
  uint32_t seconds = 0;
  uint32_t nseconds = 0;
  friend bool operator==(const NfsTime3&, const NfsTime3&) = default;
};
struct SpecData3 {
  uint32_t specdata1 = 0;
  uint32_t specdata2 = 0;
  friend bool operator==(const SpecData3&, const SpecData3&) = default;
};

struct Fattr3 {
  Ftype3 type = Ftype3::kReg;
  uint32_t mode = 0;
  uint32_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t used = 0;
  SpecData3 rdev;
  uint64_t fsid = 0;
  uint64_t fileid = 0;
  NfsTime3 atime, mtime, ctime;
  friend bool operator==(const Fattr3&, const Fattr3&) = default;
};

struct WccAttr {
  uint64_t size = 0;
  NfsTime3 mtime, ctime;
  friend bool operator==(const WccAttr&, const WccAttr&) = default;
};
struct PreOpAttr {
  bool present = false;
  WccAttr attr;
  friend bool operator==(const PreOpAttr&, const PreOpAttr&) = default;
};
struct PostOpAttr {
  bool present = false;
  Fattr3 attr;
  friend bool operator==(const PostOpAttr&, const PostOpAttr&) = default;
};
struct WccData {
  PreOpAttr before;
  PostOpAttr after;
  friend bool operator==(const WccData&, const WccData&) = default;
};
struct PostOpFh3 {
  bool present = false;
  Fh3 fh;
  friend bool operator==(const PostOpFh3&, const PostOpFh3&) = default;
};

struct Sattr3 {
  bool set_mode = false;
  uint32_t mode = 0;
  bool set_uid = false;
  uint32_t uid = 0;
  bool set_gid = false;
  uint32_t gid = 0;
  bool set_size = false;
  uint64_t size = 0;
  TimeHow atime_how = TimeHow::kDontChange;
  NfsTime3 atime;
  TimeHow mtime_how = TimeHow::kDontChange;
  NfsTime3 mtime;
  friend bool operator==(const Sattr3&, const Sattr3&) = default;
};

struct DirOpArgs3 {
  Fh3 dir;
  std::string name;
  friend bool operator==(const DirOpArgs3&, const DirOpArgs3&) = default;
};

// ---------------------------------------------------------------- arguments
// Procedures whose only argument is one handle (GETATTR, READLINK, FSSTAT,
// FSINFO, PATHCONF).
struct FhArgs { Fh3 object; };
struct SetattrArgs { Fh3 object; Sattr3 new_attributes; bool check_guard = false; NfsTime3 guard_ctime; };
// LOOKUP, REMOVE, RMDIR.
using DirOpArgs = DirOpArgs3;
struct AccessArgs { Fh3 object; uint32_t access = 0; };
struct ReadArgs { Fh3 file; uint64_t offset = 0; uint32_t count = 0; };
struct WriteArgs {
  Fh3 file;
  uint64_t offset = 0;
  uint32_t count = 0;
  StableHow stable = StableHow::kUnstable;
  ByteSpan data;  // references the call (or the decoder's scratch)
};
struct CreateArgs {
  DirOpArgs3 where;
  CreateMode mode = CreateMode::kUnchecked;
  Sattr3 obj_attributes;  // UNCHECKED / GUARDED
  Verf8 verf{};           // EXCLUSIVE
};
struct MkdirArgs { DirOpArgs3 where; Sattr3 attributes; };
struct SymlinkArgs { DirOpArgs3 where; Sattr3 symlink_attributes; std::string symlink_data; };
struct MknodArgs {
  DirOpArgs3 where;
  Ftype3 type = Ftype3::kFifo;
  Sattr3 attributes;  // CHR, BLK, SOCK, FIFO
  SpecData3 spec;     // CHR, BLK
};
struct RenameArgs { DirOpArgs3 from; DirOpArgs3 to; };
struct LinkArgs { Fh3 file; DirOpArgs3 link; };
struct ReaddirArgs { Fh3 dir; uint64_t cookie = 0; Verf8 cookieverf{}; uint32_t count = 0; };
struct ReaddirplusArgs {
  Fh3 dir;
  uint64_t cookie = 0;
  Verf8 cookieverf{};
  uint32_t dircount = 0;
  uint32_t maxcount = 0;
};
struct CommitArgs { Fh3 file; uint64_t offset = 0; uint32_t count = 0; };

// ---------------------------------------------------------------- results
// Every result starts with `status`; the other members are those of the
// resok or resfail arm it selects (RFC 1813 3.3.x).
struct GetattrRes { NfsStat3 status = NfsStat3::kOk; Fattr3 obj_attributes; };
// SETATTR, REMOVE, RMDIR: a wcc_data in both arms.
struct WccRes { NfsStat3 status = NfsStat3::kOk; WccData wcc; };
struct LookupRes {
  NfsStat3 status = NfsStat3::kOk;
  Fh3 object;              // ok
  PostOpAttr obj_attributes;  // ok
  PostOpAttr dir_attributes;  // both
};
struct AccessRes { NfsStat3 status = NfsStat3::kOk; PostOpAttr obj_attributes; uint32_t access = 0; };
struct ReadlinkRes { NfsStat3 status = NfsStat3::kOk; PostOpAttr symlink_attributes; std::string data; };
struct ReadRes {
  NfsStat3 status = NfsStat3::kOk;
  PostOpAttr file_attributes;
  uint32_t count = 0;
  bool eof = false;
  ByteSpan data;       // encoded as a DDP-eligible piece
  uint32_t stag = 0;   // registration of `data`, 0 if none
};
struct WriteRes {
  NfsStat3 status = NfsStat3::kOk;
  WccData file_wcc;
  uint32_t count = 0;
  StableHow committed = StableHow::kUnstable;
  Verf8 verf{};
};
// CREATE, MKDIR, SYMLINK, MKNOD.
struct CreateRes { NfsStat3 status = NfsStat3::kOk; PostOpFh3 obj; PostOpAttr obj_attributes; WccData dir_wcc; };
struct RenameRes { NfsStat3 status = NfsStat3::kOk; WccData fromdir_wcc; WccData todir_wcc; };
struct LinkRes { NfsStat3 status = NfsStat3::kOk; PostOpAttr file_attributes; WccData linkdir_wcc; };
struct Entry3 {
  uint64_t fileid = 0;
  std::string name;
  uint64_t cookie = 0;
  friend bool operator==(const Entry3&, const Entry3&) = default;
};
struct ReaddirRes {
  NfsStat3 status = NfsStat3::kOk;
  PostOpAttr dir_attributes;
  Verf8 cookieverf{};
  std::vector<Entry3> entries;
  bool eof = false;
};
struct EntryPlus3 {
  uint64_t fileid = 0;
  std::string name;
  uint64_t cookie = 0;
  PostOpAttr name_attributes;
  PostOpFh3 name_handle;
  friend bool operator==(const EntryPlus3&, const EntryPlus3&) = default;
};
struct ReaddirplusRes {
  NfsStat3 status = NfsStat3::kOk;
  PostOpAttr dir_attributes;
  Verf8 cookieverf{};
  std::vector<EntryPlus3> entries;
  bool eof = false;
};
struct FsstatRes {
  NfsStat3 status = NfsStat3::kOk;
  PostOpAttr obj_attributes;
  uint64_t tbytes = 0, fbytes = 0, abytes = 0, tfiles = 0, ffiles = 0, afiles = 0;
  uint32_t invarsec = 0;
};
struct FsinfoRes {
  NfsStat3 status = NfsStat3::kOk;
  PostOpAttr obj_attributes;
  uint32_t rtmax = 0, rtpref = 0, rtmult = 0, wtmax = 0, wtpref = 0, wtmult = 0, dtpref = 0;
  uint64_t maxfilesize = 0;
  NfsTime3 time_delta;
  uint32_t properties = 0;
};
struct PathconfRes {
  NfsStat3 status = NfsStat3::kOk;
  PostOpAttr obj_attributes;
  uint32_t linkmax = 0, name_max = 0;
  bool no_trunc = false, chown_restricted = false, case_insensitive = false, case_preserving = false;
};
struct CommitRes { NfsStat3 status = NfsStat3::kOk; WccData file_wcc; Verf8 verf{}; };

// ---------------------------------------------------------------- MOUNT
struct MntRes {
  MountStat3 status = MountStat3::kOk;
  Fh3 fhandle;
  std::vector<uint32_t> auth_flavors;
};
struct MountEntry { std::string hostname; std::string directory; };
struct ExportEntry { std::string dir; std::vector<std::string> groups; };

// ---------------------------------------------------------------- codecs
// Decoders return d.ok() after reading; an enum value outside the RFC's set
// fails the decoder (XdrError::kTooLong is not used for that: kBadBool).
void Encode(XdrEncoder& e, const Fh3& v);
bool Decode(XdrDecoder& d, Fh3* v);
void Encode(XdrEncoder& e, const Fattr3& v);
bool Decode(XdrDecoder& d, Fattr3* v);
void Encode(XdrEncoder& e, const PostOpAttr& v);
bool Decode(XdrDecoder& d, PostOpAttr* v);
void Encode(XdrEncoder& e, const WccData& v);
bool Decode(XdrDecoder& d, WccData* v);
void Encode(XdrEncoder& e, const PostOpFh3& v);
bool Decode(XdrDecoder& d, PostOpFh3* v);
void Encode(XdrEncoder& e, const Sattr3& v);
bool Decode(XdrDecoder& d, Sattr3* v);
void Encode(XdrEncoder& e, const DirOpArgs3& v);
bool Decode(XdrDecoder& d, DirOpArgs3* v);

void Encode(XdrEncoder& e, const FhArgs& v);
bool Decode(XdrDecoder& d, FhArgs* v);
void Encode(XdrEncoder& e, const SetattrArgs& v);
bool Decode(XdrDecoder& d, SetattrArgs* v);
void Encode(XdrEncoder& e, const AccessArgs& v);
bool Decode(XdrDecoder& d, AccessArgs* v);
void Encode(XdrEncoder& e, const ReadArgs& v);
bool Decode(XdrDecoder& d, ReadArgs* v);
// WRITE's data is a DDP-eligible argument (RFC 8267 3): encoded as its own
// piece; decoded as a span of the call (`scratch` when it spans pieces).
void Encode(XdrEncoder& e, const WriteArgs& v, uint32_t stag = 0);
bool Decode(XdrDecoder& d, WriteArgs* v, MutableByteSpan scratch = {});
void Encode(XdrEncoder& e, const CreateArgs& v);
bool Decode(XdrDecoder& d, CreateArgs* v);
void Encode(XdrEncoder& e, const MkdirArgs& v);
bool Decode(XdrDecoder& d, MkdirArgs* v);
void Encode(XdrEncoder& e, const SymlinkArgs& v);
bool Decode(XdrDecoder& d, SymlinkArgs* v);
void Encode(XdrEncoder& e, const MknodArgs& v);
bool Decode(XdrDecoder& d, MknodArgs* v);
void Encode(XdrEncoder& e, const RenameArgs& v);
bool Decode(XdrDecoder& d, RenameArgs* v);
void Encode(XdrEncoder& e, const LinkArgs& v);
bool Decode(XdrDecoder& d, LinkArgs* v);
void Encode(XdrEncoder& e, const ReaddirArgs& v);
bool Decode(XdrDecoder& d, ReaddirArgs* v);
void Encode(XdrEncoder& e, const ReaddirplusArgs& v);
bool Decode(XdrDecoder& d, ReaddirplusArgs* v);
void Encode(XdrEncoder& e, const CommitArgs& v);
bool Decode(XdrDecoder& d, CommitArgs* v);

void Encode(XdrEncoder& e, const GetattrRes& v);
bool Decode(XdrDecoder& d, GetattrRes* v);
void Encode(XdrEncoder& e, const WccRes& v);
bool Decode(XdrDecoder& d, WccRes* v);
void Encode(XdrEncoder& e, const LookupRes& v);
bool Decode(XdrDecoder& d, LookupRes* v);
void Encode(XdrEncoder& e, const AccessRes& v);
bool Decode(XdrDecoder& d, AccessRes* v);
void Encode(XdrEncoder& e, const ReadlinkRes& v);
bool Decode(XdrDecoder& d, ReadlinkRes* v);
void Encode(XdrEncoder& e, const ReadRes& v);
bool Decode(XdrDecoder& d, ReadRes* v, MutableByteSpan scratch = {});
void Encode(XdrEncoder& e, const WriteRes& v);
bool Decode(XdrDecoder& d, WriteRes* v);
void Encode(XdrEncoder& e, const CreateRes& v);
bool Decode(XdrDecoder& d, CreateRes* v);
void Encode(XdrEncoder& e, const RenameRes& v);
bool Decode(XdrDecoder& d, RenameRes* v);
void Encode(XdrEncoder& e, const LinkRes& v);
bool Decode(XdrDecoder& d, LinkRes* v);
void Encode(XdrEncoder& e, const ReaddirRes& v);
bool Decode(XdrDecoder& d, ReaddirRes* v);
void Encode(XdrEncoder& e, const ReaddirplusRes& v);
bool Decode(XdrDecoder& d, ReaddirplusRes* v);
void Encode(XdrEncoder& e, const FsstatRes& v);
bool Decode(XdrDecoder& d, FsstatRes* v);
void Encode(XdrEncoder& e, const FsinfoRes& v);
bool Decode(XdrDecoder& d, FsinfoRes* v);
void Encode(XdrEncoder& e, const PathconfRes& v);
bool Decode(XdrDecoder& d, PathconfRes* v);
void Encode(XdrEncoder& e, const CommitRes& v);
bool Decode(XdrDecoder& d, CommitRes* v);

// MOUNT: dirpath arguments (MNT, UMNT) are strings <= kMaxPath.
void EncodeDirpath(XdrEncoder& e, std::string_view path);
bool DecodeDirpath(XdrDecoder& d, std::string* path);
void Encode(XdrEncoder& e, const MntRes& v);
bool Decode(XdrDecoder& d, MntRes* v);
void EncodeMountList(XdrEncoder& e, const std::vector<MountEntry>& v);
bool DecodeMountList(XdrDecoder& d, std::vector<MountEntry>* v);
void EncodeExports(XdrEncoder& e, const std::vector<ExportEntry>& v);
bool DecodeExports(XdrDecoder& d, std::vector<ExportEntry>* v);

// Encoded size of an entry in READDIR / READDIRPLUS results (for the
// count / maxcount limits of RFC 1813 3.3.16-17).
size_t Entry3Size(const Entry3& e);
size_t EntryPlus3Size(const EntryPlus3& e);

}  // namespace iwarp::nfs

#endif  // IWARPD_NFS_NFS_XDR_H_
