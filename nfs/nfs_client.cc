#include "nfs/nfs_client.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "nfs/text.h"
#include "rpcrdma/rpc_xdr.h"

namespace iwarp::nfs {

rpc::OpaqueAuth AuthSysCred(uint32_t uid, uint32_t gid, std::string_view machine) {
  rpc::AuthSys a;
  a.uid = uid;
  a.gid = gid;
  a.SetName(machine.substr(0, rpc::kMaxMachineName));
  rpc::OpaqueAuth cred;
  rpc::EncodeAuthSys(a, &cred);
  return cred;
}

absl::Status NfsError(NfsStat3 s, std::string_view what) {
  if (s == NfsStat3::kOk) return absl::OkStatus();
  const std::string msg = Cat(what, ": ", NfsStat3Name(s));
  switch (s) {
    case NfsStat3::kNoent: case NfsStat3::kStale: case NfsStat3::kBadhandle: return absl::NotFoundError(msg);
    case NfsStat3::kAcces: case NfsStat3::kPerm: case NfsStat3::kRofs: return absl::PermissionDeniedError(msg);
    case NfsStat3::kExist: return absl::AlreadyExistsError(msg);
    default: return absl::FailedPreconditionError(msg);
  }
}

RpcCaller::RpcCaller(rpc::ClientTransport& transport, uint32_t prog, uint32_t vers, const rpc::OpaqueAuth& cred)
    : transport_(transport), prog_(prog), vers_(vers), cred_(cred) {
  if (getrandom(&next_xid_, sizeof(next_xid_), 0) != sizeof(next_xid_)) next_xid_ = 0x1234;
}

absl::Status RpcCaller::Start(uint32_t proc, size_t inline_args_bytes, const Encoder& encode, Decoder decode,
                              Done done, const rpc::CallOptions& options) {
  uint32_t xid = next_xid_++;
  while (calls_.count(xid) != 0) xid = next_xid_++;
  auto p = std::make_unique<Pending>();
  p->buf.resize(rpc::kMaxCallHeaderBytes + inline_args_bytes + 64);
  rpc::CallHeader h;
  h.xid = xid;
  h.prog = prog_;
  h.vers = vers_;
  h.proc = proc;
  h.cred = cred_;
  XdrEncoder e(p->buf);
  rpc::EncodeCallHeader(e, h);
  if (encode) encode(e);
  if (!e.Finish(&p->msg)) return absl::InvalidArgumentError("call arguments do not fit");
  Pending* raw = p.get();
  calls_.emplace(xid, std::move(p));
  const int rc = transport_.Call(
      raw->msg, options,
      [this, xid, decode = std::move(decode), done = std::move(done)](const rpc::ReplyView& reply) {
        absl::Status st;
        if (reply.status != 0) {
          st = absl::UnavailableError(Cat("rpc: transport: ", strerror(-reply.status)));
        } else {
          XdrDecoder d(reply);
          rpc::ReplyHeader rh;
          const rpc::ReplyDecode rd = rpc::DecodeReplyHeader(d, &rh);
          if (rd != rpc::ReplyDecode::kOk) {
            st = absl::DataLossError(Cat("rpc: reply: ", rpc::ReplyDecodeName(rd)));
          } else if (rh.stat != rpc::ReplyStat::kAccepted) {
            st = absl::PermissionDeniedError(Cat("rpc: call denied (auth_stat ", static_cast<int>(rh.auth_stat), ")"));
          } else if (rh.accept_stat != rpc::AcceptStat::kSuccess) {
            st = absl::UnavailableError(Cat("rpc: accept_stat ", static_cast<int>(rh.accept_stat)));
          } else if (decode && !decode(d)) {
            st = absl::DataLossError("rpc: results do not decode");
          }
        }
        calls_.erase(xid);  // after the decoder: the reply may reference the call
        done(st);
      });
  if (rc != 0) {
    calls_.erase(xid);
    return absl::UnavailableError(Cat("rpc: call: ", strerror(-rc)));
  }
  return absl::OkStatus();
}

absl::Status RpcCaller::Call(uint32_t proc, size_t inline_args_bytes, const Encoder& encode, Decoder decode,
                             const rpc::CallOptions& options) {
  bool finished = false;
  absl::Status result;
  absl::Status st = Start(
      proc, inline_args_bytes, encode, std::move(decode),
      [&](const absl::Status& s) {
        finished = true;
        result = s;
      },
      options);
  if (!st.ok()) return st;
  while (!finished) {
    const int rc = transport_.Poll(1000);
    if (rc < 0) return absl::UnavailableError(Cat("rpc: poll: ", strerror(-rc)));
  }
  return result;
}

namespace {
constexpr size_t kSmallArgs = 2 * kFhSize + 2 * kMaxPath + 256;

template <typename Args>
RpcCaller::Encoder EncodeArgs(const Args& a) {
  return [&a](XdrEncoder& e) { Encode(e, a); };
}
template <typename Res>
RpcCaller::Decoder DecodeRes(Res* r) {
  return [r](XdrDecoder& d) { return Decode(d, r) && d.remaining() == 0; };
}
}  // namespace

absl::StatusOr<Fh3> NfsClient::Mount(std::string_view path) {
  MntRes res;
  const std::string p(path);
  absl::Status st = mount_.Call(static_cast<uint32_t>(MountProc::kMnt), kMaxPath + 8,
                                [&](XdrEncoder& e) { EncodeDirpath(e, p); }, DecodeRes(&res));
  if (!st.ok()) return st;
  if (res.status != MountStat3::kOk) {
    return absl::PermissionDeniedError(Cat("mount ", path, ": mountstat3 ", static_cast<uint32_t>(res.status)));
  }
  return res.fhandle;
}

absl::Status NfsClient::Unmount(std::string_view path) {
  const std::string p(path);
  return mount_.Call(static_cast<uint32_t>(MountProc::kUmnt), kMaxPath + 8, [&](XdrEncoder& e) { EncodeDirpath(e, p); },
                     nullptr);
}

absl::StatusOr<std::vector<ExportEntry>> NfsClient::Exports() {
  std::vector<ExportEntry> list;
  rpc::CallOptions o;
  o.max_reply_bytes = 64 * 1024;  // up to 256 exports with their client lists
  absl::Status st = mount_.Call(
      static_cast<uint32_t>(MountProc::kExport), 0, nullptr, [&](XdrDecoder& d) { return DecodeExports(d, &list); },
      o);
  if (!st.ok()) return st;
  return list;
}

absl::StatusOr<LookupRes> NfsClient::Lookup(const Fh3& dir, std::string_view name) {
  DirOpArgs a{dir, std::string(name)};
  LookupRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kLookup), kSmallArgs, EncodeArgs(a), DecodeRes(&res));
  if (!st.ok()) return st;
  return res;
}

absl::StatusOr<Fh3> NfsClient::Resolve(const Fh3& dir, std::string_view path) {
  Fh3 cur = dir;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    const std::string_view c = path.substr(i, j - i);
    i = j + 1;
    if (c.empty() || c == ".") continue;
    absl::StatusOr<LookupRes> r = Lookup(cur, c);
    if (!r.ok()) return r.status();
    if (r->status != NfsStat3::kOk) return NfsError(r->status, Cat("lookup ", c));
    cur = r->object;
  }
  return cur;
}

absl::StatusOr<Fattr3> NfsClient::Getattr(const Fh3& fh) {
  FhArgs a{fh};
  GetattrRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kGetattr), kSmallArgs, EncodeArgs(a), DecodeRes(&res));
  if (!st.ok()) return st;
  if (res.status != NfsStat3::kOk) return NfsError(res.status, "getattr");
  return res.obj_attributes;
}

absl::StatusOr<std::vector<EntryPlus3>> NfsClient::ListDir(const Fh3& dir) {
  std::vector<EntryPlus3> all;
  ReaddirplusArgs a;
  a.dir = dir;
  a.dircount = 8192;
  a.maxcount = 32768;
  for (int rounds = 0; rounds < 100000; ++rounds) {
    ReaddirplusRes res;
    rpc::CallOptions o;
    o.max_reply_bytes = a.maxcount + 1024;  // over RDMA: a Reply chunk when longer than inline
    absl::Status st =
        nfs_.Call(static_cast<uint32_t>(Proc3::kReaddirplus), kSmallArgs, EncodeArgs(a), DecodeRes(&res), o);
    if (!st.ok()) return st;
    if (res.status != NfsStat3::kOk) return NfsError(res.status, "readdirplus");
    for (EntryPlus3& e : res.entries) {
      a.cookie = e.cookie;
      all.push_back(std::move(e));
    }
    a.cookieverf = res.cookieverf;
    if (res.eof) return all;
    if (res.entries.empty()) return absl::DataLossError("readdirplus: no entries and no eof");
  }
  return absl::ResourceExhaustedError("readdirplus: too many rounds");
}

absl::StatusOr<uint32_t> NfsClient::Read(const Fh3& fh, uint64_t offset, MutableByteSpan out, bool* eof,
                                          uint32_t out_stag) {
  ReadArgs a{fh, offset, static_cast<uint32_t>(std::min<size_t>(out.size(), kMaxData))};
  ReadRes res;
  uint32_t got = 0;
  // RFC 8267 4.1: READ data is DDP-eligible; over RDMA it is placed in `out`
  // (or the transport's registered bounce buffer) by the server's Write.
  rpc::CallOptions o;
  o.ddp_sinks[0] = rpc::ReplySink{out.first(a.count), out_stag};
  o.ddp_sink_count = 1;
  absl::Status st = nfs_.Call(
      static_cast<uint32_t>(Proc3::kRead), kSmallArgs, EncodeArgs(a),
      [&](XdrDecoder& d) {
        if (!Decode(d, &res) || d.remaining() != 0) return false;
        if (res.status == NfsStat3::kOk) {
          if (res.data.size() > out.size()) return false;
          if (!res.data.empty() && res.data.data() != out.data()) {
            std::memmove(out.data(), res.data.data(), res.data.size());
          }
          got = static_cast<uint32_t>(res.data.size());
        }
        return true;
      },
      o);
  if (!st.ok()) return st;
  if (res.status != NfsStat3::kOk) return NfsError(res.status, "read");
  *eof = res.eof;
  return got;
}

absl::StatusOr<WriteRes> NfsClient::Write(const Fh3& fh, uint64_t offset, ByteSpan data, StableHow stable,
                                          uint32_t stag) {
  WriteArgs a{fh, offset, static_cast<uint32_t>(data.size()), stable, data};
  WriteRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kWrite), kSmallArgs,
                              [&](XdrEncoder& e) { Encode(e, a, stag); }, DecodeRes(&res));
  if (!st.ok()) return st;
  if (res.status != NfsStat3::kOk) return NfsError(res.status, "write");
  return res;
}

absl::StatusOr<CommitRes> NfsClient::Commit(const Fh3& fh) {
  CommitArgs a{fh, 0, 0};
  CommitRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kCommit), kSmallArgs, EncodeArgs(a), DecodeRes(&res));
  if (!st.ok()) return st;
  if (res.status != NfsStat3::kOk) return NfsError(res.status, "commit");
  return res;
}

absl::StatusOr<Fh3> NfsClient::Create(const Fh3& dir, std::string_view name, uint32_t mode, CreateMode how) {
  CreateArgs a;
  a.where = {dir, std::string(name)};
  a.mode = how;
  a.obj_attributes.set_mode = true;
  a.obj_attributes.mode = mode;
  if (how == CreateMode::kExclusive) getrandom(a.verf.data(), a.verf.size(), 0);
  CreateRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kCreate), kSmallArgs, EncodeArgs(a), DecodeRes(&res));
  if (!st.ok()) return st;
  if (res.status != NfsStat3::kOk) return NfsError(res.status, Cat("create ", name));
  if (!res.obj.present) return Resolve(dir, name);
  return res.obj.fh;
}

absl::StatusOr<Fh3> NfsClient::Mkdir(const Fh3& dir, std::string_view name, uint32_t mode) {
  MkdirArgs a;
  a.where = {dir, std::string(name)};
  a.attributes.set_mode = true;
  a.attributes.mode = mode;
  CreateRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kMkdir), kSmallArgs, EncodeArgs(a), DecodeRes(&res));
  if (!st.ok()) return st;
  if (res.status != NfsStat3::kOk) return NfsError(res.status, Cat("mkdir ", name));
  if (!res.obj.present) return Resolve(dir, name);
  return res.obj.fh;
}

absl::Status NfsClient::Remove(const Fh3& dir, std::string_view name) {
  DirOpArgs a{dir, std::string(name)};
  WccRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kRemove), kSmallArgs, EncodeArgs(a), DecodeRes(&res));
  if (!st.ok()) return st;
  return NfsError(res.status, Cat("remove ", name));
}

absl::Status NfsClient::Rmdir(const Fh3& dir, std::string_view name) {
  DirOpArgs a{dir, std::string(name)};
  WccRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kRmdir), kSmallArgs, EncodeArgs(a), DecodeRes(&res));
  if (!st.ok()) return st;
  return NfsError(res.status, Cat("rmdir ", name));
}

absl::Status NfsClient::Rename(const Fh3& from_dir, std::string_view from, const Fh3& to_dir, std::string_view to) {
  RenameArgs a{{from_dir, std::string(from)}, {to_dir, std::string(to)}};
  RenameRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kRename), kSmallArgs, EncodeArgs(a), DecodeRes(&res));
  if (!st.ok()) return st;
  return NfsError(res.status, Cat("rename ", from));
}

absl::Status NfsClient::Setattr(const Fh3& fh, const Sattr3& attr) {
  SetattrArgs a{fh, attr, false, {}};
  WccRes res;
  absl::Status st = nfs_.Call(static_cast<uint32_t>(Proc3::kSetattr), kSmallArgs, EncodeArgs(a), DecodeRes(&res));
  if (!st.ok()) return st;
  return NfsError(res.status, "setattr");
}

}  // namespace iwarp::nfs
