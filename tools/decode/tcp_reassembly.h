// In-order byte delivery for one direction of a captured TCP connection.
//
// This is a capture-analysis tool, not the data plane: it may allocate. It
// keeps out-of-order segments (bounded by max_buffered bytes), trims
// retransmitted overlap, and delivers each byte of the stream exactly once, in
// order, together with its sequence number.
#ifndef IWARPD_TOOLS_DECODE_TCP_REASSEMBLY_H_
#define IWARPD_TOOLS_DECODE_TCP_REASSEMBLY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "common/bytes.h"
#include "common/seq.h"

namespace iwarp::decode {

class TcpReassembler {
 public:
  // Called with in-order stream bytes; `seq` is the sequence number of data[0].
  using Sink = std::function<void(Seq32 seq, ByteSpan data)>;

  explicit TcpReassembler(size_t max_buffered = 64u << 20) : max_buffered_(max_buffered) {}

  // A SYN fixes the initial sequence number: data starts at isn + 1.
  void OnSyn(uint32_t isn);
  // Adds a segment's payload. Without a SYN seen, the first data segment
  // fixes the stream start (a capture that began mid-connection).
  void OnData(uint32_t seq, ByteSpan payload, const Sink& sink);

  bool synced() const { return synced_; }
  Seq32 next_seq() const { return next_; }
  uint64_t delivered_bytes() const { return delivered_; }
  uint64_t duplicate_bytes() const { return duplicate_; }
  // Bytes held back because an earlier byte never arrived.
  size_t buffered_bytes() const { return buffered_; }
  // Segments discarded because the out-of-order buffer was full.
  uint64_t overflow_segments() const { return overflow_; }

 private:
  void Drain(const Sink& sink);

  size_t max_buffered_;
  bool synced_ = false;
  Seq32 next_;
  std::map<uint32_t, std::vector<uint8_t>> by_seq_;   // key: absolute seq
  size_t buffered_ = 0;
  uint64_t delivered_ = 0;
  uint64_t duplicate_ = 0;
  uint64_t overflow_ = 0;
};

}  // namespace iwarp::decode

#endif  // IWARPD_TOOLS_DECODE_TCP_REASSEMBLY_H_
