// Fuzz target: TCP out-of-order reassembly and SACK generation.
//
// Input layout:
//   0..3   initial rcv_nxt (big endian), so the 2^32 wrap is reached
//   4      capacity: max_segments = 1 + (b & 15), max_bytes = 256 * (1 + (b >> 4))
//   5      initial window = 64 * (b + 1)
//   then operations of 4 octets [op a b c]:
//     op & 3 == 0 or 1: insert stream bytes at offset (a << 8 | b) % 2^14 - 1024
//                       from the initial rcv_nxt, length 8 * c + (op >> 2 & 7),
//                       FIN if op & 0x80
//     op & 3 == 2:      window = 4 * (a << 8 | b)
//     op & 3 == 3:      Clear() if op & 4
// Invariants (trap on violation): delivered pieces are consecutive, reference
// the segment they came from and hold the stream's bytes; rcv_nxt and every
// SACK block (the D-SACK included) equal a byte-map reference model; held
// entries and bytes stay within capacity; every handle is released exactly
// once, never before its last piece.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "tcp_lite/tcp_reassembly.h"

namespace {

using iwarp::ByteSpan;
using iwarp::LoadBe32;
using iwarp::Seq32;
using iwarp::tcp::InsertResult;
using iwarp::tcp::kMaxSackBlocks;
using iwarp::tcp::ReasmConfig;
using iwarp::tcp::ReasmDrop;
using iwarp::tcp::Reassembler;
using iwarp::tcp::ReasmPiece;
using iwarp::tcp::ReasmSegment;
using iwarp::tcp::SackBlock;
using iwarp::tcp::SegmentHandle;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

uint8_t StreamByte(uint32_t seq) { return static_cast<uint8_t>((seq * 2654435761u) >> 24); }

constexpr int64_t kSpan = 1 << 15;  // model positions [0, kSpan) from the initial rcv_nxt

class Sink : public iwarp::tcp::ReasmSink {
 public:
  explicit Sink(uint32_t isn) : next(isn) {}
  void OnDeliver(const ReasmPiece& p) override {
    auto it = live.find(p.handle);
    Check(it != live.end());
    Check(p.seq == next);
    Check(p.offset + p.data.size() <= it->second.size());
    Check(p.data.data() == it->second.data() + p.offset);
    for (size_t i = 0; i < p.data.size(); ++i) {
      Check(p.data[i] == StreamByte(p.seq.value() + static_cast<uint32_t>(i)));
    }
    next += static_cast<uint32_t>(p.data.size());
    delivered += p.data.size();
  }
  void OnRelease(SegmentHandle h) override {
    Check(live.erase(h) == 1);  // released once, and only handles we gave
  }
  Seq32 next;
  uint64_t delivered = 0;
  std::map<SegmentHandle, std::vector<uint8_t>> live;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) return 0;
  const uint32_t isn = LoadBe32(data);
  ReasmConfig config;
  config.max_segments = 1 + (data[4] & 15);
  config.max_bytes = 256 * (1 + (data[4] >> 4));
  config.window = 64 * (uint32_t{data[5]} + 1);
  Sink sink(isn);
  std::vector<bool> got(kSpan, false);  // stream bytes the model holds or delivered
  int64_t model_nxt = 0;
  int64_t hi = 0;  // no model byte at or above hi is set
  SegmentHandle next_handle = 1;
  {
    Reassembler reasm(config, Seq32(isn), sink);
    for (size_t pos = 6; pos + 4 <= size; pos += 4) {
      const uint8_t op = data[pos];
      const uint32_t ab = (uint32_t{data[pos + 1]} << 8) | data[pos + 2];
      if ((op & 3) == 2) {
        reasm.SetWindow(4 * ab);
        continue;
      }
      if ((op & 3) == 3) {
        if (op & 4) {
          reasm.Clear();
          for (int64_t b = model_nxt; b < hi; ++b) got[b] = false;
        }
        continue;
      }
      const int64_t p = int64_t{ab & 0x3fff} - 1024;
      const uint32_t len = 8 * uint32_t{data[pos + 3]} + ((op >> 2) & 7);
      const bool fin = (op & 0x80) != 0;
      const SegmentHandle h = next_handle++;
      std::vector<uint8_t>& buf = sink.live[h];
      buf.resize(len);
      const uint32_t seq = isn + static_cast<uint32_t>(p);
      for (uint32_t i = 0; i < len; ++i) buf[i] = StreamByte(seq + i);

      const bool fin_done_before = reasm.fin_delivered();
      const uint32_t window = reasm.window();
      const InsertResult r = reasm.Insert(ReasmSegment{Seq32(seq), ByteSpan(buf), fin, h});

      // Reference model (RFC 9293 3.10.7.4, first copy wins).
      const int64_t before = model_nxt;
      int64_t limit = fin_done_before ? before : before + window;
      if (reasm.fin_received()) {
        limit = std::min(limit, int64_t{static_cast<uint32_t>(reasm.fin_seq() - Seq32(isn))});
      }
      const bool rejected = r.drop == ReasmDrop::kFinConflict || r.drop == ReasmDrop::kTooLong;
      const bool nothing_kept = rejected || r.drop == ReasmDrop::kSegmentCapacity ||
                                r.drop == ReasmDrop::kByteCapacity;
      const int64_t end = p + len;
      bool dsack = false;
      int64_t dl = 0;
      int64_t dr = 0;
      if (!rejected && len > 0) {
        if (end <= before) {
          dsack = true, dl = p, dr = end;
        } else if (p < before) {
          if (limit > before) dsack = true, dl = p, dr = before;
        } else {
          int64_t b = p;
          const int64_t stop = std::min(end, limit);
          while (b < stop && !got[b]) ++b;
          if (b < stop) {
            dsack = true, dl = b;
            while (b < stop && got[b]) ++b;
            dr = b;
          }
        }
      }
      if (!nothing_kept) {
        for (int64_t b = std::max(p, before); b < std::min(end, limit); ++b) got[b] = true;
        hi = std::max(hi, std::min(end, limit));
      }
      while (model_nxt < kSpan && got[model_nxt]) ++model_nxt;
      if (r.drop == ReasmDrop::kSegmentCapacity || r.drop == ReasmDrop::kByteCapacity) {
        Check(r.delivered == 0);
      }
      // A FIN at the model's rcv_nxt is consumed.
      const bool fin_now = reasm.fin_received() && !fin_done_before &&
                           static_cast<uint32_t>(reasm.fin_seq() - Seq32(isn)) == model_nxt;
      Check(r.fin_reached == fin_now);
      Check(reasm.fin_delivered() == (fin_done_before || fin_now));
      Check(reasm.rcv_nxt() == Seq32(isn + static_cast<uint32_t>(model_nxt) +
                                     (reasm.fin_delivered() ? 1u : 0u)));
      Check(sink.delivered == static_cast<uint64_t>(model_nxt));
      Check(reasm.held_segments() <= config.max_segments);
      Check(reasm.held_bytes() <= config.max_bytes);
      if (r.queued == 0) Check(sink.live.count(h) == 0);

      SackBlock blocks[kMaxSackBlocks];
      const size_t n = reasm.SackBlocks(blocks);
      size_t i = 0;
      if (dsack) {
        Check(n >= 1);
        Check(blocks[0] == (SackBlock{Seq32(isn + static_cast<uint32_t>(dl)),
                                      Seq32(isn + static_cast<uint32_t>(dr))}));
        i = 1;
      }
      size_t runs = 0;
      for (int64_t b = model_nxt + 1; b < hi; ++b) {
        if (got[b] && !got[b - 1]) ++runs;
      }
      Check(n - i == std::min(runs, kMaxSackBlocks - i));
      if (r.queued > 0 && i < n) {  // RFC 2018 4: the latest arrival's block first
        const int64_t l = static_cast<uint32_t>(blocks[i].left_edge - Seq32(isn));
        const int64_t rr = static_cast<uint32_t>(blocks[i].right_edge - Seq32(isn));
        Check(l < std::min(end, limit) && rr > std::max(p, before));
      }
      for (; i < n; ++i) {
        const int64_t l = static_cast<uint32_t>(blocks[i].left_edge - Seq32(isn));
        const int64_t rr = static_cast<uint32_t>(blocks[i].right_edge - Seq32(isn));
        Check(l > model_nxt && l < rr && rr <= kSpan);
        Check(!got[l - 1]);
        for (int64_t b = l; b < rr; ++b) Check(got[b]);
        Check(rr == kSpan || !got[rr]);
      }
    }
    Check(sink.live.size() <= reasm.held_segments());
  }
  Check(sink.live.empty());  // the destructor released the rest
  return 0;
}
