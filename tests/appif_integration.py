#!/usr/bin/env python3
"""The application interface inside the real iwarpd.

Starts iwarpd (net_tap port in a private network namespace, --no-pci, the
same harness as dataplane_integration.py) with its app_interface socket in a
private directory, then runs two application processes (iwarp_test_app,
linking libiwarp only) against it: RDMA Write / Read / Send / Send with
Invalidate over a loopback QP, checked byte for byte by the applications.
Then an application holding a session sees the daemon's shutdown as
IWARP_EVENT_DEVICE_FATAL instead of hanging.

  appif_integration.py --iwarpd PATH --iwarpctl PATH --app PATH
Exit status: 0 pass, 1 fail, 77 skip (not root, no network namespaces).
"""

import argparse
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dataplane_integration as dpi  # noqa: E402

check = dpi.check
log = dpi.log
TestFailure = dpi.TestFailure


class AppDaemon(dpi.Daemon):
    def config_text(self):
        return super().config_text() + """app_interface:
  socket_dir: %s
  socket_mode: "0600"
  max_sessions: 8
""" % self.dir

    def socket_path(self):
        return os.path.join(self.dir, self.prefix + ".sock")


class App:
    def __init__(self, path, *args):
        self.proc = subprocess.Popen([path] + [str(a) for a in args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines = []

    def line(self, timeout=15):
        # The apps print a handful of short lines; readline with a watchdog.
        import select
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            return ""
        l = self.proc.stdout.readline().rstrip("\n")
        self.lines.append(l)
        return l

    def wait(self, timeout=15):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        rest = self.proc.stdout.read()
        if rest:
            self.lines += rest.splitlines()
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd")
    p.add_argument("--iwarpctl")
    p.add_argument("--app")
    args = p.parse_args()
    dpi.skip_unless_possible()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    d = AppDaemon(args, "a")
    apps = []
    try:
        d.start()
        sock = d.socket_path()
        check(os.path.exists(sock), "iwarpd serves the app socket " + sock)
        check(oct(os.stat(sock).st_mode & 0o777) == "0o600", "socket mode 0600 from the config")
        check("app interface listening on" in d.log(), "start-up log names the socket")

        target = App(args.app, "target", sock, 4791)
        apps.append(target)
        ready = target.line().split()
        check(len(ready) == 4 and ready[0] == "READY", "target registered and listens: %s"
              % " ".join(ready))
        init = App(args.app, "initiator", sock, 4791, ready[1], ready[2], ready[3])
        apps.append(init)
        check(init.line() == "INITIATOR_OK", "initiator: Write/Read/Sends completed and checked")
        check(target.line() == "TARGET_OK", "target: Sends and the Write checked byte for byte")
        check(init.wait() == 0 and target.wait() == 0,
              "both applications exit 0 (%s | %s)" % (init.lines, target.lines))
        check("session" in d.log() and "pid" in d.log(),
              "sessions logged with their peer credentials")

        holder = App(args.app, "waitfatal", sock)
        apps.append(holder)
        check(holder.line() == "SESSION_OPEN", "an application holds a session")
        rc, secs = d.stop(signal.SIGTERM)
        check(rc == 0, "iwarpd stops cleanly with a session open (rc %s, %.2f s)" % (rc, secs))
        check(holder.line() == "DEVICE_FATAL", "the application sees DEVICE_FATAL, no hang")
        check(holder.wait() == 0, "and exits 0 (%s)" % holder.lines)
        check(not os.path.exists(sock), "socket removed at shutdown")
        check(not d.sanitizer_reports(), "no sanitizer reports %s" % d.sanitizer_reports())
    except TestFailure as e:
        log("FAIL: %s" % e)
        log(d.log())
        return 1
    finally:
        for a in apps:
            a.kill()
        d.cleanup()
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
