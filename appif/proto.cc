#include "appif/proto.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

namespace iwarp::appif {

int SendMessage(int sock, const Message& m, const int* fds, int nfds) {
  iovec iov{const_cast<Message*>(&m), MessageBytes(m)};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (nfds > 0) {
    if (nfds > kMaxFds) return EINVAL;
    mh.msg_control = ctl;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  for (;;) {
    const ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    if (n >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

long RecvMessage(int sock, Message* m, int* fds, int* nfds) {
  *nfds = 0;
  iovec iov{m, sizeof(Message)};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * (kMaxFds + 2))];
  mh.msg_control = ctl;
  mh.msg_controllen = sizeof(ctl);
  ssize_t n;
  do {
    n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  bool bad = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c != nullptr; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (*nfds < kMaxFds) {
        fds[(*nfds)++] = fd;
      } else {
        close(fd);
        bad = true;
      }
    }
  }
  if (bad) {
    for (int i = 0; i < *nfds; ++i) close(fds[i]);
    *nfds = 0;
    return -EBADMSG;
  }
  return n;
}

}  // namespace iwarp::appif
