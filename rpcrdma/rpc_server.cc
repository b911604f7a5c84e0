#include "rpcrdma/rpc_server.h"

#include "absl/strings/str_format.h"

namespace iwarp::rpc {

std::string_view RpcDropName(RpcDrop d) {
  switch (d) {
#define IWARP_RPC_X(e, n, desc) \
  case RpcDrop::e:              \
    return n;
    IWARP_RPC_SERVER_DROPS(IWARP_RPC_X)
#undef IWARP_RPC_X
    case RpcDrop::kCount: break;
  }
  return "unknown";
}

// One accepted call between dispatch and reply: its decoded header, its
// argument decoder and the reply buffer its results are encoded into.
// Slots are reused; their reply buffers are allocated once.
struct RpcServer::Slot {
  Slot(uint32_t i, size_t reply_bytes) : index(i), reply_buf(reply_bytes), args(call), results(reply_buf) {}

  uint32_t index;
  uint32_t generation = 0;
  bool in_use = false;
  ServerConnection* conn = nullptr;
  CallToken token = 0;
  CallHeader header;
  AuthSys auth_sys;
  bool has_auth_sys = false;
  Message call;  // copy of the piece list (the bytes stay the transport's)
  std::vector<uint8_t> reply_buf;
  XdrDecoder args;
  XdrEncoder results;
  uint64_t cookie = 0;
};

RpcServer::RpcServer(const RpcServerOptions& options) : options_(options) {}
RpcServer::~RpcServer() = default;

absl::Status RpcServer::Register(uint32_t prog, uint32_t vers, std::vector<ProcHandler> procs,
                                 const ProgramOptions& options) {
  auto& versions = programs_[prog];
  if (versions.count(vers) != 0) {
    return absl::AlreadyExistsError(absl::StrFormat("rpc: program %u version %u already registered", prog, vers));
  }
  versions[vers] = Version{std::move(procs), options};
  return absl::OkStatus();
}

absl::Status RpcServer::Unregister(uint32_t prog, uint32_t vers) {
  auto p = programs_.find(prog);
  if (p == programs_.end() || p->second.erase(vers) == 0) {
    return absl::NotFoundError(absl::StrFormat("rpc: program %u version %u not registered", prog, vers));
  }
  if (p->second.empty()) programs_.erase(p);
  return absl::OkStatus();
}

void RpcServer::CountReply(const ReplyHeader& h) {
  if (h.stat == ReplyStat::kAccepted) {
    ++counters_.accepted[static_cast<size_t>(h.accept_stat)];
  } else if (h.reject_stat == RejectStat::kRpcMismatch) {
    ++counters_.rpc_mismatch;
  } else {
    ++counters_.auth_error[static_cast<size_t>(h.auth_stat) & 7];
  }
}

void RpcServer::Drop(ServerConnection& conn, CallToken token, RpcDrop why) {
  ++counters_.drops[static_cast<size_t>(why)];
  conn.Drop(token);
}

void RpcServer::SendError(ServerConnection& conn, CallToken token, const ReplyHeader& h) {
  std::array<uint8_t, kMaxReplyHeaderBytes> buf;
  XdrEncoder e(buf);
  EncodeReplyHeader(e, h);
  Message reply;
  e.Finish(&reply);  // a header always fits kMaxReplyHeaderBytes
  if (!conn.Reply(token, reply)) {
    ++counters_.drops[static_cast<size_t>(RpcDrop::kConnectionGone)];
    return;
  }
  CountReply(h);
}

RpcServer::Slot& RpcServer::Acquire() {
  if (free_slots_.empty()) {
    const auto i = static_cast<uint32_t>(slots_.size());
    slots_.push_back(std::make_unique<Slot>(i, options_.reply_buffer_bytes));
    free_slots_.push_back(i);
  }
  Slot& s = *slots_[free_slots_.back()];
  free_slots_.pop_back();
  s.in_use = true;
  s.cookie = 0;
  s.has_auth_sys = false;
  ++slots_in_use_;
  return s;
}

void RpcServer::Release(Slot& s) {
  s.in_use = false;
  ++s.generation;
  s.conn = nullptr;
  --slots_in_use_;
  free_slots_.push_back(s.index);
}

RpcServer::Slot* RpcServer::Lookup(CallHandle h) {
  if (h.slot_ >= slots_.size()) return nullptr;
  Slot* s = slots_[h.slot_].get();
  return (s->in_use && s->generation == h.generation_) ? s : nullptr;
}

XdrDecoder* RpcServer::Args(CallHandle h) {
  Slot* s = Lookup(h);
  return s ? &s->args : nullptr;
}

XdrEncoder* RpcServer::Results(CallHandle h) {
  Slot* s = Lookup(h);
  return s ? &s->results : nullptr;
}

void RpcServer::SetReplyCookie(CallHandle h, uint64_t cookie) {
  if (Slot* s = Lookup(h)) s->cookie = cookie;
}

bool RpcServer::Finish(CallHandle h, ProcStatus status) {
  Slot* s = Lookup(h);
  if (s == nullptr || status == ProcStatus::kDeferred) return false;
  return Complete(*s, status);
}

bool RpcServer::Complete(Slot& s, ProcStatus status) {
  ServerConnection& conn = *s.conn;
  const CallToken token = s.token;
  const uint32_t xid = s.header.xid;
  const uint64_t cookie = s.cookie;
  bool sent = false;
  if (status == ProcStatus::kSuccess && !s.args.ok()) status = ProcStatus::kGarbageArgs;
  if (status == ProcStatus::kSuccess && !s.results.ok()) {
    ++counters_.results_overflow;
    status = ProcStatus::kSystemErr;
  }
  switch (status) {
    case ProcStatus::kSuccess: {
      Message reply;
      if (!s.results.Finish(&reply)) {
        ++counters_.results_overflow;
        Release(s);
        SendError(conn, token, AcceptedReply(xid, AcceptStat::kSystemErr));
        return true;
      }
      if (cookie != 0) reply_cookies_[{&conn, token}] = cookie;
      sent = conn.Reply(token, reply);
      if (sent) {
        ++counters_.accepted[static_cast<size_t>(AcceptStat::kSuccess)];
      } else {
        ++counters_.drops[static_cast<size_t>(RpcDrop::kConnectionGone)];
      }
      Release(s);
      return sent;
    }
    case ProcStatus::kGarbageArgs:
      Release(s);
      SendError(conn, token, AcceptedReply(xid, AcceptStat::kGarbageArgs));
      return true;
    case ProcStatus::kSystemErr:
      Release(s);
      SendError(conn, token, AcceptedReply(xid, AcceptStat::kSystemErr));
      return true;
    case ProcStatus::kDrop:
    case ProcStatus::kDeferred:
      Release(s);
      Drop(conn, token, RpcDrop::kHandler);
      if (cookie != 0 && reply_done_hook_) reply_done_hook_(cookie);
      return true;
  }
  return false;
}

void RpcServer::OnCall(ServerConnection& conn, CallToken token, const Message& call) {
  ++counters_.calls;
  Slot& s = Acquire();
  s.conn = &conn;
  s.token = token;
  s.call = call;
  s.args = XdrDecoder(s.call);
  CallHeader& h = s.header;
  const CallDecode dec = DecodeCallHeader(s.args, &h);
  switch (dec) {
    case CallDecode::kOk: break;
    case CallDecode::kUndecodable:
      Release(s);
      return Drop(conn, token, RpcDrop::kUndecodable);
    case CallDecode::kNotCall:
      Release(s);
      return Drop(conn, token, RpcDrop::kNotCall);
    case CallDecode::kRpcMismatch:
      Release(s);
      return SendError(conn, token, RpcMismatchReply(h.xid, kRpcVersion, kRpcVersion));
    case CallDecode::kBadCred:
      Release(s);
      return SendError(conn, token, AuthErrorReply(h.xid, AuthStat::kBadCred));
    case CallDecode::kBadVerf:
      Release(s);
      return SendError(conn, token, AuthErrorReply(h.xid, AuthStat::kBadVerf));
  }

  // RFC 5531 9 / A: AUTH_NONE and AUTH_SYS; any other flavor, or an AUTH_SYS
  // body that does not decode within its bounds, is a bad credential.
  if (h.cred.flavor == static_cast<uint32_t>(AuthFlavor::kSys)) {
    if (!DecodeAuthSys(h.cred.bytes(), &s.auth_sys)) {
      Release(s);
      return SendError(conn, token, AuthErrorReply(h.xid, AuthStat::kBadCred));
    }
    s.has_auth_sys = true;
  } else if (h.cred.flavor != static_cast<uint32_t>(AuthFlavor::kNone)) {
    Release(s);
    return SendError(conn, token, AuthErrorReply(h.xid, AuthStat::kBadCred));
  }

  auto p = programs_.find(h.prog);
  if (p == programs_.end()) {
    Release(s);
    return SendError(conn, token, AcceptedReply(h.xid, AcceptStat::kProgUnavail));
  }
  auto v = p->second.find(h.vers);
  if (v == p->second.end()) {
    const uint32_t low = p->second.begin()->first;
    const uint32_t high = p->second.rbegin()->first;
    Release(s);
    return SendError(conn, token, ProgMismatchReply(h.xid, low, high));
  }
  const Version& version = v->second;
  if (h.proc >= version.procs.size() || !version.procs[h.proc]) {
    Release(s);
    return SendError(conn, token, AcceptedReply(h.xid, AcceptStat::kProcUnavail));
  }
  if (version.options.require_auth_sys && !s.has_auth_sys && h.proc != 0) {
    Release(s);
    return SendError(conn, token, AuthErrorReply(h.xid, AuthStat::kTooWeak));
  }

  s.results = XdrEncoder(s.reply_buf);
  EncodeReplyHeader(s.results, AcceptedReply(h.xid, AcceptStat::kSuccess));
  const CallHandle handle(s.index, s.generation);
  CallContext ctx{h,          s.has_auth_sys ? &s.auth_sys : nullptr,
                  s.args,     s.results,
                  conn.peer_ipv4(), conn.peer_port(),
                  handle};
  // Copy: a handler may (un)register programs.
  const ProcHandler handler = version.procs[h.proc];
  const ProcStatus status = handler(ctx);
  Slot* still = Lookup(handle);
  if (still == nullptr) return;  // the handler finished its own handle
  still->cookie = ctx.reply_cookie;
  if (status == ProcStatus::kDeferred) {
    ++counters_.deferred;
    return;
  }
  Complete(*still, status);
}

void RpcServer::OnReplyDone(ServerConnection& conn, CallToken token) {
  auto it = reply_cookies_.find({&conn, token});
  if (it == reply_cookies_.end()) return;
  const uint64_t cookie = it->second;
  reply_cookies_.erase(it);
  if (reply_done_hook_) reply_done_hook_(cookie);
}

void RpcServer::OnDisconnect(ServerConnection& conn) {
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (!s.in_use || s.conn != &conn) continue;
    const uint64_t cookie = s.cookie;
    ++counters_.drops[static_cast<size_t>(RpcDrop::kConnectionGone)];
    Release(s);
    if (cookie != 0 && reply_done_hook_) reply_done_hook_(cookie);
  }
  // Replies sent but not reported done: their pieces are no longer read.
  for (auto it = reply_cookies_.lower_bound({&conn, 0}); it != reply_cookies_.end() && it->first.first == &conn;) {
    const uint64_t cookie = it->second;
    it = reply_cookies_.erase(it);
    if (reply_done_hook_) reply_done_hook_(cookie);
  }
}

}  // namespace iwarp::rpc
