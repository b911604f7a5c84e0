// Control protocol between libiwarp and the daemon's session server.
//
// Transport: one AF_UNIX SOCK_SEQPACKET connection per session; each request
// is one datagram answered by exactly one response datagram with the same
// `seq`. File descriptors (memfds, eventfds, pipe ends) travel as SCM_RIGHTS. The socket
// carries control operations only; data-path work and connection events go
// through the shared rings. Closing the socket ends the session: the daemon
// then flushes and frees everything the session owned.
//
// Messages are fixed-layout structs copied with memcpy (same host, same ABI,
// kAbiVersion checked at kOpen); the receiver checks the length of every
// datagram and never trusts a field without a range check.
#ifndef IWARPD_APPIF_PROTO_H_
#define IWARPD_APPIF_PROTO_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "appif/shm_layout.h"

namespace iwarp::appif {

enum class Op : uint32_t {
  kOpen = 1,        // OpenReq + fd {doorbell eventfd} -> OpenResp + fds {event ring memfd,
                    //                                    event wake-up pipe read end}
  kAllocPd = 2,     // -> IdResp
  kDeallocPd = 3,   // IdReq
  kRegMr = 4,       // RegMrReq + fd {memfd} -> IdResp (STag)
  kDeregMr = 5,     // IdReq (STag)
  kCreateCq = 6,    // CreateCqReq -> CreateCqResp + fds {ring memfd, wake-up pipe read end}
  kDestroyCq = 7,   // IdReq
  kCreateQp = 8,    // CreateQpReq -> CreateQpResp + fd {SQ/RQ memfd}
  kDestroyQp = 9,   // IdReq
  kListen = 10,     // ListenReq -> IdResp (listener)
  kUnlisten = 11,   // IdReq
  kConnect = 12,    // ConnectReq
  kAccept = 13,     // AcceptReq
  kReject = 14,     // RejectReq
  kDisconnect = 15, // IdReq (QP)
  kInvalidate = 16, // IdReq (STag): local invalidate (RFC 5042 5.2)
};

struct MsgHeader {
  uint32_t op = 0;
  uint32_t seq = 0;
  int32_t error = 0;  // responses: 0 or a positive errno value
  uint32_t body_len = 0;
};

inline constexpr size_t kMaxBody = 320;
inline constexpr size_t kMaxErrorText = 160;
inline constexpr int kMaxFds = 2;

struct Message {
  MsgHeader hdr;
  uint8_t body[kMaxBody] = {};
};

struct OpenReq {
  uint32_t abi_version = kAbiVersion;
  uint32_t event_depth = 0;  // 0: daemon default
};
struct OpenResp {
  uint32_t session_id = 0;
  uint32_t event_depth = 0;
  uint64_t event_ring_bytes = 0;
};
struct IdReq {
  uint32_t id = 0;
};
struct IdResp {
  uint32_t id = 0;
};
struct RegMrReq {
  uint32_t pd = 0;
  uint32_t access = 0;  // kMr*
  uint64_t offset = 0;  // in the memfd
  uint64_t length = 0;
  uint64_t va = 0;      // application address of the first byte (base TO)
  uint32_t remote_invalidate = 1;
  uint32_t reserved = 0;
};
struct CreateCqReq {
  uint32_t depth = 0;
};
struct CreateCqResp {
  uint32_t cq = 0;
  uint32_t depth = 0;
  uint64_t ring_bytes = 0;
};
struct CreateQpReq {
  uint32_t pd = 0;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  uint32_t sq_depth = 0;
  uint32_t rq_depth = 0;
};
struct CreateQpResp {
  uint32_t qp = 0;
  uint32_t sq_depth = 0;
  uint32_t rq_depth = 0;
  uint32_t reserved = 0;
  uint64_t shm_bytes = 0;
};
// The lower layer of a wire connection (ListenReq / ConnectReq::transport).
// TCP and SCTP ports are separate spaces: a listener serves one transport.
enum class Transport : uint32_t {
  kTcp = 0,   // iWARP: MPA over TCP (RFC 5044)
  kSctp = 1,  // RDMA over SCTP (RFC 5043): a DDP stream of an SCTP association
};
inline constexpr uint32_t kNumTransports = 2;

struct ListenReq {
  uint32_t ipv4 = 0;  // host order; 0 = any local address
  uint16_t port = 0;
  uint16_t backlog = 0;
  uint32_t transport = 0;  // Transport
  uint32_t reserved = 0;
};
// ConnectReq::mpa_flags: with kMpaOverride set, kMpaCrc and kMpaMarkers
// replace the daemon's defaults (SessionServerOptions::wire_mpa) for this
// connection's MPA Request (RFC 5044 7.1: C and M). 0 keeps the defaults.
// Loopback connections ignore them.
inline constexpr uint16_t kMpaOverride = 1u << 15;
inline constexpr uint16_t kMpaCrc = 1u << 0;
inline constexpr uint16_t kMpaMarkers = 1u << 1;

struct ConnectReq {
  uint32_t qp = 0;
  uint32_t ipv4 = 0;
  uint16_t port = 0;
  uint16_t mpa_flags = 0;  // kMpa* (TCP only; 0 for SCTP)
  uint32_t transport = 0;  // Transport
  uint32_t private_data_len = 0;
  uint8_t private_data[kMaxPrivateData] = {};
};
struct AcceptReq {
  uint32_t request_id = 0;
  uint32_t qp = 0;
  uint32_t private_data_len = 0;
  uint8_t private_data[kMaxPrivateData] = {};
};
struct RejectReq {
  uint32_t request_id = 0;
  uint32_t private_data_len = 0;
  uint8_t private_data[kMaxPrivateData] = {};
};

template <typename T>
void SetBody(Message* m, const T& body) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kMaxBody);
  std::memcpy(m->body, &body, sizeof(T));
  m->hdr.body_len = sizeof(T);
}

// False unless the datagram of `received` bytes carries exactly a T.
template <typename T>
bool GetBody(const Message& m, size_t received, T* out) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kMaxBody);
  if (received != sizeof(MsgHeader) + sizeof(T) || m.hdr.body_len != sizeof(T)) return false;
  std::memcpy(out, m.body, sizeof(T));
  return true;
}

inline size_t MessageBytes(const Message& m) {
  return sizeof(MsgHeader) + (m.hdr.body_len <= kMaxBody ? m.hdr.body_len : kMaxBody);
}

// Sends one datagram with up to kMaxFds descriptors. Returns 0 or an errno.
int SendMessage(int sock, const Message& m, const int* fds, int nfds);

// Receives one datagram into `m`; descriptors land in `fds` (CLOEXEC), their
// count in `*nfds`; extra or truncated descriptors are closed and reported as
// EBADMSG. Returns the datagram size, 0 on orderly close, or -errno.
long RecvMessage(int sock, Message* m, int* fds, int* nfds);

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_PROTO_H_
