// iwarp-nfsd over RPC-over-RDMA: every NFSv3 and MOUNT v3 procedure through
// the RDMA transport. The server is an application of an in-process iwarpd
// session server (appif::TestHost, loopback QPs: the connection setup, the
// Sends, RDMA Reads and RDMA Writes go through the daemon's code as they do
// on the wire); the client is NfsClient over an RdmaClient of a second
// session. Checked beside each procedure's outcome: the RFC 8267 chunk each
// DDP-eligible item took (READ data and the READLINK path by Write chunk,
// WRITE data and a long SYMLINK path by Read chunk, a long READDIR reply by
// Reply chunk), from the server's counters; and the export's client list
// applied to the RDMA peer's address.
//
// Needs root (open_by_handle_at).
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "appif/test_host.h"
#include "gtest/gtest.h"
#include "libiwarp/iwarp.h"
#include "nfs/nfs_client.h"
#include "nfs/nfs_service.h"
#include "nfs/nfs_xdr.h"
#include "nfs/text.h"
#include "rpcrdma/rdma_transport.h"

namespace iwarp::nfs {
namespace {

constexpr uint16_t kPort = 20049;

// "name value" lines of Nfsd::Stats.
std::map<std::string, uint64_t> ParseStats(const std::string& text) {
  std::map<std::string, uint64_t> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    out[line.substr(0, sp)] = std::strtoull(line.c_str() + sp + 1, nullptr, 10);
  }
  return out;
}

class NfsRdmaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (open_by_handle_at needs CAP_DAC_READ_SEARCH)";
    ASSERT_TRUE(host_.ok()) << host_.status();
    char tmpl[] = "/tmp/nfs_rdma.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* d : {"exp", "far", "state"}) mkdir((dir_ + "/" + d).c_str(), 0755);
  }
  void TearDown() override {
    client_.reset();
    rdma_.reset();
    if (session_ != nullptr) iwarp_close(session_);
    StopServer();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  void StartServer() {
    const std::string yaml =
        Cat("version: 1\nlisten: {address: 127.0.0.1, nfs_port: 0, mount_port: 0}\n", "state_dir: ", dir_,
            "/state\nrpcbind: off\nio_threads: 2\n", "rdma: {socket: ", host_.socket_path(), ", port: ", kPort,
            ", credits: 16}\n", "exports:\n", "  - {path: ", dir_, "/exp, clients: [127.0.0.1], root_squash: false}\n",
            "  - {path: ", dir_, "/far, clients: [198.18.9.0/24], root_squash: false}\n");
    auto c = ParseNfsdConfig(yaml, "test.yaml");
    ASSERT_TRUE(c.ok()) << c.status();
    auto d = Nfsd::Start(*c);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE((*d)->rdma_enabled());
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
  std::map<std::string, uint64_t> ServerStats() {
    StopServer();
    return ParseStats(stats_);
  }

  void Connect() {
    ASSERT_EQ(iwarp_open(host_.socket_path().c_str(), &session_), 0);
    ASSERT_EQ(iwarp_alloc_pd(session_, &pd_), 0);
    rpcrdma::RdmaClientOptions o;
    o.server = iwarp_addr{0, kPort};
    rdma_ = std::make_unique<rpcrdma::RdmaClient>(session_, pd_, o);
    ASSERT_EQ(rdma_->Connect(), 0) << iwarp_last_error(session_);
    client_ = std::make_unique<NfsClient>(*rdma_, *rdma_, AuthSysCred(0, 0, "rdma-test"));
  }

  // One NFS call with the shared codecs; the decoded result.
  template <typename Res, typename Args>
  Res Nfs(Proc3 proc, const Args& a, const rpc::CallOptions& o = {}) {
    Res r;
    const absl::Status st = client_->nfs().Call(
        static_cast<uint32_t>(proc), 4096, [&](XdrEncoder& e) { Encode(e, a); },
        [&](XdrDecoder& d) { return Decode(d, &r) && d.remaining() == 0; }, o);
    EXPECT_TRUE(st.ok()) << Proc3Name(static_cast<uint32_t>(proc)) << ": " << st;
    return r;
  }

  appif::TestHost host_;
  std::string dir_;
  std::unique_ptr<Nfsd> nfsd_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::string stats_;
  iwarp_session* session_ = nullptr;
  uint32_t pd_ = 0;
  std::unique_ptr<rpcrdma::RdmaClient> rdma_;
  std::unique_ptr<NfsClient> client_;
};

TEST_F(NfsRdmaTest, EveryProcedureOverRdmaWithTheChunksRfc8267Names) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(Connect());
  // MOUNT: NULL, EXPORT, MNT, DUMP.
  ASSERT_TRUE(client_->mount().Call(0, 0, nullptr, [](XdrDecoder& d) { return d.remaining() == 0; }).ok());
  auto exports = client_->Exports();
  ASSERT_TRUE(exports.ok()) << exports.status();
  ASSERT_EQ(exports->size(), 2u);
  auto root = client_->Mount(dir_ + "/exp");
  ASSERT_TRUE(root.ok()) << root.status();
  std::vector<MountEntry> dump;
  ASSERT_TRUE(client_->mount()
                  .Call(static_cast<uint32_t>(MountProc::kDump), 0, nullptr,
                        [&](XdrDecoder& d) { return DecodeMountList(d, &dump); })
                  .ok());
  ASSERT_EQ(dump.size(), 1u);
  EXPECT_EQ(dump[0].directory, dir_ + "/exp");

  // NFS NULL, GETATTR, FSSTAT, FSINFO, PATHCONF.
  ASSERT_TRUE(client_->nfs().Call(0, 0, nullptr, [](XdrDecoder& d) { return d.remaining() == 0; }).ok());
  EXPECT_EQ((Nfs<GetattrRes>(Proc3::kGetattr, FhArgs{*root}).obj_attributes.type), Ftype3::kDir);
  const FsstatRes fss = Nfs<FsstatRes>(Proc3::kFsstat, FhArgs{*root});
  EXPECT_EQ(fss.status, NfsStat3::kOk);
  EXPECT_GT(fss.tbytes, 0u);
  const FsinfoRes fsi = Nfs<FsinfoRes>(Proc3::kFsinfo, FhArgs{*root});
  EXPECT_EQ(fsi.rtmax, 1u << 20);
  EXPECT_EQ(fsi.wtmax, 1u << 20);
  EXPECT_EQ((Nfs<PathconfRes>(Proc3::kPathconf, FhArgs{*root}).name_max), 255u);

  // CREATE, WRITE (1 MiB: Read chunk), COMMIT, READ (Write chunk), SETATTR, ACCESS, LOOKUP.
  CreateArgs ca;
  ca.where = {*root, "data.bin"};
  ca.obj_attributes.set_mode = true;
  ca.obj_attributes.mode = 0640;
  const CreateRes cr = Nfs<CreateRes>(Proc3::kCreate, ca);
  ASSERT_EQ(cr.status, NfsStat3::kOk);
  ASSERT_TRUE(cr.obj.present);
  const Fh3 file = cr.obj.fh;
  std::vector<uint8_t> data(1 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 3);
  auto w = client_->Write(file, 0, data, StableHow::kUnstable);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->count, data.size());
  auto cm = client_->Commit(file);
  ASSERT_TRUE(cm.ok()) << cm.status();
  EXPECT_EQ(cm->verf, w->verf);
  std::vector<uint8_t> back(1 << 20);
  bool eof = false;
  auto n = client_->Read(file, 0, back, &eof);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, data.size());
  EXPECT_EQ(back, data);
  SetattrArgs sa;
  sa.object = file;
  sa.new_attributes.set_mode = true;
  sa.new_attributes.mode = 0600;
  EXPECT_EQ((Nfs<WccRes>(Proc3::kSetattr, sa).status), NfsStat3::kOk);
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/exp/data.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 1 << 20);
  const AccessRes ac = Nfs<AccessRes>(Proc3::kAccess, AccessArgs{file, 0x3f});
  EXPECT_EQ(ac.status, NfsStat3::kOk);
  EXPECT_NE(ac.access & 0x1, 0u);  // ACCESS3_READ
  const LookupRes lk = Nfs<LookupRes>(Proc3::kLookup, DirOpArgs{*root, "data.bin"});
  ASSERT_EQ(lk.status, NfsStat3::kOk);
  EXPECT_EQ(lk.object, file);

  // SYMLINK with a 1024-byte target (DDP-eligible and at the client's
  // 1024-byte threshold: a Read chunk); READLINK with a Write chunk offered.
  const std::string target(1024, 't');
  SymlinkArgs sl;
  sl.where = {*root, "link"};
  sl.symlink_data = target;
  const CreateRes slr = Nfs<CreateRes>(Proc3::kSymlink, sl);
  ASSERT_EQ(slr.status, NfsStat3::kOk);
  ASSERT_TRUE(slr.obj.present);
  std::vector<uint8_t> link_sink(kMaxPath);
  rpc::CallOptions ro;
  ro.ddp_sinks[0] = rpc::ReplySink{MutableByteSpan(link_sink.data(), link_sink.size()), 0};
  ro.ddp_sink_count = 1;
  const ReadlinkRes rl = Nfs<ReadlinkRes>(Proc3::kReadlink, FhArgs{slr.obj.fh}, ro);
  ASSERT_EQ(rl.status, NfsStat3::kOk);
  EXPECT_EQ(rl.data, target);

  // MKNOD (a FIFO), MKDIR, LINK, RENAME.
  MknodArgs mk;
  mk.where = {*root, "fifo"};
  mk.type = Ftype3::kFifo;
  mk.attributes.set_mode = true;
  mk.attributes.mode = 0600;
  EXPECT_EQ((Nfs<CreateRes>(Proc3::kMknod, mk).status), NfsStat3::kOk);
  ASSERT_EQ(stat((dir_ + "/exp/fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  auto sub = client_->Mkdir(*root, "sub", 0755);
  ASSERT_TRUE(sub.ok()) << sub.status();
  EXPECT_EQ((Nfs<LinkRes>(Proc3::kLink, LinkArgs{file, {*sub, "hard"}}).status), NfsStat3::kOk);
  ASSERT_EQ(stat((dir_ + "/exp/data.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ((Nfs<RenameRes>(Proc3::kRename, RenameArgs{{*sub, "hard"}, {*root, "hard2"}}).status), NfsStat3::kOk);
  EXPECT_EQ(access((dir_ + "/exp/hard2").c_str(), F_OK), 0);

  // READDIR and READDIRPLUS over a directory whose listing needs a Reply
  // chunk (200 names of 100 bytes: past the 4 KiB inline size).
  for (int i = 0; i < 200; ++i) {
    char name[128];
    std::snprintf(name, sizeof(name), "%03d-%s", i, std::string(96, 'n').c_str());
    std::ofstream(dir_ + "/exp/sub/" + name).put('x');
  }
  ReaddirArgs rd;
  rd.dir = *sub;
  rd.count = 32768;
  rpc::CallOptions lo;
  lo.max_reply_bytes = rd.count + 1024;
  size_t names = 0;
  for (bool done = false; !done;) {
    const ReaddirRes r = Nfs<ReaddirRes>(Proc3::kReaddir, rd, lo);
    ASSERT_EQ(r.status, NfsStat3::kOk);
    for (const Entry3& e : r.entries) {
      if (e.name != "." && e.name != "..") ++names;
      rd.cookie = e.cookie;
    }
    rd.cookieverf = r.cookieverf;
    done = r.eof;
  }
  EXPECT_EQ(names, 200u);
  auto plus = client_->ListDir(*sub);
  ASSERT_TRUE(plus.ok()) << plus.status();
  EXPECT_EQ(plus->size(), 202u);  // with . and ..

  // REMOVE, RMDIR (after emptying), UMNT.
  EXPECT_TRUE(client_->Remove(*root, "fifo").ok());
  EXPECT_FALSE(client_->Rmdir(*root, "sub").ok());  // not empty
  std::system(("rm -f " + dir_ + "/exp/sub/*").c_str());
  EXPECT_TRUE(client_->Rmdir(*root, "sub").ok());
  EXPECT_NE(access((dir_ + "/exp/sub").c_str(), F_OK), 0);
  EXPECT_TRUE(client_->Unmount(dir_ + "/exp").ok());
  ASSERT_TRUE(client_->mount()
                  .Call(static_cast<uint32_t>(MountProc::kUmntall), 0, nullptr,
                        [](XdrDecoder& d) { return d.remaining() == 0; })
                  .ok());

  const rpcrdma::RdmaCounters cc = rdma_->counters();
  const auto s = ServerStats();
  for (uint32_t p = 1; p < kProc3Count; ++p) {
    EXPECT_GE(s.at(Cat("nfs_calls_", Proc3Name(p))), 1u) << "procedure " << Proc3Name(p) << " was called";
  }
  EXPECT_EQ(s.at("rdma_calls"), cc.calls);
  EXPECT_EQ(s.at("rdma_replies"), cc.replies);
  // WRITE data pulled by RDMA Read, READ data and the READLINK path pushed
  // by RDMA Write, the long listings by Reply chunk.
  EXPECT_GE(s.at("rdma_read_chunks"), 2u);
  EXPECT_GE(s.at("rdma_read_bytes"), (uint64_t{1} << 20) + target.size());
  EXPECT_GE(s.at("rdma_write_chunks"), 2u);
  EXPECT_GE(s.at("rdma_written_bytes"), (uint64_t{1} << 20) + target.size());
  EXPECT_GE(s.at("rdma_reply_chunks"), 2u);
  EXPECT_EQ(s.count("rdma_err_chunk_sent") ? s.at("rdma_err_chunk_sent") : 0, 0u);
  EXPECT_EQ(s.at("garbage_args"), 0u);
}

// The export's client list applies to the address the RDMA connection came
// from (here a loopback connection: 127.0.0.1): an export for 198.18.9.0/24
// only refuses the MNT; the allowed one mounts.
TEST_F(NfsRdmaTest, ExportClientListAppliesToTheRdmaPeer) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NO_FATAL_FAILURE(Connect());
  auto far = client_->Mount(dir_ + "/far");
  ASSERT_FALSE(far.ok());
  EXPECT_NE(std::string(far.status().message()).find("13"), std::string::npos) << far.status();
  EXPECT_TRUE(client_->Mount(dir_ + "/exp").ok());
  const auto s = ServerStats();
  EXPECT_EQ(s.at("mount_refused"), 1u);
}

// No daemon at the configured socket: the start fails, naming the socket and
// the way out.
TEST_F(NfsRdmaTest, NoDaemonAtTheSocketIsAClearStartError) {
  const std::string yaml = Cat("version: 1\nlisten: {address: 127.0.0.1, nfs_port: 0, mount_port: 0}\n",
                               "state_dir: ", dir_, "/state\nrpcbind: off\n", "rdma: {socket: ", dir_,
                               "/no-such.sock}\n", "exports:\n  - {path: ", dir_, "/exp, clients: [127.0.0.1]}\n");
  auto c = ParseNfsdConfig(yaml, "test.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  auto d = Nfsd::Start(*c);
  ASSERT_FALSE(d.ok());
  const std::string m(d.status().message());
  EXPECT_NE(m.find(dir_ + "/no-such.sock: cannot reach iwarpd"), std::string::npos) << m;
  EXPECT_NE(m.find("remove the rdma section"), std::string::npos) << m;
}

}  // namespace
}  // namespace iwarp::nfs
