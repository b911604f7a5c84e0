#!/usr/bin/env python3
"""iWARP benchmark: two iwarpd daemons (iwarp_client -> iwarp_responder over
net_memif) against the kernel TCP stack over a veth pair moving the same
bytes, in one run.

  write_bw 4 KiB / 64 KiB   RDMA Writes, queue depth 16, no read-back, no run
                            hash (sha256: false: the kernel side hashes
                            nothing either); goodput is payload bits over the
                            time from Full Operation to the last Write's
                            completion (acknowledged).
                            Kernel: one TCP connection, the same bytes in
                            writes of the same size, until the receiver has
                            read them all.
  send 64 B                 Sends the responder echoes, 16 outstanding;
                            messages per second. Kernel: 64-byte messages
                            echoed by the server, 16 outstanding.
  send 64 B round trip      Sends the responder echoes, one at a time: the
                            average round trip (the run's time over its
                            messages) of the daemons' own path, no
                            application and no application interface on it
                            (iwarp-perf send_lat, tools/iwarp_perf_bench.py,
                            adds those). Kernel: 64-byte ping-pong
                            (TCP_NODELAY), average.

The kernel side is driven by iwarp-tcp-baseline (tools/perf/tcp_baseline.cc:
C++, blocking sockets, one system call per message; the sink's byte count and
every echo checked), iwarpd's by its own services; the daemons busy-poll one
core each (A's worker on lcore 1, B's on lcore 0) with the daemon's default
TCP settings (tcp.delayed_ack_us 200), so the machine must be
otherwise idle for figures worth comparing. Compare ratios, not absolute
numbers.

  iwarp_bench.py --iwarpd PATH --iwarpctl PATH --tcp-baseline PATH
                 [--count-4k N] [--count-64k N] [--count-send N] [--count-lat N]

Needs root and hugepages (memif); prints the reason and exits 77 otherwise.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import iwarp_dataplane as iw  # noqa: E402

NS_A = "iwbi_a%d" % os.getpid()
NS_B = "iwbi_b%d" % os.getpid()
VETH_A_IP = "198.19.1.1"
VETH_B_IP = "198.19.1.2"
DEPTH = 16

def sh(*cmd, check=True):
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check)


def ns_baseline(a, ns, *argv, timeout=600):
    """Runs iwarp-tcp-baseline with argv in namespace ns; its JSON line."""
    r = subprocess.run(["ip", "netns", "exec", ns, a.tcp_baseline] + [str(x) for x in argv],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("iwarp-tcp-baseline %s failed: %s %s" % (argv[0], r.stdout, r.stderr))
    return json.loads(r.stdout.strip().splitlines()[-1])


def kernel_baseline(a):
    server = None
    try:
        sh("ip", "netns", "add", NS_A)
        sh("ip", "netns", "add", NS_B)
        sh("ip", "link", "add", "iwbi_va", "netns", NS_A, "type", "veth", "peer", "name",
           "iwbi_vb", "netns", NS_B)
        for ns, dev, ip in ((NS_A, "iwbi_va", VETH_A_IP), (NS_B, "iwbi_vb", VETH_B_IP)):
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", ip + "/24", "dev", dev)
            sh("ip", "netns", "exec", ns, "ip", "link", "set", dev, "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        server = subprocess.Popen(["ip", "netns", "exec", NS_B, a.tcp_baseline, "serve", "7019"],
                                  stdout=subprocess.PIPE, text=True)
        if "ready" not in server.stdout.readline():
            raise RuntimeError("kernel server did not start")
        out = {}
        out["w4k"] = ns_baseline(a, NS_A, "bulk", VETH_B_IP, 7019, 4096, a.count_4k)["secs"]
        out["w64k"] = ns_baseline(a, NS_A, "bulk", VETH_B_IP, 7019, 65536, a.count_64k)["secs"]
        out["s64"] = ns_baseline(a, NS_A, "echo", VETH_B_IP, 7020, a.count_send, DEPTH)["secs"]
        out["rtt"] = ns_baseline(a, NS_A, "pingpong", VETH_B_IP, 7020, a.count_lat)["avg_us"]
        return out
    finally:
        if server is not None:
            server.kill()
            server.wait()
        sh("ip", "netns", "del", NS_A, check=False)
        sh("ip", "netns", "del", NS_B, check=False)


def iwarpd_run(args, name, op, msg, count, depth=DEPTH):
    """One client run against a fresh responder; returns its service entry."""
    d = tempfile.mkdtemp(prefix="iwarpd_bench_")
    sock = os.path.join(d, "memif.sock")
    a = iw.MemifDaemon(args, "ba", iw.A_IP, "server", sock, iw.responder_services(),
                       "  qps_per_service: 1\n  scratch_bytes: %d\n  recv_buffers: %d\n"
                       "  recv_buffer_bytes: 65536\n" % (DEPTH * 65536, DEPTH),
                       main_lcore=0, worker_lcore=1, idle_sleep_us=0, delayed_ack_us=None)
    svc = iw.client(name, op, msg, count, depth, verify=False, sha256=False).replace(
        "start_delay_ms: 300", "start_delay_ms: 500")
    b = iw.MemifDaemon(args, "bb", iw.B_IP, "client", sock, svc, main_lcore=1, worker_lcore=0,
                       idle_sleep_us=0, delayed_ack_us=None)
    try:
        a.start()
        b.start()
        deadline = time.time() + 600
        while time.time() < deadline:
            s = b.services_by_name()[name]
            if s.get("run") in ("ok", "failed"):
                if s["run"] != "ok":
                    raise RuntimeError("%s run failed: %s" % (name, json.dumps(s)))
                return s
            time.sleep(0.2)
        raise RuntimeError("%s run did not finish" % name)
    finally:
        b.cleanup()
        a.cleanup()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iwarpd", required=True)
    ap.add_argument("--iwarpctl", required=True)
    ap.add_argument("--count-4k", type=int, default=50000)
    ap.add_argument("--count-64k", type=int, default=8000)
    ap.add_argument("--count-send", type=int, default=100000)
    ap.add_argument("--count-lat", type=int, default=20000)
    ap.add_argument("--tcp-baseline", required=True,
                    help="iwarp-tcp-baseline (tools/perf/tcp_baseline.cc), the kernel side")
    args = ap.parse_args()
    if not os.access(args.tcp_baseline, os.X_OK):
        print("no iwarp-tcp-baseline at %s (build it: ninja -C BUILD "
              "tools/perf/iwarp-tcp-baseline)" % args.tcp_baseline)
        return 2
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, veth devices)")
        return 77
    if iw.free_hugepage_mib() < 2 * iw.MEMORY_MB:
        print("SKIP: net_memif needs %d MiB of free hugepages" % (2 * iw.MEMORY_MB))
        return 77
    runs = {"w4k": ("write", 4096, args.count_4k), "w64k": ("write", 65536, args.count_64k),
            "s64": ("send", 64, args.count_send), "rtt": ("send", 64, args.count_lat, 1)}
    ours = {k: iwarpd_run(args, k, *v) for k, v in runs.items()}
    kern = kernel_baseline(args)
    print("%-36s %16s %16s %8s" % ("", "iwarpd iWARP", "kernel TCP veth", "ratio"))
    for key, label in (("w4k", "write_bw 4 KiB, depth 16 (Mbit/s)"),
                       ("w64k", "write_bw 64 KiB, depth 16 (Mbit/s)")):
        _, msg, count = runs[key]
        mine = ours[key]["run_bytes"] * 8 / ours[key]["run_elapsed_us"]
        base = msg * count * 8 / kern[key] / 1e6
        print("%-36s %16.0f %16.0f %8.2f" % (label, mine, base, mine / base))
    count = runs["s64"][2]
    mine = ours["s64"]["run_messages"] * 1e6 / ours["s64"]["run_elapsed_us"]
    base = count / kern["s64"]
    print("%-36s %16.0f %16.0f %8.2f" % ("send 64 B echoed, depth 16 (msg/s)", mine, base,
                                         mine / base))
    mine = ours["rtt"]["run_elapsed_us"] / ours["rtt"]["run_messages"]
    print("%-36s %16.1f %16.1f %8.2f  (lower is better)" %
          ("send 64 B round trip, depth 1 (us)", mine, kern["rtt"], mine / kern["rtt"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
