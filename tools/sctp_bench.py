#!/usr/bin/env python3
"""RDMA over SCTP against iWARP over TCP/MPA through the same two iwarpd
daemons, in one run.

Daemon A runs two iwarp_responder services, one on TCP (MPA with CRC) and
one on SCTP (RFC 5043; SCTP's CRC32c covers every packet); for each workload
a client daemon B (same binary, same config apart from the one client
service) runs the iwarp_client over SCTP and then the same client over TCP.
Both daemons busy-poll one core each (A's worker on lcore 1, B's on lcore
0), joined by net_memif at MTU 1500, so the machine must be otherwise idle
for figures worth comparing. Compare ratios, not absolute numbers.

  write_bw 4 KiB / 64 KiB   RDMA Writes, queue depth 16, no read-back; goodput
                            is payload bits over the time from Full Operation
                            to the last Write's completion.
  send 64 B                 Sends the responder echoes, 16 outstanding;
                            messages per second.

  sctp_bench.py --iwarpd PATH --iwarpctl PATH [--count-4k N] [--count-64k N]
                [--count-send N] [--rows w4k,w64k,s64] [--repeat N]

Needs root and hugepages (memif); prints the reason and exits 77 otherwise.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import iwarp_dataplane as iw  # noqa: E402

DEPTH = 16
TCP_PORT = 9999
SCTP_PORT = 5043
BUFFERS = ("  send_buffer_bytes: 1048576\n  receive_buffer_bytes: 1048576\n")
SCTP_SECTION = "sctp:\n  enabled: true\n  streams: 8\n" + BUFFERS
RESPONDERS = ("  - {name: r_tcp, type: iwarp_responder, port: %d, crc: true}\n"
              "  - {name: r_sctp, type: iwarp_responder, transport: sctp, port: %d}\n"
              % (TCP_PORT, SCTP_PORT))
RESPONDER_IWARP = ("  qps_per_service: 1\n  scratch_bytes: %d\n  recv_buffers: %d\n"
                   "  recv_buffer_bytes: 65536\n" % (DEPTH * 65536, DEPTH))


def client(name, transport, op, msg, count):
    port = SCTP_PORT if transport == "sctp" else TCP_PORT
    extra = ", transport: sctp" if transport == "sctp" else ", crc: true"
    return ("  - {name: %s, type: iwarp_client, remote: %s, remote_port: %d,"
            " start_delay_ms: 500, op: %s, message_bytes: %d, count: %d, queue_depth: %d,"
            " verify: false%s}\n" % (name, iw.A_IP, port, op, msg, count, DEPTH, extra))


def run_client(args, sock, name, transport, op, msg, count):
    """One client run in a fresh daemon B against the running A."""
    b = iw.MemifDaemon(args, "qb", iw.B_IP, "client", sock,
                       client(name, transport, op, msg, count), tcp_extra=SCTP_SECTION,
                       main_lcore=1, worker_lcore=0, idle_sleep_us=0)
    try:
        b.start()
        deadline = time.time() + 600
        while time.time() < deadline:
            s = b.services_by_name()[name]
            if s.get("run") in ("ok", "failed"):
                if s["run"] != "ok":
                    raise RuntimeError("%s run failed: %s\n%s" % (name, json.dumps(s), b.log()))
                if transport == "sctp":
                    # The SCTP SHUTDOWN after the last session: A's responder
                    # gets its QP slot back for the next run.
                    end = time.time() + 5
                    while b.ctl_json("sctp")["associations_up"] != 0 and time.time() < end:
                        time.sleep(0.05)
                b.stop()
                return s
            time.sleep(0.2)
        raise RuntimeError("%s run did not finish" % name)
    finally:
        b.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iwarpd", required=True)
    ap.add_argument("--iwarpctl", required=True)
    ap.add_argument("--count-4k", type=int, default=20000)
    ap.add_argument("--count-64k", type=int, default=3000)
    ap.add_argument("--count-send", type=int, default=50000)
    ap.add_argument("--rows", default="w4k,w64k,s64",
                    help="comma-separated subset of w4k, w64k, s64 (default: all)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each row's SCTP/TCP pair N times, interleaved, and print "
                         "every pair and the median ratio (shared, noisy machines)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces)")
        return 77
    if iw.free_hugepage_mib() < 2 * iw.MEMORY_MB:
        print("SKIP: net_memif needs %d MiB of free hugepages" % (2 * iw.MEMORY_MB))
        return 77
    runs = {"w4k": ("write", 4096, args.count_4k), "w64k": ("write", 65536, args.count_64k),
            "s64": ("send", 64, args.count_send)}
    rows = [r for r in args.rows.split(",") if r]
    for r in rows:
        if r not in runs:
            ap.error("unknown row %r (w4k, w64k, s64)" % r)
    runs = {k: v for k, v in runs.items() if k in rows}
    d = tempfile.mkdtemp(prefix="iwarpd_sctp_bench_")
    sock = os.path.join(d, "memif.sock")
    a = iw.MemifDaemon(args, "qa", iw.A_IP, "server", sock, RESPONDERS, RESPONDER_IWARP,
                       tcp_extra=SCTP_SECTION, main_lcore=0, worker_lcore=1, idle_sleep_us=0)
    res = {}
    try:
        a.start()
        for key, (op, msg, count) in runs.items():
            for rep in range(args.repeat):
                for transport in ("sctp", "tcp"):
                    res[(key, transport, rep)] = run_client(
                        args, sock, "%s_%s" % (key, transport), transport, op, msg, count)
                    end = time.time() + 5
                    while a.ctl_json("sctp")["associations"] != 0 and time.time() < end:
                        time.sleep(0.05)
    finally:
        a.cleanup()
        shutil.rmtree(d, ignore_errors=True)

    def figure(key, r):
        if key == "s64":
            return r["run_messages"] * 1e6 / r["run_elapsed_us"]
        return r["run_bytes"] * 8 / r["run_elapsed_us"]

    print("%-36s %14s %14s %8s" % ("", "SCTP (RFC5043)", "TCP/MPA (CRC)", "ratio"))
    for key, label in (("w4k", "write_bw 4 KiB, depth 16 (Mbit/s)"),
                       ("w64k", "write_bw 64 KiB, depth 16 (Mbit/s)"),
                       ("s64", "send 64 B echoed, depth 16 (msg/s)")):
        if key not in runs:
            continue
        pairs = [(figure(key, res[(key, "sctp", i)]), figure(key, res[(key, "tcp", i)]))
                 for i in range(args.repeat)]
        for mine, base in pairs:
            print("%-36s %14.0f %14.0f %8.2f" % (label, mine, base, mine / base))
        if args.repeat > 1:
            ratios = sorted(m / b for m, b in pairs)
            mid = len(ratios) // 2
            median = (ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2)
            print("%-36s %14s %14s %8.2f" % ("  median ratio of %d pairs" % args.repeat, "",
                                             "", median))
    return 0


if __name__ == "__main__":
    sys.exit(main())
