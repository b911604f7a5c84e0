#include "iwarp/mpa_gate.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"

namespace iwarp::engine {

absl::StatusOr<std::unique_ptr<MpaGate>> MpaGate::Create(const MpaGateOptions& options,
                                                         tcp::TcpStack& stack,
                                                         MpaGateOwner& owner) {
  if (options.max_pending == 0 || options.max_pending_per_source == 0) {
    return absl::InvalidArgumentError("MPA gate: max_pending and max_pending_per_source must be > 0");
  }
  if (options.max_private_data > mpa::kMaxPrivateDataLength - mpa::kIrdOrdSize) {
    return absl::InvalidArgumentError("MPA gate: max_private_data above 508 bytes");
  }
  return std::unique_ptr<MpaGate>(new MpaGate(options, stack, owner));
}

MpaGate::MpaGate(const MpaGateOptions& options, tcp::TcpStack& stack, MpaGateOwner& owner)
    : options_(options),
      stack_(stack),
      owner_(owner),
      slots_(new Slot[options.max_pending]),
      by_conn_(stack.options().max_connections, 0) {}

MpaGate::~MpaGate() = default;

absl::Status MpaGate::Listen(uint16_t port, uint64_t now_us) {
  now_us_ = now_us;
  absl::Status st = stack_.Listen(port, *this);
  if (st.ok()) port_ = port;
  return st;
}

void MpaGate::Close(uint64_t now_us) {
  now_us_ = now_us;
  if (port_ != 0) (void)stack_.Unlisten(port_);
  port_ = 0;
  for (uint32_t i = 0; i < options_.max_pending; ++i) {
    if (slots_[i].state != SlotState::kFree) Reset(slots_[i]);
  }
}

MpaGate::Slot* MpaGate::Find(tcp::ConnId conn) {
  if (conn.slot >= by_conn_.size() || by_conn_[conn.slot] == 0) return nullptr;
  Slot& s = slots_[by_conn_[conn.slot] - 1];
  return s.state != SlotState::kFree && s.conn == conn ? &s : nullptr;
}

void MpaGate::Free(Slot& s) {
  if (s.conn.slot < by_conn_.size()) by_conn_[s.conn.slot] = 0;
  s.state = SlotState::kFree;
  s.len = 0;
  --used_;
}

void MpaGate::Reset(Slot& s) {
  const tcp::ConnId conn = s.conn;
  Free(s);
  stack_.Abort(conn, now_us_);  // OnClosed finds no slot
}

tcp::TcpUser* MpaGate::OnAccept(tcp::ConnId conn, const tcp::FourTuple& tuple) {
  if (conn.slot >= by_conn_.size()) return nullptr;
  uint32_t from_source = 0;
  Slot* free_slot = nullptr;
  Slot* oldest = nullptr;
  Slot* oldest_of_source = nullptr;
  for (uint32_t i = 0; i < options_.max_pending; ++i) {
    Slot& s = slots_[i];
    if (s.state == SlotState::kFree) {
      if (free_slot == nullptr) free_slot = &s;
      continue;
    }
    if (oldest == nullptr || s.since_us < oldest->since_us) oldest = &s;
    if (s.tuple.remote_addr != tuple.remote_addr) continue;
    ++from_source;
    if (oldest_of_source == nullptr || s.since_us < oldest_of_source->since_us) {
      oldest_of_source = &s;
    }
  }
  // A source at its limit gives up its own longest-waiting connection: its
  // flood delays only itself, and a healthy client behind the same address
  // (which sends its Request at once) still gets in.
  if (from_source >= options_.max_pending_per_source) {
    ++counters_.refused_per_source;
    Reset(*oldest_of_source);
    free_slot = oldest_of_source;
  } else if (free_slot == nullptr) {
    ++counters_.evicted;
    Reset(*oldest);
    free_slot = oldest;
  }
  Slot& s = *free_slot;
  s.state = SlotState::kAwaiting;
  s.conn = conn;
  s.tuple = tuple;
  s.since_us = now_us_;
  s.deadline_us = now_us_ + options_.request_timeout_us;
  s.len = 0;
  by_conn_[conn.slot] = static_cast<uint32_t>(&s - slots_.get()) + 1;
  ++used_;
  ++counters_.passive_opens;
  NoteDeadline(s.deadline_us);
  return this;
}

size_t MpaGate::OnData(tcp::ConnId conn, uint64_t stream_offset, ByteSpan data) {
  Slot* s = Find(conn);
  if (s == nullptr || s->state != SlotState::kAwaiting) return data.size();  // after a Reject
  if (stream_offset != s->len) return 0;  // offered again from where we stopped
  const size_t take = std::min(data.size(), kMaxRequestBytes - s->len);
  std::memcpy(s->buf + s->len, data.data(), take);
  s->len = static_cast<uint16_t>(s->len + take);
  mpa::StartupFrame f;
  mpa::FrameDecodeOptions o;  // the RFC's 512 bytes: the ULP limit is checked below
  const mpa::FrameResult r =
      mpa::DecodeStartupFrame(ByteSpan(s->buf, s->len), mpa::FrameType::kRequest, &f, o);
  if (r.status == mpa::FrameStatus::kNeedMoreBytes) return take;
  // RFC 5044 7.1.2 rule 2: an improperly formatted Request closes the
  // connection. So do bytes after it: the initiator sends nothing until the
  // Reply (INTEROP.md).
  if (r.status != mpa::FrameStatus::kOk || r.size != s->len || take != data.size()) {
    ++counters_.bad_requests;
    Reset(*s);
    return data.size();
  }
  if (f.private_data.size() > options_.max_private_data) {
    ++counters_.refused_private_data;
    static constexpr std::string_view kWhy = "iwarpd: private data over the limit";
    Reject(*s, f, ByteSpan(reinterpret_cast<const uint8_t*>(kWhy.data()), kWhy.size()));
    return take;
  }
  ++counters_.requests;
  const tcp::FourTuple tuple = s->tuple;
  const GateDecision d = owner_.OnMpaRequest(conn, tuple, f, ByteSpan(s->buf, s->len));
  if (d.taken) {
    Free(*s);
    return take;
  }
  ++counters_.refused_no_qp;
  Reject(*s, f, d.private_data);
  return take;
}

void MpaGate::Reject(Slot& s, const mpa::StartupFrame& request, ByteSpan private_data) {
  mpa::StartupFrame rep;
  rep.type = mpa::FrameType::kReply;
  rep.reject = true;
  rep.crc = request.crc;
  rep.revision = request.revision;
  if (request.ird_ord.has_value()) rep.ird_ord = mpa::IrdOrd{};
  const size_t room = mpa::kMaxPrivateDataLength - (rep.ird_ord ? mpa::kIrdOrdSize : 0);
  rep.private_data = private_data.first(std::min(private_data.size(), room));
  uint8_t out[kMaxRequestBytes];
  const mpa::FrameResult r = mpa::EncodeStartupFrame(rep, MutableByteSpan(out));
  if (r.status != mpa::FrameStatus::kOk ||
      stack_.Send(s.conn, ByteSpan(out, r.size), now_us_) != r.size) {
    Reset(s);  // no Reply possible
    return;
  }
  ++counters_.rejects_sent;
  stack_.Shutdown(s.conn, now_us_);
  s.state = SlotState::kRejected;
  s.deadline_us = now_us_ + kRejectLingerUs;
  NoteDeadline(s.deadline_us);
}

void MpaGate::OnPeerFin(tcp::ConnId conn) {
  Slot* s = Find(conn);
  if (s != nullptr && s->state == SlotState::kAwaiting) Reset(*s);
}

void MpaGate::OnClosed(tcp::ConnId conn, tcp::CloseReason) {
  if (Slot* s = Find(conn)) Free(*s);
}

void MpaGate::Poll(uint64_t now_us) {
  now_us_ = now_us;
  if (now_us < next_deadline_us_) return;
  next_deadline_us_ = UINT64_MAX;
  for (uint32_t i = 0; i < options_.max_pending; ++i) {
    Slot& s = slots_[i];
    if (s.state == SlotState::kFree) continue;
    if (now_us < s.deadline_us) {
      NoteDeadline(s.deadline_us);
      continue;
    }
    if (s.state == SlotState::kAwaiting) ++counters_.request_timeouts;
    Reset(s);
  }
}

}  // namespace iwarp::engine
