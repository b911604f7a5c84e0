// The iwarp_fpdu_test service (test mode) on a real tcp_lite stack and a real
// engine QP: a generator's pre-built TCP stream of FPDUs, replayed in passes
// with the same sequence numbers, is placed; a faulty FPDU is answered with
// the RFC's Terminate and the QP starts over for the next pass.
#include <memory>
#include <vector>

#include "dataplane/services/iwarp_services.h"
#include "ddp/ddp_header.h"
#include "ddp/rdmap.h"
#include "gtest/gtest.h"
#include "mpa/mpa_fpdu.h"
#include "tcp_lite/tcp_stack_test_util.h"

namespace iwarp::dataplane {
namespace {

using tcp::testing::CaptureOutput;
using tcp::testing::kIpA;
using tcp::testing::kIpB;
using tcp::testing::SegBuilder;

constexpr uint32_t kLocalIsn = 1000, kRemoteIsn = 0xFFFFF000;  // the stream crosses 2^32

enum class Fault { kNone, kCrc, kStag, kBounds };

class FpduTestService : public ::testing::Test {
 protected:
  void Make(bool markers, uint64_t loop_bytes) {
    tcp::TcpOptions o;
    o.max_connections = 8;
    o.delayed_ack_us = 0;
    const uint32_t ip = kIpA;
    auto s = tcp::TcpStack::Create(o, std::span<const uint32_t>(&ip, 1), out_, isn_, 0);
    ASSERT_TRUE(s.ok()) << s.status();
    stack_ = std::move(*s);
    config::ServiceConfig c;
    c.name = "f";
    c.type = config::ServiceType::kIwarpFpduTest;
    c.port = 4791;
    c.remote = kIpB;
    c.remote_port = 40000;
    c.local_isn = kLocalIsn;
    c.remote_isn = kRemoteIsn;
    c.loop_bytes = loop_bytes;
    c.region_bytes = 8192;
    c.markers = markers;
    markers_ = markers;
    auto svc = IwarpService::Create(c, iw_, stack_.get(), &clock_, 8, kIpA);
    ASSERT_TRUE(svc.ok()) << svc.status();
    svc_ = std::move(*svc);
    ASSERT_TRUE(svc_->Start().ok());
    region_ = svc_->test_region();
    ASSERT_TRUE(region_.present);
    EXPECT_EQ(region_.length, 8192u);
    peer_.src_port = 40000;
    peer_.dst_port = 4791;
  }

  // One pass: `n` tagged RDMA Writes of `len` bytes at TO base + i * len, the
  // last one made faulty as `fault` says; one FPDU per TCP segment. Returns
  // the segments' (stream offset, bytes) and sets pass_bytes_.
  // `last_len` (non-zero): the last Write's size instead of `len`.
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> Pass(int n, uint32_t len, Fault fault,
                                                             uint32_t last_len = 0) {
    std::vector<std::pair<uint32_t, std::vector<uint8_t>>> out;
    uint32_t off = 0;
    std::vector<uint8_t> payload(len);
    for (int i = 0; i < n; ++i) {
      if (i == n - 1 && last_len != 0) payload.resize(last_len);
      for (uint32_t k = 0; k < payload.size(); ++k) payload[k] = static_cast<uint8_t>(i * 31 + k);
      ddp::DdpHeader h;
      h.tagged = true;
      h.last = true;
      h.rsvd_ulp0 = rdmap::MakeControl(rdmap::Opcode::kRdmaWrite);
      h.stag = region_.stag;
      h.to = region_.to + uint64_t{static_cast<uint32_t>(i)} * len;
      const bool last = i == n - 1;
      if (last && fault == Fault::kStag) h.stag ^= 0x100;
      if (last && fault == Fault::kBounds) h.to = region_.to + region_.length - len / 2;
      uint8_t hdr[ddp::kTaggedHeaderSize];
      ddp::EncodeHeader(h, MutableByteSpan(hdr));
      const mpa::FpduConfig fc{markers_, true, Seq32(0)};
      std::vector<uint8_t> fpdu(mpa::FpduWireSize(sizeof(hdr) + payload.size(), Seq32(off), fc));
      const mpa::FpduEncodeResult r =
          mpa::EncodeFpdu(ByteSpan(hdr), ByteSpan(payload), Seq32(off), fc, MutableByteSpan(fpdu));
      EXPECT_EQ(r.status, mpa::FpduStatus::kOk);
      if (last && fault == Fault::kCrc) fpdu.back() ^= 1;
      out.emplace_back(off, std::move(fpdu));
      off += static_cast<uint32_t>(out.back().second.size());
    }
    pass_bytes_ = off;
    return out;
  }

  void Send(const std::vector<std::pair<uint32_t, std::vector<uint8_t>>>& pass, size_t skip = SIZE_MAX) {
    for (size_t i = 0; i < pass.size(); ++i) {
      if (i == skip) continue;
      const auto seg = peer_.Build(tcp::kFlagAck, kRemoteIsn + 1 + pass[i].first, kLocalIsn + 1,
                                   65535, tcp::Options(), pass[i].second);
      stack_->Input(kIpB, kIpA, ByteSpan(seg), clock_.now_us);
      Poll();
    }
  }
  void Poll() {
    clock_.now_us += 10;
    stack_->RunTimers(clock_.now_us);
    svc_->Poll(clock_.now_us / 1000);
  }

  config::IwarpConfig iw_;
  ServiceClock clock_;
  tcp::IsnGenerator isn_ = tcp::testing::TestIsn();
  CaptureOutput out_;
  SegBuilder peer_;
  std::unique_ptr<tcp::TcpStack> stack_;
  std::unique_ptr<IwarpService> svc_;
  IwarpService::TestRegion region_;
  bool markers_ = false;
  uint32_t pass_bytes_ = 0;
};

TEST_F(FpduTestService, ValidPassesArePlacedPassAfterPass) {
  Make(false, 1);  // the region's STag first; loop_bytes follows from the pass
  const auto pass = Pass(8, 1000, Fault::kNone);
  svc_.reset();
  stack_.reset();
  Make(false, pass_bytes_);
  EXPECT_TRUE(out_.Take().empty()) << "no SYN, no MPA frames: the QP starts in Full Operation";
  for (int p = 0; p < 3; ++p) Send(pass, p == 1 ? 3 : SIZE_MAX);  // pass 2 loses one segment
  Send(pass);
  const IwarpServiceCounters c = svc_->iwarp_counters();
  // Passes 1, 2 (its gap filled by pass 3's copy), the rest of 3 was a
  // duplicate of 2, pass 4 whole: 3 x 8 FPDUs; nothing refused.
  EXPECT_EQ(c.fpdus_in, 24u);
  EXPECT_EQ(c.bytes_placed, 24u * 1000);
  EXPECT_EQ(c.terminates_sent, 0u);
  EXPECT_EQ(c.crc_errors, 0u);
  EXPECT_EQ(c.test_qps_started, 1u);
  EXPECT_EQ(c.guard_violations, 0u);
  EXPECT_EQ(stack_->stats().test_loops, 3u);
}

TEST_F(FpduTestService, MarkersOnAPassOfWhole512ByteBlocks) {
  // With Markers every pass must be a whole number of 512-byte blocks, so the
  // Markers of each pass fall at the same places: the last Write's size is
  // chosen to make it so.
  Make(true, 512);
  uint32_t last = 1;
  for (; last < 1000; ++last) {
    Pass(4, 1000, Fault::kNone, last);
    if (pass_bytes_ % 512 == 0) break;
  }
  ASSERT_EQ(pass_bytes_ % 512, 0u);
  const auto pass = Pass(4, 1000, Fault::kNone, last);
  svc_.reset();
  stack_.reset();
  Make(true, pass_bytes_);
  Send(pass);
  Send(pass);
  Send(pass);
  const IwarpServiceCounters c = svc_->iwarp_counters();
  EXPECT_EQ(c.fpdus_in, 12u);
  EXPECT_EQ(c.bytes_placed, 3u * (3 * 1000 + last));
  EXPECT_EQ(c.marker_errors, 0u);
  EXPECT_EQ(c.crc_errors, 0u);
  EXPECT_EQ(c.terminates_sent, 0u);
}

struct FaultCase {
  Fault fault;
  rdmap::TerminateCode code;
};

class FpduTestFaults : public FpduTestService, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(FpduTestFaults, EveryFaultyFpduGetsItsTerminateAndTheNextPassANewQp) {
  Make(false, 1);
  const auto pass = Pass(4, 1000, GetParam().fault);
  svc_.reset();
  stack_.reset();
  Make(false, pass_bytes_);
  for (int p = 0; p < 3; ++p) Send(pass);
  const IwarpServiceCounters c = svc_->iwarp_counters();
  EXPECT_EQ(c.terminates_sent, 3u);
  ASSERT_TRUE(svc_->last_terminate_sent().has_value());
  EXPECT_EQ(*svc_->last_terminate_sent(), GetParam().code);
  EXPECT_EQ(c.test_qps_started, 4u) << "one connection per pass, and the next one waiting";
  EXPECT_EQ(c.bytes_placed, 3u * 3 * 1000) << "the three valid Writes of each pass, nothing else";
  EXPECT_EQ(c.guard_violations, 0u);
  // The Terminate and the reset went to the generator.
  bool rst = false, term = false;
  for (const auto& w : out_.Take()) {
    rst |= w.Has(tcp::kFlagRst);
    term |= !w.payload.empty();
  }
  EXPECT_TRUE(rst);
  EXPECT_TRUE(term);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FpduTestFaults,
    ::testing::Values(
        // RFC 5044 8 / RFC 5040 7: LLP layer, MPA CRC error.
        FaultCase{Fault::kCrc, rdmap::TerminateCode{rdmap::kLayerLlp, 0, 0x02}},
        // RFC 5041 7.2: DDP tagged buffer errors.
        FaultCase{Fault::kStag, rdmap::TerminateCode{rdmap::kLayerDdp, 1, 0x00}},
        FaultCase{Fault::kBounds, rdmap::TerminateCode{rdmap::kLayerDdp, 1, 0x01}}));

}  // namespace
}  // namespace iwarp::dataplane
