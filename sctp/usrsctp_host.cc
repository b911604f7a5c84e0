#include "sctp/usrsctp_host.h"

#include <usrsctp.h>

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "common/crc32c.h"

namespace iwarp::sctp {

namespace {

// The one live host (usrsctp has one global stack). Only the owning thread
// reads or writes it.
UsrsctpHost* g_host = nullptr;

constexpr std::array<uint8_t, 4> kZeroCrc{};

}  // namespace

std::string_view HostCounterName(HostCounter c) {
  switch (c) {
#define IWARP_SCTP_X(e, n, d) \
  case HostCounter::e:        \
    return n;
    IWARP_SCTP_HOST_COUNTERS(IWARP_SCTP_X)
#undef IWARP_SCTP_X
    case HostCounter::kCount:
      break;
  }
  return "invalid";
}

uint32_t SctpPacketCrc(ByteSpan packet) {
  // RFC 9260 6.8: computed over the whole packet with the checksum field
  // set to zero; folded piecewise so the caller's bytes stay untouched.
  Crc32cAccumulator crc;
  crc.Update(packet.first(kSctpChecksumOffset));
  crc.Update(ByteSpan(kZeroCrc));
  crc.Update(packet.subspan(kSctpHeaderSize));
  return crc.Value();
}

bool SctpCrcValid(ByteSpan packet) {
  if (packet.size() < kSctpHeaderSize) return false;
  return LoadCrc32cWire(packet.data() + kSctpChecksumOffset) == SctpPacketCrc(packet);
}

void SctpFillCrc(MutableByteSpan packet) {
  if (packet.size() < kSctpHeaderSize) return;
  StoreCrc32cWire(packet.data() + kSctpChecksumOffset, SctpPacketCrc(packet));
}

absl::StatusOr<std::unique_ptr<UsrsctpHost>> UsrsctpHost::Create(const HostConfig& config) {
  if (g_host != nullptr) {
    return absl::FailedPreconditionError(
        "usrsctp host already initialised in this process (usrsctp has one global stack)");
  }
  if (config.max_packet < 1280 - 20 || config.max_packet > 65535) {
    return absl::InvalidArgumentError("sctp max_packet must be in [1260, 65535]");
  }
  if (config.tx_queue_packets == 0) {
    return absl::InvalidArgumentError("sctp tx_queue_packets must be positive");
  }
  if (config.max_chunks_on_queue == 0 || config.max_chunks_on_queue > 32767) {
    // RFC 5043 10: more than 32767 unacknowledged chunks on a stream would
    // make DDP-SSNs ambiguous.
    return absl::InvalidArgumentError("sctp max_chunks_on_queue must be in [1, 32767]");
  }
  std::unique_ptr<UsrsctpHost> host(new UsrsctpHost(config));
  g_host = host.get();
  // Port 0: no UDP encapsulation socket; no debug printer.
  usrsctp_init_nothreads(0, &UsrsctpHost::ConnOutput, nullptr);
  // The checksum is ours: computed in ConnOutput, verified in Input.
  usrsctp_enable_crc32c_offload();
  // Not used by AF_CONN links; keeps INIT small and behaviour predictable.
  usrsctp_sysctl_set_sctp_ecn_enable(0);
  usrsctp_sysctl_set_sctp_asconf_enable(0);
  usrsctp_sysctl_set_sctp_auth_enable(0);
  usrsctp_sysctl_set_sctp_max_chunks_on_queue(config.max_chunks_on_queue);
  return host;
}

UsrsctpHost* UsrsctpHost::Current() { return g_host; }

UsrsctpHost::UsrsctpHost(const HostConfig& config)
    : config_(config),
      tx_bytes_(size_t{config.tx_queue_packets} * config.max_packet),
      tx_slots_(config.tx_queue_packets) {}

UsrsctpHost::~UsrsctpHost() {
  // usrsctp_finish fails while associations are still being torn down;
  // drive the timers until it succeeds (bounded).
  for (int i = 0; i < 3000 && usrsctp_finish() != 0; ++i) usrsctp_handle_timers(10);
  g_host = nullptr;
}

void UsrsctpHost::RegisterConn(void* conn) { usrsctp_register_address(conn); }
void UsrsctpHost::DeregisterConn(void* conn) { usrsctp_deregister_address(conn); }

int UsrsctpHost::ConnOutput(void* addr, void* buffer, size_t length, uint8_t /*tos*/,
                            uint8_t /*set_df*/) {
  // Runs inside usrsctp calls made by the owning thread: enqueue only.
  if (g_host == nullptr) return -1;
  g_host->Enqueue(addr, static_cast<const uint8_t*>(buffer), length);
  return 0;  // a full queue is a loss on the link; SCTP retransmits
}

void UsrsctpHost::Enqueue(void* conn, const uint8_t* data, size_t length) {
  if (length > config_.max_packet) {
    Count(HostCounter::kTxOversize);
    return;
  }
  if (tx_count_ == tx_slots_.size()) {
    Count(HostCounter::kTxQueueFull);
    return;
  }
  const size_t idx = (tx_head_ + tx_count_) % tx_slots_.size();
  uint8_t* dst = tx_bytes_.data() + idx * config_.max_packet;
  std::memcpy(dst, data, length);
  SctpFillCrc(MutableByteSpan(dst, length));
  tx_slots_[idx] = Slot{conn, static_cast<uint32_t>(length)};
  ++tx_count_;
  Count(HostCounter::kTxPackets);
}

size_t UsrsctpHost::DrainOutbound(PacketSink& sink, size_t max) {
  size_t n = 0;
  while (tx_count_ > 0 && n < max) {
    const Slot s = tx_slots_[tx_head_];
    const uint8_t* p = tx_bytes_.data() + tx_head_ * config_.max_packet;
    // Free the slot before the sink runs: the sink may feed a packet back
    // into Input(), whose output then finds room.
    tx_head_ = (tx_head_ + 1) % tx_slots_.size();
    --tx_count_;
    sink.Transmit(s.conn, ByteSpan(p, s.length));
    ++n;
  }
  return n;
}

void UsrsctpHost::Input(void* conn, ByteSpan packet) {
  if (packet.size() < kSctpHeaderSize) {
    Count(HostCounter::kRxTruncated);
    return;
  }
  if (packet.size() > config_.max_packet) {
    Count(HostCounter::kRxOversize);
    return;
  }
  if (!SctpCrcValid(packet)) {
    Count(HostCounter::kRxBadCrc);
    return;
  }
  Count(HostCounter::kRxPackets);
  // usrsctp copies the bytes into its own mbufs; ECN bits: none (AF_CONN).
  usrsctp_conninput(conn, packet.data(), packet.size(), 0);
}

void UsrsctpHost::SyncStackStats() {
  struct sctpstat st;
  std::memset(&st, 0, sizeof(st));
  usrsctp_get_stat(&st);
  counters_[static_cast<size_t>(HostCounter::kStackRetransData)] = st.sctps_sendretransdata;
  counters_[static_cast<size_t>(HostCounter::kStackT3Timeouts)] = st.sctps_timodata;
  counters_[static_cast<size_t>(HostCounter::kStackDupData)] = st.sctps_recvdupdata;
  counters_[static_cast<size_t>(HostCounter::kStackSendErrors)] = st.sctps_senderrors;
  counters_[static_cast<size_t>(HostCounter::kStackBadVtag)] = st.sctps_badvtag;
  counters_[static_cast<size_t>(HostCounter::kStackHeaderDrops)] = st.sctps_hdrops;
  counters_[static_cast<size_t>(HostCounter::kStackOutOfTheBlue)] = st.sctps_outoftheblue;
  counters_[static_cast<size_t>(HostCounter::kStackAborted)] = st.sctps_aborted;
  counters_[static_cast<size_t>(HostCounter::kStackPassiveEstab)] = st.sctps_passiveestab;
  counters_[static_cast<size_t>(HostCounter::kStackControlChunksIn)] = st.sctps_incontrolchunks;
  counters_[static_cast<size_t>(HostCounter::kStackControlChunksOut)] = st.sctps_outcontrolchunks;
}

void UsrsctpHost::Poll(uint64_t now_ms) {
  if (!have_last_poll_) {
    have_last_poll_ = true;
    last_poll_ms_ = now_ms;
    return;
  }
  if (now_ms <= last_poll_ms_) return;
  const uint64_t elapsed = now_ms - last_poll_ms_;
  last_poll_ms_ = now_ms;
  Count(HostCounter::kTimerTicks);
  usrsctp_handle_timers(static_cast<uint32_t>(std::min<uint64_t>(elapsed, UINT32_MAX)));
}

}  // namespace iwarp::sctp
