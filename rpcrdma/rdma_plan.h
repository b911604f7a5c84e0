// The decision logic of the RPC-over-RDMA v1 transport (RdmaServer,
// RdmaClient) as pure functions over byte spans: no libiwarp, no memory
// registration, no allocation. The transports run these on every message
// and then only execute the plan (post RDMA Reads / Writes / Sends); the
// fuzzer `rpcrdma_transport` runs them on arbitrary bytes.
//
//  - PlanCall: a responder's receive path. An inbound Send -> RFC 8166 header
//    checks (CheckCall) -> the transport's own bounds (read chunks, call
//    size, write chunks) -> where each Read chunk lands in the responder's
//    sink buffer.
//  - BuildCallMessage: after the Reads, the call as rpc::Message pieces, the
//    Read chunks reinserted at their XDR positions (RFC 8166 3.4.5).
//  - PlanReply: how a reply leaves: inline RDMA_MSG, DDP-eligible pieces by
//    RDMA Write into the Write list, a Long Reply by the Reply chunk with
//    RDMA_NOMSG (RFC 8166 3.5.3), or ERR_CHUNK when the requester's chunks
//    cannot hold it.
//  - ParseReply: a requester's receive path: RFC 8166 checks (CheckReply) ->
//    the updated Write list and Reply chunk lengths checked against what the
//    requester offered.
#ifndef IWARPD_RPCRDMA_RDMA_PLAN_H_
#define IWARPD_RPCRDMA_RDMA_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "rpcrdma/header.h"
#include "rpcrdma/rpc_transport.h"
#include "rpcrdma/validate.h"

namespace iwarp::rpcrdma {

// Transport-level reasons (beyond header.h's HeaderError), each a counter
// of RdmaCounters::errors. RdmaErrorName gives the stable counter name.
// X(enumerator, "name")
#define IWARP_RPCRDMA_RDMA_ERRORS(X)                                                                                \
  X(kNone, "none")                                                                                                  \
  /* Responder: call refused with ERR_CHUNK. */                                                                     \
  X(kTooManyReadChunks, "rpcrdma_too_many_read_chunks")  /* more Read chunks (positions) than kMaxCallReadChunks */ \
  X(kCallTooLong, "rpcrdma_call_too_long")  /* Read chunks longer than the responder's call buffer */               \
  /* more Write chunks than rpc::kMaxDdpResults */                                                                  \
  X(kTooManyWriteChunks, "rpcrdma_too_many_write_chunks_for_transport")                                             \
  /* Responder: reply refused with ERR_CHUNK. */                                                                    \
  X(kReplyTooLong, "rpcrdma_reply_too_long")  /* fits neither inline nor the Reply chunk */                         \
  X(kWriteChunkTooSmall, "rpcrdma_write_chunk_too_small")  /* a DDP-eligible result longer than its Write chunk */  \
  X(kReplyUnencodable, "rpcrdma_reply_unencodable")  /* more pieces than the reply header can describe */           \
  /* Responder: connection ended (named reasons, RFC 8166 3.3.1 / 4.4). */                                          \
  X(kCreditOverrun, "rpcrdma_credit_overrun")  /* more calls in progress than credits granted */                    \
  X(kReadChunkFailed, "rpcrdma_read_chunk_failed")  /* an RDMA Read of a Read chunk failed (remote access error, ...) */ \
  X(kWriteFailed, "rpcrdma_write_failed")  /* an RDMA Write into a Write or Reply chunk failed */                   \
  X(kSendFailed, "rpcrdma_send_failed")  /* a Send (reply, call or error) failed */                                 \
  X(kRecvFailed, "rpcrdma_recv_failed")  /* a receive completed in error */                                         \
  /* disconnected / QP error with a call in progress (server; a client that leaves between calls ends normally) */  \
  X(kConnectionLost, "rpcrdma_connection_lost")                                                                     \
  X(kNoBuffer, "rpcrdma_no_buffer")  /* registered memory exhausted: call or reply dropped */                       \
  /* Requester. */                                                                                                  \
  X(kReplyUnknownXid, "rpcrdma_reply_unknown_xid")  /* a reply whose XID no outstanding call has */                 \
  /* updated Write list longer than the offered sinks / more chunks */                                              \
  X(kReplyBadWriteList, "rpcrdma_reply_bad_write_list")                                                             \
  X(kReplyBadReplyChunk, "rpcrdma_reply_bad_reply_chunk")  /* updated Reply chunk longer than offered */            \
  X(kRdmaErrorReceived, "rpcrdma_rdma_error_received")  /* RDMA_ERROR ended a call (-EPROTO) */                     \
  /* Call(): the call cannot be conveyed (-EMSGSIZE) */                                                             \
  X(kCallTooLongForTransport, "rpcrdma_call_too_long_for_transport")                                                \
  X(kReconnectFailed, "rpcrdma_reconnect_failed")  /* calls failed with -ECONNRESET after the retries */            \
  X(kCallTimeout, "rpcrdma_call_timeout")  /* a call without reply by call_timeout_ms (-ETIMEDOUT) */
enum class RdmaError : uint8_t {
  IWARP_RPCRDMA_RDMA_ERRORS(IWARP_ENUMERATOR)
  kCount
};
inline constexpr size_t kNumRdmaErrors = static_cast<size_t>(RdmaError::kCount);
std::string_view RdmaErrorName(RdmaError e);

// Read chunks one call may carry (each becomes one DDP piece; with the
// inline XDR around them they fill rpc::kMaxPieces).
inline constexpr uint32_t kMaxCallReadChunks = 3;

struct PlanLimits {
  CheckOptions check;
  // Bytes of all Read chunks of one call (the responder's sink buffer).
  uint64_t max_call_bytes = (uint64_t{1} << 20) + 65536;
};

struct PlanChunk {
  uint32_t position = 0;
  uint32_t seg_begin = 0;   // index into CallPlan::reads
  uint32_t seg_count = 0;
  uint64_t length = 0;      // sum of its segment lengths
  uint64_t sink_offset = 0; // where it lands in the sink buffer
};

struct PlanWriteChunk {
  uint32_t seg_begin = 0;  // index into CallPlan::write_segs
  uint32_t seg_count = 0;
  uint64_t length = 0;
};

inline constexpr uint32_t kPlanMaxSegments = 32;  // per list, as Limits' default

// A decoded, checked call and what the responder has to do with it. Holds
// copies of the segments (no pointer into the received bytes).
struct CallPlan {
  CallVerdict verdict = CallVerdict::kDrop;
  HeaderError header_reason = HeaderError::kOk;  // CheckCall's reason
  RdmaError reason = RdmaError::kNone;           // transport bound that refused it
  uint32_t xid = 0, vers = 0, credit = 0;
  Proc proc = Proc::kMsg;
  uint64_t inline_offset = 0;  // RDMA_MSG: Payload stream offset in the Send
  uint64_t inline_length = 0;
  // Read list, segments sorted by position (list order kept within one).
  ReadSegment reads[kPlanMaxSegments];
  uint32_t read_count = 0;
  PlanChunk chunks[kMaxCallReadChunks + 1];  // + the Position Zero chunk
  uint32_t chunk_count = 0;
  uint64_t sink_bytes = 0;  // sink buffer the Reads need
  Segment write_segs[kPlanMaxSegments];
  PlanWriteChunk write_chunks[rpc::kMaxDdpResults];
  uint32_t write_chunk_count = 0;
  Segment reply_segs[kPlanMaxSegments];
  uint32_t reply_seg_count = 0;
  bool has_reply_chunk = false;
  uint64_t reply_chunk_length = 0;
};

// Limits given to the decoder are clamped to kPlanMaxSegments per list and
// rpc::kMaxDdpResults write chunks (more: ERR_CHUNK with the decoder's
// reason). Returns plan->verdict.
CallVerdict PlanCall(ByteSpan message, const PlanLimits& limits, CallPlan* plan);

// The call's XDR stream after the Reads completed: `message` is the Send
// the plan came from, `sink` the buffer of plan.sink_bytes the Reads filled
// (registered with `sink_stag`, which the pieces carry). Pieces from the
// inline payload carry `inline_stag`. False when the plan is not kAccept.
bool BuildCallMessage(const CallPlan& plan, ByteSpan message, uint32_t inline_stag,
                      ByteSpan sink, uint32_t sink_stag, rpc::Message* out);

enum class ReplyKind : uint8_t { kInline, kReplyChunk, kErrChunk };

// One RDMA Write: `length` bytes of reply piece `piece` from `piece_offset`
// (or, for kReplyChunk, of the reduced reply stream from `stream_offset`)
// to `dst`.
struct ReplyWrite {
  bool from_stream = false;  // Reply chunk: bytes of the reduced stream
  uint32_t piece = 0;
  uint64_t piece_offset = 0;
  uint64_t stream_offset = 0;
  uint32_t length = 0;
  Segment dst;
};

inline constexpr uint32_t kMaxReplyWrites = 2 * kPlanMaxSegments + rpc::kMaxDdpResults;

struct ReplyPlan {
  ReplyKind kind = ReplyKind::kErrChunk;
  RdmaError reason = RdmaError::kNone;
  // Which write chunk carries piece i (-1: it stays in the stream).
  int8_t piece_chunk[rpc::kMaxPieces] = {};
  uint64_t stream_length = 0;  // reduced stream (pads of inline items written)
  // The reply header's Write list (segments with their updated lengths)
  // and Reply chunk.
  Segment write_segs[kPlanMaxSegments];
  WriteChunkSpec write_list[rpc::kMaxDdpResults];
  uint32_t write_chunk_count = 0;
  Segment reply_segs[kPlanMaxSegments];
  uint32_t reply_seg_count = 0;
  ReplyWrite writes[kMaxReplyWrites];
  uint32_t write_count = 0;
  uint64_t write_bytes = 0;
  size_t header_size = 0;
  // HeaderSpec for EncodeHeader (spans point into this plan; set `xid` and
  // `credit` before encoding).
  HeaderSpec Spec(uint32_t xid, uint32_t credit) const;
};

// `inline_threshold`: largest Send the requester receives. Never fails for
// a kAccept plan: an impossible reply becomes kErrChunk with a reason.
ReplyKind PlanReply(const rpc::Message& reply, const CallPlan& call, uint32_t inline_threshold,
                    ReplyPlan* plan);

// Writes the reduced reply stream (inline items with their XDR pads, DDP
// pieces planned into Write chunks left out) into `out`; returns the bytes
// written, or 0 with nothing useful written when `out` is too small.
size_t CopyReducedStream(const rpc::Message& reply, const ReplyPlan& plan, MutableByteSpan out);

// What a requester offered for one call.
struct OfferedChunks {
  uint64_t write_lengths[rpc::kMaxDdpResults] = {};
  uint32_t write_segments[rpc::kMaxDdpResults] = {};  // segments per chunk
  uint32_t write_count = 0;
  bool reply_chunk = false;
  uint64_t reply_length = 0;
};

struct ReplyParse {
  ReplyVerdict verdict = ReplyVerdict::kDrop;
  HeaderError header_reason = HeaderError::kOk;
  RdmaError reason = RdmaError::kNone;
  uint32_t xid = 0, credit = 0;
  Proc proc = Proc::kMsg;
  ErrCode err = ErrCode::kChunk;
  uint64_t inline_offset = 0, inline_length = 0;  // RDMA_MSG payload
  uint64_t result_lengths[rpc::kMaxDdpResults] = {};
  uint32_t result_count = 0;
  uint64_t reply_chunk_bytes = 0;  // RDMA_NOMSG: the stream's length
};

// Header checks only (the XID is not known yet): fills xid/credit/proc.
ReplyVerdict ParseReplyHeader(ByteSpan message, const CheckOptions& options, ReplyParse* out);
// With the call's offer: the returned Write list must match the offered
// chunks in count and segments and no chunk may carry more than was
// offered; the Reply chunk likewise. kDrop with a reason otherwise.
ReplyVerdict CheckReplyAgainstOffer(ByteSpan message, const CheckOptions& options,
                                    const OfferedChunks& offer, ReplyParse* out);

}  // namespace iwarp::rpcrdma

#endif  // IWARPD_RPCRDMA_RDMA_PLAN_H_
