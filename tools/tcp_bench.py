#!/usr/bin/env python3
"""TCP benchmark: iwarpd's tcp_lite (sink and echo services on net_tap) against
the kernel TCP stack over a veth pair between two namespaces, in one run.

Both sides use the same kernel-side client (python sockets in a namespace), so
the client's cost is the same in both columns; what differs is the server's
stack and link: iwarpd on a TAP device versus a kernel socket behind a veth.

  bulk   one connection sends BULK_MIB MiB and half-closes; goodput is bytes
         over the time until the server's FIN arrives (everything delivered)
  rr     64-byte request/response on one connection for RR_SECONDS seconds;
         transactions per second

Both sinks only read and discard (--sink-sha256 makes iwarpd's also hash the
stream, as the interop tests do). The link is not alike: the veth pair carries
64 KiB GSO segments, the TAP device MTU-sized frames, one read or write
system call each.

  tcp_bench.py --iwarpd PATH --iwarpctl PATH [--bulk-mib N] [--rr-seconds S]
               [--sink-sha256] [--counters]

Needs root (namespaces); prints a skip reason and exits 77 otherwise.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import dataplane_integration as dpi  # noqa: E402
import tcp_interop  # noqa: E402

BASE_NS_A = "iwb_a%d" % os.getpid()
BASE_NS_B = "iwb_b%d" % os.getpid()
VETH_A_IP = "198.19.0.1"
VETH_B_IP = "198.19.0.2"

# argv: host port mib -> bulk send, half-close, wait for FIN; prints seconds.
CLIENT_BULK = r'''
import json, socket, sys, time
host, port, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
buf = bytes(1 << 20)
s = socket.create_connection((host, port), timeout=60)
t0 = time.perf_counter()
for _ in range(mib):
    s.sendall(buf)
s.shutdown(socket.SHUT_WR)
s.recv(1)
secs = time.perf_counter() - t0
print(json.dumps({"secs": secs}))
'''

# argv: host port seconds -> 64-byte ping-pong; prints transactions.
CLIENT_RR = r'''
import json, socket, sys, time
host, port, dur = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.create_connection((host, port), timeout=10)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
msg = b"q" * 64
n = 0
t0 = time.perf_counter()
end = t0 + dur
while time.perf_counter() < end:
    s.sendall(msg)
    got = 0
    while got < 64:
        b = s.recv(64 - got)
        if not b:
            raise SystemExit("closed")
        got += len(b)
    n += 1
secs = time.perf_counter() - t0
s.close()
print(json.dumps({"transactions": n, "secs": secs}))
'''

# argv: port -> kernel sink (discard to EOF, then close) and echo on port+1,
# one connection each, in threads.
SERVER = r'''
import socket, sys, threading
port = int(sys.argv[1])
def sink():
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port)); ls.listen(8)
    while True:
        c, _ = ls.accept()
        while c.recv(1 << 20):
            pass
        c.close()
def echo():
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port + 1)); ls.listen(8)
    while True:
        c, _ = ls.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            b = c.recv(65536)
            if not b:
                break
            c.sendall(b)
        c.close()
threading.Thread(target=sink, daemon=True).start()
threading.Thread(target=echo, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
'''


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check)


def ns_py(ns, code, *argv, timeout=300):
    r = subprocess.run(["ip", "netns", "exec", ns, "python3", "-c", code] + [str(a) for a in argv],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("client failed: %s %s" % (r.stdout, r.stderr))
    return json.loads(r.stdout.strip().splitlines()[-1])


def kernel_baseline(mib, rr_seconds):
    server = None
    try:
        sh("ip", "netns", "add", BASE_NS_A)
        sh("ip", "netns", "add", BASE_NS_B)
        sh("ip", "link", "add", "iwb_va", "netns", BASE_NS_A, "type", "veth", "peer", "name",
           "iwb_vb", "netns", BASE_NS_B)
        for ns, dev, ip in ((BASE_NS_A, "iwb_va", VETH_A_IP), (BASE_NS_B, "iwb_vb", VETH_B_IP)):
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", ip + "/24", "dev", dev)
            sh("ip", "netns", "exec", ns, "ip", "link", "set", dev, "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        server = subprocess.Popen(["ip", "netns", "exec", BASE_NS_B, "python3", "-c", SERVER,
                                   "7009"], stdout=subprocess.PIPE, text=True)
        if "ready" not in server.stdout.readline():
            raise RuntimeError("kernel server did not start")
        bulk = ns_py(BASE_NS_A, CLIENT_BULK, VETH_B_IP, 7009, mib)
        rr = ns_py(BASE_NS_A, CLIENT_RR, VETH_B_IP, 7010, rr_seconds)
        return bulk, rr
    finally:
        if server is not None:
            server.kill()
            server.wait()
        sh("ip", "netns", "del", BASE_NS_A, check=False)
        sh("ip", "netns", "del", BASE_NS_B, check=False)


class BenchDaemon(tcp_interop.TcpDaemon):
    """Busy polling (idle_sleep_us 0): the latency a deployment would run with."""

    def config_text(self):
        text = super().config_text().replace("  idle_sleep_us: 100\n", "  idle_sleep_us: 0\n")
        if self.args.sink_sha256:
            return text
        # The kernel-side sink discards what it reads; so does ours, unless
        # asked to also hash every byte (--sink-sha256).
        return text.replace("type: sink, port: %d, sha256: true}" % tcp_interop.SINK_PORT,
                            "type: sink, port: %d}" % tcp_interop.SINK_PORT)


def print_counters(d, when):
    """The daemon's own account of the run: non-zero data-plane counters and
    drops, and the TCP engine's counters (iwarpctl stats / tcp)."""
    print("iwarpd counters %s:" % when)
    for what in ("stats", "tcp"):
        print(d.ctl(what).stdout.rstrip())


def iwarpd_run(args, mib, rr_seconds):
    d = BenchDaemon(args, "bn", tcp="  max_connections: 16\n  syn_backlog: 8\n"
                              "  send_buffer_bytes: 4194304\n  receive_buffer_bytes: 4194304\n")
    try:
        d.start()
        bulk = ns_py(d.ns, CLIENT_BULK, dpi.OUR_IP, tcp_interop.SINK_PORT, mib)
        if args.counters:
            print_counters(d, "after bulk")
        rr = ns_py(d.ns, CLIENT_RR, dpi.OUR_IP, tcp_interop.ECHO_PORT, rr_seconds)
        if args.counters:
            print_counters(d, "after request/response")
        return bulk, rr
    finally:
        d.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iwarpd", required=True)
    ap.add_argument("--iwarpctl", required=True)
    ap.add_argument("--source-root", default=os.path.join(HERE, ".."))
    ap.add_argument("--bulk-mib", type=int, default=1024)
    ap.add_argument("--rr-seconds", type=float, default=5.0)
    ap.add_argument("--sink-sha256", action="store_true",
                    help="iwarpd's sink also computes SHA-256 of the stream (the kernel's does not)")
    ap.add_argument("--counters", action="store_true",
                    help="print iwarpctl stats and tcp after each iwarpd phase")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, TAP and veth devices)")
        sys.exit(77)
    kb, kr = kernel_baseline(args.bulk_mib, args.rr_seconds)
    ib, ir = iwarpd_run(args, args.bulk_mib, args.rr_seconds)
    mb = args.bulk_mib * (1 << 20)
    k_gbps = mb * 8 / kb["secs"] / 1e9
    i_gbps = mb * 8 / ib["secs"] / 1e9
    k_tps = kr["transactions"] / kr["secs"]
    i_tps = ir["transactions"] / ir["secs"]
    print("tcp bench (same run; client: python3 kernel sockets in a namespace)")
    print("%-34s %14s %14s %8s" % ("", "iwarpd tcp_lite", "kernel (veth)", "ratio"))
    print("%-34s %14.3f %14.3f %8.2f" % ("bulk goodput, Gbit/s (%d MiB)" % args.bulk_mib,
                                        i_gbps, k_gbps, i_gbps / k_gbps))
    print("%-34s %14.0f %14.0f %8.2f" % ("64-byte request/response, 1/s", i_tps, k_tps,
                                        i_tps / k_tps))


if __name__ == "__main__":
    main()
