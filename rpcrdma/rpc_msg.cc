#include "rpcrdma/rpc_msg.h"

#include <cstring>

namespace iwarp::rpc {

bool OpaqueAuth::Set(uint32_t f, ByteSpan b) {
  if (b.size() > kMaxAuthBody) return false;
  flavor = f;
  length = static_cast<uint32_t>(b.size());
  if (!b.empty()) std::memcpy(body.data(), b.data(), b.size());
  return true;
}

bool AuthSys::SetName(std::string_view n) {
  if (n.size() > kMaxMachineName) return false;
  machinename_length = static_cast<uint32_t>(n.size());
  if (!n.empty()) std::memcpy(machinename.data(), n.data(), n.size());
  return true;
}

bool DecodeAuthSys(ByteSpan body, AuthSys* out) {
  Message m;
  m.Add(Piece{body});
  XdrDecoder d(m);
  AuthSys a;
  a.stamp = d.U32();
  // RFC 5531 A.1: string machinename<255>.
  const size_t name_len = d.OpaqueCopy(MutableByteSpan(
      reinterpret_cast<uint8_t*>(a.machinename.data()), a.machinename.size()));
  a.machinename_length = static_cast<uint32_t>(name_len);
  a.uid = d.U32();
  a.gid = d.U32();
  a.gid_count = d.U32();
  if (!d.ok() || a.gid_count > kMaxAuthSysGids) return false;
  for (uint32_t i = 0; i < a.gid_count; ++i) a.gids[i] = d.U32();
  if (!d.ok() || d.remaining() != 0) return false;
  *out = a;
  return true;
}

bool EncodeAuthSys(const AuthSys& a, OpaqueAuth* out) {
  if (a.machinename_length > kMaxMachineName || a.gid_count > kMaxAuthSysGids) return false;
  std::array<uint8_t, kMaxAuthBody> buf;
  XdrEncoder e(buf);
  e.U32(a.stamp);
  e.String(a.name());
  e.U32(a.uid);
  e.U32(a.gid);
  e.U32(a.gid_count);
  for (uint32_t i = 0; i < a.gid_count; ++i) e.U32(a.gids[i]);
  if (!e.ok()) return false;
  return out->Set(static_cast<uint32_t>(AuthFlavor::kSys), ByteSpan(buf.data(), e.buffer_used()));
}

std::string_view CallDecodeName(CallDecode d) {
  using Enum = CallDecode;
  switch (d) { IWARP_RPC_CALL_DECODES(IWARP_ENUM_NAME_CASE) }
  return "unknown";
}

std::string_view ReplyDecodeName(ReplyDecode d) {
  using Enum = ReplyDecode;
  switch (d) { IWARP_RPC_REPLY_DECODES(IWARP_ENUM_NAME_CASE) }
  return "unknown";
}

namespace {

enum class AuthRead : uint8_t { kOk, kTruncated, kTooLong };

// RFC 5531 8.2: flavor, then opaque body<400>, length checked before use.
AuthRead ReadAuth(XdrDecoder& d, OpaqueAuth* out) {
  out->flavor = d.U32();
  const uint32_t len = d.U32();
  if (!d.ok()) return AuthRead::kTruncated;
  if (len > kMaxAuthBody) return AuthRead::kTooLong;
  ByteSpan b = d.OpaqueFixed(len, out->body);
  if (!d.ok()) return AuthRead::kTruncated;
  out->length = len;
  if (b.data() != out->body.data() && len > 0) std::memcpy(out->body.data(), b.data(), len);
  return AuthRead::kOk;
}

void WriteAuth(XdrEncoder& e, const OpaqueAuth& a) {
  e.U32(a.flavor);
  e.Opaque(a.bytes());
}

}  // namespace

CallDecode DecodeCallHeader(XdrDecoder& d, CallHeader* out) {
  out->xid = d.U32();
  const uint32_t mtype = d.U32();
  if (!d.ok()) return CallDecode::kUndecodable;
  if (mtype != static_cast<uint32_t>(MsgType::kCall)) return CallDecode::kNotCall;
  out->rpcvers = d.U32();
  if (!d.ok()) return CallDecode::kUndecodable;
  // RFC 5531 9: a server answers other RPC versions with RPC_MISMATCH; the
  // rest of the header may have another layout, so stop here.
  if (out->rpcvers != kRpcVersion) return CallDecode::kRpcMismatch;
  out->prog = d.U32();
  out->vers = d.U32();
  out->proc = d.U32();
  if (!d.ok()) return CallDecode::kUndecodable;
  switch (ReadAuth(d, &out->cred)) {
    case AuthRead::kOk: break;
    case AuthRead::kTruncated: return CallDecode::kUndecodable;
    case AuthRead::kTooLong: return CallDecode::kBadCred;
  }
  switch (ReadAuth(d, &out->verf)) {
    case AuthRead::kOk: break;
    case AuthRead::kTruncated: return CallDecode::kUndecodable;
    case AuthRead::kTooLong: return CallDecode::kBadVerf;
  }
  return CallDecode::kOk;
}

void EncodeCallHeader(XdrEncoder& e, const CallHeader& h) {
  e.U32(h.xid);
  e.U32(static_cast<uint32_t>(MsgType::kCall));
  e.U32(h.rpcvers);
  e.U32(h.prog);
  e.U32(h.vers);
  e.U32(h.proc);
  WriteAuth(e, h.cred);
  WriteAuth(e, h.verf);
}

ReplyDecode DecodeReplyHeader(XdrDecoder& d, ReplyHeader* out) {
  out->xid = d.U32();
  const uint32_t mtype = d.U32();
  if (!d.ok()) return ReplyDecode::kTruncated;
  if (mtype != static_cast<uint32_t>(MsgType::kReply)) return ReplyDecode::kNotReply;
  const uint32_t stat = d.U32();
  if (!d.ok()) return ReplyDecode::kTruncated;
  if (stat == static_cast<uint32_t>(ReplyStat::kAccepted)) {
    out->stat = ReplyStat::kAccepted;
    switch (ReadAuth(d, &out->verf)) {
      case AuthRead::kOk: break;
      case AuthRead::kTruncated: return ReplyDecode::kTruncated;
      case AuthRead::kTooLong: return ReplyDecode::kBadVerf;
    }
    const uint32_t as = d.U32();
    if (!d.ok()) return ReplyDecode::kTruncated;
    if (as >= kAcceptStatCount) return ReplyDecode::kBadStat;
    out->accept_stat = static_cast<AcceptStat>(as);
    if (out->accept_stat == AcceptStat::kProgMismatch) {
      out->mismatch_low = d.U32();
      out->mismatch_high = d.U32();
      if (!d.ok()) return ReplyDecode::kTruncated;
    }
    return ReplyDecode::kOk;
  }
  if (stat != static_cast<uint32_t>(ReplyStat::kDenied)) return ReplyDecode::kBadStat;
  out->stat = ReplyStat::kDenied;
  const uint32_t rs = d.U32();
  if (!d.ok()) return ReplyDecode::kTruncated;
  if (rs == static_cast<uint32_t>(RejectStat::kRpcMismatch)) {
    out->reject_stat = RejectStat::kRpcMismatch;
    out->mismatch_low = d.U32();
    out->mismatch_high = d.U32();
    return d.ok() ? ReplyDecode::kOk : ReplyDecode::kTruncated;
  }
  if (rs != static_cast<uint32_t>(RejectStat::kAuthError)) return ReplyDecode::kBadStat;
  out->reject_stat = RejectStat::kAuthError;
  const uint32_t au = d.U32();
  if (!d.ok()) return ReplyDecode::kTruncated;
  if (au > static_cast<uint32_t>(AuthStat::kFailed)) return ReplyDecode::kBadStat;
  out->auth_stat = static_cast<AuthStat>(au);
  return ReplyDecode::kOk;
}

void EncodeReplyHeader(XdrEncoder& e, const ReplyHeader& h) {
  e.U32(h.xid);
  e.U32(static_cast<uint32_t>(MsgType::kReply));
  e.U32(static_cast<uint32_t>(h.stat));
  if (h.stat == ReplyStat::kAccepted) {
    WriteAuth(e, h.verf);
    e.U32(static_cast<uint32_t>(h.accept_stat));
    if (h.accept_stat == AcceptStat::kProgMismatch) {
      e.U32(h.mismatch_low);
      e.U32(h.mismatch_high);
    }
    return;
  }
  e.U32(static_cast<uint32_t>(h.reject_stat));
  if (h.reject_stat == RejectStat::kRpcMismatch) {
    e.U32(h.mismatch_low);
    e.U32(h.mismatch_high);
  } else {
    e.U32(static_cast<uint32_t>(h.auth_stat));
  }
}

ReplyHeader AcceptedReply(uint32_t xid, AcceptStat s) {
  ReplyHeader h;
  h.xid = xid;
  h.accept_stat = s;
  return h;
}

ReplyHeader ProgMismatchReply(uint32_t xid, uint32_t low, uint32_t high) {
  ReplyHeader h = AcceptedReply(xid, AcceptStat::kProgMismatch);
  h.mismatch_low = low;
  h.mismatch_high = high;
  return h;
}

ReplyHeader RpcMismatchReply(uint32_t xid, uint32_t low, uint32_t high) {
  ReplyHeader h;
  h.xid = xid;
  h.stat = ReplyStat::kDenied;
  h.reject_stat = RejectStat::kRpcMismatch;
  h.mismatch_low = low;
  h.mismatch_high = high;
  return h;
}

ReplyHeader AuthErrorReply(uint32_t xid, AuthStat s) {
  ReplyHeader h;
  h.xid = xid;
  h.stat = ReplyStat::kDenied;
  h.reject_stat = RejectStat::kAuthError;
  h.auth_stat = s;
  return h;
}

}  // namespace iwarp::rpc
