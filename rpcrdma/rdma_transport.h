// RPC-over-RDMA version 1 (RFC 8166, RFC 8797) over libiwarp: RdmaServer
// (a server transport delivering calls to an rpc::CallHandler) and
// RdmaClient (an rpc::ClientTransport). The decisions are rdma_plan.h's pure
// functions; this file executes them with libiwarp work requests.
//
// Threading: each object is single-threaded, driven by its Poll(timeout_ms)
// (which waits in iwarp_cq_wait and reads iwarp_get_event); handlers and
// completion callbacks run inside Poll, Reply may be called from them.
//
// Inline threshold (RFC 8166 3.3.2, RFC 8797): each side announces in the
// connection private data the largest Send it sends and receives (options
// max_inline_send / max_inline_recv, default 4096 like Linux). The threshold
// each way is the smaller of the sender's send size and the receiver's
// receive size; a peer that sends no (or unrecognised) private data gets the
// RFC default of 1024 both ways. A peer announcing 4096 (Linux) is honoured
// up to our configured maximum.
//
// Credits (RFC 8166 3.3.1): the server grants `credits` in every reply and
// keeps credits + 1 receives posted (the spare receive lets it see an
// overrun instead of having the stream terminated by DDP); a client with more
// calls in progress than granted loses its connection
// (RdmaError::kCreditOverrun). The client starts with one credit, then
// honours the grant of the latest reply (never more than the receives it has
// posted itself, options.credits).
//
// Memory: receive and send buffers are registered once per connection
// (slabs), large buffers (Read chunk sinks, Reply chunks, bounce copies of
// pieces with stag 0) come from a pool registered on first use and reused;
// nothing is registered per call. Pieces with a non-zero stag are exposed or
// written from directly (zero copy).
//
// Send With Invalidate (RFC 8797 flag) is not used: both sides announce
// remote_invalidation = false and the client does not invalidate.
#ifndef IWARPD_RPCRDMA_RDMA_TRANSPORT_H_
#define IWARPD_RPCRDMA_RDMA_TRANSPORT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "libiwarp/iwarp.h"
#include "rpcrdma/cm_private.h"
#include "rpcrdma/header.h"
#include "rpcrdma/rdma_plan.h"
#include "rpcrdma/rpc_transport.h"

namespace iwarp::rpcrdma {

// A snapshot of a transport's counters (copy; read with counters()).
struct RdmaCounters {
  uint64_t calls = 0;    // server: calls delivered; client: calls sent (first time)
  uint64_t replies = 0;  // server: replies sent; client: replies completed
  uint64_t retransmits = 0;  // client: calls sent again after a reconnect
  uint64_t timeouts = 0;     // client: calls completed -ETIMEDOUT
  uint64_t late_replies = 0; // client: replies to calls that had timed out (dropped)
  uint64_t read_chunks = 0, write_chunks = 0, reply_chunks = 0;
  uint64_t rdma_read_bytes = 0;     // by RDMA Read (server pulls; client: pulled from it)
  uint64_t rdma_written_bytes = 0;  // by RDMA Write (server pushes; client: placed in it)
  uint64_t inline_replies = 0, nomsg_calls = 0;
  // DDP-eligible bytes copied into the transport's own registered memory
  // because their piece had no STag (server: reply results; client: call
  // arguments). Zero when the application hands registered memory.
  uint64_t bounce_copy_bytes = 0;
  uint32_t credits_granted = 0;   // server: per connection; client: current grant
  uint32_t credits_in_use = 0;    // calls outstanding now (all connections)
  uint32_t credits_in_use_max = 0;  // high-water mark
  uint64_t connections = 0, disconnects = 0, reconnects = 0;
  uint64_t err_vers_sent = 0, err_chunk_sent = 0;
  uint64_t err_vers_received = 0, err_chunk_received = 0;
  uint64_t errors[kNumRdmaErrors] = {};
  uint64_t header_errors[kNumHeaderErrors] = {};
  uint64_t error(RdmaError e) const { return errors[static_cast<size_t>(e)]; }
  uint64_t header_error(HeaderError e) const { return header_errors[static_cast<size_t>(e)]; }
};

// Registered memory: fixed-size buffers carved from slabs, each slab one
// iwarp_mem_alloc + one iwarp_reg_mr made on first need, up to max_bytes.
class RegPool {
 public:
  struct Buffer {
    uint8_t* data = nullptr;
    size_t size = 0;
    uint32_t stag = 0;
    uint32_t index = 0;
  };
  RegPool() = default;
  RegPool(const RegPool&) = delete;
  RegPool& operator=(const RegPool&) = delete;
  ~RegPool();
  void Init(iwarp_session* s, uint32_t pd, size_t buffer_size, uint64_t max_bytes);
  Buffer* Get();  // nullptr when max_bytes is reached or registration failed
  void Put(Buffer* b) { free_.push_back(b); }
  size_t buffer_size() const { return size_; }

 private:
  iwarp_session* s_ = nullptr;
  uint32_t pd_ = 0;
  size_t size_ = 0;
  uint64_t max_bytes_ = 0, bytes_ = 0;
  std::vector<std::unique_ptr<Buffer>> all_;
  std::vector<Buffer*> free_;
  std::vector<std::pair<void*, uint32_t>> slabs_;  // memory, stag
};

struct RdmaServerOptions {
  uint32_t ipv4 = 0;      // listen address (host order), 0 = any
  uint16_t port = 20049;  // NFS/RDMA's port
  uint32_t transport = IWARP_TRANSPORT_TCP;  // or IWARP_TRANSPORT_SCTP
  uint32_t credits = 32;
  uint32_t max_inline_send = 4096;  // multiple of 1024, 1024 .. 256 KiB
  uint32_t max_inline_recv = 4096;
  uint64_t max_message_bytes = (uint64_t{1} << 20) + 65536;  // Read chunks of a call, reply via chunks
  uint64_t max_buffer_bytes = uint64_t{256} << 20;           // large buffers registered at most
  uint32_t max_connections = 8;
  uint32_t sq_depth = 256;
  Limits limits;  // header decoding bounds
};

class RdmaServer {
 public:
  // `session` and `pd` stay the caller's (registered reply pieces must be in
  // `pd`). Start() listens.
  RdmaServer(iwarp_session* session, uint32_t pd, const RdmaServerOptions& options,
             rpc::CallHandler& handler);
  ~RdmaServer();
  RdmaServer(const RdmaServer&) = delete;
  RdmaServer& operator=(const RdmaServer&) = delete;

  int Start();  // 0 or a negative errno (listen, CQ)
  // Accepts connections, receives calls, runs reads/replies; waits up to
  // timeout_ms when idle. Returns the number of things done.
  int Poll(int timeout_ms);
  // Ends every connection (handlers see OnDisconnect).
  void DisconnectAll();
  size_t connection_count() const;

  // Event-loop integration, for a caller that sleeps in its own poll /
  // epoll set beside other descriptors: after Poll(0) found nothing, Arm()
  // returns 1 if work came in meanwhile (Poll again, do not sleep), 0 once
  // the two descriptors of wait_fds() will turn readable at the next event
  // or completion, -EPIPE when the daemon is gone. Started servers only.
  int Arm();
  std::array<int, 2> wait_fds() const;
  // The daemon went away (IWARP_EVENT_DEVICE_FATAL): nothing more will be
  // served; the owner should end (a service manager restarts it with the
  // daemon).
  bool device_lost() const { return device_lost_; }
  RdmaCounters counters() const { return counters_; }

 private:
  class Conn;
  friend class Conn;
  int DrainEvents();
  int DrainCq();
  void OnConnectRequest(const iwarp_event& ev);
  Conn* FindByQp(uint32_t qp_id);
  void EndConnection(Conn* c, RdmaError reason);
  static RdmaError LostReason(const Conn& c, const iwarp_event& ev);
  void CountInUse(int delta);

  iwarp_session* s_;
  uint32_t pd_;
  RdmaServerOptions opt_;
  rpc::CallHandler& handler_;
  iwarp_cq* cq_ = nullptr;
  uint32_t listener_ = 0;
  bool listening_ = false;
  RegPool big_;
  std::vector<std::unique_ptr<Conn>> conns_;  // index = connection slot
  std::vector<std::unique_ptr<Conn>> graveyard_;  // ended, freed at the next Poll
  uint16_t next_gen_ = 1;
  bool device_lost_ = false;
  RdmaCounters counters_;
};

struct RdmaClientOptions {
  iwarp_addr server{0, 20049};
  uint32_t transport = IWARP_TRANSPORT_TCP;
  uint32_t credits = 32;  // asked for, and receives posted
  uint32_t max_inline_send = 4096;
  uint32_t max_inline_recv = 4096;
  uint64_t max_message_bytes = (uint64_t{1} << 20) + 65536;
  uint64_t max_buffer_bytes = uint64_t{256} << 20;
  // A DDP-eligible call piece of at least this many bytes goes by Read
  // chunk even when the call would fit inline (0-byte pieces never do).
  uint32_t ddp_read_threshold = 1024;
  uint32_t sq_depth = 256;
  int reconnect_attempts = 5;
  int connect_timeout_ms = 10000;
  // A call without reply this long after Call() completes -ETIMEDOUT (0:
  // never). A timed-out call that was sent keeps its credit and its
  // transport buffers until its reply arrives (then dropped, late_replies)
  // or the connection ends (then not retransmitted); the server may still
  // place its results into the call's Write chunk sinks until then.
  int call_timeout_ms = 30000;
  Limits limits;
};

class RdmaClient final : public rpc::ClientTransport {
 public:
  RdmaClient(iwarp_session* session, uint32_t pd, const RdmaClientOptions& options);
  ~RdmaClient() override;
  RdmaClient(const RdmaClient&) = delete;
  RdmaClient& operator=(const RdmaClient&) = delete;

  // Connects and waits for the connection (up to connect_timeout_ms).
  int Connect();
  int Call(const rpc::Message& call, const rpc::CallOptions& options, Done done) override;
  int Poll(int timeout_ms) override;
  // Test hook / administrative: drops the connection as if it were lost
  // (outstanding calls are retransmitted after the reconnect).
  void DropConnection();
  bool connected() const { return state_ == State::kUp; }
  size_t outstanding() const { return outstanding_; }
  size_t queued() const { return queue_.size(); }
  RdmaCounters counters() const { return counters_; }
  // Inline thresholds in force (after the private data exchange).
  uint32_t send_threshold() const { return send_thr_; }
  uint32_t recv_threshold() const { return recv_thr_; }

 private:
  struct Entry;
  enum class State : uint8_t { kDown, kConnecting, kUp, kFailed };
  int StartConnect();
  void ConnectionLost(RdmaError reason);
  int DrainEvents();
  int DrainCq();
  int SendQueued();
  int Encode(Entry& e);
  void ReleaseBuffers(Entry& e);
  void OnReply(RegPool::Buffer* b, uint32_t len);
  void Fail(Entry& e, int status, RdmaError reason);
  int ExpireCalls();
  void PostRecv(RegPool::Buffer* b);

  iwarp_session* s_;
  uint32_t pd_;
  RdmaClientOptions opt_;
  iwarp_cq* cq_ = nullptr;
  iwarp_qp* qp_ = nullptr;
  uint32_t qp_id_ = 0;
  State state_ = State::kDown;
  int attempts_ = 0;
  uint32_t granted_ = 1;
  uint32_t send_thr_ = kDefaultInlineThreshold;
  uint32_t recv_thr_ = kDefaultInlineThreshold;
  uint32_t sq_used_ = 0;
  size_t outstanding_ = 0;
  uint64_t send_seq_ = 0;
  int64_t retry_at_ms_ = 0;
  RegPool small_;  // receive and send buffers
  RegPool big_;
  std::vector<RegPool::Buffer*> recv_posted_;
  std::unordered_map<uint32_t, std::unique_ptr<Entry>> calls_;  // by XID
  std::deque<uint32_t> queue_;  // XIDs waiting to be sent, in order
  RdmaCounters counters_;
};

}  // namespace iwarp::rpcrdma

#endif  // IWARPD_RPCRDMA_RDMA_TRANSPORT_H_
