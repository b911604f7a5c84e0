// An ONC RPC message (RFC 5531) as the RPC transports carry it: the XDR
// stream of one call or reply as a short list of byte pieces, so that bulk
// data (NFS READ / WRITE payloads) is never copied to make one contiguous
// buffer.
//
// The contract between the RPC layer (rpc_*.h: headers, XDR of arguments and
// results, dispatch) and the transports (record-marked TCP, RPC-over-RDMA v1):
//
//  - The pieces, concatenated in order, are the message's XDR stream, except
//    that a DDP-eligible piece (RFC 8166 6.1: the body of an opaque or string
//    item whose 4-byte length word ends the piece before it) carries its body
//    only: its XDR pad (RFC 4506 4.10, 0..3 zero bytes) is implied and never
//    in `bytes`. A transport that sends the stream inline (TCP record marking,
//    an RDMA_MSG inline body, a Reply chunk, a Read chunk holding the whole
//    stream for RDMA_NOMSG) writes the pad; one that moves the item by a chunk
//    (Read list for calls, Write list for replies, RFC 8166 3.5) omits body
//    and pad from the inline stream (the length word stays inline).
//  - A piece references memory its producer owns until the transport reports
//    the message sent (the call's reply arrived, or the reply was sent).
//  - `stag`: the STag of registered memory holding the piece's bytes (both
//    ends registered them with libiwarp), or 0. An RDMA transport exposes a
//    registered DDP-eligible piece to the peer directly (Read chunk, or the
//    source of the RDMA Write into a Write chunk) and copies an unregistered
//    one into its own registered buffers first.
#ifndef IWARPD_RPCRDMA_RPC_TRANSPORT_H_
#define IWARPD_RPCRDMA_RPC_TRANSPORT_H_

#include <cstddef>
#include <cstdint>

#include <functional>

#include "common/bytes.h"

namespace iwarp::rpc {

struct Piece {
  ByteSpan bytes;
  bool ddp = false;   // DDP-eligible data item body (pad implied, see above)
  uint32_t stag = 0;  // registered memory holding `bytes`, 0 if none
};

// Most pieces one message has: header + up to three DDP-eligible items with
// the XDR between and after them.
inline constexpr size_t kMaxPieces = 8;

class Message {
 public:
  // Appends a piece; false (message unchanged) when full or, for a DDP
  // piece, when the stream so far is not XDR-aligned (RFC 8166 3.4.5).
  bool Add(const Piece& p) {
    if (count_ == kMaxPieces) return false;
    if (p.ddp && (stream_length_ % 4) != 0) return false;
    pieces_[count_++] = p;
    stream_length_ += p.bytes.size();
    if (p.ddp) stream_length_ += (4 - p.bytes.size() % 4) % 4;
    return true;
  }
  size_t count() const { return count_; }
  const Piece& operator[](size_t i) const { return pieces_[i]; }
  const Piece* begin() const { return pieces_; }
  const Piece* end() const { return pieces_ + count_; }
  // Length of the XDR stream, implied pads included.
  uint64_t stream_length() const { return stream_length_; }
  void Clear() {
    count_ = 0;
    stream_length_ = 0;
  }

 private:
  Piece pieces_[kMaxPieces];
  size_t count_ = 0;
  uint64_t stream_length_ = 0;
};

// ---------------------------------------------------------------- server

// A call a server transport delivered, until the handler answers it.
using CallToken = uint64_t;

// One connection of a server transport (TCP or RPC-over-RDMA). Owned by the
// transport; valid until CallHandler::OnDisconnect for it returns.
class ServerConnection {
 public:
  virtual ~ServerConnection() = default;
  // Answers the call `token` with `reply` (its XID is the call's). Pieces
  // with stag == 0 are copied before Reply returns; registered pieces must
  // stay valid until CallHandler::OnReplyDone(token). Returns false if the
  // connection is gone (the call is dropped; OnReplyDone still follows).
  virtual bool Reply(CallToken token, const Message& reply) = 0;
  // Ends the call without a reply (RFC 5531: e.g. a call the server drops).
  virtual void Drop(CallToken token) = 0;
  // The peer's IPv4 address (host order) and port, for export checks.
  virtual uint32_t peer_ipv4() const = 0;
  virtual uint16_t peer_port() const = 0;
};

// The RPC layer's side of a server transport. Called on the transport's
// thread (from its Poll).
class CallHandler {
 public:
  virtual ~CallHandler() = default;
  // One call. Its pieces stay valid until the handler calls Reply or Drop
  // for `token` (which it may do later, from the same thread) or the
  // connection ends.
  virtual void OnCall(ServerConnection& conn, CallToken token, const Message& call) = 0;
  // Registered reply pieces of `token` are no longer read.
  virtual void OnReplyDone(ServerConnection& conn, CallToken token) { (void)conn, (void)token; }
  // The connection is gone; every call it delivered that was not answered
  // is void (do not Reply to it).
  virtual void OnDisconnect(ServerConnection& conn) { (void)conn; }
};

// ---------------------------------------------------------------- client

// Most DDP-eligible results one reply carries (Write list chunks).
inline constexpr size_t kMaxDdpResults = 3;

// Registered memory into which a DDP-eligible result of the reply may be
// placed (RPC-over-RDMA: a Write chunk; TCP: the transport may copy the
// inline result there or leave it in the stream).
struct ReplySink {
  MutableByteSpan bytes;
  uint32_t stag = 0;
};

struct CallOptions {
  ReplySink ddp_sinks[kMaxDdpResults];
  size_t ddp_sink_count = 0;
  // Longest reply expected (sizes a Reply chunk when it exceeds inline).
  uint32_t max_reply_bytes = 0;
};

// A reply as the client receives it, valid during the completion callback.
struct ReplyView {
  // 0, or a negative errno: -ECONNRESET (connection lost and not
  // re-established), -ETIMEDOUT, -EPROTO (RDMA_ERROR or undecodable), ...
  int status = 0;
  Message stream;  // the reply's XDR stream without the items moved by chunks
  // The DDP-eligible results the server placed in ddp_sinks (in order),
  // which the reply's decoder takes where the stream omits their bodies.
  ByteSpan ddp_results[kMaxDdpResults];
  size_t ddp_result_count = 0;
  // With status -EPROTO from an RPC-over-RDMA RDMA_ERROR reply: its rdma_err
  // (RFC 8166 4.1.2: 1 = ERR_VERS, 2 = ERR_CHUNK); 0 otherwise.
  uint32_t transport_error = 0;
};

class ClientTransport {
 public:
  using Done = std::function<void(const ReplyView&)>;
  virtual ~ClientTransport() = default;
  // Queues a call (its XID is the first word of `call`): sent now or when
  // credits allow, retransmitted with the same XID after a reconnect. The
  // call's pieces must stay valid until `done` runs. Returns 0 or a negative
  // errno (e.g. -EINVAL for a malformed call).
  virtual int Call(const Message& call, const CallOptions& options, Done done) = 0;
  // Runs the transport: sends, receives, completes calls (from this
  // thread). Waits up to `timeout_ms` for something to do (-1: forever).
  virtual int Poll(int timeout_ms) = 0;
};

}  // namespace iwarp::rpc

#endif  // IWARPD_RPCRDMA_RPC_TRANSPORT_H_
