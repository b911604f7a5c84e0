// Handles (encode / verify, forged, other export), HMAC-SHA256 against RFC
// 4231, the secret file, export matching and configuration errors, and the
// duplicate request cache.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "nfs/drc.h"
#include "nfs/exports.h"
#include "nfs/handle.h"
#include "common/sha256.h"

namespace iwarp::nfs {
namespace {

// RFC 4231 4.2, test case 1.
TEST(Hmac, Rfc4231Case1) {
  std::vector<uint8_t> key(20, 0x0b);
  const std::string msg = "Hi There";
  const auto mac = HmacSha256(key, ByteSpan(reinterpret_cast<const uint8_t*>(msg.data()), msg.size()));
  EXPECT_EQ(ToHex(mac), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

// RFC 4231 4.7, test case 6 (key longer than a block).
TEST(Hmac, Rfc4231Case6) {
  std::vector<uint8_t> key(131, 0xaa);
  const std::string msg = "Test Using Larger Than Block-Size Key - Hash Key First";
  const auto mac = HmacSha256(key, ByteSpan(reinterpret_cast<const uint8_t*>(msg.data()), msg.size()));
  EXPECT_EQ(ToHex(mac), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

KernelHandle SampleKh() {
  KernelHandle kh;
  kh.handle_type = 1;
  kh.length = 8;
  for (uint32_t i = 0; i < 8; ++i) kh.bytes[i] = static_cast<uint8_t>(i + 1);
  return kh;
}

TEST(Handle, EncodesAndVerifies) {
  Secret s{};
  s[0] = 1;
  HandleCodec codec(s);
  Fh3 fh;
  ASSERT_TRUE(codec.Encode(0x12345678, SampleKh(), &fh));
  EXPECT_EQ(fh.length, kHandleHeaderBytes + 8 + kHandleMacBytes);
  EXPECT_LE(fh.length, kFhSize);
  uint32_t id = 0;
  KernelHandle back;
  ASSERT_EQ(codec.Verify(fh, &id, &back), HandleCheck::kOk);
  EXPECT_EQ(id, 0x12345678u);
  EXPECT_EQ(back.handle_type, 1);
  EXPECT_EQ(back.length, 8u);
  EXPECT_EQ(back.bytes, SampleKh().bytes);
}

TEST(Handle, EveryAlteredByteIsRefused) {
  Secret s{};
  HandleCodec codec(s);
  Fh3 fh;
  ASSERT_TRUE(codec.Encode(7, SampleKh(), &fh));
  for (uint32_t i = 0; i < fh.length; ++i) {
    Fh3 bad = fh;
    bad.data[i] ^= 0x40;
    uint32_t id;
    KernelHandle kh;
    EXPECT_NE(codec.Verify(bad, &id, &kh), HandleCheck::kOk) << "byte " << i;
  }
  Fh3 shorter = fh;
  shorter.length -= 1;
  uint32_t id;
  KernelHandle kh;
  EXPECT_EQ(codec.Verify(shorter, &id, &kh), HandleCheck::kBadLength);
}

TEST(Handle, AnotherExportOrSecretDoesNotVerify) {
  Secret s{};
  HandleCodec codec(s);
  Fh3 fh;
  ASSERT_TRUE(codec.Encode(1, SampleKh(), &fh));
  Fh3 moved = fh;
  StoreBe32(moved.data.data() + 4, 2);  // relabelled into export 2
  uint32_t id;
  KernelHandle kh;
  EXPECT_EQ(codec.Verify(moved, &id, &kh), HandleCheck::kBadMac);
  Secret other{};
  other[31] = 9;
  EXPECT_EQ(HandleCodec(other).Verify(fh, &id, &kh), HandleCheck::kBadMac) << "another server's secret";
}

TEST(Handle, SecretPersistsInTheStateDirectory) {
  char tmpl[] = "/tmp/nfs_secret.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/state";
  auto a = LoadOrCreateSecret(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = LoadOrCreateSecret(dir);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, Secret{});
  struct stat st;
  ASSERT_EQ(stat((dir + "/handle.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  truncate((dir + "/handle.key").c_str(), 5);
  EXPECT_FALSE(LoadOrCreateSecret(dir).ok()) << "a damaged secret is an error, never silently replaced";
  std::system((std::string("rm -rf ") + tmpl).c_str());
}

TEST(Exports, PrefixMatching) {
  ClientPrefix p;
  ASSERT_TRUE(ParseClientPrefix("192.168.4.0/22", &p));
  EXPECT_TRUE(p.Matches(0xc0a80401));
  EXPECT_TRUE(p.Matches(0xc0a807ff));
  EXPECT_FALSE(p.Matches(0xc0a80801));
  ASSERT_TRUE(ParseClientPrefix("127.0.0.1", &p));
  EXPECT_TRUE(p.Matches(0x7f000001));
  EXPECT_FALSE(p.Matches(0x7f000002));
  ASSERT_TRUE(ParseClientPrefix("0.0.0.0/0", &p));
  EXPECT_TRUE(p.Matches(0x01020304));
  for (const char* bad : {"192.168.4.1/22", "1.2.3", "1.2.3.4/33", "256.1.1.1", "1.2.3.4/", "a.b.c.d", ""}) {
    EXPECT_FALSE(ParseClientPrefix(bad, &p)) << bad;
  }
}

TEST(Exports, ParsesAFullConfig) {
  auto c = ParseNfsdConfig(R"(version: 1
listen:
  address: 10.0.0.1
  nfs_port: 2049
  mount_port: 20048
state_dir: /var/lib/x
io_threads: 8
rpcbind: off
exports:
  - path: /srv/a
    id: 5
    clients: [10.0.0.0/8, 127.0.0.1]
    access: ro
    root_squash: false
    anon_uid: 99
    anon_gid: 98
  - path: /srv/b
    clients: [127.0.0.1]
)",
                           "t.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->listen_ipv4, 0x0a000001u);
  EXPECT_EQ(c->io_threads, 8u);
  ASSERT_EQ(c->exports.size(), 2u);
  const Export& a = c->exports[0];
  EXPECT_EQ(a.id, 5u);
  EXPECT_TRUE(a.read_only);
  EXPECT_FALSE(a.root_squash);
  EXPECT_EQ(a.anon_uid, 99u);
  EXPECT_TRUE(a.Allows(0x0a010203));
  EXPECT_FALSE(a.Allows(0x0b000001));
  EXPECT_TRUE(c->exports[1].root_squash);
  EXPECT_GE(c->exports[1].id, 0x80000000u) << "derived ids live above configured ones";
  EXPECT_EQ(c->FindByPath("/srv/b/"), &c->exports[1]);
  EXPECT_EQ(c->FindById(5), &c->exports[0]);
  // The derived id is the same on every load.
  auto again = ParseNfsdConfig("version: 1\nexports:\n  - {path: /srv/b, clients: [127.0.0.1]}\n", "u.yaml");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->exports[0].id, c->exports[1].id);
}

TEST(Exports, RdmaSectionIsOffUnlessGiven) {
  auto off = ParseNfsdConfig("version: 1\nexports:\n  - {path: /a, clients: [1.1.1.1]}\n", "t.yaml");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->rdma.enabled);
  auto on = ParseNfsdConfig("version: 1\nrdma: {socket: /run/x.sock, address: 198.18.1.1, port: 30049, "
                            "transport: sctp, credits: 8, max_connections: 2}\n"
                            "exports:\n  - {path: /a, clients: [1.1.1.1]}\n",
                            "t.yaml");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->rdma.enabled);
  EXPECT_EQ(on->rdma.socket, "/run/x.sock");
  EXPECT_EQ(on->rdma.ipv4, 0xc6120101u);
  EXPECT_EQ(on->rdma.port, 30049);
  EXPECT_TRUE(on->rdma.sctp);
  EXPECT_EQ(on->rdma.credits, 8u);
  EXPECT_EQ(on->rdma.max_connections, 2u);
  auto defaults = ParseNfsdConfig("version: 1\nrdma:\nexports:\n  - {path: /a, clients: [1.1.1.1]}\n", "t.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE(defaults->rdma.enabled);
  EXPECT_EQ(defaults->rdma.port, 20049);
  EXPECT_FALSE(defaults->rdma.sctp);
}

TEST(Exports, ErrorsNameFileLineColumnKeyAndFix) {
  struct Case {
    const char* yaml;
    const char* want;
  } cases[] = {
      {"version: 1\nexports:\n  - path: /srv\n    clients: [10.0.0.1/8]\n",
       "t.yaml:4:15: exports[0].clients[0]: '10.0.0.1/8' is not an IPv4 address or prefix; allowed values"},
      {"version: 1\nexports:\n  - path: srv\n    clients: [1.2.3.4]\n", "t.yaml:3:11: exports[0].path: 'srv' is not normal"},
      {"version: 1\nexports:\n  - path: /a/../b\n    clients: [1.2.3.4]\n", "exports[0].path: '/a/../b' is not normal"},
      {"version: 1\nexports:\n  - path: /srv\n    access: rx\n    clients: [1.2.3.4]\n",
       "t.yaml:4:13: exports[0].access: 'rx' is not a known value; allowed values: rw, ro"},
      {"version: 1\nexports:\n  - path: /srv\n", "exports[0].clients: missing key; add 'clients:"},
      {"version: 1\nexport:\n  - path: /srv\n", "t.yaml:2:1: export: unknown key; allowed keys:"},
      {"version: 1\nexports:\n  - {path: /a, clients: [1.1.1.1]}\n  - {path: /a, clients: [1.1.1.1]}\n",
       "exports[1].path: '/a' is exported twice"},
      {"version: 1\nlisten: {nfs_port: 70000}\nexports:\n  - {path: /a, clients: [1.1.1.1]}\n",
       "t.yaml:2:20: listen.nfs_port: 70000 is out of range; allowed values: integers 0..65535"},
      {"version: 2\n", "t.yaml:1:10: version: 2 is out of range"},
      {"version: 1\nrdma: {transport: udp}\nexports:\n  - {path: /a, clients: [1.1.1.1]}\n",
       "t.yaml:2:19: rdma.transport: 'udp' is not a known transport; allowed values: tcp"},
      {"version: 1\nrdma: {port: 0}\nexports:\n  - {path: /a, clients: [1.1.1.1]}\n",
       "rdma.port: 0 is out of range; allowed values: integers 1..65535"},
      {"version: 1\nrdma: {credits: 500}\nexports:\n  - {path: /a, clients: [1.1.1.1]}\n",
       "rdma.credits: 500 is out of range; allowed values: integers 1..128"},
      {"version: 1\nrdma: {sock: /x}\nexports:\n  - {path: /a, clients: [1.1.1.1]}\n",
       "rdma.sock: unknown key; allowed keys: socket, address, port, transport, credits, max_connections"},
      {"exports: [", "t.yaml:1:"},
  };
  for (const Case& c : cases) {
    auto r = ParseNfsdConfig(c.yaml, "t.yaml");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(std::string(r.status().message()).find(c.want), std::string::npos)
        << "got: " << r.status().message() << "\nwant: " << c.want;
  }
}

TEST(Drc, ReplaysCompletedAndDropsInProgress) {
  DuplicateRequestCache drc(4);
  const DrcKey k{0x7f000001, 10, 8, 0xabc};
  ByteSpan reply;
  EXPECT_EQ(drc.Begin(k, &reply), DrcLookup::kNew);
  EXPECT_EQ(drc.Begin(k, &reply), DrcLookup::kInProgress);
  const uint8_t bytes[] = {0, 0, 0, 0, 1, 2, 3, 4};
  drc.Complete(k, bytes);
  ASSERT_EQ(drc.Begin(k, &reply), DrcLookup::kReplay);
  EXPECT_EQ(std::vector<uint8_t>(reply.begin(), reply.end()), std::vector<uint8_t>(bytes, bytes + 8));
  EXPECT_EQ(drc.hits(), 1u);
  // Same XID, other client / procedure / arguments: new calls.
  EXPECT_EQ(drc.Begin(DrcKey{0x7f000002, 10, 8, 0xabc}, &reply), DrcLookup::kNew);
  EXPECT_EQ(drc.Begin(DrcKey{0x7f000001, 10, 9, 0xabc}, &reply), DrcLookup::kNew);
  EXPECT_EQ(drc.Begin(DrcKey{0x7f000001, 10, 8, 0xabd}, &reply), DrcLookup::kNew);
  EXPECT_EQ(drc.size(), 4u);
  // A fifth entry evicts the oldest (k).
  EXPECT_EQ(drc.Begin(DrcKey{1, 1, 1, 1}, &reply), DrcLookup::kNew);
  EXPECT_EQ(drc.size(), 4u);
  EXPECT_EQ(drc.Begin(k, &reply), DrcLookup::kNew);
  // Abandoned in-progress calls are forgotten.
  const DrcKey a{9, 9, 9, 9};
  drc.Begin(a, &reply);
  drc.Abandon(a);
  EXPECT_EQ(drc.Begin(a, &reply), DrcLookup::kNew);
}

TEST(Drc, ChecksumTellsArgumentsApart) {
  const uint8_t a[] = {1, 2, 3, 4};
  const uint8_t b[] = {1, 2, 3, 5};
  EXPECT_NE(ArgsChecksum(a), ArgsChecksum(b));
  EXPECT_EQ(ArgsChecksum(a), ArgsChecksum(a));
}

}  // namespace
}  // namespace iwarp::nfs
