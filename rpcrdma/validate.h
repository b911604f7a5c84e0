// Receive-side checks of RPC-over-RDMA version 1 headers.
//
// CheckCall is what a responder (server) runs on every received Send before
// the RPC layer sees it; CheckReply is the requester's (client's) counterpart.
// Both are modelled on Linux svcrdma / xprtrdma behaviour where the RFC leaves
// room, and follow RFC 8166 where they differ (noted at each rule). They only
// read the message, never allocate, and report exactly one reason.
#ifndef IWARPD_RPCRDMA_VALIDATE_H_
#define IWARPD_RPCRDMA_VALIDATE_H_

#include <cstddef>
#include <cstdint>

#include "common/bytes.h"
#include "rpcrdma/header.h"

namespace iwarp::rpcrdma {

struct CheckOptions {
  Limits limits;
  // RFC 8166 4.5.2 lists "rdma_xid does not match the RPC XID" as an XDR
  // error. Linux svcrdma does not check it; a responder may turn this off.
  bool check_rpc_xid = true;
};

enum class CallVerdict : uint8_t {
  kAccept,         // hand header.payload() (RDMA_MSG) or the chunks to RPC
  kReplyErrVers,   // send BuildErrorReply(): RDMA_ERROR / ERR_VERS
  kReplyErrChunk,  // send BuildErrorReply(): RDMA_ERROR / ERR_CHUNK
  kDrop,           // discard silently (count `reason`)
};

struct CallCheck {
  CallVerdict verdict = CallVerdict::kDrop;
  HeaderError reason = HeaderError::kOk;  // kOk exactly when verdict is kAccept
  HeaderView header;  // decoded as far as the check got; fixed fields valid unless kShortMessage
};

// Responder checks of a received RPC Call (RFC 8166 4.5):
//  - shorter than 28 bytes: drop (kShortMessage), before any parsing. Linux
//    instead parses 16-byte headers and may answer them; the RFC forbids
//    trusting their XID.
//  - rdma_proc RDMA_ERROR (its value and position are fixed for all
//    versions): drop, whatever rdma_vers says, so errors never ping-pong.
//  - rdma_vers != 1: ERR_VERS.
//  - RDMA_DONE: drop.
//  - RDMA_MSGP, unknown procedure, any XDR or limit error: ERR_CHUNK.
//  - read list (RFC 8166 3.4.5, 3.5.3): every Position a multiple of 4; a
//    Position Zero Read chunk only in RDMA_NOMSG, where it is required; read
//    chunks (segments grouped by Position) must not overlap in the unreduced
//    Payload stream; in RDMA_MSG each is reinserted within the inline payload.
//  - RDMA_NOMSG with no chunk at all; RDMA_MSG without an RPC XID or with a
//    different one (when options.check_rpc_xid): ERR_CHUNK.
CallCheck CheckCall(ByteSpan message, const CheckOptions& options);

// Writes the RDMA_ERROR reply a kReplyErrVers / kReplyErrChunk verdict asks
// for, echoing the call's xid and vers and granting `credit`. Returns the
// bytes written, or 0 for other verdicts or when `out` is too small.
size_t BuildErrorReply(const CallCheck& check, uint32_t credit, MutableByteSpan out);

enum class ReplyVerdict : uint8_t {
  kAccept,  // RDMA_MSG / RDMA_NOMSG reply, or an RDMA_ERROR ending the XID
  kDrop,    // discard silently (RFC 8166 4.5: requesters never answer)
};

struct ReplyCheck {
  ReplyVerdict verdict = ReplyVerdict::kDrop;
  HeaderError reason = HeaderError::kOk;
  HeaderView header;
};

// Requester checks of a received reply: any decode error, RDMA_DONE, a read
// list (RFC 8166 4.3.1), RDMA_MSG without a matching RPC XID, RDMA_NOMSG
// without a Reply chunk: drop. A well-formed RDMA_ERROR (20 or 28 bytes,
// although RFC 8166 4.5 names 28 as the minimum header) is accepted.
ReplyCheck CheckReply(ByteSpan message, const CheckOptions& options);

}  // namespace iwarp::rpcrdma

#endif  // IWARPD_RPCRDMA_VALIDATE_H_
