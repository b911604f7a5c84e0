// Fuzz target for iwarp-decode: the input is a sequence of Ethernet frames,
// each prefixed by a 2-byte big-endian length, run through the frame parser
// and the whole protocol analyser (TCP reassembly, MPA, DDP, RDMAP,
// RPC-over-RDMA, SCTP adaptation). Nothing a capture holds may crash it, and
// the analyser must always end with its summary.
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "tools/decode/analyzer.h"
#include "tools/decode/capture.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace iwarp::decode;
  std::ostringstream out;
  AnalyzerOptions options;
  options.segments = true;
  Analyzer analyzer(out, options);
  iwarp::ByteReader r(iwarp::ByteSpan(data, size));
  uint64_t frame = 0;
  while (r.remaining() >= 2) {
    const uint16_t len = r.U16();
    const iwarp::ByteSpan bytes = r.Bytes(len < r.remaining() ? len : r.remaining());
    L4Packet pkt;
    pkt.frame = ++frame;
    const FrameResult fr = ParseFrame(1 /* Ethernet */, bytes, &pkt);
    if (fr == FrameResult::kOk) {
      analyzer.OnPacket(pkt);
    } else if (fr != FrameResult::kNotIpv4 && fr != FrameResult::kNotTcpOrSctp) {
      analyzer.OnBadFrame(frame, fr);
    }
  }
  analyzer.Finish();
  if (out.str().find("summary:") == std::string::npos) __builtin_trap();
  return 0;
}
