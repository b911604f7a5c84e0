#include "rpcrdma/rdma_plan.h"

#include <algorithm>

#include "rpcrdma/xdr.h"

namespace iwarp::rpcrdma {

std::string_view RdmaErrorName(RdmaError e) {
  using Enum = RdmaError;
  switch (e) { IWARP_RPCRDMA_RDMA_ERRORS(IWARP_ENUM_NAME_CASE) case Enum::kCount: break; }
  return "invalid";
}

namespace {

CallVerdict Refuse(CallPlan* plan, RdmaError e) {
  plan->verdict = CallVerdict::kReplyErrChunk;
  plan->reason = e;
  return plan->verdict;
}

CallVerdict RefuseHeader(CallPlan* plan, HeaderError e) {
  plan->verdict = CallVerdict::kReplyErrChunk;
  plan->header_reason = e;
  return plan->verdict;
}

}  // namespace

CallVerdict PlanCall(ByteSpan message, const PlanLimits& limits, CallPlan* plan) {
  *plan = CallPlan();
  CheckOptions opt = limits.check;
  opt.limits.max_read_segments = std::min(opt.limits.max_read_segments, kPlanMaxSegments);
  opt.limits.max_segments_per_chunk = std::min(opt.limits.max_segments_per_chunk, kPlanMaxSegments);
  const CallCheck c = CheckCall(message, opt);
  plan->verdict = c.verdict;
  plan->header_reason = c.reason;
  const HeaderView& h = c.header;
  if (h.has_fixed_fields()) {
    plan->xid = h.xid();
    plan->vers = h.vers();
    plan->credit = h.credit();
    plan->proc = h.proc();
  }
  if (c.verdict != CallVerdict::kAccept) return c.verdict;

  // Read list, sorted by Position; segments of one Position keep list order
  // (RFC 8166 3.4.5: they concatenate into one chunk in that order).
  plan->read_count = h.read_segment_count();
  for (uint32_t i = 0; i < plan->read_count; ++i) plan->reads[i] = h.read_segment(i);
  std::stable_sort(plan->reads, plan->reads + plan->read_count,
                   [](const ReadSegment& a, const ReadSegment& b) { return a.position < b.position; });
  uint32_t data_chunks = 0;
  uint64_t sink = 0;
  for (uint32_t i = 0; i < plan->read_count; ++i) {
    const ReadSegment& s = plan->reads[i];
    if (i == 0 || s.position != plan->reads[i - 1].position) {
      if (s.position != 0 && ++data_chunks > kMaxCallReadChunks) {
        return Refuse(plan, RdmaError::kTooManyReadChunks);
      }
      PlanChunk& ch = plan->chunks[plan->chunk_count++];
      ch.position = s.position;
      ch.seg_begin = i;
      ch.sink_offset = XdrRoundUp(sink);
      sink = ch.sink_offset;
    }
    PlanChunk& ch = plan->chunks[plan->chunk_count - 1];
    ++ch.seg_count;
    ch.length += s.target.length;
    sink += s.target.length;
  }
  plan->sink_bytes = sink;
  if (sink > limits.max_call_bytes) return Refuse(plan, RdmaError::kCallTooLong);

  if (plan->proc == Proc::kMsg) {
    plan->inline_offset = h.header_size();
    plan->inline_length = h.payload().size();
  } else {
    // RDMA_NOMSG: the Position Zero chunk is the Payload stream (CheckCall
    // required it; sorted, it is chunks[0]); the other chunks are reinserted
    // into it, so each must land within it (as CheckCall checks for the
    // inline payload of RDMA_MSG).
    uint64_t removed = 0;
    for (uint32_t k = 1; k < plan->chunk_count; ++k) {
      const PlanChunk& ch = plan->chunks[k];
      if (ch.position - removed > plan->chunks[0].length) {
        return RefuseHeader(plan, HeaderError::kReadPositionBeyondPayload);
      }
      removed += XdrRoundUp(ch.length);
    }
  }

  // Write list: one chunk per DDP-eligible result.
  if (h.write_chunk_count() > rpc::kMaxDdpResults) return Refuse(plan, RdmaError::kTooManyWriteChunks);
  uint32_t nseg = 0;
  for (WriteChunkView w : h.write_chunks()) {
    if (nseg + w.segment_count() > kPlanMaxSegments) return Refuse(plan, RdmaError::kTooManyWriteChunks);
    PlanWriteChunk& pc = plan->write_chunks[plan->write_chunk_count++];
    pc.seg_begin = nseg;
    pc.seg_count = w.segment_count();
    for (uint32_t i = 0; i < w.segment_count(); ++i) {
      plan->write_segs[nseg + i] = w.segment(i);
      pc.length += plan->write_segs[nseg + i].length;
    }
    nseg += w.segment_count();
  }
  plan->has_reply_chunk = h.has_reply_chunk();
  if (plan->has_reply_chunk) {
    const WriteChunkView r = h.reply_chunk();
    plan->reply_seg_count = r.segment_count();  // <= kPlanMaxSegments (decoder limit)
    for (uint32_t i = 0; i < r.segment_count(); ++i) {
      plan->reply_segs[i] = r.segment(i);
      plan->reply_chunk_length += plan->reply_segs[i].length;
    }
  }
  return plan->verdict;
}

bool BuildCallMessage(const CallPlan& plan, ByteSpan message, uint32_t inline_stag, ByteSpan sink,
                      uint32_t sink_stag, rpc::Message* out) {
  out->Clear();
  if (plan.verdict != CallVerdict::kAccept) return false;
  if (sink.size() < plan.sink_bytes) return false;
  ByteSpan base;
  uint32_t base_stag = 0;
  uint32_t first = 0;
  if (plan.proc == Proc::kNomsg) {
    if (plan.chunk_count == 0 || plan.chunks[0].position != 0) return false;
    base = sink.subspan(plan.chunks[0].sink_offset, plan.chunks[0].length);
    base_stag = sink_stag;
    first = 1;
  } else {
    if (message.size() < plan.inline_offset || message.size() - plan.inline_offset < plan.inline_length) {
      return false;
    }
    base = message.subspan(plan.inline_offset, plan.inline_length);
    base_stag = inline_stag;
  }
  uint64_t removed = 0, prev = 0;
  for (uint32_t k = first; k < plan.chunk_count; ++k) {
    const PlanChunk& ch = plan.chunks[k];
    if (ch.position < removed) return false;
    const uint64_t at = ch.position - removed;
    if (at < prev || at > base.size()) return false;
    if (at > prev && !out->Add(rpc::Piece{base.subspan(prev, at - prev), false, base_stag})) return false;
    if (!out->Add(rpc::Piece{sink.subspan(ch.sink_offset, ch.length), true, sink_stag})) return false;
    removed += XdrRoundUp(ch.length);
    prev = at;
  }
  if (prev < base.size() && !out->Add(rpc::Piece{base.subspan(prev), false, base_stag})) return false;
  return true;
}

HeaderSpec ReplyPlan::Spec(uint32_t xid, uint32_t credit) const {
  HeaderSpec s;
  s.xid = xid;
  s.credit = credit;
  s.proc = kind == ReplyKind::kReplyChunk ? Proc::kNomsg : Proc::kMsg;
  s.write_list = std::span<const WriteChunkSpec>(write_list, write_chunk_count);
  s.has_reply_chunk = kind == ReplyKind::kReplyChunk;
  if (s.has_reply_chunk) s.reply_chunk = std::span<const Segment>(reply_segs, reply_seg_count);
  return s;
}

namespace {

// Spreads `length` bytes over `segs` in order (RFC 8166 3.4.6: the updated
// segment lengths say what was written); appends the Writes to `plan`.
void FillSegments(const Segment* offered, uint32_t count, Segment* updated, uint64_t length,
                  bool from_stream, uint32_t piece, ReplyPlan* plan) {
  uint64_t off = 0;
  for (uint32_t i = 0; i < count; ++i) {
    updated[i] = offered[i];
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(offered[i].length, length - off));
    updated[i].length = n;
    if (n != 0) {
      ReplyWrite& w = plan->writes[plan->write_count++];
      w.from_stream = from_stream;
      w.piece = piece;
      w.piece_offset = off;
      w.stream_offset = off;
      w.length = n;
      w.dst = offered[i];
      w.dst.length = n;
      plan->write_bytes += n;
    }
    off += n;
  }
}

ReplyKind ErrChunk(ReplyPlan* plan, RdmaError e) {
  plan->kind = ReplyKind::kErrChunk;
  plan->reason = e;
  plan->write_count = 0;
  plan->write_bytes = 0;
  plan->header_size = kErrChunkSize;
  return plan->kind;
}

}  // namespace

ReplyKind PlanReply(const rpc::Message& reply, const CallPlan& call, uint32_t inline_threshold,
                    ReplyPlan* plan) {
  *plan = ReplyPlan();
  for (int8_t& c : plan->piece_chunk) c = -1;
  // RFC 8166 4.3.2: each DDP-eligible result fills the next Write chunk.
  uint32_t next = 0;
  uint64_t stream = 0;
  for (size_t i = 0; i < reply.count(); ++i) {
    const rpc::Piece& p = reply[i];
    if (p.ddp && next < call.write_chunk_count) {
      if (p.bytes.size() > call.write_chunks[next].length) {
        return ErrChunk(plan, RdmaError::kWriteChunkTooSmall);
      }
      plan->piece_chunk[i] = static_cast<int8_t>(next++);
    } else {
      stream += p.ddp ? XdrRoundUp(p.bytes.size()) : p.bytes.size();
    }
  }
  plan->stream_length = stream;
  // The Write list goes back with every chunk the requester offered:
  // used ones with the lengths written, unused ones with empty segments
  // (RFC 8166 4.3.2.2).
  plan->write_chunk_count = call.write_chunk_count;
  for (uint32_t c = 0; c < call.write_chunk_count; ++c) {
    const PlanWriteChunk& wc = call.write_chunks[c];
    uint64_t len = 0;
    uint32_t piece = 0;
    for (size_t i = 0; i < reply.count(); ++i) {
      if (plan->piece_chunk[i] == static_cast<int8_t>(c)) {
        len = reply[i].bytes.size();
        piece = static_cast<uint32_t>(i);
      }
    }
    FillSegments(call.write_segs + wc.seg_begin, wc.seg_count, plan->write_segs + wc.seg_begin, len,
                 false, piece, plan);
    plan->write_list[c].segments =
        std::span<const Segment>(plan->write_segs + wc.seg_begin, wc.seg_count);
  }
  plan->kind = ReplyKind::kInline;
  plan->header_size = EncodedHeaderSize(plan->Spec(call.xid, 0));
  if (plan->header_size == 0) return ErrChunk(plan, RdmaError::kReplyUnencodable);
  if (plan->header_size + stream <= inline_threshold) return plan->kind;
  // RFC 8166 3.5.3 Long Reply: the reduced stream goes through the Reply chunk.
  if (!call.has_reply_chunk || stream > call.reply_chunk_length) {
    return ErrChunk(plan, RdmaError::kReplyTooLong);
  }
  plan->kind = ReplyKind::kReplyChunk;
  plan->reply_seg_count = call.reply_seg_count;
  FillSegments(call.reply_segs, call.reply_seg_count, plan->reply_segs, stream, true, 0, plan);
  plan->header_size = EncodedHeaderSize(plan->Spec(call.xid, 0));
  if (plan->header_size == 0 || plan->header_size > inline_threshold) {
    return ErrChunk(plan, RdmaError::kReplyUnencodable);
  }
  return plan->kind;
}

size_t CopyReducedStream(const rpc::Message& reply, const ReplyPlan& plan, MutableByteSpan out) {
  ByteWriter w(out);
  for (size_t i = 0; i < reply.count(); ++i) {
    if (plan.piece_chunk[i] >= 0) continue;
    w.Bytes(reply[i].bytes);
    if (reply[i].ddp) w.Zeros(XdrPadding(reply[i].bytes.size()));
  }
  return w.ok() ? w.offset() : 0;
}

ReplyVerdict ParseReplyHeader(ByteSpan message, const CheckOptions& options, ReplyParse* out) {
  *out = ReplyParse();
  const ReplyCheck c = CheckReply(message, options);
  out->verdict = c.verdict;
  out->header_reason = c.reason;
  const HeaderView& h = c.header;
  if (h.has_fixed_fields()) {
    out->xid = h.xid();
    out->credit = h.credit();
    out->proc = h.proc();
  }
  if (c.verdict != ReplyVerdict::kAccept) return c.verdict;
  if (h.proc() == Proc::kError) {
    out->err = h.err();
  } else if (h.proc() == Proc::kMsg) {
    out->inline_offset = h.header_size();
    out->inline_length = h.payload().size();
  }
  return c.verdict;
}

ReplyVerdict CheckReplyAgainstOffer(ByteSpan message, const CheckOptions& options,
                                    const OfferedChunks& offer, ReplyParse* out) {
  if (ParseReplyHeader(message, options, out) != ReplyVerdict::kAccept) return out->verdict;
  if (out->proc == Proc::kError) return out->verdict;
  HeaderView h;
  if (DecodeHeader(message, options.limits, &h) != HeaderError::kOk) {
    out->verdict = ReplyVerdict::kDrop;  // CheckReply decoded it: not reached
    return out->verdict;
  }
  auto bad = [out](RdmaError e) {
    out->verdict = ReplyVerdict::kDrop;
    out->reason = e;
    return out->verdict;
  };
  if (h.write_chunk_count() > offer.write_count) return bad(RdmaError::kReplyBadWriteList);
  uint32_t i = 0;
  for (WriteChunkView w : h.write_chunks()) {
    if (w.segment_count() != offer.write_segments[i]) return bad(RdmaError::kReplyBadWriteList);
    const uint64_t len = w.total_length();
    if (len > offer.write_lengths[i]) return bad(RdmaError::kReplyBadWriteList);
    out->result_lengths[i++] = len;
  }
  out->result_count = i;
  if (out->proc == Proc::kNomsg) {
    if (!offer.reply_chunk) return bad(RdmaError::kReplyBadReplyChunk);
    const uint64_t len = h.reply_chunk().total_length();
    if (len > offer.reply_length) return bad(RdmaError::kReplyBadReplyChunk);
    out->reply_chunk_bytes = len;
  }
  return out->verdict;
}

}  // namespace iwarp::rpcrdma
