#include "nfs/nfs_xdr.h"

#include <algorithm>

namespace iwarp::nfs {
namespace {

using rpc::XdrError;
using rpc::XdrRoundUp;

// An enum word, failing the decoder when it is not in [lo, hi].
template <typename E>
E DecodeEnum(XdrDecoder& d, uint32_t lo, uint32_t hi) {
  const uint32_t v = d.U32();
  if (v < lo || v > hi) {
    d.Fail(XdrError::kBadBool);
    return static_cast<E>(lo);
  }
  return static_cast<E>(v);
}

bool DecodeString(XdrDecoder& d, uint32_t max, std::string* out) {
  std::array<uint8_t, kMaxPath> scratch;
  const std::string_view s = d.String(max, MutableByteSpan(scratch.data(), std::min<size_t>(max, scratch.size())));
  if (!d.ok()) return false;
  out->assign(s);
  return true;
}

// RFC 8267 4.1: the pathnames of SYMLINK (argument) and READLINK (result)
// are DDP-eligible, like READ and WRITE data: over RPC-over-RDMA they may
// travel in a Read chunk / Write chunk; inline everywhere else.
void EncodeDdpString(XdrEncoder& e, const std::string& s) {
  e.DdpOpaque(ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}
bool DecodeDdpString(XdrDecoder& d, uint32_t max, std::string* out) {
  std::array<uint8_t, kMaxPath> scratch;
  const ByteSpan b = d.DdpOpaque(max, MutableByteSpan(scratch.data(), std::min<size_t>(max, scratch.size())));
  if (!d.ok()) return false;
  out->assign(reinterpret_cast<const char*>(b.data()), b.size());
  return true;
}

void EncodeTime(XdrEncoder& e, const NfsTime3& t) {
  e.U32(t.seconds);
  e.U32(t.nseconds);
}
void DecodeTime(XdrDecoder& d, NfsTime3* t) {
  t->seconds = d.U32();
  t->nseconds = d.U32();
}

void EncodeVerf(XdrEncoder& e, const Verf8& v) { e.OpaqueFixed(ByteSpan(v.data(), v.size())); }
void DecodeVerf(XdrDecoder& d, Verf8* v) {
  const ByteSpan b = d.OpaqueFixed(v->size(), MutableByteSpan(v->data(), v->size()));
  if (d.ok() && b.data() != v->data()) std::copy(b.begin(), b.end(), v->begin());
}

void Encode(XdrEncoder& e, const PreOpAttr& v) {
  e.Present(v.present);
  if (!v.present) return;
  e.Hyper(v.attr.size);
  EncodeTime(e, v.attr.mtime);
  EncodeTime(e, v.attr.ctime);
}
void Decode(XdrDecoder& d, PreOpAttr* v) {
  v->present = d.Present();
  if (!v->present) return;
  v->attr.size = d.Hyper();
  DecodeTime(d, &v->attr.mtime);
  DecodeTime(d, &v->attr.ctime);
}

void EncodeEntryPlusTail(XdrEncoder& e, const EntryPlus3& v) {
  Encode(e, v.name_attributes);
  Encode(e, v.name_handle);
}

}  // namespace

std::string_view Proc3Name(uint32_t proc) {
  static constexpr std::string_view kNames[kProc3Count] = {
      "null",  "getattr", "setattr", "lookup", "access", "readlink", "read",    "write",
      "create", "mkdir",  "symlink", "mknod",  "remove", "rmdir",    "rename",  "link",
      "readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit"};
  return proc < kProc3Count ? kNames[proc] : "unknown";
}

std::string_view MountProcName(uint32_t proc) {
  static constexpr std::string_view kNames[kMountProcCount] = {"null", "mnt", "dump", "umnt", "umntall",
                                                               "export"};
  return proc < kMountProcCount ? kNames[proc] : "unknown";
}

std::string_view NfsStat3Name(NfsStat3 s) {
  using Enum = NfsStat3;
  switch (s) { IWARP_NFS_STAT3(IWARP_ENUM_NAME_CASE_VALUE) }
  return "NFS3ERR_unknown";
}

size_t NfsStat3Index(NfsStat3 s) {
  for (size_t i = 0; i < kNfsStat3Count; ++i) {
    if (kAllNfsStat3[i] == s) return i;
  }
  return kNfsStat3Count;
}

bool IsNfsStat3(uint32_t v) { return NfsStat3Index(static_cast<NfsStat3>(v)) < kNfsStat3Count; }

bool Fh3::Set(ByteSpan b) {
  if (b.size() > kFhSize) return false;
  length = static_cast<uint32_t>(b.size());
  std::copy(b.begin(), b.end(), data.begin());
  return true;
}

// ---------------------------------------------------------------- basic types

void Encode(XdrEncoder& e, const Fh3& v) { e.Opaque(v.bytes()); }
bool Decode(XdrDecoder& d, Fh3* v) {
  v->length = static_cast<uint32_t>(d.OpaqueCopy(MutableByteSpan(v->data.data(), v->data.size())));
  return d.ok();
}

void Encode(XdrEncoder& e, const Fattr3& v) {
  e.Enum(static_cast<int32_t>(v.type));
  e.U32(v.mode);
  e.U32(v.nlink);
  e.U32(v.uid);
  e.U32(v.gid);
  e.Hyper(v.size);
  e.Hyper(v.used);
  e.U32(v.rdev.specdata1);
  e.U32(v.rdev.specdata2);
  e.Hyper(v.fsid);
  e.Hyper(v.fileid);
  EncodeTime(e, v.atime);
  EncodeTime(e, v.mtime);
  EncodeTime(e, v.ctime);
}
bool Decode(XdrDecoder& d, Fattr3* v) {
  v->type = DecodeEnum<Ftype3>(d, 1, 7);
  v->mode = d.U32();
  v->nlink = d.U32();
  v->uid = d.U32();
  v->gid = d.U32();
  v->size = d.Hyper();
  v->used = d.Hyper();
  v->rdev.specdata1 = d.U32();
  v->rdev.specdata2 = d.U32();
  v->fsid = d.Hyper();
  v->fileid = d.Hyper();
  DecodeTime(d, &v->atime);
  DecodeTime(d, &v->mtime);
  DecodeTime(d, &v->ctime);
  return d.ok();
}

void Encode(XdrEncoder& e, const PostOpAttr& v) {
  e.Present(v.present);
  if (v.present) Encode(e, v.attr);
}
bool Decode(XdrDecoder& d, PostOpAttr* v) {
  v->present = d.Present();
  if (v->present) Decode(d, &v->attr);
  return d.ok();
}

void Encode(XdrEncoder& e, const WccData& v) {
  Encode(e, v.before);
  Encode(e, v.after);
}
bool Decode(XdrDecoder& d, WccData* v) {
  Decode(d, &v->before);
  return Decode(d, &v->after);
}

void Encode(XdrEncoder& e, const PostOpFh3& v) {
  e.Present(v.present);
  if (v.present) Encode(e, v.fh);
}
bool Decode(XdrDecoder& d, PostOpFh3* v) {
  v->present = d.Present();
  if (v->present) Decode(d, &v->fh);
  return d.ok();
}

void Encode(XdrEncoder& e, const Sattr3& v) {
  e.Bool(v.set_mode);
  if (v.set_mode) e.U32(v.mode);
  e.Bool(v.set_uid);
  if (v.set_uid) e.U32(v.uid);
  e.Bool(v.set_gid);
  if (v.set_gid) e.U32(v.gid);
  e.Bool(v.set_size);
  if (v.set_size) e.Hyper(v.size);
  e.Enum(static_cast<int32_t>(v.atime_how));
  if (v.atime_how == TimeHow::kClientTime) EncodeTime(e, v.atime);
  e.Enum(static_cast<int32_t>(v.mtime_how));
  if (v.mtime_how == TimeHow::kClientTime) EncodeTime(e, v.mtime);
}
bool Decode(XdrDecoder& d, Sattr3* v) {
  if ((v->set_mode = d.Bool())) v->mode = d.U32();
  if ((v->set_uid = d.Bool())) v->uid = d.U32();
  if ((v->set_gid = d.Bool())) v->gid = d.U32();
  if ((v->set_size = d.Bool())) v->size = d.Hyper();
  v->atime_how = DecodeEnum<TimeHow>(d, 0, 2);
  if (v->atime_how == TimeHow::kClientTime) DecodeTime(d, &v->atime);
  v->mtime_how = DecodeEnum<TimeHow>(d, 0, 2);
  if (v->mtime_how == TimeHow::kClientTime) DecodeTime(d, &v->mtime);
  return d.ok();
}

void Encode(XdrEncoder& e, const DirOpArgs3& v) {
  Encode(e, v.dir);
  e.String(v.name);
}
bool Decode(XdrDecoder& d, DirOpArgs3* v) {
  Decode(d, &v->dir);
  return DecodeString(d, kMaxName, &v->name);
}

// ---------------------------------------------------------------- arguments

void Encode(XdrEncoder& e, const FhArgs& v) { Encode(e, v.object); }
bool Decode(XdrDecoder& d, FhArgs* v) { return Decode(d, &v->object); }

void Encode(XdrEncoder& e, const SetattrArgs& v) {
  Encode(e, v.object);
  Encode(e, v.new_attributes);
  e.Bool(v.check_guard);
  if (v.check_guard) EncodeTime(e, v.guard_ctime);
}
bool Decode(XdrDecoder& d, SetattrArgs* v) {
  Decode(d, &v->object);
  Decode(d, &v->new_attributes);
  if ((v->check_guard = d.Bool())) DecodeTime(d, &v->guard_ctime);
  return d.ok();
}

void Encode(XdrEncoder& e, const AccessArgs& v) {
  Encode(e, v.object);
  e.U32(v.access);
}
bool Decode(XdrDecoder& d, AccessArgs* v) {
  Decode(d, &v->object);
  v->access = d.U32();
  return d.ok();
}

void Encode(XdrEncoder& e, const ReadArgs& v) {
  Encode(e, v.file);
  e.Hyper(v.offset);
  e.U32(v.count);
}
bool Decode(XdrDecoder& d, ReadArgs* v) {
  Decode(d, &v->file);
  v->offset = d.Hyper();
  v->count = d.U32();
  return d.ok();
}

void Encode(XdrEncoder& e, const WriteArgs& v, uint32_t stag) {
  Encode(e, v.file);
  e.Hyper(v.offset);
  e.U32(v.count);
  e.Enum(static_cast<int32_t>(v.stable));
  e.DdpOpaque(v.data, stag);
}
bool Decode(XdrDecoder& d, WriteArgs* v, MutableByteSpan scratch) {
  Decode(d, &v->file);
  v->offset = d.Hyper();
  v->count = d.U32();
  v->stable = DecodeEnum<StableHow>(d, 0, 2);
  v->data = d.Opaque(kMaxData, scratch);
  return d.ok();
}

void Encode(XdrEncoder& e, const CreateArgs& v) {
  Encode(e, v.where);
  e.Enum(static_cast<int32_t>(v.mode));
  if (v.mode == CreateMode::kExclusive) {
    EncodeVerf(e, v.verf);
  } else {
    Encode(e, v.obj_attributes);
  }
}
bool Decode(XdrDecoder& d, CreateArgs* v) {
  Decode(d, &v->where);
  v->mode = DecodeEnum<CreateMode>(d, 0, 2);
  if (!d.ok()) return false;
  if (v->mode == CreateMode::kExclusive) {
    DecodeVerf(d, &v->verf);
  } else {
    Decode(d, &v->obj_attributes);
  }
  return d.ok();
}

void Encode(XdrEncoder& e, const MkdirArgs& v) {
  Encode(e, v.where);
  Encode(e, v.attributes);
}
bool Decode(XdrDecoder& d, MkdirArgs* v) {
  Decode(d, &v->where);
  return Decode(d, &v->attributes);
}

void Encode(XdrEncoder& e, const SymlinkArgs& v) {
  Encode(e, v.where);
  Encode(e, v.symlink_attributes);
  EncodeDdpString(e, v.symlink_data);
}
bool Decode(XdrDecoder& d, SymlinkArgs* v) {
  Decode(d, &v->where);
  Decode(d, &v->symlink_attributes);
  return DecodeString(d, kMaxPath, &v->symlink_data);
}

void Encode(XdrEncoder& e, const MknodArgs& v) {
  Encode(e, v.where);
  e.Enum(static_cast<int32_t>(v.type));
  if (v.type == Ftype3::kChr || v.type == Ftype3::kBlk) {
    Encode(e, v.attributes);
    e.U32(v.spec.specdata1);
    e.U32(v.spec.specdata2);
  } else if (v.type == Ftype3::kSock || v.type == Ftype3::kFifo) {
    Encode(e, v.attributes);
  }
}
bool Decode(XdrDecoder& d, MknodArgs* v) {
  Decode(d, &v->where);
  v->type = DecodeEnum<Ftype3>(d, 1, 7);
  if (!d.ok()) return false;
  if (v->type == Ftype3::kChr || v->type == Ftype3::kBlk) {
    Decode(d, &v->attributes);
    v->spec.specdata1 = d.U32();
    v->spec.specdata2 = d.U32();
  } else if (v->type == Ftype3::kSock || v->type == Ftype3::kFifo) {
    Decode(d, &v->attributes);
  }
  return d.ok();
}

void Encode(XdrEncoder& e, const RenameArgs& v) {
  Encode(e, v.from);
  Encode(e, v.to);
}
bool Decode(XdrDecoder& d, RenameArgs* v) {
  Decode(d, &v->from);
  return Decode(d, &v->to);
}

void Encode(XdrEncoder& e, const LinkArgs& v) {
  Encode(e, v.file);
  Encode(e, v.link);
}
bool Decode(XdrDecoder& d, LinkArgs* v) {
  Decode(d, &v->file);
  return Decode(d, &v->link);
}

void Encode(XdrEncoder& e, const ReaddirArgs& v) {
  Encode(e, v.dir);
  e.Hyper(v.cookie);
  EncodeVerf(e, v.cookieverf);
  e.U32(v.count);
}
bool Decode(XdrDecoder& d, ReaddirArgs* v) {
  Decode(d, &v->dir);
  v->cookie = d.Hyper();
  DecodeVerf(d, &v->cookieverf);
  v->count = d.U32();
  return d.ok();
}

void Encode(XdrEncoder& e, const ReaddirplusArgs& v) {
  Encode(e, v.dir);
  e.Hyper(v.cookie);
  EncodeVerf(e, v.cookieverf);
  e.U32(v.dircount);
  e.U32(v.maxcount);
}
bool Decode(XdrDecoder& d, ReaddirplusArgs* v) {
  Decode(d, &v->dir);
  v->cookie = d.Hyper();
  DecodeVerf(d, &v->cookieverf);
  v->dircount = d.U32();
  v->maxcount = d.U32();
  return d.ok();
}

void Encode(XdrEncoder& e, const CommitArgs& v) {
  Encode(e, v.file);
  e.Hyper(v.offset);
  e.U32(v.count);
}
bool Decode(XdrDecoder& d, CommitArgs* v) {
  Decode(d, &v->file);
  v->offset = d.Hyper();
  v->count = d.U32();
  return d.ok();
}

// ---------------------------------------------------------------- results

namespace {
void EncodeStatus(XdrEncoder& e, NfsStat3 s) { e.Enum(static_cast<int32_t>(s)); }
NfsStat3 DecodeStatus(XdrDecoder& d) {
  const uint32_t v = d.U32();
  if (!IsNfsStat3(v)) {
    d.Fail(XdrError::kBadBool);
    return NfsStat3::kServerfault;
  }
  return static_cast<NfsStat3>(v);
}
}  // namespace

void Encode(XdrEncoder& e, const GetattrRes& v) {
  EncodeStatus(e, v.status);
  if (v.status == NfsStat3::kOk) Encode(e, v.obj_attributes);
}
bool Decode(XdrDecoder& d, GetattrRes* v) {
  v->status = DecodeStatus(d);
  if (d.ok() && v->status == NfsStat3::kOk) Decode(d, &v->obj_attributes);
  return d.ok();
}

void Encode(XdrEncoder& e, const WccRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.wcc);
}
bool Decode(XdrDecoder& d, WccRes* v) {
  v->status = DecodeStatus(d);
  return Decode(d, &v->wcc);
}

void Encode(XdrEncoder& e, const LookupRes& v) {
  EncodeStatus(e, v.status);
  if (v.status == NfsStat3::kOk) {
    Encode(e, v.object);
    Encode(e, v.obj_attributes);
  }
  Encode(e, v.dir_attributes);
}
bool Decode(XdrDecoder& d, LookupRes* v) {
  v->status = DecodeStatus(d);
  if (d.ok() && v->status == NfsStat3::kOk) {
    Decode(d, &v->object);
    Decode(d, &v->obj_attributes);
  }
  return Decode(d, &v->dir_attributes);
}

void Encode(XdrEncoder& e, const AccessRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.obj_attributes);
  if (v.status == NfsStat3::kOk) e.U32(v.access);
}
bool Decode(XdrDecoder& d, AccessRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->obj_attributes);
  if (d.ok() && v->status == NfsStat3::kOk) v->access = d.U32();
  return d.ok();
}

void Encode(XdrEncoder& e, const ReadlinkRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.symlink_attributes);
  if (v.status == NfsStat3::kOk) EncodeDdpString(e, v.data);
}
bool Decode(XdrDecoder& d, ReadlinkRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->symlink_attributes);
  if (d.ok() && v->status == NfsStat3::kOk) DecodeDdpString(d, kMaxPath, &v->data);
  return d.ok();
}

void Encode(XdrEncoder& e, const ReadRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.file_attributes);
  if (v.status != NfsStat3::kOk) return;
  e.U32(v.count);
  e.Bool(v.eof);
  e.DdpOpaque(v.data, v.stag);
}
bool Decode(XdrDecoder& d, ReadRes* v, MutableByteSpan scratch) {
  v->status = DecodeStatus(d);
  Decode(d, &v->file_attributes);
  if (!d.ok() || v->status != NfsStat3::kOk) return d.ok();
  v->count = d.U32();
  v->eof = d.Bool();
  v->data = d.DdpOpaque(kMaxData, scratch);
  return d.ok();
}

void Encode(XdrEncoder& e, const WriteRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.file_wcc);
  if (v.status != NfsStat3::kOk) return;
  e.U32(v.count);
  e.Enum(static_cast<int32_t>(v.committed));
  EncodeVerf(e, v.verf);
}
bool Decode(XdrDecoder& d, WriteRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->file_wcc);
  if (!d.ok() || v->status != NfsStat3::kOk) return d.ok();
  v->count = d.U32();
  v->committed = DecodeEnum<StableHow>(d, 0, 2);
  DecodeVerf(d, &v->verf);
  return d.ok();
}

void Encode(XdrEncoder& e, const CreateRes& v) {
  EncodeStatus(e, v.status);
  if (v.status == NfsStat3::kOk) {
    Encode(e, v.obj);
    Encode(e, v.obj_attributes);
  }
  Encode(e, v.dir_wcc);
}
bool Decode(XdrDecoder& d, CreateRes* v) {
  v->status = DecodeStatus(d);
  if (d.ok() && v->status == NfsStat3::kOk) {
    Decode(d, &v->obj);
    Decode(d, &v->obj_attributes);
  }
  return Decode(d, &v->dir_wcc);
}

void Encode(XdrEncoder& e, const RenameRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.fromdir_wcc);
  Encode(e, v.todir_wcc);
}
bool Decode(XdrDecoder& d, RenameRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->fromdir_wcc);
  return Decode(d, &v->todir_wcc);
}

void Encode(XdrEncoder& e, const LinkRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.file_attributes);
  Encode(e, v.linkdir_wcc);
}
bool Decode(XdrDecoder& d, LinkRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->file_attributes);
  return Decode(d, &v->linkdir_wcc);
}

void Encode(XdrEncoder& e, const ReaddirRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.dir_attributes);
  if (v.status != NfsStat3::kOk) return;
  EncodeVerf(e, v.cookieverf);
  for (const Entry3& en : v.entries) {
    e.Present(true);
    e.Hyper(en.fileid);
    e.String(en.name);
    e.Hyper(en.cookie);
  }
  e.Present(false);
  e.Bool(v.eof);
}
bool Decode(XdrDecoder& d, ReaddirRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->dir_attributes);
  if (!d.ok() || v->status != NfsStat3::kOk) return d.ok();
  DecodeVerf(d, &v->cookieverf);
  v->entries.clear();
  while (d.Present()) {
    if (v->entries.size() == kMaxEntries) {
      d.Fail(XdrError::kTooLong);
      return false;
    }
    Entry3& en = v->entries.emplace_back();
    en.fileid = d.Hyper();
    DecodeString(d, kMaxName, &en.name);
    en.cookie = d.Hyper();
    if (!d.ok()) return false;
  }
  v->eof = d.Bool();
  return d.ok();
}

void Encode(XdrEncoder& e, const ReaddirplusRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.dir_attributes);
  if (v.status != NfsStat3::kOk) return;
  EncodeVerf(e, v.cookieverf);
  for (const EntryPlus3& en : v.entries) {
    e.Present(true);
    e.Hyper(en.fileid);
    e.String(en.name);
    e.Hyper(en.cookie);
    EncodeEntryPlusTail(e, en);
  }
  e.Present(false);
  e.Bool(v.eof);
}
bool Decode(XdrDecoder& d, ReaddirplusRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->dir_attributes);
  if (!d.ok() || v->status != NfsStat3::kOk) return d.ok();
  DecodeVerf(d, &v->cookieverf);
  v->entries.clear();
  while (d.Present()) {
    if (v->entries.size() == kMaxEntries) {
      d.Fail(XdrError::kTooLong);
      return false;
    }
    EntryPlus3& en = v->entries.emplace_back();
    en.fileid = d.Hyper();
    DecodeString(d, kMaxName, &en.name);
    en.cookie = d.Hyper();
    Decode(d, &en.name_attributes);
    Decode(d, &en.name_handle);
    if (!d.ok()) return false;
  }
  v->eof = d.Bool();
  return d.ok();
}

void Encode(XdrEncoder& e, const FsstatRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.obj_attributes);
  if (v.status != NfsStat3::kOk) return;
  for (uint64_t x : {v.tbytes, v.fbytes, v.abytes, v.tfiles, v.ffiles, v.afiles}) e.Hyper(x);
  e.U32(v.invarsec);
}
bool Decode(XdrDecoder& d, FsstatRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->obj_attributes);
  if (!d.ok() || v->status != NfsStat3::kOk) return d.ok();
  for (uint64_t* x : {&v->tbytes, &v->fbytes, &v->abytes, &v->tfiles, &v->ffiles, &v->afiles}) *x = d.Hyper();
  v->invarsec = d.U32();
  return d.ok();
}

void Encode(XdrEncoder& e, const FsinfoRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.obj_attributes);
  if (v.status != NfsStat3::kOk) return;
  for (uint32_t x : {v.rtmax, v.rtpref, v.rtmult, v.wtmax, v.wtpref, v.wtmult, v.dtpref}) e.U32(x);
  e.Hyper(v.maxfilesize);
  EncodeTime(e, v.time_delta);
  e.U32(v.properties);
}
bool Decode(XdrDecoder& d, FsinfoRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->obj_attributes);
  if (!d.ok() || v->status != NfsStat3::kOk) return d.ok();
  for (uint32_t* x : {&v->rtmax, &v->rtpref, &v->rtmult, &v->wtmax, &v->wtpref, &v->wtmult, &v->dtpref}) {
    *x = d.U32();
  }
  v->maxfilesize = d.Hyper();
  DecodeTime(d, &v->time_delta);
  v->properties = d.U32();
  return d.ok();
}

void Encode(XdrEncoder& e, const PathconfRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.obj_attributes);
  if (v.status != NfsStat3::kOk) return;
  e.U32(v.linkmax);
  e.U32(v.name_max);
  for (bool b : {v.no_trunc, v.chown_restricted, v.case_insensitive, v.case_preserving}) e.Bool(b);
}
bool Decode(XdrDecoder& d, PathconfRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->obj_attributes);
  if (!d.ok() || v->status != NfsStat3::kOk) return d.ok();
  v->linkmax = d.U32();
  v->name_max = d.U32();
  for (bool* b : {&v->no_trunc, &v->chown_restricted, &v->case_insensitive, &v->case_preserving}) *b = d.Bool();
  return d.ok();
}

void Encode(XdrEncoder& e, const CommitRes& v) {
  EncodeStatus(e, v.status);
  Encode(e, v.file_wcc);
  if (v.status == NfsStat3::kOk) EncodeVerf(e, v.verf);
}
bool Decode(XdrDecoder& d, CommitRes* v) {
  v->status = DecodeStatus(d);
  Decode(d, &v->file_wcc);
  if (d.ok() && v->status == NfsStat3::kOk) DecodeVerf(d, &v->verf);
  return d.ok();
}

// ---------------------------------------------------------------- MOUNT

void EncodeDirpath(XdrEncoder& e, std::string_view path) { e.String(path); }
bool DecodeDirpath(XdrDecoder& d, std::string* path) { return DecodeString(d, kMaxPath, path); }

void Encode(XdrEncoder& e, const MntRes& v) {
  e.Enum(static_cast<int32_t>(v.status));
  if (v.status != MountStat3::kOk) return;
  Encode(e, v.fhandle);
  e.U32(static_cast<uint32_t>(v.auth_flavors.size()));
  for (uint32_t f : v.auth_flavors) e.U32(f);
}
bool Decode(XdrDecoder& d, MntRes* v) {
  v->status = static_cast<MountStat3>(d.U32());
  if (!d.ok() || v->status != MountStat3::kOk) return d.ok();
  Decode(d, &v->fhandle);
  const uint32_t n = d.U32();
  if (n > 16) d.Fail(XdrError::kTooLong);
  if (!d.ok()) return false;
  v->auth_flavors.resize(n);
  for (uint32_t& f : v->auth_flavors) f = d.U32();
  return d.ok();
}

void EncodeMountList(XdrEncoder& e, const std::vector<MountEntry>& v) {
  for (const MountEntry& m : v) {
    e.Present(true);
    e.String(m.hostname);
    e.String(m.directory);
  }
  e.Present(false);
}
bool DecodeMountList(XdrDecoder& d, std::vector<MountEntry>* v) {
  v->clear();
  while (d.Present()) {
    if (v->size() == kMaxEntries) {
      d.Fail(XdrError::kTooLong);
      return false;
    }
    MountEntry& m = v->emplace_back();
    DecodeString(d, kMaxMountName, &m.hostname);
    DecodeString(d, kMaxPath, &m.directory);
    if (!d.ok()) return false;
  }
  return d.ok();
}

void EncodeExports(XdrEncoder& e, const std::vector<ExportEntry>& v) {
  for (const ExportEntry& x : v) {
    e.Present(true);
    e.String(x.dir);
    for (const std::string& g : x.groups) {
      e.Present(true);
      e.String(g);
    }
    e.Present(false);
  }
  e.Present(false);
}
bool DecodeExports(XdrDecoder& d, std::vector<ExportEntry>* v) {
  v->clear();
  while (d.Present()) {
    if (v->size() == kMaxEntries) {
      d.Fail(XdrError::kTooLong);
      return false;
    }
    ExportEntry& x = v->emplace_back();
    DecodeString(d, kMaxPath, &x.dir);
    while (d.Present()) {
      if (x.groups.size() == kMaxEntries) {
        d.Fail(XdrError::kTooLong);
        return false;
      }
      DecodeString(d, kMaxMountName, &x.groups.emplace_back());
      if (!d.ok()) return false;
    }
    if (!d.ok()) return false;
  }
  return d.ok();
}

size_t Entry3Size(const Entry3& e) { return 4 + 8 + 4 + XdrRoundUp(e.name.size()) + 8; }

size_t EntryPlus3Size(const EntryPlus3& e) {
  size_t n = Entry3Size(Entry3{e.fileid, e.name, e.cookie});
  n += 4 + (e.name_attributes.present ? 84 : 0);
  n += 4 + (e.name_handle.present ? 4 + XdrRoundUp(e.name_handle.fh.length) : 0);
  return n;
}

}  // namespace iwarp::nfs
