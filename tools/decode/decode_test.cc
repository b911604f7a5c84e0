// iwarp-decode against captures synthesised from the project's encoders:
// clean sessions decode with no violation and the exact message counts; each
// injected fault is reported, by name, and nothing else is.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tools/decode/analyzer.h"
#include "tools/decode/capture.h"
#include "tools/decode/synth.h"

namespace iwarp::decode {
namespace {

class DecodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("iwarp_decode_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  struct Run {
    Summary summary;
    std::string text;
  };
  Run Decode(const std::string& path) {
    std::ostringstream out;
    Analyzer a(out, AnalyzerOptions{});
    const absl::Status s = ReadCapture(
        path, [&](const L4Packet& p) { a.OnPacket(p); },
        [&](uint64_t f, FrameResult r) { a.OnBadFrame(f, r); });
    EXPECT_TRUE(s.ok()) << s;
    a.Finish();
    return Run{a.summary(), out.str()};
  }
  std::string Path(const std::string& name) { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(DecodeTest, CleanTcpSessionsDecodeWithExactCounts) {
  struct Variant {
    bool markers, crc;
    uint32_t mss, write_size, read_size;
  };
  const Variant variants[] = {
      {false, true, 1460, 5000, 3000},  {true, true, 1460, 5000, 3000},
      {true, false, 1460, 7000, 1000},  {false, false, 536, 0, 0},
      {true, true, 8960, 65536, 40000}, {true, true, 576, 1, 70000},
  };
  for (const Variant& v : variants) {
    SynthOptions o;
    o.markers = v.markers;
    o.crc = v.crc;
    o.mss = v.mss;
    o.write_size = v.write_size;
    o.read_size = v.read_size;
    SynthCounts want;
    const std::string path = Path("tcp.pcap");
    ASSERT_TRUE(WriteTcpSession(path, o, &want).ok());
    const Run r = Decode(path);
    SCOPED_TRACE(testing::Message() << "markers=" << v.markers << " crc=" << v.crc << " mss=" << v.mss
                                    << " write=" << v.write_size << " read=" << v.read_size << "\n"
                                    << r.text);
    EXPECT_EQ(r.summary.violations, 0u);
    EXPECT_EQ(r.summary.mpa_connections, 1u);
    EXPECT_EQ(r.summary.rdmap_messages, want.rdmap_messages);
    EXPECT_EQ(r.summary.ddp_segments, want.ddp_segments);
    EXPECT_EQ(r.summary.fpdus, want.ddp_segments);  // one FPDU per DDP segment
    EXPECT_EQ(r.summary.rpcrdma_messages, want.rpcrdma_messages);
    if (v.markers) {
      EXPECT_GT(r.summary.markers, 0u);
    } else {
      EXPECT_EQ(r.summary.markers, 0u);
    }
    EXPECT_NE(r.text.find("read_response stag=0x2000300 to=0x20000 len=" + std::to_string(v.read_size)),
              std::string::npos);
  }
}

TEST_F(DecodeTest, CleanSctpSessionDecodes) {
  SynthCounts want;
  const std::string path = Path("sctp.pcap");
  ASSERT_TRUE(WriteSctpSession(path, SynthOptions{}, &want).ok());
  const Run r = Decode(path);
  SCOPED_TRACE(r.text);
  EXPECT_EQ(r.summary.violations, 0u);
  EXPECT_EQ(r.summary.sctp_associations, 1u);
  EXPECT_EQ(r.summary.session_control, 2u);
  EXPECT_EQ(r.summary.rdmap_messages, want.rdmap_messages);
  EXPECT_EQ(r.summary.ddp_segments, want.ddp_segments);
  EXPECT_EQ(r.summary.rpcrdma_messages, 2u);
}

struct FaultCase {
  Fault fault;
  bool sctp;
  bool markers;
  bool crc;
  const char* expect;  // text the violation line must contain
};

class FaultTest : public DecodeTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(FaultTest, IsReportedAndNamed) {
  const FaultCase& c = GetParam();
  SynthOptions o;
  o.fault = c.fault;
  o.markers = c.markers;
  o.crc = c.crc;
  const std::string path = Path("fault.pcap");
  ASSERT_TRUE((c.sctp ? WriteSctpSession(path, o) : WriteTcpSession(path, o)).ok());
  const Run r = Decode(path);
  SCOPED_TRACE(r.text);
  EXPECT_GE(r.summary.violations, 1u);
  EXPECT_NE(r.text.find(c.expect), std::string::npos) << "missing: " << c.expect;
  // The first violation is the injected fault, not collateral noise.
  const size_t first = r.text.find("VIOLATION");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(r.text.substr(first, r.text.find('\n', first) - first).find(c.expect), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    All, FaultTest,
    ::testing::Values(
        FaultCase{Fault::kCorruptPayload, false, false, true, "MPA crc_error"},
        FaultCase{Fault::kCorruptPayload, false, true, true, "MPA crc_error"},
        FaultCase{Fault::kBadMarker, false, true, false, "MPA marker"},
        FaultCase{Fault::kDataBeforeReply, false, false, true, "before the Reply"},
        FaultCase{Fault::kNoRtr, false, false, true, "not the negotiated zero-length RDMA Write RTR"},
        FaultCase{Fault::kMsnGap, false, false, true, "MSN 3, expected 2"},
        FaultCase{Fault::kOrphanReadResponse, false, false, true, "no outstanding Read Request"},
        FaultCase{Fault::kBadRpcVersion, false, false, true, "RPC-over-RDMA call"},
        FaultCase{Fault::kMsnGap, true, false, true, "MSN 3, expected 2"},
        FaultCase{Fault::kSctpOrdered, true, false, true, "not sent unordered"},
        FaultCase{Fault::kSctpNoIndication, true, false, true, "RFC 5043 11.1"},
        FaultCase{Fault::kSctpNoInitiate, true, false, true, "before the stream session was initiated"}));

// A zero-length RDMA Write RTR with STag 0 is legal (RFC 5041 7.1 does not
// validate zero-length tagged segments): a warning, no violation, exit 0.
TEST_F(DecodeTest, RtrWithStagZeroIsAWarning) {
  SynthOptions o;
  o.rtr_stag = 0;
  const std::string path = Path("rtr0.pcap");
  ASSERT_TRUE(WriteTcpSession(path, o).ok());
  const Run r = Decode(path);
  SCOPED_TRACE(r.text);
  EXPECT_EQ(r.summary.violations, 0u);
  EXPECT_EQ(r.summary.warnings, 1u);
  EXPECT_NE(r.text.find("WARNING: zero-length RDMA Write RTR with STag 0"), std::string::npos);
  o.rtr_stag = 1;
  ASSERT_TRUE(WriteTcpSession(path, o).ok());
  EXPECT_EQ(Decode(path).summary.warnings, 0u);
}

TEST_F(DecodeTest, TruncatedAndDamagedCapturesNeverCrash) {
  const std::string path = Path("tcp.pcap");
  ASSERT_TRUE(WriteTcpSession(path, SynthOptions{}).ok());
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);
  const std::string cut = Path("cut.pcap");
  for (size_t len = 0; len < bytes.size(); len += 97) {
    std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(len));
    std::ostringstream out;
    Analyzer a(out, AnalyzerOptions{});
    // Either an error for the file or a decode of what is there; never a crash.
    (void)ReadCapture(cut, [&](const L4Packet& p) { a.OnPacket(p); },
                      [&](uint64_t f, FrameResult r) { a.OnBadFrame(f, r); });
    a.Finish();
  }
  // Flipping bytes past the file header: every run still ends with a summary.
  for (size_t pos = 40; pos < bytes.size(); pos += 61) {
    std::string damaged = bytes;
    damaged[pos] = static_cast<char>(damaged[pos] ^ 0x5a);
    std::ofstream(cut, std::ios::binary).write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
    std::ostringstream out;
    Analyzer a(out, AnalyzerOptions{});
    (void)ReadCapture(cut, [&](const L4Packet& p) { a.OnPacket(p); },
                      [&](uint64_t f, FrameResult r) { a.OnBadFrame(f, r); });
    a.Finish();
    EXPECT_NE(out.str().find("summary:"), std::string::npos);
  }
}

TEST(Capture, MissingFileIsAnError) {
  const absl::Status s = ReadCapture("/nonexistent/x.pcap", [](const L4Packet&) {}, nullptr);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace iwarp::decode
