#!/usr/bin/env python3
"""Integration tests for iwarpd's data-plane skeleton and iwarpctl.

Each case starts iwarpd with a net_tap port inside a private network namespace
it creates (addresses from 198.18.0.0/15 only), drives it from the kernel side
of the TAP, reads the daemon's counters with `iwarpctl --json` and checks them
exactly. Every case uses its own namespace and EAL file prefix and removes
them, and kills only the processes it started, even when it fails.

  dataplane_integration.py CASE --iwarpd PATH --iwarpctl PATH --source-root DIR
  CASE: ping | udp_echo | malformed | shutdown | check_config | idle_block

Exit status: 0 pass, 1 fail, 77 skip (not root, no network namespaces).
"""

import argparse
import glob
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77
OUR_IP = "198.18.0.1"
PEER_IP = "198.18.0.2"
IFACE = "iw0"


class TestFailure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)
    log("ok: " + msg)


def run(cmd, check_rc=True, timeout=30, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check_rc and r.returncode != 0:
        raise TestFailure("%s exited %d: %s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def skip_unless_possible():
    if os.geteuid() != 0:
        log("SKIP: needs root (network namespaces, TAP devices, raw sockets)")
        sys.exit(SKIP)
    if shutil.which("ip") is None:
        log("SKIP: iproute2 'ip' not installed")
        sys.exit(SKIP)


# --- frames for the malformed-input case (built by hand, RFC 791 layout) ---

def inet_checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(":"))


def ipv4_packet(src, dst, payload, version_ihl=0x45, flags_frag=0x4000, total_len=None,
                bad_checksum=False, options=b""):
    ihl_bytes = 20 + len(options)
    tl = total_len if total_len is not None else ihl_bytes + len(payload)
    hdr = struct.pack("!BBHHHBBH4s4s", version_ihl, 0, tl, 0x4242, flags_frag, 64, 1, 0,
                      socket.inet_aton(src), socket.inet_aton(dst)) + options
    c = inet_checksum(hdr)
    if bad_checksum:
        c ^= 0x5A5A
    hdr = hdr[:10] + struct.pack("!H", c) + hdr[12:]
    return hdr + payload


def icmp_echo(ident, seq, payload=b"iwarpd-integration"):
    msg = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + payload
    return msg[:2] + struct.pack("!H", inet_checksum(msg)) + msg[4:]


def malformed_frames(dst_mac, src_mac):
    """(drop reason, count, frame) triples; counts differ so that a frame
    counted under the wrong reason cannot go unnoticed."""
    eth = mac_bytes(dst_mac) + mac_bytes(src_mac) + b"\x08\x00"
    echo = icmp_echo(0x7777, 1)
    good = ipv4_packet(PEER_IP, OUR_IP, echo)
    other_mac = b"\x02\x00\x00\x00\x00\x99" + mac_bytes(src_mac) + b"\x08\x00"
    arp_hdr = mac_bytes(dst_mac) + mac_bytes(src_mac) + b"\x08\x06"
    return [
        ("ipv4_truncated", 3, eth + good[:12]),
        ("ipv4_truncated", 2, eth + good[:-4]),  # total length beyond the frame
        ("ipv4_bad_checksum", 5, eth + ipv4_packet(PEER_IP, OUR_IP, echo, bad_checksum=True)),
        ("ipv4_bad_version", 7, eth + ipv4_packet(PEER_IP, OUR_IP, echo, version_ihl=0x65)),
        ("ipv4_fragment", 4, eth + ipv4_packet(PEER_IP, OUR_IP, echo, flags_frag=0x2000)),
        ("ipv4_fragment", 2, eth + ipv4_packet(PEER_IP, OUR_IP, echo, flags_frag=0x0010)),
        ("ipv4_bad_ihl", 6, eth + ipv4_packet(PEER_IP, OUR_IP, echo, version_ihl=0x44)),
        ("ipv4_bad_ihl", 3, eth + ipv4_packet(PEER_IP, OUR_IP, echo[:12], version_ihl=0x4F,
                                              total_len=32, options=b"\x01" * 40)),
        ("icmp_bad_checksum", 2, eth + ipv4_packet(PEER_IP, OUR_IP,
                                                   echo[:2] + b"\0\0" + echo[4:])),
        ("eth_not_for_us", 8, other_mac + good),
        ("arp_truncated", 9, arp_hdr + b"\x00\x01\x08\x00\x06\x04\x00\x01"),
    ]


def inject(iface, dst_mac, src_mac, repeat):
    """Runs inside the namespace: sends every malformed frame `count` times."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    sent = 0
    for _ in range(repeat):
        for _reason, count, frame in malformed_frames(dst_mac, src_mac):
            for _ in range(count):
                s.send(frame)
                sent += 1
                time.sleep(0.001)
    s.close()
    print(sent)


# --- daemon under test ------------------------------------------------------

class Daemon:
    def __init__(self, args, name, hugepages="off", memory_mb=128,
                 idle="  idle_sleep_us: 100\n", extra=""):
        tag = "%s%d" % (name, os.getpid())
        self.args = args
        self.ns = "iwt_" + tag
        self.prefix = "iwt_" + tag
        self.hugepages = hugepages
        self.memory_mb = memory_mb
        self.idle = idle
        self.extra = extra
        self.dir = tempfile.mkdtemp(prefix="iwarpd_it_")
        self.log_path = os.path.join(self.dir, "iwarpd.log")
        self.proc = None
        self.ns_created = False
        self.mac = None

    def config_text(self):
        return """version: 1
eal:
  main_lcore: 0
  memory_mb: %d
  hugepages: %s
  file_prefix: %s
ports:
  - name: tap0
    vdev: "net_tap0,iface=%s"
interfaces:
  - port: tap0
    ipv4: %s/24
workers:
  lcores: [1]
%smempools:
  mbufs: 4095
%s""" % (self.memory_mb, self.hugepages, self.prefix, IFACE, OUR_IP, self.idle, self.extra)

    def ns_run(self, *cmd, **kw):
        return run(["ip", "netns", "exec", self.ns] + list(cmd), **kw)

    def start(self):
        run(["ip", "netns", "add", self.ns])
        self.ns_created = True
        # Keep the namespace quiet: no IPv6 (router and neighbour
        # solicitations would be counted as unknown EtherType).
        self.ns_run("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1")
        cfg = os.path.join(self.dir, "iwarpd.yaml")
        with open(cfg, "w") as f:
            f.write(self.config_text())
        self.logf = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, self.args.iwarpd, "--config", cfg],
            stdout=self.logf, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure("iwarpd exited %d during start-up:\n%s" %
                                  (self.proc.returncode, self.log()))
            if "running; SIGINT or SIGTERM stops" in self.log():
                break
            time.sleep(0.05)
        else:
            raise TestFailure("iwarpd did not start within 20 s:\n" + self.log())
        # A long reachable time, so that the kernel ARPs exactly once per case.
        self.ns_run("sysctl", "-qw", "net.ipv4.neigh.%s.base_reachable_time_ms=600000" % IFACE)
        self.ns_run("ip", "addr", "add", PEER_IP + "/24", "dev", IFACE)
        self.ns_run("ip", "link", "set", IFACE, "up")
        ports = self.ctl_json("ports")["/iwarpd/ports"]
        self.mac = ports["port_%d" % ports["port_ids"][0]]["mac"]
        self.peer_mac = self.ns_run("cat", "/sys/class/net/%s/address" % IFACE).stdout.strip()
        log("iwarpd up: prefix %s, namespace %s, mac %s" % (self.prefix, self.ns, self.mac))

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def ctl(self, *cmd, check_rc=True):
        return run([self.args.iwarpctl, "--prefix", self.prefix] + list(cmd), check_rc=check_rc)

    def ctl_json(self, what):
        return json.loads(self.ctl("--json", what).stdout)

    def totals(self):
        return self.ctl_json("stats")["/iwarpd/stats"]["total"]

    def wait_counters(self, want, timeout=5.0):
        """Polls until every counter in `want` has its value (the worker may
        still be handling the last frames); returns the last totals."""
        deadline = time.time() + timeout
        while True:
            t = self.totals()
            if all(t.get(k) == v for k, v in want.items()) or time.time() > deadline:
                return t
            time.sleep(0.1)

    def stop(self, sig=signal.SIGTERM, timeout=2.0):
        """Signals the daemon; returns (exit status, seconds to exit)."""
        start = time.monotonic()
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None, time.monotonic() - start
        return rc, time.monotonic() - start

    def sanitizer_reports(self):
        """Lines in which ASan/UBSan/LSan reported a problem (sanitizer builds)."""
        return [l for l in self.log().splitlines()
                if "runtime error:" in l or "Sanitizer" in l]

    def hugepage_files(self):
        return glob.glob("/dev/hugepages/%smap_*" % self.prefix) + \
            glob.glob("/dev/hugepages/%s*" % self.prefix)

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.ns_created:
            run(["ip", "netns", "del", self.ns], check_rc=False)
        for f in self.hugepage_files():
            try:
                os.unlink(f)
            except OSError:
                pass
        shutil.rmtree("/var/run/dpdk/" + self.prefix, ignore_errors=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def ping(d, count, interval="0.01"):
    r = d.ns_run("ping", "-c", str(count), "-i", interval, "-W", "1", OUR_IP, check_rc=False,
                 timeout=60)
    return r


def received(ping_result):
    for line in ping_result.stdout.splitlines():
        if "packets transmitted" in line:
            return int(line.split(",")[1].split()[0])
    return -1


# --- cases -------------------------------------------------------------------

def case_ping(args):
    d = Daemon(args, "p")
    try:
        d.start()
        before = d.totals()
        check(before["rx_packets"] == 0 and before["drops"] == 0,
              "fresh daemon has counted nothing (rx %d, drops %d)" %
              (before["rx_packets"], before["drops"]))
        t0 = time.monotonic()
        r = ping(d, 100)
        wall_us = (time.monotonic() - t0) * 1e6
        check(received(r) == 100, "ping -c 100 -i 0.01 got 100 replies (%s)" %
              r.stdout.strip().splitlines()[-2:])
        # The worker's own load: it polled the whole time (top: 100%), but
        # only the polls that found an echo request or the ARP did work.
        after = d.totals()
        poll = after["poll_us"] - before["poll_us"]
        busy = after["busy_us"] - before["busy_us"]
        log("worker loop: %d us polled, %d us of it with work, in %d us of ping" %
            (poll, busy, wall_us))
        check(0.5 * wall_us <= poll <= wall_us + 200000,
              "poll_us grew with the wall clock (%d us in %d us)" % (poll, wall_us))
        check(0 < busy < 0.3 * poll,
              "busy_us: the polls with work are a small part (%d of %d us)" % (busy, poll))
        neigh = d.ns_run("ip", "neigh", "show", OUR_IP, "dev", IFACE).stdout
        check(d.mac in neigh and "FAILED" not in neigh and "INCOMPLETE" not in neigh,
              "kernel resolved iwarpd's MAC %s (ip neigh: %s)" % (d.mac, neigh.strip()))
        t = d.wait_counters({"icmp_echo_replies_out": 100})
        exact = {"arp_requests_in": 1, "arp_replies_out": 1, "arp_requests_out": 0,
                 "arp_replies_in": 0, "icmp_echo_requests_in": 100,
                 "icmp_echo_replies_out": 100, "rx_packets": 101, "tx_packets": 101,
                 "drops": 0}
        for k, v in exact.items():
            check(t[k] == v, "stats %s == %d (got %d)" % (k, v, t[k]))
        # 42-byte ARP + 100 echo requests of 14+20+8+56 bytes, both directions.
        check(t["rx_bytes"] == 42 + 100 * 98 and t["tx_bytes"] == 42 + 100 * 98,
              "rx/tx bytes are 42 + 100 * 98 (got %d / %d)" % (t["rx_bytes"], t["tx_bytes"]))
        text = d.ctl("stats").stdout
        check("lcore 1" in text and "icmp_echo_replies_out" in text and "total" in text,
              "iwarpctl stats prints a per-lcore table:\n" + text)
        ports = d.ctl("ports").stdout
        check(d.mac in ports and OUR_IP + "/24" in ports and "link up" in ports,
              "iwarpctl ports shows MAC, address and link:\n" + ports)
        rc, secs = d.stop(signal.SIGINT)
        check(rc == 0 and secs < 2.0, "SIGINT: exit %s after %.2f s" % (rc, secs))
        check(not d.sanitizer_reports(), "no sanitizer reports %s" % d.sanitizer_reports())
    finally:
        d.cleanup()


UDP_ECHO_CLIENT = r'''
import socket, sys
ip = sys.argv[1]
got = 0
sizes = [0, 1, 7, 100, 1000, 1472] * 5
for no_check in (0, 1):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 11, no_check)  # SO_NO_CHECK: a zero UDP checksum
    s.settimeout(1.0)
    for i, n in enumerate(sizes):
        msg = bytes((i * 31 + k) % 256 for k in range(n))
        s.sendto(msg, (ip, 7))
        try:
            data, peer = s.recvfrom(2048)
        except socket.timeout:
            continue
        if data == msg and peer == (ip, 7):
            got += 1
    # Nothing serves port 9: no answer.
    s.sendto(b"discard me", (ip, 9))
    s.settimeout(0.3)
    try:
        s.recvfrom(2048)
        got = -1000
    except socket.timeout:
        pass
    s.close()
print(got)
'''


def case_udp_echo(args):
    # RFC 862 echo (udp_echo: port 7): the kernel's UDP sends datagrams of 0 to
    # 1472 bytes, with and without a checksum, and accepts the echoes only if
    # their checksums are right; port 9 is not served.
    d = Daemon(args, "u", extra="udp_echo:\n  port: 7\n")
    try:
        d.start()
        r = d.ns_run("python3", "-c", UDP_ECHO_CLIENT, OUR_IP, check_rc=False, timeout=60)
        got = int(r.stdout.strip() or "-1")
        check(got == 60, "60 of 60 datagrams echoed back intact, none from port 9 (got %d; %s)" %
              (got, r.stderr.strip()[-300:]))
        t = d.wait_counters({"udp_echoes_out": 60})
        check(t["udp_echoes_out"] == 60, "udp_echoes_out == 60 (got %d)" % t["udp_echoes_out"])
        check(t.get("drop_udp_no_service", 0) == 2,
              "the two datagrams to port 9 counted as udp_no_service (%s)" %
              t.get("drop_udp_no_service"))
    finally:
        d.cleanup()


def cpu_seconds(pid):
    """User + system CPU time of every thread of `pid` so far."""
    ticks = 0
    for stat in glob.glob("/proc/%d/task/*/stat" % pid):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a thread that just ended
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def rtts_ms(ping_result):
    return [float(l.split("time=")[1].split()[0]) for l in ping_result.stdout.splitlines()
            if "time=" in l]


def case_idle_block(args):
    """workers.idle_block_after_us: an idle worker blocks instead of
    busy-polling, and a frame wakes it at once (its receive interrupt), not
    at the end of the block's timeout."""
    d = Daemon(args, "b", idle="  idle_block_after_us: 200\n")
    try:
        d.start()
        time.sleep(0.5)
        cpu0, t0 = cpu_seconds(d.proc.pid), time.monotonic()
        blocks0 = d.totals()["idle_blocks"]
        time.sleep(2.0)
        used = (cpu_seconds(d.proc.pid) - cpu0) / (time.monotonic() - t0)
        blocks = d.totals()["idle_blocks"] - blocks0
        log("idle: %.3f cores busy, %d blocks in 2 s" % (used, blocks))
        # Busy polling keeps the worker's core at 1.0; blocked, it wakes at
        # most every 10 ms (workers.idle_block_max_ms, default 10) and the
        # control thread sleeps.
        check(used < 0.25, "idle daemon uses %.3f cores (< 0.25; busy polling: ~1)" % used)
        check(blocks >= 20, "the worker blocked %d times in 2 s" % blocks)
        # Each echo request finds the worker blocked (200 ms apart): the
        # reply comes from its receive interrupt. Woken only by the timeout,
        # replies would wait 5 ms on average (up to 10).
        before = d.totals()["idle_blocks"]
        r = ping(d, 20, interval="0.2")
        check(received(r) == 20, "20 echo requests 200 ms apart got 20 replies (%s)" %
              r.stdout.strip().splitlines()[-2:])
        rtts = sorted(rtts_ms(r))
        median = rtts[len(rtts) // 2]
        log("round trips (ms): %s" % " ".join("%.3f" % x for x in rtts))
        check(median < 2.5, "median round trip %.3f ms to a blocked worker (< 2.5 ms)" % median)
        check(d.totals()["idle_blocks"] - before >= 20,
              "the worker blocked between the echo requests")
        rc, secs = d.stop(signal.SIGTERM)
        check(rc == 0 and secs < 2.0, "SIGTERM stops a blocked worker: exit %s after %.2f s" %
              (rc, secs))
        check(not d.sanitizer_reports(), "no sanitizer reports %s" % d.sanitizer_reports())
    finally:
        d.cleanup()


def case_malformed(args):
    d = Daemon(args, "m")
    try:
        d.start()
        expected = {}
        for reason, count, _ in malformed_frames(d.mac, d.peer_mac):
            expected[reason] = expected.get(reason, 0) + count * 2
        pinger = subprocess.Popen(
            ["ip", "netns", "exec", d.ns, "ping", "-c", "100", "-i", "0.01", "-W", "1", OUR_IP],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            inj = d.ns_run(sys.executable, os.path.abspath(__file__), "inject", "--iface", IFACE,
                           "--dst-mac", d.mac, "--src-mac", d.peer_mac, "--repeat", "2",
                           timeout=40)
            out, _ = pinger.communicate(timeout=40)
        finally:
            if pinger.poll() is None:
                pinger.kill()
                pinger.wait()
        sent = int(inj.stdout.strip())
        check(sent == sum(expected.values()), "injected %d malformed frames" % sent)
        got = 0
        for line in out.splitlines():
            if "packets transmitted" in line:
                got = int(line.split(",")[1].split()[0])
        check(got == 100, "concurrent ping got all 100 replies (%d)" % got)
        want = {"drop_" + k: v for k, v in expected.items()}
        t = d.wait_counters(want)
        for k, v in sorted(want.items()):
            check(t[k] == v, "%s == %d (got %d)" % (k, v, t[k]))
        check(t["drops"] == sum(expected.values()),
              "no other drops: total %d == %d injected" % (t["drops"], sum(expected.values())))
        check(t["icmp_echo_replies_out"] == 100 and t["arp_replies_out"] == 1,
              "echo replies 100, ARP replies 1 (got %d, %d)" %
              (t["icmp_echo_replies_out"], t["arp_replies_out"]))
        text = d.ctl("stats").stdout
        for k in expected:
            check(("  " + k) in text, "iwarpctl stats names drop reason %s" % k)
        rc, secs = d.stop(signal.SIGTERM)
        check(rc == 0, "SIGTERM: exit %s after %.2f s" % (rc, secs))
        check(not d.sanitizer_reports(), "no sanitizer reports %s" % d.sanitizer_reports())
    finally:
        d.cleanup()


def free_hugepage_mib():
    try:
        info = dict(line.split(":", 1) for line in open("/proc/meminfo"))
        mounted = any(l.split()[2] == "hugetlbfs" for l in open("/proc/mounts"))
        if not mounted:
            return 0
        return int(info["HugePages_Free"].split()[0]) * int(info["Hugepagesize"].split()[0]) // 1024
    except (OSError, KeyError, ValueError, IndexError):
        return 0


def case_shutdown(args):
    memory = 64
    d = Daemon(args, "s", hugepages="auto", memory_mb=memory)
    try:
        free = free_hugepage_mib()
        d.start()
        uses_huge = "using hugepages" in d.log()
        log("hugepage decision: " + next(
            (l for l in d.log().splitlines() if "hugepages:" in l), "?"))
        if free >= memory + 16:
            check(uses_huge, "with %d MiB of free hugepages, auto chose hugepages" % free)
        r = ping(d, 5, "0.05")
        check(received(r) == 5, "ping works before shutdown")
        rc, secs = d.stop(signal.SIGTERM)
        check(rc == 0, "SIGTERM: exit status 0 (got %s)" % rc)
        check(secs < 2.0, "SIGTERM: exited within 2 s (%.2f s)" % secs)
        check("stopped cleanly" in d.log(), "log reports a clean stop")
        check(not d.sanitizer_reports(), "no sanitizer reports %s" % d.sanitizer_reports())
        if uses_huge:
            left = d.hugepage_files()
            check(not left, "no hugepage files with prefix %s left (%s)" % (d.prefix, left))
        else:
            log("note: hugepages not used here (%d MiB free), no hugepage files to check" % free)
        gone = d.ctl("stats", check_rc=False)
        check(gone.returncode == 1 and "not running" in gone.stderr,
              "iwarpctl after shutdown: clear error (%s)" % gone.stderr.strip())
    finally:
        d.cleanup()


def case_check_config(args):
    examples = sorted(glob.glob(os.path.join(args.source_root, "config", "examples", "*.yaml")))
    check(len(examples) > 0, "found %d example configs" % len(examples))
    for ex in examples:
        r = run([args.iwarpd, "--check-config", ex], check_rc=False)
        check(r.returncode == 0, "--check-config %s exits 0 (%d: %s)" %
              (os.path.basename(ex), r.returncode, r.stderr.strip()))
        pci = "pci:" in open(ex).read()
        check("--file-prefix" in r.stdout and ((" -a " in r.stdout) if pci else
                                               ("--no-pci" in r.stdout)),
              "%s: EAL arguments printed (%s)" % (os.path.basename(ex),
                                                  "-a for its PCI port" if pci else "--no-pci"))
    tmp = tempfile.mkdtemp(prefix="iwarpd_cc_")
    try:
        broken = os.path.join(tmp, "broken.yaml")
        with open(broken, "w") as f:
            f.write("version: 1\nports:\n  - name: tap0\n    vdev: net_tap0\n"
                    "workers:\n  lcores: [1]\n  bursty: 3\n")
        r = run([args.iwarpd, "--check-config", broken], check_rc=False)
        check(r.returncode == 1, "--check-config on a broken file exits 1 (got %d)" % r.returncode)
        check("broken.yaml:" in r.stderr and "bursty" in r.stderr,
              "the error names the file and the key: " + r.stderr.strip())
        r = run([args.iwarpd, "--check-config", os.path.join(tmp, "missing.yaml")], check_rc=False)
        check(r.returncode == 1, "--check-config on a missing file exits 1")
        r = run([args.iwarpd, "--bogus"], check_rc=False)
        check(r.returncode == 2 and "usage" in r.stderr, "unknown option: usage, exit 2")
        r = run([args.iwarpd, "--version"])
        check(r.stdout.startswith("iwarpd "), "--version: " + r.stdout.strip())
        r = run([args.iwarpctl, "--prefix", "iwt_absent%d" % os.getpid(), "stats"], check_rc=False)
        check(r.returncode == 1 and "not running" in r.stderr,
              "iwarpctl without a daemon: exit 1, " + r.stderr.strip())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


CASES = {"udp_echo": case_udp_echo, "ping": case_ping, "malformed": case_malformed, "shutdown": case_shutdown,
         "check_config": case_check_config, "idle_block": case_idle_block}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=sorted(CASES) + ["inject"])
    p.add_argument("--iwarpd")
    p.add_argument("--iwarpctl")
    p.add_argument("--source-root")
    p.add_argument("--iface")
    p.add_argument("--dst-mac")
    p.add_argument("--src-mac")
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    if args.case == "inject":
        inject(args.iface, args.dst_mac, args.src_mac, args.repeat)
        return 0
    if args.case != "check_config":
        skip_unless_possible()
    # meson's timeout sends SIGTERM: turn it into an exception so that the
    # case's cleanup runs.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    try:
        CASES[args.case](args)
    except TestFailure as e:
        log("FAIL: %s" % e)
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
