#include "sctp/ddp_session.h"

#include <algorithm>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <usrsctp.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace iwarp::sctp {

namespace {

constexpr uint32_t kIpv4Header = 20;
constexpr uint32_t kIpv6Header = 40;
constexpr size_t kNotificationRoom = 1024;

uint32_t IpHeader(const AssociationConfig& c) { return c.ipv6 ? kIpv6Header : kIpv4Header; }

sockaddr_conn ConnAddr(void* conn, uint16_t port) {
  sockaddr_conn a{};
  a.sconn_family = AF_CONN;
  a.sconn_port = htons(port);
  a.sconn_addr = conn;
  return a;
}

template <typename T>
int SetOpt(struct socket* so, int level, int name, const T& v) {
  return usrsctp_setsockopt(so, level, name, &v, static_cast<socklen_t>(sizeof(v)));
}

absl::Status OptError(const char* what) {
  return absl::InternalError(absl::StrCat("usrsctp_setsockopt(", what, "): ", std::strerror(errno)));
}

}  // namespace

uint32_t AssociationMulpdu(const AssociationConfig& config) {
  // usrsctp (sctp_get_frag_point) fragments user messages above
  // (sctp packet size - common header - DATA chunk header) rounded down to
  // a multiple of 4; AF_CONN packets carry no IP header inside usrsctp.
  const uint32_t sctp_packet = config.path_mtu - IpHeader(config);
  const uint64_t room = uint64_t{sctp_packet} - kSctpCommonHeaderSize - kDataChunkHeaderSize -
                        config.bundling_reserve;
  const uint64_t chunk = room & ~uint64_t{3};
  if (chunk < kSsnSize + kMinMaxDdpSegmentSize) return kMinMaxDdpSegmentSize;
  return static_cast<uint32_t>(chunk - kSsnSize);
}

void SizeReorderStore(AssociationConfig* config) {
  const uint64_t chunk = uint64_t{AssociationMulpdu(*config)} + kSsnSize;
  const uint64_t window = std::max(config->send_buffer, config->receive_buffer);
  const uint64_t chunks =
      std::max<uint64_t>(512, (window + chunk - 1) / chunk + config->streams);
  config->reorder_chunks = static_cast<uint32_t>(std::min<uint64_t>(chunks, 32768));
  uint32_t w = 1024;
  while (w < config->reorder_chunks && w < 32768) w <<= 1;
  config->reorder_window = w;
}

namespace {

SessionEngineConfig EngineConfig(const AssociationConfig& c) {
  SessionEngineConfig e;
  e.streams = c.streams;
  e.mulpdu = AssociationMulpdu(c);
  e.max_pending_initiates = c.max_pending_initiates;
  e.reorder_window = c.reorder_window;
  e.reorder_chunks = c.reorder_chunks;
  return e;
}

absl::Status ValidateConfig(const UsrsctpHost& host, const AssociationConfig& c) {
  if (c.streams == 0) return absl::InvalidArgumentError("sctp streams must be >= 1");
  if (c.path_mtu < 576 + IpHeader(c) || c.path_mtu > 65535) {
    return absl::InvalidArgumentError("sctp path_mtu out of range [596, 65535]");
  }
  if (c.path_mtu - IpHeader(c) > host.config().max_packet) {
    return absl::InvalidArgumentError(
        "sctp path_mtu less the IP header exceeds the host's max_packet");
  }
  // The 516-byte floor must still fit one packet (RFC 5043 9: no SCTP
  // fragmentation unless the alternative is IP fragmentation).
  if (uint64_t{AssociationMulpdu(c)} + kSsnSize + kDataChunkHeaderSize + kSctpCommonHeaderSize >
      c.path_mtu - IpHeader(c)) {
    return absl::InvalidArgumentError("sctp path_mtu too small for a 516-byte DDP segment");
  }
  if (std::string_view e = ValidateSessionEngineConfig(EngineConfig(c)); !e.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("sctp ", absl::string_view(e.data(), e.size())));
  }
  if (c.rto_min_ms == 0 || c.rto_min_ms > c.rto_initial_ms || c.rto_initial_ms > c.rto_max_ms) {
    return absl::InvalidArgumentError("sctp needs 0 < rto_min_ms <= rto_initial_ms <= rto_max_ms");
  }
  if (c.delayed_sack_ms == 0 || c.sack_frequency == 0) {
    return absl::InvalidArgumentError("sctp delayed_sack_ms and sack_frequency must be >= 1");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DdpAssociation::ApplySocketOptions(struct socket* so, const AssociationConfig& c) {
  if (usrsctp_set_non_blocking(so, 1) != 0) return OptError("non_blocking");
  // RFC 5043 8: the same number of inbound and outbound streams.
  sctp_initmsg init{};
  init.sinit_num_ostreams = c.streams;
  init.sinit_max_instreams = c.streams;
  if (SetOpt(so, IPPROTO_SCTP, SCTP_INITMSG, init) != 0) return OptError("SCTP_INITMSG");
  // Path MTU fixed by configuration, PMTUD off (the AF_CONN default is 1280).
  sctp_paddrparams pp{};
  pp.spp_assoc_id = SCTP_FUTURE_ASSOC;
  pp.spp_flags = SPP_PMTUD_DISABLE;
  // usrsctp 0.9.5 counts an AF_CONN path MTU without the 12-byte common
  // header (its bundling fills spp_pathmtu bytes of chunks; measured: 1488-
  // byte packets at spp_pathmtu 1480), so the header is taken off here.
  pp.spp_pathmtu = c.path_mtu - IpHeader(c) - kSctpCommonHeaderSize;
  if (SetOpt(so, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, pp) != 0) {
    return OptError("SCTP_PEER_ADDR_PARAMS");
  }
  sctp_rtoinfo rto{};
  rto.srto_assoc_id = SCTP_FUTURE_ASSOC;
  rto.srto_initial = c.rto_initial_ms;
  rto.srto_min = c.rto_min_ms;
  rto.srto_max = c.rto_max_ms;
  if (SetOpt(so, IPPROTO_SCTP, SCTP_RTOINFO, rto) != 0) return OptError("SCTP_RTOINFO");
  const int sndbuf = static_cast<int>(c.send_buffer);
  const int rcvbuf = static_cast<int>(c.receive_buffer);
  if (SetOpt(so, SOL_SOCKET, SO_SNDBUF, sndbuf) != 0) return OptError("SO_SNDBUF");
  if (SetOpt(so, SOL_SOCKET, SO_RCVBUF, rcvbuf) != 0) return OptError("SO_RCVBUF");
  sctp_sack_info sack{};
  sack.sack_assoc_id = SCTP_FUTURE_ASSOC;
  sack.sack_delay = c.delayed_sack_ms;
  sack.sack_freq = c.sack_frequency;
  if (SetOpt(so, IPPROTO_SCTP, SCTP_DELAYED_SACK, sack) != 0) return OptError("SCTP_DELAYED_SACK");
  if (c.adaptation_indication.has_value()) {
    sctp_setadaptation ad{};
    ad.ssb_adaptation_ind = *c.adaptation_indication;
    if (SetOpt(so, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, ad) != 0) {
      return OptError("SCTP_ADAPTATION_LAYER");
    }
  }
  const int on = 1;
  if (c.nodelay && SetOpt(so, IPPROTO_SCTP, SCTP_NODELAY, on) != 0) return OptError("SCTP_NODELAY");
  // RFC 5043 9: never SCTP-fragment a DDP chunk; a send above the
  // fragmentation point fails instead.
  if (SetOpt(so, IPPROTO_SCTP, SCTP_DISABLE_FRAGMENTS, on) != 0) {
    return OptError("SCTP_DISABLE_FRAGMENTS");
  }
  if (SetOpt(so, IPPROTO_SCTP, SCTP_RECVRCVINFO, on) != 0) return OptError("SCTP_RECVRCVINFO");
  for (uint16_t type : {uint16_t{SCTP_ASSOC_CHANGE}, uint16_t{SCTP_ADAPTATION_INDICATION}}) {
    sctp_event ev{};
    ev.se_assoc_id = SCTP_FUTURE_ASSOC;
    ev.se_type = type;
    ev.se_on = 1;
    if (SetOpt(so, IPPROTO_SCTP, SCTP_EVENT, ev) != 0) return OptError("SCTP_EVENT");
  }
  return absl::OkStatus();
}

DdpAssociation::DdpAssociation(struct socket* so, const AssociationConfig& config,
                               DdpLlpEvents* events)
    : so_(so),
      config_(config),
      events_(events),
      output_(this),
      engine_(EngineConfig(config), &output_, events),
      // One byte more than the largest legal chunk: a longer message shows
      // up as a read without MSG_EOR.
      rx_buf_(std::max<size_t>(AssociationMulpdu(config) + kSsnSize + 1, kNotificationRoom)),
      // The largest chunk the engine hands out: a DDP segment of MULPDU
      // bytes or a session control message with 512 bytes of private data
      // (RFC 5043 5.2.3), each behind the DDP-SSN.
      staged_buf_(config.bundle_sends
                      ? std::max<size_t>(AssociationMulpdu(config), 2 + kMaxPrivateData) + kSsnSize
                      : 0) {}

absl::StatusOr<std::unique_ptr<DdpAssociation>> DdpAssociation::Connect(
    UsrsctpHost& host, void* conn, uint16_t local_port, uint16_t remote_port,
    const AssociationConfig& config, DdpLlpEvents* events) {
  if (absl::Status st = ValidateConfig(host, config); !st.ok()) return st;
  struct socket* so = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, nullptr, nullptr, 0,
                                     nullptr);
  if (so == nullptr) return absl::InternalError("usrsctp_socket failed");
  std::unique_ptr<DdpAssociation> a(new DdpAssociation(so, config, events));
  if (absl::Status st = ApplySocketOptions(so, config); !st.ok()) return st;
  // AF_CONN: bind and connect both name our own link cookie (INTEROP.md).
  sockaddr_conn local = ConnAddr(conn, local_port);
  if (usrsctp_bind(so, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    return absl::InternalError(absl::StrCat("usrsctp_bind: ", std::strerror(errno)));
  }
  sockaddr_conn remote = ConnAddr(conn, remote_port);
  if (usrsctp_connect(so, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) != 0 &&
      errno != EINPROGRESS) {
    return absl::InternalError(absl::StrCat("usrsctp_connect: ", std::strerror(errno)));
  }
  return a;
}

DdpAssociation::~DdpAssociation() {
  if (so_ == nullptr) return;
  if (state_ != State::kDown) {
    AbortSocket();
    return;
  }
  usrsctp_close(so_);
}

void DdpAssociation::AbortSocket() {
  linger l{};
  l.l_onoff = 1;
  l.l_linger = 0;
  SetOpt(so_, SOL_SOCKET, SO_LINGER, l);  // close sends ABORT
  usrsctp_close(so_);
  so_ = nullptr;
  staged_ = false;
}

absl::StatusOr<DdpAssociation::SctpStatus> DdpAssociation::Status() const {
  if (so_ == nullptr) return absl::FailedPreconditionError("association closed");
  sctp_status st{};
  socklen_t len = sizeof(st);
  if (usrsctp_getsockopt(so_, IPPROTO_SCTP, SCTP_STATUS, &st, &len) != 0) {
    return absl::InternalError(absl::StrCat("SCTP_STATUS: ", std::strerror(errno)));
  }
  SctpStatus out;
  out.state = st.sstat_state;
  out.peer_rwnd = st.sstat_rwnd;
  out.unacked_chunks = st.sstat_unackdata;
  out.pending_chunks = st.sstat_penddata;
  out.fragmentation_point = st.sstat_fragmentation_point;
  out.path_mtu = st.sstat_primary.spinfo_mtu;
  out.cwnd = st.sstat_primary.spinfo_cwnd;
  out.srtt_ms = st.sstat_primary.spinfo_srtt;
  out.rto_ms = st.sstat_primary.spinfo_rto;
  return out;
}

void DdpAssociation::Abort() {
  if (so_ == nullptr) return;
  AbortSocket();
  GoDown();
}

void DdpAssociation::Shutdown() {
  if (so_ != nullptr && state_ != State::kDown && state_ != State::kRefused) {
    Flush();  // SHUTDOWN only after every chunk we accepted (RFC 9260 9.2)
    usrsctp_shutdown(so_, SHUT_WR);
  }
}

SendResult DdpAssociation::Initiate(uint16_t stream, ByteSpan private_data) {
  if (state_ != State::kUp) return SendResult::kNotUp;
  return engine_.Initiate(stream, private_data);
}
SendResult DdpAssociation::Accept(uint16_t stream, ByteSpan private_data) {
  if (state_ != State::kUp) return SendResult::kNotUp;
  return engine_.Accept(stream, private_data);
}
SendResult DdpAssociation::Reject(uint16_t stream, ByteSpan private_data) {
  if (state_ != State::kUp) return SendResult::kNotUp;
  return engine_.Reject(stream, private_data);
}
SendResult DdpAssociation::Terminate(uint16_t stream) {
  if (state_ != State::kUp) return SendResult::kNotUp;
  return engine_.Terminate(stream);
}
SendResult DdpAssociation::SendSegment(uint16_t stream, ByteSpan ddp_segment) {
  if (state_ != State::kUp) return SendResult::kNotUp;
  return engine_.SendSegment(stream, ddp_segment);
}

SendResult DdpAssociation::Output::SendChunk(uint16_t stream, uint32_t ppid, ByteSpan user_data) {
  if (a_->so_ == nullptr) return SendResult::kNotUp;
  if (a_->config_.bundle_sends) return a_->Stage(stream, ppid, user_data);
  return a_->SendNow(stream, ppid, user_data);
}

SendResult DdpAssociation::SendNow(uint16_t stream, uint32_t ppid, ByteSpan user_data) {
  // A full send buffer stays full until a SACK has been read (Service()):
  // a retry before that would only take usrsctp's locks to fail again.
  if (tx_blocked_) return SendResult::kWouldBlock;
  sctp_sndinfo snd{};
  snd.snd_sid = stream;
  snd.snd_flags = SCTP_UNORDERED;  // RFC 5043 10
  snd.snd_ppid = htonl(ppid);
  const ssize_t n = usrsctp_sendv(so_, user_data.data(), user_data.size(), nullptr, 0, &snd,
                                  sizeof(snd), SCTP_SENDV_SNDINFO, 0);
  if (n >= 0) return SendResult::kOk;
  if (errno == EWOULDBLOCK || errno == EAGAIN) {
    tx_blocked_ = true;
    return SendResult::kWouldBlock;
  }
  // EMSGSIZE here would mean usrsctp's fragmentation point is below our
  // MULPDU (SCTP_DISABLE_FRAGMENTS refused the chunk).
  return SendResult::kError;
}

// Send batches (bundle_sends). usrsctp sends a chunk at once when
// SCTP_NODELAY is on; with it off (Nagle) it holds chunks back while data is
// in flight until a packet's worth is queued or a SACK arrives. There is no
// "send what is queued" call, but a send with SCTP_NODELAY on makes usrsctp
// send everything queued. So within a batch SCTP_NODELAY is off and the
// newest chunk is held here; Flush() turns SCTP_NODELAY back on and sends
// it, and usrsctp bundles the batch's chunks into full packets
// (RFC 9260 6.10). At most one chunk is ever accepted without usrsctp having
// taken it, so the send buffer still bounds what the engine may send.
SendResult DdpAssociation::Stage(uint16_t stream, uint32_t ppid, ByteSpan user_data) {
  if (user_data.size() > staged_buf_.size()) return SendResult::kTooLarge;
  if (staged_) {
    // The chunk before this one goes to usrsctp first (DDP-SSN order); if
    // usrsctp cannot take it, this one is refused whole.
    if (SendResult r = PushStaged(); r != SendResult::kOk) return r;
  }
  if (config_.nodelay && !nagle_on_) SetNodelay(false);
  std::memcpy(staged_buf_.data(), user_data.data(), user_data.size());
  staged_len_ = user_data.size();
  staged_sid_ = stream;
  staged_ppid_ = ppid;
  staged_ = true;
  return SendResult::kOk;
}

SendResult DdpAssociation::PushStaged() {
  const SendResult r =
      SendNow(staged_sid_, staged_ppid_, ByteSpan(staged_buf_.data(), staged_len_));
  if (r == SendResult::kWouldBlock) return r;  // still staged: retried by the next push
  if (r != SendResult::kOk) {
    // Already confirmed to the engine: the association is failing, and its
    // end flushes every stream (RFC 5043 11.3).
    engine_.Count(DdpCounter::kTxDropAtFlush);
  }
  staged_ = false;
  return r;
}

void DdpAssociation::SetNodelay(bool on) {
  const int v = on ? 1 : 0;
  // Cannot fail on a live socket (the option is a flag); if it did, chunks
  // would only leave unbundled (off) or on the next SACK (on).
  SetOpt(so_, IPPROTO_SCTP, SCTP_NODELAY, v);
  nagle_on_ = !on;
}

void DdpAssociation::Flush() {
  if (so_ == nullptr) {
    staged_ = false;
    return;
  }
  if (nagle_on_) SetNodelay(true);
  if (!staged_) return;
  if (PushStaged() == SendResult::kOk) engine_.Count(DdpCounter::kTxFlushes);
}

void DdpAssociation::Service() {
  tx_blocked_ = false;  // input since the last call may have freed room
  if (state_ == State::kUp) engine_.FlushDeferred();
  while (so_ != nullptr) {
    sockaddr_conn from{};
    socklen_t fromlen = sizeof(from);
    sctp_rcvinfo info{};
    socklen_t infolen = sizeof(info);
    unsigned int infotype = 0;
    int flags = 0;
    const ssize_t n = usrsctp_recvv(so_, rx_buf_.data(), rx_buf_.size(),
                                    reinterpret_cast<sockaddr*>(&from), &fromlen, &info, &infolen,
                                    &infotype, &flags);
    if (n < 0) break;  // EWOULDBLOCK: nothing more for now
    if (n == 0) {      // the association has been shut down
      GoDown();
      break;
    }
    const ByteSpan data(rx_buf_.data(), static_cast<size_t>(n));
    if ((flags & MSG_NOTIFICATION) != 0) {
      OnNotification(data);
      continue;
    }
    // User data right after COMM_UP: the peer sent no adaptation indication.
    if (state_ == State::kAwaitAdaptation) AdaptationDecided(false, 0);
    if (state_ != State::kUp) {
      engine_.Count(DdpCounter::kDropNotUp);
      continue;
    }
    const uint16_t sid = infotype == SCTP_RECVV_RCVINFO ? info.rcv_sid : 0;
    if ((flags & MSG_EOR) == 0) {
      // Longer than any legal chunk: read and discard the rest.
      for (;;) {
        flags = 0;
        fromlen = sizeof(from);
        infolen = sizeof(info);
        const ssize_t m = usrsctp_recvv(so_, rx_buf_.data(), rx_buf_.size(),
                                        reinterpret_cast<sockaddr*>(&from), &fromlen, &info,
                                        &infolen, &infotype, &flags);
        if (m <= 0 || (flags & MSG_EOR) != 0) break;
      }
      engine_.OnOversizeChunk(sid);
      continue;
    }
    engine_.OnChunk(sid, ntohl(info.rcv_ppid), (info.rcv_flags & SCTP_UNORDERED) != 0, data);
  }
  // COMM_UP with nothing after it: the peer sent no adaptation indication.
  if (state_ == State::kAwaitAdaptation) AdaptationDecided(false, 0);
}

void DdpAssociation::OnNotification(ByteSpan n) {
  uint16_t type = 0;  // first field of every notification, host order
  if (n.size() < sizeof(type)) return;
  std::memcpy(&type, n.data(), sizeof(type));
  if (type == SCTP_ASSOC_CHANGE && n.size() >= sizeof(sctp_assoc_change)) {
    sctp_assoc_change ac;
    std::memcpy(&ac, n.data(), sizeof(ac));
    switch (ac.sac_state) {
      case SCTP_COMM_UP:
        if (state_ == State::kConnecting) state_ = State::kAwaitAdaptation;
        break;
      case SCTP_COMM_LOST:
      case SCTP_SHUTDOWN_COMP:
      case SCTP_CANT_STR_ASSOC:
        GoDown();
        break;
      default:
        break;
    }
    return;
  }
  if (type == SCTP_ADAPTATION_INDICATION && n.size() >= sizeof(sctp_adaptation_event)) {
    sctp_adaptation_event ae;
    std::memcpy(&ae, n.data(), sizeof(ae));
    if (state_ == State::kAwaitAdaptation) AdaptationDecided(true, ae.sai_adaptation_ind);
    return;
  }
  // Any other notification right after COMM_UP: no indication came with it.
  if (state_ == State::kAwaitAdaptation) AdaptationDecided(false, 0);
}

void DdpAssociation::AdaptationDecided(bool present, uint32_t indication) {
  // RFC 5043 11.1: usrsctp queues the peer's indication right behind
  // COMM_UP, within the same call; anything else means there was none.
  const PeerAdaptation peer = ClassifyPeer(present, indication);
  if (peer == PeerAdaptation::kDdp) {
    state_ = State::kUp;
    events_->OnAssociationUp();
    return;
  }
  engine_.Count(peer == PeerAdaptation::kNone ? DdpCounter::kAssocRefusedNoDdp
                                              : DdpCounter::kAssocRefusedOther);
  state_ = State::kRefused;
  AbortSocket();  // DDP procedures MUST NOT run on this association
  events_->OnAssociationDown();
}

void DdpAssociation::GoDown() {
  if (state_ == State::kDown || state_ == State::kRefused) return;
  const bool was_up = state_ == State::kUp;
  state_ = State::kDown;
  staged_ = false;  // nowhere to go
  if (was_up) engine_.OnAssociationDown();
  events_->OnAssociationDown();
}

// ---- DdpListener -------------------------------------------------------------

absl::StatusOr<std::unique_ptr<DdpListener>> DdpListener::Listen(UsrsctpHost& host, void* conn,
                                                                 uint16_t port,
                                                                 const AssociationConfig& config) {
  if (absl::Status st = ValidateConfig(host, config); !st.ok()) return st;
  struct socket* so = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, nullptr, nullptr, 0,
                                     nullptr);
  if (so == nullptr) return absl::InternalError("usrsctp_socket failed");
  std::unique_ptr<DdpListener> l(new DdpListener(so, config));
  if (absl::Status st = DdpAssociation::ApplySocketOptions(so, config); !st.ok()) return st;
  sockaddr_conn local = ConnAddr(conn, port);
  if (usrsctp_bind(so, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    return absl::InternalError(absl::StrCat("usrsctp_bind: ", std::strerror(errno)));
  }
  if (usrsctp_listen(so, 16) != 0) {
    return absl::InternalError(absl::StrCat("usrsctp_listen: ", std::strerror(errno)));
  }
  return l;
}

DdpListener::~DdpListener() {
  if (so_ != nullptr) usrsctp_close(so_);
}

std::unique_ptr<DdpAssociation> DdpListener::Accept(DdpLlpEvents* events) {
  struct socket* so = usrsctp_accept(so_, nullptr, nullptr);
  if (so == nullptr) return nullptr;  // EWOULDBLOCK
  // The accepted socket inherits the listener's SCTP options; it is made
  // non-blocking again (a per-socket flag).
  usrsctp_set_non_blocking(so, 1);
  return std::unique_ptr<DdpAssociation>(new DdpAssociation(so, config_, events));
}

std::unique_ptr<DdpAssociation> DdpListener::Accept(DdpLlpEvents* events, void** peer_conn) {
  sockaddr_conn from{};
  socklen_t fromlen = sizeof(from);
  struct socket* so = usrsctp_accept(so_, reinterpret_cast<sockaddr*>(&from), &fromlen);
  if (so == nullptr) return nullptr;  // EWOULDBLOCK
  usrsctp_set_non_blocking(so, 1);
  *peer_conn = from.sconn_family == AF_CONN ? from.sconn_addr : nullptr;
  return std::unique_ptr<DdpAssociation>(new DdpAssociation(so, config_, events));
}

}  // namespace iwarp::sctp
