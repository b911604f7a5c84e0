#include "rpcrdma/rpc_rpcbind.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rpc/rpc.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace iwarp::rpc {

std::string_view RpcbindResultName(RpcbindResult r) {
  using Enum = RpcbindResult;
  switch (r) { IWARP_RPCBIND_RESULTS(IWARP_ENUM_NAME_CASE) }
  return "unknown";
}

namespace {

bool ConnectWithin(int family, const sockaddr* addr, socklen_t len, int timeout_ms) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = ::connect(fd, addr, len) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, timeout_ms) == 1) {
      int err = 0;
      socklen_t elen = sizeof(err);
      ok = ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == 0;
    }
  }
  ::close(fd);
  return ok;
}

}  // namespace

bool RpcbindRunning(int timeout_ms) {
  sockaddr_un un{};
  un.sun_family = AF_LOCAL;
  std::strncpy(un.sun_path, "/run/rpcbind.sock", sizeof(un.sun_path) - 1);
  if (ConnectWithin(AF_LOCAL, reinterpret_cast<sockaddr*>(&un), sizeof(un), timeout_ms)) return true;
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  in.sin_port = htons(111);
  return ConnectWithin(AF_INET, reinterpret_cast<sockaddr*>(&in), sizeof(in), timeout_ms);
}

namespace {

// libtirpc would otherwise try for tens of seconds before giving up.
bool NoteIfAbsent(const char* what, uint32_t prog, uint32_t vers) {
  if (RpcbindRunning()) return false;
  std::fprintf(stderr, "rpc: no rpcbind on this host; %s of program %u version %u skipped\n", what,
               prog, vers);
  return true;
}

}  // namespace

RpcbindResult RpcbindRegisterTcp(uint32_t prog, uint32_t vers, uint16_t port) {
  if (NoteIfAbsent("registration", prog, vers)) return RpcbindResult::kNotRunning;
  netconfig* nconf = getnetconfigent("tcp");
  if (nconf == nullptr) return RpcbindResult::kRefused;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  netbuf nb{};
  nb.maxlen = nb.len = sizeof(addr);
  nb.buf = &addr;
  const bool ok = rpcb_set(prog, vers, nconf, &nb);
  freenetconfigent(nconf);
  return ok ? RpcbindResult::kDone : RpcbindResult::kRefused;
}

RpcbindResult RpcbindUnregisterTcp(uint32_t prog, uint32_t vers) {
  if (NoteIfAbsent("unregistration", prog, vers)) return RpcbindResult::kNotRunning;
  netconfig* nconf = getnetconfigent("tcp");
  if (nconf == nullptr) return RpcbindResult::kRefused;
  const bool ok = rpcb_unset(prog, vers, nconf);
  freenetconfigent(nconf);
  return ok ? RpcbindResult::kDone : RpcbindResult::kRefused;
}

}  // namespace iwarp::rpc
