// TcpStack implementation. Layout: a fixed table of Conn slots (hash chains
// by 4-tuple, a free list, a FIFO of TIME-WAIT slots), one timer wheel with
// three timers per connection (retransmission / persist / TIME-WAIT share one,
// delayed ACK, keepalive), and per-slot rings allocated by Create().
//
// Choices where the RFCs leave room, and known simplifications:
//  - RTT is measured with one timed segment per window (RFC 6298 with Karn's
//    rule), in microseconds. Timestamps (millisecond TSval) serve PAWS, and
//    their echo gives an RTT sample only to end an RTO backoff. A segment
//    without timestamps on a timestamp connection is accepted (RFC 7323 3.2
//    says SHOULD drop; Linux accepts).
//  - RFC 3042 limited transmit on the first two duplicate ACKs.
//  - SACK recovery follows RFC 6675 with pipe computed from the scoreboard
//    (bytes above the highest SACKed byte plus retransmitted hole bytes) and
//    NextSeg rules (1) and (2); rule (3)/(4) (rescue retransmission) are not
//    implemented. The scoreboard keeps 16 ranges and is cleared on RTO.
//  - After an RTO the sender goes back to SND.UNA (RFC 5681 3.1) and resends
//    within cwnd, skipping ranges still SACKed.
//  - The zero-window probe is one byte of new data (RFC 9293 3.8.6.1); the
//    persist timer backs off and never gives up (RFC 1122 4.2.2.17).
//  - Data carried on a SYN is not accepted (it is retransmitted by the peer).
//  - Receiver SWS avoidance: a window update is sent when the user consumes
//    data and the window the peer knows has dropped below min(buffer/2, 4 MSS).
#include "tcp_lite/tcp_stack.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/timer_wheel.h"
#include "tcp_lite/tcp_reassembly.h"
#include "tcp_lite/tcp_rto.h"

namespace iwarp::tcp {

std::string_view SynCookieModeName(SynCookieMode m) {
  switch (m) {
    case SynCookieMode::kOff: return "off";
    case SynCookieMode::kOnPressure: return "on_pressure";
    case SynCookieMode::kAlways: return "always";
  }
  return "invalid";
}

std::string_view TcpStateName(TcpState s) {
  switch (s) {
    case TcpState::kClosed: return "CLOSED";
    case TcpState::kListen: return "LISTEN";
    case TcpState::kSynSent: return "SYN-SENT";
    case TcpState::kSynReceived: return "SYN-RECEIVED";
    case TcpState::kEstablished: return "ESTABLISHED";
    case TcpState::kFinWait1: return "FIN-WAIT-1";
    case TcpState::kFinWait2: return "FIN-WAIT-2";
    case TcpState::kCloseWait: return "CLOSE-WAIT";
    case TcpState::kClosing: return "CLOSING";
    case TcpState::kLastAck: return "LAST-ACK";
    case TcpState::kTimeWait: return "TIME-WAIT";
  }
  return "invalid";
}

std::string_view CloseReasonName(CloseReason r) {
  switch (r) {
    case CloseReason::kNormal: return "normal";
    case CloseReason::kResetByPeer: return "reset_by_peer";
    case CloseReason::kRefused: return "refused";
    case CloseReason::kTimeout: return "timeout";
    case CloseReason::kAborted: return "aborted";
  }
  return "invalid";
}

std::string_view SendStatusName(SendStatus s) {
  switch (s) {
    case SendStatus::kOk: return "ok";
    case SendStatus::kBadConn: return "bad_conn";
    case SendStatus::kNotConnected: return "not_connected";
    case SendStatus::kNoSpace: return "no_space";
    case SendStatus::kTooManyRecords: return "too_many_records";
  }
  return "invalid";
}

namespace {

constexpr uint32_t kNil = UINT32_MAX;
constexpr uint32_t kTsOptionBytes = 12;  // NOP NOP + kind 8 (RFC 7323 appendix A)
constexpr uint32_t kDefaultPeerMss = 536;  // RFC 9293 3.7.1 without the option
constexpr size_t kMaxPieces = 16;          // payload pieces per emitted segment
constexpr size_t kScoreboardBlocks = 16;   // peer SACK ranges remembered
constexpr uint32_t kDupThresh = 3;         // RFC 6675 2, RFC 5681 3.2

bool InStates(TcpState s, std::initializer_list<TcpState> set) {
  for (TcpState t : set) {
    if (s == t) return true;
  }
  return false;
}

// Receive callbacks of the reassembler are not needed: the stack copies
// in-window bytes into the connection's receive ring before Insert() and reads
// delivered data from there. Handles are 0 and own nothing.
class NullSink final : public ReasmSink {
 public:
  void OnDeliver(const ReasmPiece&) override {}
  void OnRelease(SegmentHandle) override {}
};

// Congestion control: both algorithms live in the connection; `algo` says
// which one is used. No virtual call, no allocation.
struct ConnCc {
  CcAlgorithm algo = CcAlgorithm::kCubic;
  NewReno reno{kDefaultPeerMss};
  Cubic cubic{kDefaultPeerMss};

  void Reset(CcAlgorithm a, uint32_t mss) {
    algo = a;
    reno = NewReno(mss);
    cubic = Cubic(mss);
  }
  template <typename F>
  auto With(F&& f) {
    return algo == CcAlgorithm::kCubic ? f(cubic) : f(reno);
  }
  template <typename F>
  auto With(F&& f) const {
    return algo == CcAlgorithm::kCubic ? f(cubic) : f(reno);
  }
};

enum class RtxKind : uint8_t { kNone, kRetransmit, kPersist, kTimeWait };

// One queued send region, in stream order: bytes in the send ring or a
// caller-owned zero-copy buffer.
struct SendDesc {
  Seq32 seq;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  uint64_t cookie = 0;
  bool zero_copy = false;
};

}  // namespace

struct TcpStack::Impl {
  struct Conn {
    // ------------------------------------------------ identity
    Impl* stack = nullptr;
    uint32_t slot = 0;
    uint32_t generation = 0;
    bool in_use = false;
    uint32_t hash_next = kNil;
    uint32_t free_next = kNil;
    uint32_t tw_prev = kNil, tw_next = kNil;
    FourTuple tuple;
    TcpState state = TcpState::kClosed;
    TcpUser* user = nullptr;
    int listener = -1;  // index of the listener of a passive open
    bool passive = false;
    bool counted_syn_backlog = false;

    // ------------------------------------------------ negotiated
    uint16_t peer_mss = kDefaultPeerMss;
    uint8_t snd_wscale = 0;  // applied to the peer's windows
    uint8_t rcv_wscale = 0;  // applied to ours
    bool sack_ok = false;
    bool ts_ok = false;
    bool wscale_on = false;  // RFC 7323 2.2: both SYNs carried the option
    uint32_t emss = kDefaultPeerMss;

    // ------------------------------------------------ send (RFC 9293 3.3.1)
    Seq32 iss, snd_una, snd_nxt, snd_max, snd_wl1, snd_wl2;
    uint32_t snd_wnd = 0;
    uint32_t max_snd_wnd = 0;
    Seq32 snd_end;  // one past the last queued data byte
    bool fin_queued = false;
    // Send ring (bytes accepted by Send/SendRecord).
    uint8_t* sbuf = nullptr;
    uint32_t scap = 0, shead = 0, sused = 0;
    // Descriptor queue (ring of SendDesc).
    SendDesc* descs = nullptr;
    uint32_t dcap = 0, dhead = 0, dcount = 0;
    uint32_t zc_count = 0;
    // Record starts, increasing, all > snd_una (ring).
    Seq32* recs = nullptr;
    uint32_t rcap_recs = 0, rhead = 0, rcount = 0;
    bool want_send_space = false;

    // ------------------------------------------------ receive
    Seq32 irs;
    Seq32 rcv_consumed;   // first byte not consumed by the user
    uint32_t rconsumed_idx = 0;  // its index in rbuf
    uint8_t* rbuf = nullptr;
    uint32_t rbuf_cap = 0;
    Seq32 rcv_adv;        // right edge of the window last advertised
    Reassembler* reasm = nullptr;
    bool peer_fin_reported = false;
    // Test mode (AdoptEstablished): the receive sequence returns to irs + 1
    // after this many in-order bytes; 0 = never.
    uint32_t loop_bytes = 0;

    // ------------------------------------------------ timestamps (RFC 7323)
    uint32_t ts_recent = 0;
    uint32_t ts_offset = 0;
    Seq32 last_ack_sent;

    // ------------------------------------------------ timers and recovery
    Timer rtx_timer, delack_timer, keepalive_timer;
    RtxKind rtx_kind = RtxKind::kNone;
    uint32_t syn_retries = 0;
    uint32_t persist_backoff = 0;
    uint32_t keepalive_sent = 0;
    uint64_t last_rx_us = 0;
    RtoEstimator rto;
    ConnCc cc;
    bool rtt_timing = false;
    Seq32 rtt_seq;
    uint64_t rtt_start_us = 0;
    uint32_t dup_acks = 0;
    // RFC 6675 scoreboard: SACKed ranges above snd_una, sorted, disjoint.
    SackBlock sacked[kScoreboardBlocks];
    uint32_t nsacked = 0;
    bool sack_recovery = false;
    Seq32 recovery_point;
    Seq32 high_rxt;

    // ------------------------------------------------ delayed ACK
    uint32_t unacked_segments = 0;
    bool ack_now = false;
    // Quick ACK: the delayed-ACK timer fired, so no reply of ours carried the
    // ACK in time and the peer waited for the timer. Until we send data within
    // delayed_ack_us of receiving some (a reply again), in-order data is
    // acknowledged at the end of its receive burst instead of on a timer.
    bool quick_ack = false;
    uint64_t data_rx_us = 0;  // when data last arrived
    // An in-order ACK held until EndBurst (see TcpStack::BeginBurst).
    bool ack_held = false;
    // The slot is on `burst_acks` (per slot, not per connection: kept across
    // AllocConn so a slot is listed at most once per burst).
    bool on_burst_list = false;

    TcpConnInfo counters;  // the counter fields only
  };

  struct Listener {
    bool in_use = false;
    uint16_t port = 0;
    TcpUser* user = nullptr;
    uint32_t syn_received = 0;
  };

  TcpStack& self;
  const TcpOptions& opt;
  TcpStackStats& stats;
  TcpOutput& out;
  const IsnGenerator& isn_gen;
  uint32_t local_ips[16] = {};
  size_t n_local_ips = 0;
  uint16_t our_mss = 1460;
  uint8_t our_wscale = 0;
  uint32_t tick_us = 100;

  TimerWheel wheel;
  NullSink null_sink;
  std::unique_ptr<Conn[]> conns;
  // Between BeginBurst and EndBurst: connections owing a held ACK (slots,
  // at most one entry each; sized max_connections by Create).
  bool in_burst = false;
  std::unique_ptr<uint32_t[]> burst_acks;
  uint32_t n_burst_acks = 0;
  std::unique_ptr<uint8_t[]> send_mem;
  bool output_send_memory = false;  // the send buffers are out.SendMemory's
  std::unique_ptr<uint8_t[]> recv_mem;
  std::unique_ptr<SendDesc[]> desc_mem;
  std::unique_ptr<Seq32[]> rec_mem;
  std::unique_ptr<std::optional<Reassembler>[]> reasm_mem;
  std::unique_ptr<uint32_t[]> buckets;
  uint32_t bucket_mask = 0;
  uint32_t free_head = kNil;
  uint32_t live = 0;
  uint32_t tw_head = kNil, tw_tail = kNil, tw_count = 0;
  uint32_t syn_received_total = 0;
  std::unique_ptr<Listener[]> listeners;
  PortFilter port_filter = nullptr;
  void* port_filter_ctx = nullptr;
  uint16_t next_ephemeral = 0;
  uint64_t now_us = 0;
  // RFC 5961 7: challenge ACK budget per one-second interval.
  uint64_t challenge_epoch_us = 0;
  uint32_t challenge_count = 0;
  // When the last SYN cookie was sent: bare ACKs to a listener are checked
  // as cookies only while one can be valid.
  bool cookies_sent_ever = false;
  uint64_t last_cookie_sent_us = 0;

  Impl(TcpStack& s, const TcpOptions& o, TcpStackStats& st, TcpOutput& output,
       const IsnGenerator& isn, uint64_t now)
      : self(s), opt(o), stats(st), out(output), isn_gen(isn), wheel(now / o.timer_tick_us),
        now_us(now) {}

  ~Impl() {
    for (uint32_t i = 0; i < opt.max_connections; ++i) {
      Conn& c = conns[i];
      wheel.Cancel(c.rtx_timer);
      wheel.Cancel(c.delack_timer);
      wheel.Cancel(c.keepalive_timer);
    }
  }

  void Drop(DropReason r) { ++stats.drops[static_cast<size_t>(r)]; }

  // ================================================================ table

  static uint32_t HashTuple(const FourTuple& t) {
    uint64_t h = (uint64_t{t.local_addr} << 32) ^ t.remote_addr;
    h ^= (uint64_t{t.local_port} << 16 | t.remote_port) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return static_cast<uint32_t>(h);
  }
  static bool SameTuple(const FourTuple& a, const FourTuple& b) {
    return a.local_addr == b.local_addr && a.local_port == b.local_port &&
           a.remote_addr == b.remote_addr && a.remote_port == b.remote_port;
  }

  Conn* Lookup(const FourTuple& t) {
    for (uint32_t i = buckets[HashTuple(t) & bucket_mask]; i != kNil; i = conns[i].hash_next) {
      if (SameTuple(conns[i].tuple, t)) return &conns[i];
    }
    return nullptr;
  }

  Conn* Get(ConnId id) {
    if (id.slot >= opt.max_connections) return nullptr;
    Conn& c = conns[id.slot];
    if (!c.in_use || c.generation != id.generation) return nullptr;
    return &c;
  }
  const Conn* Get(ConnId id) const { return const_cast<Impl*>(this)->Get(id); }
  static ConnId IdOf(const Conn& c) { return ConnId{c.slot, c.generation}; }
  static bool Alive(const Conn& c, uint32_t gen) { return c.in_use && c.generation == gen; }

  bool OwnsIp(uint32_t ip) const {
    for (size_t i = 0; i < n_local_ips; ++i) {
      if (local_ips[i] == ip) return true;
    }
    return false;
  }

  // The link in the free list to the first slot whose send buffer the
  // output's device no longer reads (TcpOutput::SendBufferReusable); null if
  // none.
  uint32_t* FindReusable() {
    uint32_t* link = &free_head;
    while (*link != kNil) {
      if (!output_send_memory || out.SendBufferReusable(*link)) return link;
      ++stats.send_buffers_held;
      link = &conns[*link].free_next;
    }
    return nullptr;
  }

  // A free slot, recycling the oldest TIME_WAIT connection if none is free.
  Conn* AllocConn(const FourTuple& t) {
    uint32_t* link = FindReusable();
    if (link == nullptr && tw_head != kNil) {
      ++stats.time_wait_recycled;
      FreeConn(conns[tw_head]);
      link = FindReusable();
    }
    if (link == nullptr) return nullptr;
    Conn& c = conns[*link];
    *link = c.free_next;
    c.free_next = kNil;
    c.in_use = true;
    ++live;
    c.tuple = t;
    const uint32_t b = HashTuple(t) & bucket_mask;
    c.hash_next = buckets[b];
    buckets[b] = c.slot;
    c.state = TcpState::kClosed;
    c.user = nullptr;
    c.listener = -1;
    c.passive = false;
    c.counted_syn_backlog = false;
    c.peer_mss = kDefaultPeerMss;
    c.snd_wscale = c.rcv_wscale = 0;
    c.sack_ok = c.ts_ok = c.wscale_on = false;
    c.snd_wnd = c.max_snd_wnd = 0;
    c.fin_queued = false;
    c.loop_bytes = 0;
    c.shead = c.sused = 0;
    c.dhead = c.dcount = c.zc_count = 0;
    c.rhead = c.rcount = 0;
    c.want_send_space = false;
    c.rconsumed_idx = 0;
    c.peer_fin_reported = false;
    c.ts_recent = 0;
    c.rtx_kind = RtxKind::kNone;
    c.syn_retries = c.persist_backoff = c.keepalive_sent = 0;
    c.last_rx_us = now_us;
    c.rto = RtoEstimator(RtoConfig{opt.rto_min_us, opt.rto_max_us, opt.rto_initial_us, tick_us});
    c.rtt_timing = false;
    c.dup_acks = 0;
    c.nsacked = 0;
    c.sack_recovery = false;
    c.unacked_segments = 0;
    c.ack_now = false;
    c.ack_held = false;
    c.quick_ack = false;
    c.data_rx_us = 0;
    c.counters = TcpConnInfo();
    return &c;
  }

  void FreeConn(Conn& c) {
    wheel.Cancel(c.rtx_timer);
    wheel.Cancel(c.delack_timer);
    wheel.Cancel(c.keepalive_timer);
    // Unhash.
    uint32_t* link = &buckets[HashTuple(c.tuple) & bucket_mask];
    while (*link != kNil && *link != c.slot) link = &conns[*link].hash_next;
    if (*link == c.slot) *link = c.hash_next;
    c.hash_next = kNil;
    if (c.state == TcpState::kTimeWait) TwUnlink(c);
    if (c.counted_syn_backlog) {
      c.counted_syn_backlog = false;
      --syn_received_total;
      if (c.listener >= 0) --listeners[c.listener].syn_received;
    }
    c.reasm->Clear();
    c.in_use = false;
    ++c.generation;
    c.state = TcpState::kClosed;
    c.free_next = free_head;
    free_head = c.slot;
    --live;
  }

  void TwLink(Conn& c) {
    c.tw_next = kNil;
    c.tw_prev = tw_tail;
    if (tw_tail != kNil) conns[tw_tail].tw_next = c.slot;
    else tw_head = c.slot;
    tw_tail = c.slot;
    ++tw_count;
  }
  void TwUnlink(Conn& c) {
    if (c.tw_prev != kNil) conns[c.tw_prev].tw_next = c.tw_next;
    else tw_head = c.tw_next;
    if (c.tw_next != kNil) conns[c.tw_next].tw_prev = c.tw_prev;
    else tw_tail = c.tw_prev;
    c.tw_prev = c.tw_next = kNil;
    --tw_count;
  }

  // Ends the connection: tells the user (once), completes zero-copy sends as
  // not acknowledged, frees the slot.
  void CloseConn(Conn& c, CloseReason reason) {
    switch (reason) {
      case CloseReason::kNormal: ++stats.closed_normal; break;
      case CloseReason::kResetByPeer:
      case CloseReason::kRefused: ++stats.closed_reset; break;
      case CloseReason::kTimeout: ++stats.closed_timeout; break;
      case CloseReason::kAborted: ++stats.closed_aborted; break;
    }
    TcpUser* user = c.user;
    const ConnId id = IdOf(c);
    c.user = nullptr;
    // Zero-copy buffers go back to their owner.
    if (user != nullptr) {
      for (uint32_t i = 0; i < c.dcount; ++i) {
        const SendDesc& d = c.descs[(c.dhead + i) % c.dcap];
        if (d.zero_copy) user->OnSendComplete(id, d.cookie, false);
      }
    }
    c.dcount = 0;
    FreeConn(c);
    if (user != nullptr) user->OnClosed(id, reason);
  }

  // ================================================================ timers

  uint64_t Ticks(uint64_t us) const { return us / tick_us + (us % tick_us != 0 ? 1 : 0) + 1; }

  // Deadlines count from the caller's clock (now_us), not from the wheel's
  // last tick, so a caller that runs RunTimers rarely gets no early expiry.
  void ArmAt(Timer& t, uint64_t us) {
    wheel.Arm(t, std::max(now_us / tick_us, wheel.now()) + Ticks(us));
  }
  void ArmRtx(Conn& c, RtxKind kind, uint64_t us) {
    c.rtx_kind = kind;
    ArmAt(c.rtx_timer, us);
  }
  void CancelRtx(Conn& c) {
    wheel.Cancel(c.rtx_timer);
    c.rtx_kind = RtxKind::kNone;
  }
  void ArmKeepalive(Conn& c, uint64_t us) {
    if (opt.keepalive) ArmAt(c.keepalive_timer, us);
  }

  static void OnRtxTimer(Timer&, void* ctx) {
    Conn& c = *static_cast<Conn*>(ctx);
    c.stack->RtxExpired(c);
  }
  static void OnDelackTimer(Timer&, void* ctx) {
    Conn& c = *static_cast<Conn*>(ctx);
    ++c.stack->stats.delayed_acks;
    if (!c.quick_ack) {
      c.quick_ack = true;
      ++c.stack->stats.quick_ack_entries;
    }
    c.stack->SendAck(c);
  }
  static void OnKeepaliveTimer(Timer&, void* ctx) {
    Conn& c = *static_cast<Conn*>(ctx);
    c.stack->KeepaliveExpired(c);
  }

  // ================================================================ output

  uint32_t TsVal(const Conn& c) const {
    return static_cast<uint32_t>(now_us / 1000) + c.ts_offset;
  }

  // Our receive window, in bytes, and its right edge (RFC 9293 3.8.6.2.2:
  // never moved left; the right edge is rcv_consumed + buffer size).
  uint32_t RcvWindow(const Conn& c) const {
    const Seq32 edge = c.rcv_consumed + c.rbuf_cap;
    const int32_t w = edge - c.reasm->rcv_nxt();
    return w > 0 ? static_cast<uint32_t>(w) : 0;
  }

  // Emits one segment. `payload_len` bytes of queued data from `seq` (must be
  // available in the descriptors). Returns false when the data plane had no
  // buffer (the segment counts as sent and lost).
  bool Emit(Conn& c, Seq32 seq, uint8_t flags, uint32_t payload_len,
            std::span<const ByteSpan> gathered = {}) {
    uint8_t hdr[kMaxHeaderSize];
    uint8_t optbuf[kMaxOptionsSize];
    size_t optlen = 0;
    const bool syn = (flags & kFlagSyn) != 0;
    if (syn) {
      SynOptions so;
      so.mss = our_mss;
      // An active SYN offers everything enabled; a SYN-ACK answers what the
      // peer offered (RFC 7323 2.2, 3.2; RFC 2018 2).
      if (c.state == TcpState::kSynSent || c.wscale_on) so.window_scale = c.rcv_wscale;
      so.sack_permitted = c.state == TcpState::kSynSent ? opt.sack : c.sack_ok;
      const bool ts = c.state == TcpState::kSynSent ? opt.timestamps : c.ts_ok;
      if (ts) so.timestamps = Timestamps{TsVal(c), (flags & kFlagAck) ? c.ts_recent : 0};
      optlen = EncodeSynOptions(so, MutableByteSpan(optbuf)).size;
    } else if (flags & kFlagRst) {
      optlen = 0;
    } else {
      std::optional<Timestamps> ts;
      if (c.ts_ok) ts = Timestamps{TsVal(c), c.ts_recent};
      SackBlock blocks[kMaxSackBlocks];
      size_t nblocks = 0;
      if (c.sack_ok) {
        nblocks = c.reasm->SackBlocks(blocks);
        // RFC 9293 3.7.1, RFC 6691: options count against the MSS, so
        // options + payload stay within the smaller of the peer's MSS and
        // ours (our port's MTU); blocks that do not fit are left out of this
        // segment. EMSS already leaves the timestamps' room.
        const uint32_t room = c.emss + (c.ts_ok ? kTsOptionBytes : 0);
        while (nblocks > 0 && payload_len + (c.ts_ok ? kTsOptionBytes : 0) + 4 + 8 * nblocks > room) {
          --nblocks;
        }
      }
      optlen = EncodeAckOptions(ts, std::span<const SackBlock>(blocks, nblocks),
                                MutableByteSpan(optbuf)).size;
    }

    ByteSpan pieces[kMaxPieces];
    size_t npieces = 0;
    if (!gathered.empty()) {
      npieces = std::min(gathered.size(), kMaxPieces);
      std::copy(gathered.begin(), gathered.begin() + static_cast<std::ptrdiff_t>(npieces), pieces);
    } else if (payload_len > 0) {
      npieces = GatherPayload(c, seq, &payload_len, pieces);
    }

    SegmentHeader h;
    h.src_port = c.tuple.local_port;
    h.dst_port = c.tuple.remote_port;
    h.seq = seq;
    h.flags = flags;
    if (flags & kFlagAck) h.ack = c.reasm->rcv_nxt();
    uint32_t wnd = RcvWindow(c);
    if (syn) {
      h.window = static_cast<uint16_t>(std::min<uint32_t>(wnd, 0xFFFF));  // RFC 7323 2.2
    } else if (!(flags & kFlagRst)) {
      h.window = static_cast<uint16_t>(std::min<uint32_t>(wnd >> c.rcv_wscale, 0xFFFF));
    }
    const Ipv4Addresses addrs{c.tuple.local_addr, c.tuple.remote_addr};
    const std::span<const ByteSpan> payload(pieces, npieces);
    PayloadSum psum;
    if (out.SumsPayload()) {
      for (ByteSpan p : payload) psum.length += p.size();  // the output adds the sum
    } else {
      psum = SumPayload(payload);
    }
    const SegmentEncodeResult r =
        EncodeSegmentHeader(h, ByteSpan(optbuf, optlen), addrs, psum, MutableByteSpan(hdr));
    if (r.status != SegmentStatus::kOk) return false;  // cannot happen: sizes are ours
    if (flags & kFlagAck) {
      // Data leaving soon after data arrived is a reply: it carries the ACK,
      // so delaying ACKs pays again.
      if (payload_len > 0 && c.quick_ack && now_us - c.data_rx_us < opt.delayed_ack_us) {
        c.quick_ack = false;
      }
      c.last_ack_sent = h.ack;
      const Seq32 edge = h.ack + (syn ? uint32_t{h.window} : uint32_t{h.window} << c.rcv_wscale);
      if (edge > c.rcv_adv) c.rcv_adv = edge;
      c.unacked_segments = 0;
      c.ack_now = false;
      c.ack_held = false;  // this segment carries it
      wheel.Cancel(c.delack_timer);
    }
    ++stats.segments_out;
    ++c.counters.segments_out;
    if (flags & kFlagRst) ++stats.rsts_out;
    const bool ok =
        out.EmitSegment(c.tuple.local_addr, c.tuple.remote_addr, ByteSpan(hdr, r.size), payload);
    if (!ok) Drop(DropReason::kTcpTxNoBuffer);
    return ok;
  }

  // Collects the queued bytes [seq, seq + *len) as pieces; shortens *len if
  // more than kMaxPieces pieces would be needed.
  size_t GatherPayload(const Conn& c, Seq32 seq, uint32_t* len, ByteSpan* pieces) const {
    size_t n = 0;
    uint32_t need = *len;
    uint32_t got = 0;
    // The descriptors are contiguous in sequence order: the first one
    // ending after `seq` is found by bisection (zero-copy records add two
    // descriptors each, so a linear walk from the head cost one step per
    // queued FPDU for every segment sent).
    uint32_t lo = 0;
    uint32_t hi = c.dcount;
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      const SendDesc& d = c.descs[(c.dhead + mid) % c.dcap];
      if (d.seq + d.len > seq) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    for (uint32_t i = lo; i < c.dcount && need > 0 && n < kMaxPieces; ++i) {
      const SendDesc& d = c.descs[(c.dhead + i) % c.dcap];
      const uint32_t off = static_cast<uint32_t>(seq - d.seq);
      const uint32_t take = std::min(need, d.len - off);
      pieces[n++] = ByteSpan(d.data + off, take);
      seq = seq + take;
      need -= take;
      got += take;
    }
    *len = got;
    return n;
  }

  // RFC 9293 3.10.7.1: the RST answering a segment for no connection.
  void SendRstFor(uint32_t local_ip, uint32_t remote_ip, const Segment& seg) {
    SegmentHeader h;
    h.src_port = seg.header.dst_port;
    h.dst_port = seg.header.src_port;
    if (seg.header.Has(kFlagAck)) {
      h.seq = seg.header.ack;
      h.flags = kFlagRst;
    } else {
      uint32_t seg_len = static_cast<uint32_t>(seg.payload.size());
      if (seg.header.Has(kFlagSyn)) ++seg_len;
      if (seg.header.Has(kFlagFin)) ++seg_len;
      h.seq = Seq32(0);
      h.ack = seg.header.seq + seg_len;
      h.flags = kFlagRst | kFlagAck;
    }
    uint8_t hdr[kHeaderSize];
    const SegmentEncodeResult r = EncodeSegmentHeader(
        h, ByteSpan(), Ipv4Addresses{local_ip, remote_ip}, ByteSpan(), MutableByteSpan(hdr));
    if (r.status != SegmentStatus::kOk) return;
    ++stats.segments_out;
    ++stats.rsts_out;
    if (!out.EmitSegment(local_ip, remote_ip, ByteSpan(hdr, r.size), {})) {
      Drop(DropReason::kTcpTxNoBuffer);
    }
  }

  // Segments without data carry SND.MAX, not SND.NXT: after an RTO SND.NXT
  // is rewound to SND.UNA (go back N) and may lie below the peer's RCV.NXT,
  // where the peer would find the ACK unacceptable (RFC 9293 3.10.7.4) and
  // drop it; SND.MAX is never below the peer's RCV.NXT nor beyond its window.
  void SendAck(Conn& c) {
    ++stats.acks_out;
    Emit(c, c.snd_max, kFlagAck, 0);
  }

  void SendRst(Conn& c) { Emit(c, c.snd_max, kFlagRst | kFlagAck, 0); }

  // RFC 5961 7: challenge ACKs are rate limited per stack.
  void ChallengeAck(Conn& c) {
    if (now_us - challenge_epoch_us >= 1'000'000) {
      challenge_epoch_us = now_us;
      challenge_count = 0;
    }
    if (challenge_count >= opt.challenge_ack_limit) {
      ++stats.challenge_acks_suppressed;
      return;
    }
    ++challenge_count;
    ++stats.challenge_acks;
    SendAck(c);
  }

  // ================================================================ send path

  bool FinSent(const Conn& c) const { return c.fin_queued && c.snd_max > c.snd_end; }

  bool CanSendData(const Conn& c) const {
    return InStates(c.state, {TcpState::kEstablished, TcpState::kCloseWait, TcpState::kFinWait1,
                              TcpState::kClosing, TcpState::kLastAck});
  }

  uint32_t Cwnd(const Conn& c) const {
    return c.cc.With([](const auto& a) { return a.cwnd(); });
  }
  uint32_t Ssthresh(const Conn& c) const {
    return c.cc.With([](const auto& a) { return a.ssthresh(); });
  }

  // Largest record start r with from < r <= from + len, or from if none.
  // Records are sorted; binary search over the ring.
  Seq32 LastRecordStartIn(const Conn& c, Seq32 from, uint32_t len) const {
    uint32_t lo = 0, hi = c.rcount;  // first index with rec > from + len
    const Seq32 end = from + len;
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (c.recs[(c.rhead + mid) % c.rcap_recs] <= end) lo = mid + 1;
      else hi = mid;
    }
    if (lo == 0) return from;
    const Seq32 r = c.recs[(c.rhead + lo - 1) % c.rcap_recs];
    return r > from ? r : from;
  }

  // Payload length of the segment starting at `seq`: at most the EMSS and
  // `limit`; shortened so that it ends at a record start when a record would
  // otherwise straddle the next segment's start (RFC 5044 6 alignment).
  uint32_t SegmentLength(const Conn& c, Seq32 seq, uint32_t limit) const {
    const int32_t avail_s = c.snd_end - seq;
    if (avail_s <= 0) return 0;
    uint32_t len = std::min({static_cast<uint32_t>(avail_s), limit, c.emss});
    if (len == 0) return 0;
    if (seq + len == c.snd_end || c.rcount == 0) return len;
    const Seq32 r = LastRecordStartIn(c, seq, len);
    if (r > seq) len = static_cast<uint32_t>(r - seq);
    return len;
  }

  // Bytes in flight: RFC 6675 pipe during SACK recovery, else SND.NXT - SND.UNA.
  uint32_t Pipe(const Conn& c) const {
    if (!c.sack_recovery || c.nsacked == 0) return static_cast<uint32_t>(c.snd_max - c.snd_una);
    const Seq32 high_sack = c.sacked[c.nsacked - 1].right_edge;
    uint32_t pipe = c.snd_max > high_sack ? static_cast<uint32_t>(c.snd_max - high_sack) : 0;
    // Retransmitted hole bytes below high_rxt are in flight again.
    Seq32 pos = c.snd_una;
    for (uint32_t i = 0; i < c.nsacked && pos < c.high_rxt; ++i) {
      const Seq32 hole_end = std::min(c.sacked[i].left_edge, c.high_rxt);
      if (hole_end > pos) pipe += static_cast<uint32_t>(hole_end - pos);
      pos = c.sacked[i].right_edge;
    }
    return pipe;
  }

  // RFC 6675 NextSeg() (1): the first byte at or above high_rxt that is in a
  // hole below the highest SACKed byte. Returns the hole's extent.
  // RFC 6675 4 IsLost(): a hole counts as lost once more than
  // (DupThresh - 1) * SMSS bytes above it are SACKed.
  bool NextHole(const Conn& c, Seq32* start, uint32_t* len) const {
    Seq32 pos = std::max(c.snd_una, c.high_rxt);
    for (uint32_t i = 0; i < c.nsacked; ++i) {
      if (c.sacked[i].right_edge <= pos) continue;
      if (c.sacked[i].left_edge > pos) {
        uint32_t above = 0;
        for (uint32_t j = i; j < c.nsacked; ++j) {
          above += static_cast<uint32_t>(c.sacked[j].right_edge - c.sacked[j].left_edge);
        }
        if (above <= (kDupThresh - 1) * c.emss) return false;
        *start = pos;
        *len = static_cast<uint32_t>(c.sacked[i].left_edge - pos);
        return true;
      }
      pos = c.sacked[i].right_edge;
    }
    return false;
  }

  void StartRtxTimerIfIdle(Conn& c) {
    if (c.rtx_kind != RtxKind::kRetransmit || !c.rtx_timer.armed()) {
      ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
    }
  }

  // Sends one data segment [seq, seq + len) (+FIN if it ends the stream).
  void SendData(Conn& c, Seq32 seq, uint32_t len, bool retransmission) {
    uint8_t flags = kFlagAck;
    const bool fin = c.fin_queued && seq + len == c.snd_end;
    if (fin) flags |= kFlagFin;
    if (len > 0 && seq + len == c.snd_end) flags |= kFlagPsh;
    uint32_t sent_len = len;
    ByteSpan pieces[kMaxPieces];
    size_t npieces = 0;
    if (len > 0) {
      // GatherPayload may shorten the segment (too many pieces).
      npieces = GatherPayload(c, seq, &sent_len, pieces);
      if (sent_len < len) flags &= static_cast<uint8_t>(~(kFlagFin | kFlagPsh));
    }
    Emit(c, seq, flags, sent_len, std::span<const ByteSpan>(pieces, npieces));
    const Seq32 end = seq + sent_len + ((flags & kFlagFin) ? 1u : 0u);
    if (retransmission || seq < c.snd_max) {
      ++stats.retransmitted_segments;
      stats.retransmitted_bytes += sent_len;
      ++c.counters.retransmitted_segments;
      c.counters.retransmitted_bytes += sent_len;
      c.rtt_timing = false;  // Karn (RFC 6298 3)
    } else if (!c.rtt_timing && sent_len > 0) {
      c.rtt_timing = true;
      c.rtt_seq = end;
      c.rtt_start_us = now_us;
    }
    if (end > c.snd_max) c.snd_max = end;
    StartRtxTimerIfIdle(c);
  }

  // Transmits what the windows, Nagle and the recovery state allow.
  void TrySend(Conn& c) {
    if (!CanSendData(c)) return;
    for (int guard = 0; guard < 100000; ++guard) {
      // SACK recovery (RFC 6675 5 step C): holes first, within cwnd - pipe.
      if (c.sack_recovery) {
        const uint32_t pipe = Pipe(c);
        const uint32_t cwnd = Ssthresh(c);
        if (pipe + c.emss > cwnd && pipe != 0) return;
        Seq32 hs;
        uint32_t hl;
        if (NextHole(c, &hs, &hl)) {
          const uint32_t len = SegmentLength(c, hs, hl);
          if (len == 0) return;
          SendData(c, hs, len, true);
          c.high_rxt = hs + len;
          continue;
        }
      }
      if (c.snd_nxt < c.snd_max && !c.sack_recovery) {
        // After an RTO: go back N within cwnd, skipping SACKed ranges.
        const uint32_t flight = static_cast<uint32_t>(c.snd_nxt - c.snd_una);
        if (flight + 1 > Cwnd(c) && flight != 0) return;
        Seq32 s = c.snd_nxt;
        for (uint32_t i = 0; i < c.nsacked; ++i) {
          if (c.sacked[i].left_edge <= s && s < c.sacked[i].right_edge) s = c.sacked[i].right_edge;
        }
        if (s >= c.snd_max) {
          c.snd_nxt = c.snd_max;
          continue;
        }
        uint32_t lim = static_cast<uint32_t>(c.snd_max - s);
        for (uint32_t i = 0; i < c.nsacked; ++i) {
          if (c.sacked[i].left_edge > s) {
            lim = std::min(lim, static_cast<uint32_t>(c.sacked[i].left_edge - s));
            break;
          }
        }
        uint32_t len = SegmentLength(c, s, lim);
        if (len == 0 && !(c.fin_queued && s == c.snd_end)) return;
        SendData(c, s, len, true);
        c.snd_nxt = s + len + ((c.fin_queued && s + len == c.snd_end) ? 1u : 0u);
        continue;
      }
      // New data.
      const int32_t unsent = c.snd_end - c.snd_nxt;
      const bool fin_pending = c.fin_queued && !FinSent(c) && c.snd_nxt == c.snd_end;
      if (unsent <= 0 && !fin_pending) return;
      const uint32_t flight = c.sack_recovery ? Pipe(c) : static_cast<uint32_t>(c.snd_nxt - c.snd_una);
      uint32_t cwnd = c.sack_recovery ? Ssthresh(c) : Cwnd(c);
      // RFC 3042 limited transmit: on the first two duplicate ACKs one new
      // segment each may go out beyond cwnd (cwnd itself is unchanged).
      const bool in_cc_recovery = c.cc.With([](const auto& a) { return a.in_recovery(); });
      if (!c.sack_recovery && !in_cc_recovery && c.dup_acks > 0 && c.dup_acks < kDupThresh) {
        cwnd += c.dup_acks * c.emss;
      }
      const Seq32 wnd_edge = c.snd_una + std::min(c.snd_wnd, uint32_t{0x7FFFFFFF});
      uint32_t usable = wnd_edge > c.snd_nxt ? static_cast<uint32_t>(wnd_edge - c.snd_nxt) : 0;
      const uint32_t cwnd_room = cwnd > flight ? cwnd - flight : 0;
      usable = std::min(usable, cwnd_room);
      if (fin_pending) {
        if (cwnd_room == 0 && flight != 0) return;
        SendData(c, c.snd_nxt, 0, false);
        c.snd_nxt = c.snd_nxt + 1;
        return;
      }
      uint32_t len = SegmentLength(c, c.snd_nxt, usable);
      if (len == 0) {
        if (c.snd_wnd == 0 || (wnd_edge <= c.snd_nxt)) MaybeStartPersist(c);
        return;
      }
      // Sender SWS avoidance (RFC 9293 3.8.6.2.1) and Nagle (3.7.4).
      const uint32_t all = static_cast<uint32_t>(unsent);
      if (len < c.emss && len < all) {
        // Window-limited partial segment: only if it is at least half the
        // largest window the peer offered, or nothing is in flight.
        if (len < c.max_snd_wnd / 2 && flight != 0) return;
      }
      if (opt.nagle && len < c.emss && flight != 0) return;
      SendData(c, c.snd_nxt, len, false);
      c.snd_nxt = c.snd_nxt + len + ((c.fin_queued && c.snd_nxt + len == c.snd_end) ? 1u : 0u);
    }
  }

  void MaybeStartPersist(Conn& c) {
    if (c.snd_nxt == c.snd_una && c.snd_end > c.snd_nxt && c.rtx_kind != RtxKind::kPersist) {
      wheel.Cancel(c.rtx_timer);
      c.persist_backoff = 0;
      ArmRtx(c, RtxKind::kPersist, c.rto.rto_us());
    }
  }

  // ================================================================ timers

  void RtxExpired(Conn& c) {
    const RtxKind kind = c.rtx_kind;
    c.rtx_kind = RtxKind::kNone;
    switch (kind) {
      case RtxKind::kNone: return;
      case RtxKind::kTimeWait: FreeConn(c); return;  // the user was told on entry
      case RtxKind::kPersist: {
        // RFC 9293 3.8.6.1: probe the zero window with one byte.
        if (c.snd_wnd != 0 || !(c.snd_end > c.snd_una)) return;
        ++stats.window_probes;
        const Seq32 probe = c.snd_una;
        SendData(c, probe, 1, c.snd_max > probe);
        wheel.Cancel(c.rtx_timer);
        if (c.snd_nxt == c.snd_una) c.snd_nxt = c.snd_una + 1;
        c.persist_backoff = std::min<uint32_t>(c.persist_backoff + 1, 16);
        const uint64_t delay = std::min<uint64_t>(c.rto.rto_us() << c.persist_backoff,
                                                  opt.rto_max_us);
        ArmRtx(c, RtxKind::kPersist, delay);
        return;
      }
      case RtxKind::kRetransmit: break;
    }
    ++stats.timeouts;
    ++c.counters.timeouts;
    if (c.state == TcpState::kSynSent || c.state == TcpState::kSynReceived) {
      if (++c.syn_retries > opt.max_syn_retransmissions) {
        if (c.state == TcpState::kSynReceived) SendRst(c);
        CloseConn(c, CloseReason::kTimeout);
        return;
      }
      c.rto.OnTimeout();
      ++stats.retransmitted_segments;
      ++c.counters.retransmitted_segments;
      Emit(c, c.iss, c.state == TcpState::kSynSent ? kFlagSyn : (kFlagSyn | kFlagAck), 0);
      ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
      return;
    }
    if (c.snd_max == c.snd_una) return;  // nothing outstanding
    if (c.rto.backoff_count() >= opt.max_retransmissions) {
      SendRst(c);
      CloseConn(c, CloseReason::kTimeout);
      return;
    }
    c.rto.OnTimeout();
    const uint32_t flight = static_cast<uint32_t>(c.snd_max - c.snd_una);
    c.cc.With([&](auto& a) {
      a.OnRetransmitTimeout(c.snd_max, flight);
      return 0;
    });
    // RFC 6675 5.1: after an RTO the scoreboard is kept but the recovery
    // ends; RFC 2018 8: SACKed data may be reneged, so it is cleared.
    c.nsacked = 0;
    c.sack_recovery = false;
    c.dup_acks = 0;
    c.snd_nxt = c.snd_una;  // go back N (RFC 5681 3.1 retransmits from SND.UNA)
    c.rtt_timing = false;
    ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
    TrySend(c);
  }

  void KeepaliveExpired(Conn& c) {
    if (!InStates(c.state, {TcpState::kEstablished, TcpState::kCloseWait})) return;
    const uint64_t idle = now_us - c.last_rx_us;
    const uint64_t idle_limit = uint64_t{opt.keepalive_idle_s} * 1'000'000;
    if (idle < idle_limit && c.keepalive_sent == 0) {
      ArmKeepalive(c, idle_limit - idle);
      return;
    }
    if (c.keepalive_sent >= opt.keepalive_count) {
      SendRst(c);
      CloseConn(c, CloseReason::kTimeout);
      return;
    }
    // RFC 9293 3.8.4: a segment with SEG.SEQ = SND.NXT - 1 and no data.
    ++c.keepalive_sent;
    ++stats.keepalive_probes;
    Emit(c, c.snd_una - 1u, kFlagAck, 0);
    ArmKeepalive(c, uint64_t{opt.keepalive_interval_s} * 1'000'000);
  }

  // ================================================================ input

  // The stack's clock never goes back. Callers hand every entry point the
  // time they read, and a user may send from inside a callback with a time
  // older than the segment's (an engine that stamps its sends with its last
  // poll): RFC 7323 5.3 (PAWS) has the peer discard segments whose
  // timestamp went back, so TSval must not decrease.
  void SetNow(uint64_t t) {
    if (t > now_us) now_us = t;
  }

  void Input(uint32_t src_ip, uint32_t dst_ip, ByteSpan in, uint64_t now, ChecksumCheck check) {
    SetNow(now);
    Segment seg;
    const SegmentStatus st =
        ParseSegment(in, in.size(), Ipv4Addresses{src_ip, dst_ip}, check, &seg);
    if (st == SegmentStatus::kBadChecksum) return Drop(DropReason::kTcpBadChecksum);
    if (st != SegmentStatus::kOk) return Drop(DropReason::kTcpMalformed);
    if (!OwnsIp(dst_ip)) return Drop(DropReason::kTcpNotForUs);
    if (seg.header.src_port == 0 || seg.header.dst_port == 0) return Drop(DropReason::kTcpBadPort);
    Options o;
    if (ParseOptions(seg.options, seg.header.Has(kFlagSyn), &o) != OptionStatus::kOk) {
      return Drop(DropReason::kTcpBadOptions);
    }
    ++stats.segments_in;
    const FourTuple t{dst_ip, seg.header.dst_port, src_ip, seg.header.src_port};
    Conn* c = Lookup(t);
    if (c != nullptr && c->state == TcpState::kTimeWait && seg.header.Has(kFlagSyn) &&
        !seg.header.Has(kFlagAck) && !seg.header.Has(kFlagRst)) {
      // RFC 6191 2: a SYN for a 4-tuple in TIME-WAIT either opens a new
      // incarnation (the old one is released and the SYN goes to the
      // listener) or is an old duplicate, silently dropped while the old
      // incarnation stays in TIME-WAIT.
      if (!NewIncarnation(*c, seg, o)) return Drop(DropReason::kTcpTimeWaitOldSyn);
      ++stats.time_wait_reopened;
      FreeConn(*c);
      c = nullptr;
    }
    if (c == nullptr) return NoConnInput(t, seg, o);
    ++c->counters.segments_in;
    if (c->state == TcpState::kSynSent) return SynSentInput(*c, seg, o);
    return SynchronizedInput(*c, seg, o);
  }

  // RFC 6191 2: whether a SYN (no ACK, no RST) to TIME-WAIT connection `c`
  // belongs to a new incarnation. Timestamps decide when the old incarnation
  // used them and the new one would (TSval above TS.Recent, or equal with a
  // sequence number above); otherwise the sequence number does (above the
  // last one received, RCV.NXT; RFC 9293 3.10.7.4, RFC 1122 4.2.2.13), except
  // that a timestamped SYN after an incarnation without timestamps is new.
  bool NewIncarnation(const Conn& c, const Segment& seg, const Options& o) const {
    const bool ts_new = opt.timestamps && o.timestamps.has_value();
    const bool seq_above = seg.header.seq > c.reasm->rcv_nxt();
    if (c.ts_ok && ts_new) {
      const int32_t d = static_cast<int32_t>(o.timestamps->ts_val - c.ts_recent);
      return d > 0 || (d == 0 && seq_above);
    }
    if (!c.ts_ok && ts_new) return true;
    return seq_above;
  }

  int FindListener(uint16_t port) const {
    for (uint32_t i = 0; i < opt.max_listeners; ++i) {
      if (listeners[i].in_use && listeners[i].port == port) return static_cast<int>(i);
    }
    return -1;
  }

  void NoConnInput(const FourTuple& t, const Segment& seg, const Options& o) {
    const int li = FindListener(t.local_port);
    if (li < 0) {
      Drop(DropReason::kTcpNoConnection);
      if (!seg.header.Has(kFlagRst)) SendRstFor(t.local_addr, t.remote_addr, seg);
      return;
    }
    // RFC 9293 3.10.7.2, LISTEN.
    const SegmentHeader& h = seg.header;
    if (h.Has(kFlagRst)) return Drop(DropReason::kTcpListenBadFlags);
    if (h.Has(kFlagAck) && !h.Has(kFlagSyn)) {
      // Only while cookies we sent can still be valid (RFC 4987 3.6).
      if (opt.syn_cookies != SynCookieMode::kOff && cookies_sent_ever &&
          now_us - last_cookie_sent_us <= (kSynCookieMaxAge + 1) * kSynCookiePeriodMicros) {
        return CookieAck(li, t, seg, o);
      }
      Drop(DropReason::kTcpNoConnection);
      SendRstFor(t.local_addr, t.remote_addr, seg);
      return;
    }
    if (!h.Has(kFlagSyn) || h.Has(kFlagAck)) {
      if (h.Has(kFlagAck)) SendRstFor(t.local_addr, t.remote_addr, seg);
      return Drop(DropReason::kTcpListenBadFlags);
    }
    // Pressure: the backlog is full, or no slot is left for a new connection
    // (free or reclaimable from TIME-WAIT).
    const bool pressure = syn_received_total >= opt.syn_backlog ||
                          (free_head == kNil && tw_head == kNil);
    if (opt.syn_cookies == SynCookieMode::kAlways ||
        (pressure && opt.syn_cookies == SynCookieMode::kOnPressure)) {
      return SendCookieSynAck(t, seg, o);
    }
    if (pressure) return Drop(DropReason::kTcpSynBacklogFull);
    Conn* c = AllocConn(t);
    if (c == nullptr) return Drop(DropReason::kTcpTableFull);
    ++stats.passive_opens;
    c->passive = true;
    c->listener = li;
    c->counted_syn_backlog = true;
    ++syn_received_total;
    ++listeners[li].syn_received;
    c->iss = isn_gen.Isn(t, now_us);
    InitSendSeq(*c);
    ApplySynOptions(*c, seg, o);
    c->state = TcpState::kSynReceived;
    Emit(*c, c->iss, kFlagSyn | kFlagAck, 0);
    c->snd_nxt = c->iss + 1;
    c->snd_max = c->snd_nxt;
    ArmRtx(*c, RtxKind::kRetransmit, c->rto.rto_us());
  }

  void InitSendSeq(Conn& c) {
    c.snd_una = c.iss;
    c.snd_nxt = c.iss;
    c.snd_max = c.iss;
    c.snd_end = c.iss + 1;
    c.ts_offset = c.iss.value() * 2654435761u;
    c.high_rxt = c.iss;
  }

  // Options of the peer's SYN (RFC 9293 3.7.1, RFC 7323 2.2 / 3.2, RFC 2018 2),
  // and the receive side initialised at IRS + 1.
  void ApplySynOptions(Conn& c, const Segment& seg, const Options& o) {
    c.irs = seg.header.seq;
    c.peer_mss = o.mss.has_value() ? std::max<uint16_t>(*o.mss, 64) : kDefaultPeerMss;
    if (o.window_scale.has_value()) {
      c.snd_wscale = *o.window_scale;
      c.rcv_wscale = our_wscale;
      c.wscale_on = true;
    } else {
      c.snd_wscale = 0;
      c.rcv_wscale = 0;
      c.wscale_on = false;
    }
    c.sack_ok = opt.sack && o.sack_permitted;
    c.ts_ok = opt.timestamps && o.timestamps.has_value();
    if (c.ts_ok) c.ts_recent = o.timestamps->ts_val;
    c.emss = std::max<uint32_t>(
        std::min<uint32_t>(c.peer_mss, our_mss) - (c.ts_ok ? kTsOptionBytes : 0), 1);
    c.cc.Reset(opt.congestion_control, c.emss);
    c.snd_wnd = seg.header.window;  // RFC 7323 2.2: never scaled on a SYN
    c.max_snd_wnd = c.snd_wnd;
    c.snd_wl1 = seg.header.seq;
    c.snd_wl2 = seg.header.ack;
    c.rcv_consumed = c.irs + 1;
    c.rconsumed_idx = 0;
    c.reasm->Reset(c.irs + 1, c.rbuf_cap);
    c.rcv_adv = c.irs + 1;
  }

  void SendCookieSynAck(const FourTuple& t, const Segment& seg, const Options& o) {
    // RFC 4987 3.6: no state; the SYN-ACK carries only the MSS option, so
    // neither side uses window scale, SACK or timestamps on this connection.
    const uint16_t peer_mss = o.mss.value_or(kDefaultPeerMss);
    const Seq32 cookie = isn_gen.SynCookie(t, seg.header.seq, peer_mss, now_us);
    SegmentHeader h;
    h.src_port = t.local_port;
    h.dst_port = t.remote_port;
    h.seq = cookie;
    h.ack = seg.header.seq + 1;
    h.flags = kFlagSyn | kFlagAck;
    h.window = static_cast<uint16_t>(std::min<uint32_t>(opt.receive_buffer_bytes, 0xFFFF));
    uint8_t optbuf[8];
    SynOptions so;
    so.mss = our_mss;
    const size_t optlen = EncodeSynOptions(so, MutableByteSpan(optbuf)).size;
    uint8_t hdr[kMaxHeaderSize];
    const SegmentEncodeResult r =
        EncodeSegmentHeader(h, ByteSpan(optbuf, optlen), Ipv4Addresses{t.local_addr, t.remote_addr},
                            ByteSpan(), MutableByteSpan(hdr));
    if (r.status != SegmentStatus::kOk) return;
    ++stats.syn_cookies_sent;
    cookies_sent_ever = true;
    last_cookie_sent_us = now_us;
    ++stats.segments_out;
    if (!out.EmitSegment(t.local_addr, t.remote_addr, ByteSpan(hdr, r.size), {})) {
      Drop(DropReason::kTcpTxNoBuffer);
    }
  }

  void CookieAck(int li, const FourTuple& t, const Segment& seg, const Options& o) {
    const SynCookieResult cr =
        isn_gen.CheckSynCookie(t, seg.header.seq - 1u, seg.header.ack - 1u, now_us);
    if (cr.status != SynCookieStatus::kValid) {
      Drop(DropReason::kTcpBadSynCookie);
      SendRstFor(t.local_addr, t.remote_addr, seg);
      return;
    }
    Conn* c = AllocConn(t);
    if (c == nullptr) return Drop(DropReason::kTcpTableFull);
    ++stats.syn_cookies_accepted;
    ++stats.passive_opens;
    c->passive = true;
    c->listener = li;
    c->iss = seg.header.ack - 1u;
    InitSendSeq(*c);
    Segment syn = seg;
    syn.header.seq = seg.header.seq - 1u;
    Options so;
    so.mss = cr.mss;
    c->state = TcpState::kSynReceived;
    ApplySynOptions(*c, syn, so);
    c->snd_wscale = c->rcv_wscale = 0;
    c->snd_nxt = c->snd_max = c->iss + 1;
    // The ACK completes the handshake; process it as in SYN-RECEIVED.
    SynchronizedInput(*c, seg, o);
  }

  void SynSentInput(Conn& c, const Segment& seg, const Options& o) {
    // RFC 9293 3.10.7.3.
    const SegmentHeader& h = seg.header;
    if (h.Has(kFlagAck) && (h.ack <= c.iss || h.ack > c.snd_max)) {
      if (!h.Has(kFlagRst)) SendRstFor(c.tuple.local_addr, c.tuple.remote_addr, seg);
      return Drop(DropReason::kTcpSynSentBadAck);
    }
    if (h.Has(kFlagRst)) {
      // RFC 5961 3.2 / RFC 9293: only with an acceptable ACK.
      if (!h.Has(kFlagAck)) return Drop(DropReason::kTcpSynSentBadAck);
      ++stats.rsts_in;
      return CloseConn(c, CloseReason::kRefused);
    }
    if (!h.Has(kFlagSyn)) return Drop(DropReason::kTcpSynSentBadAck);
    ApplySynOptions(c, seg, o);
    c.last_rx_us = now_us;
    if (h.Has(kFlagAck)) {
      c.snd_una = h.ack;
      CancelRtx(c);
      c.rtt_timing = false;
      if (c.syn_retries == 0) c.rto.OnRttSample(now_us - c.rtt_start_us);
      c.snd_wl1 = h.seq;
      c.snd_wl2 = h.ack;
      c.state = TcpState::kEstablished;
      ++stats.established;
      SendAck(c);
      ArmKeepalive(c, uint64_t{opt.keepalive_idle_s} * 1'000'000);
      const uint32_t gen = c.generation;
      if (c.user != nullptr) c.user->OnConnected(IdOf(c));
      if (Alive(c, gen)) TrySend(c);
      return;
    }
    // Simultaneous open: SYN-RECEIVED, SYN,ACK with our ISS.
    c.state = TcpState::kSynReceived;
    Emit(c, c.iss, kFlagSyn | kFlagAck, 0);
    ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
  }

  // Sequence acceptability (RFC 9293 3.10.7.4, the four cases).
  bool Acceptable(const Conn& c, Seq32 seq, uint32_t seg_len) const {
    const Seq32 rcv_nxt = c.reasm->rcv_nxt();
    const uint32_t wnd = std::max<uint32_t>(RcvWindow(c), c.rcv_adv > rcv_nxt
                                                              ? static_cast<uint32_t>(c.rcv_adv - rcv_nxt)
                                                              : 0);
    if (seg_len == 0) {
      if (wnd == 0) return seq == rcv_nxt;
      return rcv_nxt <= seq && seq < rcv_nxt + wnd;
    }
    if (wnd == 0) return false;
    const Seq32 last = seq + (seg_len - 1);
    return (rcv_nxt <= seq && seq < rcv_nxt + wnd) || (rcv_nxt <= last && last < rcv_nxt + wnd);
  }

  void SynchronizedInput(Conn& c, const Segment& seg_in, const Options& o) {
    Segment seg = seg_in;
    if (c.state == TcpState::kSynReceived && seg.header.Has(kFlagSyn) &&
        seg.header.Has(kFlagAck) && seg.header.seq == c.irs) {
      // Simultaneous open (RFC 9293 3.5 figure 8): the peer's SYN,ACK repeats
      // its SYN; what is new is the ACK of ours.
      seg.header.flags = static_cast<uint8_t>(seg.header.flags & ~kFlagSyn);
      seg.header.seq = c.irs + 1;
    }
    const SegmentHeader& h = seg.header;
    const uint32_t gen = c.generation;
    uint32_t seg_len = static_cast<uint32_t>(seg.payload.size());
    if (h.Has(kFlagSyn)) ++seg_len;
    if (h.Has(kFlagFin)) ++seg_len;

    if (c.state == TcpState::kSynReceived && h.Has(kFlagSyn) && !h.Has(kFlagAck) &&
        h.seq == c.irs) {
      // Retransmitted SYN: answer with the SYN-ACK again.
      Emit(c, c.iss, kFlagSyn | kFlagAck, 0);
      return;
    }

    // RFC 7323 5.3 R1: PAWS.
    if (c.ts_ok && o.timestamps.has_value() && !h.Has(kFlagRst) &&
        static_cast<int32_t>(o.timestamps->ts_val - c.ts_recent) < 0) {
      Drop(DropReason::kTcpPaws);
      SendAck(c);
      return;
    }

    if (c.state == TcpState::kTimeWait) {
      // RFC 9293 3.10.7.4: everything the peer can still send is old (its
      // data and FIN are all received). An unacceptable segment is answered
      // with an ACK - the peer lost ours and retransmits; a retransmitted
      // FIN also restarts the 2 MSL timer. RSTs are ignored (RFC 1337).
      Drop(DropReason::kTcpTimeWait);
      if (h.Has(kFlagRst)) return;
      if (h.Has(kFlagFin)) {
        ArmRtx(c, RtxKind::kTimeWait, uint64_t{opt.time_wait_s} * 1'000'000);
      }
      if (seg_len > 0 || !Acceptable(c, h.seq, seg_len)) SendAck(c);
      return;
    }

    // First check: sequence number.
    const bool acceptable = Acceptable(c, h.seq, seg_len);
    if (!acceptable) {
      if (h.Has(kFlagRst)) return Drop(DropReason::kTcpRstOutOfWindow);
      // RFC 9293 3.10.7.4: with a zero receive window, valid ACKs are still
      // processed; only the data is refused.
      if (h.seq == c.reasm->rcv_nxt() && h.Has(kFlagAck) && !h.Has(kFlagSyn) &&
          c.state != TcpState::kSynReceived) {
        if (!ProcessAck(c, seg, o) || !Alive(c, gen)) return;
        TrySend(c);
        if (!Alive(c, gen)) return;
      }
      Drop(seg.payload.empty() ? DropReason::kTcpOutOfWindow
                               : (h.seq + static_cast<uint32_t>(seg.payload.size()) <=
                                          c.reasm->rcv_nxt()
                                      ? DropReason::kTcpDuplicateData
                                      : DropReason::kTcpOutOfWindow));
      // A duplicate gets a D-SACK (RFC 2883) through the reassembler; only
      // wholly old data goes there, so nothing is taken that the receive
      // ring does not hold.
      if (!seg.payload.empty() && c.sack_ok &&
          h.seq + static_cast<uint32_t>(seg.payload.size()) <= c.reasm->rcv_nxt()) {
        c.reasm->Insert(ReasmSegment{h.seq, seg.payload, false, 0});
        ++stats.dsacks_out;
      }
      SendAck(c);
      return;
    }
    c.last_rx_us = now_us;
    c.keepalive_sent = 0;

    // Second check: RST (RFC 5961 3.2).
    if (h.Has(kFlagRst)) {
      if (h.seq != c.reasm->rcv_nxt()) {
        Drop(DropReason::kTcpRstChallenged);
        ChallengeAck(c);
        return;
      }
      ++stats.rsts_in;
      if (c.state == TcpState::kSynReceived && c.passive && c.user == nullptr) {
        FreeConn(c);  // back to LISTEN: the listener never saw it
        return;
      }
      return CloseConn(c, c.state == TcpState::kSynReceived ? CloseReason::kRefused
                                                             : CloseReason::kResetByPeer);
    }

    // Fourth check: SYN in a synchronized state (RFC 5961 4.2).
    if (h.Has(kFlagSyn)) {
      Drop(DropReason::kTcpSynChallenged);
      ChallengeAck(c);
      return;
    }

    if (!h.Has(kFlagAck)) return Drop(DropReason::kTcpNoAck);

    // RFC 7323 4.3: TS.Recent from segments covering Last.ACK.sent.
    if (c.ts_ok && o.timestamps.has_value() && h.seq <= c.last_ack_sent) {
      c.ts_recent = o.timestamps->ts_val;
    }

    // Fifth check: ACK.
    if (c.state == TcpState::kSynReceived) {
      if (!(c.snd_una < h.ack && h.ack <= c.snd_max)) {
        Drop(DropReason::kTcpAckInvalid);
        SendRstFor(c.tuple.local_addr, c.tuple.remote_addr, seg);
        return;
      }
      if (!Establish(c, h)) return;
      if (!Alive(c, gen)) return;
    }
    if (!ProcessAck(c, seg, o)) return;
    if (!Alive(c, gen)) return;

    // Segment text and FIN.
    if (!seg.payload.empty() || h.Has(kFlagFin)) {
      if (!InStates(c.state, {TcpState::kEstablished, TcpState::kFinWait1, TcpState::kFinWait2})) {
        if (!seg.payload.empty() || !h.Has(kFlagFin)) Drop(DropReason::kTcpDataAfterClose);
        if (h.Has(kFlagFin)) SendAck(c);  // retransmitted FIN
      } else {
        ReceiveData(c, seg);
        if (!Alive(c, gen)) return;
        if (c.loop_bytes != 0) LoopReceive(c);
      }
    }
    TrySend(c);
    if (!Alive(c, gen)) return;
    if (c.ack_now) SendAck(c);
  }

  // SYN-RECEIVED -> ESTABLISHED. False if the connection went away.
  bool Establish(Conn& c, const SegmentHeader& h) {
    const uint32_t gen = c.generation;
    c.state = TcpState::kEstablished;
    ++stats.established;
    CancelRtx(c);
    c.snd_wnd = uint32_t{h.window} << c.snd_wscale;
    c.max_snd_wnd = std::max(c.max_snd_wnd, c.snd_wnd);
    c.snd_wl1 = h.seq;
    c.snd_wl2 = h.ack;
    ArmKeepalive(c, uint64_t{opt.keepalive_idle_s} * 1'000'000);
    if (c.counted_syn_backlog) {
      c.counted_syn_backlog = false;
      --syn_received_total;
      if (c.listener >= 0) --listeners[c.listener].syn_received;
    }
    if (c.passive && c.user == nullptr) {
      TcpUser* lu = (c.listener >= 0 && listeners[c.listener].in_use) ? listeners[c.listener].user
                                                                       : nullptr;
      TcpUser* u = lu != nullptr ? lu->OnAccept(IdOf(c), c.tuple) : nullptr;
      if (!Alive(c, gen)) return false;
      if (u == nullptr) {
        ++stats.listen_refused;
        SendRst(c);
        FreeConn(c);
        return false;
      }
      c.user = u;
    } else if (!c.passive && c.user != nullptr) {
      c.user->OnConnected(IdOf(c));  // simultaneous open
      if (!Alive(c, gen)) return false;
    }
    return true;
  }

  // Adds [l, r) to the SACK scoreboard (sorted, merged, above snd_una).
  void ScoreboardAdd(Conn& c, Seq32 l, Seq32 r) {
    if (l < c.snd_una) l = c.snd_una;
    if (r > c.snd_max) r = c.snd_max;
    if (!(l < r)) return;
    SackBlock merged{l, r};
    SackBlock tmp[kScoreboardBlocks + 1];
    uint32_t n = 0;
    bool placed = false;
    for (uint32_t i = 0; i < c.nsacked; ++i) {
      const SackBlock& b = c.sacked[i];
      if (b.right_edge < merged.left_edge) {
        tmp[n++] = b;
      } else if (merged.right_edge < b.left_edge) {
        if (!placed) tmp[n++] = merged, placed = true;
        tmp[n++] = b;
      } else {
        merged.left_edge = std::min(merged.left_edge, b.left_edge);
        merged.right_edge = std::max(merged.right_edge, b.right_edge);
      }
    }
    if (!placed) tmp[n++] = merged;
    // Full: forget the highest ranges (they are re-reported by the peer).
    n = std::min<uint32_t>(n, kScoreboardBlocks);
    std::copy(tmp, tmp + n, c.sacked);
    c.nsacked = n;
  }
  void ScoreboardPrune(Conn& c) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < c.nsacked; ++i) {
      SackBlock b = c.sacked[i];
      if (b.right_edge <= c.snd_una) continue;
      if (b.left_edge < c.snd_una) b.left_edge = c.snd_una;
      c.sacked[k++] = b;
    }
    c.nsacked = k;
  }
  uint32_t SackedBytes(const Conn& c) const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < c.nsacked; ++i) {
      n += static_cast<uint32_t>(c.sacked[i].right_edge - c.sacked[i].left_edge);
    }
    return n;
  }

  // Frees acknowledged send data up to `ack` and completes zero-copy sends.
  void ReleaseAcked(Conn& c, Seq32 ack) {
    const Seq32 data_ack = std::min(ack, c.snd_end);
    while (c.dcount > 0) {
      SendDesc& d = c.descs[c.dhead];
      if (!(d.seq < data_ack)) break;
      const uint32_t acked = std::min(static_cast<uint32_t>(data_ack - d.seq), d.len);
      if (!d.zero_copy) {
        c.shead = (c.shead + acked) % c.scap;
        c.sused -= acked;
      }
      c.counters.bytes_out += acked;
      stats.bytes_out += acked;
      if (acked == d.len) {
        const SendDesc done = d;
        c.dhead = (c.dhead + 1) % c.dcap;
        --c.dcount;
        if (done.zero_copy) {
          --c.zc_count;
          c.want_send_space = true;
          const uint32_t gen = c.generation;
          if (c.user != nullptr) c.user->OnSendComplete(IdOf(c), done.cookie, true);
          if (!Alive(c, gen)) return;
        }
      } else {
        d.seq = d.seq + acked;
        d.data += acked;
        d.len -= acked;
        break;
      }
    }
    while (c.rcount > 0 && c.recs[c.rhead] <= data_ack) {
      // A record starting at or below SND.UNA can no longer start a new
      // segment; keep none at or below it.
      c.rhead = (c.rhead + 1) % c.rcap_recs;
      --c.rcount;
    }
  }

  // ACK processing for synchronized states (RFC 9293 3.10.7.4 fifth check,
  // RFC 5961 5.2). Returns false if the segment must not be processed further.
  bool ProcessAck(Conn& c, const Segment& seg, const Options& o) {
    const SegmentHeader& h = seg.header;
    const uint32_t gen = c.generation;
    const Seq32 ack = h.ack;
    // RFC 5961 5.2: acceptable if SND.UNA - MAX.SND.WND <= SEG.ACK <= SND.NXT.
    if (ack > c.snd_max) {
      Drop(DropReason::kTcpAckInvalid);
      ChallengeAck(c);
      return false;
    }
    if (ack < c.snd_una - std::max(c.max_snd_wnd, uint32_t{1})) {
      Drop(DropReason::kTcpAckInvalid);
      ChallengeAck(c);
      return false;
    }
    const uint32_t new_wnd = uint32_t{h.window} << c.snd_wscale;

    // SACK scoreboard (RFC 2018, RFC 2883 4: a first block below SEG.ACK or
    // inside the second one is a D-SACK and not scoreboard information).
    if (c.sack_ok) {
      const auto blocks = o.sack();
      for (size_t i = 0; i < blocks.size(); ++i) {
        const SackBlock& b = blocks[i];
        if (!(b.left_edge < b.right_edge)) continue;
        if (b.right_edge <= ack) continue;
        if (i == 0 && blocks.size() > 1 && blocks[1].left_edge <= b.left_edge &&
            b.right_edge <= blocks[1].right_edge) {
          continue;
        }
        ScoreboardAdd(c, b.left_edge, b.right_edge);
      }
    }

    if (ack > c.snd_una) {
      const uint32_t acked = static_cast<uint32_t>(ack - c.snd_una);
      c.snd_una = ack;
      if (c.snd_nxt < c.snd_una) c.snd_nxt = c.snd_una;
      ScoreboardPrune(c);
      uint64_t rtt = kNoRttSample;
      if (c.rtt_timing && ack >= c.rtt_seq) {
        rtt = now_us - c.rtt_start_us;
        c.rtt_timing = false;
        c.rto.OnRttSample(rtt);
      } else if (c.ts_ok && c.rto.backoff_count() > 0 && o.timestamps.has_value() &&
                 o.timestamps->ts_ecr != 0) {
        // RFC 7323 4.1: the echoed timestamp names the segment, so the sample
        // is valid even for a retransmission (no Karn ambiguity). Used only
        // to end an RTO backoff, when no timed segment can give one; the
        // 1 ms clock is too coarse to feed SRTT otherwise.
        const int32_t ms = static_cast<int32_t>(TsVal(c) - o.timestamps->ts_ecr);
        if (ms >= 0 && ms < 600'000) {
          rtt = std::max<uint64_t>(uint64_t{static_cast<uint32_t>(ms)} * 1000, 1);
          c.rto.OnRttSample(rtt);
        }
      }
      const uint32_t flight = static_cast<uint32_t>(c.snd_max - c.snd_una);
      c.dup_acks = 0;
      if (c.sack_recovery) {
        if (ack >= c.recovery_point) {
          c.sack_recovery = false;
          c.cc.With([&](auto& a) {
            a.ExitRecovery(flight);
            return 0;
          });
        } else if (c.high_rxt < c.snd_una) {
          c.high_rxt = c.snd_una;
        }
      } else {
        const CcAction act = c.cc.With([&](auto& a) {
          return a.OnAck(CcAck{ack, acked, flight, now_us, rtt});
        });
        if (act == CcAction::kRetransmitNext) {
          // RFC 6582 3.2 step 3: partial ACK, resend the first unacked segment.
          const uint32_t len = SegmentLength(c, c.snd_una, c.emss);
          if (len > 0 || (c.fin_queued && c.snd_una == c.snd_end)) {
            SendData(c, c.snd_una, len, true);
          }
        }
      }
      ReleaseAcked(c, ack);
      if (!Alive(c, gen)) return false;
      // RFC 6298 5.2 / 5.3: restart or stop the retransmission timer.
      if (c.rtx_kind == RtxKind::kRetransmit || c.rtx_kind == RtxKind::kNone) {
        if (c.snd_max > c.snd_una) ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
        else CancelRtx(c);
      }
      c.persist_backoff = 0;
      // Our FIN acknowledged?
      if (c.fin_queued && c.snd_una > c.snd_end) {
        switch (c.state) {
          case TcpState::kFinWait1: c.state = TcpState::kFinWait2; break;
          case TcpState::kClosing: EnterTimeWait(c); return false;
          case TcpState::kLastAck: CloseConn(c, CloseReason::kNormal); return false;
          default: break;
        }
      }
    } else if (ack == c.snd_una && seg.payload.empty() && !h.Has(kFlagFin) &&
               c.snd_max > c.snd_una && new_wnd == c.snd_wnd && new_wnd != 0) {
      // RFC 5681 2: duplicate ACK.
      ++stats.dup_acks_in;
      ++c.dup_acks;
      if (c.sack_ok && c.nsacked > 0) {
        // RFC 6675 5: enter recovery on DupThresh duplicate ACKs or when
        // more than (DupThresh - 1) * SMSS bytes above SND.UNA are SACKed.
        if (!c.sack_recovery &&
            (c.dup_acks >= kDupThresh || SackedBytes(c) > (kDupThresh - 1) * c.emss) &&
            (!c.cc.With([](auto& a) { return a.has_recover(); }) ||
             ack > c.cc.With([](auto& a) { return a.recover(); }))) {
          const uint32_t flight = static_cast<uint32_t>(c.snd_max - c.snd_una);
          c.cc.With([&](auto& a) {
            a.EnterRecovery(c.snd_max, flight);
            return 0;
          });
          c.sack_recovery = true;
          c.recovery_point = c.snd_max;
          c.high_rxt = c.snd_una;
          ++stats.sack_recoveries;
          ++stats.fast_retransmits;
          ++c.counters.fast_retransmits;
          // RFC 6675 5 step (4.3): the first unacknowledged segment is
          // retransmitted at once, whatever pipe says.
          const uint32_t hole = c.nsacked > 0 && c.sacked[0].left_edge > c.snd_una
                                    ? static_cast<uint32_t>(c.sacked[0].left_edge - c.snd_una)
                                    : c.emss;
          const uint32_t len = SegmentLength(c, c.snd_una, hole);
          if (len > 0) {
            SendData(c, c.snd_una, len, true);
            c.high_rxt = c.snd_una + len;
          }
          ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
        }
      } else {
        const CcAction act = c.cc.With([&](auto& a) {
          return a.OnDupAck(ack, c.snd_max, static_cast<uint32_t>(c.snd_max - c.snd_una));
        });
        if (act == CcAction::kFastRetransmit) {
          ++stats.fast_retransmits;
          ++c.counters.fast_retransmits;
          const uint32_t len = SegmentLength(c, c.snd_una, c.emss);
          if (len > 0 || (c.fin_queued && c.snd_una == c.snd_end)) {
            SendData(c, c.snd_una, len, true);
          }
        }
      }
    }

    // Window update (RFC 9293 3.10.7.4: SND.WL1 / SND.WL2 rule).
    if (c.snd_wl1 < h.seq || (c.snd_wl1 == h.seq && c.snd_wl2 <= ack)) {
      const bool was_zero = c.snd_wnd == 0;
      c.snd_wnd = new_wnd;
      c.max_snd_wnd = std::max(c.max_snd_wnd, c.snd_wnd);
      c.snd_wl1 = h.seq;
      c.snd_wl2 = ack;
      if (was_zero && c.snd_wnd > 0 && c.rtx_kind == RtxKind::kPersist) {
        CancelRtx(c);
        if (c.snd_max > c.snd_una) ArmRtx(c, RtxKind::kRetransmit, c.rto.rto_us());
      }
    }

    // Send space became available?
    if (c.want_send_space && c.user != nullptr) {
      const size_t space = SendSpaceOf(c);
      if (space > 0) {
        c.want_send_space = false;
        c.user->OnSendSpace(IdOf(c), space);
        if (!Alive(c, gen)) return false;
      }
    }
    return true;
  }

  void EnterTimeWait(Conn& c) {
    if (c.state == TcpState::kTimeWait) return;
    wheel.Cancel(c.delack_timer);
    wheel.Cancel(c.keepalive_timer);
    TcpUser* user = c.user;
    const ConnId id = IdOf(c);
    c.user = nullptr;
    c.state = TcpState::kTimeWait;
    TwLink(c);
    ++stats.closed_normal;
    ArmRtx(c, RtxKind::kTimeWait, uint64_t{opt.time_wait_s} * 1'000'000);
    // The user sees the close now; the slot lingers in TIME-WAIT.
    if (user != nullptr) user->OnClosed(id, CloseReason::kNormal);
    if (tw_count > opt.max_time_wait && tw_head != kNil) {
      ++stats.time_wait_recycled;
      FreeConn(conns[tw_head]);
    }
  }

  // Copies the in-window bytes into the receive ring, runs the reassembler
  // and delivers in-order data to the user.
  void ReceiveData(Conn& c, const Segment& seg) {
    const uint32_t gen = c.generation;
    const SegmentHeader& h = seg.header;
    const uint32_t len = static_cast<uint32_t>(seg.payload.size());
    const Seq32 rcv_nxt0 = c.reasm->rcv_nxt();
    const Seq32 edge = c.rcv_consumed + c.rbuf_cap;
    Seq32 a = std::max(h.seq, rcv_nxt0);
    Seq32 b = h.seq + len;
    if (b > edge) b = edge;
    const bool fin_in_window = h.Has(kFlagFin) && h.seq + len <= edge;
    const bool was_ooo_state = c.reasm->held_segments() > 0;
    c.reasm->SetWindow(static_cast<uint32_t>(edge - rcv_nxt0));
    InsertResult last;
    bool any_ooo = false;
    bool direct = false;
    if (a < b && a == rcv_nxt0 && !was_ooo_state && c.rcv_consumed == rcv_nxt0 &&
        c.user != nullptr && !c.reasm->fin_received()) {
      // In-order fast path: nothing held, nothing unconsumed. The user reads
      // the bytes straight from the received segment; only what it leaves is
      // copied into the ring. The reassembler delivers this segment at once
      // (it is at RCV.NXT with nothing held), so it keeps no reference to the
      // input.
      direct = true;
      const uint32_t n = static_cast<uint32_t>(b - a);
      const ByteSpan in = seg.payload.subspan(static_cast<uint32_t>(a - h.seq), n);
      last = c.reasm->Insert(ReasmSegment{a, in, fin_in_window, 0});
      const size_t took =
          std::min<size_t>(c.user->OnData(IdOf(c), c.counters.bytes_in, in), n);
      if (!Alive(c, gen)) return;
      Consume(c, static_cast<uint32_t>(took));
      uint32_t done = static_cast<uint32_t>(took);
      uint32_t idx = c.rconsumed_idx;
      while (done < n) {
        const uint32_t chunk = std::min(n - done, c.rbuf_cap - idx);
        std::memcpy(c.rbuf + idx, in.data() + done, chunk);
        done += chunk;
        idx = (idx + chunk) % c.rbuf_cap;
      }
    } else if (a < b) {
      const uint32_t n = static_cast<uint32_t>(b - a);
      const uint32_t in_off = static_cast<uint32_t>(a - h.seq);
      const uint32_t ring_off = static_cast<uint32_t>(a - c.rcv_consumed);
      uint32_t idx = (c.rconsumed_idx + ring_off) % c.rbuf_cap;
      uint32_t done = 0;
      while (done < n) {
        const uint32_t chunk = std::min(n - done, c.rbuf_cap - idx);
        std::memcpy(c.rbuf + idx, seg.payload.data() + in_off + done, chunk);
        const bool last_piece = done + chunk == n;
        last = c.reasm->Insert(ReasmSegment{a + done, ByteSpan(c.rbuf + idx, chunk),
                                            last_piece && fin_in_window, 0});
        if (last.queued > 0) any_ooo = true;
        done += chunk;
        idx = (idx + chunk) % c.rbuf_cap;
      }
      if (any_ooo) {
        ++stats.ooo_segments;
        if (c.user != nullptr) {
          c.user->OnOutOfOrder(IdOf(c), StreamOffset(c, a), seg.payload.subspan(in_off, n));
          if (!Alive(c, gen)) return;
        }
      }
    } else if (fin_in_window) {
      last = c.reasm->Insert(ReasmSegment{h.seq + len, ByteSpan(), true, 0});
    }
    if (h.seq < rcv_nxt0 && len > 0) {
      // The part below RCV.NXT: reported as a D-SACK (RFC 2883 4).
      const uint32_t dup = std::min(static_cast<uint32_t>(rcv_nxt0 - h.seq), len);
      c.reasm->Insert(ReasmSegment{h.seq, seg.payload.first(dup), false, 0});
      if (c.sack_ok) ++stats.dsacks_out;
      Drop(DropReason::kTcpDuplicateData);
      c.ack_now = true;
    }
    if (len > 0 && h.seq + len > edge) Drop(DropReason::kTcpOutOfWindow);
    switch (last.drop) {
      case ReasmDrop::kSegmentCapacity:
      case ReasmDrop::kByteCapacity: Drop(DropReason::kTcpReasmFull); break;
      case ReasmDrop::kBeyondFin:
      case ReasmDrop::kFinConflict: Drop(DropReason::kTcpBeyondFin); break;
      default: break;
    }

    // Delayed ACK policy (RFC 5681 4.2, RFC 9293 3.8.6.3): an ACK for at
    // least every second full-sized segment. A coalesced frame (the peer's
    // TSO run arriving whole, LRO) counts as the segments it stands for, or a
    // lone 64 KiB frame would wait for the delayed-ACK timer while the peer
    // waits for its ACK.
    //
    // After the timer fired with no reply of ours to carry the ACK (a peer
    // streaming data, or one whose next message waits for this ACK, as an
    // RDMA sender whose completions wait for it does), the connection is in
    // quick-ACK mode (Conn::quick_ack): even a lone segment is acknowledged
    // at the end of its burst. 4 KiB Writes at MTU 9000 over vhost-user
    // sometimes settled into one 2-FPDU segment per timer tick (127 MiB/s
    // against 1100-1150 in the same run).
    const uint32_t full = std::max<uint32_t>(our_mss - (c.ts_ok ? kTsOptionBytes : 0), 1);
    c.unacked_segments += std::max<uint32_t>((len + full - 1) / full, 1);
    if (len > 0) c.data_rx_us = now_us;
    if (any_ooo || was_ooo_state || h.Has(kFlagFin)) {
      c.ack_now = true;
    } else if (c.unacked_segments >= 2 || opt.delayed_ack_us == 0 || c.quick_ack) {
      // In a receive burst the ACK for in-order data waits for the burst's
      // end: one cumulative ACK per burst, as a GRO-fed kernel receiver sends.
      // With delayed_ack_us 0 as well: the burst ends in the same poll, so
      // no ACK is late, and a bulk receiver stops acking every segment.
      if (in_burst) {
        HoldAck(c);
      } else {
        c.ack_now = true;
      }
    } else if (!c.delack_timer.armed()) {
      ArmAt(c.delack_timer, opt.delayed_ack_us);
    }

    if (!direct) {
      DeliverToUser(c);
      if (!Alive(c, gen)) return;
    }

    if (c.reasm->fin_delivered() && !c.peer_fin_reported) {
      c.peer_fin_reported = true;
      c.ack_now = true;
      bool time_wait = false;
      switch (c.state) {
        case TcpState::kEstablished: c.state = TcpState::kCloseWait; break;
        case TcpState::kFinWait1:
          if (c.fin_queued && c.snd_una > c.snd_end) time_wait = true;
          else c.state = TcpState::kClosing;
          break;
        case TcpState::kFinWait2: time_wait = true; break;
        default: break;
      }
      if (c.user != nullptr) {
        c.user->OnPeerFin(IdOf(c));
        if (!Alive(c, gen)) return;
      }
      if (time_wait) {
        SendAck(c);
        EnterTimeWait(c);
      }
    }
  }

  void HoldAck(Conn& c) {
    c.ack_held = true;
    if (c.on_burst_list) return;
    c.on_burst_list = true;
    burst_acks[n_burst_acks++] = c.slot;
  }

  uint64_t StreamOffset(const Conn& c, Seq32 s) const {
    return c.counters.bytes_in + static_cast<uint64_t>(static_cast<int64_t>(s - c.rcv_consumed));
  }

  // Offers unconsumed in-order bytes to the user.
  void DeliverToUser(Conn& c) {
    const uint32_t gen = c.generation;
    for (int i = 0; i < 2 && c.user != nullptr; ++i) {
      const Seq32 data_end = c.reasm->fin_delivered() ? c.reasm->rcv_nxt() - 1u : c.reasm->rcv_nxt();
      const int32_t avail = data_end - c.rcv_consumed;
      if (avail <= 0) return;
      const uint32_t chunk = std::min(static_cast<uint32_t>(avail), c.rbuf_cap - c.rconsumed_idx);
      const uint64_t off = c.counters.bytes_in;
      const size_t took =
          c.user->OnData(IdOf(c), off, ByteSpan(c.rbuf + c.rconsumed_idx, chunk));
      if (!Alive(c, gen)) return;
      Consume(c, static_cast<uint32_t>(std::min<size_t>(took, chunk)));
      if (took < chunk) return;
    }
  }

  void Consume(Conn& c, uint32_t n) {
    const uint32_t before = RcvWindow(c);
    c.rcv_consumed = c.rcv_consumed + n;
    c.rconsumed_idx = (c.rconsumed_idx + n) % c.rbuf_cap;
    c.counters.bytes_in += n;
    stats.bytes_in += n;
    // RFC 9293 3.8.6.2.2: announce the window when it grew by min(buffer/2,
    // MSS) past the edge last advertised.
    const uint32_t after = RcvWindow(c);
    const Seq32 new_edge = c.reasm->rcv_nxt() + after;
    // Only when the window the peer knows of has become small (receiver SWS
    // avoidance), so that consuming data does not trigger an ACK each time.
    const int32_t left = c.rcv_adv - c.reasm->rcv_nxt();
    if (after > before &&
        left < static_cast<int32_t>(std::min<uint32_t>(c.rbuf_cap / 2, 4u * our_mss)) &&
        new_edge - c.rcv_adv >= static_cast<int32_t>(std::min<uint32_t>(c.rbuf_cap / 2, our_mss))) {
      c.ack_now = true;
    }
  }

  // Test mode (TcpStack::AdoptEstablished): once all of one pass of
  // loop_bytes arrived in order and was consumed, the expected sequence
  // returns to irs + 1 (the ring position and the stream offsets the user
  // sees go on). Nothing can be held beyond the pass's end: a generator
  // replaying the same pass never sends those sequence numbers.
  void LoopReceive(Conn& c) {
    const Seq32 end = c.irs + 1u + c.loop_bytes;
    if (c.reasm->rcv_nxt() != end || c.rcv_consumed != end || c.reasm->held_segments() > 0 ||
        c.reasm->fin_received()) {
      return;
    }
    c.reasm->Reset(c.irs + 1u, c.rbuf_cap);
    c.rcv_consumed = c.irs + 1u;
    c.rcv_adv = c.rcv_adv - c.loop_bytes;
    c.snd_wl1 = c.irs;
    ++stats.test_loops;
  }

  size_t SendSpaceOf(const Conn& c) const {
    if (c.dcount + 2 > c.dcap) return 0;
    return c.scap - c.sused;
  }

  // Appends `data` to the send ring (the caller checked the space).
  void AppendCopy(Conn& c, ByteSpan data) { AppendRing(c, data.data(), data.size()); }

  // Appends `n` bytes at the ring's write position, copied from `src`, or
  // already written there when `src` is null (CommitRecord).
  void AppendRing(Conn& c, const uint8_t* src, size_t len) {
    uint32_t done = 0;
    const uint32_t n = static_cast<uint32_t>(len);
    while (done < n) {
      const uint32_t widx = (c.shead + c.sused) % c.scap;
      const uint32_t chunk = std::min(n - done, c.scap - widx);
      if (src != nullptr) std::memcpy(c.sbuf + widx, src + done, chunk);
      // Extend the last descriptor if it is ring memory ending at widx.
      SendDesc* last = c.dcount > 0 ? &c.descs[(c.dhead + c.dcount - 1) % c.dcap] : nullptr;
      if (last != nullptr && !last->zero_copy && last->data + last->len == c.sbuf + widx) {
        last->len += chunk;
      } else {
        SendDesc& d = c.descs[(c.dhead + c.dcount) % c.dcap];
        d = SendDesc{c.snd_end, chunk, c.sbuf + widx, 0, false};
        ++c.dcount;
      }
      c.sused += chunk;
      c.snd_end = c.snd_end + chunk;
      done += chunk;
    }
  }

  // Queues `data` by reference (the caller checked zc_count and dcap).
  void AppendZeroCopy(Conn& c, ByteSpan data, uint64_t cookie) {
    SendDesc& d = c.descs[(c.dhead + c.dcount) % c.dcap];
    d = SendDesc{c.snd_end, static_cast<uint32_t>(data.size()), data.data(), cookie, true};
    ++c.dcount;
    ++c.zc_count;
    c.snd_end = c.snd_end + static_cast<uint32_t>(data.size());
  }

  bool AddRecord(Conn& c) {
    if (c.rcount == c.rcap_recs) return false;
    c.recs[(c.rhead + c.rcount) % c.rcap_recs] = c.snd_end;
    ++c.rcount;
    return true;
  }

  bool SendOpen(const Conn& c) const {
    return InStates(c.state, {TcpState::kEstablished, TcpState::kCloseWait}) && !c.fin_queued;
  }
};

// ==================================================================== TcpStack

TcpStack::TcpStack(const TcpOptions& options) : options_(options) {}

TcpStack::~TcpStack() = default;

absl::StatusOr<std::unique_ptr<TcpStack>> TcpStack::Create(const TcpOptions& given,
                                                           std::span<const uint32_t> local_ips,
                                                           TcpOutput& output,
                                                           const IsnGenerator& isn,
                                                           uint64_t now_us) {
  TcpOptions o = given;
  o.max_send_records = EffectiveMaxSendRecords(o.max_send_records, o.send_buffer_bytes);
  auto bad = [](const char* field, const char* why) {
    return absl::InvalidArgumentError(absl::StrCat("tcp option ", field, ": ", why));
  };
  if (o.max_connections == 0 || o.max_connections > (1u << 24)) {
    return bad("max_connections", "must be 1..16777216");
  }
  if (o.max_listeners == 0 || o.max_listeners > 4096) return bad("max_listeners", "must be 1..4096");
  if (o.mtu < 576 || o.mtu > 9216) return bad("mtu", "must be 576..9216");
  if (o.mss != 0 && (o.mss < 64 || o.mss > o.mtu - 40)) return bad("mss", "must be 64..mtu-40");
  if (o.send_buffer_bytes < 1024 || o.send_buffer_bytes > (1u << 30)) {
    return bad("send_buffer_bytes", "must be 1 KiB..1 GiB");
  }
  if (o.receive_buffer_bytes < 1024 || o.receive_buffer_bytes > (1u << 30)) {
    return bad("receive_buffer_bytes", "must be 1 KiB..1 GiB");
  }
  if (o.window_scale < -1 || o.window_scale > kMaxWindowScale) {
    return bad("window_scale", "must be -1 (auto) or 0..14");
  }
  if (o.window_scale >= 0 && (uint64_t{0xFFFF} << o.window_scale) < o.receive_buffer_bytes &&
      o.receive_buffer_bytes > 0xFFFF) {
    return bad("window_scale", "too small for receive_buffer_bytes");
  }
  if (o.max_ooo_segments == 0) return bad("max_ooo_segments", "must be at least 1");
  if (o.timer_tick_us == 0) return bad("timer_tick_us", "must be positive");
  if (o.rto_min_us == 0 || o.rto_max_us < o.rto_min_us) return bad("rto_min_us/rto_max_us", "need 0 < min <= max");
  if (o.rto_initial_us < o.rto_min_us || o.rto_initial_us > o.rto_max_us) {
    return bad("rto_initial_us", "must lie in [rto_min_us, rto_max_us]");
  }
  if (o.ephemeral_port_min == 0 || o.ephemeral_port_max < o.ephemeral_port_min) {
    return bad("ephemeral_port_min/max", "need 0 < min <= max");
  }
  if (o.keepalive && (o.keepalive_interval_s == 0 || o.keepalive_count == 0)) {
    return bad("keepalive_interval_s/count", "must be positive when keepalive is on");
  }
  if (local_ips.empty() || local_ips.size() > 16) return bad("local_ips", "need 1..16 addresses");

  std::unique_ptr<TcpStack> s(new TcpStack(o));
  s->impl_ = std::make_unique<Impl>(*s, s->options_, s->stats_, output, isn, now_us);
  Impl& m = *s->impl_;
  for (size_t i = 0; i < local_ips.size(); ++i) m.local_ips[i] = local_ips[i];
  m.n_local_ips = local_ips.size();
  m.our_mss = o.mss != 0 ? o.mss : static_cast<uint16_t>(o.mtu - 40);
  if (o.window_scale >= 0) {
    m.our_wscale = static_cast<uint8_t>(o.window_scale);
  } else {
    uint8_t w = 0;
    while (w < kMaxWindowScale && (uint64_t{0xFFFF} << w) < o.receive_buffer_bytes) ++w;
    m.our_wscale = w;
  }
  m.tick_us = o.timer_tick_us;
  const uint32_t n = o.max_connections;
  m.conns = std::make_unique<Impl::Conn[]>(n);
  m.burst_acks = std::make_unique<uint32_t[]>(n);
  const size_t send_bytes = size_t{n} * o.send_buffer_bytes;
  const MutableByteSpan provided = output.SendMemory(n, o.send_buffer_bytes);
  uint8_t* send_base = provided.data();
  m.output_send_memory = send_base != nullptr && provided.size() >= send_bytes;
  if (!m.output_send_memory) {
    m.send_mem.reset(new uint8_t[send_bytes]);
    send_base = m.send_mem.get();
  }
  m.recv_mem.reset(new uint8_t[size_t{n} * o.receive_buffer_bytes]);
  const uint32_t dcap = 2 * o.max_zero_copy_sends + 8;
  m.desc_mem = std::make_unique<SendDesc[]>(size_t{n} * dcap);
  m.rec_mem = std::make_unique<Seq32[]>(size_t{n} * o.max_send_records);
  m.reasm_mem = std::make_unique<std::optional<Reassembler>[]>(n);
  uint32_t nb = 1;
  while (nb < 2 * n) nb <<= 1;
  m.buckets = std::make_unique<uint32_t[]>(nb);
  std::fill(m.buckets.get(), m.buckets.get() + nb, kNil);
  m.bucket_mask = nb - 1;
  m.listeners = std::make_unique<Impl::Listener[]>(o.max_listeners);
  ReasmConfig rc;
  rc.max_segments = o.max_ooo_segments;
  rc.max_bytes = o.receive_buffer_bytes;
  rc.window = o.receive_buffer_bytes;
  for (uint32_t i = n; i-- > 0;) {
    Impl::Conn& c = m.conns[i];
    c.stack = &m;
    c.slot = i;
    c.sbuf = send_base + size_t{i} * o.send_buffer_bytes;
    c.scap = o.send_buffer_bytes;
    c.rbuf = m.recv_mem.get() + size_t{i} * o.receive_buffer_bytes;
    c.rbuf_cap = o.receive_buffer_bytes;
    c.descs = m.desc_mem.get() + size_t{i} * dcap;
    c.dcap = dcap;
    c.recs = m.rec_mem.get() + size_t{i} * o.max_send_records;
    c.rcap_recs = o.max_send_records;
    m.reasm_mem[i].emplace(rc, Seq32(0), m.null_sink);
    c.reasm = &*m.reasm_mem[i];
    c.rtx_timer.Init(&Impl::OnRtxTimer, &c);
    c.delack_timer.Init(&Impl::OnDelackTimer, &c);
    c.keepalive_timer.Init(&Impl::OnKeepaliveTimer, &c);
    c.free_next = m.free_head;
    m.free_head = i;
  }
  m.next_ephemeral = o.ephemeral_port_min;
  return s;
}

absl::Status TcpStack::Listen(uint16_t port, TcpUser& user) {
  if (port == 0) return absl::InvalidArgumentError("tcp listen: port 0");
  Impl& m = *impl_;
  if (m.FindListener(port) >= 0) {
    return absl::AlreadyExistsError(absl::StrCat("tcp listen: port ", port, " already listening"));
  }
  for (uint32_t i = 0; i < options_.max_listeners; ++i) {
    if (!m.listeners[i].in_use) {
      m.listeners[i] = Impl::Listener{true, port, &user, 0};
      return absl::OkStatus();
    }
  }
  return absl::ResourceExhaustedError("tcp listen: max_listeners reached");
}

absl::Status TcpStack::Unlisten(uint16_t port) {
  Impl& m = *impl_;
  const int li = m.FindListener(port);
  if (li < 0) return absl::NotFoundError(absl::StrCat("tcp unlisten: port ", port, " not listening"));
  for (uint32_t i = 0; i < options_.max_connections; ++i) {
    Impl::Conn& c = m.conns[i];
    if (c.in_use && c.listener == li && c.state == TcpState::kSynReceived && c.user == nullptr) {
      m.SendRst(c);
      m.FreeConn(c);
    }
    if (c.in_use && c.listener == li) c.listener = -1;
  }
  m.listeners[li] = Impl::Listener();
  return absl::OkStatus();
}

void TcpStack::SetPortFilter(PortFilter filter, void* context) {
  impl_->port_filter = filter;
  impl_->port_filter_ctx = context;
}

absl::StatusOr<ConnId> TcpStack::Connect(uint32_t local_ip, uint32_t remote_ip,
                                         uint16_t remote_port, TcpUser& user,
                                         uint16_t local_port, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  if (!m.OwnsIp(local_ip)) return absl::InvalidArgumentError("tcp connect: local address not ours");
  if (remote_port == 0) return absl::InvalidArgumentError("tcp connect: remote port 0");
  FourTuple t{local_ip, local_port, remote_ip, remote_port};
  if (local_port == 0) {
    const uint32_t range = uint32_t{options_.ephemeral_port_max} - options_.ephemeral_port_min + 1;
    bool found = false;
    for (uint32_t i = 0; i < range; ++i) {
      uint16_t p = m.next_ephemeral;
      m.next_ephemeral = p >= options_.ephemeral_port_max ? options_.ephemeral_port_min
                                                          : static_cast<uint16_t>(p + 1);
      t.local_port = p;
      if (m.FindListener(p) >= 0 || m.Lookup(t) != nullptr) continue;
      if (m.port_filter != nullptr && !m.port_filter(m.port_filter_ctx, t)) continue;
      found = true;
      break;
    }
    if (!found) return absl::ResourceExhaustedError("tcp connect: no ephemeral port");
  } else if (Impl::Conn* old = m.Lookup(t)) {
    if (old->state != TcpState::kTimeWait) {
      return absl::AlreadyExistsError("tcp connect: 4-tuple in use");
    }
    m.FreeConn(*old);
  }
  Impl::Conn* c = m.AllocConn(t);
  if (c == nullptr) return absl::ResourceExhaustedError("tcp connect: connection table full");
  ++stats_.active_opens;
  c->user = &user;
  c->iss = m.isn_gen.Isn(t, now_us);
  m.InitSendSeq(*c);
  c->rcv_wscale = m.our_wscale;
  c->rcv_consumed = Seq32(0);
  c->reasm->Reset(Seq32(0), c->rbuf_cap);
  c->state = TcpState::kSynSent;
  c->cc.Reset(options_.congestion_control, c->emss);
  c->rtt_start_us = now_us;
  m.Emit(*c, c->iss, kFlagSyn, 0);
  c->snd_nxt = c->iss + 1;
  c->snd_max = c->snd_nxt;
  m.ArmRtx(*c, RtxKind::kRetransmit, c->rto.rto_us());
  return Impl::IdOf(*c);
}

absl::StatusOr<ConnId> TcpStack::AdoptEstablished(const FourTuple& t, Seq32 iss, Seq32 irs,
                                                  uint16_t peer_window, uint32_t loop_bytes,
                                                  TcpUser& user, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  if (!m.OwnsIp(t.local_addr)) return absl::InvalidArgumentError("tcp adopt: local address not ours");
  if (t.local_port == 0 || t.remote_port == 0) return absl::InvalidArgumentError("tcp adopt: port 0");
  if (loop_bytes > (1u << 30)) return absl::InvalidArgumentError("tcp adopt: loop_bytes over 1 GiB");
  if (Impl::Conn* old = m.Lookup(t)) {
    if (old->state != TcpState::kTimeWait) return absl::AlreadyExistsError("tcp adopt: 4-tuple in use");
    m.FreeConn(*old);
  }
  Impl::Conn* c = m.AllocConn(t);
  if (c == nullptr) return absl::ResourceExhaustedError("tcp adopt: connection table full");
  c->user = &user;
  c->iss = iss;
  m.InitSendSeq(*c);
  c->snd_una = iss + 1u;
  c->snd_nxt = iss + 1u;
  c->snd_max = iss + 1u;
  // As if the peer's SYN had carried no options: no window scale, SACK or
  // timestamps; its MSS is taken to be ours.
  Segment syn;
  syn.header.seq = irs;
  syn.header.ack = iss + 1u;
  syn.header.window = peer_window;
  Options o;
  o.mss = m.our_mss;
  m.ApplySynOptions(*c, syn, o);
  c->last_rx_us = now_us;
  c->loop_bytes = loop_bytes;
  c->state = TcpState::kEstablished;
  ++stats_.established;
  ++stats_.test_adopted;
  return Impl::IdOf(*c);
}

void TcpStack::Input(uint32_t src_ip, uint32_t dst_ip, ByteSpan tcp_segment, uint64_t now_us,
                     ChecksumCheck check) {
  impl_->Input(src_ip, dst_ip, tcp_segment, now_us, check);
}

void TcpStack::BeginBurst() { impl_->in_burst = true; }

void TcpStack::EndBurst(uint64_t now_us) {
  Impl& m = *impl_;
  m.in_burst = false;
  m.SetNow(now_us);
  for (uint32_t i = 0; i < m.n_burst_acks; ++i) {
    Impl::Conn& c = m.conns[m.burst_acks[i]];
    c.on_burst_list = false;
    // Clear when an ACK-bearing segment went out meanwhile or the slot was
    // reused (AllocConn clears it).
    if (!c.in_use || !c.ack_held) continue;
    c.ack_held = false;
    if (c.state != TcpState::kTimeWait && c.state != TcpState::kSynSent) m.SendAck(c);
  }
  m.n_burst_acks = 0;
}

void TcpStack::RunTimers(uint64_t now_us) {
  impl_->SetNow(now_us);
  impl_->wheel.Advance(impl_->now_us / impl_->tick_us);
}

std::optional<uint64_t> TcpStack::NextTimerUs() const {
  const std::optional<uint64_t> tick = impl_->wheel.next_expiry();
  if (!tick.has_value()) return std::nullopt;
  return *tick * impl_->tick_us;
}

size_t TcpStack::Send(ConnId id, ByteSpan data, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) {
    last_send_status_ = SendStatus::kBadConn;
    return 0;
  }
  if (!m.SendOpen(*c)) {
    last_send_status_ = SendStatus::kNotConnected;
    return 0;
  }
  const size_t n = std::min(data.size(), m.SendSpaceOf(*c));
  last_send_status_ = n < data.size() ? SendStatus::kNoSpace : SendStatus::kOk;
  if (n < data.size()) c->want_send_space = true;
  if (n == 0) return 0;
  m.AppendCopy(*c, data.first(n));
  m.TrySend(*c);
  return n;
}

SendStatus TcpStack::SendRecord(ConnId id, ByteSpan record, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return last_send_status_ = SendStatus::kBadConn;
  if (!m.SendOpen(*c)) return last_send_status_ = SendStatus::kNotConnected;
  if (record.size() > m.SendSpaceOf(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kNoSpace;
  }
  if (!m.AddRecord(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  m.AppendCopy(*c, record);
  m.TrySend(*c);
  return last_send_status_ = SendStatus::kOk;
}

MutableByteSpan TcpStack::ReserveRecord(ConnId id, size_t len) {
  Impl& m = *impl_;
  Impl::Conn* c = m.Get(id);
  if (c == nullptr || len == 0 || !m.SendOpen(*c) || len > m.SendSpaceOf(*c) ||
      c->rcount == c->rcap_recs) {
    return MutableByteSpan();
  }
  const uint32_t widx = (c->shead + c->sused) % c->scap;
  if (len > c->scap - widx) return MutableByteSpan();  // would wrap
  return MutableByteSpan(c->sbuf + widx, len);
}

SendStatus TcpStack::CommitRecord(ConnId id, size_t len, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return last_send_status_ = SendStatus::kBadConn;
  if (!m.SendOpen(*c)) return last_send_status_ = SendStatus::kNotConnected;
  const uint32_t widx = (c->shead + c->sused) % c->scap;
  if (len == 0 || len > m.SendSpaceOf(*c) || len > c->scap - widx) {
    return last_send_status_ = SendStatus::kNoSpace;  // not what ReserveRecord gave
  }
  if (!m.AddRecord(*c)) return last_send_status_ = SendStatus::kTooManyRecords;
  m.AppendRing(*c, nullptr, len);
  m.TrySend(*c);
  return last_send_status_ = SendStatus::kOk;
}

SendStatus TcpStack::SendZeroCopy(ConnId id, ByteSpan data, uint64_t cookie, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return last_send_status_ = SendStatus::kBadConn;
  if (!m.SendOpen(*c)) return last_send_status_ = SendStatus::kNotConnected;
  if (data.empty()) return last_send_status_ = SendStatus::kOk;
  if (c->zc_count >= options_.max_zero_copy_sends || c->dcount + 2 > c->dcap ||
      data.size() > (1u << 30)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  if (!m.AddRecord(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  m.AppendZeroCopy(*c, data, cookie);
  m.TrySend(*c);
  return last_send_status_ = SendStatus::kOk;
}

SendStatus TcpStack::SendRecordZeroCopy(ConnId id, ByteSpan head, ByteSpan data, ByteSpan tail,
                                        uint64_t cookie, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return last_send_status_ = SendStatus::kBadConn;
  if (!m.SendOpen(*c)) return last_send_status_ = SendStatus::kNotConnected;
  // Descriptors: head and tail may each wrap the ring (two each), plus the
  // referenced bytes; SendSpaceOf keeps two more free. Without referenced
  // bytes it is an ordinary record of head and tail.
  if (!data.empty() && (c->zc_count >= options_.max_zero_copy_sends || c->dcount + 7 > c->dcap ||
                        data.size() > (1u << 30))) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  if (head.size() + tail.size() > m.SendSpaceOf(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kNoSpace;
  }
  if (!m.AddRecord(*c)) {
    c->want_send_space = true;
    return last_send_status_ = SendStatus::kTooManyRecords;
  }
  m.AppendCopy(*c, head);
  if (!data.empty()) m.AppendZeroCopy(*c, data, cookie);
  m.AppendCopy(*c, tail);
  m.TrySend(*c);
  return last_send_status_ = SendStatus::kOk;
}

bool TcpStack::ZeroCopyReferences(ConnId id, ByteSpan range) const {
  const Impl::Conn* c = impl_->Get(id);
  if (c == nullptr || c->zc_count == 0 || range.empty()) return false;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(range.data());
  const uintptr_t hi = lo + range.size();
  for (uint32_t i = 0; i < c->dcount; ++i) {
    const SendDesc& d = c->descs[(c->dhead + i) % c->dcap];
    if (!d.zero_copy) continue;
    const uintptr_t a = reinterpret_cast<uintptr_t>(d.data);
    if (a < hi && lo < a + d.len) return true;
  }
  return false;
}

size_t TcpStack::SendSpace(ConnId id) const {
  const Impl::Conn* c = impl_->Get(id);
  if (c == nullptr || !impl_->SendOpen(*c)) return 0;
  return impl_->SendSpaceOf(*c);
}

void TcpStack::ConsumeReceived(ConnId id, size_t bytes, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr || c->user == nullptr) return;  // closed for the user (TIME-WAIT)
  const Seq32 data_end = c->reasm->fin_delivered() ? c->reasm->rcv_nxt() - 1u : c->reasm->rcv_nxt();
  const int32_t avail = data_end - c->rcv_consumed;
  if (avail <= 0) return;
  m.Consume(*c, static_cast<uint32_t>(std::min<size_t>(bytes, static_cast<uint32_t>(avail))));
  if (c->loop_bytes != 0) m.LoopReceive(*c);
  if (c->ack_now && c->state != TcpState::kTimeWait && c->state != TcpState::kSynSent) {
    m.SendAck(*c);
  }
}

void TcpStack::DeliverPending(ConnId id, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr || c->user == nullptr) return;
  const uint32_t gen = c->generation;
  m.DeliverToUser(*c);
  if (Impl::Alive(*c, gen) && c->ack_now) m.SendAck(*c);
}

void TcpStack::Shutdown(ConnId id, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr || c->fin_queued) return;
  switch (c->state) {
    case TcpState::kSynSent:
      m.CloseConn(*c, CloseReason::kNormal);
      return;
    case TcpState::kSynReceived:
    case TcpState::kEstablished: c->state = TcpState::kFinWait1; break;
    case TcpState::kCloseWait: c->state = TcpState::kLastAck; break;
    default: return;
  }
  c->fin_queued = true;
  m.TrySend(*c);
}

void TcpStack::Abort(ConnId id, uint64_t now_us) {
  Impl& m = *impl_;
  m.SetNow(now_us);
  Impl::Conn* c = m.Get(id);
  if (c == nullptr) return;
  if (c->state != TcpState::kSynSent && c->state != TcpState::kTimeWait) m.SendRst(*c);
  m.CloseConn(*c, CloseReason::kAborted);
}

bool TcpStack::SetUser(ConnId id, TcpUser& user) {
  Impl::Conn* c = impl_->Get(id);
  if (c == nullptr || c->user == nullptr) return false;
  c->user = &user;
  return true;
}

uint32_t TcpStack::Emss(ConnId id) const {
  const Impl::Conn* c = impl_->Get(id);
  return c == nullptr ? 0 : c->emss;
}

TcpState TcpStack::State(ConnId id) const {
  const Impl::Conn* c = impl_->Get(id);
  return c == nullptr ? TcpState::kClosed : c->state;
}

std::optional<uint64_t> TcpStack::BytesAcked(ConnId id) const {
  const Impl::Conn* c = impl_->Get(id);
  if (c == nullptr) return std::nullopt;
  return c->counters.bytes_out;
}

bool TcpStack::GetConnection(ConnId id, TcpConnInfo* out) const {
  const Impl::Conn* c = impl_->Get(id);
  if (c == nullptr) return false;
  const Impl& m = *impl_;
  *out = c->counters;
  out->id = id;
  out->tuple = c->tuple;
  out->state = c->state;
  out->srtt_us = c->rto.srtt_us();
  out->rttvar_us = c->rto.rttvar_us();
  out->rto_us = c->rto.rto_us();
  out->cwnd = m.Cwnd(*c);
  out->ssthresh = m.Ssthresh(*c);
  out->snd_wnd = c->snd_wnd;
  out->rcv_wnd = m.RcvWindow(*c);
  out->emss = c->emss;
  out->unacked_bytes = static_cast<uint32_t>(c->snd_max - c->snd_una);
  out->send_queued = static_cast<uint32_t>(c->snd_end - std::min(c->snd_una, c->snd_end) );
  {
    const Seq32 data_end =
        c->reasm->fin_delivered() ? c->reasm->rcv_nxt() - 1u : c->reasm->rcv_nxt();
    const int32_t q = data_end - c->rcv_consumed;
    out->recv_queued = q > 0 ? static_cast<uint32_t>(q) : 0;
  }
  out->snd_wscale = c->snd_wscale;
  out->rcv_wscale = c->rcv_wscale;
  out->sack = c->sack_ok;
  out->timestamps = c->ts_ok;
  return true;
}

size_t TcpStack::ListConnections(std::span<TcpConnInfo> out) const {
  size_t k = 0;
  for (uint32_t i = 0; i < options_.max_connections && k < out.size(); ++i) {
    const Impl::Conn& c = impl_->conns[i];
    if (!c.in_use) continue;
    GetConnection(Impl::IdOf(c), &out[k++]);
  }
  return k;
}

size_t TcpStack::connection_count() const { return impl_->live; }

}  // namespace iwarp::tcp
