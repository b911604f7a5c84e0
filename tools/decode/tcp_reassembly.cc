#include "tools/decode/tcp_reassembly.h"

#include <algorithm>

namespace iwarp::decode {

void TcpReassembler::OnSyn(uint32_t isn) {
  if (synced_) return;  // a retransmitted SYN changes nothing
  synced_ = true;
  next_ = Seq32(isn) + 1;
}

void TcpReassembler::OnData(uint32_t seq_in, ByteSpan payload, const Sink& sink) {
  if (payload.empty()) return;
  if (!synced_) {
    synced_ = true;
    next_ = Seq32(seq_in);
  }
  Seq32 seq(seq_in);
  // Trim bytes already delivered (retransmission or overlap).
  const int32_t behind = next_ - seq;
  if (behind > 0) {
    if (static_cast<size_t>(behind) >= payload.size()) {
      duplicate_ += payload.size();
      return;
    }
    duplicate_ += static_cast<uint32_t>(behind);
    payload = payload.subspan(static_cast<uint32_t>(behind));
    seq = next_;
  }
  if (seq == next_) {
    next_ += static_cast<uint32_t>(payload.size());
    delivered_ += payload.size();
    sink(seq, payload);
    Drain(sink);
    return;
  }
  // Ahead of the stream: keep it (first copy wins) if there is room.
  if (buffered_ + payload.size() > max_buffered_) {
    ++overflow_;
    return;
  }
  auto [it, inserted] = by_seq_.try_emplace(seq.value(), payload.begin(), payload.end());
  if (!inserted) {
    if (it->second.size() >= payload.size()) {
      duplicate_ += payload.size();
      return;
    }
    buffered_ -= it->second.size();
    it->second.assign(payload.begin(), payload.end());
  }
  buffered_ += payload.size();
}

void TcpReassembler::Drain(const Sink& sink) {
  bool progress = true;
  while (progress && !by_seq_.empty()) {
    progress = false;
    for (auto it = by_seq_.begin(); it != by_seq_.end();) {
      const Seq32 seq(it->first);
      const int32_t behind = next_ - seq;
      const size_t len = it->second.size();
      if (behind < 0) {
        ++it;
        continue;
      }
      buffered_ -= len;
      if (static_cast<size_t>(behind) < len) {
        ByteSpan rest = ByteSpan(it->second).subspan(static_cast<uint32_t>(behind));
        duplicate_ += static_cast<uint32_t>(behind);
        const Seq32 at = next_;
        next_ += static_cast<uint32_t>(rest.size());
        delivered_ += rest.size();
        sink(at, rest);
      } else {
        duplicate_ += len;
      }
      it = by_seq_.erase(it);
      progress = true;
    }
  }
}

}  // namespace iwarp::decode
