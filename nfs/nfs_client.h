// An NFSv3 / MOUNT v3 client over rpc::ClientTransport (TCP today, RPC-over-
// RDMA unchanged): what iwarp-nfs and the tests use.
//
// RpcCaller issues calls of one program with an AUTH_SYS credential, async
// (Start + Poll, for queue depth > 1) or sync (Call). NfsClient adds the
// procedures the CLI needs. Single-threaded: the transport's Poll runs the
// callbacks. WRITE data goes out as a DDP-eligible piece of the caller's
// buffer (no copy); READ data is copied out of the reply into the caller's
// buffer inside the completion.
#ifndef IWARPD_NFS_NFS_CLIENT_H_
#define IWARPD_NFS_NFS_CLIENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nfs/nfs_xdr.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/rpc_transport.h"

namespace iwarp::nfs {

class RpcCaller {
 public:
  using Encoder = std::function<void(XdrEncoder&)>;
  // Decodes the results; false if they do not decode.
  using Decoder = std::function<bool(XdrDecoder&)>;
  using Done = std::function<void(const absl::Status&)>;

  RpcCaller(rpc::ClientTransport& transport, uint32_t prog, uint32_t vers, const rpc::OpaqueAuth& cred);

  // Starts a call; `inline_args_bytes` bounds the encoded arguments (DDP
  // bodies not counted). done(OK) after `decode` accepted the results;
  // otherwise a status naming the RPC or transport failure.
  // `options` tells an RDMA transport where DDP-eligible results may be
  // placed (READ data, READLINK path: Write chunks) and how long the reply
  // may be (READDIR, READDIRPLUS: a Reply chunk when over the inline size).
  absl::Status Start(uint32_t proc, size_t inline_args_bytes, const Encoder& encode, Decoder decode, Done done,
                     const rpc::CallOptions& options = {});
  // Start, then Poll until it completed.
  absl::Status Call(uint32_t proc, size_t inline_args_bytes, const Encoder& encode, Decoder decode,
                    const rpc::CallOptions& options = {});
  int Poll(int timeout_ms) { return transport_.Poll(timeout_ms); }
  size_t outstanding() const { return calls_.size(); }

 private:
  struct Pending {
    std::vector<uint8_t> buf;
    rpc::Message msg;
  };
  rpc::ClientTransport& transport_;
  uint32_t prog_;
  uint32_t vers_;
  rpc::OpaqueAuth cred_;
  uint32_t next_xid_;
  std::map<uint32_t, std::unique_ptr<Pending>> calls_;
};

// "NFS3ERR_NOENT" etc. as a Status (kOk: OK).
absl::Status NfsError(NfsStat3 s, std::string_view what);

class NfsClient {
 public:
  NfsClient(rpc::ClientTransport& mount, rpc::ClientTransport& nfs, const rpc::OpaqueAuth& cred)
      : mount_(mount, kMountProgram, kMountVersion, cred), nfs_(nfs, kNfsProgram, kNfsVersion, cred) {}

  // MOUNT MNT: the export's root handle.
  absl::StatusOr<Fh3> Mount(std::string_view path);
  absl::Status Unmount(std::string_view path);
  absl::StatusOr<std::vector<ExportEntry>> Exports();

  // Walks "a/b/c" from `dir` (LOOKUP per component; "" is `dir`).
  absl::StatusOr<Fh3> Resolve(const Fh3& dir, std::string_view path);
  absl::StatusOr<Fattr3> Getattr(const Fh3& fh);
  absl::StatusOr<LookupRes> Lookup(const Fh3& dir, std::string_view name);
  // Every entry, READDIRPLUS until eof.
  absl::StatusOr<std::vector<EntryPlus3>> ListDir(const Fh3& dir);
  // READ into out; returns bytes read, *eof set.
  // `out_stag`: the registration of `out` (0: none).
  absl::StatusOr<uint32_t> Read(const Fh3& fh, uint64_t offset, MutableByteSpan out, bool* eof,
                                uint32_t out_stag = 0);
  // `stag`: the registration of `data` with the RDMA transport (0: none;
  // the transport then copies it into its own registered memory).
  absl::StatusOr<WriteRes> Write(const Fh3& fh, uint64_t offset, ByteSpan data, StableHow stable, uint32_t stag = 0);
  absl::StatusOr<CommitRes> Commit(const Fh3& fh);
  absl::StatusOr<Fh3> Create(const Fh3& dir, std::string_view name, uint32_t mode, CreateMode how);
  absl::StatusOr<Fh3> Mkdir(const Fh3& dir, std::string_view name, uint32_t mode);
  absl::Status Remove(const Fh3& dir, std::string_view name);
  absl::Status Rmdir(const Fh3& dir, std::string_view name);
  absl::Status Rename(const Fh3& from_dir, std::string_view from, const Fh3& to_dir, std::string_view to);
  absl::Status Setattr(const Fh3& fh, const Sattr3& attr);

  RpcCaller& nfs() { return nfs_; }
  RpcCaller& mount() { return mount_; }

 private:
  RpcCaller mount_;
  RpcCaller nfs_;
};

// An AUTH_SYS credential for (uid, gid) named `machine`.
rpc::OpaqueAuth AuthSysCred(uint32_t uid, uint32_t gid, std::string_view machine);

}  // namespace iwarp::nfs

#endif  // IWARPD_NFS_NFS_CLIENT_H_
