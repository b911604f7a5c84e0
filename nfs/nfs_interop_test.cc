// iwarp-nfsd end to end on 127.0.0.1 (in-process server thread, its real TCP
// transports), against libnfs (nfs-ls, nfs-cp, nfs-cat and libnfs_client, a
// C program on libnfs) as the independent client, and against raw calls for
// what libnfs cannot do (a second source address, forged handles,
// retransmissions with one XID).
//
// Needs root (open_by_handle_at); libnfs tests skip, saying why, when the
// tools are missing. IWARP_NFS_LONG=1 adds the 1 GiB copy.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/sha256.h"
#include "gtest/gtest.h"
#include "nfs/handle.h"
#include "nfs/nfs_client.h"
#include "nfs/nfs_service.h"
#include "nfs/nfs_xdr.h"
#include "nfs/text.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/rpc_tcp.h"

namespace iwarp::nfs {
namespace {

std::string RunCommand(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

bool HaveTool(const std::string& name) {
  int st;
  RunCommand("command -v " + name, &st);
  return st == 0;
}

std::string FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.Update(ByteSpan(reinterpret_cast<const uint8_t*>(buf.data()), static_cast<size_t>(in.gcount())));
  }
  const Sha256::Digest d = h.Finish();
  return ToHex(d);
}

void WriteRandomFile(const std::string& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  std::mt19937_64 rng(bytes);
  std::vector<uint64_t> buf(1 << 17);
  for (size_t done = 0; done < bytes;) {
    for (auto& w : buf) w = rng();
    const size_t n = std::min(bytes - done, buf.size() * 8);
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(n));
    done += n;
  }
}

// A server in a thread, with a fresh directory tree:
//   DIR/exp   rw export, clients 127.0.0.1, no root squash
//   DIR/ro    ro export, clients 127.0.0.0/8
//   DIR/only1 rw export, clients 127.0.0.1/32 only (refuses 127.0.0.2)
//   DIR/outside/secret.txt   not exported; exp/escape -> ../outside, exp/etc -> /etc
class NfsdFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (open_by_handle_at needs CAP_DAC_READ_SEARCH)";
    char tmpl[] = "/tmp/nfs_interop.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* d : {"exp", "ro", "only1", "outside", "state"}) mkdir((dir_ + "/" + d).c_str(), 0755);
    std::ofstream(dir_ + "/outside/secret.txt") << "TOP-SECRET\n";
    std::ofstream(dir_ + "/ro/readme.txt") << "read only\n";
    ASSERT_EQ(symlink("../outside", (dir_ + "/exp/escape").c_str()), 0);
    ASSERT_EQ(symlink("/etc", (dir_ + "/exp/etc").c_str()), 0);
    const std::string yaml = Cat("version: 1\nlisten: {address: 127.0.0.1, nfs_port: 0, mount_port: 0}\n",
                                 "state_dir: ", dir_, "/state\nrpcbind: off\nio_threads: 4\nexports:\n",
                                 "  - {path: ", dir_, "/exp, clients: [127.0.0.1], root_squash: false}\n",
                                 "  - {path: ", dir_, "/ro, clients: [127.0.0.0/8], access: ro}\n",
                                 "  - {path: ", dir_, "/only1, clients: [127.0.0.1/32], root_squash: false}\n");
    auto c = ParseNfsdConfig(yaml, "test.yaml");
    ASSERT_TRUE(c.ok()) << c.status();
    config_ = *c;
    StartServer();
  }

  void StartServer() {
    auto d = Nfsd::Start(config_);
    ASSERT_TRUE(d.ok()) << d.status();
    nfsd_ = std::move(*d);
    stop_ = false;
    thread_ = std::thread([this] {
      while (!stop_.load(std::memory_order_acquire)) {
        if (!nfsd_->Poll(20).ok()) break;
      }
    });
  }
  void StopServer() {
    if (!thread_.joinable()) return;
    stop_.store(true, std::memory_order_release);
    thread_.join();
    stats_ = nfsd_->Stats();
    nfsd_.reset();
  }

  void TearDown() override {
    StopServer();
    if (!dir_.empty()) {
      int st;
      RunCommand("rm -rf " + dir_, &st);
    }
  }

  std::string Url(const std::string& export_name, const std::string& path = "") const {
    return Cat("nfs://127.0.0.1", dir_, "/", export_name, path, "?nfsport=", nfs_port(),
               "&mountport=", mount_port(), "&version=3");
  }
  uint16_t nfs_port() const { return nfsd_->nfs_port(); }
  uint16_t mount_port() const { return nfsd_->mount_port(); }

  // libnfs_client URL OP ARGS: its result= value (errno), or a failure.
  int Libnfs(const std::string& export_name, const std::string& args, std::string* out = nullptr) {
    const char* tool = std::getenv("NFS_LIBNFS_CLIENT");
    int st;
    const std::string o = RunCommand(Cat(tool, " '", Url(export_name), "' ", args), &st);
    if (out != nullptr) *out = o;
    const size_t p = o.find("result=");
    EXPECT_NE(p, std::string::npos) << o;
    return p == std::string::npos ? 9999 : std::atoi(o.c_str() + p + 7);
  }
  bool HaveLibnfsClient() const {
    const char* tool = std::getenv("NFS_LIBNFS_CLIENT");
    return tool != nullptr && access(tool, X_OK) == 0;
  }

  std::string dir_;
  NfsdConfig config_;
  std::unique_ptr<Nfsd> nfsd_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::string stats_;
};

// ---------------------------------------------------------------- libnfs

void CopyRoundTrip(NfsdFixture* f, const std::string& dir, const std::string& url_in, const std::string& url_out,
                   size_t bytes) {
  const std::string src = dir + "/outside/src.bin";
  WriteRandomFile(src, bytes);
  int st;
  std::string out = RunCommand(Cat("nfs-cp ", src, " '", url_in, "'"), &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_EQ(FileSha256(dir + "/exp/big.bin"), FileSha256(src)) << "bytes on the server differ from the source";
  const std::string back = dir + "/outside/back.bin";
  out = RunCommand(Cat("nfs-cp '", url_out, "' ", back), &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_EQ(FileSha256(back), FileSha256(src)) << "bytes read back differ";
  (void)f;
}

TEST_F(NfsdFixture, LibnfsListsAndCopies64MiBBothWays) {
  if (!HaveTool("nfs-cp") || !HaveTool("nfs-ls")) GTEST_SKIP() << "libnfs-utils (nfs-cp, nfs-ls) not installed";
  CopyRoundTrip(this, dir_, Url("exp", "/big.bin"), Url("exp", "/big.bin"), 64u << 20);
  int st;
  const std::string ls = RunCommand(Cat("nfs-ls '", Url("exp"), "'"), &st);
  ASSERT_EQ(st, 0) << ls;
  EXPECT_NE(ls.find("big.bin"), std::string::npos) << ls;
  EXPECT_NE(ls.find("67108864"), std::string::npos) << "nfs-ls shows the size: " << ls;
  EXPECT_NE(ls.find("escape"), std::string::npos) << ls;
  StopServer();
  EXPECT_NE(stats_.find("bytes_written 67108864"), std::string::npos) << stats_;
}

TEST_F(NfsdFixture, LibnfsCopies1GiBWhenAsked) {
  if (std::getenv("IWARP_NFS_LONG") == nullptr) GTEST_SKIP() << "set IWARP_NFS_LONG=1 for the 1 GiB copy";
  if (!HaveTool("nfs-cp")) GTEST_SKIP() << "libnfs-utils not installed";
  CopyRoundTrip(this, dir_, Url("exp", "/big.bin"), Url("exp", "/big.bin"), 1u << 30);
}

TEST_F(NfsdFixture, LibnfsMkdirRenameRemoveRmdir) {
  if (!HaveLibnfsClient()) GTEST_SKIP() << "NFS_LIBNFS_CLIENT (built with libnfs-dev) not available";
  struct stat st;
  EXPECT_EQ(Libnfs("exp", "mkdir /d1"), 0);
  EXPECT_EQ(stat((dir_ + "/exp/d1").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(Libnfs("exp", "mkdir /d1"), -EEXIST);
  EXPECT_EQ(Libnfs("exp", "write /d1/f hello"), 0);
  std::string text;
  std::getline(std::ifstream(dir_ + "/exp/d1/f"), text);
  EXPECT_EQ(text, "hello");
  EXPECT_EQ(Libnfs("exp", "rmdir /d1"), -ENOTEMPTY);
  EXPECT_EQ(Libnfs("exp", "rename /d1/f /g"), 0);
  EXPECT_NE(stat((dir_ + "/exp/d1/f").c_str(), &st), 0);
  EXPECT_EQ(stat((dir_ + "/exp/g").c_str(), &st), 0);
  EXPECT_EQ(Libnfs("exp", "unlink /g"), 0);
  EXPECT_NE(stat((dir_ + "/exp/g").c_str(), &st), 0);
  EXPECT_EQ(Libnfs("exp", "rmdir /d1"), 0);
  EXPECT_NE(stat((dir_ + "/exp/d1").c_str(), &st), 0);
  EXPECT_EQ(Libnfs("exp", "unlink /nothing"), -ENOENT);
}

TEST_F(NfsdFixture, LibnfsReadOnlyExportRefusesWrites) {
  if (!HaveLibnfsClient()) GTEST_SKIP() << "NFS_LIBNFS_CLIENT not available";
  std::string out;
  EXPECT_EQ(Libnfs("ro", "cat /readme.txt", &out), 0);
  EXPECT_NE(out.find("read only"), std::string::npos) << out;
  EXPECT_EQ(Libnfs("ro", "write /new.txt x"), -EROFS);
  EXPECT_EQ(Libnfs("ro", "mkdir /d"), -EROFS);
  EXPECT_EQ(Libnfs("ro", "unlink /readme.txt"), -EROFS);
  struct stat st;
  EXPECT_EQ(stat((dir_ + "/ro/readme.txt").c_str(), &st), 0);
  EXPECT_NE(stat((dir_ + "/ro/new.txt").c_str(), &st), 0);
  StopServer();
  EXPECT_NE(stats_.find("nfs_status_NFS3ERR_ROFS"), std::string::npos) << stats_;
}

TEST_F(NfsdFixture, LibnfsEscapesStayInside) {
  if (!HaveLibnfsClient() || !HaveTool("nfs-cat")) GTEST_SKIP() << "libnfs tools not available";
  std::string out;
  // A symlink to ../outside, followed by the client: resolved inside the export.
  EXPECT_NE(Libnfs("exp", "cat /escape/secret.txt", &out), 0);
  EXPECT_EQ(out.find("TOP-SECRET"), std::string::npos) << out;
  // An absolute symlink to /etc: /etc inside the export, which has no passwd.
  EXPECT_NE(Libnfs("exp", "cat /etc/passwd", &out), 0);
  EXPECT_EQ(out.find("root:"), std::string::npos) << out;
  // ".." in the path.
  int st;
  out = RunCommand(Cat("nfs-cat '", Url("exp", "/../outside/secret.txt"), "'"), &st);
  EXPECT_EQ(out.find("TOP-SECRET"), std::string::npos) << out;
  EXPECT_NE(Libnfs("exp", "cat /../outside/secret.txt", &out), 0);
  EXPECT_EQ(out.find("TOP-SECRET"), std::string::npos) << out;
}

// ---------------------------------------------------------------- raw clients

// Flattens a Message into its XDR stream.
std::vector<uint8_t> Flatten(const rpc::Message& m) {
  std::vector<uint8_t> out;
  for (const rpc::Piece& p : m) {
    out.insert(out.end(), p.bytes.begin(), p.bytes.end());
    if (p.ddp) out.insert(out.end(), rpc::XdrPadding(p.bytes.size()), 0);
  }
  return out;
}

// A blocking record-marked client bound to a chosen source address.
class RawClient {
 public:
  RawClient(const char* source, uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, source, &a.sin_addr);
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    a.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ok_ = ok_ && connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~RawClient() { close(fd_); }
  bool ok() const { return ok_; }

  // Sends one call; encode writes the arguments.
  bool Send(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
            const std::function<void(XdrEncoder&)>& encode) {
    std::vector<uint8_t> buf(8192);
    rpc::CallHeader h;
    h.xid = xid;
    h.prog = prog;
    h.vers = vers;
    h.proc = proc;
    h.cred = AuthSysCred(0, 0, "raw");
    XdrEncoder e(buf);
    rpc::EncodeCallHeader(e, h);
    encode(e);
    rpc::Message m;
    if (!e.Finish(&m)) return false;
    std::vector<uint8_t> rec(4);
    const std::vector<uint8_t> body = Flatten(m);
    StoreBe32(rec.data(), rpc::kLastFragmentBit | static_cast<uint32_t>(body.size()));
    rec.insert(rec.end(), body.begin(), body.end());
    return write(fd_, rec.data(), rec.size()) == static_cast<ssize_t>(rec.size());
  }
  // Reads one reply record; empty on failure.
  std::vector<uint8_t> Receive() {
    uint8_t hdr[4];
    if (!ReadAll(hdr, 4)) return {};
    std::vector<uint8_t> body(LoadBe32(hdr) & rpc::kMaxFragmentLength);
    if (!ReadAll(body.data(), body.size())) return {};
    return body;
  }

 private:
  bool ReadAll(uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t r = read(fd_, p, n);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  int fd_ = -1;
  bool ok_ = false;
};

// Decodes a reply record: RPC header (must be SUCCESS), then `decode`.
template <typename Res>
bool DecodeReply(const std::vector<uint8_t>& bytes, Res* res) {
  rpc::Message m;
  m.Add(rpc::Piece{ByteSpan(bytes.data(), bytes.size())});
  XdrDecoder d(m);
  rpc::ReplyHeader h;
  if (rpc::DecodeReplyHeader(d, &h) != rpc::ReplyDecode::kOk || h.stat != rpc::ReplyStat::kAccepted ||
      h.accept_stat != rpc::AcceptStat::kSuccess) {
    return false;
  }
  return Decode(d, res) && d.remaining() == 0;
}

class ClientFixture : public NfsdFixture {
 protected:
  void Connect() {
    rpc::TcpClientOptions o;
    o.server_port = mount_port();
    auto m = rpc::TcpClient::Connect(o);
    ASSERT_TRUE(m.ok()) << m.status();
    o.server_port = nfs_port();
    auto n = rpc::TcpClient::Connect(o);
    ASSERT_TRUE(n.ok()) << n.status();
    mount_t_ = std::move(*m);
    nfs_t_ = std::move(*n);
    client_ = std::make_unique<NfsClient>(*mount_t_, *nfs_t_, AuthSysCred(0, 0, "test"));
  }
  void Disconnect() {
    client_.reset();
    nfs_t_.reset();
    mount_t_.reset();
  }
  void TearDown() override {
    Disconnect();
    NfsdFixture::TearDown();
  }
  GetattrRes RawGetattr(const Fh3& fh) {
    GetattrRes res;
    FhArgs a{fh};
    XdrDecoder* unused = nullptr;
    (void)unused;
    EXPECT_TRUE(client_->nfs()
                    .Call(static_cast<uint32_t>(Proc3::kGetattr), 256, [&](XdrEncoder& e) { Encode(e, a); },
                          [&](XdrDecoder& d) { return Decode(d, &res); })
                    .ok());
    return res;
  }

  std::unique_ptr<rpc::TcpClient> mount_t_, nfs_t_;
  std::unique_ptr<NfsClient> client_;
};

TEST_F(ClientFixture, DotDotAtTheRootIsTheRoot) {
  Connect();
  auto root = client_->Mount(dir_ + "/exp");
  ASSERT_TRUE(root.ok()) << root.status();
  auto up = client_->Lookup(*root, "..");
  ASSERT_TRUE(up.ok()) << up.status();
  ASSERT_EQ(up->status, NfsStat3::kOk);
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/exp").c_str(), &st), 0);
  EXPECT_EQ(up->obj_attributes.attr.fileid, st.st_ino) << "'..' of the export root left the export";
  // Names with '/' are refused, not resolved.
  auto slash = client_->Lookup(*root, "escape/secret.txt");
  ASSERT_TRUE(slash.ok());
  EXPECT_NE(slash->status, NfsStat3::kOk);
  // The symlink is returned as a symlink, never followed by the server.
  auto link = client_->Lookup(*root, "escape");
  ASSERT_TRUE(link.ok());
  ASSERT_EQ(link->status, NfsStat3::kOk);
  EXPECT_EQ(link->obj_attributes.attr.type, Ftype3::kLnk);
  auto through = client_->Lookup(link->object, "secret.txt");
  ASSERT_TRUE(through.ok());
  EXPECT_EQ(through->status, NfsStat3::kNotdir);
}

TEST_F(ClientFixture, ForgedAndForeignHandlesAreRefused) {
  Connect();
  auto root = client_->Mount(dir_ + "/exp");
  ASSERT_TRUE(root.ok()) << root.status();
  auto ro_root = client_->Mount(dir_ + "/ro");
  ASSERT_TRUE(ro_root.ok()) << ro_root.status();
  EXPECT_EQ(RawGetattr(*root).status, NfsStat3::kOk);

  Fh3 forged = *root;
  forged.data[kHandleHeaderBytes] ^= 1;  // another inode, MAC unchanged
  EXPECT_EQ(RawGetattr(forged).status, NfsStat3::kBadhandle);

  Fh3 moved = *root;  // exp's handle relabelled with ro's export id
  std::copy(ro_root->data.begin() + 4, ro_root->data.begin() + 8, moved.data.begin() + 4);
  EXPECT_EQ(RawGetattr(moved).status, NfsStat3::kBadhandle);

  Fh3 junk;
  junk.length = 3;
  EXPECT_EQ(RawGetattr(junk).status, NfsStat3::kBadhandle);

  auto f = client_->Create(*root, "gone", 0644, CreateMode::kGuarded);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(unlink((dir_ + "/exp/gone").c_str()), 0);
  EXPECT_EQ(RawGetattr(*f).status, NfsStat3::kStale);
}

TEST_F(ClientFixture, HandlesSurviveRestartAndTheWriteVerifierChanges) {
  Connect();
  auto root = client_->Mount(dir_ + "/exp");
  ASSERT_TRUE(root.ok()) << root.status();
  auto f = client_->Create(*root, "keep", 0644, CreateMode::kUnchecked);
  ASSERT_TRUE(f.ok()) << f.status();
  const std::string data = "0123456789";
  auto w1 = client_->Write(*f, 0, ByteSpan(reinterpret_cast<const uint8_t*>(data.data()), data.size()),
                           StableHow::kUnstable);
  ASSERT_TRUE(w1.ok()) << w1.status();
  EXPECT_EQ(w1->committed, StableHow::kUnstable);
  auto c1 = client_->Commit(*f);
  ASSERT_TRUE(c1.ok()) << c1.status();
  EXPECT_EQ(c1->verf, w1->verf);

  Disconnect();
  StopServer();
  StartServer();
  Connect();
  auto attr = client_->Getattr(*f);
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->size, data.size());
  auto w2 = client_->Write(*f, 0, ByteSpan(reinterpret_cast<const uint8_t*>(data.data()), 4), StableHow::kFileSync);
  ASSERT_TRUE(w2.ok()) << w2.status();
  EXPECT_EQ(w2->committed, StableHow::kFileSync);
  EXPECT_NE(w2->verf, w1->verf) << "a restart must change the write verifier";
}

TEST_F(ClientFixture, ClientOutsideThePrefixIsRefused) {
  // 127.0.0.2 is loopback on Linux (127/8): a second source address.
  Connect();
  auto root = client_->Mount(dir_ + "/only1");
  ASSERT_TRUE(root.ok()) << root.status();

  RawClient mnt("127.0.0.2", mount_port());
  ASSERT_TRUE(mnt.ok());
  ASSERT_TRUE(mnt.Send(1, kMountProgram, kMountVersion, static_cast<uint32_t>(MountProc::kMnt),
                       [&](XdrEncoder& e) { EncodeDirpath(e, dir_ + "/only1"); }));
  MntRes mres;
  ASSERT_TRUE(DecodeReply(mnt.Receive(), &mres));
  EXPECT_EQ(mres.status, MountStat3::kAcces);

  // A handle learnt elsewhere does not help.
  RawClient nfs("127.0.0.2", nfs_port());
  ASSERT_TRUE(nfs.ok());
  ASSERT_TRUE(nfs.Send(2, kNfsProgram, kNfsVersion, static_cast<uint32_t>(Proc3::kGetattr),
                       [&](XdrEncoder& e) { Encode(e, FhArgs{*root}); }));
  GetattrRes gres;
  ASSERT_TRUE(DecodeReply(nfs.Receive(), &gres));
  EXPECT_EQ(gres.status, NfsStat3::kAcces);

  // The ro export (127.0.0.0/8) takes the same client.
  RawClient mnt2("127.0.0.2", mount_port());
  ASSERT_TRUE(mnt2.Send(3, kMountProgram, kMountVersion, static_cast<uint32_t>(MountProc::kMnt),
                        [&](XdrEncoder& e) { EncodeDirpath(e, dir_ + "/ro"); }));
  ASSERT_TRUE(DecodeReply(mnt2.Receive(), &mres));
  EXPECT_EQ(mres.status, MountStat3::kOk);
}

TEST_F(ClientFixture, RetransmittedCreateAndRemoveAreAnsweredFromTheCache) {
  Connect();
  auto root = client_->Mount(dir_ + "/exp");
  ASSERT_TRUE(root.ok()) << root.status();
  RawClient c("127.0.0.1", nfs_port());
  ASSERT_TRUE(c.ok());
  CreateArgs ca;
  ca.where = {*root, "once"};
  ca.mode = CreateMode::kGuarded;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.Send(77, kNfsProgram, kNfsVersion, static_cast<uint32_t>(Proc3::kCreate),
                       [&](XdrEncoder& e) { Encode(e, ca); }));
    CreateRes r;
    ASSERT_TRUE(DecodeReply(c.Receive(), &r));
    EXPECT_EQ(r.status, NfsStat3::kOk) << "copy " << i << " (a second execution would be NFS3ERR_EXIST)";
  }
  // Same XID, other arguments: not a duplicate.
  ca.where.name = "twice";
  ASSERT_TRUE(c.Send(77, kNfsProgram, kNfsVersion, static_cast<uint32_t>(Proc3::kCreate),
                     [&](XdrEncoder& e) { Encode(e, ca); }));
  CreateRes r2;
  ASSERT_TRUE(DecodeReply(c.Receive(), &r2));
  EXPECT_EQ(r2.status, NfsStat3::kOk);
  struct stat st;
  EXPECT_EQ(stat((dir_ + "/exp/twice").c_str(), &st), 0);
  DirOpArgs ra{*root, "once"};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.Send(78, kNfsProgram, kNfsVersion, static_cast<uint32_t>(Proc3::kRemove),
                       [&](XdrEncoder& e) { Encode(e, ra); }));
    WccRes r;
    ASSERT_TRUE(DecodeReply(c.Receive(), &r));
    EXPECT_EQ(r.status, NfsStat3::kOk) << "copy " << i << " (a second execution would be NFS3ERR_NOENT)";
  }
  Disconnect();
  StopServer();
  EXPECT_NE(stats_.find("drc_hits 2"), std::string::npos) << stats_;
}

TEST_F(ClientFixture, UncheckedCreateReusesOnlyRegularFiles) {
  // A FIFO in the export (made by MKNOD or locally): an UNCHECKED CREATE of
  // its name used to open it, which blocks the server's worker for ever.
  Connect();
  auto root = client_->Mount(dir_ + "/exp");
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(mkfifo((dir_ + "/exp/pipe").c_str(), 0644), 0);
  ASSERT_EQ(symlink("pipe", (dir_ + "/exp/link").c_str()), 0);
  for (const char* name : {"pipe", "link"}) {
    auto f = client_->Create(*root, name, 0644, CreateMode::kUnchecked);
    ASSERT_FALSE(f.ok()) << name;
    EXPECT_NE(std::string(f.status().message()).find("NFS3ERR_EXIST"), std::string::npos) << f.status();
  }
  // An existing regular file is reused, contents kept (no size given).
  { std::ofstream(dir_ + "/exp/plain") << "abc"; }
  auto f = client_->Create(*root, "plain", 0644, CreateMode::kUnchecked);
  ASSERT_TRUE(f.ok()) << f.status();
  auto attr = client_->Getattr(*f);
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->size, 3u);
  EXPECT_EQ(attr->type, Ftype3::kReg);
}

TEST_F(ClientFixture, AuthSysIdentityIsApplied) {
  // uid 1000 may not write into a root-owned 0755 directory.
  rpc::TcpClientOptions o;
  o.server_port = mount_port();
  auto m = rpc::TcpClient::Connect(o);
  ASSERT_TRUE(m.ok());
  o.server_port = nfs_port();
  auto n = rpc::TcpClient::Connect(o);
  ASSERT_TRUE(n.ok());
  NfsClient user(**m, **n, AuthSysCred(1000, 1000, "user"));
  auto root = user.Mount(dir_ + "/exp");
  ASSERT_TRUE(root.ok()) << root.status();
  auto f = user.Create(*root, "by_user", 0644, CreateMode::kGuarded);
  EXPECT_FALSE(f.ok());
  EXPECT_NE(std::string(f.status().message()).find("NFS3ERR_ACCES"), std::string::npos) << f.status();
  ASSERT_EQ(chmod((dir_ + "/exp").c_str(), 0777), 0);
  f = user.Create(*root, "by_user", 0644, CreateMode::kGuarded);
  ASSERT_TRUE(f.ok()) << f.status();
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/exp/by_user").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u) << "the file belongs to the caller";
  EXPECT_EQ(st.st_gid, 1000u);
}

}  // namespace
}  // namespace iwarp::nfs
