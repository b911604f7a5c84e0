// RdmaServer: the responder side of RPC-over-RDMA v1 over libiwarp.
#include <errno.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "rpcrdma/cm_private.h"
#include "rpcrdma/rdma_transport.h"
#include "rpcrdma/xdr.h"

namespace iwarp::rpcrdma {
namespace {

enum WrKind : uint8_t { kWrRecv = 1, kWrRead = 2, kWrReply = 3 };

uint64_t WrId(uint16_t gen, uint8_t conn, WrKind kind, uint32_t index) {
  return (uint64_t{gen} << 48) | (uint64_t{conn} << 40) | (uint64_t{kind} << 32) | index;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

}  // namespace

// One connection. Slot i owns receive buffer i for its whole life; a call
// occupies the slot of the receive it arrived in until its reply completed.
class RdmaServer::Conn final : public rpc::ServerConnection {
 public:
  enum class SlotState : uint8_t { kIdle, kPosted, kWaitSink, kReading, kDelivered, kSending };
  struct Slot {
    SlotState state = SlotState::kIdle;
    RegPool::Buffer* recv = nullptr;
    uint32_t recv_len = 0;
    RegPool::Buffer* sink = nullptr;
    RegPool::Buffer* bounce = nullptr;
    RegPool::Buffer* send = nullptr;
    uint32_t seq = 0;
    uint32_t pending = 0;  // work requests not completed
    bool counts_credit = false;
    bool reply_done_due = false;  // OnReplyDone after the reply completes
    CallPlan plan;
    ReplyPlan rplan;
    // Work requests waiting for send queue room, posted all together.
    std::vector<iwarp_send_wr> wrs;
    std::vector<iwarp_sge> sges;
  };

  Conn(RdmaServer& srv, uint8_t index, uint16_t gen) : srv_(srv), index_(index), gen_(gen) {}
  ~Conn() override {
    if (qp_ != nullptr) iwarp_destroy_qp(qp_);
  }

  bool Reply(rpc::CallToken token, const rpc::Message& reply) override;
  void Drop(rpc::CallToken token) override;
  uint32_t peer_ipv4() const override { return peer_ip_; }
  uint16_t peer_port() const override { return peer_port_; }

  int Open(const iwarp_event& req);
  void OnWc(const iwarp_wc& wc);
  int PumpTx();
  void Teardown();

  uint16_t gen() const { return gen_; }
  // Whether some call is in `state` (an RDMA Read of its chunks under way:
  // kReading; its reply's Writes and Send: kSending).
  bool AnyIn(SlotState state) const {
    for (const Slot& s : slots_) {
      if (s.state == state) return true;
    }
    return false;
  }
  uint32_t qp_id() const { return qp_id_; }
  bool dead() const { return dead_; }
  uint32_t in_progress() const { return in_progress_; }

 private:
  Slot* Lookup(rpc::CallToken token);
  void Refill();
  void OnRecv(uint32_t slot, uint32_t len);
  void StartReads(uint32_t slot);
  void Deliver(uint32_t slot);
  void SendError(uint32_t slot, CallVerdict v);
  void Release(uint32_t slot);
  void Queue(uint32_t slot);
  void AddWr(Slot& s, uint32_t opcode, uint64_t addr, uint32_t len, uint32_t lkey, uint64_t raddr,
             uint32_t rkey, WrKind kind, uint32_t slot);
  void Fail(RdmaError reason);

  RdmaServer& srv_;
  uint8_t index_;
  uint16_t gen_;
  iwarp_qp* qp_ = nullptr;
  uint32_t qp_id_ = 0;
  uint32_t peer_ip_ = 0;
  uint16_t peer_port_ = 0;
  uint32_t send_thr_ = kDefaultInlineThreshold;
  RegPool small_recv_, small_send_;
  std::vector<Slot> slots_;
  uint32_t posted_ = 0, posted_target_ = 0;
  uint32_t in_progress_ = 0;
  uint32_t sq_used_ = 0;
  std::deque<uint32_t> tx_wait_;    // slots whose work requests wait for room
  std::deque<uint32_t> sink_wait_;  // slots waiting for a sink buffer
  bool dead_ = false;
};

int RdmaServer::Conn::Open(const iwarp_event& req) {
  const RdmaServerOptions& o = srv_.opt_;
  // Who asks (the upper layer's access checks, e.g. NFS export clients).
  peer_ip_ = req.peer_ipv4;
  peer_port_ = req.peer_port;
  // RFC 8797: the client's sizes; without private data, RFC 8166's 1024.
  CmPrivateData peer;
  if (DecodeCmPrivateData(ByteSpan(req.private_data, std::min<uint32_t>(req.private_data_len,
                                                                        IWARP_MAX_PRIVATE_DATA)),
                          &peer) != CmPrivateStatus::kOk) {
    peer = CmPrivateData();
  }
  send_thr_ = std::min(peer.receive_size, o.max_inline_send);
  const uint32_t nslots = 3 * o.credits + 4;
  small_recv_.Init(srv_.s_, srv_.pd_, o.max_inline_recv, uint64_t{nslots} * ((o.max_inline_recv + 63) & ~63u));
  small_send_.Init(srv_.s_, srv_.pd_, o.max_inline_send, uint64_t{nslots} * ((o.max_inline_send + 63) & ~63u));
  slots_.resize(nslots);
  for (Slot& s : slots_) {
    s.recv = small_recv_.Get();
    if (s.recv == nullptr) return -ENOMEM;
    s.wrs.reserve(2 * kPlanMaxSegments + 8);
    s.sges.reserve(2 * kPlanMaxSegments + 8);
  }
  iwarp_qp_attr attr{srv_.pd_, srv_.cq_, srv_.cq_, o.sq_depth, nslots};
  if (int rc = iwarp_create_qp(srv_.s_, &attr, &qp_); rc != 0) return rc;
  qp_id_ = iwarp_qp_id(qp_);
  // Receives first: the client may send as soon as it sees the accept.
  posted_target_ = o.credits + 1;
  Refill();
  uint8_t pd[kCmPrivateDataSize];
  CmPrivateData mine;
  mine.send_size = o.max_inline_send;
  mine.receive_size = o.max_inline_recv;
  EncodeCmPrivateData(mine, MutableByteSpan(pd, sizeof(pd)));
  return iwarp_accept(srv_.s_, req.request_id, qp_, pd, sizeof(pd));
}

void RdmaServer::Conn::Refill() {
  for (uint32_t i = 0; i < slots_.size() && posted_ < posted_target_; ++i) {
    Slot& s = slots_[i];
    if (s.state != SlotState::kIdle) continue;
    iwarp_sge sge{Addr(s.recv->data), static_cast<uint32_t>(srv_.opt_.max_inline_recv), s.recv->stag};
    iwarp_recv_wr wr{WrId(gen_, index_, kWrRecv, i), &sge, 1};
    if (iwarp_post_recv(qp_, &wr, 1) != 1) return;
    s.state = SlotState::kPosted;
    ++posted_;
  }
}

RdmaServer::Conn::Slot* RdmaServer::Conn::Lookup(rpc::CallToken token) {
  const uint32_t i = static_cast<uint32_t>(token & 0xFFFF);
  if (dead_ || i >= slots_.size()) return nullptr;
  Slot& s = slots_[i];
  if (s.state != SlotState::kDelivered || s.seq != static_cast<uint32_t>(token >> 16)) return nullptr;
  return &s;
}

void RdmaServer::Conn::AddWr(Slot& s, uint32_t opcode, uint64_t addr, uint32_t len, uint32_t lkey,
                             uint64_t raddr, uint32_t rkey, WrKind kind, uint32_t slot) {
  s.sges.push_back(iwarp_sge{addr, len, lkey});
  iwarp_send_wr wr{};
  wr.wr_id = WrId(gen_, index_, kind, slot);
  wr.opcode = opcode;
  wr.flags = IWARP_SEND_SIGNALED;
  wr.num_sge = 1;
  wr.remote_addr = raddr;
  wr.rkey = rkey;
  s.wrs.push_back(wr);
}

void RdmaServer::Conn::Queue(uint32_t slot) {
  tx_wait_.push_back(slot);
  PumpTx();
}

// Posts the waiting groups in order while the send queue has room.
int RdmaServer::Conn::PumpTx() {
  int n = 0;
  while (!dead_ && !tx_wait_.empty()) {
    Slot& s = slots_[tx_wait_.front()];
    const uint32_t need = static_cast<uint32_t>(s.wrs.size());
    if (sq_used_ + need > srv_.opt_.sq_depth) break;
    for (size_t i = 0; i < s.wrs.size(); ++i) s.wrs[i].sg_list = &s.sges[i];
    uint32_t done = 0;
    while (done < need) {
      const int rc = iwarp_post_send(qp_, s.wrs.data() + done, need - done);
      if (rc < 0) {
        Fail(RdmaError::kSendFailed);
        return n;
      }
      if (rc == 0) break;
      done += static_cast<uint32_t>(rc);
    }
    sq_used_ += done;
    s.pending += done;
    if (done < need) {  // ring full: keep the rest for later
      s.wrs.erase(s.wrs.begin(), s.wrs.begin() + done);
      s.sges.erase(s.sges.begin(), s.sges.begin() + done);
      break;
    }
    s.wrs.clear();
    s.sges.clear();
    tx_wait_.pop_front();
    ++n;
  }
  return n;
}

void RdmaServer::Conn::Fail(RdmaError reason) {
  if (dead_) return;
  srv_.EndConnection(this, reason);
}

void RdmaServer::Conn::OnWc(const iwarp_wc& wc) {
  if (dead_) return;
  const WrKind kind = static_cast<WrKind>((wc.wr_id >> 32) & 0xFF);
  const uint32_t i = static_cast<uint32_t>(wc.wr_id);
  if (i >= slots_.size()) return;
  Slot& s = slots_[i];
  if (kind == kWrRecv) {
    --posted_;
    if (wc.status != IWARP_WC_SUCCESS) {
      s.state = SlotState::kIdle;
      // A flushed receive is the connection ending (the peer left), not a
      // failed one; with none of our RDMA Reads in flight and no call with
      // the handler, nothing was lost: the normal end of a connection
      // between calls, not counted as an error. A reply Send still in
      // flight does not count: the requester closed after it had the reply
      // (its ACK and FIN can reach us before the Send's completion does) or
      // chose not to wait for it; a Send that really failed completes as
      // flushed and is counted there.
      if (wc.status == IWARP_WC_WR_FLUSH_ERR) {
        const bool busy = AnyIn(SlotState::kWaitSink) || AnyIn(SlotState::kReading) ||
                          AnyIn(SlotState::kDelivered);
        Fail(busy ? RdmaError::kConnectionLost : RdmaError::kNone);
      } else {
        Fail(RdmaError::kRecvFailed);
      }
      return;
    }
    OnRecv(i, wc.byte_len);
    return;
  }
  --sq_used_;
  if (s.pending > 0) --s.pending;
  if (wc.status == IWARP_WC_WR_FLUSH_ERR) {
    Fail(RdmaError::kConnectionLost);  // flushed: the connection ended first
    return;
  }
  if (wc.status != IWARP_WC_SUCCESS) {
    Fail(kind == kWrRead ? RdmaError::kReadChunkFailed
                         : (wc.opcode == IWARP_WC_RDMA_WRITE ? RdmaError::kWriteFailed
                                                             : RdmaError::kSendFailed));
    return;
  }
  if (s.pending != 0 || !s.wrs.empty()) return;
  if (s.state == SlotState::kReading) {
    Deliver(i);
  } else if (s.state == SlotState::kSending) {
    const bool notify = s.reply_done_due;
    const rpc::CallToken token = (uint64_t{s.seq} << 16) | i;
    Release(i);
    if (notify) srv_.handler_.OnReplyDone(*this, token);
  }
  PumpTx();
}

void RdmaServer::Conn::OnRecv(uint32_t i, uint32_t len) {
  Slot& s = slots_[i];
  s.recv_len = std::min<uint32_t>(len, static_cast<uint32_t>(s.recv->size));
  PlanLimits limits;
  limits.check.limits = srv_.opt_.limits;
  limits.check.check_rpc_xid = true;
  limits.max_call_bytes = srv_.opt_.max_message_bytes;
  const CallVerdict v = PlanCall(ByteSpan(s.recv->data, s.recv_len), limits, &s.plan);
  RdmaCounters& c = srv_.counters_;
  if (s.plan.header_reason != HeaderError::kOk) ++c.header_errors[static_cast<size_t>(s.plan.header_reason)];
  if (s.plan.reason != RdmaError::kNone) ++c.errors[static_cast<size_t>(s.plan.reason)];
  switch (v) {
    case CallVerdict::kDrop:
      s.state = SlotState::kIdle;
      Refill();
      return;
    case CallVerdict::kReplyErrVers:
    case CallVerdict::kReplyErrChunk:
      Refill();
      SendError(i, v);
      return;
    case CallVerdict::kAccept:
      break;
  }
  // RFC 8166 3.3.1: a requester never has more calls outstanding than
  // granted; one that does loses its connection (named, counted).
  if (in_progress_ + 1 > srv_.opt_.credits) {
    s.state = SlotState::kIdle;
    Fail(RdmaError::kCreditOverrun);
    return;
  }
  ++in_progress_;
  s.counts_credit = true;
  srv_.CountInUse(+1);
  ++s.seq;
  Refill();
  if (s.plan.read_count == 0) {
    Deliver(i);
    return;
  }
  s.state = SlotState::kWaitSink;
  sink_wait_.push_back(i);
  StartReads(i);
}

// Pulls the Read chunks of waiting calls (in arrival order) once a sink
// buffer is free.
void RdmaServer::Conn::StartReads(uint32_t) {
  while (!dead_ && !sink_wait_.empty()) {
    const uint32_t i = sink_wait_.front();
    Slot& s = slots_[i];
    s.sink = srv_.big_.Get();
    if (s.sink == nullptr) return;  // waits for a call to release one
    sink_wait_.pop_front();
    s.state = SlotState::kReading;
    const CallPlan& p = s.plan;
    srv_.counters_.read_chunks += p.chunk_count;
    for (uint32_t k = 0; k < p.chunk_count; ++k) {
      const PlanChunk& ch = p.chunks[k];
      uint64_t off = ch.sink_offset;
      for (uint32_t j = ch.seg_begin; j < ch.seg_begin + ch.seg_count; ++j) {
        const Segment& seg = p.reads[j].target;
        if (seg.length != 0) {
          // RFC 5040 4.4: one contiguous sink per Read.
          AddWr(s, IWARP_WR_RDMA_READ, Addr(s.sink->data + off), seg.length, s.sink->stag,
                seg.offset, seg.handle, kWrRead, i);
          srv_.counters_.rdma_read_bytes += seg.length;
        }
        off += seg.length;
      }
    }
    if (s.wrs.empty()) {
      Deliver(i);
    } else {
      Queue(i);
    }
  }
}

void RdmaServer::Conn::Deliver(uint32_t i) {
  Slot& s = slots_[i];
  rpc::Message msg;
  const ByteSpan sink = s.sink != nullptr ? ByteSpan(s.sink->data, s.sink->size) : ByteSpan();
  if (!BuildCallMessage(s.plan, ByteSpan(s.recv->data, s.recv_len), s.recv->stag, sink,
                        s.sink != nullptr ? s.sink->stag : 0, &msg)) {
    // Not reached for a plan PlanCall accepted; answer rather than hang.
    s.plan.verdict = CallVerdict::kReplyErrChunk;
    SendError(i, CallVerdict::kReplyErrChunk);
    return;
  }
  s.state = SlotState::kDelivered;
  ++srv_.counters_.calls;
  const rpc::CallToken token = (uint64_t{s.seq} << 16) | i;
  srv_.handler_.OnCall(*this, token, msg);
}

void RdmaServer::Conn::SendError(uint32_t i, CallVerdict v) {
  Slot& s = slots_[i];
  if (s.counts_credit) {
    s.counts_credit = false;
    --in_progress_;
    srv_.CountInUse(-1);
  }
  s.send = small_send_.Get();
  if (s.send == nullptr) {
    ++srv_.counters_.errors[static_cast<size_t>(RdmaError::kNoBuffer)];
    Release(i);
    return;
  }
  const MutableByteSpan out(s.send->data, s.send->size);
  size_t n = 0;
  if (v == CallVerdict::kReplyErrVers) {
    n = EncodeErrVers(s.plan.xid, s.plan.vers, srv_.opt_.credits, out);
    ++srv_.counters_.err_vers_sent;
  } else {
    n = EncodeErrChunk(s.plan.xid, s.plan.vers, srv_.opt_.credits, out);
    ++srv_.counters_.err_chunk_sent;
  }
  s.state = SlotState::kSending;
  s.reply_done_due = false;
  AddWr(s, IWARP_WR_SEND, Addr(s.send->data), static_cast<uint32_t>(n), s.send->stag, 0, 0, kWrReply, i);
  Queue(i);
}

void RdmaServer::Conn::Release(uint32_t i) {
  Slot& s = slots_[i];
  if (s.counts_credit) {
    s.counts_credit = false;
    --in_progress_;
    srv_.CountInUse(-1);
  }
  if (s.sink != nullptr) srv_.big_.Put(s.sink);
  if (s.bounce != nullptr) srv_.big_.Put(s.bounce);
  if (s.send != nullptr) small_send_.Put(s.send);
  s.sink = s.bounce = s.send = nullptr;
  s.wrs.clear();
  s.sges.clear();
  s.pending = 0;
  s.reply_done_due = false;
  s.state = SlotState::kIdle;
  Refill();
  if (!sink_wait_.empty()) StartReads(0);
}

bool RdmaServer::Conn::Reply(rpc::CallToken token, const rpc::Message& reply) {
  Slot* sp = Lookup(token);
  if (sp == nullptr) return false;
  Slot& s = *sp;
  const uint32_t i = static_cast<uint32_t>(token & 0xFFFF);
  RdmaCounters& c = srv_.counters_;
  ReplyPlan& rp = s.rplan;
  PlanReply(reply, s.plan, send_thr_, &rp);
  // Bytes that must come from our own registered memory: the reduced
  // stream of a Long Reply, and DDP pieces without a stag going by Write.
  uint64_t bounce_need = rp.kind == ReplyKind::kReplyChunk ? XdrRoundUp(rp.stream_length) : 0;
  uint64_t piece_bounce_off[rpc::kMaxPieces] = {};
  for (size_t k = 0; k < reply.count(); ++k) {
    if (rp.piece_chunk[k] >= 0 && reply[k].stag == 0) {
      piece_bounce_off[k] = bounce_need;
      bounce_need += XdrRoundUp(reply[k].bytes.size());
    }
  }
  if (rp.kind != ReplyKind::kErrChunk && bounce_need > 0) {
    s.bounce = bounce_need <= srv_.big_.buffer_size() ? srv_.big_.Get() : nullptr;
    if (s.bounce == nullptr) {
      ++c.errors[static_cast<size_t>(bounce_need <= srv_.big_.buffer_size() ? RdmaError::kNoBuffer
                                                                           : RdmaError::kReplyTooLong)];
      rp.kind = ReplyKind::kErrChunk;
    }
  }
  if (rp.kind == ReplyKind::kErrChunk) {
    if (rp.reason != RdmaError::kNone) ++c.errors[static_cast<size_t>(rp.reason)];
    // The RPC reply cannot reach the client: RDMA_ERROR / ERR_CHUNK
    // (RFC 8166 4.5.2) instead; SendError releases the credit.
    SendError(i, CallVerdict::kReplyErrChunk);
    s.reply_done_due = true;
    return true;
  }
  s.send = small_send_.Get();
  if (s.send == nullptr) {
    ++c.errors[static_cast<size_t>(RdmaError::kNoBuffer)];
    Release(i);
    return true;  // dropped (counted); the client times out
  }
  // RDMA Writes first (Write list, Reply chunk), then the Send: the Send
  // completes after them (RFC 5040 ordering) and tells the client they are
  // placed.
  if (rp.kind == ReplyKind::kReplyChunk) {
    CopyReducedStream(reply, rp, MutableByteSpan(s.bounce->data, s.bounce->size));
    ++c.reply_chunks;
  }
  for (size_t k = 0; k < reply.count(); ++k) {
    if (rp.piece_chunk[k] >= 0 && reply[k].stag == 0 && !reply[k].bytes.empty()) {
      std::memcpy(s.bounce->data + piece_bounce_off[k], reply[k].bytes.data(), reply[k].bytes.size());
      c.bounce_copy_bytes += reply[k].bytes.size();
    }
  }
  c.write_chunks += rp.write_chunk_count;
  for (uint32_t w = 0; w < rp.write_count; ++w) {
    const ReplyWrite& wr = rp.writes[w];
    uint64_t src = 0;
    uint32_t lkey = 0;
    if (wr.from_stream) {
      src = Addr(s.bounce->data + wr.stream_offset);
      lkey = s.bounce->stag;
    } else if (reply[wr.piece].stag != 0) {
      src = Addr(reply[wr.piece].bytes.data() + wr.piece_offset);
      lkey = reply[wr.piece].stag;
    } else {
      src = Addr(s.bounce->data + piece_bounce_off[wr.piece] + wr.piece_offset);
      lkey = s.bounce->stag;
    }
    AddWr(s, IWARP_WR_RDMA_WRITE, src, wr.length, lkey, wr.dst.offset, wr.dst.handle, kWrReply, i);
  }
  c.rdma_written_bytes += rp.write_bytes;
  size_t hdr = 0;
  const MutableByteSpan out(s.send->data, s.send->size);
  EncodeHeader(rp.Spec(s.plan.xid, srv_.opt_.credits), out, &hdr);
  size_t len = hdr;
  if (rp.kind == ReplyKind::kInline) {
    len += CopyReducedStream(reply, rp, out.subspan(hdr));
    ++c.inline_replies;
  }
  AddWr(s, IWARP_WR_SEND, Addr(s.send->data), static_cast<uint32_t>(len), s.send->stag, 0, 0,
        kWrReply, i);
  ++c.replies;
  if (s.counts_credit) {
    s.counts_credit = false;
    --in_progress_;
    srv_.CountInUse(-1);
  }
  s.state = SlotState::kSending;
  s.reply_done_due = true;
  Refill();
  Queue(i);
  return true;
}

void RdmaServer::Conn::Drop(rpc::CallToken token) {
  Slot* s = Lookup(token);
  if (s == nullptr) return;
  Release(static_cast<uint32_t>(token & 0xFFFF));
}

void RdmaServer::Conn::Teardown() {
  dead_ = true;
  if (qp_ != nullptr) {
    iwarp_disconnect(qp_);
    iwarp_destroy_qp(qp_);  // no placement into our buffers after this
    qp_ = nullptr;
  }
  for (Slot& s : slots_) {
    if (s.counts_credit) {
      s.counts_credit = false;
      --in_progress_;
      srv_.CountInUse(-1);
    }
    if (s.sink != nullptr) srv_.big_.Put(s.sink);
    if (s.bounce != nullptr) srv_.big_.Put(s.bounce);
    s.sink = s.bounce = nullptr;
  }
}

// ---------------------------------------------------------------- server

RdmaServer::RdmaServer(iwarp_session* session, uint32_t pd, const RdmaServerOptions& options,
                       rpc::CallHandler& handler)
    : s_(session), pd_(pd), opt_(options), handler_(handler) {
  opt_.credits = std::max<uint32_t>(1, std::min<uint32_t>(opt_.credits, 1000));
  opt_.max_connections = std::min<uint32_t>(opt_.max_connections, 255);
  counters_.credits_granted = opt_.credits;
  big_.Init(s_, pd_, opt_.max_message_bytes, opt_.max_buffer_bytes);
  conns_.resize(opt_.max_connections);
}

RdmaServer::~RdmaServer() {
  for (auto& c : conns_) {
    if (c != nullptr) {
      c->Teardown();
      c.reset();
    }
  }
  if (listening_) iwarp_unlisten(s_, listener_);
  if (cq_ != nullptr) iwarp_destroy_cq(cq_);
}

int RdmaServer::Start() {
  uint32_t depth = 1;
  while (depth < opt_.max_connections * (opt_.sq_depth + 3 * opt_.credits + 4) && depth < 4096) depth <<= 1;
  if (int rc = iwarp_create_cq(s_, depth, &cq_); rc != 0) return rc;
  iwarp_addr a{opt_.ipv4, opt_.port};
  iwarp_conn_opts o{};
  o.transport = opt_.transport;
  if (int rc = iwarp_listen_opts(s_, &a, &o, &listener_); rc != 0) return rc;
  listening_ = true;
  return 0;
}

size_t RdmaServer::connection_count() const {
  size_t n = 0;
  for (const auto& c : conns_) n += c != nullptr ? 1 : 0;
  return n;
}

void RdmaServer::CountInUse(int delta) {
  counters_.credits_in_use = static_cast<uint32_t>(static_cast<int>(counters_.credits_in_use) + delta);
  counters_.credits_in_use_max = std::max(counters_.credits_in_use_max, counters_.credits_in_use);
}

RdmaServer::Conn* RdmaServer::FindByQp(uint32_t qp_id) {
  for (auto& c : conns_) {
    if (c != nullptr && c->qp_id() == qp_id) return c.get();
  }
  return nullptr;
}

void RdmaServer::OnConnectRequest(const iwarp_event& ev) {
  size_t free_slot = conns_.size();
  for (size_t i = 0; i < conns_.size(); ++i) {
    if (conns_[i] == nullptr) {
      free_slot = i;
      break;
    }
  }
  if (free_slot == conns_.size()) {
    iwarp_reject(s_, ev.request_id, nullptr, 0);
    return;
  }
  auto c = std::make_unique<Conn>(*this, static_cast<uint8_t>(free_slot), next_gen_++);
  if (next_gen_ == 0) next_gen_ = 1;
  if (c->Open(ev) != 0) {
    c->Teardown();
    iwarp_reject(s_, ev.request_id, nullptr, 0);
    return;
  }
  ++counters_.connections;
  conns_[free_slot] = std::move(c);
}

void RdmaServer::EndConnection(Conn* c, RdmaError reason) {
  if (reason != RdmaError::kNone) ++counters_.errors[static_cast<size_t>(reason)];
  ++counters_.disconnects;
  c->Teardown();
  handler_.OnDisconnect(*c);
  // Freed at the next Poll: callers up the stack may still be inside it.
  for (auto& p : conns_) {
    if (p.get() == c) graveyard_.push_back(std::move(p));
  }
}

void RdmaServer::DisconnectAll() {
  for (auto& c : conns_) {
    if (c != nullptr) EndConnection(c.get(), RdmaError::kConnectionLost);
  }
}

// Why a connection ended. A peer that refuses one of our RDMA Reads or
// Writes (a chunk naming an STag, offset or length it did not expose)
// answers with a Terminate, RDMAP layer, Remote Protection Error (RFC 5040
// 7.2; libiwarp reports it as QP_ERROR with the Terminate's code points),
// and the failed work request is flushed with the rest: the Reads or Writes
// under way when it arrives name the reason.
RdmaError RdmaServer::LostReason(const Conn& c, const iwarp_event& ev) {
  constexpr uint8_t kLayerRdmap = 0, kRemoteProtection = 1;
  if (ev.type == IWARP_EVENT_QP_ERROR && ev.term_layer == kLayerRdmap &&
      ev.term_etype == kRemoteProtection) {
    if (c.AnyIn(Conn::SlotState::kReading)) return RdmaError::kReadChunkFailed;
    if (c.AnyIn(Conn::SlotState::kSending)) return RdmaError::kWriteFailed;
  }
  // The client closed (graceful close, RFC 5040 5.5) with no RDMA Read of
  // ours in flight: the normal end of a connection, not an error (a reply
  // Send in flight: see the flushed receive in Conn::OnWc).
  if (ev.type == IWARP_EVENT_DISCONNECTED && ev.reason == 0 && !c.AnyIn(Conn::SlotState::kReading)) {
    return RdmaError::kNone;
  }
  return RdmaError::kConnectionLost;
}

int RdmaServer::DrainEvents() {
  int n = 0;
  iwarp_event ev;
  while (iwarp_get_event(s_, &ev, 0) == 1) {
    ++n;
    switch (ev.type) {
      case IWARP_EVENT_CONNECT_REQUEST:
        OnConnectRequest(ev);
        break;
      case IWARP_EVENT_DEVICE_FATAL:
        device_lost_ = true;
        break;
      case IWARP_EVENT_DISCONNECTED:
      case IWARP_EVENT_QP_ERROR:
      case IWARP_EVENT_CONNECT_ERROR:
        if (Conn* c = FindByQp(ev.qp_id); c != nullptr) EndConnection(c, LostReason(*c, ev));
        break;
      default:
        break;
    }
  }
  return n;
}

int RdmaServer::DrainCq() {
  if (cq_ == nullptr) return 0;
  int total = 0;
  iwarp_wc wc[32];
  for (;;) {
    const int n = iwarp_poll_cq(cq_, wc, 32);
    if (n <= 0) break;
    total += n;
    for (int k = 0; k < n; ++k) {
      const uint16_t gen = static_cast<uint16_t>(wc[k].wr_id >> 48);
      const uint8_t idx = static_cast<uint8_t>(wc[k].wr_id >> 40);
      if (idx >= conns_.size() || conns_[idx] == nullptr || conns_[idx]->gen() != gen) continue;
      conns_[idx]->OnWc(wc[k]);
    }
  }
  for (auto& c : conns_) {
    if (c != nullptr) total += c->PumpTx();
  }
  return total;
}

int RdmaServer::Arm() {
  if (cq_ == nullptr) return -EINVAL;
  if (!graveyard_.empty()) return 1;
  const int e = iwarp_event_arm(s_);
  if (e != 0) return e;
  return iwarp_cq_arm(cq_);
}

std::array<int, 2> RdmaServer::wait_fds() const {
  return {iwarp_event_fd(s_), cq_ != nullptr ? iwarp_cq_fd(cq_) : -1};
}

int RdmaServer::Poll(int timeout_ms) {
  const int64_t deadline = timeout_ms < 0 ? -1 : NowMs() + timeout_ms;
  for (;;) {
    graveyard_.clear();
    const int work = DrainEvents() + DrainCq();
    if (work != 0 || timeout_ms == 0) return work;
    int64_t left = 5;
    if (deadline >= 0) {
      left = std::min<int64_t>(5, deadline - NowMs());
      if (left <= 0) return 0;
    }
    if (cq_ == nullptr) return 0;  // not started
    iwarp_cq_wait(cq_, static_cast<int>(left));
  }
}

}  // namespace iwarp::rpcrdma
