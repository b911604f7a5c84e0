#!/usr/bin/env python3
"""MTU 9000 between two iwarpd daemons, and the start-up error for an MTU a
port cannot carry.

  jumbo: two daemons, each on a net_pcap port bound to one end of a veth pair
         (MTU 9000) whose ends sit in two network namespaces the test creates
         (198.18.1.1 and 198.18.1.2). Daemon A runs iwarp_responder
         services, daemon B iwarp_client services doing RDMA Write, Read and
         Send of 64 KiB and 1 MiB messages, every byte compared by the client
         and the run's SHA-256 compared here with the one computed from the
         pattern. A capture on A's veth end (dumpcap, headers only) must show
         both SYNs announcing MSS 8960 (MTU 9000 - 40) and data segments
         that carry a full EMSS (8960, less 12 with RFC 7323 timestamps) in
         9000-byte IP packets, each starting with an MPA header whose length
         fills it: one MPA FPDU per segment, sized to the EMSS.
         The ports' ethdev counters must show frames larger than 1514 bytes
         on average.
  limit: a daemon configured with mtu 9000 on net_af_packet (DPDK 22.11
         accepts at most 1518-byte frames there) exits non-zero at start-up
         with the error naming the port, the device's limit and the fix.
  vhost: the same client runs (verified the same way) between two daemons
         joined by vhost-user at MTU 9000: net_vhost on A (the backend,
         listening on a socket the test creates), net_virtio_user on B.
         Frames are copied between the processes' hugepage memory; no kernel
         interface. Both ports must report mtu 9000 and frames larger than
         1514 bytes on average, and no chained mbuf may arrive (every frame
         in one mbuf).

  tso:   TCP segmentation offload over vhost-user at MTU 1500: net_vhost on
         A with tso=1 (offers HOST_TSO4 to the virtio side) and ext-buffer=1
         (a large frame arrives in one buffer), net_virtio_user on B with
         `tso: on`. B's verified RDMA Writes of 64 KiB and 16 MiB (and
         64 KiB Writes with MPA markers, whose FPDUs differ in length) leave
         as TSO frames: B's tso_frames_out / tso_segments_out and A's
         rx_coalesced must move, A must receive frames far larger than the
         MTU and no chained mbuf, B's frames must reference their
         segments' payload in B's TCP send buffers instead of copying it
         (tx_payload_by_reference), and A's Read responses (net_vhost offers
         no TSO: single segments) verify as well. Then the same runs with
         A's receive impairment corrupting one payload byte of one large
         frame (TCP checksum fixed up): A then checks TCP checksums itself
         (net_vhost fills them in), the MPA CRC catches the corruption and
         ends that one run with the Terminate "CRC error"; no corrupted
         byte is placed, the other runs verify.

jumbo and limit need no hugepages (net_pcap and net_af_packet run with
--no-huge); vhost needs VHOST_PAIR_MB of them (virtio-user hands its
memory to the backend by file descriptor: --in-memory --single-file-segments).

  mtu_jumbo.py CASE --iwarpd PATH --iwarpctl PATH
  CASE: jumbo | vhost | tso | limit

Exit status: 0 pass, 1 fail, 77 skip (not root, no netns, no dumpcap).
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
import iwarp_dataplane as iwd  # noqa: E402  (daemon harness, services, pattern)

from dataplane_integration import TestFailure, check, log, run  # noqa: E402

MTU = 9000
MSS = MTU - 40          # IPv4 + TCP headers (RFC 9293 3.7.1)
TS_OPTION_BYTES = 12    # RFC 7323 timestamps, padded
MIB = 1 << 20
TCP_FAST_RECOVERY = "  rto_min_us: 20000\n  rto_initial_us: 200000\n"


class VethPair:
    """Two namespaces joined by a veth pair at MTU `mtu`; the ends carry no
    kernel address (the daemons own 198.18.1.0/24) and no IPv6, so the only
    traffic on them is the daemons'."""

    def __init__(self, mtu):
        tag = "%d" % os.getpid()
        self.ns = ["iwj_a" + tag, "iwj_b" + tag]
        self.ifs = ["iwja" + tag, "iwjb" + tag]
        self.mtu = mtu
        self.created = []

    def create(self):
        for ns in self.ns:
            run(["ip", "netns", "add", ns])
            self.created.append(ns)
        run(["ip", "link", "add", self.ifs[0], "netns", self.ns[0], "mtu", str(self.mtu),
             "type", "veth", "peer", "name", self.ifs[1], "netns", self.ns[1], "mtu",
             str(self.mtu)])
        for ns, dev in zip(self.ns, self.ifs):
            run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                 "net.ipv6.conf.all.disable_ipv6=1"], check_rc=False)
            run(["ip", "netns", "exec", ns, "ip", "link", "set", dev, "up"])
            run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"])

    def delete(self):
        for ns in self.created:
            run(["ip", "netns", "del", ns], check_rc=False)
        self.created = []


class VdevPort:
    """Mixin for the daemon harnesses (iwarp_dataplane.MemifDaemon and its
    subclasses): the daemon runs in an existing namespace (use_port) on the
    port `vdev` at `mtu` instead of net_memif, without hugepages (net_pcap and
    net_af_packet need no shared memory)."""

    def use_port(self, ns, vdev, mtu):
        self.ns, self.vdev, self.mtu = ns, vdev, mtu
        self.ns_created = False  # the namespaces belong to the link

    def config_text(self):
        text = super().config_text()
        memif = '    vdev: "net_memif0,role=%s,socket=%s,socket-abstract=no"\n' % (self.role,
                                                                                 self.sock)
        check(memif in text and "  hugepages: on\n" in text,
              "the daemon harness config has the memif port and hugepages lines to replace")
        text = text.replace(memif, '    vdev: "%s"\n    mtu: %d\n' % (self.vdev, self.mtu))
        text = text.replace("  hugepages: on\n", "  hugepages: off\n")
        # 16383 mbufs of 9146 bytes (the data room follows the MTU): 150 MiB.
        return text.replace("  memory_mb: %d\n" % iwd.MEMORY_MB, "  memory_mb: 512\n")

    def launch(self):
        """Starts the daemon in its namespace (created by the caller)."""
        cfg = os.path.join(self.dir, "iwarpd.yaml")
        with open(cfg, "w") as f:
            f.write(self.config_text())
        self.logf = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, self.args.iwarpd, "--config", cfg],
            stdout=self.logf, stderr=subprocess.STDOUT)

    def start(self):
        self.launch()
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure("iwarpd %s exited %d during start-up:\n%s" %
                                  (self.prefix, self.proc.returncode, self.log()))
            if "running; SIGINT or SIGTERM stops" in self.log():
                return
            time.sleep(0.05)
        raise TestFailure("iwarpd %s did not start within 20 s:\n%s" % (self.prefix, self.log()))


class VdevDaemon(VdevPort, iwd.MemifDaemon):
    """A services daemon (iwarp_responder / iwarp_client) on a VdevPort."""

    def __init__(self, args, name, ip, ns, vdev, mtu, services, iwarp="", main_lcore=0,
                 worker_lcore=1):
        # libpcap's socket buffer (2 MiB, about 220 jumbo frames) overflows
        # now and then when a worker is descheduled; a lower minimum RTO keeps
        # the recovery of those losses short.
        super().__init__(args, name, ip, "server", "unused", services, iwarp=iwarp,
                         tcp_extra=TCP_FAST_RECOVERY, main_lcore=main_lcore,
                         worker_lcore=worker_lcore)
        self.use_port(ns, vdev, mtu)


class VhostPort:
    """Mixin for the daemon harnesses: the port is one end of a vhost-user
    link, net_vhost (the vhost-user backend, listening on `sock`) on one
    daemon and net_virtio_user (the virtio front end, connecting to it) on
    the other, at `mtu`. Frames move by memory copy between the processes;
    no kernel interface is involved. virtio-user shares its memory with the
    backend by file descriptor, so both run on hugepages with
    --single-file-segments (one file per memory list: vhost-user accepts at
    most 8 memory regions) and --in-memory (EAL refuses
    --single-file-segments beside iwarpd's --huge-unlink otherwise). Fewer mbufs than the harness default keep the
    hugepage use small (VHOST_MBUFS of 9.2 KiB: about 37 MiB). The
    net_virtio_user daemon gets VHOST_MAX_CONNECTIONS TCP slots and room in
    eal.memory_mb for their send buffers, which its TSO frames reference."""

    def use_vhost(self, vdev, mtu, port_extra=""):
        self.vdev, self.mtu, self.port_extra = vdev, mtu, port_extra

    def config_text(self):
        text = super().config_text()
        memif = '    vdev: "net_memif0,role=%s,socket=%s,socket-abstract=no"\n' % (self.role,
                                                                                 self.sock)
        check(memif in text and "  hugepages: on\n" in text and "  mbufs: 16383\n" in text,
              "the daemon harness config has the memif port, hugepages and mbufs lines")
        text = text.replace(memif, '    vdev: "%s"\n    mtu: %d\n%s' % (self.vdev, self.mtu,
                                                                      self.port_extra))
        text = text.replace("  hugepages: on\n", '  hugepages: on\n  extra_args: '
                            '["--in-memory", "--single-file-segments"]\n')
        memory = VHOST_MEMORY_MB
        if self.vdev.startswith("net_virtio_user"):
            # With TSO its frames reference their payload in the TCP send
            # buffers, allocated up front for every connection slot inside
            # eal.memory_mb: fewer slots than the daemon's 256 keep that
            # small (the daemon copies instead when they do not fit).
            conns = re.search(r"^  max_connections: (\d+)$", text, re.M)
            if conns is None:
                text = text.replace("\ntcp:\n", "\ntcp:\n  max_connections: %d\n"
                                    "  syn_backlog: %d\n" % (VHOST_MAX_CONNECTIONS,
                                                             VHOST_MAX_CONNECTIONS), 1)
            n = int(conns.group(1)) if conns else VHOST_MAX_CONNECTIONS
            sbuf = re.search(r"^  send_buffer_bytes: (\d+)$", text, re.M)
            memory += -(-n * (int(sbuf.group(1)) if sbuf else 262144) // (1 << 20)) + 1
        text = text.replace("  memory_mb: %d\n" % iwd.MEMORY_MB, "  memory_mb: %d\n" % memory)
        return text.replace("  mbufs: 16383\n", "  mbufs: %d\n  data_room: %d\n" %
                            (VHOST_MBUFS, VHOST_DATA_ROOM))


VHOST_MEMORY_MB = 96
VHOST_MAX_CONNECTIONS = 32  # net_virtio_user's daemon: see VhostPort.config_text
# Hugepages a vhost pair takes: both daemons' VHOST_MEMORY_MB, and the
# net_virtio_user side's send buffers (the harness's 1 MiB per slot).
VHOST_PAIR_MB = 2 * VHOST_MEMORY_MB + VHOST_MAX_CONNECTIONS + 1
VHOST_MBUFS = 4095
VHOST_DATA_ROOM = 9216  # headroom 128 + the largest frame (9000 + 30 on virtio)


def vhost_vdev(sock):
    return "net_vhost0,iface=%s,queues=1" % sock


def virtio_user_vdev(sock):
    # queue_size 1024 (default 256): net_vhost's transmit copies into the
    # virtio side's receive ring and has no queue of its own, so with 256
    # descriptors a burst while the receiving worker is descheduled fills the
    # ring: the vhost daemon's worker holds the frames (tx_held) and stalls,
    # and drops them (tx_ring_full) once its own hold buffer is full too.
    return "net_virtio_user0,path=%s,queues=1,queue_size=1024" % sock


class VhostDaemon(VhostPort, iwd.MemifDaemon):
    """A services daemon on one end of a vhost-user link (VhostPort), in a
    namespace of its own."""

    def __init__(self, args, name, ip, vdev, mtu, services, iwarp="", main_lcore=0,
                 worker_lcore=1, port_extra=""):
        super().__init__(args, name, ip, "server", "unused", services, iwarp=iwarp,
                         main_lcore=main_lcore, worker_lcore=worker_lcore)
        self.use_vhost(vdev, mtu, port_extra)


def pcap_vdev(iface):
    # phy_mac=1: the port takes the veth end's MAC (net_pcap's default MAC
    # is the same for every instance).
    return "net_pcap0,iface=%s,phy_mac=1" % iface


def capture_fields(path, fields, display_filter):
    r = run(["tshark", "-r", path, "-Y", display_filter, "-T", "fields"] +
            sum([["-e", f] for f in fields], []), timeout=120)
    return [line.split("\t") for line in r.stdout.splitlines() if line.strip()]


def case_jumbo(args):
    if shutil.which("dumpcap") is None or shutil.which("tshark") is None:
        log("SKIP: dumpcap/tshark not installed (apt-get install tshark)")
        sys.exit(iwd.SKIP)
    link = VethPair(MTU)
    work = tempfile.mkdtemp(prefix="iwarpd_jumbo_")
    cap_path = os.path.join(work, "a.pcapng")
    a = b = cap = None
    try:
        link.create()
        a = VdevDaemon(args, "ja", iwd.A_IP, link.ns[0], pcap_vdev(link.ifs[0]), MTU,
                       iwd.responder_services(), iwd.RESPONDER_IWARP)
        a.start()
        # Headers only (snaplen 128): the original frame length is kept.
        cap = subprocess.Popen(["ip", "netns", "exec", link.ns[0], "dumpcap", "-q", "-i",
                                link.ifs[0], "-s", "128", "-f", "tcp", "-w", cap_path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 10
        while not os.path.exists(cap_path) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        clients = [("w64k", "write", 65536, 256, 8), ("r64k", "read", 65536, 256, 8),
                   ("s64k", "send", 65536, 128, 4), ("w1m", "write", MIB, 16, 4)]
        services = "".join(iwd.client(*c) for c in clients)
        # Each daemon's worker on its own core.
        b = VdevDaemon(args, "jb", iwd.B_IP, link.ns[1], pcap_vdev(link.ifs[1]), MTU, services,
                       main_lcore=1, worker_lcore=0)
        b.start()
        deadline = time.time() + 40
        while True:
            svcs = b.services_by_name()
            if all(svcs[c[0]].get("run") in ("ok", "failed") for c in clients):
                break
            if time.time() > deadline:
                raise TestFailure("client runs did not finish in 40 s: %s" % svcs)
            time.sleep(0.2)
        for c in clients:
            iwd.check_run(svcs, *c)
        ports = {d.prefix: d.ctl_json("ports") for d in (a, b)}
        b.stop()
        a.stop()
        cap.send_signal(signal.SIGINT)
        cap.wait(timeout=10)
        cap = None

        # Frames on the wire: what each side's ethdev sent, on average.
        for d in (a, b):
            p = ports[d.prefix]
            port = p["port_0"]
            avg = port["obytes"] / max(1, port["opackets"])
            check(port["mtu"] == MTU and port["driver"] == "net_pcap" and avg > 1514,
                  "%s: port mtu %d on %s sent %d frames, %d bytes: %.0f bytes per frame" %
                  (d.prefix, port["mtu"], port["driver"], port["opackets"], port["obytes"], avg))
        # The SYN and SYN-ACK both announce MSS 8960 (RFC 9293 3.7.1).
        syns = capture_fields(cap_path, ["ip.src", "tcp.options.mss_val", "tcp.options.timestamp.tsval"],
                              "tcp.flags.syn == 1")
        check(len(syns) >= 2 * len(clients), "%d SYN/SYN-ACK segments captured" % len(syns))
        check(all(s[1] == str(MSS) for s in syns),
              "every SYN and SYN-ACK announces MSS %d: %s" % (MSS, sorted({s[1] for s in syns})))
        timestamps = all(len(s) > 2 and s[2] != "" for s in syns)
        emss = MSS - (TS_OPTION_BYTES if timestamps else 0)
        # Data segments: full segments carry exactly the EMSS in a 9000-byte
        # IP packet (one FPDU per segment, sized to the EMSS).
        data = capture_fields(cap_path, ["ip.src", "tcp.len", "ip.len", "frame.len"],
                              "tcp.len > 0")
        big = [d for d in data if int(d[3]) > 1514]
        full = [d for d in data if int(d[1]) == emss]
        by_src = {}
        for d in big:
            by_src[d[0]] = by_src.get(d[0], 0) + 1
        log("capture: %d data segments, %d in frames > 1514 bytes (%s), %d carrying the EMSS %d, "
            "largest TCP payload %d, largest IP packet %d" %
            (len(data), len(big), by_src, len(full), emss,
             max(int(d[1]) for d in data), max(int(d[2]) for d in data)))
        check(max(int(d[1]) for d in data) == emss,
              "the largest TCP payload is the EMSS %d (MSS %d%s)" %
              (emss, MSS, ", timestamps on" if timestamps else ""))
        check(max(int(d[2]) for d in data) == MTU, "the largest IP packet is %d bytes" % MTU)
        check(by_src.get(iwd.A_IP, 0) > 100 and by_src.get(iwd.B_IP, 0) > 100,
              "both daemons sent more than 100 frames larger than 1514 bytes (Read responses "
              "from A, Writes and Sends from B)")
        # One MPA FPDU per segment, sized to the EMSS (RFC 5044 5, MULPDU from
        # the EMSS): a full segment starts with the MPA header whose
        # ULPDU_LENGTH makes an FPDU (header 2 + ULPDU + pad + CRC 4) of
        # exactly the segment. The capture holds the first bytes of each
        # payload.
        fpdu = capture_fields(cap_path, ["tcp.payload"], "tcp.len == %d" % emss)
        aligned = 0
        for (payload,) in fpdu:
            raw = bytes.fromhex(payload.replace(":", ""))
            ulpdu = int.from_bytes(raw[:2], "big") if len(raw) >= 2 else -1
            if ulpdu >= 0 and (2 + ulpdu + 3) // 4 * 4 + 4 == emss:
                aligned += 1
        log("%d of %d full segments hold one FPDU of the EMSS (ULPDU_LENGTH %d)" %
            (aligned, len(fpdu), emss - 6))
        check(len(fpdu) > 0 and aligned >= 0.95 * len(fpdu),
              "full segments hold one MPA FPDU sized to the EMSS (%d of %d)" %
              (aligned, len(fpdu)))
        # 64 KiB Writes: 64 KiB / EMSS segments per message, nearly all full.
        check(len(full) > 256 * (65536 // emss),
              "%d segments carry a full EMSS (more than %d)" % (len(full), 256 * (65536 // emss)))
    except TestFailure:
        for d in (a, b):
            if d is not None:
                log("--- %s log:\n%s" % (d.prefix, d.log()[-4000:]))
                for what in ("stats", "tcp", "ports"):
                    r = run([args.iwarpctl, "--prefix", d.prefix, what], check_rc=False)
                    log(r.stdout + r.stderr)
        raise
    finally:
        if cap is not None and cap.poll() is None:
            cap.kill()
            cap.wait()
        for d in (b, a):
            if d is not None:
                d.cleanup()
        link.delete()
        shutil.rmtree(work, ignore_errors=True)


def case_vhost(args):
    """MTU 9000 over vhost-user (net_vhost on A, net_virtio_user on B):
    verified RDMA Write / Read / Send, every frame one mbuf, frames larger
    than 1514 bytes on both ports."""
    if iwd.free_hugepage_mib() < VHOST_PAIR_MB:
        log("SKIP: vhost-user needs hugepages (virtio-user shares its memory by file "
            "descriptor): %d MiB free, %d MiB needed" %
            (iwd.free_hugepage_mib(), VHOST_PAIR_MB))
        sys.exit(iwd.SKIP)
    work = tempfile.mkdtemp(prefix="iwarpd_vhost_")
    sock = os.path.join(work, "vhost.sock")
    a = b = None
    try:
        a = VhostDaemon(args, "va", iwd.A_IP, vhost_vdev(sock), MTU, iwd.responder_services(),
                        iwd.RESPONDER_IWARP)
        a.start()
        clients = [("w64k", "write", 65536, 256, 8), ("r64k", "read", 65536, 256, 8),
                   ("s64k", "send", 65536, 128, 4), ("w1m", "write", MIB, 16, 4)]
        services = "".join(iwd.client(*c) for c in clients)
        b = VhostDaemon(args, "vb", iwd.B_IP, virtio_user_vdev(sock), MTU, services,
                        main_lcore=1, worker_lcore=0)
        b.start()
        deadline = time.time() + 40
        while True:
            svcs = b.services_by_name()
            if all(svcs[c[0]].get("run") in ("ok", "failed") for c in clients):
                break
            if time.time() > deadline:
                raise TestFailure("client runs did not finish in 40 s: %s" % svcs)
            time.sleep(0.2)
        for c in clients:
            iwd.check_run(svcs, *c)
        ports = {d.prefix: d.ctl_json("ports") for d in (a, b)}
        totals = {d.prefix: d.totals() for d in (a, b)}
        for d in (a, b):
            tcp = d.ctl_json("tcp")["total"]
            reasons = {k: v for k, v in totals[d.prefix].items()
                       if k.startswith("drop_") and v}
            log("%s: %d drops %s; TCP %d segments out, %d retransmitted, %d timeouts" %
                (d.prefix, totals[d.prefix]["drops"], reasons, tcp["segments_out"],
                 tcp["retransmitted_segments"], tcp["timeouts"]))
        b.stop()
        a.stop()
        for d, driver in ((a, "net_vhost"), (b, "net_virtio_user")):
            port = ports[d.prefix]["port_0"]
            avg = port["obytes"] / max(1, port["opackets"])
            check(port["mtu"] == MTU and port["driver"] == driver and avg > 1514,
                  "%s: port mtu %d on %s sent %d frames, %d bytes: %.0f bytes per frame" %
                  (d.prefix, port["mtu"], port["driver"], port["opackets"], port["obytes"], avg))
            key = "drop_rx_multi_segment"
            check(key in totals[d.prefix], "%s: stats name %s" % (d.prefix, key))
            multi = totals[d.prefix][key]
            check(multi == 0, "%s: no chained (multi-segment) mbufs received (%d)" %
                  (d.prefix, multi))
    except TestFailure:
        for d in (a, b):
            if d is not None:
                log("--- %s log:\n%s" % (d.prefix, d.log()[-4000:]))
                for what in ("stats", "tcp", "ports"):
                    r = run([args.iwarpctl, "--prefix", d.prefix, what], check_rc=False)
                    log(r.stdout + r.stderr)
        raise
    finally:
        for d in (b, a):
            if d is not None:
                d.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def tso_vhost_vdev(sock):
    # tso=1: the backend offers HOST_TSO4/6, so the virtio side may hand it
    # TSO frames; ext-buffer=1: such a frame is dequeued into one external
    # buffer (without it, a chain of mbufs, which the worker does not take).
    return "net_vhost0,iface=%s,queues=1,tso=1,ext-buffer=1" % sock


TSO_MTU = 1500


def case_tso(args):
    """TSO over vhost-user at MTU 1500 (see the module comment)."""
    if iwd.free_hugepage_mib() < VHOST_PAIR_MB:
        log("SKIP: vhost-user needs hugepages (virtio-user shares its memory by file "
            "descriptor): %d MiB free, %d MiB needed" %
            (iwd.free_hugepage_mib(), VHOST_PAIR_MB))
        sys.exit(iwd.SKIP)
    clients = [("w64k", "write", 65536, 256, 8), ("w16m", "write", 16 * MIB, 2, 1),
               ("r64k", "read", 65536, 64, 8)]
    markers = ("wm64k", "write", 65536, 64, 8)
    services = "".join(iwd.client(*c) for c in clients)
    services += iwd.client(*markers, port=iwd.PORT_MARKERS, markers=True)
    clients.append(markers)
    for impaired in (False, True):
        work = tempfile.mkdtemp(prefix="iwarpd_tso_")
        sock = os.path.join(work, "vhost.sock")
        a = b = None
        try:
            a_extra = ""
            if impaired:
                # One payload byte of the 20th data frame A receives on the
                # CRC port (a coalesced frame), the TCP checksum fixed up:
                # only the MPA CRC can catch it.
                a_extra = ("    impairment:\n      rx:\n"
                           "        - {action: corrupt, protocol: tcp, port: %d,"
                           " min_payload: 1000, first: 20, last: 20, checksum: fixed}\n"
                           % iwd.PORT_CRC)
            a = VhostDaemon(args, "ta", iwd.A_IP, tso_vhost_vdev(sock), TSO_MTU,
                            iwd.responder_services(), iwd.RESPONDER_IWARP, port_extra=a_extra)
            a.start()
            b = VhostDaemon(args, "tb", iwd.B_IP, virtio_user_vdev(sock), TSO_MTU, services,
                            main_lcore=1, worker_lcore=0, port_extra="    tso: on\n")
            b.start()
            deadline = time.time() + 50
            while True:
                svcs = b.services_by_name()
                if all(svcs[c[0]].get("run") in ("ok", "failed") for c in clients):
                    break
                if time.time() > deadline:
                    raise TestFailure("client runs did not finish in 50 s: %s" % svcs)
                time.sleep(0.2)
            totals = {d.prefix: d.totals() for d in (a, b)}
            ports = {d.prefix: d.ctl_json("ports") for d in (a, b)}
            for d in (a, b):
                t = totals[d.prefix]
                reasons = {k: v for k, v in t.items() if k.startswith("drop_") and v}
                log("%s: tso_frames_out %d, tso_segments_out %d, rx_coalesced %d, rx %d frames "
                    "%d bytes; drops %s" % (d.prefix, t["tso_frames_out"], t["tso_segments_out"],
                                            t["rx_coalesced"], t["rx_packets"], t["rx_bytes"],
                                            reasons))
            ta, tb = totals[a.prefix], totals[b.prefix]
            if not impaired:
                for c in clients:
                    iwd.check_run(svcs, *c)
            else:
                # RFC 5044 8: the responder ends that connection with the LLP
                # Terminate "CRC error" (layer 2, code 2); the others finish.
                failed = [c for c in clients if svcs[c[0]]["run"] != "ok"]
                check(ta["impair_corrupted_fixed"] == 1,
                      "A's impairment corrupted %d frame" % ta["impair_corrupted_fixed"])
                check(all(svcs[c[0]]["verify_failures"] == 0 for c in clients),
                      "no corrupted byte reached a verified buffer: %s" %
                      {c[0]: svcs[c[0]]["verify_failures"] for c in clients})
                check(len(failed) == 1 and
                      svcs[failed[0][0]]["last_terminate_received"] == "layer 2 etype 0 code 2",
                      "exactly one run ended, with the Terminate 'CRC error': %s" %
                      {c[0]: (svcs[c[0]]["run"], svcs[c[0]]["last_terminate_received"])
                       for c in failed})
                for c in clients:
                    if c not in failed:
                        iwd.check_run(svcs, *c)
            check(tb["tso_frames_out"] > 0 and tb["tso_segments_out"] > 2 * tb["tso_frames_out"],
                  "B sent %d TSO frames carrying %d segments" %
                  (tb["tso_frames_out"], tb["tso_segments_out"]))
            # net_virtio_user reads the segments' payload from B's TCP send
            # buffers (in DPDK memory) instead of a copy. A lower bound: the
            # appended segments but a short last one per frame (>= 1000
            # bytes each); first segments go by reference too, and a piece
            # that wraps around its send buffer is copied.
            appended = tb["tso_segments_out"] - 2 * tb["tso_frames_out"]
            check(tb["tx_payload_by_reference"] >= 1000 * appended,
                  "B's TSO frames referenced %d payload bytes in its send buffers (%d appended "
                  "full segments)" % (tb["tx_payload_by_reference"], appended))
            check(ta["rx_coalesced"] > 0, "A received %d coalesced frames" % ta["rx_coalesced"])
            check(ta["drop_rx_multi_segment"] == 0 and ta.get("drop_ipv4_over_mtu", 0) == 0,
                  "A: no chained mbufs (%d) and no over-MTU drops (%d)" %
                  (ta["drop_rx_multi_segment"], ta.get("drop_ipv4_over_mtu", 0)))
            avg = ta["rx_bytes"] / max(1, ta["rx_packets"])
            check(avg > 4 * TSO_MTU, "A received %.0f bytes per frame on average (MTU %d)" %
                  (avg, TSO_MTU))
            check(ports[a.prefix]["port_0"]["mtu"] == TSO_MTU, "A's port runs at MTU %d" % TSO_MTU)
            b.stop()
            a.stop()
        except TestFailure:
            for d in (a, b):
                if d is not None:
                    log("--- %s log:\n%s" % (d.prefix, d.log()[-4000:]))
                    for what in ("stats", "tcp", "ports"):
                        r = run([args.iwarpctl, "--prefix", d.prefix, what], check_rc=False)
                        log(r.stdout + r.stderr)
            raise
        finally:
            for d in (b, a):
                if d is not None:
                    d.cleanup()
            shutil.rmtree(work, ignore_errors=True)


def case_limit(args):
    link = VethPair(MTU)
    d = None
    try:
        link.create()
        d = VdevDaemon(args, "jl", iwd.A_IP, link.ns[0], "net_af_packet0,iface=%s" % link.ifs[0],
                       MTU, "")
        d.launch()
        try:
            rc = d.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            raise TestFailure("iwarpd with mtu 9000 on net_af_packet did not exit:\n%s" % d.log())
        out = d.log()
        sys.stdout.write(out)
        check(rc != 0, "iwarpd exits non-zero (%d)" % rc)
        want = ("port 'm0' (net_af_packet): mtu 9000 needs 9018-byte frames but net_af_packet "
                "accepts at most 1518 (mtu 1500); lower ports[].mtu to 1500 or use a device "
                "that carries jumbo frames")
        check(want in out, "the error names the port, the device's limit and the fix")
        check("rte_eth_dev_configure" not in out,
              "the port was refused before rte_eth_dev_configure")
    finally:
        if d is not None:
            d.cleanup()
        link.delete()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=["jumbo", "vhost", "tso", "limit"])
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    iwd.dpi.skip_unless_possible()
    try:
        {"jumbo": case_jumbo, "vhost": case_vhost, "tso": case_tso,
         "limit": case_limit}[args.case](args)
    except TestFailure as e:
        log("FAIL: %s" % e)
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
