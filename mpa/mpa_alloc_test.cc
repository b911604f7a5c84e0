// House style rule 13: the steady state allocates nothing. This binary
// replaces the global allocation functions with counting ones, then encodes
// and decodes a stream of FPDUs (Markers, CRC, splits across pieces, in-place
// and reassembled FPDUs) and checks the count did not move.
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "common/testing/alloc_counter.h"
#include "gtest/gtest.h"
#include "mpa/mpa_decoder.h"
#include "mpa/mpa_fpdu.h"
#include "mpa/mpa_frame.h"

namespace {
std::vector<int>* volatile g_escape = nullptr;  // keeps a new-expression from being elided
}  // namespace

namespace iwarp::mpa {
namespace {

class CountingSink : public UlpduSink {
 public:
  void OnUlpdu(ByteSpan ulpdu, Seq32) override {
    ++count;
    octets += ulpdu.size();
  }
  size_t count = 0;
  size_t octets = 0;
};

void RunSteadyState(const FpduConfig& c) {
  std::vector<uint8_t> payload(4000, 0x5a);
  std::vector<uint8_t> header(28, 0x11);
  std::vector<uint8_t> wire(1 << 20);
  std::vector<uint8_t> frame(600);
  FpduDecoder decoder(c, c.marker_origin, 8192);
  CountingSink sink;
  StartupFrame request;
  request.ird_ord = IrdOrd{16, 16, false, false, true, true};
  request.private_data = ByteSpan(payload).first(100);

  const uint64_t before = testutil::AllocationCount();
  Seq32 seq = c.marker_origin;
  size_t sent = 0;
  for (int round = 0; round < 4; ++round) {
    size_t used = 0;
    for (size_t len = 0; len < 4000 && used + 8192 < wire.size(); len += 97) {
      const FpduEncodeResult r = EncodeFpdu(header, ByteSpan(payload).first(len), seq + static_cast<uint32_t>(used), c,
                                            MutableByteSpan(wire).subspan(used));
      ASSERT_EQ(r.status, FpduStatus::kOk);
      used += r.size;
      ++sent;
    }
    // Pieces of 1460 octets, like segments, then the rest whole.
    size_t pos = 0;
    for (; pos + 1460 < used / 2; pos += 1460) {
      ASSERT_EQ(decoder.Feed(ByteSpan(wire).subspan(pos, 1460), sink).status, DecodeStatus::kOk);
    }
    ASSERT_EQ(decoder.Feed(ByteSpan(wire).subspan(pos, used - pos), sink).status,
              DecodeStatus::kOk);
    seq += static_cast<uint32_t>(used);
    StartupFrame decoded;
    const FrameResult fr = EncodeStartupFrame(request, frame);
    ASSERT_EQ(fr.status, FrameStatus::kOk);
    ASSERT_EQ(DecodeStartupFrame(ByteSpan(frame).first(fr.size), FrameType::kRequest, &decoded).status,
              FrameStatus::kOk);
  }
  const uint64_t after = testutil::AllocationCount();
  EXPECT_EQ(sink.count, sent);
  EXPECT_GT(sink.count, 100u);
  EXPECT_EQ(after - before, 0u) << "allocations on the MPA fast path";
}

TEST(MpaAlloc, SteadyStateAllocatesNothingWithMarkersAndCrc) {
  RunSteadyState({true, true, Seq32(0xFFFFF000u)});
}

TEST(MpaAlloc, SteadyStateAllocatesNothingWithoutMarkers) {
  RunSteadyState({false, true, Seq32(77)});
}

TEST(MpaAlloc, CounterSeesAllocations) {
  // The check above can fail: an allocation here is counted.
  const uint64_t before = testutil::AllocationCount();
  g_escape = new std::vector<int>(10);
  delete g_escape;
  EXPECT_GE(testutil::AllocationCount() - before, 2u);
}

}  // namespace
}  // namespace iwarp::mpa
