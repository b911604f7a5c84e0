// Fuzz target: arbitrary segment sequences into a TcpStack that has a
// listener and one established connection, interleaved with time steps and
// user calls.
//
// Input layout:
//   0      configuration bits: 1 SACK, 2 timestamps, 4 NewReno (else CUBIC),
//          8 SYN cookies always, 16 Nagle, 32 delayed ACK 0, 64 keepalive,
//          128 small buffers (4 KiB)
//   then operations of 12 octets [k a b c d e f g h i j l]:
//     k % 8 == 0: segment on the established 4-tuple: flags a, SEG.SEQ = the
//                 last ACK we sent + int16(b c), SEG.ACK = the last SEQ we
//                 sent + int16(d e), window (f g), options by h (0 none,
//                 1 timestamps, 2 SACK block around SEG.ACK, 3 both), payload
//                 length 8 * i + (j & 7), TSval j
//     k % 8 == 1: same, but on a new 4-tuple (source port 50000 + a) to the
//                 listener port, with SYN options if a SYN
//     k % 8 == 2: time passes: (a b c) * 10 us, then RunTimers
//     k % 8 == 3: user Send of 64 * a bytes, or SendRecord if b & 1, or a
//                 zero-copy send if b & 2 (completed buffers are checked)
//     k % 8 == 4: Shutdown; 5: Abort (if a == 0x5A, else ignored)
//     k % 8 == 6: raw segment: the next a octets verbatim on the 4-tuple
//     k % 8 == 7: ConsumeReceived / DeliverPending, user consume limit a
// Invariants (trap on violation): every emitted segment parses with a good
// checksum and carries our addresses; the connection count stays within the
// table; queued bytes stay within the buffers; in-order data arrives at
// consecutive stream offsets; zero-copy cookies complete once each.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "tcp_lite/tcp_segment.h"
#include "tcp_lite/tcp_stack.h"

namespace {

using namespace iwarp;
using namespace iwarp::tcp;

constexpr uint32_t kUs = 0xC6120001;
constexpr uint32_t kPeer = 0xC6120002;
constexpr uint16_t kPort = 4791;
constexpr uint16_t kPeerPort = 40000;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

class Out : public TcpOutput {
 public:
  bool EmitSegment(uint32_t src, uint32_t dst, ByteSpan hdr, std::span<const ByteSpan> payload) override {
    Check(src == kUs && dst == kPeer);
    size_t n = 0;
    std::memcpy(buf, hdr.data(), hdr.size());
    n = hdr.size();
    for (ByteSpan p : payload) {
      Check(n + p.size() <= sizeof(buf));
      std::memcpy(buf + n, p.data(), p.size());
      n += p.size();
    }
    Segment s;
    Check(ParseSegment(ByteSpan(buf, n), n, Ipv4Addresses{src, dst}, ChecksumCheck::kVerify, &s) ==
          SegmentStatus::kOk);
    Options o;
    Check(ParseOptions(s.options, s.header.Has(kFlagSyn), &o) == OptionStatus::kOk);
    if (s.header.dst_port == kPeerPort) {
      last_seq = s.header.seq.value() + static_cast<uint32_t>(s.payload.size());
      if (s.header.Has(kFlagAck)) last_ack = s.header.ack.value();
      if (o.timestamps) last_tsval = o.timestamps->ts_val;
    }
    ++count;
    return (count % 97) != 0;  // now and then no buffer
  }
  uint8_t buf[70000];
  uint32_t last_seq = 0, last_ack = 0, last_tsval = 0;
  uint64_t count = 0;
};

class User : public TcpUser {
 public:
  TcpUser* OnAccept(ConnId c, const FourTuple& t) override {
    if (t.remote_port == kPeerPort) conn = c;
    return this;
  }
  size_t OnData(ConnId c, uint64_t off, ByteSpan d) override {
    uint64_t& next = offsets[Key(c)];
    Check(off == next);
    const size_t n = d.size() < limit ? d.size() : limit;
    next += n;
    return n;
  }
  void OnSendComplete(ConnId, uint64_t cookie, bool) override {
    Check(live_zc.erase(cookie) == 1);
  }
  void OnClosed(ConnId c, CloseReason) override { offsets.erase(Key(c)); }
  static uint64_t Key(ConnId c) { return (uint64_t{c.slot} << 32) | c.generation; }
  ConnId conn;
  size_t limit = SIZE_MAX;
  std::map<uint64_t, uint64_t> offsets;  // by (slot, generation)
  std::map<uint64_t, std::vector<uint8_t>> live_zc;
};

std::vector<uint8_t> Build(uint16_t sport, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd,
                           const Options& o, size_t payload_len) {
  uint8_t opt[kMaxOptionsSize];
  const OptionsEncodeResult orr = EncodeOptions(o, MutableByteSpan(opt));
  SegmentHeader h;
  h.src_port = sport;
  h.dst_port = kPort;
  h.seq = Seq32(seq);
  h.ack = Seq32(ack);
  h.flags = flags;
  h.window = wnd;
  std::vector<uint8_t> payload(payload_len);
  for (size_t i = 0; i < payload_len; ++i) payload[i] = static_cast<uint8_t>(seq + i);
  std::vector<uint8_t> out(kMaxHeaderSize);
  const SegmentEncodeResult r = EncodeSegmentHeader(
      h, ByteSpan(opt, orr.size), Ipv4Addresses{kPeer, kUs}, ByteSpan(payload), MutableByteSpan(out));
  out.resize(r.size);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t cfg = data[0];
  TcpOptions opt;
  opt.max_connections = 4;
  opt.max_listeners = 2;
  opt.syn_backlog = 2;
  opt.sack = cfg & 1;
  opt.timestamps = cfg & 2;
  opt.congestion_control = (cfg & 4) ? CcAlgorithm::kNewReno : CcAlgorithm::kCubic;
  opt.syn_cookies = (cfg & 8) ? SynCookieMode::kAlways : SynCookieMode::kOnPressure;
  opt.nagle = cfg & 16;
  opt.delayed_ack_us = (cfg & 32) ? 0 : 200;
  opt.keepalive = cfg & 64;
  opt.keepalive_idle_s = 1;
  opt.keepalive_interval_s = 1;
  opt.keepalive_count = 2;
  opt.send_buffer_bytes = (cfg & 128) ? 4096 : 32768;
  opt.receive_buffer_bytes = (cfg & 128) ? 4096 : 32768;
  opt.max_zero_copy_sends = 4;
  opt.max_send_records = 8;
  opt.max_ooo_segments = 8;
  opt.max_time_wait = 2;
  opt.time_wait_s = 1;
  Out out;
  User user;
  SipKey key{};
  const IsnGenerator isn(key);
  const uint32_t ips[] = {kUs};
  uint64_t now = 1'000'000;
  auto created = TcpStack::Create(opt, ips, out, isn, now);
  Check(created.ok());
  TcpStack& s = **created;
  Check(s.Listen(kPort, user).ok());

  // Handshake for the established connection (may fail with cookies on; the
  // operations still run).
  Options syn;
  syn.mss = 1000;
  syn.window_scale = 2;
  syn.sack_permitted = true;
  syn.timestamps = Timestamps{1, 0};
  auto seg = Build(kPeerPort, kFlagSyn, 100, 0, 65535, syn, 0);
  s.Input(kPeer, kUs, ByteSpan(seg), now);
  Options ack;
  ack.timestamps = Timestamps{2, out.last_tsval};
  seg = Build(kPeerPort, kFlagAck, 101, out.last_seq + 1, 1000, ack, 0);
  s.Input(kPeer, kUs, ByteSpan(seg), now);

  uint64_t next_cookie = 1;
  for (size_t pos = 1; pos + 12 <= size; pos += 12) {
    const uint8_t* op = data + pos;
    const uint8_t k = op[0] % 8;
    if (k == 0 || k == 1) {
      const uint16_t sport = k == 0 ? kPeerPort : static_cast<uint16_t>(50000 + op[1]);
      const uint8_t flags = op[1];
      const uint32_t seqv = out.last_ack + static_cast<uint32_t>(static_cast<int16_t>((op[2] << 8) | op[3]));
      const uint32_t ackv = out.last_seq + static_cast<uint32_t>(static_cast<int16_t>((op[4] << 8) | op[5]));
      Options o;
      if (flags & kFlagSyn) {
        o.mss = static_cast<uint16_t>(op[6] * 8);
        if (op[7] & 1) o.window_scale = static_cast<uint8_t>(op[7] >> 4);
        o.sack_permitted = op[7] & 2;
      }
      if (op[8] & 1) o.timestamps = Timestamps{op[10], out.last_tsval};
      if (op[8] & 2) {
        o.sack_block_count = 1;
        o.sack_blocks[0] = SackBlock{Seq32(ackv + 1), Seq32(ackv + 1 + op[9] * 16u)};
      }
      seg = Build(sport, flags, seqv, ackv, static_cast<uint16_t>((op[6] << 8) | op[7]), o,
                  8u * op[9] + (op[10] & 7));
      s.Input(kPeer, kUs, ByteSpan(seg), now, (op[11] & 1) ? ChecksumCheck::kSkip : ChecksumCheck::kVerify);
    } else if (k == 2) {
      now += 10u * ((uint32_t{op[1]} << 16) | (uint32_t{op[2]} << 8) | op[3]);
      s.RunTimers(now);
    } else if (k == 3) {
      if (op[2] & 2) {
        auto& buf = user.live_zc[next_cookie];
        buf.assign(64u * op[1] + 1, op[3]);
        // A plain zero-copy send, or one framed by copied head and tail
        // (an FPDU around payload left in place).
        const uint8_t frame[8] = {op[4], op[5], op[6], op[7], op[8], op[9], op[10], op[11]};
        const SendStatus st =
            (op[2] & 4) ? s.SendRecordZeroCopy(user.conn, ByteSpan(frame, op[4] % 7),
                                               ByteSpan(buf), ByteSpan(frame, op[5] % 8),
                                               next_cookie, now)
                        : s.SendZeroCopy(user.conn, ByteSpan(buf), next_cookie, now);
        if (st != SendStatus::kOk) {
          user.live_zc.erase(next_cookie);
        } else {
          Check(s.ZeroCopyReferences(user.conn, ByteSpan(buf)) ||
                s.State(user.conn) == TcpState::kClosed);
        }
        ++next_cookie;
      } else {
        std::vector<uint8_t> buf(64u * op[1], op[3]);
        if (op[2] & 1) s.SendRecord(user.conn, ByteSpan(buf), now);
        else Check(s.Send(user.conn, ByteSpan(buf), now) <= buf.size());
      }
    } else if (k == 4) {
      s.Shutdown(user.conn, now);
    } else if (k == 5) {
      if (op[1] == 0x5A) s.Abort(user.conn, now);
    } else if (k == 6) {
      const size_t n = std::min<size_t>(op[1], size - pos - 12);
      s.Input(kPeer, kUs, ByteSpan(data + pos + 12, n), now,
              (op[2] & 1) ? ChecksumCheck::kSkip : ChecksumCheck::kVerify);
      pos += n;
    } else {
      user.limit = op[1] == 0xFF ? SIZE_MAX : op[1];
      if (op[2] & 1) {
        // Consuming without OnData moves the stream offset on.
        TcpConnInfo before, after;
        if (s.GetConnection(user.conn, &before)) {
          s.ConsumeReceived(user.conn, op[3], now);
          if (s.GetConnection(user.conn, &after)) {
            Check(after.recv_queued <= before.recv_queued);
            Check(before.recv_queued - after.recv_queued <= op[3]);
            user.offsets[User::Key(user.conn)] += before.recv_queued - after.recv_queued;
          }
        }
      } else {
        s.DeliverPending(user.conn, now);
      }
    }
    Check(s.connection_count() <= opt.max_connections);
    TcpConnInfo info[4];
    const size_t n = s.ListConnections(info);
    Check(n == s.connection_count());
    for (size_t i = 0; i < n; ++i) {
      Check(info[i].recv_queued <= opt.receive_buffer_bytes);
      Check(info[i].cwnd >= 1);
      Check(info[i].emss >= 1);
    }
  }
  created->reset();
  return 0;
}
