#!/usr/bin/env python3
"""TCP interoperability tests: iwarpd's tcp_lite against the Linux kernel.

iwarpd runs with a net_tap port inside a private network namespace the test
creates (198.18.0.1 for iwarpd, 198.18.0.2 for the kernel side of the TAP);
kernel sockets in that namespace talk to iwarpd's echo, sink and source
services (config `services:`). Data is checked end to end with SHA-256
(python hashlib on the kernel side, the sink's and source's own hashes read
back with `iwarpctl --json services`); connection states are checked against
what the kernel reports (`ss -tan` in the namespace) and what iwarpd reports
(`iwarpctl --json connections`). The impairment cases configure iwarpd's own
impairment stage (ports[].impairment), since the kernel here has no netem.

  tcp_interop.py CASE --iwarpd PATH --iwarpctl PATH --source-root DIR
  CASE: echo | sink | source | close | concurrent | idle_block_steer | impair_loss1 | impair_loss5 |
        impair_reorder | impair_delay | impair_duplicate | impair_corrupt | bulk_1g

Exit status: 0 pass, 1 fail, 77 skip (not root, no network namespaces).
"""

import argparse
import hashlib
import json
import signal
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dataplane_integration as dpi  # noqa: E402  (the shared daemon harness)

from dataplane_integration import TestFailure, check, log  # noqa: E402

OUR_IP = dpi.OUR_IP
PEER_IP = dpi.PEER_IP
ECHO_PORT = 7
SINK_PORT = 9
SOURCE_PORT = 5001  # the kernel listener the source service connects to
PATTERN_PERIOD = 251


def pattern(offset, n):
    """The source service's stream: byte i is i mod 251."""
    base = bytes(range(PATTERN_PERIOD))
    start = offset % PATTERN_PERIOD
    reps = (start + n) // PATTERN_PERIOD + 1
    return (base * reps)[start:start + n]


def pattern_sha256(n):
    h = hashlib.sha256()
    block = bytes(range(PATTERN_PERIOD)) * 4096  # a multiple of the period
    left = n
    while left:
        k = min(left, len(block))
        h.update(block[:k])
        left -= k
    return h.hexdigest()


class TcpDaemon(dpi.Daemon):
    """The integration harness's daemon with tcp:, services: and impairment."""

    def __init__(self, args, name, tcp="", services="", impairment="", source_bytes=0,
                 source_connections=1, memory_mb=512):
        super().__init__(args, name, memory_mb=memory_mb)
        self.tcp = tcp
        self.services = services
        self.impairment = impairment
        self.source_bytes = source_bytes
        self.source_connections = source_connections

    def config_text(self):
        text = super().config_text()
        text = text.replace("  mbufs: 4095\n", "  mbufs: 16383\n")
        if self.impairment:
            text = text.replace('    vdev: "net_tap0,iface=%s"\n' % dpi.IFACE,
                                '    vdev: "net_tap0,iface=%s"\n    impairment:\n%s' %
                                (dpi.IFACE, self.impairment))
        text += "tcp:\n" + (self.tcp or "  max_connections: 64\n  syn_backlog: 32\n")
        text += "services:\n"
        text += "  - {name: echo, type: echo, port: %d}\n" % ECHO_PORT
        text += "  - {name: sink, type: sink, port: %d, sha256: true}\n" % SINK_PORT
        if self.source_bytes:
            text += ("  - {name: push, type: source, remote: %s, remote_port: %d, bytes: %d,"
                     " connections: %d, start_delay_ms: 3000, sha256: true}\n" %
                     (PEER_IP, SOURCE_PORT, self.source_bytes, self.source_connections))
        return text

    def py(self, code, *argv, timeout=120):
        """Runs python3 code inside the namespace; returns its parsed JSON output."""
        r = self.ns_run("python3", "-c", code, *[str(a) for a in argv], timeout=timeout,
                        check_rc=False)
        if r.returncode != 0:
            raise TestFailure("kernel-side helper failed (%d): %s%s" %
                              (r.returncode, r.stdout, r.stderr))
        return json.loads(r.stdout.strip().splitlines()[-1])

    def finish(self):
        """SIGTERM: the daemon exits 0 with connections open, and a sanitizer
        build reported nothing."""
        rc, secs = self.stop(signal.SIGTERM)
        check(rc == 0, "SIGTERM: iwarpd exited %s after %.2f s" % (rc, secs))
        check(not self.sanitizer_reports(), "no sanitizer reports %s" % self.sanitizer_reports())

    def services_json(self):
        return self.ctl_json("services")["/iwarpd/services"]

    def service(self, name):
        s = self.services_json()
        for i, n in enumerate(s["names"]):
            if n == name:
                return s["svc_%d" % i], s["transfers_%d" % i]
        raise TestFailure("no service %s in %s" % (name, s))

    def tcp_totals(self):
        return self.ctl_json("tcp")["/iwarpd/tcp"]["total"]

    def connections(self):
        r = self.ctl("--json", "connections")
        conns = []
        for line in r.stdout.splitlines():
            page = json.loads(line)["/iwarpd/connections"]
            conns += [v for k, v in page.items() if k.startswith("conn_")]
        return conns

    def kernel_ss(self):
        """(state, local, peer) of every TCP socket in the namespace."""
        out = self.ns_run("ss", "-tanH").stdout
        rows = []
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 5:
                rows.append((f[0], f[3], f[4]))
        return rows

    def kernel_snmp(self):
        """The namespace's /proc/net/snmp Tcp counters."""
        lines = self.ns_run("cat", "/proc/net/snmp").stdout.splitlines()
        tcp = [l.split()[1:] for l in lines if l.startswith("Tcp:")]
        return dict(zip(tcp[0], (int(x) for x in tcp[1])))

    def wait_for(self, what, pred, timeout=10.0):
        deadline = time.time() + timeout
        while True:
            v = pred()
            if v or time.time() > deadline:
                return v
            time.sleep(0.1)


# --- kernel-side helpers (run with python3 -c inside the namespace) ---------

# argv: host port nbytes chunk -> sends random bytes, half-closes, reads the
# echo back; prints sha256 of sent and received, local port and the seconds.
KERNEL_ECHO = r'''
import hashlib, json, os, selectors, socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
half_close = len(sys.argv) > 4 and sys.argv[4] == "half"
t0 = time.time()
s = socket.create_connection((host, port), timeout=30)
lport = s.getsockname()[1]
s.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
hs, hr = hashlib.sha256(), hashlib.sha256()
sent = got = 0
chunk = os.urandom(1 << 16)
shut = False
eof = False
while not eof and time.time() - t0 < 300:
    for key, ev in sel.select(1):
        if ev & selectors.EVENT_WRITE and sent < n:
            k = s.send(chunk[: min(len(chunk), n - sent)])
            hs.update(chunk[:k]); sent += k
            if sent == n:
                sel.modify(s, selectors.EVENT_READ)
                if half_close:
                    s.shutdown(socket.SHUT_WR); shut = True
        if ev & selectors.EVENT_READ:
            b = s.recv(1 << 20)
            if not b:
                eof = True; break
            hr.update(b); got += len(b)
            if got == n and not half_close:
                eof = True
s.close()
print(json.dumps({"sent": sent, "got": got, "sha_sent": hs.hexdigest(),
                  "sha_got": hr.hexdigest(), "lport": lport, "secs": time.time() - t0,
                  "shut": shut}))
'''

# argv: host port nbytes -> sends random bytes, shutdown(SHUT_WR), waits for
# the sink's FIN; prints the sha256 of what was sent.
KERNEL_SEND = r'''
import hashlib, json, os, socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t0 = time.time()
s = socket.create_connection((host, port), timeout=60)
lport = s.getsockname()[1]
h = hashlib.sha256()
chunk = os.urandom(1 << 20)
sent = 0
while sent < n:
    k = s.send(chunk[: min(len(chunk), n - sent)])
    h.update(chunk[:k]); sent += k
s.shutdown(socket.SHUT_WR)
eof = s.recv(1) == b""
secs = time.time() - t0
s.close()
print(json.dumps({"sent": sent, "sha": h.hexdigest(), "eof": eof, "lport": lport, "secs": secs}))
'''

# argv: port nconn -> listens, accepts nconn connections, reads each to EOF;
# prints bytes and sha256 per connection.
KERNEL_LISTEN = r'''
import hashlib, json, selectors, socket, sys, time
port, nconn = int(sys.argv[1]), int(sys.argv[2])
timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 300
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("0.0.0.0", port)); ls.listen(1024)
print("listening", flush=True)
ls.settimeout(timeout)
sel = selectors.DefaultSelector()
res = {}
t0 = time.time()
accepted = 0
ls.setblocking(False)
sel.register(ls, selectors.EVENT_READ, None)
done = 0
while done < nconn and time.time() - t0 < timeout:
    for key, _ in sel.select(1):
        if key.data is None:
            c, a = ls.accept(); c.setblocking(False)
            st = {"peer": "%s:%d" % a, "h": hashlib.sha256(), "n": 0}
            sel.register(c, selectors.EVENT_READ, st); accepted += 1
        else:
            st = key.data
            b = key.fileobj.recv(1 << 20)
            if b:
                st["h"].update(b); st["n"] += len(b)
            else:
                sel.unregister(key.fileobj); key.fileobj.close(); done += 1
                res[st["peer"]] = {"bytes": st["n"], "sha": st["h"].hexdigest()}
print(json.dumps({"conns": res, "secs": time.time() - t0}))
'''


def run_listener(d, nconn, timeout=300):
    """Starts KERNEL_LISTEN in the namespace; returns the Popen (reads JSON at the end)."""
    p = subprocess.Popen(["ip", "netns", "exec", d.ns, "python3", "-c", KERNEL_LISTEN,
                          str(SOURCE_PORT), str(nconn), str(timeout)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if "listening" not in line:
        raise TestFailure("kernel listener did not start: %s %s" % (line, p.stderr.read()))
    return p


def listener_result(p, timeout):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        raise TestFailure("kernel listener did not finish within %d s" % timeout)
    if p.returncode != 0:
        raise TestFailure("kernel listener failed: %s %s" % (out, err))
    return json.loads(out.strip().splitlines()[-1])


def sink_transfer(d, nbytes, timeout=120):
    """Sends nbytes from the kernel to the sink; returns (kernel result, transfer line)."""
    r = d.py(KERNEL_SEND, OUR_IP, SINK_PORT, nbytes, timeout=timeout)
    want = "%s:%d" % (PEER_IP, r["lport"])
    line = d.wait_for("sink transfer", lambda: next(
        (t for t in d.service("sink")[1] if t.endswith(" " + want)), None), timeout=10)
    return r, line


def check_sink(d, nbytes, what, timeout=120, expect_equal=True):
    r, line = sink_transfer(d, nbytes, timeout)
    check(r["sent"] == nbytes and r["eof"],
          "%s: kernel sent %d bytes to the sink and saw its FIN after its own (%.2f s)" %
          (what, r["sent"], r["secs"]))
    check(line is not None, "%s: the sink reports the transfer: %s" % (what, line))
    nb, sha, status, _ = line.split()
    if expect_equal:
        check(int(nb) == nbytes and sha == r["sha"] and status == "complete",
              "%s: the sink received %s bytes with SHA-256 %s..., kernel sent %s..." %
              (what, nb, sha[:16], r["sha"][:16]))
    return r, (int(nb), sha, status)


# --- cases ----------------------------------------------------------------

def case_echo(args):
    d = TcpDaemon(args, "te")
    try:
        d.start()
        n = 4 << 20
        r = d.py(KERNEL_ECHO, OUR_IP, ECHO_PORT, n)
        check(r["sent"] == n and r["got"] == n and r["sha_sent"] == r["sha_got"],
              "echo: %d random bytes came back unchanged (SHA-256 %s..., %.2f s)" %
              (n, r["sha_got"][:16], r["secs"]))
        # The kernel closed first: it holds TIME-WAIT, iwarpd's side is gone.
        rows = d.kernel_ss()
        mine = [x for x in rows if x[1].endswith(":%d" % r["lport"])]
        check(any(x[0] == "TIME-WAIT" for x in mine),
              "ss -tan: the kernel's side is in TIME-WAIT after its active close (%s)" % mine)
        gone = d.wait_for("iwarpd side closed", lambda: not [
            c for c in d.connections() if c["remote"].endswith(":%d" % r["lport"])])
        check(gone, "iwarpctl connections: iwarpd's side (passive close) is closed")
        svc, _ = d.service("echo")
        check(svc["accepted"] == 1 and svc["closed"] == 1 and svc["closed_abnormal"] == 0 and
              svc["bytes_in"] == n and svc["bytes_out"] == n,
              "echo service counters: 1 accepted, 1 closed normally, %d bytes each way (%s)" %
              (n, svc))
        t = d.tcp_totals()
        check(t["passive_opens"] == 1 and t["closed_normal"] == 1 and t["bytes_in"] == n,
              "tcp counters: passive_opens 1, closed_normal 1, bytes_in %d (%s)" %
              (n, {k: t[k] for k in ("passive_opens", "closed_normal", "bytes_in")}))
        text = d.ctl("stats").stdout
        check("segments_in" in text and "passive_opens" in text,
              "iwarpctl stats includes the TCP table")
        d.finish()
    finally:
        d.cleanup()


def case_sink(args):
    d = TcpDaemon(args, "ts")
    try:
        d.start()
        check_sink(d, 16 << 20, "sink 16 MiB")
        check_sink(d, 1, "sink 1 byte")
        check_sink(d, 0, "sink 0 bytes")
        svc, transfers = d.service("sink")
        check(svc["accepted"] == 3 and svc["closed"] == 3 and len(transfers) == 3,
              "sink counters: 3 accepted, 3 closed, 3 transfers listed (%s)" % svc)
        empty = [t for t in transfers if t.startswith("0 ")]
        check(empty and empty[0].split()[1] == hashlib.sha256(b"").hexdigest(),
              "the empty transfer has the SHA-256 of nothing: %s" % empty)
        text = d.ctl("services").stdout
        check("service sink (sink, port 9)" in text and "transfer" in text,
              "iwarpctl services lists the sink and its transfers:\n" + text)
        d.finish()
    finally:
        d.cleanup()


def source_case(args, name, nbytes, nconn, impairment="", tcp="", timeout=300):
    d = TcpDaemon(args, name, source_bytes=nbytes, source_connections=nconn,
                  impairment=impairment, tcp=tcp)
    try:
        # The listener must run before the source connects: a SYN to a
        # closed port is refused (RST) and the source does not retry. The
        # source waits start_delay_ms 3000 after the worker started; the
        # harness has the kernel side configured well before that.
        d.start()
        d.snmp_start = d.kernel_snmp()
        p = run_listener(d, nconn, timeout)
        res = listener_result(p, timeout + 10)
        want = pattern_sha256(nbytes)
        conns = res["conns"]
        check(len(conns) == nconn, "kernel listener saw %d connections from the source (%s; "
              "source: %s)" % (nconn, res, d.service("push")))
        for peer, c in conns.items():
            check(c["bytes"] == nbytes and c["sha"] == want,
                  "stream from %s: %d bytes, SHA-256 of the pattern (%s...)" %
                  (peer, c["bytes"], want[:16]))
        svc, transfers = d.service("push")
        d.wait_for("source transfers", lambda: len(d.service("push")[1]) == nconn, 10)
        svc, transfers = d.service("push")
        check(svc["connected"] == nconn and len(transfers) == nconn,
              "source: %d connected, %d transfers recorded (%s)" % (nconn, len(transfers), svc))
        for t in transfers:
            nb, sha, status, _ = t.split()
            check(int(nb) == nbytes and sha == want and status == "complete",
                  "source's own record: %s bytes, SHA-256 %s..., %s" % (nb, sha[:16], status))
        check(res["secs"] < timeout, "source transfer finished in %.2f s" % res["secs"])
        return d, res
    except BaseException:
        d.cleanup()
        raise


def case_source(args):
    d, _ = source_case(args, "tso", 8 << 20, 1)
    try:
        # iwarpd sent FIN first: its side waits in TIME-WAIT (time_wait_s).
        conns = d.connections()
        check(any(c["state"] == "TIME-WAIT" and c["remote"] == "%s:%d" % (PEER_IP, SOURCE_PORT)
                  for c in conns),
              "iwarpctl connections: iwarpd's active close left TIME-WAIT (%s)" %
              [(c["remote"], c["state"]) for c in conns])
        check(not [x for x in d.kernel_ss() if x[1].endswith(":%d" % SOURCE_PORT) and
                   x[0] != "LISTEN"],
              "ss -tan: the kernel's side (passive close) is gone")
        t = d.tcp_totals()
        check(t["active_opens"] == 1 and t["bytes_out"] == 8 << 20,
              "tcp counters: active_opens 1, bytes_out 8 MiB")
        d.finish()
    finally:
        d.cleanup()


# argv: host port mode -> mode "rst": connect, send, abortive close; mode
# "refused": connect to a port nobody listens on.
KERNEL_CLOSE = r'''
import json, socket, struct, sys, time
host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = {}
if mode == "refused":
    try:
        socket.create_connection((host, port), timeout=5)
        out["error"] = "connected"
    except ConnectionRefusedError:
        out["error"] = "refused"
    except OSError as e:
        out["error"] = str(e)
else:
    s = socket.create_connection((host, port), timeout=5)
    out["lport"] = s.getsockname()[1]
    s.sendall(b"x" * 1000)
    time.sleep(0.2)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
print(json.dumps(out))
'''


def case_close(args):
    """FIN, RST and half-close against the kernel."""
    d = TcpDaemon(args, "tc")
    try:
        d.start()
        # RST from the kernel (SO_LINGER 0) tears iwarpd's connection down.
        r = d.py(KERNEL_CLOSE, OUR_IP, ECHO_PORT, "rst")
        gone = d.wait_for("rst", lambda: not d.connections())
        check(gone, "after the kernel's RST iwarpd lists no connection")
        t = d.tcp_totals()
        check(t["closed_reset"] == 1 and t["rsts_in"] >= 1,
              "tcp counters: closed_reset 1, rsts_in %d" % t["rsts_in"])
        svc, _ = d.service("echo")
        check(svc["closed_abnormal"] == 1, "echo service: the reset connection is abnormal")
        # A closed port answers RST: the kernel reports ECONNREFUSED.
        r = d.py(KERNEL_CLOSE, OUR_IP, 4444, "refused")
        check(r["error"] == "refused", "connect to a closed port: ECONNREFUSED (%s)" % r)
        t = d.tcp_totals()
        check(t["drop_tcp_no_connection"] >= 1 and t["rsts_out"] >= 1,
              "tcp counters: tcp_no_connection drop and rsts_out moved")
        # Half-close: the kernel shuts down writing first and still gets
        # every byte echoed, then iwarpd's FIN.
        n = 1 << 20
        r = d.py(KERNEL_ECHO, OUR_IP, ECHO_PORT, n, "half")
        check(r["shut"] and r["got"] == n and r["sha_got"] == r["sha_sent"],
              "half-close: after shutdown(SHUT_WR) the kernel still received all %d bytes "
              "and then EOF" % n)
        rows = d.kernel_ss()
        check(any(x[0] == "TIME-WAIT" and x[1].endswith(":%d" % r["lport"]) for x in rows),
              "ss -tan: the half-closing kernel side ends in TIME-WAIT")
        d.finish()
    finally:
        d.cleanup()


# argv: host port nconn nbytes -> opens nconn connections at once, then on
# each sends nbytes and reads them back; reports the peak of ESTABLISHED
# connections it held.
KERNEL_MANY = r'''
import json, os, resource, selectors, socket, sys, time
host, port, nconn, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
resource.setrlimit(resource.RLIMIT_NOFILE, (nconn + 100, nconn + 100))
t0 = time.time()
socks = []
for i in range(nconn):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex((host, port))
    socks.append(s)
sel = selectors.DefaultSelector()
for s in socks:
    sel.register(s, selectors.EVENT_WRITE)
connected = 0
while connected < nconn and time.time() - t0 < 60:
    for key, _ in sel.select(1):
        err = key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            print(json.dumps({"error": os.strerror(err), "connected": connected})); sys.exit(0)
        sel.unregister(key.fileobj); connected += 1
print("connected %d" % connected, flush=True)
sys.stdin.readline()   # the test checks both sides while all are open
payload = os.urandom(n)
state = {s: [0, bytearray()] for s in socks}
for s in socks:
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
ok = 0
while ok < nconn and time.time() - t0 < 120:
    for key, ev in sel.select(1):
        s = key.fileobj; st = state[s]
        if ev & selectors.EVENT_WRITE and st[0] < n:
            st[0] += s.send(payload[st[0]:])
            if st[0] == n:
                sel.modify(s, selectors.EVENT_READ)
        if ev & selectors.EVENT_READ:
            b = s.recv(65536)
            st[1] += b
            if len(st[1]) == n:
                ok += int(bytes(st[1]) == payload)
                sel.unregister(s); s.close()
            elif not b:
                sel.unregister(s); s.close()
print(json.dumps({"connected": connected, "echoed_ok": ok, "secs": time.time() - t0}))
'''


def case_concurrent(args):
    nconn = 1000
    d = TcpDaemon(args, "tm", tcp="  max_connections: 1100\n  syn_backlog: 1024\n"
                  "  send_buffer_bytes: 16384\n  receive_buffer_bytes: 16384\n"
                  "  max_ooo_segments: 8\n  max_send_records: 16\n  max_zero_copy_sends: 4\n")
    try:
        d.start()
        p = subprocess.Popen(["ip", "netns", "exec", d.ns, "python3", "-c", KERNEL_MANY, OUR_IP,
                              str(ECHO_PORT), str(nconn), "2048"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        line = p.stdout.readline()
        check(line.strip() == "connected %d" % nconn, "kernel opened %d connections (%s)" %
              (nconn, line.strip() or p.stderr.read()))
        est = [x for x in d.kernel_ss() if x[0] == "ESTAB" and x[2].endswith(":%d" % ECHO_PORT)]
        check(len(est) == nconn, "ss -tan: %d ESTABLISHED connections to the echo port" % len(est))
        conns = d.connections()
        mine = [c for c in conns if c["state"] == "ESTABLISHED" and c["service"] == "echo"]
        check(len(mine) == nconn,
              "iwarpctl connections: %d ESTABLISHED echo connections (of %d listed)" %
              (len(mine), len(conns)))
        # Window scale as both sides see it: the kernel's send shift is
        # iwarpd's receive shift and the other way round (RFC 7323 2.2). The
        # kernel offers SACK and timestamps, so iwarpd must have both on.
        info = d.ns_run("ss", "-tinH", "dst", "%s:%d" % (OUR_IP, ECHO_PORT)).stdout
        kernel_opts = next((l for l in info.splitlines() if "wscale:" in l), "")
        ws = kernel_opts.split("wscale:")[1].split()[0].split(",") if kernel_opts else ["?", "?"]
        ours = mine[0]["options"]
        check(ours == "sack ts wscale:%s,%s" % (ws[1], ws[0]),
              "options agree: kernel wscale:%s,%s, iwarpd '%s'" % (ws[0], ws[1], ours))
        out, err = p.communicate("go\n", timeout=180)
        r = json.loads(out.strip().splitlines()[-1])
        check(r["echoed_ok"] == nconn, "all %d connections echoed 2048 bytes correctly (%.2f s)" %
              (r["echoed_ok"], r["secs"]))
        gone = d.wait_for("all closed", lambda: len(d.connections()) == 0, 20)
        check(gone, "iwarpd closed all %d connections after the kernel's FINs" % nconn)
        svc, _ = d.service("echo")
        check(svc["accepted"] == nconn and svc["closed"] == nconn and svc["closed_abnormal"] == 0,
              "echo service: %d accepted, %d closed normally" % (nconn, nconn))
        d.finish()
    finally:
        d.cleanup()


def impairment_rules(action_rx, action_tx):
    return "      seed: 11\n      rx:\n%s      tx:\n%s" % (action_rx, action_tx)


def impair_case(args, name, impairment, expect_retrans, nbytes=8 << 20, bound_s=120,
                corrupt_checks=None):
    """Sink (kernel -> iwarpd) and source (iwarpd -> kernel) transfers through
    the impairment stage: identical data within bound_s, retransmission
    counters moving on the side that lost data."""
    d, res = source_case(args, name, nbytes, 1, impairment=impairment, timeout=bound_s)
    try:
        before = d.kernel_snmp()
        r, _ = check_sink(d, nbytes, "%s sink" % name, timeout=bound_s)
        check(r["secs"] < bound_s, "%s: sink transfer in %.2f s (bound %d s)" %
              (name, r["secs"], bound_s))
        after = d.kernel_snmp()
        t = d.tcp_totals()
        s = d.totals()
        log("impairment counters: %s" % {k: v for k, v in s.items() if k.startswith("impair")
                                          or k == "drop_impair_drop"})
        log("tcp: retransmitted_segments %d timeouts %d fast_retransmits %d; kernel RetransSegs "
            "+%d" % (t["retransmitted_segments"], t["timeouts"], t["fast_retransmits"],
                     after["RetransSegs"] - before["RetransSegs"]))
        if expect_retrans:
            check(t["retransmitted_segments"] > 0,
                  "%s: iwarpd retransmitted (%d segments) while sending" %
                  (name, t["retransmitted_segments"]))
            check(after["RetransSegs"] > before["RetransSegs"],
                  "%s: the kernel retransmitted (%d segments) while sending to the sink" %
                  (name, after["RetransSegs"] - before["RetransSegs"]))
        if corrupt_checks:
            corrupt_checks(d, t, s, d.snmp_start, after)
        return d
    except BaseException:
        d.cleanup()
        raise


def loss_rule(ppm):
    return "        - {action: drop, protocol: tcp, min_payload: 1, probability_ppm: %d}\n" % ppm


def case_impair_loss1(args):
    d = impair_case(args, "tl1", impairment_rules(loss_rule(10000), loss_rule(10000)), True)
    try:
        d.finish()
    finally:
        d.cleanup()


def case_impair_loss5(args):
    d = impair_case(args, "tl5", impairment_rules(loss_rule(50000), loss_rule(50000)), True)
    try:
        d.finish()
    finally:
        d.cleanup()


def case_impair_reorder(args):
    rule = "        - {action: reorder, protocol: tcp, min_payload: 1, every: 20, reorder_gap: 3}\n"
    d = impair_case(args, "tro", impairment_rules(rule, rule), False)
    try:
        check(d.totals()["impair_reordered"] > 0, "frames were reordered")
        t = d.tcp_totals()
        check(t["ooo_segments"] > 0, "iwarpd saw out-of-order segments (%d)" % t["ooo_segments"])
        d.finish()
    finally:
        d.cleanup()


def case_impair_delay(args):
    rule = "        - {action: delay, protocol: tcp, every: 25, delay_ms: 15}\n"
    d = impair_case(args, "tdl", impairment_rules(rule, rule), False)
    try:
        check(d.totals()["impair_delayed"] > 0, "frames were delayed by 15 ms (%d)" %
              d.totals()["impair_delayed"])
        d.finish()
    finally:
        d.cleanup()


def case_impair_duplicate(args):
    rule = "        - {action: duplicate, protocol: tcp, every: 10}\n"
    d = impair_case(args, "tdu", impairment_rules(rule, rule), False)
    try:
        check(d.totals()["impair_duplicated"] > 0, "frames were duplicated")
        t = d.tcp_totals()
        check(t["drop_tcp_duplicate_data"] > 0 or t["dsacks_out"] > 0,
              "iwarpd recognised duplicate data (duplicate drops %d, D-SACKs %d)" %
              (t["drop_tcp_duplicate_data"], t["dsacks_out"]))
        d.finish()
    finally:
        d.cleanup()


def case_impair_corrupt(args):
    """Stale checksums: both receivers discard the damaged segments and the
    data still arrives intact. Then fixed checksums: TCP cannot see the damage
    and the SHA-256 differs (what the layers above must catch)."""
    rule = ("        - {action: corrupt, protocol: tcp, min_payload: 1, every: 50,"
            " checksum: stale}\n")

    def stale_checks(d, t, s, start, after):
        check(t["drop_tcp_bad_checksum"] > 0,
              "iwarpd dropped %d corrupted segments on their TCP checksum" %
              t["drop_tcp_bad_checksum"])
        check(s["impair_corrupted_stale"] > 0, "the stage corrupted frames (stale checksum)")
        # iwarpd's corrupted data segments went out in the source phase.
        check(after["InCsumErrors"] > start["InCsumErrors"],
              "the kernel counted %d checksum errors (InCsumErrors)" %
              (after["InCsumErrors"] - start["InCsumErrors"]))

    d = impair_case(args, "tcs", impairment_rules(rule, rule), True, corrupt_checks=stale_checks)
    try:
        d.finish()
    finally:
        d.cleanup()
    fixed = ("        - {action: corrupt, protocol: tcp, port: %d, min_payload: 1, first: 5,"
             " last: 5, checksum: fixed}\n" % SINK_PORT)
    d = TcpDaemon(args, "tcf", impairment=impairment_rules(fixed, ""))
    try:
        d.start()
        r, (nb, sha, status) = check_sink(d, 1 << 20, "fixed-checksum corruption",
                                          expect_equal=False)
        check(nb == 1 << 20 and status == "complete" and sha != r["sha"],
              "with the checksum fixed up TCP delivers all bytes but the SHA-256 differs "
              "(%s... vs %s...)" % (sha[:16], r["sha"][:16]))
        check(d.tcp_totals()["drop_tcp_bad_checksum"] == 0 and
              d.totals()["impair_corrupted_fixed"] == 1,
              "no TCP checksum drop, one frame corrupted with a fixed checksum")
        d.finish()
    finally:
        d.cleanup()


def case_bulk_1g(args):
    n = 1 << 30
    d, res = source_case(args, "tb", n, 1, timeout=600,
                         tcp="  max_connections: 16\n  syn_backlog: 8\n"
                             "  send_buffer_bytes: 4194304\n  receive_buffer_bytes: 4194304\n")
    try:
        log("1 GiB iwarpd -> kernel: %.2f s (%.1f MB/s)" % (res["secs"], n / res["secs"] / 1e6))
        r, _ = check_sink(d, n, "1 GiB kernel -> iwarpd sink", timeout=600)
        log("1 GiB kernel -> iwarpd: %.2f s (%.1f MB/s)" % (r["secs"], n / r["secs"] / 1e6))
        d.finish()
    finally:
        d.cleanup()


KERNEL_GAPS = r'''
import json, socket, sys, time
host, port, nconn, rounds, gap = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                  int(sys.argv[4]), float(sys.argv[5]))
# Every round, after the gap, `nconn` new connections: connect, one 64-byte
# echo, close. A new flow's first frames reach whichever TAP queue the
# kernel hashes it to, so about half are steered to the other worker.
rtts, bad = [], 0
for r in range(rounds):
    time.sleep(gap)
    for i in range(nconn):
        msg = bytes([(r * 7 + i + k) % 256 for k in range(64)])
        t0 = time.perf_counter()
        s = socket.create_connection((host, port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(msg)
        got = b""
        while len(got) < 64:
            b = s.recv(64 - len(got))
            if not b:
                break
            got += b
        rtts.append((time.perf_counter() - t0) * 1e3)
        bad += got != msg
        s.close()
print(json.dumps({"rtts_ms": rtts, "bad": bad}))
'''


class TwoWorkerBlockingDaemon(TcpDaemon):
    """Two workers floating over CPUs 0 and 1, both blocking when idle; the
    TAP has a queue per worker and flows are steered in software to the
    worker their hash names."""

    def __init__(self, args, name):
        super().__init__(args, name)
        # Blocks of up to 200 ms: a wake-up that is lost shows as a stall of
        # tens of milliseconds, not as noise.
        self.idle = "  idle_block_after_us: 200\n  idle_block_max_ms: 200\n"

    def config_text(self):
        text = super().config_text()
        for old, new in (("  lcores: [1]\n", "  lcores: [1, 2]\n"),
                         ("  main_lcore: 0\n", "  main_lcore: 0\n  cpus: [0, 1]\n")):
            if old not in text:
                raise TestFailure("daemon harness config changed: no %r" % old)
            text = text.replace(old, new)
        return text


def case_idle_block_steer(args):
    """workers.idle_block_after_us with two workers: a frame that the TAP
    queue of one worker receives for a flow the other owns is steered to the
    other, which has blocked; the steering worker must wake it (its wake
    eventfd), or the echo waits for the other's block timeout (here up to
    200 ms)."""
    d = TwoWorkerBlockingDaemon(args, "ts")
    try:
        d.start()
        nconn, rounds = 4, 20
        s0 = d.ctl_json("stats")["/iwarpd/stats"]
        r = d.py(KERNEL_GAPS, OUR_IP, ECHO_PORT, nconn, rounds, 0.05)
        s1 = d.ctl_json("stats")["/iwarpd/stats"]
        rtts = sorted(r["rtts_ms"])
        median = rtts[len(rtts) // 2]
        lcores = [k for k in s1 if isinstance(s1[k], dict) and "idle_blocks" in s1[k] and
                  k != "total"]
        delta = {k: {c: s1[k][c] - s0[k][c] for c in ("idle_blocks", "steered_out", "steered_in")}
                 for k in lcores}
        log("connect + 64-byte echo after 50 ms gaps, %d per round: median %.3f ms, max %.3f ms; "
            "per worker %s" % (nconn, median, rtts[-1], delta))
        check(r["bad"] == 0 and len(rtts) == nconn * rounds,
              "%d echoes came back unchanged" % (nconn * rounds))
        svc, _ = d.service("echo")
        check(svc["accepted"] == nconn * rounds and svc["closed_abnormal"] == 0 and
              svc["bytes_out"] == 64 * nconn * rounds,
              "echo service: %d connections accepted, none closed abnormally, %d bytes echoed (%s)" %
              (nconn * rounds, 64 * nconn * rounds, svc))
        check(len(lcores) == 2 and all(v["idle_blocks"] >= rounds for v in delta.values()),
              "both workers blocked in the gaps (%s)" % delta)
        steered = sum(v["steered_in"] for v in delta.values())
        check(steered >= nconn * rounds // 4,
              "frames of new connections were steered between the workers (%d)" % steered)
        # A steered frame left to the owner's block timeout would wait up to
        # 200 ms; with about half the connections steered, some would wait
        # over 100.
        check(median < 2.5 and rtts[-1] < 100,
              "connections from blocked workers: median %.3f ms (< 2.5), max %.3f ms (< 100)" %
              (median, rtts[-1]))
        d.finish()
    finally:
        d.cleanup()


CASES = {
    "idle_block_steer": case_idle_block_steer,
    "echo": case_echo,
    "sink": case_sink,
    "source": case_source,
    "close": case_close,
    "concurrent": case_concurrent,
    "impair_loss1": case_impair_loss1,
    "impair_loss5": case_impair_loss5,
    "impair_reorder": case_impair_reorder,
    "impair_delay": case_impair_delay,
    "impair_duplicate": case_impair_duplicate,
    "impair_corrupt": case_impair_corrupt,
    "bulk_1g": case_bulk_1g,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--iwarpd", required=True)
    ap.add_argument("--iwarpctl", required=True)
    ap.add_argument("--source-root", required=True)
    args = ap.parse_args()
    dpi.skip_unless_possible()
    if subprocess.run(["ss", "-V"], capture_output=True).returncode != 0:
        log("SKIP: iproute2 'ss' not installed")
        sys.exit(dpi.SKIP)
    try:
        CASES[args.case](args)
    except TestFailure as e:
        log("FAIL: %s" % e)
        sys.exit(1)
    log("PASS")


if __name__ == "__main__":
    main()
