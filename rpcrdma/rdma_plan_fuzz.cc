// Fuzz target `rpcrdma_transport`: the RdmaServer receive path without a
// daemon. Arbitrary bytes as an inbound Send -> PlanCall (header checks,
// chunk planning) -> BuildCallMessage over a sink the "Reads" filled ->
// PlanReply of an echo of the call -> CopyReducedStream; and the same bytes
// as a reply at the client (ParseReplyHeader / CheckReplyAgainstOffer).
//
// Beyond "does not crash", it traps when:
//  - an accepted plan's chunks overlap in the sink, exceed the call limit,
//    or the rebuilt call's stream length differs from inline + Read chunks;
//  - a reply plan writes more than a chunk offers, or its Writes do not add
//    up to the DDP pieces / reduced stream it moved;
//  - a reply parse reports results longer than offered.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/bytes.h"
#include "rpcrdma/rdma_plan.h"
#include "rpcrdma/xdr.h"

namespace iwarp::rpcrdma {
namespace {

void Check(bool cond) {
  if (!cond) __builtin_trap();
}

constexpr uint64_t kMaxCall = 1 << 16;

void FuzzCall(ByteSpan in) {
  PlanLimits limits;
  limits.max_call_bytes = kMaxCall;
  static CallPlan plan;
  const CallVerdict v = PlanCall(in, limits, &plan);
  Check(v == plan.verdict);
  if (v != CallVerdict::kAccept) {
    Check(plan.header_reason != HeaderError::kOk || plan.reason != RdmaError::kNone);
    return;
  }
  Check(plan.header_reason == HeaderError::kOk && plan.reason == RdmaError::kNone);
  Check(plan.sink_bytes <= kMaxCall);
  uint64_t end = 0, data = 0;
  for (uint32_t k = 0; k < plan.chunk_count; ++k) {
    Check(plan.chunks[k].sink_offset >= end);
    end = plan.chunks[k].sink_offset + plan.chunks[k].length;
    Check(end <= plan.sink_bytes);
    if (k > 0) Check(plan.chunks[k].position > plan.chunks[k - 1].position);
    data += plan.chunks[k].length;
  }
  Check(plan.write_chunk_count <= rpc::kMaxDdpResults);
  // The "Reads" fill the sink with a pattern.
  static std::vector<uint8_t> sink(kMaxCall);
  for (size_t i = 0; i < plan.sink_bytes; ++i) sink[i] = static_cast<uint8_t>(i * 7);
  rpc::Message call;
  Check(BuildCallMessage(plan, in, 1, ByteSpan(sink.data(), plan.sink_bytes), 2, &call));
  uint64_t expect = 0;
  if (plan.proc == Proc::kMsg) {
    expect = plan.inline_length;
    for (uint32_t k = 0; k < plan.chunk_count; ++k) expect += XdrRoundUp(plan.chunks[k].length);
  } else {
    expect = plan.chunks[0].length;
    for (uint32_t k = 1; k < plan.chunk_count; ++k) expect += XdrRoundUp(plan.chunks[k].length);
  }
  Check(call.stream_length() == expect);
  (void)data;

  // Echo-like reply: every piece of the call back, DDP ones as DDP.
  for (uint32_t thr : {1024u, 4096u}) {
    static ReplyPlan rp;
    const ReplyKind kind = PlanReply(call, plan, thr, &rp);
    Check(kind == rp.kind);
    if (kind == ReplyKind::kErrChunk) {
      Check(rp.reason != RdmaError::kNone && rp.write_count == 0);
      continue;
    }
    uint64_t moved = 0, written_pieces = 0, written_stream = 0;
    for (size_t i = 0; i < call.count(); ++i) {
      if (rp.piece_chunk[i] >= 0) {
        moved += call[i].bytes.size();
        Check(call[i].bytes.size() <= plan.write_chunks[rp.piece_chunk[i]].length);
      }
    }
    for (uint32_t w = 0; w < rp.write_count; ++w) {
      const ReplyWrite& x = rp.writes[w];
      if (x.from_stream) {
        written_stream += x.length;
        Check(x.stream_offset + x.length <= rp.stream_length);
      } else {
        written_pieces += x.length;
        Check(x.piece < call.count() && x.piece_offset + x.length <= call[x.piece].bytes.size());
      }
    }
    Check(written_pieces == moved);
    Check(rp.write_bytes == written_pieces + written_stream);
    static std::vector<uint8_t> out(kMaxCall + 64);
    const size_t n = CopyReducedStream(call, rp, MutableByteSpan(out.data(), out.size()));
    Check(n == rp.stream_length);
    if (kind == ReplyKind::kInline) {
      Check(rp.header_size + rp.stream_length <= thr);
      Check(written_stream == 0);
    } else {
      Check(plan.has_reply_chunk && written_stream == rp.stream_length);
      Check(rp.stream_length <= plan.reply_chunk_length);
    }
    uint8_t hdr[4096];
    size_t hn = 0;
    Check(EncodeHeader(rp.Spec(plan.xid, 8), MutableByteSpan(hdr, sizeof(hdr)), &hn) ==
              EncodeStatus::kOk &&
          hn == rp.header_size);
  }
}

void FuzzReply(ByteSpan in) {
  CheckOptions co;
  OfferedChunks offer;
  offer.write_count = 2;
  offer.write_lengths[0] = 4096;
  offer.write_segments[0] = 1;
  offer.write_lengths[1] = 100;
  offer.write_segments[1] = 2;
  offer.reply_chunk = true;
  offer.reply_length = 8192;
  ReplyParse p;
  if (CheckReplyAgainstOffer(in, co, offer, &p) != ReplyVerdict::kAccept) return;
  Check(p.result_count <= offer.write_count);
  for (uint32_t i = 0; i < p.result_count; ++i) Check(p.result_lengths[i] <= offer.write_lengths[i]);
  if (p.proc == Proc::kNomsg) Check(p.reply_chunk_bytes <= offer.reply_length);
  if (p.proc == Proc::kMsg) Check(p.inline_offset + p.inline_length == in.size());
}

}  // namespace
}  // namespace iwarp::rpcrdma

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const iwarp::ByteSpan in(data, size);
  iwarp::rpcrdma::FuzzCall(in);
  iwarp::rpcrdma::FuzzReply(in);
  return 0;
}
