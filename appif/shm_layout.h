// Entries of the shared-memory queues between an application (libiwarp) and
// the daemon. Both sides are built from this header; the layout is the ABI
// (kAbiVersion). Entries hold offsets, ids and application virtual addresses
// (TOs, RFC 5040 2.1 "Tagged Offset"), never daemon pointers.
//
// Queues (each an SpscRing, see spsc_ring.h):
//   SQ  app -> daemon  Sqe   one per QP
//   RQ  app -> daemon  Rqe   one per QP (same memfd, after the SQ)
//   CQ  daemon -> app  Cqe   one per CQ
//   EQ  daemon -> app  Event one per session (connection events)
#ifndef IWARPD_APPIF_SHM_LAYOUT_H_
#define IWARPD_APPIF_SHM_LAYOUT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "appif/spsc_ring.h"
#include "common/verbs.h"

namespace iwarp::appif {

// 2: transport in ListenReq / ConnectReq; 3: QpNotify after the RQ; 4: the
// daemon wakes the application through pipes it makes (kOpen's event pipe,
// kCreateCq's wake-up pipe) instead of the application's eventfds.
inline constexpr uint32_t kAbiVersion = 5;
inline constexpr uint32_t kMaxSge = 4;
// RFC 5044 7.1: MPA allows 512; deployed peers (siw, cxgb4) take 256.
inline constexpr uint32_t kMaxPrivateData = 256;

// Access flags of a memory registration (same bits as ddp/stag_table.h).
inline constexpr uint32_t kMrRemoteRead = 1u << 0;
inline constexpr uint32_t kMrRemoteWrite = 1u << 1;
inline constexpr uint32_t kMrLocalWrite = 1u << 2;

struct Sge {
  uint64_t addr = 0;  // application virtual address inside the region of lkey
  uint32_t length = 0;
  uint32_t lkey = 0;  // STag of the local region
};
static_assert(sizeof(Sge) == 16);

// Work request opcodes, completion opcodes and statuses: common/verbs.h
// (one declaration shared with the engine and libiwarp).
using verbs::kNumWrOpcodes;
using verbs::WcOpcode;
using verbs::WcStatus;
using verbs::WrOpcode;

inline constexpr uint8_t kWrSignaled = 1u << 0;  // completion even on success

struct Sqe {
  uint64_t wr_id = 0;
  uint8_t opcode = 0;  // WrOpcode
  uint8_t flags = 0;   // kWr*
  uint8_t num_sge = 0;
  uint8_t reserved0 = 0;
  uint32_t invalidate_stag = 0;  // Send with Invalidate: the peer's STag
  uint64_t remote_addr = 0;      // RDMA Write sink / Read source TO
  uint32_t rkey = 0;             // RDMA Write sink / Read source STag
  uint32_t reserved1 = 0;
  Sge sge[kMaxSge];
};
static_assert(sizeof(Sqe) == 96);

struct Rqe {
  uint64_t wr_id = 0;
  uint32_t num_sge = 0;
  uint32_t reserved = 0;
  Sge sge[kMaxSge];
};
static_assert(sizeof(Rqe) == 80);

inline constexpr uint8_t kWcWithInvalidate = 1u << 0;  // invalidated_stag valid
inline constexpr uint8_t kWcSolicited = 1u << 1;

struct Cqe {
  uint64_t wr_id = 0;
  uint32_t qp_id = 0;
  uint32_t byte_len = 0;
  uint32_t invalidated_stag = 0;
  uint8_t opcode = 0;  // WcOpcode
  uint8_t status = 0;  // WcStatus
  uint8_t flags = 0;   // kWc*
  // RFC 5040 7.4 Terminate error of a failed operation (layer, etype, code).
  uint8_t term_layer = 0;
  uint8_t term_etype = 0;
  uint8_t term_code = 0;
  uint8_t reserved[6] = {};
};
static_assert(sizeof(Cqe) == 32);

enum class EventType : uint32_t {
  kNone = 0,
  kConnectRequest = 1,  // listener_id, request_id, private data of the initiator
  kEstablished = 2,     // qp_id, private data of the responder (initiator side)
  kRejected = 3,        // qp_id, private data of the responder
  kDisconnected = 4,    // qp_id, reason: 0 orderly close (ours or the peer's), errno if lost
  kConnectError = 5,    // qp_id, reason (errno): no listener, listener gone
  kQpError = 6,         // qp_id, reason and Terminate triple
  kDeviceFatal = 7,     // daemon gone (made by libiwarp, never on the ring)
};

struct Event {
  uint32_t type = 0;  // EventType
  uint32_t qp_id = 0;
  uint32_t listener_id = 0;
  uint32_t request_id = 0;
  int32_t reason = 0;  // errno value, 0 if none
  uint8_t term_layer = 0;
  uint8_t term_etype = 0;
  uint8_t term_code = 0;
  uint8_t reserved0 = 0;
  uint32_t private_data_len = 0;
  uint32_t mpa_flags = 0;  // kEstablished: kEvMpa* bits of the connection
  uint8_t private_data[kMaxPrivateData] = {};
  // kConnectRequest: the initiator's address (host order); 127.0.0.1 and
  // the initiating QP's id as port for a loopback request.
  uint32_t peer_ip = 0;
  uint16_t peer_port = 0;
  uint16_t reserved1 = 0;
};

// Event::mpa_flags of kEstablished: what the MPA exchange negotiated
// (RFC 5044 7.1.2: CRC if either side asked; Markers per direction).
inline constexpr uint32_t kEvMpaWire = 1u << 0;        // an iWARP connection (not loopback)
inline constexpr uint32_t kEvMpaCrc = 1u << 1;         // FPDUs carry CRC32c
inline constexpr uint32_t kEvMpaTxMarkers = 1u << 2;   // we insert Markers
inline constexpr uint32_t kEvMpaRxMarkers = 1u << 3;   // the peer inserts Markers
inline constexpr uint32_t kEvMpaSctp = 1u << 4;        // RDMA over SCTP (RFC 5043): no MPA at all
static_assert(sizeof(Event) == 40 + kMaxPrivateData);

// Placement notification of a QP (after its RQ). RFC 5040 gives the Data
// Sink of an RDMA Write no completion, so the daemon counts the Write
// messages it placed into this QP's memory: `writes_placed` moves (release)
// once the last DDP segment of a Write was placed, every earlier segment of
// it before that. The application sets `waiter` before it sleeps on its
// receive CQ's eventfd and re-reads the count (the ring doorbell handshake of
// spsc_ring.h); the daemon, after publishing a new count, clears `waiter`
// and rings that eventfd. The daemon keeps its own copy of the count and only
// ever stores it here, so an application scribbling on this block fools
// nobody but itself.
struct QpNotify {
  alignas(kCacheLine) std::atomic<uint64_t> writes_placed;  // daemon writes
  alignas(kCacheLine) std::atomic<uint32_t> waiter;         // app sets, daemon clears
};
static_assert(sizeof(QpNotify) == 2 * kCacheLine);

// Daemon side: publishes `count` (release), then takes the application's
// wake request. True if the receive CQ's eventfd must be rung.
inline bool PublishPlacedWrites(QpNotify* n, uint64_t count) {
  n->writes_placed.store(count, std::memory_order_release);
  FenceBeforeWaitCheck();
  return n->waiter.load(std::memory_order_relaxed) != 0 &&
         n->waiter.exchange(0, std::memory_order_acq_rel) != 0;
}
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be address-free");

// Layout of a QP's memfd: SQ ring, RQ ring, then the QpNotify block.
struct QpLayout {
  uint32_t sq_depth = 0;
  uint32_t rq_depth = 0;
  size_t sq_offset() const { return 0; }
  size_t rq_offset() const { return RingBytes<Sqe>(sq_depth); }
  size_t notify_offset() const { return rq_offset() + RingBytes<Rqe>(rq_depth); }
  size_t bytes() const { return notify_offset() + sizeof(QpNotify); }
};

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_SHM_LAYOUT_H_
