#include "rpcrdma/rpc_tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "rpcrdma/rpc_xdr.h"
#include "rpcrdma/xdr.h"

namespace iwarp::rpc {

namespace {

// The pads of DDP pieces are written from here (RFC 4506 4.10: zero bytes).
constexpr uint8_t kZeros[4] = {0, 0, 0, 0};
constexpr size_t kReadChunk = 256 * 1024;
constexpr size_t kMaxSpareBuffers = 64;
// Reads per connection per event, so one busy peer does not starve others.
constexpr int kReadsPerEvent = 8;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

sockaddr_in MakeAddr(uint32_t ipv4, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(ipv4);
  a.sin_port = htons(port);
  return a;
}

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

absl::Status Errno(std::string_view what) {
  return absl::ErrnoToStatus(errno, absl::StrFormat("rpc tcp: %s", what));
}

// Writes the iovecs built from `fill(skip, iov)` until done or EAGAIN;
// returns bytes written or -errno.
int64_t WriteV(int fd, const iovec* iov, size_t n) {
  ssize_t w = ::writev(fd, iov, static_cast<int>(n));
  if (w < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
  return w;
}

}  // namespace

bool RecordHeader(const Message& m, uint8_t header[4]) {
  if (m.stream_length() > kMaxFragmentLength) return false;
  StoreBe32(header, kLastFragmentBit | static_cast<uint32_t>(m.stream_length()));
  return true;
}

size_t RecordIov(const uint8_t header[4], const Message& m, uint64_t skip, iovec* iov) {
  size_t n = 0;
  auto add = [&](const uint8_t* p, size_t len) {
    if (skip >= len) {
      skip -= len;
      return;
    }
    iov[n].iov_base = const_cast<uint8_t*>(p + skip);
    iov[n].iov_len = len - static_cast<size_t>(skip);
    skip = 0;
    ++n;
  };
  add(header, 4);
  for (const Piece& p : m) {
    if (!p.bytes.empty()) add(p.bytes.data(), p.bytes.size());
    if (p.ddp) {
      const size_t pad = rpcrdma::XdrPadding(p.bytes.size());
      if (pad > 0) add(kZeros, pad);
    }
  }
  return n;
}

std::string_view TcpCloseName(TcpClose c) {
  switch (c) {
#define IWARP_RPC_X(e, n, d) \
  case TcpClose::e:          \
    return n;
    IWARP_RPC_TCP_CLOSES(IWARP_RPC_X)
#undef IWARP_RPC_X
    case TcpClose::kCount: break;
  }
  return "unknown";
}

// ---------------------------------------------------------------- server

class TcpServer::Conn final : public ServerConnection {
 public:
  Conn(TcpServer& server, int fd, const sockaddr_in& peer)
      : server_(server),
        fd_(fd),
        peer_ipv4_(ntohl(peer.sin_addr.s_addr)),
        peer_port_(ntohs(peer.sin_port)),
        reassembler_(server.options_.max_record_bytes) {}
  ~Conn() override {
    if (fd_ >= 0) ::close(fd_);
  }

  bool Reply(CallToken token, const Message& reply) override;
  void Drop(CallToken token) override;
  uint32_t peer_ipv4() const override { return peer_ipv4_; }
  uint16_t peer_port() const override { return peer_port_; }

  TcpServer& server_;
  int fd_;
  uint32_t peer_ipv4_;
  uint16_t peer_port_;
  RecordReassembler reassembler_;
  // Calls delivered and not answered: their records.
  std::unordered_map<CallToken, std::vector<uint8_t>> calls_;
  std::vector<uint8_t> out_;  // queued reply bytes, from out_off_
  size_t out_off_ = 0;
  uint32_t events_ = 0;
  bool closing_ = false;
  TcpClose close_reason_ = TcpClose::kPeerClosed;

  size_t pending_output() const { return out_.size() - out_off_; }
  void MarkClosing(TcpClose why) {
    if (closing_) return;
    closing_ = true;
    close_reason_ = why;
    server_.closing_.push_back(this);
  }
};

bool TcpServer::Conn::Reply(CallToken token, const Message& reply) {
  auto it = calls_.find(token);
  if (it == calls_.end()) return false;
  // The reply may reference the call's record (an echo): release it after.
  std::vector<uint8_t> record = std::move(it->second);
  calls_.erase(it);
  bool sent = false;
  uint8_t header[4];
  if (!closing_ && RecordHeader(reply, header)) {
    iovec iov[kMaxRecordIov];
    const size_t n = RecordIov(header, reply, 0, iov);
    int64_t written = 0;
    if (pending_output() == 0) written = WriteV(fd_, iov, n);
    if (written < 0) {
      MarkClosing(TcpClose::kSocketError);
    } else {
      server_.counters_.bytes_out += static_cast<uint64_t>(written);
      const uint64_t total = reply.stream_length() + 4;
      if (static_cast<uint64_t>(written) < total) {
        // Copy what the socket did not take (pieces with stag 0 are the
        // caller's only until we return; registered ones are copied too).
        ++server_.counters_.replies_queued;
        iovec rest[kMaxRecordIov];
        const size_t m = RecordIov(header, reply, static_cast<uint64_t>(written), rest);
        if (out_off_ == out_.size()) {
          out_.clear();
          out_off_ = 0;
        }
        for (size_t i = 0; i < m; ++i) {
          const auto* p = static_cast<const uint8_t*>(rest[i].iov_base);
          out_.insert(out_.end(), p, p + rest[i].iov_len);
        }
        server_.UpdateEvents(*this);
      }
      ++server_.counters_.replies;
      sent = true;
    }
  }
  server_.GiveBuffer(std::move(record));
  server_.done_.emplace_back(this, token);
  return sent;
}

void TcpServer::Conn::Drop(CallToken token) {
  auto it = calls_.find(token);
  if (it == calls_.end()) return;
  server_.GiveBuffer(std::move(it->second));
  calls_.erase(it);
}

TcpServer::TcpServer(const TcpServerOptions& options, CallHandler& handler)
    : options_(options), handler_(handler), read_buf_(kReadChunk) {}

absl::StatusOr<std::unique_ptr<TcpServer>> TcpServer::Listen(const TcpServerOptions& options,
                                                            CallHandler& handler) {
  if (options.max_record_bytes == 0 || options.max_record_bytes > kMaxFragmentLength) {
    return absl::InvalidArgumentError("rpc tcp: max_record_bytes must be 1..2^31-1");
  }
  std::unique_ptr<TcpServer> s(new TcpServer(options, handler));
  s->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return Errno("socket");
  int one = 1;
  setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = MakeAddr(options.bind_ipv4, options.port);
  if (::bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return Errno("bind");
  if (::listen(s->listen_fd_, options.backlog) != 0) return Errno("listen");
  socklen_t len = sizeof(addr);
  if (::getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return Errno("getsockname");
  s->port_ = ntohs(addr.sin_port);
  s->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (s->epoll_fd_ < 0) return Errno("epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the listener
  if (::epoll_ctl(s->epoll_fd_, EPOLL_CTL_ADD, s->listen_fd_, &ev) != 0) return Errno("epoll_ctl");
  return s;
}

TcpServer::~TcpServer() {
  Settle();
  for (auto& [ptr, conn] : conns_) conn->MarkClosing(TcpClose::kShutdown);
  Settle();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

std::vector<uint8_t> TcpServer::TakeBuffer() {
  if (spare_buffers_.empty()) return {};
  std::vector<uint8_t> b = std::move(spare_buffers_.back());
  spare_buffers_.pop_back();
  return b;
}

void TcpServer::GiveBuffer(std::vector<uint8_t>&& b) {
  if (spare_buffers_.size() >= kMaxSpareBuffers || b.capacity() == 0) return;
  b.clear();
  spare_buffers_.push_back(std::move(b));
}

void TcpServer::UpdateEvents(Conn& c) {
  if (c.closing_) return;
  uint32_t want = c.pending_output() > 0 ? uint32_t{EPOLLOUT} : 0u;
  if (c.pending_output() < options_.max_pending_output) want |= EPOLLIN | EPOLLRDHUP;
  if (want == c.events_) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.ptr = &c;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd_, &ev) != 0) {
    c.MarkClosing(TcpClose::kSocketError);
    return;
  }
  c.events_ = want;
}

void TcpServer::Accept() {
  for (;;) {
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or an aborted connection: nothing to do
    ++counters_.accepted;
    if (conns_.size() >= options_.max_connections) {
      ::close(fd);
      ++counters_.closes[static_cast<size_t>(TcpClose::kTooManyConnections)];
      continue;
    }
    SetNoDelay(fd);
    auto conn = std::make_unique<Conn>(*this, fd, peer);
    Conn* c = conn.get();
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = c;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ++counters_.closes[static_cast<size_t>(TcpClose::kSocketError)];
      continue;  // conn's destructor closes fd
    }
    c->events_ = ev.events;
    conns_.emplace(c, std::move(conn));
  }
}

void TcpServer::Read(Conn& c) {
  for (int i = 0; i < kReadsPerEvent && !c.closing_; ++i) {
    if (c.pending_output() >= options_.max_pending_output) break;
    const ssize_t n = ::read(c.fd_, read_buf_.data(), read_buf_.size());
    if (n == 0) {
      c.MarkClosing(TcpClose::kPeerClosed);
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      c.MarkClosing(errno == ECONNRESET ? TcpClose::kPeerClosed : TcpClose::kSocketError);
      return;
    }
    counters_.bytes_in += static_cast<uint64_t>(n);
    const uint64_t fragments_before = c.reassembler_.fragments();
    const RecordError err = c.reassembler_.Feed(
        ByteSpan(read_buf_.data(), static_cast<size_t>(n)), [&](std::vector<uint8_t>& record) {
          ++counters_.records;
          if (c.closing_) return;  // a reply write failed: the rest is void
          const CallToken token = next_token_++;
          std::vector<uint8_t>& held = c.calls_[token];
          held = TakeBuffer();
          held.swap(record);
          Message call;
          call.Add(Piece{ByteSpan(held.data(), held.size())});
          handler_.OnCall(c, token, call);
        });
    counters_.fragments += c.reassembler_.fragments() - fragments_before;
    if (err == RecordError::kOversize) {
      c.MarkClosing(TcpClose::kRecordOversize);
      return;
    }
    if (static_cast<size_t>(n) < read_buf_.size()) return;  // drained
  }
}

void TcpServer::Flush(Conn& c) {
  while (c.pending_output() > 0 && !c.closing_) {
    const ssize_t w = ::write(c.fd_, c.out_.data() + c.out_off_, c.pending_output());
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      c.MarkClosing(TcpClose::kSocketError);
      return;
    }
    counters_.bytes_out += static_cast<uint64_t>(w);
    c.out_off_ += static_cast<size_t>(w);
  }
  if (c.pending_output() == 0) {
    c.out_.clear();
    c.out_off_ = 0;
  }
  UpdateEvents(c);
}

void TcpServer::Close(Conn& c, TcpClose why) {
  ++counters_.closes[static_cast<size_t>(why)];
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd_, nullptr);
  ::close(c.fd_);
  c.fd_ = -1;
  handler_.OnDisconnect(c);
  // Replies attempted from OnDisconnect: the connection is void now.
  std::erase_if(done_, [&](const auto& d) { return d.first == &c; });
  for (auto& [token, record] : c.calls_) GiveBuffer(std::move(record));
  c.calls_.clear();
  conns_.erase(&c);
}

void TcpServer::Settle() {
  // Replies are written (or copied) inside Reply: their pieces are no longer read.
  while (!done_.empty() || !closing_.empty()) {
    std::vector<std::pair<Conn*, CallToken>> done;
    done.swap(done_);
    for (auto& [c, token] : done) handler_.OnReplyDone(*c, token);
    if (!done_.empty()) continue;
    std::vector<Conn*> closing;
    closing.swap(closing_);
    for (Conn* c : closing) Close(*c, c->close_reason_);
  }
}

int TcpServer::Poll(int timeout_ms) {
  Settle();
  epoll_event events[64];
  const int n = ::epoll_wait(epoll_fd_, events, 64, timeout_ms);
  if (n < 0) return errno == EINTR ? 0 : -errno;
  for (int i = 0; i < n; ++i) {
    if (events[i].data.ptr == nullptr) {
      Accept();
      continue;
    }
    Conn& c = *static_cast<Conn*>(events[i].data.ptr);
    if (c.closing_) continue;
    const uint32_t e = events[i].events;
    if (e & EPOLLOUT) Flush(c);
    if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      Read(c);
      if (!c.closing_ && (e & (EPOLLHUP | EPOLLERR))) c.MarkClosing(TcpClose::kPeerClosed);
    }
  }
  Settle();
  return n;
}

// ---------------------------------------------------------------- client

TcpClient::TcpClient(const TcpClientOptions& options)
    : options_(options), reassembler_(options.max_record_bytes), read_buf_(kReadChunk) {}

absl::StatusOr<std::unique_ptr<TcpClient>> TcpClient::Connect(const TcpClientOptions& options) {
  if (options.max_record_bytes == 0 || options.max_record_bytes > kMaxFragmentLength) {
    return absl::InvalidArgumentError("rpc tcp: max_record_bytes must be 1..2^31-1");
  }
  std::unique_ptr<TcpClient> c(new TcpClient(options));
  c->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (c->epoll_fd_ < 0) return Errno("epoll_create1");
  const int err = c->StartConnect();
  if (err < 0) return absl::ErrnoToStatus(-err, "rpc tcp: connect");
  // Wait for the first connection.
  const int64_t deadline = NowMs() + options.connect_timeout_ms;
  while (c->connecting_) {
    pollfd p{c->fd_, POLLOUT, 0};
    const int64_t left = deadline - NowMs();
    if (left <= 0) return absl::DeadlineExceededError("rpc tcp: connect timed out");
    if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) return Errno("poll");
    if (p.revents != 0) c->FinishConnect();
    if (c->fd_ < 0) return absl::UnavailableError("rpc tcp: connection refused or failed");
  }
  return c;
}

TcpClient::~TcpClient() {
  FailAll(-ECONNRESET);
  if (fd_ >= 0) ::close(fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

int TcpClient::StartConnect() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return -errno;
  SetNoDelay(fd_);
  sockaddr_in addr = MakeAddr(options_.server_ipv4, options_.server_port);
  connecting_ = true;
  connect_deadline_ms_ = NowMs() + options_.connect_timeout_ms;
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    connecting_ = false;
    ++failed_attempts_;
    next_attempt_ms_ = NowMs() + options_.reconnect_delay_ms;
    return -err;
  }
  epoll_event ev{};
  ev.events = EPOLLOUT;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd_, &ev) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    connecting_ = false;
    return -err;
  }
  events_ = EPOLLOUT;
  return 0;
}

void TcpClient::FinishConnect() {
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err == EINPROGRESS || err == EALREADY) return;
  if (err != 0) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_, nullptr);
    ::close(fd_);
    fd_ = -1;
    connecting_ = false;
    ++failed_attempts_;
    next_attempt_ms_ = NowMs() + options_.reconnect_delay_ms;
    return;
  }
  connecting_ = false;
  failed_attempts_ = 0;
  if (ever_connected_) ++counters_.reconnects;
  ever_connected_ = true;
  reassembler_.Reset();
  // RFC 5531 8 / 11: after a reconnection every outstanding call goes out
  // again with its XID, oldest first.
  std::vector<std::pair<uint64_t, uint32_t>> order;
  order.reserve(pending_.size());
  for (auto& [xid, p] : pending_) order.emplace_back(p.seq, xid);
  std::sort(order.begin(), order.end());
  send_queue_.clear();
  head_sent_ = 0;
  for (auto& [seq, xid] : order) {
    if (pending_[xid].transmitted) ++counters_.retransmits;
    send_queue_.push_back(xid);
  }
  UpdateEvents();
  Flush();
}

void TcpClient::UpdateEvents() {
  if (fd_ < 0 || connecting_) return;
  const bool want_out = orphan_off_ < orphan_.size() || !send_queue_.empty();
  const uint32_t want = EPOLLIN | EPOLLRDHUP | (want_out ? uint32_t{EPOLLOUT} : 0u);
  if (want == events_) return;
  epoll_event ev{};
  ev.events = want;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd_, &ev) == 0) events_ = want;
}

void TcpClient::ResetConnection() {
  if (fd_ >= 0) Lost();
}

void TcpClient::Lost() {
  ++counters_.connection_losses;
  ++connection_generation_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_, nullptr);
  ::close(fd_);
  fd_ = -1;
  connecting_ = false;
  send_queue_.clear();
  head_sent_ = 0;
  orphan_.clear();
  orphan_off_ = 0;
  reassembler_.Reset();
  next_attempt_ms_ = NowMs();
}

void TcpClient::Flush() {
  if (fd_ < 0 || connecting_) return;
  while (orphan_off_ < orphan_.size()) {
    const ssize_t w = ::write(fd_, orphan_.data() + orphan_off_, orphan_.size() - orphan_off_);
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return UpdateEvents();
      return Lost();
    }
    orphan_off_ += static_cast<size_t>(w);
  }
  orphan_.clear();
  orphan_off_ = 0;
  while (!send_queue_.empty()) {
    Pending& p = pending_.at(send_queue_.front());
    iovec iov[kMaxRecordIov];
    const size_t n = RecordIov(p.header, p.call, head_sent_, iov);
    const int64_t w = n == 0 ? 0 : WriteV(fd_, iov, n);
    if (w < 0) return Lost();
    if (w > 0) p.transmitted = true;
    head_sent_ += static_cast<uint64_t>(w);
    if (head_sent_ < p.call.stream_length() + 4) break;
    send_queue_.pop_front();
    head_sent_ = 0;
  }
  UpdateEvents();
}

void TcpClient::Unqueue(uint32_t xid) {
  if (send_queue_.empty()) return;
  if (send_queue_.front() == xid && head_sent_ > 0) {
    // Half a record is on the wire: the rest must follow, from our copy.
    const Pending& p = pending_.at(xid);
    iovec iov[kMaxRecordIov];
    const size_t n = RecordIov(p.header, p.call, head_sent_, iov);
    for (size_t i = 0; i < n; ++i) {
      const auto* b = static_cast<const uint8_t*>(iov[i].iov_base);
      orphan_.insert(orphan_.end(), b, b + iov[i].iov_len);
    }
    send_queue_.pop_front();
    head_sent_ = 0;
    return;
  }
  auto it = std::find(send_queue_.begin(), send_queue_.end(), xid);
  if (it != send_queue_.end()) send_queue_.erase(it);
}

void TcpClient::Complete(uint32_t xid, const ReplyView& view) {
  auto it = pending_.find(xid);
  if (it == pending_.end()) return;
  Unqueue(xid);
  Done done = std::move(it->second.done);
  pending_.erase(it);
  ++completed_;
  done(view);
}

void TcpClient::FailAll(int status) {
  failed_attempts_ = 0;  // later calls try again
  while (!pending_.empty()) {
    ReplyView v;
    v.status = status;
    ++counters_.failed;
    Complete(pending_.begin()->first, v);
  }
}

int TcpClient::Expire(int64_t now_ms) {
  std::vector<uint32_t> expired;
  for (auto& [xid, p] : pending_) {
    if (p.deadline_ms <= now_ms) expired.push_back(xid);
  }
  for (uint32_t xid : expired) {
    ReplyView v;
    v.status = -ETIMEDOUT;
    ++counters_.timeouts;
    Complete(xid, v);
  }
  return static_cast<int>(expired.size());
}

int TcpClient::Call(const Message& call, const CallOptions& options, Done done) {
  (void)options;
  if (call.count() == 0 || call.stream_length() < 4) return -EINVAL;
  XdrDecoder d(call);
  const uint32_t xid = d.U32();
  if (!d.ok()) return -EINVAL;
  if (pending_.count(xid) != 0) return -EEXIST;
  Pending p;
  if (!RecordHeader(call, p.header)) return -EMSGSIZE;
  p.call = call;
  p.done = std::move(done);
  // NowMs() truncates; +1 so a call never times out early.
  p.deadline_ms = NowMs() + options_.call_timeout_ms + 1;
  p.seq = next_seq_++;
  pending_.emplace(xid, std::move(p));
  ++counters_.calls;
  send_queue_.push_back(xid);
  Flush();
  return 0;
}

void TcpClient::Read() {
  for (int i = 0; i < kReadsPerEvent && fd_ >= 0; ++i) {
    const ssize_t n = ::read(fd_, read_buf_.data(), read_buf_.size());
    if (n == 0) return Lost();
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      return Lost();
    }
    const uint64_t generation = connection_generation_;
    const RecordError err = reassembler_.Feed(
        ByteSpan(read_buf_.data(), static_cast<size_t>(n)), [&](std::vector<uint8_t>& record) {
          // A callback reset the connection: the rest of this read is void.
          if (generation != connection_generation_) return;
          if (record.size() < 4) {
            ++counters_.short_replies;
            return;
          }
          const uint32_t xid = LoadBe32(record.data());
          if (pending_.count(xid) == 0) {
            ++counters_.unmatched_replies;
            return;
          }
          ++counters_.replies;
          ReplyView v;
          v.stream.Add(Piece{ByteSpan(record.data(), record.size())});
          Complete(xid, v);
        });
    if (generation != connection_generation_) {
      reassembler_.Reset();
      return;
    }
    if (err == RecordError::kOversize) {
      ++counters_.record_oversize;
      return Lost();
    }
    if (static_cast<size_t>(n) < read_buf_.size()) return;
  }
}

int TcpClient::Poll(int timeout_ms) {
  completed_ = 0;
  int64_t now = NowMs();
  if (fd_ < 0 && !pending_.empty() && now >= next_attempt_ms_) {
    if (failed_attempts_ >= options_.max_reconnect_attempts) {
      FailAll(-ECONNRESET);
    } else if (StartConnect() < 0 && failed_attempts_ >= options_.max_reconnect_attempts) {
      FailAll(-ECONNRESET);
    }
  }
  // Wait no longer than the next deadline.
  int64_t wait = timeout_ms < 0 ? INT64_MAX : timeout_ms;
  for (auto& [xid, p] : pending_) wait = std::min(wait, std::max<int64_t>(0, p.deadline_ms - now));
  if (connecting_) wait = std::min(wait, std::max<int64_t>(0, connect_deadline_ms_ - now));
  if (fd_ < 0 && !pending_.empty()) wait = std::min(wait, std::max<int64_t>(0, next_attempt_ms_ - now));
  if (completed_ > 0) wait = 0;
  epoll_event events[4];
  const int n = ::epoll_wait(epoll_fd_, events, 4, wait == INT64_MAX ? -1 : static_cast<int>(wait));
  if (n < 0 && errno != EINTR) return -errno;
  for (int i = 0; i < n && fd_ >= 0; ++i) {
    const uint32_t e = events[i].events;
    if (connecting_) {
      FinishConnect();
      continue;
    }
    if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) Read();
    if (fd_ >= 0 && (e & (EPOLLHUP | EPOLLERR))) Lost();
    if (fd_ >= 0 && (e & EPOLLOUT)) Flush();
  }
  now = NowMs();
  if (connecting_ && now >= connect_deadline_ms_) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd_, nullptr);
    ::close(fd_);
    fd_ = -1;
    connecting_ = false;
    ++failed_attempts_;
    next_attempt_ms_ = now + options_.reconnect_delay_ms;
  }
  Expire(now);
  return completed_;
}

}  // namespace iwarp::rpc
