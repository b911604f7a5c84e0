// Fuzz support shared by the engine's receive fuzzers (qp_rx over tcp_lite +
// MPA, qp_llp_rx over a SegmentLlp): the regions a fuzzed peer aims at, and
// the input format "2-byte big-endian length, then that many bytes of one
// DDP segment", repeated. Small STag values 1..4 in a segment are replaced by
// the real STags of those regions so that the fuzzer reaches placement, not
// only the invalid-STag check. Test-only code: it allocates freely.
#ifndef IWARPD_IWARP_QP_FUZZ_UTIL_H_
#define IWARPD_IWARP_QP_FUZZ_UTIL_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "ddp/ddp_header.h"
#include "ddp/rdmap.h"
#include "iwarp/qp_test_util.h"

namespace iwarp::engine::testing {

// Index 1..4: remote-writable, remote-readable, all rights ending at TO
// 2^64-1 (the wrap case), local-write receive buffers. Index 0 is unused.
using FuzzStags = std::array<uint32_t, 5>;

inline FuzzStags RegisterFuzzRegions(TestMemory& mem) {
  FuzzStags s{};
  s[1] = mem.Register(4096, ddp::kAccessRemoteWrite, 0x10000);
  s[2] = mem.Register(4096, ddp::kAccessRemoteRead, 0x20000);
  s[3] = mem.Register(4096, ddp::kAccessAll, ~uint64_t{0} - 4095);
  s[4] = mem.Register(256, ddp::kAccessLocalWrite, 0x40000);
  return s;
}

// Receive `i` (0..2) the fuzzers post: 64 bytes of region 4 at
// 0x40000 + 64 i. Receive 0 is one SGE; receive 1 is three SGEs (16 bytes,
// an empty one naming no region, 48 bytes) so that placement straddles SGEs;
// receive 2 ends in an SGE of region 1, which lacks local write (the local
// protection path).
inline RecvWr FuzzRecv(uint32_t i, const FuzzStags& stags) {
  const uint64_t to = 0x40000 + 64u * i;
  RecvWr wr;
  wr.wr_id = i;
  if (i == 1) {
    wr.local.Add(LocalSge{stags[4], to, 16});
    wr.local.Add(LocalSge{0xdead, 0, 0});
    wr.local.Add(LocalSge{stags[4], to + 16, 48});
  } else if (i == 2) {
    wr.local.Add(LocalSge{stags[4], to, 32});
    wr.local.Add(LocalSge{stags[1], 0x10000, 32});
  } else {
    wr.local = LocalSge{stags[4], to, 64};
  }
  return wr;
}

// Takes the next length-prefixed segment off `in` into `out`; false when
// fewer than two bytes are left. A length beyond the input is cut short.
inline bool NextFuzzSegment(ByteSpan& in, std::vector<uint8_t>& out) {
  if (in.size() < 2) return false;
  size_t n = static_cast<size_t>(in[0]) << 8 | in[1];
  in = in.subspan(2);
  n = std::min(n, in.size());
  out.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
  in = in.subspan(n);
  return true;
}

// Replaces STag values 1..4 (tagged STag, untagged Send-with-Invalidate
// STag, Read Request source STag) with the registered ones.
inline void RemapFuzzStags(std::vector<uint8_t>& u, const FuzzStags& stags) {
  if (u.size() >= ddp::kTaggedHeaderSize && (u[0] & ddp::kCtrlTagged) != 0) {
    const uint32_t s = LoadBe32(&u[ddp::off::kStag]);
    if (s >= 1 && s <= 4) StoreBe32(&u[ddp::off::kStag], stags[s]);
  } else if (u.size() >= ddp::kUntaggedHeaderSize) {
    const uint32_t s = LoadBe32(&u[ddp::off::kRsvdUlp1]);
    if (s >= 1 && s <= 4) StoreBe32(&u[ddp::off::kRsvdUlp1], stags[s]);
    if (u.size() >= ddp::kUntaggedHeaderSize + rdmap::kReadRequestSize) {
      uint8_t* src = &u[ddp::kUntaggedHeaderSize + 16];
      const uint32_t r = LoadBe32(src);
      if (r >= 1 && r <= 4) StoreBe32(src, stags[r]);
    }
  }
}

}  // namespace iwarp::engine::testing

#endif  // IWARPD_IWARP_QP_FUZZ_UTIL_H_
