#!/usr/bin/env python3
"""iWARP between two iwarpd daemons: the iwarp_responder and iwarp_client
services (dataplane/services/iwarp_services.h) moving RDMA Write, Read and
Send traffic over net_memif, and the responder's MPA listener against a
kernel TCP client over net_tap.

Daemon A runs iwarp_responder services, daemon B iwarp_client services; the
two are joined by a net_memif pair (each daemon its own --file-prefix, so
hugepages are needed: memif does not work with --no-shconf). Each daemon runs
inside a network namespace the test creates; addresses are 198.18.1.1 (A)
and 198.18.1.2 (B). Every run is verified by the client itself (Write then
Read back, Send echoed, compared byte for byte) and by the test: the run's
SHA-256 (iwarpctl --json services) must equal the one computed here from the
pattern, and the negotiated MPA parameters are read from iwarpctl --json qps.

  iwarp_dataplane.py CASE --iwarpd PATH --iwarpctl PATH
  CASE: sizes | crc_markers | impair | corrupt | kernel_mpa

Exit status: 0 pass, 1 fail, 77 skip (not root, no hugepages, no netns).
"""

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dataplane_integration as dpi  # noqa: E402  (TAP daemon harness)

from dataplane_integration import TestFailure, check, log, run  # noqa: E402

SKIP = 77
A_IP = "198.18.1.1"
B_IP = "198.18.1.2"
PORT_CRC = 9999      # crc: true, markers: false
PORT_NOCRC = 9998    # crc: false
PORT_MARKERS = 9997  # markers: true (the responder asks for Markers)
PERIOD = 251
MEMORY_MB = 128
MIB = 1 << 20


def pattern(offset, n):
    """The services' data: byte at pattern offset o is o mod 251."""
    base = bytes(range(PERIOD))
    start = offset % PERIOD
    reps = (start + n) // PERIOD + 1
    return (base * reps)[start:start + n]


def expected_sha256(op, msg, count, qd):
    """What an iwarp_client run hashes: the bytes that came back, in message
    order (see iwarp_services.h)."""
    h = hashlib.sha256()
    written = [s * msg for s in range(qd)]  # read/mixed: the setup writes
    cache = {}
    for i in range(count):
        s = i % qd
        this = op if op != "mixed" else ("write", "read", "send")[i % 3]
        if this == "write":
            written[s] = i * msg
            off = i * msg
        elif this == "read":
            off = written[s]
        else:
            off = i * msg
        key = off % PERIOD
        if key not in cache:
            cache[key] = pattern(off, msg)
        h.update(cache[key])
    return h.hexdigest()


def free_hugepage_mib():
    try:
        with open("/proc/meminfo") as f:
            info = dict(l.split(":", 1) for l in f)
        return int(info["HugePages_Free"].split()[0]) * int(info["Hugepagesize"].split()[0]) // 1024
    except (OSError, KeyError, ValueError):
        return 0


def skip_unless_possible(daemons):
    dpi.skip_unless_possible()
    need = daemons * MEMORY_MB
    if free_hugepage_mib() < need:
        log("SKIP: net_memif needs hugepages (it fails with --no-shconf): %d MiB free, %d MiB "
            "needed (echo N > /proc/sys/vm/nr_hugepages)" % (free_hugepage_mib(), need))
        sys.exit(SKIP)


class MemifDaemon:
    """One iwarpd on a net_memif port, in a namespace of its own."""

    def __init__(self, args, name, ip, role, sock, services, iwarp="", impairment="",
                 tcp_extra="", main_lcore=0, worker_lcore=1, idle_sleep_us=50,
                 memif_zero_copy=False, delayed_ack_us=None, memif_devargs=""):
        tag = "%s%d" % (name, os.getpid())
        self.args = args
        self.ns = "iwi_" + tag
        self.prefix = "iwi_" + tag
        self.dir = tempfile.mkdtemp(prefix="iwarpd_iw_")
        self.log_path = os.path.join(self.dir, "iwarpd.log")
        self.ip, self.role, self.sock = ip, role, sock
        self.services, self.iwarp, self.impairment = services, iwarp, impairment
        self.tcp_extra = tcp_extra
        self.main_lcore, self.worker_lcore = main_lcore, worker_lcore
        self.idle_sleep_us = idle_sleep_us
        # A net_memif client that lends its own hugepage memory as the
        # link's buffers (zero-copy=yes; EAL --single-file-segments).
        self.memif_zero_copy = memif_zero_copy
        # tcp.delayed_ack_us: None leaves the daemon's default (200 us, what
        # an operator runs), so the tests cover it; a number writes it (0: an
        # ACK at the end of every receive burst).
        self.delayed_ack_us = delayed_ack_us
        # More net_memif devargs (",rsize=14"), appended to the vdev string.
        self.memif_devargs = memif_devargs
        self.proc = None
        self.ns_created = False

    def config_text(self):
        imp = ("    impairment:\n" + self.impairment) if self.impairment else ""
        zc = self.memif_zero_copy
        return """version: 1
eal:
  main_lcore: %d
  memory_mb: %d
  hugepages: on
  file_prefix: %s%s
ports:
  - name: m0
    vdev: "net_memif0,role=%s,socket=%s,socket-abstract=no%s%s"
%sinterfaces:
  - port: m0
    ipv4: %s/24
workers:
  lcores: [%d]
  idle_sleep_us: %d
mempools:
  mbufs: 16383
app_interface:
  enabled: false
tcp:
  send_buffer_bytes: 1048576
  receive_buffer_bytes: 1048576
  max_ooo_segments: 1024
%s%siwarp:
%sservices:
%s""" % (self.main_lcore, MEMORY_MB, self.prefix,
         "\n  extra_args: [\"--single-file-segments\"]" if zc else "", self.role, self.sock,
         ",zero-copy=yes" if zc else "", self.memif_devargs, imp, self.ip,
         self.worker_lcore, self.idle_sleep_us,
         "" if self.delayed_ack_us is None else "  delayed_ack_us: %d\n" % self.delayed_ack_us,
         self.tcp_extra,
         self.iwarp or "  qps_per_service: 4\n", self.services)

    def start(self):
        run(["ip", "netns", "add", self.ns])
        self.ns_created = True
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
                raise TestFailure("iwarpd %s exited %d during start-up:\n%s\n%s" %
                                  (self.prefix, self.proc.returncode, self.log(),
                                   self.config_text()))
            if "running; SIGINT or SIGTERM stops" in self.log():
                return
            time.sleep(0.05)
        raise TestFailure("iwarpd %s did not start within 20 s:\n%s" % (self.prefix, self.log()))

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def ctl_json(self, what):
        r = run([self.args.iwarpctl, "--prefix", self.prefix, "--json", what])
        return json.loads(r.stdout)["/iwarpd/" + what]

    def services_by_name(self):
        s = self.ctl_json("services")
        return {s["svc_%d" % i]["name"]: s["svc_%d" % i] for i in range(len(s["names"]))}

    def totals(self):
        return self.ctl_json("stats")["total"]

    def qps(self):
        """Every QP (iwarpctl --json qps prints one reply per line, paged)."""
        r = run([self.args.iwarpctl, "--prefix", self.prefix, "--json", "qps"])
        out = []
        for line in r.stdout.splitlines():
            page = json.loads(line)["/iwarpd/qps"]
            out += [v for k, v in page.items() if k.startswith("qp_")]
        return out

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise TestFailure("iwarpd %s did not stop within 10 s" % self.prefix)
        if rc != 0:
            raise TestFailure("iwarpd %s exited %d:\n%s" % (self.prefix, rc, self.log()))
        reports = [l for l in self.log().splitlines()
                   if "runtime error:" in l or "Sanitizer" in l]
        if reports:
            raise TestFailure("iwarpd %s: sanitizer reports:\n%s" % (self.prefix,
                                                                     "\n".join(reports)))

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.ns_created:
            run(["ip", "netns", "del", self.ns], check_rc=False)
        shutil.rmtree("/var/run/dpdk/" + self.prefix, ignore_errors=True)
        # A daemon killed without --huge-unlink (memif zero-copy) leaves its
        # hugepage files behind; they hold its pages until removed.
        for f in glob.glob("/dev/hugepages/%smap_*" % self.prefix):
            try:
                os.unlink(f)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def responder_services():
    return ("  - {name: r_crc, type: iwarp_responder, port: %d, crc: true, markers: false}\n"
            "  - {name: r_nocrc, type: iwarp_responder, port: %d, crc: false, markers: false}\n"
            "  - {name: r_markers, type: iwarp_responder, port: %d, crc: true, markers: true}\n"
            % (PORT_CRC, PORT_NOCRC, PORT_MARKERS))


RESPONDER_IWARP = ("  qps_per_service: 4\n  scratch_bytes: %d\n  recv_buffers: 4\n"
                   "  recv_buffer_bytes: %d\n" % (16 * MIB, 16 * MIB))


def client(name, op, msg, count, qd, port=PORT_CRC, crc=True, markers=False, verify=True,
           sha256=None):
    """One iwarp_client service line; sha256 None leaves the key out (default on)."""
    return ("  - {name: %s, type: iwarp_client, remote: %s, remote_port: %d, start_delay_ms: 300,"
            " op: %s, message_bytes: %d, count: %d, queue_depth: %d, crc: %s, markers: %s,"
            " verify: %s%s}\n" % (name, A_IP, port, op, msg, count, qd, str(crc).lower(),
                                  str(markers).lower(), str(verify).lower(),
                                  "" if sha256 is None else ", sha256: %s" % str(sha256).lower()))


class Pair:
    """Responder daemon A (kept) and a client daemon B per run."""

    def __init__(self, args, a_impairment=""):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="iwarpd_memif_")
        self.sock = os.path.join(self.dir, "memif.sock")
        self.a = MemifDaemon(args, "a", A_IP, "server", self.sock, responder_services(),
                             RESPONDER_IWARP, a_impairment)
        self.b = None

    def start(self):
        self.a.start()

    def run_clients(self, clients, impairment="", timeout=60.0, tcp_extra="",
                    memif_zero_copy=False):
        """Starts B with `clients` (list of (name, op, msg, count, qd)), waits
        for every run to finish; returns (services, qps) of B."""
        services = "".join(client(*c[:5], **(c[5] if len(c) > 5 else {})) for c in clients)
        self.b = MemifDaemon(self.args, "b", B_IP, "client", self.sock, services,
                             impairment=impairment, tcp_extra=tcp_extra,
                             memif_zero_copy=memif_zero_copy)
        try:
            self.b.start()
            deadline = time.time() + timeout
            while True:
                svcs = self.b.services_by_name()
                if all(svcs[c[0]].get("run") in ("ok", "failed") for c in clients):
                    break
                if time.time() > deadline:
                    raise TestFailure("client runs did not finish in %.0f s: %s\n%s" %
                                      (timeout, json.dumps(svcs), self.b.log()))
                time.sleep(0.2)
            qps = self.b.qps()
            self.b_totals = self.b.totals()
            self.b.stop()
            self.b_log = self.b.log()  # cleanup() removes it
            # Hugepage files B left behind (cleanup() removes them too).
            self.b_hugefiles = glob.glob("/dev/hugepages/%smap_*" % self.b.prefix)
            return svcs, qps
        finally:
            self.b.cleanup()

    def cleanup(self):
        if self.b is not None:
            self.b.cleanup()
        self.a.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


def check_run(svcs, name, op, msg, count, qd):
    s = svcs[name]
    check(s["run"] == "ok" and s["run_messages"] == count and s["verify_failures"] == 0 and
          s["completion_errors"] == 0,
          "%s: %s %d x %d B (depth %d): run %s, %d messages, %d verify failures, %d completion "
          "errors (connect error %s)" %
          (name, op, count, msg, qd, s["run"], s["run_messages"], s["verify_failures"],
           s["completion_errors"], s["run_connect_error"]))
    want = expected_sha256(op, msg, count, qd)
    check(s["run_sha256"] == want, "%s: SHA-256 of the data that came back %s == %s" %
          (name, s["run_sha256"][:16], want[:16]))
    log("  %s: %d bytes in %d us, %d Mbit/s, %d msg/s" %
        (name, s["run_bytes"], s["run_elapsed_us"], s["run_goodput_mbps"],
         s["run_messages_per_s"]))


def qp_of(qps, service):
    for q in qps:
        if q["service"] == service:
            return q
    raise TestFailure("no QP of service %s in %s" % (service, qps))


def case_sizes(args):
    """Write/Read/Send at 0 B .. 16 MiB through two daemons, CRC on."""
    skip_unless_possible(2)
    pair = Pair(args)
    try:
        pair.start()
        plan = [(0, 64, 4), (1, 64, 4), (4096, 64, 8), (65536, 32, 8), (MIB, 8, 4),
                (16 * MIB, 2, 1)]
        for msg, count, qd in plan:
            clients = [("w%d" % msg, "write", msg, count, qd),
                       ("r%d" % msg, "read", msg, count, qd),
                       ("s%d" % msg, "send", msg, count, qd)]
            svcs, qps = pair.run_clients(clients)
            for name, op, m, c, d in clients:
                check_run(svcs, name, op, m, c, d)
            q = qp_of(qps, "w%d" % msg)
            check(q["crc"] == 1 and q["mpa_revision"] == 2 and q["crc_errors"] == 0,
                  "negotiated MPA Rev %d with CRC %d, no CRC errors" % (q["mpa_revision"], q["crc"]))
        a = pair.a.services_by_name()["r_crc"]
        check(a["established"] == 18 and a["setup_failed"] == 0 and a["crc_errors"] == 0 and
              a["terminates_sent"] == 0 and a["qps_recycled"] >= 18,
              "responder: 18 connections established and recycled, no setup failures, CRC "
              "errors or Terminates (established %d, recycled %d)" %
              (a["established"], a["qps_recycled"]))
        echoed = sum(c for _, c, _ in plan)
        check(a["sends_echoed"] == echoed, "responder echoed %d Sends (want %d)" %
              (a["sends_echoed"], echoed))
        pair.a.stop()
    finally:
        pair.cleanup()


def case_crc_markers(args):
    """CRC off on both sides; Markers asked by the client and by the responder."""
    skip_unless_possible(2)
    pair = Pair(args)
    try:
        pair.start()
        clients = [("nocrc", "mixed", 65536, 30, 4, {"port": PORT_NOCRC, "crc": False}),
                   ("m_client", "mixed", 65536, 30, 4, {"markers": True}),
                   ("m_responder", "mixed", 65536, 30, 4, {"port": PORT_MARKERS})]
        # sha256: false: the same run (still verified by read-back), no hash.
        nohash = ("nohash", "write", 65536, 30, 4, {"sha256": False})
        svcs, qps = pair.run_clients(clients + [nohash])
        for c in clients:
            check_run(svcs, *c[:5])
        s = svcs["nohash"]
        check(s["run"] == "ok" and s["run_messages"] == 30 and s["run_bytes"] == 30 * 65536 and
              s["verify_failures"] == 0 and s["run_sha256"] == "-",
              "sha256: false: run %s, %d messages, %d bytes, %d verify failures, hash %s (want "
              "ok, 30, 1966080, 0, -)" % (s["run"], s["run_messages"], s["run_bytes"],
                                         s["verify_failures"], s["run_sha256"]))
        q = qp_of(qps, "nocrc")
        check(q["crc"] == 0, "crc: false on both sides: the connection runs without MPA CRC")
        q = qp_of(qps, "m_client")
        check(q["rx_markers"] == 1 and q["tx_markers"] == 0 and q["marker_errors"] == 0,
              "client asked for Markers: the responder inserts them (client rx_markers %d, "
              "tx_markers %d)" % (q["rx_markers"], q["tx_markers"]))
        q = qp_of(qps, "m_responder")
        # The run ended with a graceful close (both FINs, no Terminate): CLOSED, not ERROR.
        check(q["remote"] == "%s:%d" % (A_IP, PORT_MARKERS) and q["state"] == "CLOSED" and
              q.get("end") == "closed",
              "iwarpctl qps keeps the finished QP, closed gracefully: %s -> %s %s (%s)" %
              (q["local"], q["remote"], q["state"], q.get("end")))
        check(q["tx_markers"] == 1 and q["rx_markers"] == 0,
              "responder asked for Markers: the client inserts them (client tx_markers %d, "
              "rx_markers %d)" % (q["tx_markers"], q["rx_markers"]))
        a = pair.a.services_by_name()
        check(a["r_markers"]["marker_errors"] == 0 and a["r_crc"]["marker_errors"] == 0 and
              a["r_nocrc"]["crc_errors"] == 0, "responders: no Marker or CRC errors")
        pair.a.stop()
    finally:
        pair.cleanup()


def case_impair(args):
    """Loss, reordering and duplication on B's port: identical data."""
    skip_unless_possible(2)
    impairment = """      seed: 7
      tx:
        - {action: drop, protocol: tcp, probability_ppm: 20000}
        - {action: reorder, protocol: tcp, every: 37, reorder_gap: 3}
        - {action: duplicate, protocol: tcp, every: 53}
      rx:
        - {action: drop, protocol: tcp, probability_ppm: 10000}
        - {action: duplicate, protocol: tcp, every: 41}
"""
    pair = Pair(args)
    try:
        pair.start()
        clients = [("iw", "write", 65536, 24, 4), ("ir", "read", 65536, 24, 4),
                   ("is", "send", 65536, 24, 4), ("im", "mixed", 4096, 90, 8)]
        svcs, _ = pair.run_clients(clients, impairment=impairment, timeout=90)
        for c in clients:
            check_run(svcs, *c)
        t = pair.b_totals
        check(t["drop_impair_drop"] > 0 and t["impair_reordered"] > 0 and
              t["impair_duplicated"] > 0,
              "the impairment acted: %d dropped, %d reordered, %d duplicated" %
              (t["drop_impair_drop"], t["impair_reordered"], t["impair_duplicated"]))
        pair.a.stop()
    finally:
        pair.cleanup()


def case_corrupt(args):
    """A payload byte damaged behind a fixed-up TCP checksum: the responder's
    MPA CRC check catches it and ends the connection with the LLP Terminate
    'CRC error' (RFC 5044 8, code 2)."""
    skip_unless_possible(2)
    impairment = """      tx:
        - {action: corrupt, protocol: tcp, port: %d, min_payload: 1000, first: 20, last: 20,
           checksum: fixed}
""" % PORT_CRC
    pair = Pair(args)
    try:
        pair.start()
        svcs, qps = pair.run_clients([("c", "write", 65536, 64, 2)], impairment=impairment)
        s = svcs["c"]
        check(pair.b_totals["impair_corrupted_fixed"] == 1,
              "one frame corrupted with its TCP checksum fixed up")
        check(s["run"] == "failed" and s["run_messages"] < 64,
              "client run failed after %d of 64 messages" % s["run_messages"])
        check(s["terminates_received"] >= 1 and
              s["last_terminate_received"] == "layer 2 etype 0 code 2",
              "client received the Terminate %r" % s["last_terminate_received"])
        q = qp_of(qps, "c")
        check(q["state"] in ("TERMINATING", "ERROR") and q.get("end") == "terminate",
              "iwarpctl qps: the client's QP ended by the Terminate, not closed: %s (%s)" %
              (q["state"], q.get("end")))
        deadline = time.time() + 5
        while True:
            a = pair.a.services_by_name()["r_crc"]
            if a["terminates_sent"] >= 1 or time.time() > deadline:
                break
            time.sleep(0.1)
        check(a["crc_errors"] == 1 and a["terminates_sent"] == 1 and
              a["last_terminate_sent"] == "layer 2 etype 0 code 2",
              "responder: crc_errors %d, terminates_sent %d, Terminate %r (LLP, MPA CRC error)" %
              (a["crc_errors"], a["terminates_sent"], a["last_terminate_sent"]))
        # The responder's pool is intact: a clean run afterwards succeeds.
        # (From other local ports: the responder holds the old connection's
        # tuple in TIME-WAIT, and a restarted B would pick the same port.)
        svcs, _ = pair.run_clients([("after", "send", 4096, 16, 4)],
                                   tcp_extra="  ephemeral_port_min: 40000\n")
        check_run(svcs, "after", "send", 4096, 16, 4)
        pair.a.stop()
    finally:
        pair.cleanup()


class TapResponder(dpi.Daemon):
    """The iwarp-responder on net_tap, for a kernel TCP client."""

    def config_text(self):
        return super().config_text() + """app_interface:
  enabled: false
services:
  - {name: responder, type: iwarp_responder, port: 9999}
"""


MPA_REQ_KEY = b"MPA ID Req Frame"
MPA_REP_KEY = b"MPA ID Rep Frame"


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def case_kernel_mpa(args):
    """A kernel TCP client through net_tap: a valid MPA Rev 1 Request gets the
    Reply with the documented private data; a bad key gets the connection
    reset (RFC 5044 8: invalid startup frame)."""
    dpi.skip_unless_possible()
    d = TapResponder(args, "k")
    try:
        d.start()
        script = r"""
import socket, struct, sys
s = socket.create_connection((%r, 9999), timeout=5)
s.sendall(b"MPA ID Req Frame" + bytes([0x40, 1]) + struct.pack(">H", 0))
hdr = b""
while len(hdr) < 20:
    c = s.recv(20 - len(hdr))
    if not c: break
    hdr += c
pdlen = struct.unpack(">H", hdr[18:20])[0] if len(hdr) == 20 else 0
pd = b""
while len(pd) < pdlen:
    c = s.recv(pdlen - len(pd))
    if not c: break
    pd += c
sys.stdout.write((hdr + pd).hex() + "\n")
s.close()
b = socket.create_connection((%r, 9999), timeout=5)
b.sendall(b"MPA ID Bad Frame" + bytes([0x40, 1]) + struct.pack(">H", 0))
try:
    got = b.recv(100)
    sys.stdout.write("closed %%d\n" %% len(got))
except ConnectionResetError:
    sys.stdout.write("reset\n")
""" % (dpi.OUR_IP, dpi.OUR_IP)
        r = d.ns_run("python3", "-c", script, timeout=20)
        lines = r.stdout.split()
        reply = bytes.fromhex(lines[0])
        check(reply[:16] == MPA_REP_KEY and reply[16] & 0x20 == 0 and reply[17] == 1,
              "valid Rev 1 Request: MPA Reply (not rejected), revision %d" % reply[17])
        check(reply[16] & 0x40 != 0, "the Reply sets C (the Request asked for CRC)")
        pd = reply[20:]
        check(len(pd) == 40, "private data is 40 bytes (%d)" % len(pd))
        magic, ver, flags, _, stag, _, to, length, rbytes, rbufs = struct.unpack(
            ">IBBHIIQQII", pd)
        check(magic == 0x49575250 and ver == 1 and flags == 0,
              "private data magic 'IWRP', version 1")
        check(stag > 0xFF and length == 1 << 20 and rbytes == 65536 and rbufs == 16,
              "scratch STag 0x%08x, TO 0x%x, %d bytes; receives %d x %d bytes" %
              (stag, to, length, rbufs, rbytes))
        check(lines[1] in ("reset", "closed"),
              "bad MPA key: the responder ends the connection (%s)" % " ".join(lines[1:]))
        deadline = time.time() + 5
        while True:
            s = d.ctl_json("services")["/iwarpd/services"]["svc_0"]
            if (s["setup_failed"] >= 1 and s["bad_requests"] >= 1) or time.time() > deadline:
                break
            time.sleep(0.1)
        # The bad key never reached a QP (the MPA gate reset it: bad_requests);
        # the valid Request never sent an RTR / FPDU and closed: its setup
        # failed (TCP gone before Full Operation).
        check(s["connect_requests"] == 1 and s["bad_requests"] == 1 and s["setup_failed"] == 1
              and s["replies_sent"] == 1 and s["established"] == 0,
              "responder counters: connect_requests %d (the bad key is no request), "
              "bad_requests %d, replies_sent %d, setup_failed %d, established %d" %
              (s["connect_requests"], s["bad_requests"], s["replies_sent"], s["setup_failed"],
               s["established"]))
    finally:
        d.cleanup()


def case_memif_zero_copy(args):
    """The client daemon's net_memif in zero-copy mode (its own hugepage
    memory is the link's buffers: zero-copy=yes, EAL --single-file-segments,
    no --huge-unlink): Write, Read and Send verified as on a copying link."""
    skip_unless_possible(2)
    pair = Pair(args)
    try:
        pair.start()
        clients = [("zw", "write", 65536, 64, 8), ("zr", "read", 65536, 64, 8),
                   ("zs", "send", 4096, 256, 8), ("zm", "write", MIB, 8, 4)]
        svcs, qps = pair.run_clients(clients, memif_zero_copy=True)
        log_text = pair.b_log
        eal = [l for l in log_text.splitlines() if "EAL arguments:" in l]
        check(len(eal) == 1 and "zero-copy=yes" in eal[0] and
              "--single-file-segments" in eal[0].split() and "--huge-unlink" not in eal[0],
              "the zero-copy client's EAL runs with --single-file-segments and without "
              "--huge-unlink (which EAL refuses beside it): %s" % (eal[:1] or log_text[-500:]))
        check("no --huge-unlink" in log_text and "removed when the daemon stops" in log_text,
              "the start-up log says why there is no --huge-unlink and what happens instead")
        for c in clients:
            check_run(svcs, *c)
        q = qp_of(qps, "zw")
        check(q["crc_errors"] == 0 and q["state"] == "CLOSED",
              "zero-copy link: no CRC errors, the QP closed gracefully (%s)" % q["state"])
        # Stopped cleanly, the daemon removed its hugepage files itself (what
        # --huge-unlink does for the others): no pages held after it.
        removed = re.search(r"removed (\d+) hugepage file\(s\) of file prefix", log_text)
        check(removed is not None and int(removed.group(1)) >= 1 and not pair.b_hugefiles,
              "the stopped zero-copy client removed its hugepage files (%s; left: %s)" %
              (removed.group(0) if removed else "no removal logged", pair.b_hugefiles))
        pair.a.stop()
    finally:
        pair.cleanup()


CASES = {"sizes": case_sizes, "crc_markers": case_crc_markers, "impair": case_impair,
         "corrupt": case_corrupt, "kernel_mpa": case_kernel_mpa,
         "memif_zero_copy": case_memif_zero_copy}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    p.add_argument("--source-root")
    args = p.parse_args()
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
