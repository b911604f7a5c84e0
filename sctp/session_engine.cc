#include "sctp/session_engine.h"

#include <algorithm>
#include <cstring>

namespace iwarp::sctp {

namespace {

ChunkKind KindOf(FunctionCode f) {
  switch (f) {
    case FunctionCode::kInitiate:
      return ChunkKind::kInitiate;
    case FunctionCode::kAccept:
      return ChunkKind::kAccept;
    case FunctionCode::kReject:
      return ChunkKind::kReject;
    case FunctionCode::kTerminate:
      break;
  }
  return ChunkKind::kTerminate;
}

}  // namespace

std::string_view StreamEndName(StreamEnd e) {
  using Enum = StreamEnd;
  switch (e) { IWARP_SCTP_STREAM_ENDS(IWARP_ENUM_NAME_CASE) case Enum::kCount: break; }
  return "invalid";
}

std::string_view SendResultName(SendResult r) {
  using Enum = SendResult;
  switch (r) { IWARP_SCTP_SEND_RESULTS(IWARP_ENUM_NAME_CASE) }
  return "invalid";
}

std::string_view DdpCounterName(DdpCounter c) {
  switch (c) {
#define IWARP_SCTP_X(e, n, d) \
  case DdpCounter::e:         \
    return n;
    IWARP_SCTP_DDP_COUNTERS(IWARP_SCTP_X)
#undef IWARP_SCTP_X
    case DdpCounter::kCount:
      break;
  }
  return "invalid";
}

std::string_view ValidateSessionEngineConfig(const SessionEngineConfig& c) {
  if (c.streams == 0) return "streams must be >= 1";
  if (c.mulpdu < kMinMaxDdpSegmentSize) return "mulpdu must be >= 516 (RFC 5043 9)";
  if (c.mulpdu > 65535) return "mulpdu must be <= 65535";
  if (c.reorder_window == 0 || c.reorder_window > 32768 ||
      (c.reorder_window & (c.reorder_window - 1)) != 0) {
    return "reorder_window must be a power of two <= 32768";
  }
  if (c.reorder_chunks == 0 || c.reorder_chunks > (1u << 20)) {
    return "reorder_chunks must be in [1, 1048576]";
  }
  return {};
}

SessionEngine::SessionEngine(const SessionEngineConfig& config, ChunkOutput* out,
                             DdpLlpEvents* events)
    : config_(config),
      out_(out),
      events_(events),
      chunk_max_(config.mulpdu + static_cast<uint32_t>(kSsnSize)),
      streams_(config.streams),
      held_bytes_(size_t{config.reorder_chunks} * chunk_max_),
      held_meta_(config.reorder_chunks),
      ring_(size_t{config.streams} * config.reorder_window, -1),
      tx_buf_(chunk_max_) {
  free_slots_.reserve(config.reorder_chunks);
  for (uint32_t i = config.reorder_chunks; i > 0; --i) {
    free_slots_.push_back(static_cast<int32_t>(i - 1));
  }
}

bool SessionEngine::StreamOpen(uint16_t stream) const {
  return stream < streams_.size() && streams_[stream].state == StreamState::kOpen;
}

bool SessionEngine::StreamIdle(uint16_t stream) const {
  return stream < streams_.size() && streams_[stream].state == StreamState::kIdle &&
         !streams_[stream].terminate_owed;
}

void SessionEngine::End(uint16_t sid, StreamEnd why) {
  ++ends_[static_cast<size_t>(why)];
  events_->OnStreamEnded(sid, why);
}

// ---- receive path -------------------------------------------------------------

void SessionEngine::OnChunk(uint16_t sid, uint32_t ppid, bool unordered, ByteSpan data) {
  if (ppid != kPpidDdpSegment && ppid != kPpidSessionControl) {
    Count(DdpCounter::kDropBadPpid);
    return;
  }
  if (sid >= streams_.size()) {
    Count(DdpCounter::kDropBadStream);
    return;
  }
  if (!unordered) Count(DdpCounter::kOrderedChunk);  // RFC 5043 10 (sender's MUST)
  Stream& st = streams_[sid];
  if (st.state == StreamState::kFailed) {
    // The DDP-SSNs of a failed session mean nothing any more; only the
    // peer's Terminate (5.2.3) ends the wait.
    SessionControl m;
    if (ppid == kPpidSessionControl && ParseSessionControl(data, &m) == AdaptStatus::kOk &&
        m.function == FunctionCode::kTerminate) {
      Count(DdpCounter::kRxControl);
      ResetStream(sid);
      return;
    }
    Count(DdpCounter::kDropAfterFailure);
    return;
  }
  if (data.size() < kSsnSize || data.size() > chunk_max_) {
    Fail(sid, StreamEnd::kMalformed);
    return;
  }
  const Seq16 ssn(LoadBe16(data.data()));
  const uint16_t ahead = static_cast<uint16_t>(ssn.value() - st.rx_next.value());
  if (ahead == 0) {
    ProcessInOrder(sid, ppid, data);
    DrainHeld(sid);
    return;
  }
  // RFC 5043 10: a valid DDP-SSN is explained by chunks not yet received;
  // this end holds at most reorder_window of them per stream.
  int32_t& ring_slot = RingSlot(sid, ssn);
  if (ahead >= config_.reorder_window || ring_slot >= 0) {
    Fail(sid, StreamEnd::kBadSsn);
    return;
  }
  if (free_slots_.empty()) {
    Fail(sid, StreamEnd::kReorderFull);
    return;
  }
  const int32_t slot = free_slots_.back();
  free_slots_.pop_back();
  std::memcpy(held_bytes_.data() + size_t(slot) * chunk_max_, data.data(), data.size());
  held_meta_[size_t(slot)] = Held{ppid, static_cast<uint32_t>(data.size())};
  ring_slot = slot;
  ++st.held;
  Count(DdpCounter::kRxReordered);
}

void SessionEngine::OnOversizeChunk(uint16_t sid) {
  if (sid >= streams_.size()) {
    Count(DdpCounter::kDropBadStream);
    return;
  }
  Fail(sid, StreamEnd::kMalformed);  // RFC 5043 9: MUST reject
}

void SessionEngine::DrainHeld(uint16_t sid) {
  Stream& st = streams_[sid];
  while (st.held > 0 && st.state != StreamState::kFailed) {
    int32_t& ring_slot = RingSlot(sid, st.rx_next);
    if (ring_slot < 0) return;
    const int32_t slot = ring_slot;
    ring_slot = -1;
    --st.held;
    const Held h = held_meta_[size_t(slot)];
    ProcessInOrder(sid, h.ppid, ByteSpan(held_bytes_.data() + size_t(slot) * chunk_max_, h.length));
    free_slots_.push_back(slot);
  }
}

void SessionEngine::ProcessInOrder(uint16_t sid, uint32_t ppid, ByteSpan data) {
  Stream& st = streams_[sid];
  st.rx_next += 1;
  if (ppid == kPpidDdpSegment) {
    SegmentChunk c;
    if (ParseSegmentChunk(data, config_.mulpdu, &c) != AdaptStatus::kOk) {
      Fail(sid, StreamEnd::kMalformed);  // empty, or above the maximum (9)
      return;
    }
    if (st.state == StreamState::kOpen || st.state == StreamState::kTerminateSent) {
      // 6.2: segments follow Accept; the peer may still send until its own
      // Terminate after ours crossed its last segments.
      Count(DdpCounter::kRxSegments);
      events_->OnSegment(sid, c.segment);
      return;
    }
    Fail(sid, StreamEnd::kIllegalSequence);
    return;
  }
  SessionControl m;
  if (ParseSessionControl(data, &m) != AdaptStatus::kOk) {
    Fail(sid, StreamEnd::kMalformed);
    return;
  }
  const ChunkKind kind = KindOf(m.function);
  switch (st.state) {
    case StreamState::kIdle:
      if (kind != ChunkKind::kInitiate) break;
      Count(DdpCounter::kRxControl);
      // A new session proves the peer is done with the old one: a Terminate
      // still owed to it must not land inside the new session.
      st.terminate_owed = false;
      // Anything held on an idle stream is left over from an earlier session
      // (nothing of this one may precede its Initiate, 6.6): drop it.
      ReleaseHeld(sid);
      if (pending_initiates_ >= config_.max_pending_initiates) {
        // RFC 5043 5.2.3 / 6.4: over the limit, answer with Terminate.
        Count(DdpCounter::kInitiateLimit);
        st.tx_ssn = Seq16(0);
        if (SendControl(sid, FunctionCode::kTerminate, {}) != SendResult::kOk) {
          Count(DdpCounter::kTerminateLost);
        }
        ResetStream(sid);
        return;
      }
      ++pending_initiates_;
      st.state = StreamState::kInitiateReceived;
      events_->OnInitiate(sid, m.private_data);
      return;
    case StreamState::kInitiateSent:
      if (kind == ChunkKind::kAccept) {
        Count(DdpCounter::kRxControl);
        st.state = StreamState::kOpen;
        events_->OnAccepted(sid, m.private_data);
        return;
      }
      if (kind == ChunkKind::kReject) {
        Count(DdpCounter::kRxControl);
        ResetStream(sid);
        events_->OnRejected(sid, m.private_data);
        return;
      }
      if (kind == ChunkKind::kTerminate) {
        Count(DdpCounter::kRxControl);
        ResetStream(sid);
        End(sid, StreamEnd::kPeerRefused);
        return;
      }
      break;
    case StreamState::kInitiateReceived:
    case StreamState::kOpen:
      if (kind == ChunkKind::kTerminate) {
        Count(DdpCounter::kRxControl);
        if (st.state == StreamState::kInitiateReceived) --pending_initiates_;
        // Our direction ends too (6.2: each side's last chunk MAY be a
        // Terminate); then the stream is idle.
        SendTerminateOrOwe(sid);
        ResetStream(sid);
        End(sid, StreamEnd::kPeerTerminate);
        return;
      }
      break;
    case StreamState::kTerminateSent:
      if (kind == ChunkKind::kTerminate) {
        Count(DdpCounter::kRxControl);
        ResetStream(sid);
        End(sid, StreamEnd::kClosed);
        return;
      }
      break;
    case StreamState::kFailed:
      return;  // handled before ordering
  }
  Fail(sid, StreamEnd::kIllegalSequence);
}

void SessionEngine::Fail(uint16_t sid, StreamEnd why) {
  Stream& st = streams_[sid];
  if (st.state == StreamState::kIdle) {
    // No session to end: the chunk is a stray (RFC 5043 6.1 patterns all
    // begin with an Initiate). Count and forget it.
    Count(DdpCounter::kDropIdle);
    ResetStream(sid);
    return;
  }
  switch (why) {
    case StreamEnd::kIllegalSequence:
      Count(DdpCounter::kEndIllegalSequence);
      break;
    case StreamEnd::kBadSsn:
      Count(DdpCounter::kEndBadSsn);
      break;
    case StreamEnd::kReorderFull:
      Count(DdpCounter::kEndReorderFull);
      break;
    default:
      Count(DdpCounter::kEndMalformed);
      break;
  }
  if (st.state == StreamState::kFailed) return;
  if (st.state == StreamState::kInitiateReceived) --pending_initiates_;
  const bool owe_terminate = st.state != StreamState::kTerminateSent;
  ReleaseHeld(sid);
  st.state = StreamState::kFailed;
  // RFC 5043 6.1: the session MUST be terminated. Our Terminate ends our
  // direction; the peer's Terminate makes the stream idle again.
  if (owe_terminate) SendTerminateOrOwe(sid);
  End(sid, why);
}

void SessionEngine::ReleaseHeld(uint16_t sid) {
  Stream& st = streams_[sid];
  if (st.held == 0) return;
  int32_t* ring = ring_.data() + size_t{sid} * config_.reorder_window;
  for (uint32_t i = 0; i < config_.reorder_window && st.held > 0; ++i) {
    if (ring[i] >= 0) {
      free_slots_.push_back(ring[i]);
      ring[i] = -1;
      --st.held;
    }
  }
}

void SessionEngine::ResetStream(uint16_t sid) {
  // RFC 5043 6.1: DDP-SSNs restart at zero with the next session.
  ReleaseHeld(sid);
  Stream& st = streams_[sid];
  st.state = StreamState::kIdle;
  st.tx_ssn = Seq16(0);
  st.rx_next = Seq16(0);
}

void SessionEngine::OnAssociationDown() {
  // RFC 5043 11.3: notify every consumer of a DDP stream.
  for (uint16_t s = 0; s < streams_.size(); ++s) {
    const bool had_session = streams_[s].state != StreamState::kIdle;
    ResetStream(s);
    streams_[s].terminate_owed = false;
    if (had_session) End(s, StreamEnd::kAssociationDown);
  }
  pending_initiates_ = 0;
}

// ---- send path ----------------------------------------------------------------

SendResult SessionEngine::SendWithSsn(uint16_t sid, uint32_t ppid, Seq16 ssn, ByteSpan head,
                                      ByteSpan body) {
  const size_t len = kSsnSize + head.size() + body.size();
  if (len > tx_buf_.size()) return SendResult::kTooLarge;
  StoreBe16(tx_buf_.data(), ssn.value());
  if (!head.empty()) std::memcpy(tx_buf_.data() + kSsnSize, head.data(), head.size());
  if (!body.empty()) std::memcpy(tx_buf_.data() + kSsnSize + head.size(), body.data(), body.size());
  const SendResult r = out_->SendChunk(sid, ppid, ByteSpan(tx_buf_.data(), len));
  if (r == SendResult::kWouldBlock) Count(DdpCounter::kTxWouldBlock);
  return r;
}

SendResult SessionEngine::SendControl(uint16_t sid, FunctionCode f, ByteSpan pd) {
  Stream& st = streams_[sid];
  std::array<uint8_t, 2> fc{};
  StoreBe16(fc.data(), static_cast<uint16_t>(f));
  const SendResult r = SendWithSsn(sid, kPpidSessionControl, st.tx_ssn, ByteSpan(fc), pd);
  if (r == SendResult::kOk) {
    st.tx_ssn += 1;
    Count(DdpCounter::kTxControl);
  }
  return r;
}

void SessionEngine::SendTerminateOrOwe(uint16_t sid) {
  Stream& st = streams_[sid];
  const Seq16 ssn = st.tx_ssn;
  if (SendControl(sid, FunctionCode::kTerminate, {}) == SendResult::kWouldBlock) {
    st.terminate_owed = true;
    st.owed_ssn = ssn;
    Count(DdpCounter::kTerminateDeferred);
  }
}

void SessionEngine::FlushDeferred() {
  for (uint16_t s = 0; s < streams_.size(); ++s) {
    Stream& st = streams_[s];
    if (!st.terminate_owed) continue;
    std::array<uint8_t, 2> fc{};
    StoreBe16(fc.data(), static_cast<uint16_t>(FunctionCode::kTerminate));
    const SendResult r = SendWithSsn(s, kPpidSessionControl, st.owed_ssn, ByteSpan(fc), {});
    if (r == SendResult::kWouldBlock) return;
    if (r == SendResult::kOk) Count(DdpCounter::kTxControl);
    st.terminate_owed = false;
  }
}

SendResult SessionEngine::CheckStream(uint16_t stream) const {
  if (stream >= streams_.size()) return SendResult::kBadStream;
  return SendResult::kOk;
}

SendResult SessionEngine::Initiate(uint16_t stream, ByteSpan private_data) {
  if (SendResult r = CheckStream(stream); r != SendResult::kOk) return r;
  if (private_data.size() > kMaxPrivateData) return SendResult::kTooLarge;
  if (!StreamIdle(stream)) return SendResult::kWrongState;
  ResetStream(stream);
  const SendResult r = SendControl(stream, FunctionCode::kInitiate, private_data);
  if (r == SendResult::kOk) streams_[stream].state = StreamState::kInitiateSent;
  return r;
}

SendResult SessionEngine::Accept(uint16_t stream, ByteSpan private_data) {
  if (SendResult r = CheckStream(stream); r != SendResult::kOk) return r;
  if (private_data.size() > kMaxPrivateData) return SendResult::kTooLarge;
  Stream& st = streams_[stream];
  if (st.state != StreamState::kInitiateReceived) return SendResult::kWrongState;
  const SendResult r = SendControl(stream, FunctionCode::kAccept, private_data);
  if (r == SendResult::kOk) {
    --pending_initiates_;
    st.state = StreamState::kOpen;
  }
  return r;
}

SendResult SessionEngine::Reject(uint16_t stream, ByteSpan private_data) {
  if (SendResult r = CheckStream(stream); r != SendResult::kOk) return r;
  if (private_data.size() > kMaxPrivateData) return SendResult::kTooLarge;
  Stream& st = streams_[stream];
  if (st.state != StreamState::kInitiateReceived) return SendResult::kWrongState;
  const SendResult r = SendControl(stream, FunctionCode::kReject, private_data);
  if (r == SendResult::kOk) {
    --pending_initiates_;
    ResetStream(stream);  // 6.3: nothing follows a Reject
  }
  return r;
}

SendResult SessionEngine::Terminate(uint16_t stream) {
  if (SendResult r = CheckStream(stream); r != SendResult::kOk) return r;
  Stream& st = streams_[stream];
  if (st.state != StreamState::kOpen && st.state != StreamState::kInitiateSent &&
      st.state != StreamState::kInitiateReceived) {
    return SendResult::kWrongState;
  }
  // A full send buffer does not refuse the Terminate: it is owed and goes
  // out from FlushDeferred() with the DDP-SSN it has now. Refusing it would
  // leave the session open on our side with a caller that believes it ended
  // (RFC 5043 6.2: the session ends with the Terminate exchange).
  SendTerminateOrOwe(stream);
  if (st.state == StreamState::kInitiateReceived) {
    // 6.4 shape: the passive side's only answer; nothing follows it.
    --pending_initiates_;
    ResetStream(stream);
    return SendResult::kOk;
  }
  st.state = StreamState::kTerminateSent;
  return SendResult::kOk;
}

SendResult SessionEngine::SendSegment(uint16_t stream, ByteSpan ddp_segment) {
  if (SendResult r = CheckStream(stream); r != SendResult::kOk) return r;
  Stream& st = streams_[stream];
  // RFC 5043 6.6: the active side sends no segment before the Accept (which
  // proves the Initiate arrived); the passive side only after its Accept.
  if (st.state != StreamState::kOpen) return SendResult::kWrongState;
  if (ddp_segment.empty()) return SendResult::kEmpty;
  if (ddp_segment.size() > config_.mulpdu) return SendResult::kTooLarge;
  const SendResult r = SendWithSsn(stream, kPpidDdpSegment, st.tx_ssn, {}, ddp_segment);
  if (r == SendResult::kOk) {
    st.tx_ssn += 1;
    Count(DdpCounter::kTxSegments);
  }
  return r;
}

}  // namespace iwarp::sctp
