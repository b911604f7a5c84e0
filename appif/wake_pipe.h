// Wake-up pipes: how the daemon wakes an application sleeping on its event
// ring or a CQ (session_server.cc makes them, the worker's WireEngine and the
// control thread ring them).
//
// The daemon makes the pipe and keeps the write end for itself alone (an
// open file description no application ever holds, non-blocking); the
// application gets the read end. So no application can make a daemon write
// block: with a descriptor the application also held (the eventfds it used
// to pass in) it could clear O_NONBLOCK and fill the counter, and the
// worker's or the control thread's next write would never return. A closed
// read end makes the write fail with EPIPE (SessionServer::Create ignores
// SIGPIPE).
#ifndef IWARPD_APPIF_WAKE_PIPE_H_
#define IWARPD_APPIF_WAKE_PIPE_H_

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>

#include "appif/shm.h"

namespace iwarp::appif {

struct WakePipe {
  UniqueFd daemon_end;  // write end
  UniqueFd app_end;     // read end
};

// Returns 0 or an errno.
inline int MakeWakePipe(WakePipe* out) {
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return errno;
  out->app_end.Reset(p[0]);
  out->daemon_end.Reset(p[1]);
  return 0;
}

// One wake-up: a byte into the daemon's end. A full pipe (EAGAIN) is still
// readable, so the wake-up is not lost.
inline void RingWakePipe(int daemon_end) {
  if (daemon_end < 0) return;
  const uint8_t one = 1;
  [[maybe_unused]] const ssize_t n = write(daemon_end, &one, sizeof(one));
}

}  // namespace iwarp::appif

#endif  // IWARPD_APPIF_WAKE_PIPE_H_
