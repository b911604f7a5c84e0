// A transport-neutral ONC RPC server dispatcher (RFC 5531): implements
// CallHandler for any server transport (rpc_tcp.h, RPC-over-RDMA), decodes
// call headers, authenticates AUTH_NONE / AUTH_SYS, routes to the
// application's procedure handlers and answers every RFC 5531 error itself.
//
// Threading: one thread, the transports' (their Poll calls OnCall); deferred
// calls are finished from that same thread.
#ifndef IWARPD_RPCRDMA_RPC_SERVER_H_
#define IWARPD_RPCRDMA_RPC_SERVER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "rpcrdma/rpc_msg.h"
#include "rpcrdma/rpc_transport.h"
#include "rpcrdma/rpc_xdr.h"

namespace iwarp::rpc {

// What a procedure handler did with its call.
enum class ProcStatus : uint8_t {
  kSuccess,      // results are in CallContext::results; reply SUCCESS now
  kGarbageArgs,  // the arguments did not decode: reply GARBAGE_ARGS
  kSystemErr,    // the procedure failed: reply SYSTEM_ERR
  kDrop,         // no reply (RFC 5531: e.g. a duplicate being worked on)
  kDeferred,     // answered later through RpcServer::Finish(handle, ...)
};

// Names a deferred call until RpcServer::Finish (or its connection's end).
// A plain value: copying it is fine, using it after Finish is detected.
class CallHandle {
 public:
  CallHandle() = default;

 private:
  friend class RpcServer;
  CallHandle(uint32_t slot, uint32_t generation) : slot_(slot), generation_(generation) {}
  uint32_t slot_ = UINT32_MAX;
  uint32_t generation_ = 0;
};

// A call as its procedure handler sees it. Valid during the handler; for a
// deferred call, `args` and `results` stay reachable through the handle.
struct CallContext {
  const CallHeader& header;
  const AuthSys* auth_sys;  // the AUTH_SYS credential, or nullptr (AUTH_NONE)
  XdrDecoder& args;         // positioned on the arguments
  XdrEncoder& results;      // positioned after the accepted SUCCESS reply header
  uint32_t peer_ipv4;       // host order
  uint16_t peer_port;
  CallHandle handle;
  // Non-zero: passed to the reply-done hook once the transport no longer
  // reads the reply's pieces (registered result memory can be reused).
  uint64_t reply_cookie = 0;
};

using ProcHandler = std::function<ProcStatus(CallContext&)>;

struct ProgramOptions {
  // AUTH_NONE calls to any procedure but 0 (NULL) get AUTH_ERROR AUTH_TOOWEAK.
  bool require_auth_sys = false;
};

struct RpcServerOptions {
  // Inline bytes of one reply (header + results; DDP bodies are not counted).
  // Results that do not fit make the reply SYSTEM_ERR (counted).
  size_t reply_buffer_bytes = 16 * 1024;
};

// RFC 5531 errors answered without reaching a handler, and calls dropped.
#define IWARP_RPC_SERVER_DROPS(X)                                               \
  X(kUndecodable, "rpc_undecodable", "call header too short or malformed")       \
  X(kNotCall, "rpc_not_call", "msg_type is not CALL")                           \
  X(kHandler, "rpc_handler_drop", "the procedure handler dropped the call")     \
  X(kConnectionGone, "rpc_connection_gone", "the connection ended before the reply was sent")

enum class RpcDrop : uint8_t {
#define IWARP_RPC_X(e, n, d) e,
  IWARP_RPC_SERVER_DROPS(IWARP_RPC_X)
#undef IWARP_RPC_X
  kCount
};
std::string_view RpcDropName(RpcDrop d);

struct RpcServerCounters {
  uint64_t calls = 0;                                // calls the transports delivered
  std::array<uint64_t, kAcceptStatCount> accepted{};  // MSG_ACCEPTED replies by accept_stat
  uint64_t rpc_mismatch = 0;                         // MSG_DENIED RPC_MISMATCH replies
  std::array<uint64_t, 8> auth_error{};               // MSG_DENIED AUTH_ERROR replies by auth_stat
  std::array<uint64_t, static_cast<size_t>(RpcDrop::kCount)> drops{};
  uint64_t deferred = 0;         // calls a handler deferred
  uint64_t results_overflow = 0;  // results larger than the reply buffer (sent SYSTEM_ERR)

  uint64_t drop(RpcDrop d) const { return drops[static_cast<size_t>(d)]; }
  uint64_t accept(AcceptStat s) const { return accepted[static_cast<size_t>(s)]; }
};

class RpcServer final : public CallHandler {
 public:
  explicit RpcServer(const RpcServerOptions& options = {});
  ~RpcServer() override;
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Registers version `vers` of program `prog`: procs[i] serves procedure i
  // (an empty function: PROC_UNAVAIL). AlreadyExists if registered.
  absl::Status Register(uint32_t prog, uint32_t vers, std::vector<ProcHandler> procs,
                        const ProgramOptions& options = {});
  // Removes a version; NotFound if it was not registered.
  absl::Status Unregister(uint32_t prog, uint32_t vers);

  // Deferred calls. A handle whose call was finished, or whose connection
  // ended (OnDisconnect), is void: these return nullptr / false.
  XdrDecoder* Args(CallHandle h);
  XdrEncoder* Results(CallHandle h);
  // Answers a deferred call as the handler's return value would have
  // (kDeferred is not allowed). False if the handle is void or the
  // connection is gone.
  bool Finish(CallHandle h, ProcStatus status);
  // Sets the cookie of a deferred call (see CallContext::reply_cookie).
  void SetReplyCookie(CallHandle h, uint64_t cookie);
  size_t deferred_pending() const { return slots_in_use_; }

  // Called once per non-zero reply cookie when its reply's pieces are no
  // longer read (or the call was void).
  void set_reply_done_hook(std::function<void(uint64_t)> hook) { reply_done_hook_ = std::move(hook); }

  const RpcServerCounters& counters() const { return counters_; }

  // CallHandler
  void OnCall(ServerConnection& conn, CallToken token, const Message& call) override;
  void OnReplyDone(ServerConnection& conn, CallToken token) override;
  void OnDisconnect(ServerConnection& conn) override;

 private:
  struct Version {
    std::vector<ProcHandler> procs;
    ProgramOptions options;
  };
  struct Slot;

  // Sends a header-only reply; counts it.
  void SendError(ServerConnection& conn, CallToken token, const ReplyHeader& h);
  void CountReply(const ReplyHeader& h);
  void Drop(ServerConnection& conn, CallToken token, RpcDrop why);
  // Completes `slot` per `status` and releases it.
  bool Complete(Slot& slot, ProcStatus status);
  Slot* Lookup(CallHandle h);
  Slot& Acquire();
  void Release(Slot& slot);

  RpcServerOptions options_;
  // prog -> vers -> procedures
  std::map<uint32_t, std::map<uint32_t, Version>> programs_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<uint32_t> free_slots_;
  size_t slots_in_use_ = 0;
  std::map<std::pair<ServerConnection*, CallToken>, uint64_t> reply_cookies_;
  std::function<void(uint64_t)> reply_done_hook_;
  RpcServerCounters counters_;
};

}  // namespace iwarp::rpc

#endif  // IWARPD_RPCRDMA_RPC_SERVER_H_
