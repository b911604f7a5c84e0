// Test helpers for TcpStack: a capturing TcpOutput, a recording TcpUser, a
// segment builder, and an in-memory link between two stacks with seeded
// impairment on a virtual clock. Test-only.
#ifndef IWARPD_TCP_LITE_TCP_STACK_TEST_UTIL_H_
#define IWARPD_TCP_LITE_TCP_STACK_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tcp_lite/tcp_segment.h"
#include "tcp_lite/tcp_stack.h"

namespace iwarp::tcp::testing {

inline constexpr uint32_t kIpA = 0xC6120001;  // 198.18.0.1
inline constexpr uint32_t kIpB = 0xC6120002;  // 198.18.0.2

inline IsnGenerator TestIsn() {
  SipKey k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(i * 7 + 1);
  return IsnGenerator(k);
}

// A segment as the stack emitted it, parsed back with the codec (which also
// verifies the checksum).
struct Wire {
  uint32_t src = 0;
  uint32_t dst = 0;
  SegmentHeader h;
  Options o;
  std::vector<uint8_t> payload;
  std::vector<uint8_t> bytes;  // the whole TCP segment
  const uint8_t* first_piece = nullptr;  // where the payload's first piece was
  bool checksum_ok = false;

  bool Has(uint8_t f) const { return h.Has(f); }
};

class CaptureOutput : public TcpOutput {
 public:
  bool EmitSegment(uint32_t src_ip, uint32_t dst_ip, ByteSpan tcp_header,
                   std::span<const ByteSpan> payload) override {
    Wire w;
    w.src = src_ip;
    w.dst = dst_ip;
    w.bytes.assign(tcp_header.begin(), tcp_header.end());
    for (ByteSpan p : payload) w.bytes.insert(w.bytes.end(), p.begin(), p.end());
    if (!payload.empty()) w.first_piece = payload[0].data();
    Segment s;
    w.checksum_ok = ParseSegment(ByteSpan(w.bytes), w.bytes.size(), Ipv4Addresses{src_ip, dst_ip},
                                 ChecksumCheck::kVerify, &s) == SegmentStatus::kOk;
    if (w.checksum_ok) {
      w.h = s.header;
      w.payload.assign(s.payload.begin(), s.payload.end());
      ParseOptions(s.options, s.header.Has(kFlagSyn), &w.o);
    }
    segments.push_back(std::move(w));
    return !fail_next_ || (--fail_next_, false);
  }
  std::vector<Wire> Take() {
    std::vector<Wire> v;
    v.swap(segments);
    return v;
  }
  // With provide_send_memory, the output lends the stack its send buffers
  // (TcpOutput::SendMemory), as one whose device reads payload by reference
  // does, and reports the buffers in `held` as still read by the device.
  MutableByteSpan SendMemory(size_t buffers, size_t buffer_bytes) override {
    if (!provide_send_memory) return {};
    send_memory.assign(buffers * buffer_bytes, 0);
    send_buffer_bytes = buffer_bytes;
    return MutableByteSpan(send_memory);
  }
  bool SendBufferReusable(uint32_t index) const override {
    return std::find(held.begin(), held.end(), index) == held.end();
  }
  // The buffer of the lent memory `p` points into; -1 if none.
  int64_t BufferOf(const uint8_t* p) const {
    if (send_memory.empty() || p < send_memory.data() ||
        p >= send_memory.data() + send_memory.size()) {
      return -1;
    }
    return static_cast<int64_t>(static_cast<size_t>(p - send_memory.data()) / send_buffer_bytes);
  }

  std::vector<Wire> segments;
  int fail_next_ = 0;
  bool provide_send_memory = false;
  std::vector<uint8_t> send_memory;
  size_t send_buffer_bytes = 0;
  std::vector<uint32_t> held;
};

struct Event {
  std::string what;
  uint64_t a = 0;
  bool operator==(const Event&) const = default;
};

class RecordingUser : public TcpUser {
 public:
  TcpUser* OnAccept(ConnId conn, const FourTuple& t) override {
    events.push_back({"accept", t.remote_port});
    accepted.push_back(conn);
    return accept ? this : nullptr;
  }
  void OnConnected(ConnId conn) override {
    events.push_back({"connected", 0});
    connected.push_back(conn);
  }
  size_t OnData(ConnId, uint64_t off, ByteSpan d) override {
    if (off != data.size()) ++offset_errors;
    const size_t n = consume_limit < d.size() ? consume_limit : d.size();
    data.insert(data.end(), d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n));
    if (consume_limit != SIZE_MAX) consume_limit -= n;
    ++data_calls;
    return n;
  }
  void OnOutOfOrder(ConnId, uint64_t off, ByteSpan d) override {
    events.push_back({"ooo", off});
    ooo_bytes += d.size();
  }
  void OnPeerFin(ConnId) override { events.push_back({"peer_fin", 0}); peer_fin = true; }
  void OnSendSpace(ConnId, size_t space) override {
    ++send_space_calls;
    last_space = space;
  }
  void OnSendComplete(ConnId, uint64_t cookie, bool acked) override {
    completions.push_back({cookie, acked});
  }
  void OnClosed(ConnId, CloseReason r) override {
    events.push_back({std::string("closed:") + std::string(CloseReasonName(r)), 0});
    closed = true;
    close_reason = r;
  }

  bool accept = true;
  size_t consume_limit = SIZE_MAX;
  std::vector<Event> events;
  std::vector<ConnId> accepted;
  std::vector<ConnId> connected;
  std::vector<uint8_t> data;
  uint64_t offset_errors = 0;
  uint64_t data_calls = 0;
  uint64_t ooo_bytes = 0;
  bool peer_fin = false;
  bool closed = false;
  CloseReason close_reason = CloseReason::kNormal;
  uint64_t send_space_calls = 0;
  size_t last_space = 0;
  std::vector<std::pair<uint64_t, bool>> completions;
};

// Builds a segment from the peer (kIpB:peer_port) to the stack (kIpA:port).
struct SegBuilder {
  uint16_t src_port = 40000;
  uint16_t dst_port = 5000;
  uint32_t src_ip = kIpB;
  uint32_t dst_ip = kIpA;

  std::vector<uint8_t> Build(uint8_t flags, uint32_t seq, uint32_t ack, uint16_t window,
                             const Options& o = Options(), std::vector<uint8_t> payload = {}) const {
    uint8_t opt[kMaxOptionsSize];
    const OptionsEncodeResult orr = EncodeOptions(o, MutableByteSpan(opt));
    SegmentHeader h;
    h.src_port = src_port;
    h.dst_port = dst_port;
    h.seq = Seq32(seq);
    h.ack = Seq32(ack);
    h.flags = flags;
    h.window = window;
    std::vector<uint8_t> out(kMaxHeaderSize);
    const SegmentEncodeResult r =
        EncodeSegmentHeader(h, ByteSpan(opt, orr.size), Ipv4Addresses{src_ip, dst_ip},
                            ByteSpan(payload), MutableByteSpan(out));
    out.resize(r.size);
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
  }
};

inline std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = static_cast<uint8_t>(x);
  }
  return v;
}

// Two stacks joined by an in-memory link with a one-way delay and seeded
// drop / duplicate / reorder impairment. Time is virtual (microseconds).
class Link {
 public:
  struct Impairment {
    double drop = 0;
    double duplicate = 0;
    double reorder = 0;  // extra delay of up to 3x the base delay
    uint32_t seed = 1;
  };
  struct Packet {
    uint64_t at = 0;
    uint64_t order = 0;
    uint32_t src = 0, dst = 0;
    std::vector<uint8_t> bytes;
  };
  class Port : public TcpOutput {
   public:
    Port(Link& l, int side) : link_(l), side_(side) {}
    bool EmitSegment(uint32_t src_ip, uint32_t dst_ip, ByteSpan hdr,
                     std::span<const ByteSpan> payload) override {
      std::vector<uint8_t> b(hdr.begin(), hdr.end());
      if (link_.sums_payload) {
        // As the data plane does: copy and sum in one pass, then complete
        // the header's checksum.
        size_t n = 0;
        for (ByteSpan p : payload) n += p.size();
        b.resize(hdr.size() + n);
        const PayloadSum ps = CopyAndSumPayload(payload, b.data() + hdr.size());
        if (!AddPayloadSum(MutableByteSpan(b).first(hdr.size()), ps)) return false;
      } else {
        for (ByteSpan p : payload) b.insert(b.end(), p.begin(), p.end());
      }
      link_.Enqueue(side_, src_ip, dst_ip, std::move(b));
      return true;
    }
    bool SumsPayload() const override { return link_.sums_payload; }
   private:
    Link& link_;
    int side_;
  };

  Link(uint64_t delay_us, Impairment imp) : delay_us_(delay_us), imp_(imp), rng_(imp.seed) {}

  Port& port(int side) { return side == 0 ? port0_ : port1_; }
  void Attach(TcpStack* a, TcpStack* b) {
    stacks_[0] = a;
    stacks_[1] = b;
  }

  void Enqueue(int from, uint32_t src, uint32_t dst, std::vector<uint8_t> b) {
    ++sent;
    // TCP options + payload (what RFC 9293 3.7.1 counts against the MSS).
    if (b.size() > kHeaderSize) {
      max_options_and_payload = std::max<uint64_t>(max_options_and_payload, b.size() - kHeaderSize);
    }
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < imp_.drop) {
      ++dropped;
      return;
    }
    uint64_t at = now + delay_us_;
    if (u(rng_) < imp_.reorder) {
      at += static_cast<uint64_t>(u(rng_) * 3 * delay_us_);
      ++reordered;
    }
    const int to = 1 - from;
    if (u(rng_) < imp_.duplicate) {
      ++duplicated;
      queue_[to].push_back(Packet{at + 1, order_++, src, dst, b});
    }
    queue_[to].push_back(Packet{at, order_++, src, dst, std::move(b)});
  }

  // Advances virtual time to `until`, delivering packets and running timers.
  // Returns false if nothing was pending at all (idle).
  void RunUntil(uint64_t until, uint64_t step_us = 50) {
    while (now < until) {
      now = std::min(until, now + step_us);
      for (int side = 0; side < 2; ++side) {
        auto& q = queue_[side];
        for (;;) {
          auto it = q.end();
          for (auto j = q.begin(); j != q.end(); ++j) {
            if (j->at <= now && (it == q.end() || j->at < it->at ||
                                 (j->at == it->at && j->order < it->order))) {
              it = j;
            }
          }
          if (it == q.end()) break;
          Packet p = std::move(*it);
          q.erase(it);
          stacks_[side]->Input(p.src, p.dst, ByteSpan(p.bytes), now);
        }
      }
      stacks_[0]->RunTimers(now);
      stacks_[1]->RunTimers(now);
      if (idle_hook && idle_hook()) return;
    }
  }

  uint64_t now = 0;
  uint64_t sent = 0, dropped = 0, duplicated = 0, reordered = 0;
  uint64_t max_options_and_payload = 0;  // largest segment less the base TCP header
  std::function<bool()> idle_hook;
  // The ports act as an output that sums the payload itself
  // (TcpOutput::SumsPayload); receivers verify every checksum either way.
  bool sums_payload = false;

 private:
  uint64_t delay_us_;
  Impairment imp_;
  std::mt19937 rng_;
  uint64_t order_ = 0;
  Port port0_{*this, 0};
  Port port1_{*this, 1};
  TcpStack* stacks_[2] = {nullptr, nullptr};
  std::vector<Packet> queue_[2];
};

// A fixed ring of packet slots per direction (no allocation after
// construction); every `drop_every`-th packet is lost (0: none).
class RingLink {
 public:
  static constexpr size_t kSlots = 2048;
  static constexpr size_t kSlotBytes = 2048;
  struct Slot {
    uint32_t src, dst;
    uint32_t len;
    uint8_t bytes[kSlotBytes];
  };
  class Port : public TcpOutput {
   public:
    Port(RingLink& l, int to) : link_(l), to_(to) {}
    bool EmitSegment(uint32_t src, uint32_t dst, ByteSpan hdr,
                     std::span<const ByteSpan> payload) override {
      return link_.Push(to_, src, dst, hdr, payload);
    }
   private:
    RingLink& link_;
    int to_;
  };

  explicit RingLink(uint64_t drop_every = 0) : drop_every_(drop_every), slots_(new Slot[2 * kSlots]) {}

  bool Push(int to, uint32_t src, uint32_t dst, ByteSpan hdr, std::span<const ByteSpan> payload) {
    if (drop_every_ != 0 && ++counter_ % drop_every_ == 0) return true;  // lost on the wire
    if (count_[to] == kSlots) return false;
    Slot& s = slots_[to * kSlots + (head_[to] + count_[to]) % kSlots];
    size_t n = hdr.size();
    std::memcpy(s.bytes, hdr.data(), n);
    for (ByteSpan p : payload) {
      if (n + p.size() > kSlotBytes) return false;
      std::memcpy(s.bytes + n, p.data(), p.size());
      n += p.size();
    }
    s.src = src;
    s.dst = dst;
    s.len = static_cast<uint32_t>(n);
    ++count_[to];
    return true;
  }
  // Delivers what is queued for side `to` (not what this produces).
  void Deliver(int to, TcpStack& s, uint64_t now,
               ChecksumCheck check = ChecksumCheck::kVerify) {
    size_t n = count_[to];
    while (n-- > 0) {
      Slot& slot = slots_[to * kSlots + head_[to]];
      head_[to] = (head_[to] + 1) % kSlots;
      --count_[to];
      s.Input(slot.src, slot.dst, ByteSpan(slot.bytes, slot.len), now, check);
    }
  }

  Port to_a{*this, 0};
  Port to_b{*this, 1};

 private:
  uint64_t drop_every_;
  std::unique_ptr<Slot[]> slots_;
  size_t head_[2] = {0, 0};
  size_t count_[2] = {0, 0};
  uint64_t counter_ = 0;
};

}  // namespace iwarp::tcp::testing

#endif  // IWARPD_TCP_LITE_TCP_STACK_TEST_UTIL_H_
