#include "tcp_lite/tcp_reassembly.h"

#include <algorithm>

namespace iwarp::tcp {

std::string_view ReasmDropName(ReasmDrop d) {
  using Enum = ReasmDrop;
  switch (d) { IWARP_TCP_REASM_DROPS(IWARP_ENUM_NAME_CASE) case Enum::kCount: break; }
  return "invalid";
}

Reassembler::Reassembler(const ReasmConfig& config, Seq32 rcv_nxt, ReasmSink& sink)
    : max_segments_(config.max_segments),
      max_bytes_(config.max_bytes),
      sack_blocks_(std::clamp<size_t>(config.sack_blocks, 1, kMaxSackBlocks)),
      sink_(sink),
      entries_(new Entry[config.max_segments + 1]),
      gaps_(new Gap[config.max_segments + 1]),
      rcv_nxt_(rcv_nxt),
      window_(std::min(config.window, kMaxReceiveWindow)) {}

Reassembler::~Reassembler() { Clear(); }

void Reassembler::SetWindow(uint32_t window) { window_ = std::min(window, kMaxReceiveWindow); }

void Reassembler::Clear() {
  const size_t n = held_count_;
  held_count_ = 0;
  held_bytes_ = 0;
  history_count_ = 0;
  dsack_valid_ = false;
  for (size_t i = 0; i < n; ++i) {
    if (entries_[i].release) sink_.OnRelease(entries_[i].handle);
  }
}

void Reassembler::Reset(Seq32 rcv_nxt, uint32_t window) {
  Clear();
  rcv_nxt_ = rcv_nxt;
  window_ = std::min(window, kMaxReceiveWindow);
  fin_seq_ = Seq32();
  fin_known_ = false;
  fin_delivered_ = false;
  stats_ = ReasmStats();
}

void Reassembler::Drop(ReasmDrop reason, InsertResult* result) {
  result->drop = reason;
  ++stats_.drops[static_cast<size_t>(reason)];
}

void Reassembler::RecordDsack(Seq32 left, Seq32 right) {
  dsack_valid_ = true;
  dsack_ = SackBlock{left, right};
  ++stats_.dsack_blocks;
}

size_t Reassembler::FirstEntryEndingAfter(uint32_t rel) const {
  const Entry* begin = entries_.get();
  const Entry* it = std::partition_point(begin, begin + held_count_, [&](const Entry& e) {
    return Rel(e.seq) + e.length <= rel;
  });
  return static_cast<size_t>(it - begin);
}

bool Reassembler::BlockOf(Seq32 point, size_t* first, size_t* last) const {
  if (point < rcv_nxt_) return false;
  const uint32_t p = Rel(point);
  size_t i = FirstEntryEndingAfter(p);
  if (i == held_count_ || Rel(entries_[i].seq) > p) return false;
  size_t f = i;
  while (f > 0 && entries_[f - 1].seq + entries_[f - 1].length == entries_[f].seq) --f;
  size_t l = i + 1;
  while (l < held_count_ && entries_[l - 1].seq + entries_[l - 1].length == entries_[l].seq) ++l;
  *first = f;
  *last = l;
  return true;
}

// RFC 2018 4: remembers the block of the latest arrival as the most recent
// one; older points in the same block are dropped so that the history names
// distinct blocks.
void Reassembler::NoteArrival(Seq32 point) {
  size_t f = 0;
  size_t l = 0;
  if (!BlockOf(point, &f, &l)) return;
  const Seq32 lo = entries_[f].seq;
  const Seq32 hi = entries_[l - 1].seq + entries_[l - 1].length;
  size_t kept = 0;
  Seq32 keep[kSackHistory];
  for (size_t i = 0; i < history_count_ && kept + 1 < kSackHistory; ++i) {
    const Seq32 h = history_[i];
    if (h < rcv_nxt_ || (lo <= h && h < hi)) continue;
    keep[kept++] = h;
  }
  history_[0] = point;
  std::copy(keep, keep + kept, history_ + 1);
  history_count_ = kept + 1;
}

// RFC 9293 3.10.7.4, eighth step: the FIN occupies the sequence number after
// the segment's data. One FIN position per connection; a FIN before data
// already received, or moving a known FIN, is a protocol violation.
bool Reassembler::CheckFin(Seq32 fin_pos, InsertResult* result) {
  if (fin_known_) {
    if (fin_pos == fin_seq_) return true;
    Drop(ReasmDrop::kFinConflict, result);
    return false;
  }
  if (fin_pos < rcv_nxt_) {
    Drop(ReasmDrop::kFinConflict, result);
    return false;
  }
  const uint32_t f = Rel(fin_pos);
  // Beyond the window the FIN is trimmed off with the data behind the right
  // edge (RFC 9293 3.10.7.4); a FIN exactly at the right edge takes no buffer
  // space and is accepted.
  if (f > window_) return true;
  if (held_count_ > 0) {
    const Entry& last = entries_[held_count_ - 1];
    if (f < Rel(last.seq) + last.length) {
      Drop(ReasmDrop::kFinConflict, result);
      return false;
    }
  }
  fin_known_ = true;
  fin_seq_ = fin_pos;
  return true;
}

uint32_t Reassembler::DeliverContiguous(const ReasmSegment& seg, uint32_t seg_base_rel,
                                        size_t gaps, size_t* next_gap) {
  // Positions are relative to rcv_nxt at entry; rcv_nxt_ moves at the end.
  const Seq32 origin = rcv_nxt_;
  uint32_t done = 0;
  size_t g = 0;
  size_t popped = 0;
  for (;;) {
    if (g < gaps && gaps_[g].rel == done) {
      const uint32_t offset = gaps_[g].rel - seg_base_rel;
      sink_.OnDeliver(ReasmPiece{origin + done, seg.payload.subspan(offset, gaps_[g].length),
                                 seg.handle, offset});
      ++stats_.delivered_pieces;
      done += gaps_[g].length;
      ++g;
      continue;
    }
    if (popped < held_count_ && entries_[popped].seq == origin + done) {
      const Entry& e = entries_[popped];
      sink_.OnDeliver(ReasmPiece{e.seq, ByteSpan(e.payload + e.offset, e.length), e.handle,
                                 e.offset});
      ++stats_.delivered_pieces;
      if (e.release) sink_.OnRelease(e.handle);
      done += e.length;
      held_bytes_ -= e.length;
      ++popped;
      continue;
    }
    break;
  }
  if (popped > 0) {
    std::copy(entries_.get() + popped, entries_.get() + held_count_, entries_.get());
    held_count_ -= popped;
  }
  rcv_nxt_ = origin + done;
  stats_.delivered_bytes += done;
  *next_gap = g;
  return done;
}

// Merges gaps [first, last) (relative to `origin`, sorted, disjoint from the
// held entries) into the sorted entry array, from the back.
void Reassembler::StoreGaps(const ReasmSegment& seg, uint32_t seg_base_rel, size_t first,
                            size_t last) {
  const Seq32 origin = rcv_nxt_;
  size_t i = held_count_;
  size_t k = held_count_ + (last - first);
  size_t j = last;
  while (j > first) {
    const Gap& gap = gaps_[j - 1];
    if (i > 0 && Rel(entries_[i - 1].seq) > gap.rel) {
      entries_[--k] = entries_[--i];
      continue;
    }
    const uint32_t offset = gap.rel - seg_base_rel;
    entries_[--k] = Entry{origin + gap.rel, gap.length, offset, seg.payload.data(), seg.handle,
                          j == last};
    held_bytes_ += gap.length;
    --j;
  }
  held_count_ += last - first;
}

void Reassembler::FinishInsert(InsertResult* result) {
  if (fin_known_ && !fin_delivered_ && rcv_nxt_ == fin_seq_) {
    // RFC 9293 3.10.7.4 eighth step: RCV.NXT advances over the FIN. No data
    // lies beyond it (CheckFin and the data window guarantee it).
    rcv_nxt_ += 1;
    fin_delivered_ = true;
    result->fin_reached = true;
  }
  size_t kept = 0;
  for (size_t i = 0; i < history_count_; ++i) {
    if (!(history_[i] < rcv_nxt_)) history_[kept++] = history_[i];
  }
  history_count_ = kept;
}

InsertResult Reassembler::Insert(const ReasmSegment& seg) {
  InsertResult result;
  ++stats_.segments;
  dsack_valid_ = false;
  if (seg.payload.size() > kMaxSegmentPayload) {
    Drop(ReasmDrop::kTooLong, &result);
    sink_.OnRelease(seg.handle);
    return result;
  }
  const uint32_t len = static_cast<uint32_t>(seg.payload.size());
  if (seg.fin && !CheckFin(seg.seq + len, &result)) {
    sink_.OnRelease(seg.handle);
    return result;
  }
  if (len == 0) {
    FinishInsert(&result);
    sink_.OnRelease(seg.handle);
    return result;
  }

  // Data may occupy [0, data_wnd) relative to rcv_nxt: the window, cut at a
  // known FIN.
  uint32_t data_wnd = window_;
  bool fin_bound = false;
  if (fin_delivered_) {
    data_wnd = 0;
    fin_bound = true;
  } else if (fin_known_ && Rel(fin_seq_) <= data_wnd) {
    data_wnd = Rel(fin_seq_);
    fin_bound = true;
  }

  // RFC 9293 3.10.7.4: trim to [rcv_nxt, rcv_nxt + window). base is the
  // segment's first byte relative to rcv_nxt, modulo 2^32.
  const uint32_t base = Rel(seg.seq);
  uint32_t s = base;
  uint32_t e = 0;
  bool dup_recorded = false;
  if (seg.seq < rcv_nxt_) {
    const uint32_t behind = 0u - base;
    // Once the FIN is consumed, rcv_nxt is one past it: the FIN's sequence
    // number carries no data, so a segment reaching it is not a duplicate
    // (RFC 2883 4 reports received data only) but data beyond the FIN.
    const uint32_t fin_slot = fin_delivered_ ? 1u : 0u;
    if (fin_delivered_ && behind - fin_slot < len) {
      Drop(ReasmDrop::kBeyondFin, &result);
      FinishInsert(&result);
      sink_.OnRelease(seg.handle);
      return result;
    }
    if (behind >= len) {
      // Entirely received before: RFC 2883 4 reports it as a D-SACK.
      RecordDsack(seg.seq, seg.seq + len);
      Drop(ReasmDrop::kDuplicate, &result);
      ++stats_.duplicate_segments;
      stats_.duplicate_bytes += len;
      FinishInsert(&result);
      sink_.OnRelease(seg.handle);
      return result;
    }
    s = 0;
    e = len - behind;
    if (data_wnd > 0) {
      RecordDsack(seg.seq, rcv_nxt_);
      dup_recorded = true;
    }
  } else {
    e = base < data_wnd ? base + len : 0;
  }
  e = std::min(e, data_wnd);
  if (s >= e) {
    Drop(fin_bound ? ReasmDrop::kBeyondFin : ReasmDrop::kOutOfWindow, &result);
    FinishInsert(&result);
    sink_.OnRelease(seg.handle);
    return result;
  }

  // First copy wins: cut [s, e) into the gaps between held entries. Each held
  // entry met adds at most one gap, so max_segments + 1 gaps suffice.
  size_t ngaps = 0;
  uint32_t cur = s;
  bool dup_open = false;
  for (size_t i = FirstEntryEndingAfter(s); i < held_count_ && cur < e; ++i) {
    const uint32_t es = Rel(entries_[i].seq);
    if (es >= e) break;
    const uint32_t ee = es + entries_[i].length;
    if (cur < es) {
      gaps_[ngaps++] = Gap{cur, es - cur};
      dup_open = false;
    }
    // RFC 2883 4: the D-SACK names the first contiguous duplicate range,
    // which may span several adjacent held pieces.
    if (!dup_recorded) {
      RecordDsack(rcv_nxt_ + std::max(cur, es), rcv_nxt_ + std::min(ee, e));
      dup_recorded = true;
      dup_open = true;
    } else if (dup_open) {
      dsack_.right_edge = rcv_nxt_ + std::min(ee, e);
    }
    cur = std::max(cur, ee);
  }
  if (cur < e) gaps_[ngaps++] = Gap{cur, e - cur};
  uint32_t new_bytes = 0;
  for (size_t i = 0; i < ngaps; ++i) new_bytes += gaps_[i].length;

  if (ngaps == 0) {
    // Every in-window byte is held already: RFC 2883 4, the D-SACK is followed
    // by the block holding it.
    Drop(ReasmDrop::kDuplicate, &result);
    ++stats_.duplicate_segments;
    stats_.duplicate_bytes += len;
    NoteArrival(dsack_.left_edge);
    FinishInsert(&result);
    sink_.OnRelease(seg.handle);
    return result;
  }
  stats_.trimmed_bytes += len - new_bytes;

  size_t next_gap = 0;
  const Seq32 origin = rcv_nxt_;
  result.delivered = DeliverContiguous(seg, base, ngaps, &next_gap);

  bool kept = false;
  if (next_gap < ngaps) {
    // Gaps were relative to the old rcv_nxt; rebase them.
    const uint32_t shift = static_cast<uint32_t>(rcv_nxt_ - origin);
    uint32_t bytes = 0;
    for (size_t i = next_gap; i < ngaps; ++i) {
      gaps_[i].rel -= shift;
      bytes += gaps_[i].length;
    }
    const size_t need = ngaps - next_gap;
    if (need > max_segments_ - held_count_) {
      Drop(ReasmDrop::kSegmentCapacity, &result);
    } else if (bytes > max_bytes_ - held_bytes_) {
      Drop(ReasmDrop::kByteCapacity, &result);
    } else {
      StoreGaps(seg, base - shift, next_gap, ngaps);
      result.queued = bytes;
      ++stats_.queued_segments;
      stats_.queued_bytes += bytes;
      NoteArrival(rcv_nxt_ + gaps_[next_gap].rel);
      kept = true;
    }
  }
  FinishInsert(&result);
  if (!kept) sink_.OnRelease(seg.handle);
  return result;
}

size_t Reassembler::SackBlocks(std::span<SackBlock> out) const {
  const size_t n = std::min(out.size(), sack_blocks_);
  size_t k = 0;
  if (n == 0) return 0;
  if (dsack_valid_) out[k++] = dsack_;
  size_t emitted[kMaxSackBlocks];
  size_t nemitted = 0;
  auto emit = [&](size_t f, size_t l) {
    for (size_t i = 0; i < nemitted; ++i) {
      if (emitted[i] == f) return;
    }
    emitted[nemitted++] = f;
    out[k++] = SackBlock{entries_[f].seq, entries_[l - 1].seq + entries_[l - 1].length};
  };
  for (size_t h = 0; h < history_count_ && k < n; ++h) {
    size_t f = 0;
    size_t l = 0;
    if (BlockOf(history_[h], &f, &l)) emit(f, l);
  }
  for (size_t i = 0; i < held_count_ && k < n;) {
    size_t l = i + 1;
    while (l < held_count_ && entries_[l - 1].seq + entries_[l - 1].length == entries_[l].seq) ++l;
    emit(i, l);
    i = l;
  }
  return k;
}

}  // namespace iwarp::tcp
