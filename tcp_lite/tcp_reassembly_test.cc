#include "tcp_lite/tcp_reassembly.h"

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace iwarp::tcp {
namespace {

// Content of the stream byte with sequence number `seq`.
uint8_t StreamByte(uint32_t seq) { return static_cast<uint8_t>((seq * 2654435761u) >> 24); }

std::vector<uint8_t> StreamBytes(uint32_t seq, uint32_t n) {
  std::vector<uint8_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = StreamByte(seq + i);
  return v;
}

struct Piece {
  uint32_t seq;
  SegmentHandle handle;
  uint32_t offset;
  uint32_t length;
  bool operator==(const Piece&) const = default;
};

// Owns the segment buffers, records what the reassembler hands back and
// checks that no piece of a handle arrives after the handle was released.
class Recorder : public ReasmSink {
 public:
  void OnDeliver(const ReasmPiece& p) override {
    auto it = buffers.find(p.handle);
    ASSERT_NE(it, buffers.end()) << "unknown handle " << p.handle;
    EXPECT_EQ(releases[p.handle], 0) << "piece of released handle " << p.handle;
    ASSERT_LE(p.offset + p.data.size(), it->second.size());
    EXPECT_EQ(p.data.data(), it->second.data() + p.offset) << "piece is not a reference";
    pieces.push_back(Piece{p.seq.value(), p.handle, p.offset, static_cast<uint32_t>(p.data.size())});
    bytes.insert(bytes.end(), p.data.begin(), p.data.end());
  }
  void OnRelease(SegmentHandle h) override { ++releases[h]; }

  ReasmSegment Make(uint32_t seq, uint32_t len, bool fin = false) {
    const SegmentHandle h = next_handle++;
    buffers[h] = StreamBytes(seq, len);
    return ReasmSegment{Seq32(seq), ByteSpan(buffers[h]), fin, h};
  }

  std::map<SegmentHandle, std::vector<uint8_t>> buffers;
  std::map<SegmentHandle, int> releases;
  std::vector<Piece> pieces;
  std::vector<uint8_t> bytes;
  SegmentHandle next_handle = 1;
};

class ReassemblyTest : public ::testing::Test {
 protected:
  void Init(uint32_t isn, ReasmConfig c = ReasmConfig{}) {
    isn_ = isn;
    reasm_.reset();
    reasm_ = std::make_unique<Reassembler>(c, Seq32(isn), rec_);
  }
  // Sends stream bytes [isn + from, isn + from + len).
  InsertResult Send(uint32_t from, uint32_t len, bool fin = false) {
    last_handle_ = rec_.next_handle;
    return reasm_->Insert(rec_.Make(isn_ + from, len, fin));
  }
  std::vector<SackBlock> Sack() {
    SackBlock b[kMaxSackBlocks];
    return std::vector<SackBlock>(b, b + reasm_->SackBlocks(b));
  }
  SackBlock Blk(uint32_t from, uint32_t to) { return SackBlock{Seq32(isn_ + from), Seq32(isn_ + to)}; }
  Piece P(uint32_t from, SegmentHandle h, uint32_t off, uint32_t len) {
    return Piece{isn_ + from, h, off, len};
  }
  void ExpectAllReleasedOnce() {
    for (SegmentHandle h = 1; h < rec_.next_handle; ++h) {
      EXPECT_EQ(rec_.releases[h], 1) << "handle " << h;
    }
  }

  Recorder rec_;
  std::unique_ptr<Reassembler> reasm_;
  uint32_t isn_ = 0;
  SegmentHandle last_handle_ = 0;
};

TEST_F(ReassemblyTest, InOrderSegmentIsDeliveredAndReleased) {
  Init(1000);
  const InsertResult r = Send(0, 100);
  EXPECT_EQ(r.drop, ReasmDrop::kNone);
  EXPECT_EQ(r.delivered, 100u);
  EXPECT_EQ(reasm_->rcv_nxt(), Seq32(1100));
  EXPECT_EQ(rec_.pieces, (std::vector<Piece>{P(0, 1, 0, 100)}));
  EXPECT_EQ(rec_.bytes, StreamBytes(1000, 100));
  EXPECT_EQ(rec_.releases[1], 1);
  EXPECT_TRUE(Sack().empty());
}

TEST_F(ReassemblyTest, ReverseOrderDeliversOnceTheHoleIsFilled) {
  Init(5000);
  InsertResult r = Send(200, 100);
  EXPECT_EQ(r.queued, 100u);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(200, 300)}));
  r = Send(100, 100);
  EXPECT_EQ(r.delivered, 0u);
  EXPECT_EQ(reasm_->held_segments(), 2u);
  EXPECT_EQ(reasm_->held_bytes(), 200u);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(100, 300)}));  // merged
  EXPECT_EQ(rec_.releases.size(), 0u);
  r = Send(0, 100);
  EXPECT_EQ(r.delivered, 300u);
  EXPECT_EQ(rec_.pieces, (std::vector<Piece>{P(0, 3, 0, 100), P(100, 2, 0, 100), P(200, 1, 0, 100)}));
  EXPECT_EQ(rec_.bytes, StreamBytes(5000, 300));
  EXPECT_EQ(reasm_->held_segments(), 0u);
  EXPECT_EQ(reasm_->held_bytes(), 0u);
  EXPECT_TRUE(Sack().empty());
  ExpectAllReleasedOnce();
  EXPECT_EQ(reasm_->stats().queued_segments, 2u);
}

TEST_F(ReassemblyTest, OverlapAtBothEndsKeepsFirstCopyAndTrimsExactly) {
  Init(0);
  Send(100, 100);  // h1
  Send(300, 100);  // h2
  InsertResult r = Send(50, 400);  // h3 covers both, kept as three pieces
  EXPECT_EQ(r.drop, ReasmDrop::kNone);
  EXPECT_EQ(r.queued, 200u);
  EXPECT_EQ(reasm_->held_segments(), 5u);
  EXPECT_EQ(reasm_->held_bytes(), 400u);
  EXPECT_EQ(reasm_->stats().trimmed_bytes, 200u);
  // D-SACK for the first overlap, then the block holding h3.
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(100, 200), Blk(50, 450)}));
  r = Send(0, 60);  // h4: 10 bytes overlap h3's first piece
  EXPECT_EQ(r.delivered, 450u);
  EXPECT_EQ(rec_.pieces, (std::vector<Piece>{P(0, 4, 0, 50), P(50, 3, 0, 50), P(100, 1, 0, 100),
                                             P(200, 3, 150, 100), P(300, 2, 0, 100),
                                             P(400, 3, 350, 50)}));
  EXPECT_EQ(rec_.bytes, StreamBytes(0, 450));
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(50, 60)}));  // D-SACK only
  ExpectAllReleasedOnce();
}

TEST_F(ReassemblyTest, SegmentStraddlingRcvNxtDeliversOnlyNewBytes) {
  Init(7);
  Send(0, 100);
  const InsertResult r = Send(50, 100);
  EXPECT_EQ(r.drop, ReasmDrop::kNone);
  EXPECT_EQ(r.delivered, 50u);
  EXPECT_EQ(rec_.pieces.back(), P(100, 2, 50, 50));
  EXPECT_EQ(rec_.bytes, StreamBytes(7, 150));
  EXPECT_EQ(reasm_->stats().trimmed_bytes, 50u);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(50, 100)}));  // RFC 2883 partial duplicate
  ExpectAllReleasedOnce();
}

TEST_F(ReassemblyTest, FullDuplicatesAreDroppedAndDsacked) {
  Init(0);
  Send(0, 100);
  Send(200, 100);
  Send(400, 100);
  InsertResult r = Send(0, 100);  // below rcv_nxt
  EXPECT_EQ(r.drop, ReasmDrop::kDuplicate);
  EXPECT_EQ(rec_.releases[last_handle_], 1);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(0, 100), Blk(400, 500), Blk(200, 300)}));
  r = Send(220, 30);  // inside held data
  EXPECT_EQ(r.drop, ReasmDrop::kDuplicate);
  EXPECT_EQ(rec_.releases[last_handle_], 1);
  // RFC 2883 4: D-SACK, then the block containing it, then the others.
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(220, 250), Blk(200, 300), Blk(400, 500)}));
  EXPECT_EQ(reasm_->stats().duplicate_segments, 2u);
  EXPECT_EQ(reasm_->stats().duplicate_bytes, 130u);
  EXPECT_EQ(reasm_->stats().drops[static_cast<size_t>(ReasmDrop::kDuplicate)], 2u);
  EXPECT_EQ(reasm_->held_bytes(), 200u);
  // The D-SACK is reported for one ACK only.
  Send(600, 10);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(600, 610), Blk(200, 300), Blk(400, 500)}));
}

TEST_F(ReassemblyTest, DsackSpansAdjacentHeldPieces) {
  Init(0);
  Send(100, 50);
  Send(150, 50);
  Send(300, 50);
  const InsertResult r = Send(120, 200);  // duplicates [120, 200) and [300, 320)
  EXPECT_EQ(r.queued, 100u);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(120, 200), Blk(100, 350)}));
}

TEST_F(ReassemblyTest, ZeroLengthSegmentChangesNothing) {
  Init(0);
  Send(100, 50);
  const InsertResult r = Send(0, 0);
  EXPECT_EQ(r.drop, ReasmDrop::kNone);
  EXPECT_EQ(r.delivered, 0u);
  EXPECT_EQ(reasm_->rcv_nxt(), Seq32(0));
  EXPECT_EQ(rec_.releases[last_handle_], 1);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(100, 150)}));
}

TEST_F(ReassemblyTest, FinBeforeMissingDataIsReportedOnceAfterTheData) {
  Init(0xFFFFFFF0u);
  InsertResult r = Send(100, 100, /*fin=*/true);
  EXPECT_FALSE(r.fin_reached);
  EXPECT_TRUE(reasm_->fin_received());
  EXPECT_EQ(reasm_->fin_seq(), Seq32(isn_ + 200));
  r = Send(150, 100);  // data past the FIN is cut
  EXPECT_EQ(r.drop, ReasmDrop::kDuplicate);
  r = Send(200, 10);
  EXPECT_EQ(r.drop, ReasmDrop::kBeyondFin);
  r = Send(50, 10, /*fin=*/true);  // a second, different FIN
  EXPECT_EQ(r.drop, ReasmDrop::kFinConflict);
  EXPECT_EQ(rec_.releases[last_handle_], 1);
  r = Send(0, 100);
  EXPECT_EQ(r.delivered, 200u);
  EXPECT_TRUE(r.fin_reached);
  EXPECT_TRUE(reasm_->fin_delivered());
  EXPECT_EQ(reasm_->rcv_nxt(), Seq32(isn_ + 201));  // RCV.NXT covers the FIN
  EXPECT_EQ(rec_.bytes, StreamBytes(isn_, 200));
  r = Send(100, 100, /*fin=*/true);  // retransmitted FIN
  EXPECT_FALSE(r.fin_reached);
  EXPECT_EQ(r.drop, ReasmDrop::kDuplicate);
  ExpectAllReleasedOnce();
}

// Regression (fuzz input tcp_reassembly/fin_slot_not_data): once the FIN is
// consumed, RCV.NXT is one past it. A segment whose data reaches the FIN's
// sequence number is data beyond the FIN, not a duplicate: RFC 2883 4 reports
// only data that was received, and the FIN's slot never held data.
TEST_F(ReassemblyTest, DataOverTheConsumedFinSlotIsBeyondFinWithoutDsack) {
  Init(0x20EF);
  InsertResult r = Send(0, 59, /*fin=*/true);
  EXPECT_TRUE(r.fin_reached);
  r = Send(0, 60);  // bytes 0..58 were received, byte 59 is the FIN's slot
  EXPECT_EQ(r.drop, ReasmDrop::kBeyondFin);
  EXPECT_TRUE(Sack().empty());
  r = Send(59, 1);  // exactly the FIN's slot
  EXPECT_EQ(r.drop, ReasmDrop::kBeyondFin);
  EXPECT_TRUE(Sack().empty());
  r = Send(10, 49);  // a true duplicate still gets its D-SACK
  EXPECT_EQ(r.drop, ReasmDrop::kDuplicate);
  EXPECT_EQ(Sack(), std::vector<SackBlock>{Blk(10, 59)});
  EXPECT_EQ(reasm_->rcv_nxt(), Seq32(isn_ + 60));
  EXPECT_EQ(rec_.bytes, StreamBytes(isn_, 59));
  ExpectAllReleasedOnce();
}

TEST_F(ReassemblyTest, FinBeforeHeldDataIsAConflict) {
  Init(0);
  Send(100, 100);
  const InsertResult r = Send(0, 50, /*fin=*/true);
  EXPECT_EQ(r.drop, ReasmDrop::kFinConflict);
  EXPECT_FALSE(reasm_->fin_received());
  EXPECT_EQ(reasm_->rcv_nxt(), Seq32(0));
}

TEST_F(ReassemblyTest, ZeroLengthFinAtRcvNxt) {
  Init(300);
  Send(0, 10);
  const InsertResult r = Send(10, 0, /*fin=*/true);
  EXPECT_TRUE(r.fin_reached);
  EXPECT_EQ(reasm_->rcv_nxt(), Seq32(311));
}

TEST_F(ReassemblyTest, AcrossTheSequenceWrap) {
  Init(0xFFFFFF00u);
  Send(384, 128);  // [0x80, 0x100) after the wrap
  Send(128, 256);  // [0xFFFFFF80, 0x80) crosses it
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{SackBlock{Seq32(0xFFFFFF80u), Seq32(0x100)}}));
  EXPECT_EQ(reasm_->held_bytes(), 384u);
  const InsertResult r = Send(0, 200);  // overlaps the held data by 72
  EXPECT_EQ(r.delivered, 512u);
  EXPECT_EQ(reasm_->rcv_nxt(), Seq32(0x100));
  EXPECT_EQ(rec_.pieces, (std::vector<Piece>{P(0, 3, 0, 128), P(128, 2, 0, 256), P(384, 1, 0, 128)}));
  EXPECT_EQ(rec_.bytes, StreamBytes(0xFFFFFF00u, 512));
  ExpectAllReleasedOnce();
}

TEST_F(ReassemblyTest, DataOutsideTheWindowIsRejected) {
  ReasmConfig c;
  c.window = 1000;
  Init(0x7FFFFFF0u, c);
  InsertResult r = Send(1000, 10);
  EXPECT_EQ(r.drop, ReasmDrop::kOutOfWindow);
  r = Send(0x80000000u, 10);  // half the sequence space away
  EXPECT_EQ(r.drop, ReasmDrop::kDuplicate);
  r = Send(900, 200);  // right edge trims 100
  EXPECT_EQ(r.drop, ReasmDrop::kNone);
  EXPECT_EQ(r.queued, 100u);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(900, 1000)}));
  reasm_->SetWindow(0);
  r = Send(0, 10);
  EXPECT_EQ(r.drop, ReasmDrop::kOutOfWindow);
  EXPECT_EQ(reasm_->held_bytes(), 100u);  // kept after the window shrank
  reasm_->SetWindow(1000);
  r = Send(0, 900);
  EXPECT_EQ(r.delivered, 1000u);
  EXPECT_EQ(rec_.bytes, StreamBytes(isn_, 1000));
  EXPECT_EQ(reasm_->stats().drops[static_cast<size_t>(ReasmDrop::kOutOfWindow)], 2u);
  ExpectAllReleasedOnce();
}

TEST_F(ReassemblyTest, SegmentCapacityDropsAndKeepsWorking) {
  ReasmConfig c;
  c.max_segments = 2;
  Init(0, c);
  Send(100, 10);
  Send(200, 10);
  InsertResult r = Send(300, 10);
  EXPECT_EQ(r.drop, ReasmDrop::kSegmentCapacity);
  EXPECT_EQ(rec_.releases[last_handle_], 1);
  EXPECT_EQ(reasm_->held_segments(), 2u);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(200, 210), Blk(100, 110)}));
  // Data at rcv_nxt is taken while full; data that needs an entry is not.
  r = Send(0, 50);
  EXPECT_EQ(r.drop, ReasmDrop::kNone);
  EXPECT_EQ(r.delivered, 50u);
  r = Send(60, 10);
  EXPECT_EQ(r.drop, ReasmDrop::kSegmentCapacity);
  r = Send(50, 200);  // fills both holes and more
  EXPECT_EQ(r.delivered, 200u);
  EXPECT_EQ(reasm_->held_segments(), 0u);
  EXPECT_EQ(Send(300, 10).queued, 10u);
  EXPECT_EQ(Send(400, 10).queued, 10u);
  EXPECT_EQ(Send(500, 10).drop, ReasmDrop::kSegmentCapacity);
  EXPECT_EQ(rec_.bytes, StreamBytes(0, 250));
  EXPECT_EQ(reasm_->stats().drops[static_cast<size_t>(ReasmDrop::kSegmentCapacity)], 3u);
  reasm_.reset();
  ExpectAllReleasedOnce();
}

TEST_F(ReassemblyTest, ByteCapacityDropsAndKeepsWorking) {
  ReasmConfig c;
  c.max_bytes = 150;
  Init(0, c);
  EXPECT_EQ(Send(100, 100).queued, 100u);
  InsertResult r = Send(300, 100);
  EXPECT_EQ(r.drop, ReasmDrop::kByteCapacity);
  EXPECT_EQ(rec_.releases[last_handle_], 1);
  EXPECT_EQ(reasm_->held_bytes(), 100u);
  r = Send(0, 100);
  EXPECT_EQ(r.delivered, 200u);
  EXPECT_EQ(Send(300, 100).queued, 100u);
  EXPECT_EQ(reasm_->stats().drops[static_cast<size_t>(ReasmDrop::kByteCapacity)], 1u);
  EXPECT_EQ(rec_.bytes, StreamBytes(0, 200));
}

TEST_F(ReassemblyTest, SackBlocksFollowRfc2018Order) {
  Init(1u << 31);
  Send(100, 100);  // A
  Send(300, 100);  // B
  Send(500, 100);  // C
  Send(700, 100);  // D
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(700, 800), Blk(500, 600), Blk(300, 400), Blk(100, 200)}));
  Send(900, 100);  // E
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(900, 1000), Blk(700, 800), Blk(500, 600), Blk(300, 400)}));
  Send(400, 50);  // extends B
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(300, 450), Blk(900, 1000), Blk(700, 800), Blk(500, 600)}));
  Send(0, 100);  // fills up to A's end
  EXPECT_EQ(reasm_->rcv_nxt(), Seq32(isn_ + 200));
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(300, 450), Blk(900, 1000), Blk(700, 800), Blk(500, 600)}));
  Send(600, 100);  // joins C and D
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(500, 800), Blk(300, 450), Blk(900, 1000)}));
}

TEST_F(ReassemblyTest, SackBlockLimitAndThreeBlockConfig) {
  ReasmConfig c;
  c.sack_blocks = 3;
  Init(0, c);
  for (uint32_t i = 1; i <= 5; ++i) Send(i * 100, 10);
  EXPECT_EQ(Sack(), (std::vector<SackBlock>{Blk(500, 510), Blk(400, 410), Blk(300, 310)}));
  SackBlock one[1];
  EXPECT_EQ(reasm_->SackBlocks(one), 1u);
  EXPECT_EQ(one[0], Blk(500, 510));
}

TEST_F(ReassemblyTest, ClearAndDestructorReleaseEveryHeldHandle) {
  Init(0);
  Send(100, 100);
  Send(50, 200);  // split around the first: one release for two entries
  Send(400, 10);
  EXPECT_EQ(reasm_->held_segments(), 4u);
  reasm_->Clear();
  EXPECT_EQ(reasm_->held_segments(), 0u);
  ExpectAllReleasedOnce();
  Send(100, 10);
  reasm_.reset();
  ExpectAllReleasedOnce();
}

// Reference check: a stream cut at random, sent with loss, duplication and
// reordering, retransmitted with new cuts until complete. The delivered
// stream must equal the original and every handle is released exactly once;
// with ample capacity rcv_nxt and the SACK blocks are checked against a byte
// map after every arrival.
void RunRandom(uint32_t seed, bool ample) {
  std::mt19937 rng(seed);
  const uint32_t isn = seed % 2 == 0 ? 0xFFFF0000u + seed : seed * 7919u;
  const uint32_t total = 20000;
  ReasmConfig c;
  c.window = 8000;
  c.max_segments = ample ? 4096 : 6;
  c.max_bytes = ample ? (1 << 20) : 3000;
  Recorder rec;
  std::vector<bool> got(total, false);  // reference byte map (ample only)
  {
    Reassembler reasm(c, Seq32(isn), rec);
    auto rand = [&](uint32_t lo, uint32_t hi) {
      return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
    };
    int rounds = 0;
    while (!reasm.fin_delivered() && rounds < 1000) {
      ++rounds;
      // Cut [rcv_nxt, rcv_nxt + 1.5 windows) afresh.
      const uint32_t from = static_cast<uint32_t>(reasm.rcv_nxt() - Seq32(isn));
      const uint32_t to = std::min(total, from + 12000);
      std::vector<std::pair<uint32_t, uint32_t>> segs;
      for (uint32_t p = from; p < to;) {
        const uint32_t len = std::min(to - p, rand(1, 1500));
        if (rand(0, 9) != 0) segs.emplace_back(p, len);        // 10% loss
        if (rand(0, 9) == 0) segs.emplace_back(p, len);        // 10% duplicated
        p += len;
      }
      for (size_t i = 0; i < segs.size(); ++i) {               // local reordering
        const size_t j = std::min(segs.size() - 1, i + rand(0, 4));
        std::swap(segs[i], segs[j]);
      }
      for (const auto& [p, len] : segs) {
        const bool fin = p + len == total;
        const SegmentHandle h = rec.next_handle;
        const InsertResult r = reasm.Insert(rec.Make(isn + p, len, fin));
        if (r.queued == 0) {
          ASSERT_EQ(rec.releases[h], 1);
        }
        if (!ample) continue;
        ASSERT_NE(r.drop, ReasmDrop::kSegmentCapacity);
        ASSERT_NE(r.drop, ReasmDrop::kByteCapacity);
        // Model: the bytes inside the window at arrival time are taken; the
        // D-SACK is the first run of them that was already there (RFC 2883).
        const uint32_t before = static_cast<uint32_t>(std::find(got.begin(), got.end(), false) - got.begin());
        const uint32_t wnd_end = before + c.window;
        bool dsack = false;
        uint32_t dl = 0;
        uint32_t dr = 0;
        if (p + len <= before) {
          dsack = true, dl = p, dr = p + len;
        } else if (p < before) {
          dsack = true, dl = p, dr = before;
        } else {
          uint32_t b = p;
          while (b < p + len && b < wnd_end && !got[b]) ++b;
          if (b < p + len && b < wnd_end) {
            dsack = true, dl = b;
            while (b < p + len && b < wnd_end && got[b]) ++b;
            dr = b;
          }
        }
        for (uint32_t b = std::max(p, before); b < p + len && b < wnd_end; ++b) got[b] = true;
        const uint32_t model_nxt = static_cast<uint32_t>(std::find(got.begin(), got.end(), false) - got.begin());
        const uint32_t nxt = static_cast<uint32_t>(reasm.rcv_nxt() - Seq32(isn)) - (reasm.fin_delivered() ? 1 : 0);
        ASSERT_EQ(nxt, model_nxt);
        // Every other block is a maximal run of the byte map above rcv_nxt.
        SackBlock blocks[kMaxSackBlocks];
        const size_t n = reasm.SackBlocks(blocks);
        size_t runs = 0;
        for (uint32_t b = model_nxt; b < total; ++b) {
          if (got[b] && !got[b - 1]) ++runs;
        }
        size_t i = 0;
        if (dsack) {
          ASSERT_GE(n, 1u);
          ASSERT_EQ(blocks[0], (SackBlock{Seq32(isn + dl), Seq32(isn + dr)}));
          i = 1;
        }
        ASSERT_EQ(n - i, std::min(runs, kMaxSackBlocks - i));
        if (r.queued > 0) {  // RFC 2018 4: the block of the latest segment first
          ASSERT_LT(blocks[i].left_edge, Seq32(isn + std::min(p + len, wnd_end)));
          ASSERT_GT(blocks[i].right_edge, Seq32(isn + std::max(p, before)));
        }
        for (; i < n; ++i) {
          const uint32_t l = static_cast<uint32_t>(blocks[i].left_edge - Seq32(isn));
          const uint32_t rr = static_cast<uint32_t>(blocks[i].right_edge - Seq32(isn));
          ASSERT_GT(l, model_nxt);
          ASSERT_LT(l, rr);
          ASSERT_LE(rr, total);
          ASSERT_FALSE(got[l - 1]);
          for (uint32_t b = l; b < rr; ++b) {
            ASSERT_TRUE(got[b]);
          }
          ASSERT_TRUE(rr == total || !got[rr]);
        }
      }
    }
    ASSERT_TRUE(reasm.fin_delivered()) << "seed " << seed;
    EXPECT_EQ(reasm.rcv_nxt(), Seq32(isn + total + 1));
    EXPECT_EQ(reasm.held_segments(), 0u);
  }
  EXPECT_EQ(rec.bytes, StreamBytes(isn, total)) << "seed " << seed;
  for (SegmentHandle h = 1; h < rec.next_handle; ++h) {
    ASSERT_EQ(rec.releases[h], 1) << "handle " << h;
  }
}

TEST(ReassemblyRandom, MatchesReferenceWithAmpleCapacity) {
  for (uint32_t seed = 1; seed <= 20; ++seed) RunRandom(seed, /*ample=*/true);
}

TEST(ReassemblyRandom, CompletesUnderCapacityPressure) {
  for (uint32_t seed = 100; seed <= 120; ++seed) RunRandom(seed, /*ample=*/false);
}

TEST(ReassemblyDropNames, AreDistinct) {
  for (size_t i = 0; i < kNumReasmDrops; ++i) {
    for (size_t j = i + 1; j < kNumReasmDrops; ++j) {
      EXPECT_NE(ReasmDropName(static_cast<ReasmDrop>(i)), ReasmDropName(static_cast<ReasmDrop>(j)));
    }
  }
}

}  // namespace
}  // namespace iwarp::tcp
