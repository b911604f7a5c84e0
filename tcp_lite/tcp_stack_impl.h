// Internal to tcp_lite/: not API. The TcpStack implementation shared by the
// files that define it; include it from those files only (tcp_stack.h is the
// API).
//
// Layout: a fixed table of Conn slots (hash chains by 4-tuple, a free list, a
// FIFO of TIME-WAIT slots), one timer wheel with three timers per connection
// (retransmission / persist / TIME-WAIT share one, delayed ACK, keepalive),
// and per-slot rings allocated by TcpStack::Create(). The methods are defined
// by concern:
//   tcp_stack.cc       the public API (TcpStack::*), allocation at Create()
//   tcp_conn_table.cc  slots, 4-tuple hash, free list, TIME-WAIT FIFO, close
//   tcp_handshake.cc   LISTEN and SYN-SENT input, SYN options, SYN cookies,
//                      SYN-RECEIVED -> ESTABLISHED (RFC 9293 3.10.7.2-3)
//   tcp_input.cc       segment arrival: the RFC 9293 3.10.7.4 checks, segment
//                      text into the receive ring and the reassembler
//   tcp_ack.cc         the ACK field (RFC 9293 3.10.7.4 fifth check), SACK
//                      scoreboard, duplicate ACKs, loss recovery entry
//   tcp_output.cc      segment building, what to send and when, RSTs
//   tcp_timers.cc      retransmission, persist, delayed ACK, keepalive timers
// Helpers on the per-segment path that more than one of those files calls
// are defined here, in the class, so that every caller can inline them.
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
#ifndef IWARPD_TCP_LITE_TCP_STACK_IMPL_H_
#define IWARPD_TCP_LITE_TCP_STACK_IMPL_H_

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>

#include "common/timer_wheel.h"
#include "tcp_lite/tcp_reassembly.h"
#include "tcp_lite/tcp_rto.h"
#include "tcp_lite/tcp_stack.h"

namespace iwarp::tcp {

struct TcpStack::Impl {
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr uint32_t kTsOptionBytes = 12;  // NOP NOP + kind 8 (RFC 7323 appendix A)
  static constexpr uint32_t kDefaultPeerMss = 536;  // RFC 9293 3.7.1 without the option
  static constexpr size_t kMaxPieces = 16;          // payload pieces per emitted segment
  static constexpr size_t kScoreboardBlocks = 16;   // peer SACK ranges remembered
  static constexpr uint32_t kDupThresh = 3;         // RFC 6675 2, RFC 5681 3.2

  static bool InStates(TcpState s, std::initializer_list<TcpState> set) {
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

  ~Impl();

  // ============================================ table (inline: every file)

  void Drop(DropReason r) { ++stats.drops[static_cast<size_t>(r)]; }
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
  int FindListener(uint16_t port) const {
    for (uint32_t i = 0; i < opt.max_listeners; ++i) {
      if (listeners[i].in_use && listeners[i].port == port) return static_cast<int>(i);
    }
    return -1;
  }

  // ============================================ clock and timer arming

  // The stack's clock never goes back. Callers hand every entry point the
  // time they read, and a user may send from inside a callback with a time
  // older than the segment's (an engine that stamps its sends with its last
  // poll): RFC 7323 5.3 (PAWS) has the peer discard segments whose
  // timestamp went back, so TSval must not decrease.
  void SetNow(uint64_t t) {
    if (t > now_us) now_us = t;
  }
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

  // ============================================ output helpers

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
  // Segments without data carry SND.MAX, not SND.NXT: after an RTO SND.NXT
  // is rewound to SND.UNA (go back N) and may lie below the peer's RCV.NXT,
  // where the peer would find the ACK unacceptable (RFC 9293 3.10.7.4) and
  // drop it; SND.MAX is never below the peer's RCV.NXT nor beyond its window.
  void SendAck(Conn& c) {
    ++stats.acks_out;
    Emit(c, c.snd_max, kFlagAck, 0);
  }
  void SendRst(Conn& c) { Emit(c, c.snd_max, kFlagRst | kFlagAck, 0); }
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

  // ============================================ send queue (TcpStack::Send*)

  size_t SendSpaceOf(const Conn& c) const {
    if (c.dcount + 2 > c.dcap) return 0;
    return c.scap - c.sused;
  }
  bool SendOpen(const Conn& c) const {
    return InStates(c.state, {TcpState::kEstablished, TcpState::kCloseWait}) && !c.fin_queued;
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

  // ============================================ receive ring

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

  // ============================================ tcp_conn_table.cc

  Conn* AllocConn(const FourTuple& t);
  uint32_t* FindReusable();
  void FreeConn(Conn& c);
  void TwLink(Conn& c);
  void TwUnlink(Conn& c);
  void CloseConn(Conn& c, CloseReason reason);
  void EnterTimeWait(Conn& c);

  // ============================================ tcp_handshake.cc

  void NoConnInput(const FourTuple& t, const Segment& seg, const Options& o);
  bool NewIncarnation(const Conn& c, const Segment& seg, const Options& o) const;
  void InitSendSeq(Conn& c);
  void ApplySynOptions(Conn& c, const Segment& seg, const Options& o);
  void SendCookieSynAck(const FourTuple& t, const Segment& seg, const Options& o);
  void CookieAck(int li, const FourTuple& t, const Segment& seg, const Options& o);
  void SynSentInput(Conn& c, const Segment& seg, const Options& o);
  bool Establish(Conn& c, const SegmentHeader& h);

  // ============================================ tcp_input.cc

  void Input(uint32_t src_ip, uint32_t dst_ip, ByteSpan in, uint64_t now, ChecksumCheck check);
  bool Acceptable(const Conn& c, Seq32 seq, uint32_t seg_len) const;
  void SynchronizedInput(Conn& c, const Segment& seg_in, const Options& o);
  void ReceiveData(Conn& c, const Segment& seg);
  void HoldAck(Conn& c);
  uint64_t StreamOffset(const Conn& c, Seq32 s) const;
  void DeliverToUser(Conn& c);
  void LoopReceive(Conn& c);

  // ============================================ tcp_ack.cc

  // RFC 9293 3.10.7.4 fifth check, the steps in the order of the RFC. Each
  // returns false if the segment must not be processed further.
  bool AckInSynReceived(Conn& c, const Segment& seg);
  // Flattened: the steps below are each called once, from here, on every
  // ACK. Left to gcc -O2 they stay out of line (with the congestion control
  // dispatch): tcp_stack_bench ran 1.2% more instructions in all, about 27%
  // more in ACK processing (callgrind). Flattened, ProcessAck compiles to one
  // body as when it was one function, within 0.1% of its instructions.
  [[gnu::flatten]] bool ProcessAck(Conn& c, const Segment& seg, const Options& o);
  bool AckAcceptable(Conn& c, Seq32 ack);
  void UpdateScoreboard(Conn& c, const Options& o, Seq32 ack);
  bool AckNewData(Conn& c, Seq32 ack, const Options& o);
  uint64_t RttSample(Conn& c, Seq32 ack, const Options& o);
  void CcNewAck(Conn& c, Seq32 ack, uint32_t acked, uint64_t rtt);
  bool AckOfOurFin(Conn& c);
  static bool IsDuplicateAck(const Conn& c, const Segment& seg, uint32_t new_wnd);
  void DuplicateAck(Conn& c, Seq32 ack);
  void SackDuplicateAck(Conn& c, Seq32 ack);
  void RenoDuplicateAck(Conn& c, Seq32 ack);
  void UpdateSendWindow(Conn& c, const SegmentHeader& h, uint32_t new_wnd);
  bool OfferSendSpace(Conn& c);
  void ScoreboardAdd(Conn& c, Seq32 l, Seq32 r);
  void ScoreboardPrune(Conn& c);
  uint32_t SackedBytes(const Conn& c) const;
  void ReleaseAcked(Conn& c, Seq32 ack);

  // ============================================ tcp_output.cc

  bool Emit(Conn& c, Seq32 seq, uint8_t flags, uint32_t payload_len,
            std::span<const ByteSpan> gathered = {});
  size_t GatherPayload(const Conn& c, Seq32 seq, uint32_t* len, ByteSpan* pieces) const;
  void SendRstFor(uint32_t local_ip, uint32_t remote_ip, const Segment& seg);
  void ChallengeAck(Conn& c);
  uint32_t Pipe(const Conn& c) const;
  bool NextHole(const Conn& c, Seq32* start, uint32_t* len) const;
  void StartRtxTimerIfIdle(Conn& c);
  void SendData(Conn& c, Seq32 seq, uint32_t len, bool retransmission);
  void TrySend(Conn& c);
  void MaybeStartPersist(Conn& c);

  // ============================================ tcp_timers.cc

  static void OnRtxTimer(Timer&, void* ctx);
  static void OnDelackTimer(Timer&, void* ctx);
  static void OnKeepaliveTimer(Timer&, void* ctx);
  void RtxExpired(Conn& c);
  void KeepaliveExpired(Conn& c);
};

}  // namespace iwarp::tcp

#endif  // IWARPD_TCP_LITE_TCP_STACK_IMPL_H_
