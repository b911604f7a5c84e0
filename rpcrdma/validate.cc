#include "rpcrdma/validate.h"

#include "rpcrdma/xdr.h"

namespace iwarp::rpcrdma {
namespace {

CallCheck Call(CallVerdict v, HeaderError reason, const HeaderView& h) {
  CallCheck c;
  c.verdict = v;
  c.reason = reason;
  c.header = h;
  return c;
}

// RFC 8166 4.2.1 / 4.5.2: the RPC message of an RDMA_MSG starts with its XID,
// which must equal rdma_xid.
HeaderError CheckInlineRpc(const HeaderView& h, const CheckOptions& options) {
  ByteSpan payload = h.payload();
  if (payload.size() < 4) return HeaderError::kMsgNoPayload;
  if (options.check_rpc_xid && LoadBe32(payload.data()) != h.xid()) {
    return HeaderError::kXidMismatch;
  }
  return HeaderError::kOk;
}

// RFC 8166 3.4.5, 3.4.4.4, 3.5.3: rules of the read list of a call.
HeaderError CheckReadList(const HeaderView& h) {
  bool position_zero = false;
  for (uint32_t i = 0; i < h.read_segment_count(); ++i) {
    uint32_t pos = h.read_segment(i).position;
    // RFC 8166 3.4.5: "The value in this field MUST be a multiple of four."
    if (!XdrAligned(pos)) return HeaderError::kReadPositionMisaligned;
    if (pos == 0) position_zero = true;
  }
  const bool is_msg = h.proc() == Proc::kMsg;
  if (is_msg && position_zero) {
    // A Position Zero Read chunk carries the whole Payload stream (Long Call,
    // RFC 8166 3.5.3), which RDMA_MSG already carries inline.
    return HeaderError::kPositionZeroInMsg;
  }
  if (!is_msg && !position_zero) {
    // RFC 8166 4.2.4: RDMA_NOMSG has no inline Payload stream; for a call it
    // can only come from a Position Zero Read chunk.
    return HeaderError::kNomsgNoCallChunk;
  }
  // Chunks other than the Position Zero one are data items reduced out of the
  // Payload stream. In the unreduced stream each occupies its length rounded
  // up to XDR alignment (RFC 8166 3.4.4.4: the padding leaves the Payload
  // stream with the item), so a chunk starts no earlier than where the
  // previous one ends; in RDMA_MSG its reinsertion point in the inline
  // payload (Position less what earlier chunks removed) lies within it.
  const uint64_t inline_size = h.payload().size();
  uint64_t removed = 0;   // bytes reduced out by earlier chunks
  uint64_t prev_end = 0;  // end of the previous chunk in the unreduced stream
  ReadChunkInfo c;
  for (bool more = h.NextReadChunk(true, 0, &c); more;
       more = h.NextReadChunk(false, c.position, &c)) {
    if (c.position == 0) continue;
    if (c.position < prev_end) return HeaderError::kReadChunkOverlap;
    if (is_msg && c.position - removed > inline_size) {
      return HeaderError::kReadPositionBeyondPayload;
    }
    removed += XdrRoundUp(c.length);
    prev_end = c.position + XdrRoundUp(c.length);
  }
  return HeaderError::kOk;
}

}  // namespace

CallCheck CheckCall(ByteSpan message, const CheckOptions& options) {
  HeaderView h;
  // RFC 8166 4.5: shorter than a minimal header, the XID cannot be trusted;
  // discard before any parsing.
  if (message.size() < kMinHeaderSize) return Call(CallVerdict::kDrop, HeaderError::kShortMessage, h);

  HeaderError e = DecodeHeader(message, options.limits, &h);
  // RFC 8166 4.2.4: a responder silently discards RDMA_ERROR. The value and
  // position of rdma_proc are fixed for all versions (4.1.2), so this holds
  // before the version is looked at.
  if (h.proc() == Proc::kError) return Call(CallVerdict::kDrop, HeaderError::kErrorReceived, h);
  // RFC 8166 4.5.1.
  if (e == HeaderError::kBadVersion) return Call(CallVerdict::kReplyErrVers, e, h);
  // RFC 8166 4.6.2: RDMA_DONE is no longer used; nothing to answer.
  if (h.proc() == Proc::kDone) return Call(CallVerdict::kDrop, HeaderError::kDoneReceived, h);
  // RFC 8166 4.5.2: XDR errors with a known version, RDMA_MSGP (4.6.1) and
  // unknown procedures.
  if (e != HeaderError::kOk) return Call(CallVerdict::kReplyErrChunk, e, h);

  if (h.proc() == Proc::kNomsg && h.read_segment_count() == 0 && h.write_chunk_count() == 0 &&
      !h.has_reply_chunk()) {
    return Call(CallVerdict::kReplyErrChunk, HeaderError::kNomsgNoChunks, h);
  }
  e = CheckReadList(h);
  if (e == HeaderError::kOk && h.proc() == Proc::kMsg) e = CheckInlineRpc(h, options);
  if (e != HeaderError::kOk) return Call(CallVerdict::kReplyErrChunk, e, h);
  return Call(CallVerdict::kAccept, HeaderError::kOk, h);
}

size_t BuildErrorReply(const CallCheck& check, uint32_t credit, MutableByteSpan out) {
  const HeaderView& h = check.header;
  switch (check.verdict) {
    case CallVerdict::kReplyErrVers:
      return EncodeErrVers(h.xid(), h.vers(), credit, out);
    case CallVerdict::kReplyErrChunk:
      return EncodeErrChunk(h.xid(), h.vers(), credit, out);
    case CallVerdict::kAccept:
    case CallVerdict::kDrop:
      break;
  }
  return 0;
}

ReplyCheck CheckReply(ByteSpan message, const CheckOptions& options) {
  ReplyCheck c;
  HeaderError e = DecodeHeader(message, options.limits, &c.header);
  const HeaderView& h = c.header;
  if (e == HeaderError::kOk) {
    switch (h.proc()) {
      case Proc::kError:
        break;
      case Proc::kDone:
        e = HeaderError::kDoneReceived;
        break;
      case Proc::kMsg:
      case Proc::kNomsg:
        if (h.read_segment_count() != 0) {
          e = HeaderError::kReadListInReply;  // RFC 8166 4.3.1
        } else if (h.proc() == Proc::kMsg) {
          e = CheckInlineRpc(h, options);
        } else if (!h.has_reply_chunk()) {
          // RFC 8166 3.5.3 Long Reply: the Payload stream is in the Reply chunk.
          e = h.write_chunk_count() == 0 ? HeaderError::kNomsgNoChunks
                                         : HeaderError::kNomsgNoReplyChunk;
        }
        break;
      case Proc::kMsgp:
        e = HeaderError::kMsgpUnsupported;  // not reachable: the decoder refuses it
        break;
    }
  }
  c.reason = e;
  c.verdict = e == HeaderError::kOk ? ReplyVerdict::kAccept : ReplyVerdict::kDrop;
  return c;
}

}  // namespace iwarp::rpcrdma
