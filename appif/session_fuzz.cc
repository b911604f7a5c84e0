// Fuzz target: a hostile application against the session server.
//
// Each input is a script of records [kind:1][len:2 little-endian][bytes],
// played by a raw client (no libiwarp) against a fresh server driven inline:
//   kind % 4 == 0  send `bytes` as one control datagram, attaching
//                  descriptors chosen by (kind >> 2) % 4: none, an eventfd,
//                  two eventfds, a sealed 64 KiB memfd;
//   kind % 4 == 1  write bytes[2..] into the last shared memory the server
//                  handed out (rings and their indices), at offset bytes[0..1];
//   kind % 4 == 2  run the QP engine (PollQueues);
//   kind % 4 == 3  hang up and open a new session.
// Checks, trapping on failure: the server never crashes or reads outside its
// mappings (ASan), and after every session is gone it holds no QP, CQ, MR,
// STag or mapping (cleanup is complete whatever the client did).
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "appif/proto.h"
#include "appif/session_server.h"

namespace {

using namespace iwarp::appif;  // NOLINT: fuzz driver

std::string SocketPath() {
  static const std::string path = "/tmp/iwarp-fuzz-" + std::to_string(getpid()) + ".sock";
  return path;
}

struct Client {
  int sock = -1;
  std::vector<std::pair<void*, size_t>> maps;

  bool Connect(SessionServer* server) {
    sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, SocketPath().c_str(), SocketPath().size());
    if (connect(sock, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return false;
    server->PollControl(0);
    // A proper open first, so that the other operations get past it.
    Message m;
    m.hdr.op = static_cast<uint32_t>(Op::kOpen);
    SetBody(&m, OpenReq{});
    const int doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    SendMessage(sock, m, &doorbell, 1);
    close(doorbell);
    server->PollControl(0);
    Drain();
    return true;
  }
  // Reads responses; maps shared memory the server hands out and closes
  // every descriptor (the wake-up pipes' read ends too: the server's writes
  // into them then fail with EPIPE and must not end the process).
  void Drain() {
    for (;;) {
      Message r;
      int fds[kMaxFds];
      int n = 0;
      const long len = RecvMessage(sock, &r, fds, &n);
      if (len <= 0) return;
      for (int i = 0; i < n; ++i) {
        const off_t size = lseek(fds[i], 0, SEEK_END);
        if (size > 0 && size <= (1 << 24)) {
          void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED,
                         fds[i], 0);
          if (p != MAP_FAILED) maps.emplace_back(p, static_cast<size_t>(size));
        }
        close(fds[i]);
      }
    }
  }
  void Close() {
    if (sock >= 0) close(sock);
    sock = -1;
    for (auto& [p, n] : maps) munmap(p, n);
    maps.clear();
  }
};

int MakeFd(unsigned which, int* fds) {
  switch (which) {
    case 1:
      fds[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      return 1;
    case 2:
      fds[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      fds[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      return 2;
    case 3: {
      auto m = Mapping::CreateMemfd("fuzz-mr", 1 << 16);
      if (!m.ok()) return 0;
      fds[0] = dup(m->fd());
      return 1;
    }
    default:
      return 0;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  SessionServerOptions o;
  o.socket_path = SocketPath();
  o.max_queue_depth = 64;
  o.stag_table_size = 64;
  o.max_registered_bytes_per_session = 1 << 20;
  auto server = SessionServer::Create(o);
  if (!server.ok()) abort();
  SessionServer* srv = server->get();
  Client c;
  if (!c.Connect(srv)) abort();
  size_t pos = 0;
  for (int steps = 0; pos + 3 <= size && steps < 64; ++steps) {
    const uint8_t kind = data[pos];
    size_t len = data[pos + 1] | (size_t{data[pos + 2]} << 8);
    pos += 3;
    if (len > size - pos) len = size - pos;
    const uint8_t* b = data + pos;
    pos += len;
    switch (kind % 4) {
      case 0: {
        Message m;
        const size_t n = len < sizeof(Message) ? len : sizeof(Message);
        std::memcpy(&m, b, n);
        int fds[2] = {-1, -1};
        const int nfds = MakeFd((kind >> 2) % 4, fds);
        // Raw send: the datagram length is what the input says.
        iovec iov{&m, n};
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 2)] = {};
        if (nfds > 0) {
          mh.msg_control = ctl;
          mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
          cmsghdr* cm = CMSG_FIRSTHDR(&mh);
          cm->cmsg_level = SOL_SOCKET;
          cm->cmsg_type = SCM_RIGHTS;
          cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
          std::memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
        }
        if (c.sock >= 0) sendmsg(c.sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        for (int i = 0; i < nfds; ++i) close(fds[i]);
        srv->PollControl(0);
        srv->PollQueues();
        c.Drain();
        break;
      }
      case 1:
        if (!c.maps.empty() && len >= 2) {
          auto& [p, n] = c.maps.back();
          const size_t off = (b[0] | (size_t{b[1]} << 8)) % n;
          const size_t cnt = len - 2 < n - off ? len - 2 : n - off;
          std::memcpy(static_cast<uint8_t*>(p) + off, b + 2, cnt);
        }
        break;
      case 2:
        for (int i = 0; i < 4; ++i) srv->PollQueues();
        break;
      case 3:
        c.Close();
        srv->PollControl(0);
        if (!c.Connect(srv)) abort();
        break;
    }
  }
  if (getenv("IWARP_FUZZ_DEBUG") != nullptr) {
    const SessionServerStats d = srv->stats();
    fprintf(stderr, "connections %lu completed %lu failed %lu flushed %lu corrupt %lu failed requests %lu\n",
            static_cast<unsigned long>(d.connections), static_cast<unsigned long>(d.wrs_completed),
            static_cast<unsigned long>(d.wrs_failed), static_cast<unsigned long>(d.wrs_flushed),
            static_cast<unsigned long>(d.ring_corruptions), static_cast<unsigned long>(d.requests_failed));
  }
  c.Close();
  for (int i = 0; i < 8 && srv->stats().sessions_active != 0; ++i) srv->PollControl(0);
  const SessionServerStats s = srv->stats();
  if (s.sessions_active != 0 || s.qps_active != 0 || s.cqs_active != 0 || s.mrs_active != 0 ||
      s.stags_in_use != 0 || s.mapped_bytes != 0 || s.registered_bytes != 0 || s.pds_active != 0) {
    abort();  // a session's resources outlived it
  }
  server->reset();
  return 0;
}
