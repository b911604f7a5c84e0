// Registration of a TCP RPC service with the local rpcbind (RFC 1833), via
// libtirpc's rpcb_set / rpcb_unset. A host without a running rpcbind is not
// an error: the call returns kNotRunning at once (after a logged note), and
// clients then need the port some other way (rpcinfo -n, a config file).
#ifndef IWARPD_RPCRDMA_RPC_RPCBIND_H_
#define IWARPD_RPCRDMA_RPC_RPCBIND_H_

#include <cstdint>
#include <string_view>

#include "common/enum_names.h"

namespace iwarp::rpc {

// X(enumerator, "name")
#define IWARP_RPCBIND_RESULTS(X)                                                           \
  X(kDone, "done")  /* rpcbind accepted the (un)registration */                            \
  X(kNotRunning, "not_running")  /* no rpcbind on this host (noted on stderr) */           \
  X(kRefused, "refused")  /* rpcbind answered no (e.g. another owner holds the mapping) */
enum class RpcbindResult : uint8_t { IWARP_RPCBIND_RESULTS(IWARP_ENUMERATOR) };
std::string_view RpcbindResultName(RpcbindResult r);

// True if a local rpcbind answers: its AF_LOCAL socket (/run/rpcbind.sock)
// accepts a connection, or 127.0.0.1:111 does within `timeout_ms`.
bool RpcbindRunning(int timeout_ms = 200);

// Maps (prog, vers, netid "tcp") to `port` on the host's addresses.
RpcbindResult RpcbindRegisterTcp(uint32_t prog, uint32_t vers, uint16_t port);
// Removes the (prog, vers, "tcp") mapping.
RpcbindResult RpcbindUnregisterTcp(uint32_t prog, uint32_t vers);

}  // namespace iwarp::rpc

#endif  // IWARPD_RPCRDMA_RPC_RPCBIND_H_
