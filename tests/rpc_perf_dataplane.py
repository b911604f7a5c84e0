#!/usr/bin/env python3
"""iwarp-rpc-perf on two real iwarpd daemons over net_memif, and over kernel TCP.

The RPC test program (NULL, ECHO) over RPC-over-RDMA v1: the server on
daemon A (198.18.1.1), the client on daemon B, both daemons in namespaces
the test creates, joined by net_memif (hugepages needed, else SKIP). Over
iWARP (MPA/TCP) and over RDMA over SCTP (when this iwarpd hosts SCTP; else
that part is skipped with a printed reason): NULL calls and echoes of 0, 1,
4096, 65536 and 1 MiB bytes, with the chunk kind each must use checked in
the client's printed counters (inline both ways; Read list for arguments;
Write list for results; Reply chunk when no Write chunk is offered). Every
echoed byte is checked by the tool (exit 0 and "errors 0"). The server's
counters are read with SIGUSR1 mid-run and at its exit (SIGTERM) and must add
up to the calls the clients made. Then the same program over the rpc_tcp.h
transport on kernel sockets on 127.0.0.1. Also: a client without a server
exits 3 with a message.

  rpc_perf_dataplane.py --iwarpd PATH --iwarpctl PATH --rpc-perf PATH

Exit status: 0 pass, 1 fail, 77 skip (not root, no hugepages, no netns).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appif_wire_sctp_dataplane as aws  # noqa: E402  (SCTP-enabled app daemons)
import iwarp_dataplane as iwd  # noqa: E402  (memif daemon harness)

from dataplane_integration import TestFailure, check, log  # noqa: E402

PORT = 20049
MIB = 1 << 20

# (label, client arguments, size, expected client counter deltas per call:
#  dict of counter -> per-call count, or an exact total when given as ("=", n)).
CASES = [
    ("null", ["--test", "null", "--count", "2000", "--depth", "4"], 0,
     {"read_chunks": 0, "write_chunks": 0, "reply_chunks": 0}),
    # 100 bytes, no Write chunk, Read chunks only from 1 MiB: inline both ways.
    ("echo 100 inline", ["--test", "echo", "--size", "100", "--count", "500", "--reply-chunk",
                         "--read-threshold", str(MIB)], 100,
     {"read_chunks": 0, "write_chunks": 0, "reply_chunks": 0}),
    ("echo 0", ["--test", "echo", "--size", "0", "--count", "300"], 0,
     {"read_chunks": 0, "write_chunks": 1, "reply_chunks": 0}),
    ("echo 1", ["--test", "echo", "--size", "1", "--count", "300"], 1,
     {"read_chunks": 0, "write_chunks": 1, "reply_chunks": 0}),
    ("echo 4096", ["--test", "echo", "--size", "4096", "--count", "300", "--depth", "4"], 4096,
     {"read_chunks": 1, "write_chunks": 1, "reply_chunks": 0}),
    ("echo 65536 reply chunk", ["--test", "echo", "--size", "65536", "--count", "200",
                                "--depth", "2", "--reply-chunk"], 65536,
     {"read_chunks": 1, "write_chunks": 0, "reply_chunks": 1}),
    ("echo 65536", ["--test", "echo", "--size", "65536", "--count", "200", "--depth", "2"], 65536,
     {"read_chunks": 1, "write_chunks": 1, "reply_chunks": 0}),
    ("echo 1MiB", ["--test", "echo", "--size", str(MIB), "--count", "40", "--depth", "2"], MIB,
     {"read_chunks": 1, "write_chunks": 1, "reply_chunks": 0}),
    ("echo 1MiB reply chunk", ["--test", "echo", "--size", str(MIB), "--count", "20",
                               "--reply-chunk"], MIB,
     {"read_chunks": 1, "write_chunks": 0, "reply_chunks": 1}),
]


def counters(text, title):
    """The `name value` lines of the counter block that starts with `title`."""
    out = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(title):
            for l in lines[i + 1:]:
                m = re.match(r"^  (\S+)\s+(\d+)$", l)
                if not m:
                    break
                out[m.group(1)] = int(m.group(2))
    if not out:
        raise TestFailure("no '%s' counter block in:\n%s" % (title, text))
    return out


def count_of(args):
    return int(args[args.index("--count") + 1])


class Server:
    """An iwarp-rpc-perf server; its output goes to a file read on demand."""

    def __init__(self, exe, extra, tmp, name):
        self.path = os.path.join(tmp, name + ".out")
        self.f = open(self.path, "w")
        self.proc = subprocess.Popen([exe, "--server"] + extra, stdout=self.f,
                                     stderr=subprocess.STDOUT)

    def text(self):
        with open(self.path) as f:
            return f.read()

    def wait_for(self, needle, timeout=15, after=0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            t = self.text()
            if needle in t[after:]:
                return t
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise TestFailure("no '%s' from the server %s:\n%s" % (needle, self.proc.args,
                                                             self.text()))

    def dump(self):
        """SIGUSR1: the counters now (the block it prints, whatever
        --stats-interval blocks come around it)."""
        before = len(self.text())
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.time() + 15
        while time.time() < deadline:
            t = self.text()[before:]
            i = t.find("--- counters (SIGUSR1) ---")
            if i >= 0 and "--- end ---" in t[i:]:
                return t[i:t.index("--- end ---", i)]
            time.sleep(0.05)
        raise TestFailure("SIGUSR1 printed no counters:\n" + self.text())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise TestFailure("the server did not stop on SIGTERM:\n" + self.text())
        t = self.text()
        check(rc == 0, "server exit 0 (rc %d):\n%s" % (rc, t))
        check("--- counters (exit) ---" in t, "the server prints its counters at exit:\n" + t)
        check("runtime error" not in t and "Sanitizer" not in t,
              "no sanitizer reports from the server:\n" + t)
        return t[t.index("--- counters (exit) ---"):]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.f.close()


def run_client(args, extra, what):
    cmd = [args.rpc_perf] + extra
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120)
    except subprocess.TimeoutExpired as e:
        raise TestFailure("%s: client did not finish in 120 s:\n%s" % (what, e.output))
    sys.stdout.write(r.stdout)
    check(r.returncode == 0, "%s: client exit 0 (rc %d):\n%s" % (what, r.returncode, r.stdout))
    check("runtime error" not in r.stdout, "%s: no sanitizer reports" % what)
    n = count_of(extra)
    check(("verified: %d calls, errors 0" % n) in r.stdout,
          "%s: every one of %d calls verified:\n%s" % (what, n, r.stdout))
    rows = [l.split() for l in r.stdout.splitlines() if re.match(r"^ (null|echo)\s+\d+", l)]
    check(len(rows) == 1, "%s: one result row" % what)
    row = rows[0]
    rate, mib, p50, p99, pmax = [float(x) for x in row[4:9]]
    check(int(row[3]) == n and rate > 0 and 0 < p50 <= p99 <= pmax,
          "%s: %d calls, calls/s > 0, 0 < p50 <= p99 <= max: %s" % (what, n, row))
    return r.stdout


def run_rdma(args, a, b, transport, port, tmp):
    """Every case over `transport` (iwarp or sctp); returns the calls made."""
    srv = Server(args.rpc_perf, ["-S", a.socket(), "--transport", transport, "-p", str(port)],
                 tmp, "srv_" + transport)
    calls = 0
    totals = {"read_chunks": 0, "write_chunks": 0, "reply_chunks": 0, "rdma_read_bytes": 0,
              "rdma_written_bytes": 0}
    try:
        srv.wait_for("waiting for clients")
        for label, extra, size, want in CASES:
            what = "%s over %s" % (label, transport)
            log(what)
            out = run_client(args, ["-S", b.socket(), "--transport", transport, "--client",
                                    iwd.A_IP, "-p", str(port)] + extra, what)
            want_name = {"iwarp": "iWARP (MPA/TCP)", "sctp": "RDMA over SCTP"}[transport]
            check(want_name in out, "%s: the client names its transport" % what)
            check("inline threshold send 4096 / receive 4096" in out,
                  "%s: RFC 8797 private data gave 4096 both ways" % what)
            n = count_of(extra)
            c = counters(out, "client transport counters")
            check(c["calls"] == n and c["replies"] == n and c["retransmits"] == 0,
                  "%s: client counters calls = replies = %d, no retransmits: %s" % (what, n, c))
            for k, per in want.items():
                check(c[k] == per * n, "%s: client %s = %d x %d (got %d)" % (what, k, per, n, c[k]))
            moved_read = n * size if want["read_chunks"] else 0
            check(c["rdma_read_bytes"] == moved_read,
                  "%s: %d bytes offered by Read chunk (got %d)" % (what, moved_read,
                                                                   c["rdma_read_bytes"]))
            if want["write_chunks"] or want["reply_chunks"]:
                check(c["rdma_written_bytes"] >= n * size,
                      "%s: at least %d bytes placed by RDMA Write (got %d)" %
                      (what, n * size, c["rdma_written_bytes"]))
            else:
                check(c["rdma_written_bytes"] == 0, "%s: nothing placed by RDMA Write" % what)
            check(c["bounce_copy_bytes"] == 0,
                  "%s: the client copied nothing (its buffers are registered): %d" %
                  (what, c["bounce_copy_bytes"]))
            calls += n
            for k in totals:
                totals[k] += c[k]
            if label == "echo 1":
                s = counters(srv.dump(), "server transport counters")
                check(s["calls"] == calls and s["replies"] == calls,
                      "SIGUSR1 mid-run over %s: server calls = replies = %d so far: %s" %
                      (transport, calls, s))
        final = srv.stop()
        s = counters(final, "server transport counters")
        check(s["calls"] == calls and s["replies"] == calls,
              "%s: server calls = replies = %d (the clients' calls): %s" % (transport, calls, s))
        for k in ("read_chunks", "rdma_read_bytes"):
            check(s[k] == totals[k], "%s: server %s %d = the clients' %d" %
                  (transport, k, s[k], totals[k]))
        check(s["bounce_copy_bytes"] == 0,
              "%s: the server echoed every argument from where it arrived, no copy: %d bytes "
              "copied" % (transport, s["bounce_copy_bytes"]))
        check(s["write_chunks"] > 0 and s["reply_chunks"] > 0 and s["inline_replies"] > 0,
              "%s: the server used Write chunks, Reply chunks and inline replies: %s" %
              (transport, s))
        check(s["connections"] == len(CASES) and s["connections_now"] == 0,
              "%s: one connection per client, none left: %s" % (transport, s))
        errs = {k: v for k, v in s.items() if k.startswith("error.") or k.startswith("header_")
                or k.startswith("err_")}
        check(not any(v for k, v in errs.items() if k != "error.rpcrdma_connection_lost"),
              "%s: no transport errors at the server: %s" % (transport, errs))
        r = counters(final, "server RPC counters")
        check(r["calls"] == calls and r["success"] == calls,
              "%s: the dispatcher answered SUCCESS to %d calls: %s" % (transport, calls, r))
    finally:
        srv.kill()
    return calls


def rpcinfo_probe(port):
    """rpcinfo (package rpcbind), a client we did not write, calls NULL on the
    shipped server: version 1 ready, version 2 refused by the server
    (PROG_MISMATCH). Returns the calls it made (0 when rpcinfo is absent).
    Debian 12's rpcinfo contacts rpcbind on port 111 even with -n, so the
    server's RFC 5665 universal address is given (-a h1.h2.h3.h4.p1.p2)."""
    exe = next((p for p in ("/usr/sbin/rpcinfo", "/sbin/rpcinfo", "/usr/bin/rpcinfo")
                if os.access(p, os.X_OK)), None)
    if exe is None:
        log("SKIP (part): rpcinfo not installed (package rpcbind); no independent client probe")
        return 0
    addr = "127.0.0.1.%d.%d" % (port >> 8, port & 0xFF)
    prog = str(0x20494950)
    r = subprocess.run([exe, "-a", addr, "-T", "tcp", prog, "1"], capture_output=True,
                       text=True, timeout=30)
    out = r.stdout + r.stderr
    check(r.returncode == 0 and ("program %s version 1 ready and waiting" % prog) in out,
          "rpcinfo: version 1 of the test program ready on iwarp-rpc-perf (rc %d): %s" %
          (r.returncode, out))
    r = subprocess.run([exe, "-a", addr, "-T", "tcp", prog, "2"], capture_output=True,
                       text=True, timeout=30)
    out = r.stdout + r.stderr
    check(r.returncode != 0 and "version 2 is not available" in out,
          "rpcinfo: version 2 is not available (rc %d): %s" % (r.returncode, out))
    return 2


def run_tcp(args, tmp):
    srv = Server(args.rpc_perf, ["--transport", "tcp", "--bind", "127.0.0.1", "-p", "0",
                                 "--stats-interval", "1"], tmp, "srv_tcp")
    calls = 0
    try:
        t = srv.wait_for("waiting for clients")
        port = int(re.search(r"port (\d+),", t).group(1))
        check(port > 0, "the TCP server names its ephemeral port")
        base = rpcinfo_probe(port)
        b = counters(srv.dump(), "server transport counters (TcpServer)")
        base_records, base_accepted = b["records"], b["accepted"]
        check(base_records == base, "the server saw rpcinfo's %d calls (%d)" % (base, base_records))
        for label, extra, size, _ in CASES:
            what = "%s over kernel TCP" % label
            log(what)
            out = run_client(args, ["--transport", "tcp", "--client", "127.0.0.1", "-p",
                                    str(port)] + extra, what)
            n = count_of(extra)
            c = counters(out, "client transport counters (TcpClient)")
            check(c["calls"] == n and c["replies"] == n and c["failed"] == 0,
                  "%s: TcpClient calls = replies = %d: %s" % (what, n, c))
            calls += n
        t = srv.wait_for("--- counters (interval) ---", timeout=5)
        s = counters(t[t.rindex("--- counters (interval) ---"):], "server transport counters")
        check(s["accepted"] > 0, "--stats-interval 1: the server printed its counters: %s" % s)
        final = srv.stop()
        s = counters(final, "server transport counters (TcpServer)")
        check(s["records"] == calls + base_records and s["replies"] == calls + base_records and
              s["accepted"] == len(CASES) + base_accepted,
              "tcp: server records = replies = %d, %d connections: %s" %
              (calls + base_records, len(CASES) + base_accepted, s))
        echoed = sum(count_of(e) * sz for _, e, sz, _ in CASES)
        check(s["bytes_in"] > echoed and s["bytes_out"] > echoed,
              "tcp: more than the %d echoed bytes each way: %s" % (echoed, s))
    finally:
        srv.kill()
    return calls


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    p.add_argument("--rpc-perf", required=True)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    tmp = tempfile.mkdtemp(prefix="iwarp_rpcperf_")
    t0 = time.time()
    try:
        # Kernel TCP first: needs neither root nor hugepages.
        run_tcp(args, tmp)
        iwd.skip_unless_possible(2)
        memif = os.path.join(tmp, "memif.sock")
        a = aws.SctpAppDaemon(args, "ra", iwd.A_IP, "server", memif, "")
        b = aws.SctpAppDaemon(args, "rb", iwd.B_IP, "client", memif, "")
        sctp = aws.sctp_configurable(args, a)
        if not sctp:
            a.sctp_extra = b.sctp_extra = ""
        try:
            a.start()
            b.start()
            # No server on that port: exit 3, and the reason.
            r = subprocess.run([args.rpc_perf, "-S", b.socket(), "--client", iwd.A_IP, "-p",
                                str(PORT + 7), "--count", "1"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=60)
            check(r.returncode == 3 and "connect" in r.stdout,
                  "no server: exit 3 naming the connect (rc %d): %s" % (r.returncode, r.stdout))
            run_rdma(args, a, b, "iwarp", PORT, tmp)
            if sctp:
                run_rdma(args, a, b, "sctp", PORT + 1, tmp)
            else:
                log("SKIP (part): no RDMA over SCTP in this iwarpd; the SCTP cases did not run")
            b.stop()
            a.stop()
        finally:
            b.cleanup()
            a.cleanup()
    except TestFailure as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log("PASS (%.1f s)" % (time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
