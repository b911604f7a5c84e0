#!/usr/bin/env python3
"""Application-QP benchmark: iwarp-perf (libiwarp) client and server on two
iwarpd daemons joined by net_memif, so every work request goes SQ ring ->
worker 0's wire engine -> MPA/TCP (tcp_lite) -> memif -> the other daemon,
against the kernel TCP stack over a veth pair between two network
namespaces moving the same bytes with the same pattern, in one run.

  write_bw 4 KiB / 64 KiB   iwarp-perf write_bw, queue depth 16, MTU 1500 and
                            9000 (goodput, MiB/s as iwarp-perf prints it).
                            Kernel: one TCP connection, the same bytes in
                            writes of the same size, until the receiver has
                            read them all; the veth MTU is the same.
  send_bw 64 B              iwarp-perf send_bw (messages per second).
                            Kernel: the same count of 64-byte writes on one
                            connection (TCP_NODELAY) until all are read.
  send_lat / write_lat 64 B round trip, median and minimum (twice
                            iwarp-perf's half-round-trip figures). Kernel:
                            64-byte ping-pong over TCP, median and minimum.
                            The minimum shows the path's cost when no other
                            process held the core; the median includes the
                            scheduler's share on a loaded machine.

The kernel side is driven by Python sockets (one system call per message),
iwarpd's daemons busy-poll one core each (idle_sleep_us 0); on a shared
machine the figures move with the load, so compare ratios, not absolute
numbers (the load average is printed with the table).

  iwarp_perf_bench.py --iwarpd PATH --iwarpctl PATH --perf PATH
                      [--count-4k N] [--count-64k N] [--count-send N]
                      [--count-lat N] [--mtus 1500,9000]

Needs root and hugepages (memif); prints the reason and exits 77 otherwise.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)
import appif_wire_dataplane as aw  # noqa: E402  (application-interface memif daemons)
import iwarp_bench as ib  # noqa: E402  (kernel bulk sink / echo server)
import iwarp_dataplane as iwd  # noqa: E402

NS_A = "iwpb_a%d" % os.getpid()
NS_B = "iwpb_b%d" % os.getpid()
VETH_A_IP = "198.19.2.1"
VETH_B_IP = "198.19.2.2"
KPORT = 7029
DEPTH = 16
# mtu + Ethernet header and CRC + mbuf headroom must fit one mbuf
# (dataplane/port.cc); 9216 covers MTU 9000.
DATA_ROOM_JUMBO = 9216

# argv: host port count -> 64-byte ping-pong, per-round-trip times.
CLIENT_PINGPONG = r'''
import json, socket, sys, time
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection((host, port), timeout=60)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
msg = bytes(64)
rtt = []
for _ in range(count):
    t0 = time.perf_counter()
    s.sendall(msg)
    got = 0
    while got < 64:
        d = s.recv(64 - got)
        if not d: raise SystemExit("closed")
        got += len(d)
    rtt.append(time.perf_counter() - t0)
rtt.sort()
print(json.dumps({"median_us": rtt[len(rtt) // 2] * 1e6, "min_us": rtt[0] * 1e6,
                  "avg_us": sum(rtt) / len(rtt) * 1e6}))
'''

# argv: host port size count -> count writes of size bytes, TCP_NODELAY, until
# the receiver has read them all (as ib.CLIENT_BULK, without Nagle: a message
# leaves when it is written, as an iWARP Send does).
CLIENT_MSGS = ib.CLIENT_BULK.replace(
    "s = socket.create_connection((host, port), timeout=60)\n",
    "s = socket.create_connection((host, port), timeout=60)\n"
    "s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)\n")


class BenchDaemon(aw.AppDaemon):
    """An application-interface daemon on memif with a given port MTU."""

    def __init__(self, args, name, ip, role, sock, mtu, main_lcore, worker_lcore):
        super().__init__(args, name, ip, role, sock, "", main_lcore=main_lcore,
                         worker_lcore=worker_lcore, idle_sleep_us=0)
        self.mtu = mtu

    def config_text(self):
        text = super().config_text()
        vdev = "socket-abstract=no\"\n"
        aw.check(vdev in text, "daemon harness config changed (vdev)")
        text = text.replace(vdev, vdev + "    mtu: %d\n" % self.mtu, 1)
        if self.mtu > 1500:
            text = text.replace("mempools:\n", "mempools:\n  data_room: %d\n" % DATA_ROOM_JUMBO, 1)
        return text


def perf_pair(args, a, b, test, size, iters):
    """Runs one iwarp-perf test (server on a, client on b); returns the
    client's result row as floats."""
    common = [test, "-s", str(size), "-n", str(iters), "-p", str(aw.PORT)]
    if test.endswith("_bw"):
        common += ["-q", str(DEPTH)]
    server = subprocess.Popen([args.perf] + common + ["-S", a.socket()], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        aw.wait_line(server, "waiting for a client", 15)
        client = subprocess.run([args.perf] + common + ["-S", b.socket(), iwd.A_IP],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=600)
        if client.returncode != 0:
            raise RuntimeError("iwarp-perf %s -s %d client exit %d:\n%s" %
                               (test, size, client.returncode, client.stdout))
        server.communicate(timeout=30)
        lines = client.stdout.splitlines()
        for i, line in enumerate(lines):
            if line.startswith(" #bytes"):
                return [float(x) for x in lines[i + 1].split()]
        raise RuntimeError("no result row from iwarp-perf:\n%s" % client.stdout)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


def iwarpd_runs(args, mtu, with_small):
    d = tempfile.mkdtemp(prefix="iwarpd_pb_")
    sock = os.path.join(d, "memif.sock")
    a = BenchDaemon(args, "pa", iwd.A_IP, "server", sock, mtu, main_lcore=0, worker_lcore=1)
    b = BenchDaemon(args, "pb", iwd.B_IP, "client", sock, mtu, main_lcore=1, worker_lcore=0)
    out = {}
    try:
        a.start()
        b.start()
        # Row: bytes, iterations, MiB/s, Mpps, memcpy MiB/s.
        out["w4k"] = perf_pair(args, a, b, "write_bw", 4096, args.count_4k)[2]
        out["w64k"] = perf_pair(args, a, b, "write_bw", 65536, args.count_64k)[2]
        if with_small:
            out["s64"] = perf_pair(args, a, b, "send_bw", 64, args.count_send)[3] * 1e6
            # Row: bytes, iterations, t_min, t_max, t_typical (median), ...;
            # half the round trip for these two tests.
            for key, test in (("slat", "send_lat"), ("wlat", "write_lat")):
                row = perf_pair(args, a, b, test, 64, args.count_lat)
                out[key] = row[4] * 2
                out[key + "_min"] = row[2] * 2
        return out
    finally:
        b.cleanup()
        a.cleanup()
        shutil.rmtree(d, ignore_errors=True)


def kernel_runs(args, mtu, with_small):
    server = None
    try:
        ib.sh("ip", "netns", "add", NS_A)
        ib.sh("ip", "netns", "add", NS_B)
        ib.sh("ip", "link", "add", "iwpb_va", "netns", NS_A, "type", "veth", "peer", "name",
              "iwpb_vb", "netns", NS_B)
        for ns, dev, ip in ((NS_A, "iwpb_va", VETH_A_IP), (NS_B, "iwpb_vb", VETH_B_IP)):
            ib.sh("ip", "netns", "exec", ns, "ip", "link", "set", dev, "mtu", str(mtu))
            ib.sh("ip", "netns", "exec", ns, "ip", "addr", "add", ip + "/24", "dev", dev)
            ib.sh("ip", "netns", "exec", ns, "ip", "link", "set", dev, "up")
            ib.sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        server = subprocess.Popen(["ip", "netns", "exec", NS_B, "python3", "-c", ib.SERVER,
                                   str(KPORT)], stdout=subprocess.PIPE, text=True)
        if "ready" not in server.stdout.readline():
            raise RuntimeError("kernel server did not start")
        mib = 1024.0 * 1024.0
        out = {}
        for key, size, count in (("w4k", 4096, args.count_4k), ("w64k", 65536, args.count_64k)):
            secs = ib.ns_py(NS_A, ib.CLIENT_BULK, VETH_B_IP, KPORT, size, count)["secs"]
            out[key] = size * count / secs / mib
        if with_small:
            secs = ib.ns_py(NS_A, CLIENT_MSGS, VETH_B_IP, KPORT, 64, args.count_send)["secs"]
            out["s64"] = args.count_send / secs
            rtt = ib.ns_py(NS_A, CLIENT_PINGPONG, VETH_B_IP, KPORT + 1, args.count_lat)
            out["slat"] = out["wlat"] = rtt["median_us"]
            out["slat_min"] = out["wlat_min"] = rtt["min_us"]
        return out
    finally:
        if server is not None:
            server.kill()
            server.wait()
        ib.sh("ip", "netns", "del", NS_A, check=False)
        ib.sh("ip", "netns", "del", NS_B, check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iwarpd", required=True)
    ap.add_argument("--iwarpctl", required=True)
    ap.add_argument("--perf", required=True)
    ap.add_argument("--count-4k", type=int, default=50000)
    ap.add_argument("--count-64k", type=int, default=8000)
    ap.add_argument("--count-send", type=int, default=100000)
    ap.add_argument("--count-lat", type=int, default=5000)
    ap.add_argument("--mtus", default="1500,9000")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, veth devices)")
        return 77
    if iwd.free_hugepage_mib() < 2 * iwd.MEMORY_MB:
        print("SKIP: net_memif needs %d MiB of free hugepages" % (2 * iwd.MEMORY_MB))
        return 77
    mtus = [int(m) for m in args.mtus.split(",")]
    rows = []
    notes = []
    for i, mtu in enumerate(mtus):
        small = i == 0
        try:
            ours = iwarpd_runs(args, mtu, small)
        except (aw.TestFailure, RuntimeError) as e:
            # E.g. DPDK 22.11's net_memif takes frames of at most 1518 bytes:
            # the daemon refuses MTU 9000 at rte_eth_dev_configure.
            why = [l for l in str(e).splitlines() if "frame size" in l or "failed" in l]
            notes.append("MTU %d: iwarpd did not run: %s" % (mtu, (why or [str(e)])[0].strip()))
            ours = None
            if small:
                raise
        kern = kernel_runs(args, mtu, small)
        if ours is None:
            rows += [("write_bw 4 KiB, MTU %d (MiB/s)" % mtu, None, kern["w4k"], True),
                     ("write_bw 64 KiB, MTU %d (MiB/s)" % mtu, None, kern["w64k"], True)]
            continue
        rows += [("write_bw 4 KiB, MTU %d (MiB/s)" % mtu, ours["w4k"], kern["w4k"], True),
                 ("write_bw 64 KiB, MTU %d (MiB/s)" % mtu, ours["w64k"], kern["w64k"], True)]
        if small:
            rows += [("send_bw 64 B, MTU %d (msg/s)" % mtu, ours["s64"], kern["s64"], True),
                     ("send_lat 64 B RTT median (us)", ours["slat"], kern["slat"], False),
                     ("send_lat 64 B RTT min (us)", ours["slat_min"], kern["slat_min"], False),
                     ("write_lat 64 B RTT median (us)", ours["wlat"], kern["wlat"], False),
                     ("write_lat 64 B RTT min (us)", ours["wlat_min"], kern["wlat_min"], False)]
    print("iWARP application QPs (iwarp-perf, two iwarpd over net_memif, depth %d) vs kernel "
          "TCP over veth (Python sockets); load average %s" %
          (DEPTH, " ".join(open("/proc/loadavg").read().split()[:3])))
    print("%-36s %14s %16s %8s" % ("", "iwarpd iWARP", "kernel TCP veth", "ratio"))
    for label, mine, base, higher_better in rows:
        if mine is None:
            print("%-36s %14s %16.1f %8s" % (label, "n/a", base, "n/a"))
            continue
        ratio = mine / base if base else float("nan")
        print("%-36s %14.1f %16.1f %8.2f%s" % (label, mine, base, ratio,
                                               "" if higher_better else "  (lower is better)"))
    for n in notes:
        print("note: " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
