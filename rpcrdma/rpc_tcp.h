// ONC RPC over TCP (RFC 5531 11, record marking) on the kernel's sockets:
// a server transport (ServerConnection) and a client transport
// (ClientTransport). Not DPDK: nonblocking sockets and epoll, one thread
// driving each object's Poll.
#ifndef IWARPD_RPCRDMA_RPC_TCP_H_
#define IWARPD_RPCRDMA_RPC_TCP_H_

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "common/bytes.h"
#include "rpcrdma/rpc_transport.h"

namespace iwarp::rpc {

// RFC 5531 11: a fragment header is one big-endian word, the last-fragment
// bit and a 31-bit length.
inline constexpr uint32_t kLastFragmentBit = 0x80000000u;
inline constexpr uint32_t kMaxFragmentLength = 0x7fffffffu;

enum class RecordError : uint8_t { kOk, kOversize };

// Reassembles records from a TCP byte stream, any split of it. Resumes
// mid-header and mid-fragment (house style rule 8).
class RecordReassembler {
 public:
  explicit RecordReassembler(size_t max_record_bytes) : max_record_(max_record_bytes) {}

  // Consumes `in`. For each complete record calls on_record(record), where
  // record is a std::vector<uint8_t>& holding it: the callee may swap the
  // contents out (taking them); whatever it leaves is cleared and reused.
  // Returns kOversize, for good, once a record would exceed the maximum
  // (the connection must close); records before it were delivered.
  template <typename F>
  RecordError Feed(ByteSpan in, F&& on_record);

  bool failed() const { return failed_; }
  uint64_t fragments() const { return fragments_; }
  // Bytes of the record being assembled (for tests).
  size_t partial_bytes() const { return record_.size(); }
  void Reset() {
    record_.clear();
    header_have_ = 0;
    fragment_left_ = 0;
    in_fragment_ = false;
    failed_ = false;
  }

 private:
  size_t max_record_;
  std::vector<uint8_t> record_;
  uint8_t header_[4] = {};
  size_t header_have_ = 0;
  uint32_t fragment_left_ = 0;
  bool last_ = false;
  bool in_fragment_ = false;
  bool failed_ = false;
  uint64_t fragments_ = 0;
};

template <typename F>
RecordError RecordReassembler::Feed(ByteSpan in, F&& on_record) {
  if (failed_) return RecordError::kOversize;
  size_t off = 0;
  while (off < in.size()) {
    if (!in_fragment_) {
      const size_t take = std::min(in.size() - off, size_t{4} - header_have_);
      std::memcpy(header_ + header_have_, in.data() + off, take);
      header_have_ += take;
      off += take;
      if (header_have_ < 4) break;
      header_have_ = 0;
      const uint32_t word = LoadBe32(header_);
      last_ = (word & kLastFragmentBit) != 0;
      fragment_left_ = word & kMaxFragmentLength;
      ++fragments_;
      // Checked before anything is reserved or read.
      if (fragment_left_ > max_record_ - record_.size()) {
        failed_ = true;
        return RecordError::kOversize;
      }
      in_fragment_ = true;
    }
    const size_t take = std::min<size_t>(in.size() - off, fragment_left_);
    record_.insert(record_.end(), in.data() + off, in.data() + off + take);
    off += take;
    fragment_left_ -= static_cast<uint32_t>(take);
    if (fragment_left_ > 0) break;
    in_fragment_ = false;
    if (last_) {
      on_record(record_);
      record_.clear();
    }
  }
  return RecordError::kOk;
}

// Fills `iov` with the record marking of `m` as one fragment (header word in
// `header`, which the caller keeps alive while the iovecs are used), its
// pieces and the pads of DDP pieces, skipping the first `skip` bytes.
// Returns the iovec count (at most kMaxRecordIov), 0 if nothing is left.
inline constexpr size_t kMaxRecordIov = 1 + 2 * kMaxPieces;
size_t RecordIov(const uint8_t header[4], const Message& m, uint64_t skip, iovec* iov);
// The header word of `m` as one last fragment; false if it is too long.
bool RecordHeader(const Message& m, uint8_t header[4]);

// ---------------------------------------------------------------- server

struct TcpServerOptions {
  uint32_t bind_ipv4 = 0x7f000001;  // host order; 0 for every address
  uint16_t port = 0;                // 0: an ephemeral port (see port())
  int backlog = 128;
  // Longest record accepted; a longer one closes its connection.
  size_t max_record_bytes = (1u << 20) + 64 * 1024;
  size_t max_connections = 256;
  // Reply bytes queued on a connection beyond which it is not read.
  size_t max_pending_output = 16u << 20;
};

// Why a connection closed; one counter each.
#define IWARP_RPC_TCP_CLOSES(X)                                                     \
  X(kPeerClosed, "peer_closed", "the peer closed or reset the connection")          \
  X(kSocketError, "socket_error", "a read or write failed")                        \
  X(kRecordOversize, "record_oversize", "a record longer than max_record_bytes")    \
  X(kTooManyConnections, "too_many_connections", "accepted beyond max_connections") \
  X(kShutdown, "shutdown", "the server was destroyed")

enum class TcpClose : uint8_t {
#define IWARP_RPC_X(e, n, d) e,
  IWARP_RPC_TCP_CLOSES(IWARP_RPC_X)
#undef IWARP_RPC_X
  kCount
};
std::string_view TcpCloseName(TcpClose c);

struct TcpServerCounters {
  uint64_t accepted = 0;
  uint64_t records = 0;
  uint64_t fragments = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t replies = 0;
  uint64_t replies_queued = 0;  // replies the socket did not take at once (copied)
  std::array<uint64_t, static_cast<size_t>(TcpClose::kCount)> closes{};
  uint64_t close(TcpClose c) const { return closes[static_cast<size_t>(c)]; }
};

class TcpServer {
 public:
  // Binds and listens; the handler outlives the server.
  static absl::StatusOr<std::unique_ptr<TcpServer>> Listen(const TcpServerOptions& options,
                                                          CallHandler& handler);
  // Closes every connection (OnDisconnect for each) and the listener.
  ~TcpServer();
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  uint16_t port() const { return port_; }
  // Waits up to timeout_ms (-1: forever) for socket events and handles them:
  // accepts, reads and dispatches records, writes queued replies, closes.
  // Returns the number of events handled, or a negative errno.
  int Poll(int timeout_ms);
  size_t connection_count() const { return conns_.size(); }
  const TcpServerCounters& counters() const { return counters_; }
  // An fd that polls readable when Poll has work (its epoll set), so one
  // thread can wait on several servers and its own events at once.
  int wait_fd() const { return epoll_fd_; }

 private:
  class Conn;
  TcpServer(const TcpServerOptions& options, CallHandler& handler);

  void Accept();
  void Read(Conn& c);
  void Flush(Conn& c);
  void UpdateEvents(Conn& c);
  void Close(Conn& c, TcpClose why);
  // OnReplyDone for replies sent, then connections marked for closing.
  void Settle();
  std::vector<uint8_t> TakeBuffer();
  void GiveBuffer(std::vector<uint8_t>&& b);

  TcpServerOptions options_;
  CallHandler& handler_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  uint16_t port_ = 0;
  CallToken next_token_ = 1;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
  std::vector<std::pair<Conn*, CallToken>> done_;
  std::vector<Conn*> closing_;
  std::vector<std::vector<uint8_t>> spare_buffers_;
  std::vector<uint8_t> read_buf_;
  TcpServerCounters counters_;
};

// ---------------------------------------------------------------- client

struct TcpClientOptions {
  uint32_t server_ipv4 = 0x7f000001;  // host order
  uint16_t server_port = 0;
  int call_timeout_ms = 30000;   // a call without reply by then completes -ETIMEDOUT
  int connect_timeout_ms = 5000;
  // Consecutive failed (re)connection attempts after which the outstanding
  // calls complete -ECONNRESET.
  int max_reconnect_attempts = 5;
  int reconnect_delay_ms = 50;
  size_t max_record_bytes = (1u << 20) + 64 * 1024;
};

struct TcpClientCounters {
  uint64_t calls = 0;
  uint64_t replies = 0;
  uint64_t unmatched_replies = 0;  // XID of no outstanding call (dropped)
  uint64_t short_replies = 0;      // record shorter than an XID (dropped)
  uint64_t timeouts = 0;
  uint64_t connection_losses = 0;
  uint64_t reconnects = 0;
  uint64_t retransmits = 0;        // calls sent again after a reconnect
  uint64_t failed = 0;             // calls completed -ECONNRESET
  uint64_t record_oversize = 0;    // replies over max_record_bytes (connection dropped)
};

class TcpClient final : public ClientTransport {
 public:
  // Connects (waiting up to connect_timeout_ms).
  static absl::StatusOr<std::unique_ptr<TcpClient>> Connect(const TcpClientOptions& options);
  // Outstanding calls complete -ECONNRESET.
  ~TcpClient() override;
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  // ClientTransport. Call: -EINVAL for a message shorter than an XID,
  // -EEXIST for the XID of an outstanding call, -EMSGSIZE beyond a fragment.
  // CallOptions' DDP sinks are not used: results stay in the stream.
  int Call(const Message& call, const CallOptions& options, Done done) override;
  // Returns the number of calls completed, or a negative errno.
  int Poll(int timeout_ms) override;

  size_t outstanding() const { return pending_.size(); }
  bool connected() const { return fd_ >= 0 && !connecting_; }
  const TcpClientCounters& counters() const { return counters_; }
  // Closes the socket as a lost connection would: the next Poll reconnects
  // and sends every outstanding call again with its XID.
  void ResetConnection();

 private:
  struct Pending {
    Message call;
    Done done;
    int64_t deadline_ms = 0;
    uint64_t seq = 0;
    bool transmitted = false;
    uint8_t header[4] = {};
  };
  explicit TcpClient(const TcpClientOptions& options);

  int StartConnect();
  void FinishConnect();
  void Lost();
  void Flush();
  void Read();
  void UpdateEvents();
  void Unqueue(uint32_t xid);
  // Removes `xid` from the outstanding calls and runs its callback.
  void Complete(uint32_t xid, const ReplyView& view);
  void FailAll(int status);
  int Expire(int64_t now_ms);

  TcpClientOptions options_;
  int epoll_fd_ = -1;
  int fd_ = -1;
  bool connecting_ = false;
  int64_t connect_deadline_ms_ = 0;
  int64_t next_attempt_ms_ = 0;
  int failed_attempts_ = 0;
  bool ever_connected_ = false;
  uint32_t events_ = 0;
  uint64_t next_seq_ = 0;
  std::map<uint32_t, Pending> pending_;
  std::deque<uint32_t> send_queue_;
  uint64_t head_sent_ = 0;           // bytes of send_queue_.front()'s record written
  std::vector<uint8_t> orphan_;      // rest of a record whose call completed mid-send
  size_t orphan_off_ = 0;
  RecordReassembler reassembler_;
  std::vector<uint8_t> read_buf_;
  int completed_ = 0;
  uint64_t connection_generation_ = 0;  // moves on every loss
  TcpClientCounters counters_;
};

}  // namespace iwarp::rpc

#endif  // IWARPD_RPCRDMA_RPC_TCP_H_
