#!/usr/bin/env python3
"""TCP benchmark: iwarpd's tcp_lite (sink and echo services on net_tap) against
the kernel TCP stack over a veth pair between two namespaces, in one run.

Both sides use the same kernel-side client (iwarp-tcp-baseline, C++, blocking
sockets, in a namespace), so the client's cost is the same in both columns;
what differs is the server's stack and link: iwarpd on a TAP device versus a
kernel socket (iwarp-tcp-baseline serve) behind a veth.

  bulk   one connection sends BULK_MIB MiB and half-closes; goodput is bytes
         over the time until the server's FIN arrives (everything delivered)
  rr     64-byte request/response on one connection for RR_SECONDS seconds;
         transactions per second

Both sinks only read and discard (--sink-sha256 makes iwarpd's also hash the
stream, as the interop tests do). The link is not alike: the veth pair carries
64 KiB GSO segments, the TAP device MTU-sized frames, one read or write
system call each.

  tcp_bench.py --iwarpd PATH --iwarpctl PATH --tcp-baseline PATH
               [--bulk-mib N] [--rr-seconds S]
               [--sink-sha256] [--counters]

Needs root (namespaces); prints a skip reason and exits 77 otherwise.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import dataplane_integration as dpi  # noqa: E402
import tcp_interop  # noqa: E402

BASE_NS_A = "iwb_a%d" % os.getpid()
BASE_NS_B = "iwb_b%d" % os.getpid()
VETH_A_IP = "198.19.0.1"
VETH_B_IP = "198.19.0.2"

def sh(*cmd, check=True):
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check)


def ns_baseline(args, ns, *argv, timeout=300):
    """Runs iwarp-tcp-baseline with argv in namespace ns; its JSON line."""
    r = subprocess.run(["ip", "netns", "exec", ns, args.tcp_baseline] + [str(a) for a in argv],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("iwarp-tcp-baseline %s failed: %s %s" % (argv[0], r.stdout, r.stderr))
    return json.loads(r.stdout.strip().splitlines()[-1])


def kernel_baseline(args, mib, rr_seconds):
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
        server = subprocess.Popen(["ip", "netns", "exec", BASE_NS_B, args.tcp_baseline, "serve",
                                   "7009"], stdout=subprocess.PIPE, text=True)
        if "ready" not in server.stdout.readline():
            raise RuntimeError("kernel server did not start")
        bulk = ns_baseline(args, BASE_NS_A, "stream", VETH_B_IP, 7009, 1 << 20, mib)
        rr = ns_baseline(args, BASE_NS_A, "rr", VETH_B_IP, 7010, rr_seconds)
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
        bulk = ns_baseline(args, d.ns, "stream", dpi.OUR_IP, tcp_interop.SINK_PORT, 1 << 20, mib)
        if args.counters:
            print_counters(d, "after bulk")
        rr = ns_baseline(args, d.ns, "rr", dpi.OUR_IP, tcp_interop.ECHO_PORT, rr_seconds)
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
    ap.add_argument("--rr-seconds", type=int, default=5)
    ap.add_argument("--tcp-baseline", required=True,
                    help="iwarp-tcp-baseline (tools/perf/tcp_baseline.cc), the client on both sides")
    ap.add_argument("--sink-sha256", action="store_true",
                    help="iwarpd's sink also computes SHA-256 of the stream (the kernel's does not)")
    ap.add_argument("--counters", action="store_true",
                    help="print iwarpctl stats and tcp after each iwarpd phase")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, TAP and veth devices)")
        sys.exit(77)
    if not os.access(args.tcp_baseline, os.X_OK):
        print("no iwarp-tcp-baseline at %s (build it: ninja -C BUILD "
              "tools/perf/iwarp-tcp-baseline)" % args.tcp_baseline)
        sys.exit(2)
    kb, kr = kernel_baseline(args, args.bulk_mib, args.rr_seconds)
    ib, ir = iwarpd_run(args, args.bulk_mib, args.rr_seconds)
    mb = args.bulk_mib * (1 << 20)
    k_gbps = mb * 8 / kb["secs"] / 1e9
    i_gbps = mb * 8 / ib["secs"] / 1e9
    k_tps = kr["transactions"] / kr["secs"]
    i_tps = ir["transactions"] / ir["secs"]
    print("tcp bench (same run; client: iwarp-tcp-baseline, kernel sockets in a namespace)")
    print("%-34s %14s %14s %8s" % ("", "iwarpd tcp_lite", "kernel (veth)", "ratio"))
    print("%-34s %14.3f %14.3f %8.2f" % ("bulk goodput, Gbit/s (%d MiB)" % args.bulk_mib,
                                        i_gbps, k_gbps, i_gbps / k_gbps))
    print("%-34s %14.0f %14.0f %8.2f" % ("64-byte request/response, 1/s", i_tps, k_tps,
                                        i_tps / k_tps))


if __name__ == "__main__":
    main()
