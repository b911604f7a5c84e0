#include "nfs/nfs_fuzz_common.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "nfs/fs.h"
#include "nfs/nfs_client.h"
#include "nfs/nfs_service.h"
#include "nfs/nfs_xdr.h"
#include "nfs/text.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/rpc_server.h"

namespace iwarp::nfs::fuzz {
namespace {

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

class Conn : public rpc::ServerConnection {
 public:
  bool Reply(rpc::CallToken, const rpc::Message& reply) override {
    ++replies;
    bytes.clear();
    for (const rpc::Piece& p : reply) {
      bytes.insert(bytes.end(), p.bytes.begin(), p.bytes.end());
      if (p.ddp) bytes.insert(bytes.end(), rpc::XdrPadding(p.bytes.size()), 0);
    }
    return true;
  }
  void Drop(rpc::CallToken) override { ++drops; }
  uint32_t peer_ipv4() const override { return 0x7f000001; }
  uint16_t peer_port() const override { return 999; }
  int replies = 0;
  int drops = 0;
  std::vector<uint8_t> bytes;
};

struct World {
  NfsdConfig config;
  std::unique_ptr<HandleCodec> codec;
  std::unique_ptr<FileSystem> fs;
  std::unique_ptr<rpc::RpcServer> rpc;
  std::unique_ptr<NfsService> service;
  Fh3 handles[4];
};

World& TheWorld() {
  static World* w = [] {
    auto* world = new World();
    char tmpl[] = "/tmp/nfs_fuzz.XXXXXX";
    Check(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    mkdir((dir + "/exp").c_str(), 0777);
    std::ofstream(dir + "/exp/f") << "some file contents\n";
    symlink("../..", (dir + "/exp/l").c_str());
    mkdir((dir + "/exp/d").c_str(), 0777);
    auto c = ParseNfsdConfig(Cat("version: 1\nstate_dir: ", dir, "/state\nio_threads: 1\nexports:\n  - {path: ", dir,
                                 "/exp, id: 1, clients: [127.0.0.1], root_squash: false}\n"),
                             "fuzz.yaml");
    Check(c.ok());
    world->config = *c;
    Secret s{};
    s[0] = 42;
    world->codec = std::make_unique<HandleCodec>(s);
    auto fs = FileSystem::Open(world->config, *world->codec, Verf8{1});
    Check(fs.ok());
    world->fs = std::move(*fs);
    world->rpc = std::make_unique<rpc::RpcServer>(rpc::RpcServerOptions{.reply_buffer_bytes = kMaxDirReply + 8192});
    auto svc = NfsService::Create(world->config, *world->fs, *world->rpc);
    Check(svc.ok());
    world->service = std::move(*svc);
    world->handles[1] = *world->fs->RootHandle(1);
    // Handles of f and l through the server itself (LOOKUP).
    for (int i = 2; i < 4; ++i) {
      DirOpArgs a{world->handles[1], i == 2 ? "f" : "l"};
      NfsArgs args = a;
      Caller caller;
      caller.auth_sys = true;
      caller.peer_ipv4 = 0x7f000001;
      std::vector<uint8_t> buf(16);
      NfsResult r = world->fs->Execute(static_cast<uint32_t>(Proc3::kLookup), args, caller, buf);
      if (auto* l = std::get_if<LookupRes>(&r); l != nullptr && l->status == NfsStat3::kOk) world->handles[i] = l->object;
    }
    return world;
  }();
  return *w;
}

// The results of `proc` decode completely.
bool ResultsDecode(Program prog, uint32_t proc, XdrDecoder& d) {
  auto all = [&](auto res) { return Decode(d, &res) && d.remaining() == 0; };
  if (prog == Program::kMount) {
    switch (static_cast<MountProc>(proc)) {
      case MountProc::kMnt: return all(MntRes{});
      case MountProc::kDump: {
        std::vector<MountEntry> v;
        return DecodeMountList(d, &v) && d.remaining() == 0;
      }
      case MountProc::kExport: {
        std::vector<ExportEntry> v;
        return DecodeExports(d, &v) && d.remaining() == 0;
      }
      default: return d.remaining() == 0;
    }
  }
  switch (static_cast<Proc3>(proc)) {
    case Proc3::kNull: return d.remaining() == 0;
    case Proc3::kGetattr: return all(GetattrRes{});
    case Proc3::kSetattr: case Proc3::kRemove: case Proc3::kRmdir: return all(WccRes{});
    case Proc3::kLookup: return all(LookupRes{});
    case Proc3::kAccess: return all(AccessRes{});
    case Proc3::kReadlink: return all(ReadlinkRes{});
    case Proc3::kRead: {
      ReadRes r;
      std::vector<uint8_t> scratch(kMaxData);
      return Decode(d, &r, scratch) && d.remaining() == 0 && (r.status != NfsStat3::kOk || r.count == r.data.size());
    }
    case Proc3::kWrite: return all(WriteRes{});
    case Proc3::kCreate: case Proc3::kMkdir: case Proc3::kSymlink: case Proc3::kMknod: return all(CreateRes{});
    case Proc3::kRename: return all(RenameRes{});
    case Proc3::kLink: return all(LinkRes{});
    case Proc3::kReaddir: return all(ReaddirRes{});
    case Proc3::kReaddirplus: return all(ReaddirplusRes{});
    case Proc3::kFsstat: return all(FsstatRes{});
    case Proc3::kFsinfo: return all(FsinfoRes{});
    case Proc3::kPathconf: return all(PathconfRes{});
    case Proc3::kCommit: return all(CommitRes{});
  }
  return false;
}

}  // namespace

void RunOne(Program prog, std::span<const uint32_t> procs, const uint8_t* data, size_t size) {
  if (size < 2 || procs.empty()) return;
  World& w = TheWorld();
  const uint32_t proc = procs[data[0] % procs.size()];
  const Fh3* fh = (data[1] & 3) == 0 ? nullptr : &w.handles[data[1] & 3];
  static uint32_t xid = 0;
  ++xid;
  std::vector<uint8_t> buf(rpc::kMaxCallHeaderBytes + kFhSize + 8 + size);
  rpc::CallHeader h;
  h.xid = xid;
  h.prog = prog == Program::kNfs ? kNfsProgram : kMountProgram;
  h.vers = 3;
  h.proc = proc;
  h.cred = AuthSysCred((data[1] & 4) ? 1000 : 0, 0, "fuzz");
  XdrEncoder e(buf);
  rpc::EncodeCallHeader(e, h);
  if (fh != nullptr) Encode(e, *fh);
  // The fuzz bytes as they are (any length: the decoder must cope).
  rpc::Message call;
  Check(e.Finish(&call));
  std::vector<uint8_t> stream;
  for (const rpc::Piece& p : call) stream.insert(stream.end(), p.bytes.begin(), p.bytes.end());
  stream.insert(stream.end(), data + 2, data + size);
  rpc::Message m;
  m.Add(rpc::Piece{ByteSpan(stream.data(), stream.size())});

  Conn conn;
  w.rpc->OnCall(conn, xid, m);
  while (conn.replies + conn.drops == 0 && w.service->jobs_pending() > 0) {
    pollfd p{w.service->completion_fd(), POLLIN, 0};
    poll(&p, 1, 1000);
    w.service->DrainCompletions();
  }
  // The reply-done hook releases the job's buffers.
  w.rpc->OnReplyDone(conn, xid);
  Check(conn.replies + conn.drops == 1);
  if (conn.drops == 1) return;  // a DRC in-progress duplicate (same XID never repeats here)
  rpc::Message rm;
  rm.Add(rpc::Piece{ByteSpan(conn.bytes.data(), conn.bytes.size())});
  XdrDecoder d(rm);
  rpc::ReplyHeader rh;
  Check(rpc::DecodeReplyHeader(d, &rh) == rpc::ReplyDecode::kOk);
  Check(rh.xid == xid);
  Check(rh.stat == rpc::ReplyStat::kAccepted);
  Check(rh.accept_stat == rpc::AcceptStat::kSuccess || rh.accept_stat == rpc::AcceptStat::kGarbageArgs);
  if (rh.accept_stat == rpc::AcceptStat::kSuccess) Check(ResultsDecode(prog, proc, d));
}

}  // namespace iwarp::nfs::fuzz
