#!/usr/bin/env python3
"""Application-QP benchmark: iwarp-perf (libiwarp) client and server on two
iwarpd daemons, so every work request goes SQ ring -> worker 0's wire engine
-> MPA/TCP (tcp_lite) -> the link -> the other daemon, against the kernel TCP
stack over a veth pair between two network namespaces moving the same bytes
with the same pattern, in one run. Each row names the link iwarpd used:

  memif       net_memif between the two daemons (shared memory). DPDK 22.11's
              net_memif carries frames of at most 1518 bytes, so MTU 1500 only.
              Rings of 2^14 descriptors (rsize=14, --memif-rsize; DPDK's
              default is 2^10): 64 KiB write_bw measured ~2400 against
              ~1900-2000 MiB/s with 2^10, alternated in one run, the other
              rows within noise. No ring ever filled at 2^10 (tx_held 0);
              presumably, with 16384 slots a slot's lines have left the other
              core's caches by the time the sender writes it again. The
              rings' 64 MiB are plain pages the two processes fault in on
              first touch: until each slot was used once (16384 frames each
              way), round trips pay page faults (5000 64-byte ping-pongs on
              fresh rings: half round trip 75 against 17 us); each run
              first moves 64 MiB each way unmeasured.
  vhost       vhost-user: net_vhost (the backend) on the server's daemon,
              net_virtio_user on the client's; frames are copied between
              the processes' hugepage memory, no kernel on the path. The
              link that carries MTU 9000 at memory speed
              (tests/mtu_jumbo.py vhost). Rows at every MTU, so the MTU's
              effect is read on the same link. No TCP segmentation offload:
              net_vhost without tso=1 offers none, one frame per segment.
  vhost-tso   the same link with TCP segmentation offload (ports[].tso: on
              on the client's net_virtio_user, net_vhost with tso=1 and
              ext-buffer=1): runs of MSS-sized segments leave as one frame of
              up to 64 KiB and arrive at the server as one coalesced frame
              (tests/mtu_jumbo.py tso). Beside the vhost row, which is the
              same link without TSO, in the same run.
  pcap/veth   (--links ...,pcap) net_pcap on each end of a veth pair (two
              namespaces, the veth MTU the row's MTU): every frame is a
              packet-socket send and receive through the kernel, and libpcap
              hands received frames over in blocks (DPDK 22.11's net_pcap
              does not ask for immediate mode), so these rows measure that
              link more than iwarpd; they use their own, smaller counts
              (--count-pcap-4k/--count-pcap-64k), as an iwarp-perf server
              gives up on a size that takes more than 10 s.

  write_bw 4 KiB / 64 KiB   iwarp-perf write_bw, queue depth 16 (--depth N;
                            64 with --tcp-buffer-bytes 4194304, run right
                            after the defaults: 4 KiB rows 1.2-1.6x, 64 KiB
                            at MTU 9000 1.24x, memif 64 KiB slower), MTU 1500
                            (memif and pcap/veth) and 9000 (pcap/veth)
                            (goodput, MiB/s as iwarp-perf prints it). A
                            completion per work request unless --cq-mod N
                            (iwarp-perf -Q N). Measured pinned: -Q 16 (one
                            completion per window) raised memif 4 KiB from
                            ~700-850 to ~1100 MiB/s but halved vhost-tso
                            64 KiB (the window drains before the application
                            refills it); -Q 8 lowered every 64 KiB row and
                            vhost-tso 4 KiB at MTU 9000; so 1 stays.
                            Kernel: one TCP connection, the same bytes in
                            writes of the same size, until the receiver has
                            read them all; the veth MTU is the same.
    per busy core           the same goodput divided by the cores the whole
                            machine kept busy while it ran ("cores busy":
                            busy ticks of every CPU in /proc/stat over the
                            wall-clock ticks; user, system, irq and softirq;
                            idle, iowait and steal not). iwarpd's workers
                            busy-poll, so its side reads about 2 (both
                            cores) whatever it moves; the kernel's counts
                            its system calls and softirq work wherever they
                            ran. Ticks are 10 ms: runs under a second read
                            a few percent either way.
    iwarpd workers' time with work
                            the share of both daemons' worker poll loops
                            spent in polls that found work (iwarpctl stats:
                            busy_us over poll_us, read before and after the
                            run): what the busy-polling cores actually
                            worked; the rest is polling an empty link and
                            rings. No kernel figure. Then each side's own
                            share: the server's (receiving the Writes) and
                            the client's (sending them); a side near 100%
                            is the one that limits the row.
  read_bw 64 KiB            iwarp-perf read_bw, memif rows at MTU 1500 only (Read
                            Requests within the negotiated ORD/IRD; the kernel
                            row beside it is its write of the same bytes).
  send_bw 64 B              iwarp-perf send_bw (messages per second).
                            Kernel: the same count of 64-byte writes on one
                            connection (TCP_NODELAY) until all are read.
  send_lat / write_lat 64 B round trip, median and minimum (twice
                            iwarp-perf's half-round-trip figures). Kernel:
                            64-byte ping-pong over TCP, median and minimum.
                            The minimum shows the path's cost when no other
                            process held the core; the median includes the
                            scheduler's share on a loaded machine. write_lat
                            sleeps until the daemon counts the peer's Write
                            placed (iwarp_qp_wait_writes); the --poll-byte
                            rows run it again polling the buffer's last byte
                            (as perftest), beside the same kernel figures.

The kernel side is driven by iwarp-tcp-baseline (tools/perf/tcp_baseline.cc:
C++, one system call per message, blocking sockets; next to --perf unless
--tcp-baseline names it), iwarpd's daemons busy-poll one core each
(idle_sleep_us 0, or --idle-sleep-us N: a worker that found no work 16 times in a row sleeps N us,
handing its core to what shares it; or --idle-block-after-us N for the vhost rows: a worker that
found no work for N us blocks until a frame, a post or a timer wakes it - measured alternated
with busy polling, 1000 matched it on every vhost-tso row with 1.86-1.93 cores busy instead of
2.0, while 200 collapsed 4 KiB at MTU 9000 to 25 MiB/s, the workers blocking between every
window and the peer's 200 us delayed ACK). Their TCP runs with the daemon's
default delayed ACK (tcp.delayed_ack_us 200, RFC 5681 4.2: an ACK every
second segment, or with the reply it can ride on) unless --delayed-ack-us N
says otherwise; 0 (an ACK at the end of every
receive burst) costs a pure ACK per message in a ping-pong, and with it a
second wake-up of the waiting application: measured here (pinned,
alternated in one run) send_lat 46 against 31 us and write_lat 59 against
31 us round trip, the bandwidth rows unchanged. On a shared
machine the figures move with the load, so compare ratios, not absolute
numbers (the load average is printed with the table).

  iwarp_perf_bench.py --iwarpd PATH --iwarpctl PATH --perf PATH
                      [--count-4k N] [--count-64k N] [--count-send N]
                      [--count-lat N] [--count-vhost-4k N] [--count-vhost-64k N]
                      [--count-pcap-4k N] [--count-pcap-64k N]
                      [--mtus 1500,9000] [--links memif,vhost,vhost-tso[,pcap]]
                      [--baseline-iwarpd PATH] [--baseline-perf PATH]
                      [--idle-sleep-us N] [--repeat N]
                      [--tcp-baseline PATH] [--no-pin] [--delayed-ack-us N] [--cq-mod N]

The vhost rows move the same bytes as the kernel's unless --count-vhost-*
say otherwise.

--baseline-iwarpd PATH runs every iwarpd row also with that daemon binary
(e.g. the previous build), just before --iwarpd (just after it in every
second repeat), in the same minutes and with the same iwarp-perf, and prints
both with their ratio: the figure for a daemon change on this noisy machine.
--baseline-perf PATH does the same with a previous iwarp-perf (libiwarp is
linked into it: the figure for a libiwarp change); with both, the baseline
rows run the previous daemon and the previous iwarp-perf together.
--repeat N runs everything N times and prints medians.

Each node's processes run on one core (the default; --no-pin turns it
off): the server daemon's worker, the iwarp-perf server and the kernel
baseline's server on CPU 1; the client daemon's worker, the iwarp-perf
client and the kernel baseline's client on CPU 0. Two daemons on one
machine otherwise let an application land on the core of the other
daemon's worker, which no single-daemon node has (send_bw 64 B: ~82k msg/s
in that placement, ~265k beside its own worker; unpinned, send_lat and
write_lat round trips swing between ~33 and ~130 us from run to run).

Needs root and hugepages (memif, vhost); prints the reason and exits 77
otherwise. The pcap/veth rows need no hugepages.
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
import iwarp_bench as ib  # noqa: E402  (sh)
import iwarp_dataplane as iwd  # noqa: E402
import mtu_jumbo as mj  # noqa: E402  (vhost-user and net_pcap/veth ports at a given MTU)

NS_A = "iwpb_a%d" % os.getpid()
NS_B = "iwpb_b%d" % os.getpid()
VETH_A_IP = "198.19.2.1"
VETH_B_IP = "198.19.2.2"
KPORT = 7029
DEPTH = 16
MEMIF_MAX_MTU = 1500  # DPDK 22.11 net_memif: max_rx_pktlen 1518

class BenchDaemon(aw.AppDaemon):
    """An application-interface daemon on memif (MTU 1500)."""

    def __init__(self, args, name, ip, role, sock, main_lcore, worker_lcore, tcp_extra="",
                 memif_devargs=""):
        super().__init__(args, name, ip, role, sock, "", tcp_extra=tcp_extra,
                         main_lcore=main_lcore, worker_lcore=worker_lcore,
                         idle_sleep_us=args.idle_sleep_us,
                         delayed_ack_us=args.delayed_ack_us, memif_devargs=memif_devargs)

    def config_text(self):
        """The harness's config with --tcp-buffer-bytes N: both TCP buffers
        N (the daemon's tcp.max_send_records, auto, follows the send buffer);
        with --max-connections N: tcp.max_connections N (see
        mtu_jumbo.VhostPort for the vhost rows' default)."""
        text = super().config_text()
        if self.args.max_connections:
            if "\ntcp:\n" not in text:
                raise RuntimeError("daemon harness config changed: no tcp section")
            # syn_backlog (default 128) may not exceed it.
            text = text.replace("\ntcp:\n", "\ntcp:\n  max_connections: %d\n  syn_backlog: %d\n"
                                % (self.args.max_connections,
                                   min(128, self.args.max_connections)), 1)
        n = self.args.tcp_buffer_bytes
        if n:
            old = "  send_buffer_bytes: 1048576\n  receive_buffer_bytes: 1048576\n"
            if old not in text:
                raise RuntimeError("daemon harness config changed: no %r" % old)
            text = text.replace(old, "  send_buffer_bytes: %d\n  receive_buffer_bytes: %d\n"
                                % (n, n))
        return text


class PcapBenchDaemon(mj.VdevPort, BenchDaemon):
    """An application-interface daemon on net_pcap over one end of a veth
    pair (mtu_jumbo.VethPair), at the veth's MTU."""


class VhostBenchDaemon(mj.VhostPort, BenchDaemon):
    """An application-interface daemon on one end of a vhost-user link
    (mtu_jumbo.VhostPort: net_vhost or net_virtio_user), at a given MTU;
    with --idle-block-after-us N its worker blocks when idle (both ends of
    the link raise receive interrupts)."""

    def config_text(self):
        text = super().config_text()
        if self.args.idle_block_after_us:
            idle = "  idle_sleep_us: %d\n" % self.idle_sleep_us
            if idle not in text:
                raise RuntimeError("daemon harness config changed: no %r" % idle)
            text = text.replace(idle, "  idle_block_after_us: %d\n" % self.args.idle_block_after_us)
        return text


# --pin: one core per node. Every row's server daemon has its worker on
# lcore 1 and the client's on lcore 0; with --pin the server-side processes
# (iwarp-perf server, the kernel baseline's server) run on CPU 1 and the
# client-side ones on CPU 0, as on two one-core nodes where an application
# shares its core with its own daemon's worker only.
SERVER_CPU = 1
CLIENT_CPU = 0


def pinned(args, cpu):
    """The taskset prefix for a process of the node on `cpu` (none without --pin)."""
    return ["taskset", "-c", str(cpu)] if args.pin else []


def cpu_jiffies():
    """Busy clock ticks summed over every CPU (user, nice, system, irq,
    softirq; idle, iowait and steal excluded) from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return v[0] + v[1] + v[2] + v[5] + v[6]


class CpuMeter:
    """Cores the whole machine kept busy while the `with` block ran
    (busy ticks over wall-clock ticks): iwarpd's busy-polling workers count
    in full, the kernel's softirq work wherever it ran."""

    def __enter__(self):
        self.t0 = time.monotonic()
        self.j0 = cpu_jiffies()
        return self

    def __exit__(self, *exc):
        ticks = (time.monotonic() - self.t0) * os.sysconf("SC_CLK_TCK")
        self.cores = (cpu_jiffies() - self.j0) / ticks if ticks > 0 else None
        return False


def worker_loop_us(d):
    """The daemon's workers' poll-loop time and its part in polls that found
    work (LcoreStats poll_us, busy_us), summed; None from a daemon without
    them (a --baseline-iwarpd from before they existed)."""
    t = d.ctl_json("stats")["total"]
    if "poll_us" not in t:
        return None
    return t["poll_us"], t["busy_us"]


def perf_pair(args, a, b, test, size, iters, extra=(), cores=None, loads=None):
    """Runs one iwarp-perf test (server on a, client on b, both with the
    options in `extra`); returns the client's result row as floats. With a
    list `cores`, appends the cores busy while the client ran (CpuMeter);
    with a list `loads`, the share (%) of the workers' poll-loop time spent
    in polls that found work: a tuple (both daemons together, the server's,
    the client's), None if unknown."""
    common = [test, "-s", str(size), "-n", str(iters), "-p", str(aw.PORT)] + list(extra)
    if test.endswith("_bw"):
        common += ["-q", str(args.depth), "-Q", str(args.cq_mod)]
    server = subprocess.Popen(pinned(args, SERVER_CPU) + [args.perf] + common + ["-S", a.socket()],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        aw.wait_line(server, "waiting for a client", 15)
        loops0 = [worker_loop_us(d) for d in (a, b)] if loads is not None else None
        with CpuMeter() as meter:
            client = subprocess.run(pinned(args, CLIENT_CPU) + [args.perf] + common +
                                    ["-S", b.socket(), iwd.A_IP],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    timeout=600)
        if cores is not None:
            cores.append(meter.cores)
        if loads is not None:
            loops1 = [worker_loop_us(d) for d in (a, b)]
            if None in loops0 or None in loops1:
                loads.append(None)
            else:
                polls = [y[0] - x[0] for x, y in zip(loops0, loops1)]
                busys = [y[1] - x[1] for x, y in zip(loops0, loops1)]

                def share(busy, poll):
                    return 100.0 * busy / poll if poll > 0 else None
                loads.append((share(sum(busys), sum(polls)), share(busys[0], polls[0]),
                              share(busys[1], polls[1])))
        if client.returncode != 0:
            raise RuntimeError("iwarp-perf %s -s %d client exit %d:\n%s" %
                               (test, size, client.returncode, client.stdout))
        server.communicate(timeout=30)
        return aw.result_row(client.stdout)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


def write_bw_runs(args, a, b, count_4k, count_64k):
    """The write_bw rows of a daemon pair: goodput (MiB/s) and the cores
    the machine kept busy meanwhile, for 4 KiB and 64 KiB."""
    out = {}
    for key, size, count in (("w4k", 4096, count_4k), ("w64k", 65536, count_64k)):
        cores, loads = [], []
        # Row: bytes, iterations, MiB/s, Mpps, memcpy MiB/s.
        out[key] = perf_pair(args, a, b, "write_bw", size, count, cores=cores, loads=loads)[2]
        out[key + "_cores"] = cores[0]
        both, server, client = loads[0] if loads[0] is not None else (None, None, None)
        out[key + "_load"] = both
        out[key + "_load_server"] = server
        out[key + "_load_client"] = client
    return out


def memif_devargs(args):
    """The net_memif devargs of the memif rows: the ring size (rsize, log2
    of descriptors per ring; DPDK's default is 10)."""
    return ",rsize=%d" % args.memif_rsize


def iwarpd_runs(args, with_small):
    """memif rows (MTU 1500)."""
    d = tempfile.mkdtemp(prefix="iwarpd_pb_")
    sock = os.path.join(d, "memif.sock")
    devargs = memif_devargs(args)
    a = BenchDaemon(args, "pa", iwd.A_IP, "server", sock, main_lcore=0, worker_lcore=1,
                    memif_devargs=devargs)
    b = BenchDaemon(args, "pb", iwd.B_IP, "client", sock, main_lcore=1, worker_lcore=0,
                    memif_devargs=devargs)
    out = {}
    try:
        a.start()
        b.start()
        # Every ring slot used once before anything is measured (the rings'
        # pages are faulted in on first touch): Writes fill the client's
        # ring, Read Responses the server's; 1000 x 64 KiB is ~45000 frames.
        for test in ("write_bw", "read_bw"):
            perf_pair(args, a, b, test, 65536, 1000)
        out.update(write_bw_runs(args, a, b, args.count_4k, args.count_64k))
        if with_small:
            # Row: bytes, iterations, MiB/s, Mpps, ...: messages per second.
            out["s64"] = perf_pair(args, a, b, "send_bw", 64, args.count_send)[3] * 1e6
            # RDMA Read goodput (the responder's IRD accounting and Read
            # Response path); the kernel moves the same bytes one way.
            out["r64k"] = perf_pair(args, a, b, "read_bw", 65536, args.count_64k)[2]
            # Row: bytes, iterations, t_min, t_max, t_typical (median), ...;
            # half the round trip for these two tests.
            for key, test, extra in (("slat", "send_lat", ()), ("wlat", "write_lat", ()),
                                     ("wlatp", "write_lat", ("--poll-byte",))):
                row = perf_pair(args, a, b, test, 64, args.count_lat, extra)
                out[key] = row[4] * 2
                out[key + "_min"] = row[2] * 2
        return out
    finally:
        b.cleanup()
        a.cleanup()
        shutil.rmtree(d, ignore_errors=True)


def iwarpd_pcap_runs(args, mtu):
    """pcap/veth rows at `mtu`; also the segments and retransmissions the
    client's TCP sent (a lossy link shows here)."""
    link = mj.VethPair(mtu)
    a = b = None
    out = {}
    try:
        link.create()
        # libpcap's 2 MiB socket buffer overflows when a worker is
        # descheduled; the shorter minimum RTO of the integration test keeps
        # those recoveries short (the kernel's veth never loses).
        a = PcapBenchDaemon(args, "qa", iwd.A_IP, "server", "unused", main_lcore=0,
                            worker_lcore=1, tcp_extra=mj.TCP_FAST_RECOVERY)
        a.use_port(link.ns[0], mj.pcap_vdev(link.ifs[0]), mtu)
        b = PcapBenchDaemon(args, "qb", iwd.B_IP, "client", "unused", main_lcore=1,
                            worker_lcore=0, tcp_extra=mj.TCP_FAST_RECOVERY)
        b.use_port(link.ns[1], mj.pcap_vdev(link.ifs[1]), mtu)
        a.start()
        b.start()
        out.update(write_bw_runs(args, a, b, args.count_pcap_4k, args.count_pcap_64k))
        tcp = b.ctl_json("tcp")["total"]
        out["rtx"] = "client TCP: %d segments out, %d retransmitted, %d timeouts" % (
            tcp["segments_out"], tcp["retransmitted_segments"], tcp["timeouts"])
        return out
    finally:
        for d in (b, a):
            if d is not None:
                d.cleanup()
        link.delete()


def iwarpd_vhost_runs(args, mtu, tso=False):
    """vhost-user rows at `mtu` (net_vhost on the server's daemon,
    net_virtio_user on the client's), with TCP segmentation offload from the
    client (`tso`) or without; also the client's TCP segments and
    retransmissions and the frames each port sent."""
    d = tempfile.mkdtemp(prefix="iwarpd_pv_")
    sock = os.path.join(d, "vhost.sock")
    a = VhostBenchDaemon(args, "va", iwd.A_IP, "server", "unused", main_lcore=0, worker_lcore=1)
    a.use_vhost(mj.tso_vhost_vdev(sock) if tso else mj.vhost_vdev(sock), mtu)
    b = VhostBenchDaemon(args, "vb", iwd.B_IP, "client", "unused", main_lcore=1, worker_lcore=0)
    b.use_vhost(mj.virtio_user_vdev(sock), mtu, "    tso: %s\n" % ("on" if tso else "off"))
    out = {}
    try:
        a.start()
        b.start()
        out.update(write_bw_runs(args, a, b, args.count_vhost_4k, args.count_vhost_64k))
        tcp = b.ctl_json("tcp")["total"]
        port = b.ctl_json("ports")["port_0"]
        st = b.ctl_json("stats")["total"]
        out["rtx"] = ("client TCP: %d segments out, %d retransmitted, %d timeouts; %s sent "
                      "%.0f bytes per frame, mtu %d; %d TSO frames carrying %d segments" %
                      (tcp["segments_out"], tcp["retransmitted_segments"], tcp["timeouts"],
                       port["driver"], port["obytes"] / max(1, port["opackets"]), port["mtu"],
                       st["tso_frames_out"], st["tso_segments_out"]))
        return out
    finally:
        b.cleanup()
        a.cleanup()
        shutil.rmtree(d, ignore_errors=True)


def ns_baseline(args, *argv):
    """Runs iwarp-tcp-baseline with argv in namespace A; its JSON line."""
    r = subprocess.run(["ip", "netns", "exec", NS_A] + pinned(args, CLIENT_CPU) +
                       [args.tcp_baseline] + [str(a) for a in argv],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("iwarp-tcp-baseline %s failed: %s %s" % (argv[0], r.stdout, r.stderr))
    return json.loads(r.stdout.strip().splitlines()[-1])


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
        server = subprocess.Popen(["ip", "netns", "exec", NS_B] + pinned(args, SERVER_CPU) +
                                  [args.tcp_baseline, "serve", str(KPORT)],
                                  stdout=subprocess.PIPE, text=True)
        if "ready" not in server.stdout.readline():
            raise RuntimeError("kernel server did not start")
        mib = 1024.0 * 1024.0
        out = {}
        for key, size, count in (("w4k", 4096, args.count_4k), ("w64k", 65536, args.count_64k)):
            with CpuMeter() as meter:
                secs = ns_baseline(args, "bulk", VETH_B_IP, KPORT, size, count)["secs"]
            out[key] = size * count / secs / mib
            out[key + "_cores"] = meter.cores
        if with_small:
            secs = ns_baseline(args, "bulk", VETH_B_IP, KPORT, 64, args.count_send,
                               "nodelay")["secs"]
            out["s64"] = args.count_send / secs
            rtt = ns_baseline(args, "pingpong", VETH_B_IP, KPORT + 1, args.count_lat)
            out["slat"] = out["wlat"] = rtt["median_us"]
            out["slat_min"] = out["wlat_min"] = rtt["min_us"]
        return out
    finally:
        if server is not None:
            server.kill()
            server.wait()
        ib.sh("ip", "netns", "del", NS_A, check=False)
        ib.sh("ip", "netns", "del", NS_B, check=False)


def with_baseline(args, notes, what, runs):
    """Runs `runs(a)` with the baseline binaries (--baseline-iwarpd,
    --baseline-perf), if any, and with --iwarpd and --perf (baseline first,
    or second when args.new_first: the repeats alternate); returns (result,
    baseline result or None). A failed baseline run is a note, not an
    error."""
    if not (args.baseline_iwarpd or args.baseline_perf):
        return runs(args), None
    base_args = argparse.Namespace(**vars(args))
    base_args.iwarpd = args.baseline_iwarpd or args.iwarpd
    base_args.perf = args.baseline_perf or args.perf

    def baseline():
        try:
            return runs(base_args)
        except (aw.TestFailure, RuntimeError) as e:
            lines = [l.strip() for l in str(e).splitlines() if l.strip()]
            notes.append("%s: baseline did not run: %s" %
                         (what, " / ".join(lines[:1] + lines[-1:])))
            return None

    if args.new_first:
        mine = runs(args)
        return mine, baseline()
    prev = baseline()
    return runs(args), prev


def bw_rows(mtu, link, mine, kern, old):
    """The write_bw rows of one link at `mtu` from the run dicts (mine may
    be None: a run that failed), each goodput beside the same goodput per
    core the machine kept busy (CpuMeter)."""
    def get(d, key):
        return d.get(key) if d else None

    def per_core(d, key):
        v, c = get(d, key), get(d, key + "_cores")
        return v / c if v is not None and c else None

    rows = []
    for key, size in (("w4k", "4 KiB"), ("w64k", "64 KiB")):
        rows.append(("write_bw %s, MTU %d, %s (MiB/s)" % (size, mtu, link), get(mine, key),
                     kern[key], True, get(old, key)))
        rows.append(("  per busy core (MiB/s)", per_core(mine, key), per_core(kern, key), True,
                     per_core(old, key)))
        rows.append(("  cores busy", get(mine, key + "_cores"), kern[key + "_cores"], False,
                     get(old, key + "_cores")))
        rows.append(("  iwarpd workers' time with work (%)", get(mine, key + "_load"), None,
                     False, get(old, key + "_load")))
        for side, who in (("server", "receiving"), ("client", "sending")):
            k = key + "_load_" + side
            rows.append(("    %s (%s) (%%)" % (side, who), get(mine, k), None, False,
                         get(old, k)))
    return rows


def link_rows(args, notes, link, mtu, kern, runs):
    """write_bw rows of one link at `mtu` beside the kernel's; a run that
    fails is a row of n/a and a note with iwarp-perf's first and last line."""
    prev = None
    try:
        r, prev = with_baseline(args, notes, "MTU %d %s" % (mtu, link), runs)
        notes.append("MTU %d %s: %s" % (mtu, link, r["rtx"]))
        if prev is not None:
            notes.append("MTU %d %s baseline: %s" % (mtu, link, prev["rtx"]))
        mine = r
    except (aw.TestFailure, RuntimeError) as e:
        lines = [l.strip() for l in str(e).splitlines() if l.strip()]
        notes.append("MTU %d %s: iwarpd did not run: %s" %
                     (mtu, link, " / ".join(lines[:1] + lines[-1:])))
        mine = None
    return bw_rows(mtu, link, mine, kern, prev)


def run_all(args, links):
    """One pass over every row: (rows, notes)."""
    mtus = [int(m) for m in args.mtus.split(",")]
    rows = []
    notes = []
    for i, mtu in enumerate(mtus):
        small = i == 0
        kern = kernel_runs(args, mtu, small)
        if "memif" in links and mtu <= MEMIF_MAX_MTU:
            ours, prev = with_baseline(args, notes, "MTU %d memif" % mtu,
                                       lambda a: iwarpd_runs(a, small))
            old = prev if prev is not None else {}
            rows += bw_rows(mtu, "memif", ours, kern, prev)
            if small:
                rows += [("read_bw 64 KiB, MTU %d, memif (MiB/s; kernel: write)" % mtu,
                          ours["r64k"], kern["w64k"], True, old.get("r64k")),
                         ("send_bw 64 B, MTU %d, memif (msg/s)" % mtu, ours["s64"], kern["s64"],
                          True, old.get("s64")),
                         ("send_lat 64 B RTT median, memif (us)", ours["slat"], kern["slat"],
                          False, old.get("slat")),
                         ("send_lat 64 B RTT min, memif (us)", ours["slat_min"],
                          kern["slat_min"], False, old.get("slat_min")),
                         ("write_lat 64 B RTT median, memif (us)", ours["wlat"], kern["wlat"],
                          False, old.get("wlat")),
                         ("write_lat 64 B RTT min, memif (us)", ours["wlat_min"],
                          kern["wlat_min"], False, old.get("wlat_min")),
                         ("write_lat --poll-byte RTT median, memif (us)", ours["wlatp"],
                          kern["wlat"], False, old.get("wlatp")),
                         ("write_lat --poll-byte RTT min, memif (us)", ours["wlatp_min"],
                          kern["wlat_min"], False, old.get("wlatp_min"))]
        elif "memif" in links:
            notes.append("MTU %d: no memif rows (DPDK 22.11 net_memif carries at most 1518-byte "
                         "frames; iwarpd refuses the port at start-up)" % mtu)
        if "vhost" in links:
            rows += link_rows(args, notes, "vhost", mtu, kern,
                              lambda a: iwarpd_vhost_runs(a, mtu))
        if "vhost-tso" in links:
            rows += link_rows(args, notes, "vhost-tso", mtu, kern,
                              lambda a: iwarpd_vhost_runs(a, mtu, tso=True))
        if "pcap" in links:
            rows += link_rows(args, notes, "pcap/veth", mtu, kern,
                              lambda a: iwarpd_pcap_runs(a, mtu))
    return rows, notes


def median(values):
    """Median of the values that are not None (None if there are none)."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def median_row(rows):
    """One row per run of the same label -> the row of medians."""
    label, _, _, higher_better, _ = rows[0]
    return (label, median(r[1] for r in rows), median(r[2] for r in rows), higher_better,
            median(r[4] for r in rows))


def fmt(v, width=0):
    """A figure as the table prints it: 2 decimals below 10 (cores busy,
    round trips in us keep 1), n/a for a run that gave none."""
    if v is None:
        return "%*s" % (width, "n/a")
    return "%*.*f" % (width, 2 if abs(v) < 10 else 1, v)


def per_run(values):
    return " ".join(fmt(v) for v in values)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iwarpd", required=True)
    ap.add_argument("--iwarpctl", required=True)
    ap.add_argument("--perf", required=True)
    ap.add_argument("--tcp-baseline", default=None,
                    help="iwarp-tcp-baseline (default: next to --perf)")
    ap.add_argument("--count-4k", type=int, default=50000)
    ap.add_argument("--count-64k", type=int, default=8000)
    ap.add_argument("--count-send", type=int, default=100000)
    ap.add_argument("--count-lat", type=int, default=5000)
    ap.add_argument("--count-vhost-4k", type=int, default=None,
                    help="vhost rows' 4 KiB count (default --count-4k)")
    ap.add_argument("--count-vhost-64k", type=int, default=None,
                    help="vhost rows' 64 KiB count (default --count-64k)")
    ap.add_argument("--count-pcap-4k", type=int, default=400)
    ap.add_argument("--count-pcap-64k", type=int, default=100)
    ap.add_argument("--mtus", default="1500,9000")
    ap.add_argument("--memif-rsize", type=int, default=14, choices=range(1, 15),
                    metavar="{1..14}",
                    help="net_memif rsize of the memif rows (log2 of a ring's descriptors; "
                         "DPDK's default 10; 14 measured faster at 64 KiB, see above)")
    ap.add_argument("--links", default="memif,vhost,vhost-tso",
                    help="links for iwarpd's rows: memif (MTU 1500 only), vhost, vhost-tso, "
                         "pcap")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run every row this many times (kernel, baseline, iwarpd in turn) "
                         "and print medians, with each run's figures in the notes")
    ap.add_argument("--pin", action=argparse.BooleanOptionalAction, default=True,
                    help="one core per node (the default; --no-pin: wherever the scheduler "
                         "puts them): server-side processes on CPU 1 (the server daemon's "
                         "worker), client-side on CPU 0, iwarpd's and the kernel's")
    ap.add_argument("--depth", type=int, default=DEPTH,
                    help="bandwidth rows: iwarp-perf -q N, work requests outstanding "
                    "(default %d)" % DEPTH)
    ap.add_argument("--tcp-buffer-bytes", type=int, default=0,
                    help="both daemons' tcp.send_buffer_bytes and receive_buffer_bytes "
                    "(default: the harness's 1 MiB)")
    ap.add_argument("--max-connections", type=int, default=0,
                    help="both daemons' tcp.max_connections (default: the daemon's 256 on "
                    "memif, 32 on the vhost rows' net_virtio_user side, whose eal.memory_mb "
                    "then makes room for every slot's send buffer, which its TSO frames "
                    "reference)")
    ap.add_argument("--cq-mod", type=int, default=1,
                    help="bandwidth rows: iwarp-perf -Q N, a completion every N work requests "
                    "(default 1)")
    ap.add_argument("--delayed-ack-us", type=int, default=None,
                    help="both daemons' tcp.delayed_ack_us (default: the daemon's own, 200)")
    ap.add_argument("--idle-sleep-us", type=int, default=0,
                    help="both daemons' workers.idle_sleep_us (0: busy-poll, the default)")
    ap.add_argument("--idle-block-after-us", type=int, default=0,
                    help="the vhost rows' workers.idle_block_after_us (0: busy-poll, the "
                         "default; memif and pcap raise no receive interrupts and busy-poll)")
    ap.add_argument("--baseline-iwarpd", default=None,
                    help="also run every iwarpd row with this daemon binary, just before "
                         "--iwarpd, and print both")
    ap.add_argument("--baseline-perf", default=None,
                    help="also run every iwarpd row with this iwarp-perf (and the libiwarp "
                         "linked into it), just before --perf, and print both")
    args = ap.parse_args()
    if args.tcp_baseline is None:
        args.tcp_baseline = os.path.join(os.path.dirname(os.path.abspath(args.perf)),
                                         "iwarp-tcp-baseline")
    if not os.access(args.tcp_baseline, os.X_OK):
        print("no iwarp-tcp-baseline at %s (build it: ninja -C BUILD "
              "tools/perf/iwarp-tcp-baseline, or name it with --tcp-baseline)" % args.tcp_baseline)
        return 2
    if args.count_vhost_4k is None:
        args.count_vhost_4k = args.count_4k
    if args.count_vhost_64k is None:
        args.count_vhost_64k = args.count_64k
    links = args.links.split(",")
    if not links or any(l not in ("memif", "vhost", "vhost-tso", "pcap") for l in links):
        print("--links takes memif, vhost, vhost-tso and pcap, comma-separated: %s" % args.links)
        return 2
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, veth devices)")
        return 77
    need = max(2 * iwd.MEMORY_MB if "memif" in links else 0,
               mj.VHOST_PAIR_MB if "vhost" in links or "vhost-tso" in links else 0)
    if iwd.free_hugepage_mib() < need:
        print("SKIP: net_memif / vhost-user need %d MiB of free hugepages (%d free)" %
              (need, iwd.free_hugepage_mib()))
        return 77
    loads = []
    runs = []
    notes = []
    for rep in range(args.repeat):
        loads.append(" ".join(open("/proc/loadavg").read().split()[:3]))
        args.new_first = rep % 2 == 1
        rows, rep_notes = run_all(args, links)
        runs.append(rows)
        notes += ["run %d: %s" % (rep + 1, n) if args.repeat > 1 else n for n in rep_notes]
    rows = [median_row([r[i] for r in runs]) for i in range(len(runs[0]))]
    if args.repeat > 1:
        for i, row in enumerate(rows):
            notes.append("%s: iwarpd %s; baseline %s; kernel %s" % (
                row[0], per_run([r[i][1] for r in runs]), per_run([r[i][4] for r in runs]),
                per_run([r[i][2] for r in runs])))
    print("iWARP application QPs (iwarp-perf, two iwarpd, depth %d, a completion every %d; "
          "the link in each row) vs "
          "kernel TCP over veth at the same MTU (iwarp-tcp-baseline); load average %s%s%s%s%s" %
          (args.depth, args.cq_mod, " / ".join(loads),
           ("; tcp buffers %d bytes" % args.tcp_buffer_bytes if args.tcp_buffer_bytes
            else "; tcp buffers 1 MiB") +
           ("; tcp.max_connections %d" % args.max_connections if args.max_connections else ""),
           "; medians of %d runs" % args.repeat if args.repeat > 1 else "",
           "; --pin: server-side processes on CPU %d, client-side on CPU %d (one core per node)"
           % (SERVER_CPU, CLIENT_CPU) if args.pin else "; --no-pin: unpinned",
           "; tcp.delayed_ack_us %s" % ("%d" % args.delayed_ack_us
                                        if args.delayed_ack_us is not None
                                        else "200 (the daemon's default)")))
    with_prev = bool(args.baseline_iwarpd or args.baseline_perf)
    if with_prev:
        print("baseline: iwarpd %s, iwarp-perf %s (run just before each row, just after it in "
              "every second repeat)" % (args.baseline_iwarpd or args.iwarpd,
                                        args.baseline_perf or args.perf))
    print("%-44s %14s %16s %8s%s" % ("", "iwarpd iWARP", "kernel TCP veth", "ratio",
                                     " %16s %9s" % ("baseline", "new/base")
                                     if with_prev else ""))
    for label, mine, base, higher_better, prev in rows:
        extra = ""
        if with_prev:
            if prev is None or mine is None:
                extra = " %16s %9s" % ("n/a", "n/a")
            else:
                extra = " %s %9.2f" % (fmt(prev, 16), mine / prev if prev else float("nan"))
        if mine is None or base is None:
            print("%-44s %s %s %8s%s" % (label, fmt(mine, 14), fmt(base, 16), "n/a", extra))
            continue
        ratio = mine / base if base else float("nan")
        print("%-44s %s %s %8.2f%s%s" % (label, fmt(mine, 14), fmt(base, 16), ratio, extra,
                                         "" if higher_better else "  (lower is better)"))
    for n in notes:
        print("note: " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
