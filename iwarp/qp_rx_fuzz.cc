// Fuzz target: the engine's receive path after a real MPA handshake.
//
// Two engines over two TcpStacks on the in-memory link complete the MPA
// handshake; then the input is written into the initiator's TCP connection
// (bypassing its engine) and the responder's engine receives it as a peer's
// byte stream.
//
// Input layout:
//   byte 0: bit 0 CRC, bit 1 Markers (the responder asks for them), bit 2 raw
//           (the rest is sent unframed), bits 4-7 TCP write size selector
//   byte 1: bits 0-1 receives to post (0..3), bits 2-3 responder IRD (0..3)
//   then records: 2-byte big-endian length, that many bytes of ULPDU (DDP
//   header + payload), each framed by the fuzzer as one FPDU with a valid CRC
//   and Markers where negotiated, so the DDP/RDMAP checks are reached.
// Symbolic STags: a tagged header's STag, a Send with Invalidate's STag or a
// Read Request's source STag of 1..4 is replaced by the responder's region
// 1..4 (write sink, read source, both, receive buffer).
//
// Traps on: a byte written outside a registered region (guard bytes), more
// than one Terminate sent, a Terminate sent while still in RTS, bytes placed
// beyond what was sent.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <algorithm>
#include <vector>

#include "iwarp/qp.h"
#include "iwarp/qp_fuzz_util.h"
#include "iwarp/qp_test_util.h"
#include "mpa/mpa_fpdu.h"

namespace {

using namespace iwarp;  // NOLINT: fuzz driver
using engine::testing::Pair;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  const uint8_t setup = data[1];
  engine::QpOptions oa, ob;
  oa.mpa.crc = (mode & 1) != 0;
  ob.mpa.crc = (mode & 1) != 0;
  ob.mpa.want_markers = (mode & 2) != 0;
  ob.mpa.ird = static_cast<uint16_t>((setup >> 2) & 3);
  oa.mpa.ord = ob.mpa.ird;
  oa.mpa.rtr_types = engine::kRtrWrite;
  oa.sq_depth = ob.sq_depth = 8;
  oa.rq_depth = ob.rq_depth = 8;
  tcp::TcpOptions topt;
  topt.max_connections = 4;
  topt.max_listeners = 2;
  topt.send_buffer_bytes = 128 * 1024;
  topt.receive_buffer_bytes = 128 * 1024;
  Pair p(oa, ob, {}, topt);
  if (!p.Establish()) std::abort();

  const engine::testing::FuzzStags stags = engine::testing::RegisterFuzzRegions(p.b.mem);
  for (uint32_t i = 0; i < (setup & 3u); ++i) {
    p.b.qp->PostRecv(engine::testing::FuzzRecv(i, stags));
  }

  // Build the byte stream a's connection will carry.
  std::vector<uint8_t> stream;
  ByteSpan in(data + 2, size - 2);
  if ((mode & 4) != 0) {
    stream.assign(in.begin(), in.end());
  } else {
    // a's stream so far: its Request (no private data), then its FPDUs.
    const uint64_t origin = mpa::kStartupHeaderSize + mpa::kIrdOrdSize;
    const mpa::FpduConfig cfg{p.a.qp->negotiated().tx_markers, p.a.qp->negotiated().crc,
                              Seq32(static_cast<uint32_t>(origin))};
    uint64_t seq = origin + p.a.qp->stats().bytes_sent;
    std::vector<uint8_t> buf(70000);
    std::vector<uint8_t> u;
    while (engine::testing::NextFuzzSegment(in, u)) {
      engine::testing::RemapFuzzStags(u, stags);
      const mpa::FpduEncodeResult r =
          mpa::EncodeFpdu(ByteSpan(u), ByteSpan(), Seq32(static_cast<uint32_t>(seq)), cfg,
                          MutableByteSpan(buf));
      if (r.status != mpa::FpduStatus::kOk) break;
      stream.insert(stream.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(r.size));
      seq += r.size;
    }
  }

  // Small writes split FPDUs over many segments; bounded so that a large
  // input stays a few hundred segments.
  const size_t chunk =
      std::max<size_t>(1 + static_cast<size_t>(mode >> 4) * 397, stream.size() / 256);
  ByteSpan rest(stream);
  int idle = 0;
  while (!rest.empty() && p.a.qp->conn().valid() && idle < 50) {
    const size_t n = p.a.stack->Send(p.a.qp->conn(), rest.first(std::min(chunk, rest.size())),
                                     p.link.now);
    rest = rest.subspan(n);
    idle = n == 0 ? idle + 1 : 0;
    p.RunUntil([] { return false; }, 200);
  }
  p.RunUntil([] { return false; }, 100'000);

  if (std::getenv("QP_RX_FUZZ_VERBOSE") != nullptr) {
    std::fprintf(stderr, "stream %zu placed %llu fpdus_in %llu term_sent %s state %s\n",
                 stream.size(), static_cast<unsigned long long>(p.b.qp->stats().bytes_placed),
                 static_cast<unsigned long long>(p.b.qp->stats().fpdus_in),
                 p.b.qp->terminate_sent()
                     ? std::string(rdmap::TerminateCodeName(*p.b.qp->terminate_sent())).c_str()
                     : "-",
                 std::string(engine::QpStateName(p.b.qp->state())).c_str());
  }
  Check(p.b.mem.GuardsIntact());
  Check(p.b.qp->stats().terminates_sent <= 1);
  if (p.b.qp->stats().terminates_sent == 1) Check(p.b.qp->state() != engine::QpState::kRts);
  // A QP that sent a Terminate never ends as a graceful close.
  if (p.b.qp->stats().terminates_sent == 1) Check(p.b.qp->state() != engine::QpState::kClosed);
  Check(p.b.qp->stats().bytes_placed <= stream.size());
  return 0;
}
