// RdmaClient: the requester side of RPC-over-RDMA v1 over libiwarp.
#include <errno.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "rpcrdma/cm_private.h"
#include "rpcrdma/rdma_transport.h"
#include "rpcrdma/xdr.h"

namespace iwarp::rpcrdma {
namespace {

enum WrKind : uint8_t { kWrRecv = 1, kWrSend = 2 };

uint64_t WrId(uint32_t qp_id, WrKind kind, uint32_t index) {
  return (uint64_t{qp_id} << 40) | (uint64_t{kind} << 32) | index;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Reply header bytes beyond the fixed ones a reply to a call with
// `write_chunks` sinks takes at most (its Write list echoed, one segment
// each, and an absent Reply chunk).
uint32_t ReplyHeaderEstimate(size_t write_chunks) {
  return static_cast<uint32_t>(kMinHeaderSize + write_chunks * (8 + kSegmentSize));
}

}  // namespace

struct RdmaClient::Entry {
  uint32_t xid = 0;
  rpc::Message call;
  rpc::CallOptions options;
  Done done;
  bool sent = false;      // on the current connection
  bool ever_sent = false;
  bool timed_out = false;  // completed -ETIMEDOUT; waits for its reply or the connection's end
  int64_t deadline_ms = 0; // 0: no timeout
  uint64_t order = 0;  // Call() order
  RegPool::Buffer* send = nullptr;
  RegPool::Buffer* out_bounce = nullptr;  // Read chunk sources without a stag / NOMSG stream
  RegPool::Buffer* reply_buf = nullptr;   // the Reply chunk
  RegPool::Buffer* sink_bounce = nullptr; // Write chunk sinks without a stag
  uint64_t sink_off[rpc::kMaxDdpResults] = {};
  OfferedChunks offer;
};

RdmaClient::RdmaClient(iwarp_session* session, uint32_t pd, const RdmaClientOptions& options)
    : s_(session), pd_(pd), opt_(options) {
  opt_.credits = std::max<uint32_t>(1, std::min<uint32_t>(opt_.credits, 1000));
  const uint32_t small = std::max(opt_.max_inline_send, opt_.max_inline_recv);
  const uint32_t nsmall = 2 * opt_.credits + 4;
  small_.Init(s_, pd_, small, uint64_t{nsmall} * ((small + 63) & ~63u));
  big_.Init(s_, pd_, opt_.max_message_bytes, opt_.max_buffer_bytes);
  calls_.reserve(1024);
}

RdmaClient::~RdmaClient() {
  if (qp_ != nullptr) {
    // A graceful close (RFC 5040 5.5): the server sees the stream end with
    // nothing in flight, not a reset. Wait (briefly) for the close to
    // complete before the QP goes; the session's events are this client's.
    if (iwarp_disconnect(qp_) == 0 && state_ == State::kUp) {
      const int64_t deadline = NowMs() + 1000;
      iwarp_event ev;
      for (int64_t left = 1000; left > 0; left = deadline - NowMs()) {
        if (iwarp_get_event(s_, &ev, static_cast<int>(left)) != 1) break;
        if (ev.type == IWARP_EVENT_DEVICE_FATAL) break;
        if (ev.qp_id == qp_id_ && (ev.type == IWARP_EVENT_DISCONNECTED || ev.type == IWARP_EVENT_QP_ERROR)) break;
      }
    }
    iwarp_destroy_qp(qp_);
  }
  if (cq_ != nullptr) iwarp_destroy_cq(cq_);
}

void RdmaClient::PostRecv(RegPool::Buffer* b) {
  iwarp_sge sge{Addr(b->data), opt_.max_inline_recv, b->stag};
  iwarp_recv_wr wr{WrId(qp_id_, kWrRecv, b->index), &sge, 1};
  if (iwarp_post_recv(qp_, &wr, 1) == 1) recv_posted_[b->index] = b;
}

int RdmaClient::StartConnect() {
  if (cq_ == nullptr) {
    uint32_t depth = 1;
    while (depth < opt_.sq_depth + 2 * opt_.credits + 8) depth <<= 1;
    if (int rc = iwarp_create_cq(s_, depth, &cq_); rc != 0) return rc;
  }
  iwarp_qp_attr attr{pd_, cq_, cq_, opt_.sq_depth, opt_.credits + 2};
  if (int rc = iwarp_create_qp(s_, &attr, &qp_); rc != 0) return rc;
  qp_id_ = iwarp_qp_id(qp_);
  sq_used_ = 0;
  granted_ = 1;  // RFC 8166 3.3.1: one credit until the server grants more
  // One receive per credit asked for, posted before the server can send.
  for (uint32_t i = 0; i < opt_.credits; ++i) {
    RegPool::Buffer* b = small_.Get();
    if (b == nullptr) return -ENOMEM;
    if (recv_posted_.size() <= b->index) recv_posted_.resize(b->index + 1, nullptr);
    PostRecv(b);
  }
  uint8_t pd[kCmPrivateDataSize];
  CmPrivateData mine;
  mine.send_size = opt_.max_inline_send;
  mine.receive_size = opt_.max_inline_recv;
  EncodeCmPrivateData(mine, MutableByteSpan(pd, sizeof(pd)));
  iwarp_conn_opts o{};
  o.transport = opt_.transport;
  if (int rc = iwarp_connect_opts(qp_, &opt_.server, pd, sizeof(pd), &o); rc != 0) return rc;
  state_ = State::kConnecting;
  return 0;
}

int RdmaClient::Connect() {
  if (int rc = StartConnect(); rc != 0) return rc;
  const int64_t deadline = NowMs() + opt_.connect_timeout_ms;
  while (state_ != State::kUp && state_ != State::kFailed && NowMs() < deadline) Poll(5);
  if (state_ == State::kUp) return 0;
  return state_ == State::kFailed ? -ECONNREFUSED : -ETIMEDOUT;
}

void RdmaClient::ReleaseBuffers(Entry& e) {
  for (RegPool::Buffer** b : {&e.out_bounce, &e.reply_buf, &e.sink_bounce}) {
    if (*b != nullptr) big_.Put(*b);
    *b = nullptr;
  }
  if (e.send != nullptr) small_.Put(e.send);
  e.send = nullptr;
}

void RdmaClient::ConnectionLost(RdmaError reason) {
  if (qp_ == nullptr) return;
  ++counters_.errors[static_cast<size_t>(reason)];
  ++counters_.disconnects;
  iwarp_disconnect(qp_);
  iwarp_destroy_qp(qp_);  // nothing is placed into our buffers after this
  qp_ = nullptr;
  for (RegPool::Buffer*& b : recv_posted_) {
    if (b != nullptr) small_.Put(b);
    b = nullptr;
  }
  // Outstanding calls go back to the front of the queue in the order they
  // were first queued, to be sent again with the same XID (RFC 5531
  // retransmission; the server's duplicate request cache sees the XID).
  std::vector<std::pair<uint64_t, uint32_t>> resend;
  for (auto it = calls_.begin(); it != calls_.end();) {
    Entry& e = *it->second;
    if (e.sent && e.timed_out) {
      // Already completed -ETIMEDOUT: not sent again.
      ReleaseBuffers(e);
      it = calls_.erase(it);
      continue;
    }
    if (e.sent) {
      e.sent = false;
      ReleaseBuffers(e);
      resend.emplace_back(e.order, it->first);
    }
    ++it;
  }
  std::sort(resend.begin(), resend.end());
  for (auto it = resend.rbegin(); it != resend.rend(); ++it) queue_.push_front(it->second);
  retry_at_ms_ = NowMs() + 20 * attempts_;
  outstanding_ = 0;
  counters_.credits_in_use = 0;
  state_ = State::kDown;
}

void RdmaClient::DropConnection() { ConnectionLost(RdmaError::kConnectionLost); }

int RdmaClient::Call(const rpc::Message& call, const rpc::CallOptions& options, Done done) {
  if (call.count() == 0 || call[0].bytes.size() < 4 || call[0].ddp) return -EINVAL;
  if (options.ddp_sink_count > rpc::kMaxDdpResults) return -EINVAL;
  if (call.stream_length() > big_.buffer_size() || options.max_reply_bytes > big_.buffer_size()) {
    ++counters_.errors[static_cast<size_t>(RdmaError::kCallTooLongForTransport)];
    return -EMSGSIZE;
  }
  uint64_t sinks = 0;
  for (size_t i = 0; i < options.ddp_sink_count; ++i) sinks += XdrRoundUp(options.ddp_sinks[i].bytes.size());
  if (sinks > big_.buffer_size()) return -EMSGSIZE;
  const uint32_t xid = LoadBe32(call[0].bytes.data());
  if (calls_.count(xid) != 0) return -EEXIST;
  if (state_ == State::kFailed) return -ECONNRESET;
  auto e = std::make_unique<Entry>();
  e->xid = xid;
  e->call = call;
  e->options = options;
  e->done = std::move(done);
  e->order = send_seq_++;
  // NowMs() truncates; the extra millisecond keeps a call from timing out
  // before call_timeout_ms has fully passed.
  if (opt_.call_timeout_ms > 0) e->deadline_ms = NowMs() + opt_.call_timeout_ms + 1;
  calls_.emplace(xid, std::move(e));
  queue_.push_back(xid);
  SendQueued();
  return 0;
}

// Builds the header and inline part of a call into its send buffer and its
// chunks (RFC 8166 3.5): Read chunks for DDP-eligible pieces, RDMA_NOMSG
// with the whole stream at Position Zero when even that is too long, Write
// chunks for the sinks, a Reply chunk when the reply may not fit inline.
// Returns the Send length, 0 when buffers are short (retry later), or a
// negative errno.
int RdmaClient::Encode(Entry& e) {
  const rpc::Message& m = e.call;
  e.send = small_.Get();
  if (e.send == nullptr) return 0;
  // Write list.
  Segment wsegs[rpc::kMaxDdpResults];
  WriteChunkSpec wlist[rpc::kMaxDdpResults];
  e.offer = OfferedChunks();
  uint64_t sink_need = 0;
  bool unregistered_sink = false;
  for (size_t i = 0; i < e.options.ddp_sink_count; ++i) {
    if (e.options.ddp_sinks[i].stag == 0) {
      unregistered_sink = true;
      e.sink_off[i] = sink_need;
      sink_need += XdrRoundUp(e.options.ddp_sinks[i].bytes.size());
    }
  }
  if (unregistered_sink && (e.sink_bounce = big_.Get()) == nullptr) return 0;
  for (size_t i = 0; i < e.options.ddp_sink_count; ++i) {
    const rpc::ReplySink& s = e.options.ddp_sinks[i];
    const uint32_t len = static_cast<uint32_t>(s.bytes.size());
    wsegs[i] = s.stag != 0 ? Segment{s.stag, len, Addr(s.bytes.data())}
                           : Segment{e.sink_bounce->stag, len, Addr(e.sink_bounce->data + e.sink_off[i])};
    wlist[i].segments = std::span<const Segment>(&wsegs[i], 1);
    e.offer.write_lengths[i] = len;
    e.offer.write_segments[i] = 1;
  }
  e.offer.write_count = static_cast<uint32_t>(e.options.ddp_sink_count);
  // Reply chunk (RFC 8166 3.5.3, Long Reply) when the reply may not fit.
  Segment rseg;
  const bool reply_chunk =
      e.options.max_reply_bytes + ReplyHeaderEstimate(e.options.ddp_sink_count) > recv_thr_;
  if (reply_chunk) {
    if ((e.reply_buf = big_.Get()) == nullptr) return 0;
    const uint32_t len = static_cast<uint32_t>(
        std::min<uint64_t>(XdrRoundUp(e.options.max_reply_bytes), e.reply_buf->size));
    rseg = Segment{e.reply_buf->stag, len, Addr(e.reply_buf->data)};
    e.offer.reply_chunk = true;
    e.offer.reply_length = len;
  }
  HeaderSpec spec;
  spec.xid = e.xid;
  spec.credit = opt_.credits;
  spec.write_list = std::span<const WriteChunkSpec>(wlist, e.options.ddp_sink_count);
  spec.has_reply_chunk = reply_chunk;
  if (reply_chunk) spec.reply_chunk = std::span<const Segment>(&rseg, 1);

  // Which pieces leave by Read chunk: first those at the threshold, then
  // (if still too long) every non-empty DDP piece; at most
  // kMaxCallReadChunks.
  bool moved[rpc::kMaxPieces] = {};
  auto plan_reads = [&](bool all) {
    uint32_t n = 0;
    uint64_t inline_len = 0;
    for (size_t i = 0; i < m.count(); ++i) {
      const rpc::Piece& p = m[i];
      moved[i] = p.ddp && !p.bytes.empty() && n < kMaxCallReadChunks &&
                 (all || p.bytes.size() >= opt_.ddp_read_threshold);
      if (moved[i]) {
        ++n;
      } else {
        inline_len += p.ddp ? XdrRoundUp(p.bytes.size()) : p.bytes.size();
      }
    }
    return std::make_pair(n, inline_len);
  };
  ReadSegment rsegs[kMaxCallReadChunks];
  auto fill_reads = [&](uint32_t* count) -> bool {
    uint64_t pos = 0, bounce = 0;
    *count = 0;
    for (size_t i = 0; i < m.count(); ++i) {
      const rpc::Piece& p = m[i];
      if (moved[i]) {
        Segment seg;
        if (p.stag != 0) {
          seg = Segment{p.stag, static_cast<uint32_t>(p.bytes.size()), Addr(p.bytes.data())};
        } else {
          if (e.out_bounce == nullptr && (e.out_bounce = big_.Get()) == nullptr) return false;
          std::memcpy(e.out_bounce->data + bounce, p.bytes.data(), p.bytes.size());
          counters_.bounce_copy_bytes += p.bytes.size();
          seg = Segment{e.out_bounce->stag, static_cast<uint32_t>(p.bytes.size()),
                        Addr(e.out_bounce->data + bounce)};
          bounce += XdrRoundUp(p.bytes.size());
        }
        rsegs[(*count)++] = ReadSegment{static_cast<uint32_t>(pos), seg};
      }
      pos += p.ddp ? XdrRoundUp(p.bytes.size()) : p.bytes.size();
    }
    return true;
  };
  auto [n, inline_len] = plan_reads(false);
  spec.read_list = std::span<const ReadSegment>(rsegs, n);
  size_t hdr = EncodedHeaderSize(spec);
  if (hdr + inline_len > send_thr_) {
    std::tie(n, inline_len) = plan_reads(true);
    spec.read_list = std::span<const ReadSegment>(rsegs, n);
    hdr = EncodedHeaderSize(spec);
  }
  const MutableByteSpan out(e.send->data, e.send->size);
  size_t len = 0;
  if (hdr + inline_len <= send_thr_) {
    uint32_t cnt = 0;
    if (!fill_reads(&cnt)) return 0;
    spec.proc = Proc::kMsg;
    if (EncodeHeader(spec, out, &hdr) != EncodeStatus::kOk) return -EINVAL;
    ByteWriter w(out.subspan(hdr));
    for (size_t i = 0; i < m.count(); ++i) {
      if (moved[i]) continue;
      w.Bytes(m[i].bytes);
      if (m[i].ddp) w.Zeros(XdrPadding(m[i].bytes.size()));
    }
    if (!w.ok()) return -EMSGSIZE;
    len = hdr + w.offset();
    counters_.read_chunks += cnt;
    for (uint32_t i = 0; i < cnt; ++i) counters_.rdma_read_bytes += rsegs[i].target.length;
  } else {
    // RFC 8166 3.5.3 Long Call: the whole stream (pads written) at Position
    // Zero, RDMA_NOMSG.
    if (e.out_bounce == nullptr && (e.out_bounce = big_.Get()) == nullptr) return 0;
    ByteWriter w(MutableByteSpan(e.out_bounce->data, e.out_bounce->size));
    for (const rpc::Piece& p : m) {
      w.Bytes(p.bytes);
      if (p.ddp) w.Zeros(XdrPadding(p.bytes.size()));
    }
    if (!w.ok()) return -EMSGSIZE;
    rsegs[0] = ReadSegment{0, Segment{e.out_bounce->stag, static_cast<uint32_t>(w.offset()),
                                      Addr(e.out_bounce->data)}};
    spec.read_list = std::span<const ReadSegment>(rsegs, 1);
    spec.proc = Proc::kNomsg;
    if (EncodeHeader(spec, out, &hdr) != EncodeStatus::kOk || hdr > send_thr_) return -EMSGSIZE;
    len = hdr;
    ++counters_.read_chunks;
    ++counters_.nomsg_calls;
    counters_.rdma_read_bytes += w.offset();
  }
  counters_.write_chunks += e.options.ddp_sink_count;
  if (reply_chunk) ++counters_.reply_chunks;
  return static_cast<int>(len);
}

int RdmaClient::SendQueued() {
  int n = 0;
  while (state_ == State::kUp && !queue_.empty() && outstanding_ < granted_ &&
         sq_used_ < opt_.sq_depth) {
    auto it = calls_.find(queue_.front());
    if (it == calls_.end()) {
      queue_.pop_front();
      continue;
    }
    Entry& e = *it->second;
    const int len = Encode(e);
    if (len <= 0) {
      ReleaseBuffers(e);
      if (len == 0) break;  // buffers: retry when a call completes
      queue_.pop_front();
      Fail(e, len, RdmaError::kCallTooLongForTransport);
      continue;
    }
    iwarp_sge sge{Addr(e.send->data), static_cast<uint32_t>(len), e.send->stag};
    iwarp_send_wr wr{};
    wr.wr_id = WrId(qp_id_, kWrSend, e.xid & 0xFFFFFFFF);
    wr.opcode = IWARP_WR_SEND;
    wr.flags = IWARP_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (iwarp_post_send(qp_, &wr, 1) != 1) {
      ReleaseBuffers(e);
      break;
    }
    ++sq_used_;
    queue_.pop_front();
    e.sent = true;
    if (e.ever_sent) {
      ++counters_.retransmits;
    } else {
      ++counters_.calls;
    }
    e.ever_sent = true;
    ++outstanding_;
    counters_.credits_in_use = static_cast<uint32_t>(outstanding_);
    counters_.credits_in_use_max = std::max(counters_.credits_in_use_max, counters_.credits_in_use);
    ++n;
  }
  return n;
}

void RdmaClient::Fail(Entry& e, int status, RdmaError reason) {
  ++counters_.errors[static_cast<size_t>(reason)];
  auto it = calls_.find(e.xid);
  if (it == calls_.end()) return;
  std::unique_ptr<Entry> own = std::move(it->second);
  calls_.erase(it);
  if (own->sent && outstanding_ > 0) --outstanding_;
  counters_.credits_in_use = static_cast<uint32_t>(outstanding_);
  ReleaseBuffers(*own);
  rpc::ReplyView v;
  v.status = status;
  if (own->done) own->done(v);
}

void RdmaClient::OnReply(RegPool::Buffer* b, uint32_t len) {
  const ByteSpan msg(b->data, std::min<size_t>(len, b->size));
  CheckOptions co;
  co.limits = opt_.limits;
  ReplyParse rp;
  if (ParseReplyHeader(msg, co, &rp) != ReplyVerdict::kAccept) {
    ++counters_.header_errors[static_cast<size_t>(rp.header_reason)];
    PostRecv(b);
    return;
  }
  auto it = calls_.find(rp.xid);
  if (it == calls_.end() || !it->second->sent) {
    ++counters_.errors[static_cast<size_t>(RdmaError::kReplyUnknownXid)];
    PostRecv(b);
    return;
  }
  // RFC 8166 3.3.1: the grant in the latest reply, at least one, never
  // more than the receives we keep posted.
  granted_ = std::clamp<uint32_t>(rp.credit, 1, opt_.credits);
  counters_.credits_granted = granted_;
  std::unique_ptr<Entry> e = std::move(it->second);
  calls_.erase(it);
  --outstanding_;
  counters_.credits_in_use = static_cast<uint32_t>(outstanding_);
  if (e->timed_out) {
    // Its caller already saw -ETIMEDOUT; the credit and buffers come back.
    ++counters_.late_replies;
    ReleaseBuffers(*e);
    PostRecv(b);
    return;
  }
  CheckReplyAgainstOffer(msg, co, e->offer, &rp);
  rpc::ReplyView v;
  if (rp.verdict != ReplyVerdict::kAccept) {
    ++counters_.errors[static_cast<size_t>(rp.reason != RdmaError::kNone ? rp.reason
                                                                         : RdmaError::kReplyBadWriteList)];
    v.status = -EPROTO;
  } else if (rp.proc == Proc::kError) {
    ++counters_.errors[static_cast<size_t>(RdmaError::kRdmaErrorReceived)];
    if (rp.err == ErrCode::kVers) {
      ++counters_.err_vers_received;
    } else {
      ++counters_.err_chunk_received;
    }
    v.status = -EPROTO;
    v.transport_error = static_cast<uint32_t>(rp.err);
  } else {
    if (rp.proc == Proc::kMsg) {
      v.stream.Add(rpc::Piece{msg.subspan(rp.inline_offset, rp.inline_length), false, 0});
    } else {
      v.stream.Add(rpc::Piece{ByteSpan(e->reply_buf->data, rp.reply_chunk_bytes), false,
                              e->reply_buf->stag});
      counters_.rdma_written_bytes += rp.reply_chunk_bytes;
    }
    for (uint32_t i = 0; i < rp.result_count; ++i) {
      const rpc::ReplySink& s = e->options.ddp_sinks[i];
      const uint8_t* base = s.stag != 0 ? s.bytes.data() : e->sink_bounce->data + e->sink_off[i];
      v.ddp_results[i] = ByteSpan(base, rp.result_lengths[i]);
      counters_.rdma_written_bytes += rp.result_lengths[i];
    }
    v.ddp_result_count = rp.result_count;
    ++counters_.replies;
  }
  if (e->done) e->done(v);
  ReleaseBuffers(*e);
  PostRecv(b);
}

// Completes calls past their deadline with -ETIMEDOUT. A queued call is
// forgotten; a sent one stays (credit, buffers) until its reply or the
// connection's end, with no callback left to run.
int RdmaClient::ExpireCalls() {
  if (opt_.call_timeout_ms <= 0 || calls_.empty()) return 0;
  const int64_t now = NowMs();
  std::vector<uint32_t> expired;
  for (const auto& [xid, e] : calls_) {
    if (!e->timed_out && e->deadline_ms != 0 && now >= e->deadline_ms) expired.push_back(xid);
  }
  for (uint32_t xid : expired) {
    auto it = calls_.find(xid);
    if (it == calls_.end()) continue;
    Entry& e = *it->second;
    ++counters_.timeouts;
    if (!e.sent) {
      std::erase(queue_, xid);
      Fail(e, -ETIMEDOUT, RdmaError::kCallTimeout);
      continue;
    }
    ++counters_.errors[static_cast<size_t>(RdmaError::kCallTimeout)];
    e.timed_out = true;
    Done done = std::move(e.done);
    e.done = nullptr;
    rpc::ReplyView v;
    v.status = -ETIMEDOUT;
    if (done) done(v);
  }
  return static_cast<int>(expired.size());
}

int RdmaClient::DrainEvents() {
  int n = 0;
  iwarp_event ev;
  while (iwarp_get_event(s_, &ev, 0) == 1) {
    ++n;
    if (ev.type == IWARP_EVENT_DEVICE_FATAL) {
      state_ = State::kFailed;
      continue;
    }
    if (qp_ == nullptr || ev.qp_id != qp_id_) continue;
    switch (ev.type) {
      case IWARP_EVENT_ESTABLISHED: {
        CmPrivateData peer;
        if (DecodeCmPrivateData(ByteSpan(ev.private_data, std::min<uint32_t>(ev.private_data_len,
                                                                             IWARP_MAX_PRIVATE_DATA)),
                                &peer) != CmPrivateStatus::kOk) {
          peer = CmPrivateData();  // RFC 8166 default: 1024 each way
        }
        send_thr_ = std::min(opt_.max_inline_send, peer.receive_size);
        recv_thr_ = std::min(opt_.max_inline_recv, peer.send_size);
        state_ = State::kUp;
        attempts_ = 0;
        if (counters_.connections++ > 0) ++counters_.reconnects;
        break;
      }
      case IWARP_EVENT_REJECTED:
      case IWARP_EVENT_CONNECT_ERROR:
      case IWARP_EVENT_DISCONNECTED:
      case IWARP_EVENT_QP_ERROR:
        ConnectionLost(RdmaError::kConnectionLost);
        break;
      default:
        break;
    }
  }
  return n;
}

int RdmaClient::DrainCq() {
  if (cq_ == nullptr) return 0;
  int total = 0;
  iwarp_wc wc[32];
  for (;;) {
    const int n = iwarp_poll_cq(cq_, wc, 32);
    if (n <= 0) break;
    total += n;
    for (int k = 0; k < n; ++k) {
      if (qp_ == nullptr || (wc[k].wr_id >> 40) != qp_id_) continue;  // an old connection's
      const WrKind kind = static_cast<WrKind>((wc[k].wr_id >> 32) & 0xFF);
      if (wc[k].status != IWARP_WC_SUCCESS) {
        ConnectionLost(wc[k].status == IWARP_WC_WR_FLUSH_ERR ? RdmaError::kConnectionLost
                       : kind == kWrRecv                     ? RdmaError::kRecvFailed
                                                             : RdmaError::kSendFailed);
        continue;
      }
      if (kind == kWrSend) {
        if (sq_used_ > 0) --sq_used_;
        continue;
      }
      const uint32_t idx = static_cast<uint32_t>(wc[k].wr_id);
      if (idx >= recv_posted_.size() || recv_posted_[idx] == nullptr) continue;
      RegPool::Buffer* b = recv_posted_[idx];
      recv_posted_[idx] = nullptr;
      OnReply(b, wc[k].byte_len);
    }
  }
  return total;
}

int RdmaClient::Poll(int timeout_ms) {
  const int64_t deadline = timeout_ms < 0 ? -1 : NowMs() + timeout_ms;
  for (;;) {
    int work = DrainEvents() + DrainCq();
    if (state_ == State::kDown && NowMs() >= retry_at_ms_) {
      // Reconnect; the queue (outstanding calls first) goes out once up.
      if (++attempts_ > opt_.reconnect_attempts) {
        state_ = State::kFailed;
      } else if (StartConnect() != 0) {
        if (qp_ != nullptr) {
          iwarp_destroy_qp(qp_);
          qp_ = nullptr;
        }
        state_ = State::kDown;
      }
      ++work;
    }
    if (state_ == State::kFailed && !calls_.empty()) {
      while (!calls_.empty()) Fail(*calls_.begin()->second, -ECONNRESET, RdmaError::kReconnectFailed);
      queue_.clear();
      ++work;
    }
    work += ExpireCalls();
    work += SendQueued();
    if (work != 0 || timeout_ms == 0) return work;
    int64_t left = 5;
    if (deadline >= 0) {
      left = std::min<int64_t>(5, deadline - NowMs());
      if (left <= 0) return 0;
    }
    if (cq_ == nullptr) return 0;
    iwarp_cq_wait(cq_, static_cast<int>(left));
  }
}

}  // namespace iwarp::rpcrdma
