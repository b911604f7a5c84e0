// Independent check of the engine's wire format: every segment both engines
// emit during an MPA handshake, a Send, an RDMA Write, an RDMA Read and a
// Terminate is written to a pcap file (raw IPv4) and decoded by tshark's
// iWARP dissectors (TESTING.md: tshark checks the MPA CRC). The test asserts
// tshark found the MPA Request and Reply, that every FPDU's CRC equals the one
// tshark computes (RFC 5044 4.4 byte order as siw uses), and that it decodes
// the RDMAP opcodes and the Terminate's layer/type/code we sent.
//
// Skipped, with the reason printed, when tshark is not installed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "iwarp/qp.h"
#include "iwarp/qp_test_util.h"

namespace iwarp::engine {
namespace {

using testing::Pair;

struct Captured {
  uint32_t src, dst;
  std::vector<uint8_t> tcp;
};

// Classic pcap, LINKTYPE_RAW (101): each record is an IPv4 packet.
void WritePcap(const std::string& path, const std::vector<Captured>& pkts) {
  std::ofstream f(path, std::ios::binary);
  auto put32 = [&](uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
  auto put16 = [&](uint16_t v) { f.write(reinterpret_cast<const char*>(&v), 2); };
  put32(0xa1b2c3d4);
  put16(2);
  put16(4);
  put32(0);
  put32(0);
  put32(65535);
  put32(101);
  uint32_t usec = 0;
  uint16_t id = 1;
  for (const Captured& c : pkts) {
    std::vector<uint8_t> ip(20);
    ip[0] = 0x45;
    StoreBe16(&ip[2], static_cast<uint16_t>(20 + c.tcp.size()));
    StoreBe16(&ip[4], id++);
    StoreBe16(&ip[6], 0x4000);
    ip[8] = 64;
    ip[9] = 6;
    StoreBe32(&ip[12], c.src);
    StoreBe32(&ip[16], c.dst);
    uint32_t sum = 0;
    for (size_t i = 0; i < 20; i += 2) sum += LoadBe16(&ip[i]);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    StoreBe16(&ip[10], static_cast<uint16_t>(~sum));
    ip.insert(ip.end(), c.tcp.begin(), c.tcp.end());
    usec += 10;
    put32(0);
    put32(usec);
    put32(static_cast<uint32_t>(ip.size()));
    put32(static_cast<uint32_t>(ip.size()));
    f.write(reinterpret_cast<const char*>(ip.data()), static_cast<std::streamsize>(ip.size()));
  }
}

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::vector<std::vector<std::string>> Rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::string col;
    std::istringstream l(line);
    while (std::getline(l, col, '\t')) cols.push_back(col);
    rows.push_back(cols);
  }
  return rows;
}

TEST(QpWire, TsharkDecodesHandshakeFpdusCrcAndTerminate) {
  if (std::system("command -v tshark > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "tshark not installed: the independent wire check cannot run";
  }
  QpOptions o;
  o.mpa.revision = 1;  // Wireshark 4.0's MPA dissector expects Rev 1
  o.mpa.crc = true;
  Pair p(o, o);
  std::vector<Captured> cap;
  auto hook = [&](uint32_t src, uint32_t dst) {
    return [&cap, src, dst](std::vector<uint8_t>& b, size_t) { cap.push_back({src, dst, b}); };
  };
  p.a.port->mutate = hook(tcp::testing::kIpA, tcp::testing::kIpB);
  p.b.port->mutate = hook(tcp::testing::kIpB, tcp::testing::kIpA);
  ASSERT_TRUE(p.Connect().ok());
  ASSERT_TRUE(p.RunUntil([&] { return p.a.obs.established; }, 1'000'000));

  const uint32_t src = p.a.mem.Register(6000, 0);
  const uint32_t sink = p.a.mem.Register(3000, ddp::kAccessAll);
  const uint32_t recv = p.b.mem.Register(6000, ddp::kAccessLocalWrite);
  const uint32_t wsink = p.b.mem.Register(6000, ddp::kAccessRemoteWrite, 0x7000);
  const uint32_t rsrc = p.b.mem.Register(3000, ddp::kAccessRemoteRead, 0x9000);
  ASSERT_EQ(p.b.qp->PostRecv(RecvWr{1, LocalSge{recv, 0x10000, 6000}}), PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{1, WrOpcode::kSend, LocalSge{src, 0x10000, 6000}}),
            PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{2, WrOpcode::kRdmaWrite, LocalSge{src, 0x10000, 6000}, wsink,
                                    0x7000}),
            PostStatus::kOk);
  ASSERT_EQ(p.a.qp->PostSend(SendWr{3, WrOpcode::kRdmaRead, LocalSge{sink, 0x10000, 3000}, rsrc,
                                    0x9000}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return p.a.cqes.size() == 3; }, 2'000'000));
  // A Write to an STag b never registered: b answers with a DDP Terminate.
  ASSERT_EQ(p.a.qp->PostSend(SendWr{4, WrOpcode::kRdmaWrite, LocalSge{src, 0x10000, 16},
                                    wsink + 0x1000, 0x7000}),
            PostStatus::kOk);
  ASSERT_TRUE(p.RunUntil([&] { return !p.a.obs.term_received.empty(); }, 2'000'000));

  const std::string path = ::testing::TempDir() + "iwarp_qp_wire.pcap";
  WritePcap(path, cap);
  const std::string base = "tshark -r " + path + " -o tcp.desegment_tcp_streams:TRUE ";

  // MPA Request and Reply found by the heuristic dissector.
  const std::string frames =
      Shell(base + "-Y 'iwarp_mpa.req || iwarp_mpa.rep' -T fields -e iwarp_mpa.key.req "
                 "-e iwarp_mpa.key.rep -e iwarp_mpa.crc_flag 2>&1");
  EXPECT_NE(frames.find("4d504120494420526571204672616d65"), std::string::npos) << frames;
  EXPECT_NE(frames.find("4d504120494420526570204672616d65"), std::string::npos) << frames;

  // Every FPDU: tshark recomputes the CRC and marks it "Good CRC32" only when
  // it equals the one sent (RFC 5044 4.4, the byte order siw uses).
  const std::string verbose = Shell(base + "-V 2>&1");
  size_t good = 0, bad = 0;
  for (size_t at = 0; (at = verbose.find("(Good CRC32)", at)) != std::string::npos; ++at) ++good;
  for (size_t at = 0; (at = verbose.find("(Bad CRC32)", at)) != std::string::npos; ++at) ++bad;
  EXPECT_EQ(good, p.a.qp->stats().fpdus_out + p.b.qp->stats().fpdus_out);
  EXPECT_GT(good, 10u);
  EXPECT_EQ(bad, 0u);

  const std::string crcs = Shell(base + "-Y iwarp_mpa.fpdu -T fields -e iwarp_rdma.opcode 2>&1");
  std::map<std::string, int> opcodes;
  for (const auto& r : Rows(crcs)) {
    if (r.empty()) continue;
    // Several FPDUs in one segment give a comma-separated list.
    std::istringstream c(r[0]);
    std::string x;
    while (std::getline(c, x, ',')) ++opcodes[x];
  }
  // RDMA Write 0x0, Read Request 0x1, Read Response 0x2, Send 0x3, Terminate 0x7.
  for (const char* op : {"0x00", "0x01", "0x02", "0x03", "0x07"}) {
    EXPECT_GT(opcodes[op], 0) << "opcode " << op << " not decoded; got:\n" << crcs;
  }

  // The Terminate: layer DDP (1), tagged buffer error (1), invalid STag (0).
  const std::string term =
      Shell(base + "-Y iwarp_rdma.terminate -T fields -e iwarp_rdma.term_layer "
                   "-e iwarp_rdma.term_etype_ddp -e iwarp_rdma.term_errcode_ddp_tagged 2>&1");
  EXPECT_NE(term.find("0x01\t0x01\t0x00"), std::string::npos) << term;
}

}  // namespace
}  // namespace iwarp::engine
