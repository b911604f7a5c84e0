// ONC RPC version 2 message headers (RFC 5531 9 and appendix A): the call
// header with its credential and verifier, the reply header in every
// accepted / denied form, and the AUTH_SYS credential body.
//
// Decoders bound every length before using it (opaque_auth bodies <= 400,
// machinename <= 255, gids <= 16) and never assert on peer data; encoders
// write the canonical XDR (zero pads), so decode -> encode is byte-exact.
#ifndef IWARPD_RPCRDMA_RPC_MSG_H_
#define IWARPD_RPCRDMA_RPC_MSG_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/enum_names.h"
#include "rpcrdma/rpc_xdr.h"

namespace iwarp::rpc {

inline constexpr uint32_t kRpcVersion = 2;       // RFC 5531 9: rpcvers
inline constexpr size_t kMaxAuthBody = 400;      // RFC 5531 8.2: opaque body<400>
inline constexpr size_t kMaxMachineName = 255;   // RFC 5531 A.1: machinename<255>
inline constexpr size_t kMaxAuthSysGids = 16;    // RFC 5531 A.1: gids<16>

// RFC 5531 9: msg_type.
enum class MsgType : uint32_t { kCall = 0, kReply = 1 };
// RFC 5531 9: reply_stat.
enum class ReplyStat : uint32_t { kAccepted = 0, kDenied = 1 };
// RFC 5531 9: accept_stat.
enum class AcceptStat : uint32_t {
  kSuccess = 0,
  kProgUnavail = 1,
  kProgMismatch = 2,
  kProcUnavail = 3,
  kGarbageArgs = 4,
  kSystemErr = 5,
};
inline constexpr size_t kAcceptStatCount = 6;
// RFC 5531 9: reject_stat.
enum class RejectStat : uint32_t { kRpcMismatch = 0, kAuthError = 1 };
// RFC 5531 9: auth_stat.
enum class AuthStat : uint32_t {
  kOk = 0,
  kBadCred = 1,
  kRejectedCred = 2,
  kBadVerf = 3,
  kRejectedVerf = 4,
  kTooWeak = 5,
  kInvalidResp = 6,
  kFailed = 7,
};
// RFC 5531 8.2 / appendix A: auth_flavor numbers this layer knows.
enum class AuthFlavor : uint32_t { kNone = 0, kSys = 1, kShort = 2, kDh = 3, kRpcsecGss = 6 };

// RFC 5531 8.2: opaque_auth, its body held by value (<= 400 bytes).
struct OpaqueAuth {
  uint32_t flavor = 0;
  uint32_t length = 0;
  std::array<uint8_t, kMaxAuthBody> body{};

  ByteSpan bytes() const { return ByteSpan(body.data(), length); }
  // False (unchanged) when b is longer than 400 bytes.
  bool Set(uint32_t f, ByteSpan b);
};

// RFC 5531 A.1: authsys_parms.
struct AuthSys {
  uint32_t stamp = 0;
  uint32_t machinename_length = 0;
  std::array<char, kMaxMachineName> machinename{};
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t gid_count = 0;
  std::array<uint32_t, kMaxAuthSysGids> gids{};

  std::string_view name() const { return std::string_view(machinename.data(), machinename_length); }
  bool SetName(std::string_view n);
};

// Decodes an AUTH_SYS body: every field inside `body`, bounded, and nothing
// after it. False on any violation.
bool DecodeAuthSys(ByteSpan body, AuthSys* out);
// Encodes `a` as a credential (flavor AUTH_SYS). False if it does not fit
// 400 bytes or its counts exceed the bounds.
bool EncodeAuthSys(const AuthSys& a, OpaqueAuth* out);

// RFC 5531 9: the call body's header (everything before the arguments).
struct CallHeader {
  uint32_t xid = 0;
  uint32_t rpcvers = kRpcVersion;
  uint32_t prog = 0;
  uint32_t vers = 0;
  uint32_t proc = 0;
  OpaqueAuth cred;
  OpaqueAuth verf;
};

// X(enumerator, "name")
#define IWARP_RPC_CALL_DECODES(X)                                                                             \
  X(kOk, "ok")                                                                                                \
  X(kUndecodable, "undecodable")  /* too short for xid + msg_type + rpcvers, or for the rest of the header */ \
  X(kNotCall, "not_call")  /* msg_type is not CALL (xid valid) */                                             \
  X(kRpcMismatch, "rpc_mismatch")  /* rpcvers != 2 (xid valid; nothing after rpcvers read) */                 \
  X(kBadCred, "bad_cred")  /* credential body longer than 400 (xid..proc valid) */                            \
  X(kBadVerf, "bad_verf")  /* verifier body longer than 400 (xid..cred valid) */
enum class CallDecode : uint8_t { IWARP_RPC_CALL_DECODES(IWARP_ENUMERATOR) };
std::string_view CallDecodeName(CallDecode d);

// Reads a call header; on kOk the decoder is positioned on the arguments.
CallDecode DecodeCallHeader(XdrDecoder& d, CallHeader* out);
void EncodeCallHeader(XdrEncoder& e, const CallHeader& h);

// RFC 5531 9: reply header, every form (results follow a SUCCESS one).
struct ReplyHeader {
  uint32_t xid = 0;
  ReplyStat stat = ReplyStat::kAccepted;
  // MSG_ACCEPTED
  OpaqueAuth verf;  // AUTH_NONE, empty, unless set
  AcceptStat accept_stat = AcceptStat::kSuccess;
  // MSG_DENIED
  RejectStat reject_stat = RejectStat::kRpcMismatch;
  AuthStat auth_stat = AuthStat::kOk;
  // PROG_MISMATCH (accepted) and RPC_MISMATCH (denied)
  uint32_t mismatch_low = 0;
  uint32_t mismatch_high = 0;
};

// X(enumerator, "name")
#define IWARP_RPC_REPLY_DECODES(X)                                                               \
  X(kOk, "ok")                                                                                   \
  X(kTruncated, "truncated")                                                                     \
  X(kNotReply, "not_reply")  /* msg_type is not REPLY */                                         \
  X(kBadStat, "bad_stat")  /* reply_stat / accept_stat / reject_stat / auth_stat out of range */ \
  X(kBadVerf, "bad_verf")  /* verifier body longer than 400 */
enum class ReplyDecode : uint8_t { IWARP_RPC_REPLY_DECODES(IWARP_ENUMERATOR) };
std::string_view ReplyDecodeName(ReplyDecode d);

// Reads a reply header; on kOk with an accepted SUCCESS the decoder is
// positioned on the results.
ReplyDecode DecodeReplyHeader(XdrDecoder& d, ReplyHeader* out);
void EncodeReplyHeader(XdrEncoder& e, const ReplyHeader& h);

// Convenience constructors of the reply forms.
ReplyHeader AcceptedReply(uint32_t xid, AcceptStat s);
ReplyHeader ProgMismatchReply(uint32_t xid, uint32_t low, uint32_t high);
ReplyHeader RpcMismatchReply(uint32_t xid, uint32_t low, uint32_t high);
ReplyHeader AuthErrorReply(uint32_t xid, AuthStat s);

// Largest reply header: xid, REPLY, ACCEPTED, verf (8 + 400), stat, low, high.
inline constexpr size_t kMaxReplyHeaderBytes = 4 * 3 + 8 + kMaxAuthBody + 4 * 3;
// Largest call header: 6 words, cred and verf (8 + 400 each).
inline constexpr size_t kMaxCallHeaderBytes = 4 * 6 + 2 * (8 + kMaxAuthBody);

}  // namespace iwarp::rpc

#endif  // IWARPD_RPCRDMA_RPC_MSG_H_
