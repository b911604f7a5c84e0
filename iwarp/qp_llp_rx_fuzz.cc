// Fuzz target: the engine over a message-oriented LLP (RFC 5043 / SCTP):
// session setup private data (the RFC 6581 IRD/ORD block) and whole DDP
// segments as the SCTP session layer delivers them.
//
// The LLP is a recording test double (DoubleLlp) standing for one DDP stream
// of an sctp::DdpAssociation: usrsctp's session layer has its own fuzzer
// (sctp_session) and one global stack per process is too slow per input.
//
// Input layout:
//   byte 0: bit 0 role (0: responder, the peer's Initiate carries the private
//           data; 1: initiator, the peer's Accept does), bit 1 the LLP answers
//           every other send with would-block, bits 2-3 receives to post
//           (0..3), bits 4-7 MULPDU selector (64 + 32 * n bytes)
//   byte 1: private data length n, then n bytes of it
//   then records: 2-byte big-endian length, that many bytes of DDP segment.
// Symbolic STags as in qp_rx_fuzz.cc: 1..4 name the engine's regions.
//
// Traps on: a byte written outside a registered region, a segment sent
// larger than the MULPDU, more than one Terminate sent, a Terminate sent
// while still in RTS, bytes placed beyond what was delivered.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "iwarp/qp.h"
#include "iwarp/qp_fuzz_util.h"
#include "iwarp/qp_test_util.h"

namespace {

using namespace iwarp;  // NOLINT: fuzz driver

void Check(bool ok) {
  if (!ok) std::abort();
}

class DoubleLlp final : public engine::SegmentLlp {
 public:
  uint32_t mulpdu = 64;
  bool flaky = false;
  bool ended = false;
  size_t sent = 0;
  uint32_t Mulpdu() const override { return mulpdu; }
  engine::LlpSendStatus SendSegment(ByteSpan header, ByteSpan payload) override {
    if (flaky && (++calls_ & 1) != 0) return engine::LlpSendStatus::kWouldBlock;
    Check(header.size() + payload.size() <= mulpdu);
    ++sent;
    return ended ? engine::LlpSendStatus::kError : engine::LlpSendStatus::kOk;
  }
  engine::LlpSendStatus Initiate(ByteSpan) override { return engine::LlpSendStatus::kOk; }
  engine::LlpSendStatus Accept(ByteSpan pd) override {
    Check(pd.size() <= 512);
    return engine::LlpSendStatus::kOk;
  }
  engine::LlpSendStatus Reject(ByteSpan pd) override {
    Check(pd.size() <= 512);
    return engine::LlpSendStatus::kOk;
  }
  engine::LlpSendStatus EndStream() override {
    ended = true;
    return engine::LlpSendStatus::kOk;
  }
  void Detach() override {}

 private:
  uint32_t calls_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  const size_t pd_len = std::min<size_t>(data[1], size - 2);
  ByteSpan pd(data + 2, pd_len);
  ByteSpan in(data + 2 + pd_len, size - 2 - pd_len);

  DoubleLlp llp;
  llp.flaky = (mode & 2) != 0;
  llp.mulpdu = 64 + 32u * (mode >> 4);
  engine::testing::TestMemory mem;
  engine::testing::RecordingObserver obs;
  engine::QpOptions o;
  o.sq_depth = 8;
  o.rq_depth = 8;
  o.mpa.ird = 2;
  auto created = engine::Qp::CreateOnLlp(o, llp, mem, obs);
  Check(created.ok());
  engine::Qp& qp = **created;

  const engine::testing::FuzzStags stags = engine::testing::RegisterFuzzRegions(mem);
  for (uint32_t i = 0; i < ((mode >> 2) & 3u); ++i) {
    qp.PostRecv(engine::testing::FuzzRecv(i, stags));
  }
  if ((mode & 1) == 0) {
    qp.OnLlpInitiate(pd);
  } else {
    Check(qp.ConnectLlp({}, 0).ok());
    qp.OnLlpAccepted(pd);
  }
  // Some local work so that transmit runs beside the receive path: a Write
  // gathered from two SGEs.
  engine::SendWr w{50, engine::WrOpcode::kRdmaWrite,
                   engine::LocalSge{stags[3], ~uint64_t{0} - 4095, 100}, 0x1234, 0};
  w.local.Add(engine::LocalSge{stags[3], ~uint64_t{0} - 4095 + 200, 200});
  qp.PostSend(w);

  size_t delivered = 0;
  uint64_t now = 1;
  std::vector<uint8_t> u;
  while (engine::testing::NextFuzzSegment(in, u)) {
    engine::testing::RemapFuzzStags(u, stags);
    delivered += u.size();
    qp.OnLlpSegment(ByteSpan(u));
    qp.Poll(now++);
  }
  for (int i = 0; i < 8; ++i) qp.Poll(now++);
  if (llp.ended) qp.OnLlpEnded(engine::LlpEnd::kOrderly);  // our session Terminate answered
  engine::Completion c[16];
  while (qp.PollCompletions(std::span<engine::Completion>(c)) > 0) {
  }

  Check(mem.GuardsIntact());
  Check(qp.stats().terminates_sent <= 1);
  if (qp.stats().terminates_sent == 1) Check(qp.state() != engine::QpState::kRts);
  // A QP that sent a Terminate never ends as a graceful close.
  if (qp.stats().terminates_sent == 1) Check(qp.state() != engine::QpState::kClosed);
  Check(qp.stats().bytes_placed <= delivered);
  return 0;
}
