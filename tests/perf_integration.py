#!/usr/bin/env python3
"""iwarp-perf through the real iwarpd.

Starts iwarpd (net_tap port in a private network namespace, --no-pci, the
harness of dataplane_integration.py) with its application socket in a
private directory, then for every test (write_bw, read_bw, send_bw,
write_lat, read_lat, send_lat) runs an iwarp-perf server and client, two
application processes, with --verify at a few sizes. Checks: both exit 0,
the client's table has one row per size whose figures parse and are
positive, and the daemon's /iwarpd/app counters moved by exactly the
payload the tests carried (their data plus the 64-byte control messages the
client reports) and completed the matching work requests. Also checks that a
client without a server fails with exit code 3 and a clear message.

  perf_integration.py --iwarpd PATH --iwarpctl PATH --perf PATH
Exit status: 0 pass, 1 fail, 77 skip (not root, no network namespaces).
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dataplane_integration as dpi  # noqa: E402
from appif_integration import AppDaemon  # noqa: E402

check = dpi.check
log = dpi.log
TestFailure = dpi.TestFailure

SIZES = [2, 4096, 65536, 1 << 20]
ITERS = 200
PORT = 18515


def app_counters(d):
    c = d.ctl_json("app")["/iwarpd/app"]
    if c.get("state") != "running":
        raise TestFailure("/iwarpd/app does not report a running interface: %s" % c)
    return c


def payload_per_iteration(test, size):
    # Bytes the daemon copies per iteration: latency ping-pongs move the
    # message both ways (write_lat, send_lat); read_lat and the bandwidth
    # tests once.
    return 2 * size if test in ("write_lat", "send_lat") else size


def run_pair(args, d, test, size, extra=()):
    sock = d.socket_path()
    common = ["-S", sock, "-p", str(PORT), "-s", str(size), "-n", str(ITERS), "--verify"]
    common += list(extra)
    server = subprocess.Popen([args.perf, test] + common, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        first = server.stdout.readline()
        check("waiting for a client" in first, "%s server listens: %r" % (test, first))
        waiting = app_counters(d)
        check(waiting["sessions_active"] == 1 and waiting["qps_active"] == 0,
              "%s: the waiting server is one session without QPs in /iwarpd/app" % test)
        client = subprocess.run([args.perf, test] + common + ["127.0.0.1"],
                                capture_output=True, text=True, timeout=120)
        srv_out = first + server.communicate(timeout=30)[0]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    both = "\nclient:\n%s%s\nserver:\n%s" % (client.stdout, client.stderr, srv_out)
    ok = client.returncode == 0 and server.returncode == 0
    check(ok, "%s -s %d: client and server exit 0 (rc %d, %d)" %
          (test, size, client.returncode, server.returncode) + ("" if ok else both))
    ok = "runtime error" not in client.stderr + srv_out
    check(ok, "%s -s %d: no sanitizer reports in the applications" % (test, size) +
          ("" if ok else both))
    ok = "verified, errors 0" in srv_out
    check(ok, "%s -s %d: the server verified the data" % (test, size) + ("" if ok else both))
    return client.stdout


def parse_table(test, out, size):
    rows = [l.split() for l in out.splitlines() if re.match(r"^\s*\d+\s+\d+\s+[\d.]+", l)]
    check(len(rows) == 1, "%s: one table row" % test + ("" if len(rows) == 1 else "\n" + out))
    row = rows[0]
    check(int(row[0]) == size and int(row[1]) == ITERS, "%s: row names size and iterations %s"
          % (test, row))
    figures = [float(x) for x in row[2:]]
    if test.endswith("_bw"):
        check(len(figures) == 3 and all(f > 0 for f in figures),
              "%s: BW, message rate and memcpy baseline positive %s" % (test, figures))
        # The rate and the bandwidth agree: MiB/s = Mpps * size / 2^20.
        mib = figures[1] * 1e6 * size / 2**20
        check(abs(mib - figures[0]) <= 0.02 * figures[0] + 0.01,
              "%s: BW %.2f MiB/s matches rate %.6f Mpps" % (test, figures[0], figures[1]))
    else:
        check(len(figures) == 7 and all(f > 0 for f in figures),
              "%s: latency figures positive %s" % (test, figures))
        t_min, t_max, t_typ, t_avg, _, p99, p999 = figures
        check(t_min <= t_typ <= t_max and t_min <= t_avg <= t_max and p99 <= p999 <= t_max,
              "%s: t_min <= median, average <= t_max, 99%% <= 99.9%% <= t_max %s" % (test, figures))
    m = re.search(r"moved by the daemon: (\d+) data bytes, (\d+) control bytes, (\d+) work requests",
                  out)
    check(m is not None, "%s: the client reports what it moved" % test + ("" if m else "\n" + out))
    return [int(x) for x in m.groups()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd")
    p.add_argument("--iwarpctl")
    p.add_argument("--perf")
    args = p.parse_args()
    dpi.skip_unless_possible()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    d = AppDaemon(args, "p")
    try:
        d.start()
        sock = d.socket_path()
        before = app_counters(d)
        check(before["bytes_moved"] == 0 and before["sessions_active"] == 0,
              "a fresh daemon has moved nothing: %s" % before)

        # No server: exit code 3 and a message that says why.
        r = subprocess.run([args.perf, "write_bw", "-S", sock, "-p", str(PORT + 1), "127.0.0.1"],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 3 and "connect" in r.stderr,
              "no server: exit 3 with a clear error (rc %d, %r)" % (r.returncode, r.stderr))
        r = subprocess.run([args.perf, "write_bw", "-S", "/nonexistent/x.sock", "127.0.0.1"],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 3 and "session" in r.stderr,
              "no daemon: exit 3 (rc %d, %r)" % (r.returncode, r.stderr))
        r = subprocess.run([args.perf, "bogus_bw"], capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and "unknown test" in r.stderr, "unknown test: exit 2")

        # Client and server disagree on the test: the server rejects the
        # connection, both exit 3 and say why.
        server = subprocess.Popen([args.perf, "write_bw", "-S", sock, "-p", str(PORT)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            server.stdout.readline()
            r = subprocess.run([args.perf, "read_bw", "-S", sock, "-p", str(PORT), "127.0.0.1"],
                               capture_output=True, text=True, timeout=30)
            srv_out = server.communicate(timeout=30)[0]
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
        check(r.returncode == 3 and server.returncode == 3 and "rejected" in srv_out,
              "mismatched tests: both exit 3, the server says rejected (rc %d/%d, %r, %r)" %
              (r.returncode, server.returncode, r.stderr, srv_out))

        # Every test at every size; then the bandwidth tests with completion
        # moderation (-Q 7, -q 16: one completion per 7 work requests and for
        # the last, which 7 does not divide): the same bytes, verified.
        plan = [(t, s, ()) for t in ["write_bw", "read_bw", "send_bw", "write_lat", "read_lat",
                                     "send_lat"] for s in SIZES]
        plan += [(t, 4096, ("-Q", "7", "-q", "16")) for t in ["write_bw", "read_bw", "send_bw"]]
        for test, size, extra in plan:
            c0 = app_counters(d)
            out = run_pair(args, d, test, size, extra)
            data, ctrl, wrs = parse_table(test, out, size)
            if extra:
                check("CQ moderation   : a completion every 7 work requests" in out,
                      "%s -Q 7: the client says it asks for every 7th completion" % test)
            check(data == ITERS * payload_per_iteration(test, size),
                  "%s -s %d: %d data bytes reported = %d iterations x %d" %
                  (test, size, data, ITERS, payload_per_iteration(test, size)))
            c1 = app_counters(d)
            moved = c1["bytes_moved"] - c0["bytes_moved"]
            check(moved == data + ctrl,
                  "%s -s %d: daemon bytes_moved +%d = %d data + %d control" %
                  (test, size, moved, data, ctrl))
            done = c1["wrs_completed"] - c0["wrs_completed"]
            check(done == wrs, "%s -s %d: daemon wrs_completed +%d = %d reported" %
                  (test, size, done, wrs))
            check(c1["wrs_failed"] == c0["wrs_failed"], "%s: no failed work request" % test)
            log("%s -s %d: %s" % (test, size, " ".join(
                l for l in out.splitlines() if re.match(r"^\s*\d+\s+\d+", l))))
        # The daemon notices closed sessions asynchronously: poll a little.
        deadline = time.time() + 5
        while True:
            after = app_counters(d)
            if after["sessions_active"] == 0 or time.time() > deadline:
                break
            time.sleep(0.1)
        check(after["sessions_active"] == 0 and after["qps_active"] == 0 and
              after["registered_bytes"] == 0,
              "every session, QP and registration released at the end: %s" % after)
        text = d.ctl("app").stdout
        check("application interface: running" in text and
              ("bytes moved    %d\n" % after["bytes_moved"]) in text and
              ("completed %d " % after["wrs_completed"]) in text,
              "iwarpctl app shows the same counters as --json app:\n" + text)
        check(not d.sanitizer_reports(), "no sanitizer reports %s" % d.sanitizer_reports())
    except TestFailure as e:
        log("FAIL: %s" % e)
        log(d.log())
        return 1
    finally:
        d.cleanup()
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
