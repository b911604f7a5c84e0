// Fuzz target: one DDP segment as an LLP would deliver it.
//
// Checks, trapping on any disagreement:
//  - DDP header: parse -> encode reproduces the input bytes (reserved control
//    bits aside) and parses back to the same fields;
//  - RDMA Read Request and Terminate bodies in the payload: parse -> encode
//    reproduces the parsed bytes (reserved bits aside);
//  - the receive checks against a fixed STag table and fixed queues: an
//    accepted segment places exactly its payload inside its buffer; a rejected
//    one yields a Terminate that parses back to the same error and, when it
//    copies the DDP header, copies it byte for byte;
//  - the segmenter, with message length and MULPDU taken from the input,
//    tiles the message exactly within the MULPDU.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ddp/rdmap.h"
#include "ddp/test_tables.h"

namespace {

using namespace iwarp;  // NOLINT: fuzz driver

struct Fixture {
  ddp::testing::FakeStagTable stags;
  ddp::testing::FakeQueues queues;
  rdmap::RxContext ctx;
  Fixture() {
    ddp::TaggedRegion w;
    w.stag = 0x00000101;
    w.base_to = 0;
    w.length = 1u << 20;
    w.access = ddp::kAccessRemoteWrite;
    w.pd = 1;
    w.valid = true;
    w.handle = 1;
    stags.Put(w);
    ddp::TaggedRegion r = w;
    r.stag = 0x00000201;
    r.base_to = 0xFFFFFFFFFFFF0000ull;
    r.length = 0x10000;
    r.access = ddp::kAccessRemoteRead;
    r.stream_id = 9;
    r.handle = 2;
    stags.Put(r);
    queues.Post(rdmap::kQnSend, 10, 4096);
    queues.Post(rdmap::kQnSend, 11, 100);
    queues.Post(rdmap::kQnReadRequest, 20, rdmap::kReadRequestSize);
    queues.Post(rdmap::kQnTerminate, 30, rdmap::kMaxTerminateSize);
    ctx.stream = {1, 9};
    ctx.stags = &stags;
    ctx.queues = &queues;
  }
};

void CheckHeaderRoundTrip(ByteSpan in) {
  ddp::DdpHeader h;
  if (ddp::ParseHeader(in, &h) != ddp::HeaderStatus::kOk) return;
  std::array<uint8_t, ddp::kMaxHeaderSize> out{};
  if (ddp::EncodeHeader(h, out) != h.size()) __builtin_trap();
  if (out[0] != (in[0] & ~ddp::kCtrlReserved)) __builtin_trap();
  if (std::memcmp(out.data() + 1, in.data() + 1, h.size() - 1) != 0) __builtin_trap();
  ddp::DdpHeader back;
  if (ddp::ParseHeader(ByteSpan(out.data(), h.size()), &back) != ddp::HeaderStatus::kOk) {
    __builtin_trap();
  }
  if (!(back == h)) __builtin_trap();
}

void CheckBodies(ByteSpan payload) {
  rdmap::ReadRequest rr;
  if (rdmap::ParseReadRequest(payload, &rr) == rdmap::BodyStatus::kOk) {
    std::array<uint8_t, rdmap::kReadRequestSize> out{};
    if (rdmap::EncodeReadRequest(rr, out) != out.size()) __builtin_trap();
    if (std::memcmp(out.data(), payload.data(), out.size()) != 0) __builtin_trap();
  }
  rdmap::Terminate t;
  size_t used = 0;
  if (rdmap::ParseTerminate(payload, &t, &used) == rdmap::BodyStatus::kOk) {
    if (used > payload.size()) __builtin_trap();
    std::array<uint8_t, rdmap::kMaxTerminateSize> out{};
    if (rdmap::EncodeTerminate(t, out) != used) __builtin_trap();
    if (out[0] != payload[0] || out[1] != payload[1]) __builtin_trap();
    if (out[2] != (payload[2] & 0xE0) || out[3] != 0) __builtin_trap();
    if (std::memcmp(out.data() + 4, payload.data() + 4, used - 4) != 0) __builtin_trap();
  }
}

void CheckReceive(const Fixture& f, ByteSpan in) {
  const rdmap::SegmentVerdict v = rdmap::CheckSegment(in, f.ctx);
  if (v.ok) {
    if (!v.header_parsed || v.placement.length != in.size() - v.header.size()) __builtin_trap();
    if (v.header.tagged && v.placement.length != 0) {
      // Both fixture regions are 64 KiB or more; the offset must stay inside.
      const ddp::TaggedRegion* r = f.stags.Find(v.header.stag);
      if (r == nullptr || v.placement.offset + v.placement.length > r->length) __builtin_trap();
    } else if (!v.header.tagged) {
      ddp::QueueWindow w;
      f.queues.Window(v.header.qn, &w);
      const uint32_t index = v.header.msn.value() - w.first_msn.value();
      const ddp::UntaggedBuffer* b = f.queues.Buffer(v.header.qn, index);
      if (b == nullptr || v.placement.handle != b->handle ||
          v.placement.offset + v.placement.length > b->length) {
        __builtin_trap();
      }
    }
    return;
  }
  std::array<uint8_t, rdmap::kMaxTerminateSize> term{};
  const size_t n = rdmap::BuildTerminate(v, in, term);
  if (n < rdmap::kTerminateControlSize) __builtin_trap();
  rdmap::Terminate t;
  size_t used = 0;
  if (rdmap::ParseTerminate(ByteSpan(term.data(), n), &t, &used) != rdmap::BodyStatus::kOk ||
      used != n || !(t.code == v.error)) {
    __builtin_trap();
  }
  if (t.d && std::memcmp(t.ddp_header.data(), in.data(), t.ddp_header.size()) != 0) {
    __builtin_trap();
  }
}

void CheckSegmenter(ByteSpan in) {
  if (in.size() < 8) return;
  ddp::OutboundMessage m;
  m.tagged = (in[6] & 1) != 0;
  m.length = LoadBe32(in.data()) % (1u << 18);
  m.to = (in[6] & 2) != 0 ? ~uint64_t{0} - (1u << 17) : 0;
  const uint32_t mulpdu = LoadBe16(in.data() + 4) % 9000;
  ddp::Segmenter s(m, mulpdu);
  if (s.status() != ddp::SegmentStatus::kOk) return;
  std::array<uint8_t, ddp::kMaxHeaderSize> hdr{};
  ddp::SegmentDesc d;
  uint64_t next = 0;
  bool saw_last = false;
  while (s.Next(hdr, &d)) {
    if (saw_last || d.message_offset != next || d.header_length + d.payload_length > mulpdu) {
      __builtin_trap();
    }
    next += d.payload_length;
    saw_last = d.last;
  }
  if (!saw_last || next != m.length) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Fixture fixture;
  const ByteSpan in(data, size);
  CheckHeaderRoundTrip(in);
  ddp::DdpHeader h;
  if (ddp::ParseHeader(in, &h) == ddp::HeaderStatus::kOk) CheckBodies(in.subspan(h.size()));
  CheckBodies(in);
  CheckReceive(fixture, in);
  CheckSegmenter(in);
  return 0;
}
