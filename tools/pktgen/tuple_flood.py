#!/usr/bin/env python3
"""Traffic scenario `tuple_flood`: a real iWARP transfer between a kernel TCP
peer and iwarpd's iwarp_responder while Pktgen-DPDK floods, at its full rate,
segments into that transfer's own 4-tuple: RSTs and RST|ACKs with wrong
sequence numbers, SYNs, and data segments with random sequence and
acknowledgment numbers (RFC 5961's blind in-window attacks and their
out-of-window cousins).

  tuple_flood.py --iwarpd PATH --iwarpctl PATH [--pktgen PATH] [--seconds S]
                 [--pre-flood S] [--goodput-share F] [--vcap-mib N]
                 [--spread-mib N] [--txqueuelen N] [--debug]

Topology (one private network namespace, addresses 198.18.0.0/15 only):
iwarpd has one net_tap port (198.18.0.1, TAP iw0) with an iwarp_responder
service on TCP port 9999. A Linux bridge br0 joins iw0 and pktgen's TAP pk0
(pktgen: --vdev net_tap0,iface=pk0, --no-pci, --no-huge, its own
--file-prefix); br0 itself holds 198.18.0.2, the kernel side the transfer
peer uses. iwarpd accepts an IPv4 datagram only on the port that owns its
destination address and a TAP has one DPDK end, so pktgen must share the
transfer's link. iw0 and pk0 get MACs of their own (net_tap gives the kernel
side the DPDK port's MAC, and the bridge would take iwarpd's MAC for its own
and never forward to it); pktgen's frames are unicast to iwarpd's MAC, which
a static FDB entry pins to iw0, so the bridge hands them to iwarpd's port
only and the kernel peer sees nothing of the flood but iwarpd's answers
(ACKs carrying iwarpd's real numbers). iw0's txqueuelen (the kernel's ring
towards the DPDK side) is raised to 16384 so that the worker's scheduling
gaps on a shared core do not drop frames on the link.

The transfer peer is tests/iwarp_peer.py (MPA, CRC32c, DDP, RDMAP built from
the RFCs) over a kernel TCP socket, run in the namespace as a child process
(`tuple_flood.py peer`): MPA Rev 2 Request (CRC on, RFC 6581 Write RTR), the
responder's private data gives the scratch region's STag and TO, then rounds
of RDMA Writes (16 KiB FPDUs) filling the region with a pattern that changes
every round, each round read back with one RDMA Read and compared byte for
byte. Goodput is bytes written plus bytes read back, all verified, per
second. The peer learns both ISNs from its own handshake (a packet socket on
br0) and reports them with its ephemeral port and the stream bytes sent and
received so far. A compiled CRC32c (C source below, checked against
iwarp_peer's) replaces the Python one when a C compiler is there.

Sequence: the flood connection F connects, completes MPA and goes idle; the
pcap is built for F's 4-tuple and sequence numbers; pktgen starts, silent; a
second connection B runs the flood-free transfer (same daemon, same minute,
pktgen on the link); pktgen floods; --pre-flood seconds later F's transfer
starts under the flood and runs --seconds; the flood stops; F closes with a
FIN; iwarpd gets SIGTERM.

The pcap (1000 frames a cycle, kinds interleaved; every frame from the
peer's address and port to iwarpd's, no TCP options). X0 is iwarpd's
RCV.NXT on F when the pcap is built, vcap the most F's peer may send in the
run; the span is [X0 - 1 MiB, X0 + vcap + window + 1 MiB]:
  rst_blind, rstack_blind  RST / RST|ACK, sequence number random outside
                 the span -> tcp_rst_out_of_window, no answer (RFC 5961 3.2)
  rst_window     RST at X0 + 4k + 2: half in the window iwarpd offers when
                 the pcap is built, half up to --spread-mib into F's stream.
                 In the window when it arrives -> tcp_rst_challenged (a
                 challenge ACK), else tcp_rst_out_of_window. Never RCV.NXT:
                 F's stream only stops at multiples of 4 (24-byte MPA
                 Request, FPDUs padded to 4, MSS 1448; every ACK number
                 iwarpd sent in captured runs had one residue mod 4)
  syn_blind      SYN, random outside the span -> tcp_out_of_window (+ ACK:
                 RFC 9293 3.10.7.4 checks the sequence number first)
  syn_window     SYN placed as rst_window (any residue) -> tcp_syn_challenged
                 (RFC 5961 4.2, challenge ACK) or tcp_out_of_window
  data_ahead     ACK|PSH + 32 bytes, random sequence number ahead of the
                 span (by less than 2^31) -> tcp_out_of_window (+ ACK)
  data_behind    the same behind the span -> tcp_duplicate_data (+ ACK, a
                 D-SACK)
  data_window    ACK|PSH + 32 bytes in the window offered when the pcap is
                 built, ACK number beyond anything iwarpd sends in the run
                 -> tcp_ack_invalid (RFC 5961 5.2, challenge ACK) while in
                 the window, tcp_duplicate_data once F's stream passed it
Each of these counters is fed by at most one kind whose outcome depends on
timing (the *_window kinds); the blind kinds' outcomes are fixed, so every
kind's split is read off iwarpd's counters exactly. Nothing else in the run
moves them but the peer's own retransmissions (tcp_duplicate_data, bounded by
its tcp_info total_retrans).

Pass rules (each a row of the verdict table): both transfers complete with
every round read back intact; the flood run keeps --goodput-share of the
flood-free goodput; the peer's kernel discarded none of iwarpd's segments by
PAWS (RFC 7323: TSval never goes back); pktgen sent more than a pcap cycle
with no transmit error, pk0 took in every frame it sent, iwarpd took in
every frame iw0 passed it and at most 1% were lost on the link (iw0
tx_dropped, reported and allowed for in the accounting); each window kind
== its share of the frames sent, split as counted; the six counters sum to
the frames sent; no other drop reason moved; challenge ACKs sent +
suppressed == the three challenged drops, sent <= 1000 a second (RFC 5961 7,
tcp.challenge_ack_limit); acks_out covers an ACK for every out-of-window or
duplicate segment and every challenge ACK; no RST accepted (rsts_in 0,
closed_reset 0); iwarpctl answers every probe within 2 s; VmRSS grows by less
than 32 MiB; F ends with a FIN; iwarpd exits 0 on SIGTERM.

Exit status: 0 pass, 1 fail, 77 skip (no pktgen, not root, no `script`, no
Linux bridge).
"""

import argparse
import ctypes
import json
import os
import queue
import random
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pktgen_traffic as pt  # noqa: E402  (Pktgen, pcap, Verdict, counters)

sys.path.insert(0, os.path.join(pt.ROOT, "tests"))
import iwarp_peer as iwp  # noqa: E402

iwd, dpi, log, TestFailure = pt.iwd, pt.dpi, pt.log, pt.TestFailure

SKIP = 77
IWARPD_IP = "198.18.0.1"
PEER_IP = "198.18.0.2"
PORT = 9999
IW_IF, PK_IF, BR_IF = "iw0", "pk0", "br0"
IW_KMAC = "02:00:00:00:00:99"   # kernel side of iwarpd's TAP
PK_KMAC = "02:00:00:00:00:98"   # kernel side of pktgen's TAP
BR_MAC = "02:00:00:00:00:02"    # br0: the transfer peer's MAC
PKT_MAC = "02:00:00:00:03:02"   # source MAC of pktgen's frames
SINK_STAG = 0x5151              # the peer's (fake) Read sink
WRITE_SEG = 16384               # payload of one RDMA Write FPDU (a multiple of 4)
MIB = 1 << 20
G = MIB                          # guard around the span F's stream can reach
PAYLOAD = 32                     # bytes of the data kinds
RCV_BUFFER = 262144              # iwarpd's tcp.receive_buffer_bytes (the default)

# kind -> (frames per pcap cycle, drop reasons it may be counted under)
KINDS = {
    "rst_blind": (120, ["drop_tcp_rst_out_of_window"]),
    "rstack_blind": (136, ["drop_tcp_rst_out_of_window"]),
    "rst_window": (104, ["drop_tcp_rst_challenged", "drop_tcp_rst_out_of_window"]),
    "syn_blind": (96, ["drop_tcp_out_of_window"]),
    "syn_window": (128, ["drop_tcp_syn_challenged", "drop_tcp_out_of_window"]),
    "data_ahead": (144, ["drop_tcp_out_of_window"]),
    "data_behind": (112, ["drop_tcp_duplicate_data"]),
    "data_window": (160, ["drop_tcp_ack_invalid", "drop_tcp_duplicate_data"]),
}
# The one timing-dependent kind per shared counter, its in-window reason.
WINDOW_KINDS = {"rst_window": ("drop_tcp_rst_challenged", "drop_tcp_rst_out_of_window"),
                "syn_window": ("drop_tcp_syn_challenged", "drop_tcp_out_of_window"),
                "data_window": ("drop_tcp_ack_invalid", "drop_tcp_duplicate_data")}
REASONS = sorted({r for _, rs in KINDS.values() for r in rs})
CHALLENGED = ["drop_tcp_rst_challenged", "drop_tcp_syn_challenged", "drop_tcp_ack_invalid"]


# --- CRC32c: a small C helper when a compiler is there -----------------------------

CRC_C = r"""
#include <stddef.h>
#include <stdint.h>
#include <string.h>
static uint32_t t[8][256];
static int ready;
static void init(void) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  ready = 1;
}
uint32_t crc32c(const uint8_t *p, size_t n, uint32_t crc) {
  if (!ready) init();
  uint32_t c = crc ^ 0xFFFFFFFFu;
  while (n >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}
"""


def fast_crc(workdir):
    """Replaces iwarp_peer's table-driven Python CRC32c (8 MB/s here) with the
    same function compiled from CRC_C (slicing by 8), checked against it on
    random data (little-endian loads: elsewhere the check fails and Python's
    stays); returns a note saying which one runs."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        return "python (no C compiler)"
    # One file per process: B's compiler must not rewrite the library F has mapped.
    src, so = (os.path.join(workdir, "crc32c_%d.%s" % (os.getpid(), x)) for x in ("c", "so"))
    with open(src, "w") as f:
        f.write(CRC_C)
    r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", so, src], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return "python (cc failed: %s)" % r.stderr.strip()[-200:]
    lib = ctypes.CDLL(so)
    lib.crc32c.restype = ctypes.c_uint32
    lib.crc32c.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32]

    def crc(data, c=0):
        b = bytes(data)
        return lib.crc32c(b, len(b), c)
    rnd = random.Random(5044)
    for n in (0, 1, 7, 8, 9, 63, 1000, 4099):
        d = bytes(rnd.getrandbits(8) for _ in range(n))
        if crc(d) != iwp.crc32c(d):
            return "python (the compiled CRC disagrees)"
    iwp.crc32c = crc  # iwp.fpdu_crc looks it up at call time
    return "compiled (%s)" % cc


# --- the transfer peer (runs in the namespace) -------------------------------------

def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def handshake_isns(cap, lport, deadline):
    """The peer's ISS and iwarpd's from the SYN and SYN-ACK the packet socket
    saw on br0."""
    iss = irs = None
    while (iss is None or irs is None) and time.monotonic() < deadline:
        r, _, _ = select.select([cap], [], [], 0.2)
        if not r:
            continue
        fr = cap.recv(65535)
        if len(fr) < 14 + 20 + 20 or fr[12:14] != b"\x08\x00" or fr[23] != 6:
            continue
        ihl = (fr[14] & 0x0F) * 4
        t = fr[14 + ihl:]
        sport, dport, seq = struct.unpack("!HHI", t[:8])
        flags = t[13]
        if flags & 0x02 and not flags & 0x10 and sport == lport and dport == PORT:
            iss = seq
        elif flags & 0x12 == 0x12 and sport == PORT and dport == lport:
            irs = seq
    return iss, irs


def tcp_info(sock):
    """A few struct tcp_info fields (linux/tcp.h): total_retrans, segs_out."""
    b = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
    out = {"total_retrans": struct.unpack_from("I", b, 100)[0]}
    if len(b) >= 144:
        out["segs_out"], out["segs_in"] = struct.unpack_from("II", b, 136)
    if len(b) >= 220:
        out["dsack_dups"] = struct.unpack_from("I", b, 216)[0]
    if len(b) >= 232:
        out["snd_wnd"] = struct.unpack_from("I", b, 228)[0]  # the window iwarpd offers
    return out


def peer_main(args):
    crc_note = fast_crc(args.workdir)
    # ETH_P_ALL: packet sockets bound to one protocol do not see outgoing frames.
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    cap.bind((BR_IF, 3))
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect((IWARPD_IP, PORT))
    lport = s.getsockname()[1]
    iss, irs = handshake_isns(cap, lport, time.monotonic() + 3)
    cap.close()
    p = iwp.Peer(sock=s, timeout=10.0)
    # 24 bytes, and every FPDU is a multiple of 4: F's stream only stops at
    # multiples of 4 from its start (what makes rst_window safe; checked by
    # the harness on the bytes sent before the pcap is built).
    req = iwp.StartupFrame.request(rev=2, m=False, c=True,
                                   ird_ord=iwp.IrdOrd(8, 8, a=True, c=True))
    rep = p.connect(req)
    if rep.r or len(rep.ulp_data) != 40:
        emit({"event": "error", "error": "MPA Reply %r" % rep})
        return 1
    _, _, _, _, stag, _, to, length, _, _ = struct.unpack("!IBBHIIQQII", rep.ulp_data)
    p.send_segment(iwp.DdpHeader(True, iwp.OP_WRITE, stag=1, to=0))  # RTR
    time.sleep(0.2)  # the RTR's ACK: iwarpd's window as it offers it when idle
    emit({"event": "connected", "lport": lport, "iss": iss, "irs": irs,
          "snd_wnd": tcp_info(s).get("snd_wnd", 0),
          "sent": len(p.sent_raw), "received": len(p.recv_raw), "stag": stag, "to": to,
          "length": length, "crc": crc_note})
    if args.wait_go:
        line = sys.stdin.readline()
        if line.strip() != "go":
            return 1
    info0 = tcp_info(s)
    region = min(length, args.region_kib * 1024)
    base = bytes(range(251)) * (region // 251 + 2)
    vcap = args.vcap_mib * MIB
    written = readb = rounds = 0
    err = None
    t0 = time.monotonic()
    t_end = t0 + args.seconds
    try:
        while time.monotonic() < t_end and len(p.sent_raw) + region + 65536 < vcap:
            start = (rounds * 37) % 251
            data = base[start:start + region]
            for off in range(0, region, WRITE_SEG):
                p.write(stag, to + off, data[off:off + WRITE_SEG])
            p.read_request(iwp.ReadRequest(SINK_STAG, 0, region, stag, to))
            got = bytearray()
            while len(got) < region:
                m = p.recv_message()
                if not (m.hdr.tagged and m.hdr.opcode == iwp.OP_READ_RESP and
                        m.hdr.stag == SINK_STAG and m.hdr.to == len(got)):
                    raise iwp.ProtocolError("unexpected segment %r" % m)
                if m.fpdu.crc_ok is False:
                    raise iwp.ProtocolError("Read Response with a bad MPA CRC")
                got += m.payload
                if m.hdr.last:
                    break
            if bytes(got) != data:
                bad = next(i for i in range(min(len(got), region)) if got[i] != data[i]) \
                    if len(got) == region else len(got)
                raise iwp.ProtocolError("round %d: read back differs at byte %d (%d bytes)"
                                        % (rounds, bad, len(got)))
            written += region
            readb += region
            rounds += 1
    except (iwp.ProtocolError, EOFError, TimeoutError, OSError) as e:
        err = "%s: %s" % (type(e).__name__, e)
    secs = time.monotonic() - t0
    info1 = tcp_info(s)
    emit({"event": "done", "rounds": rounds, "region": region, "written": written,
          "read": readb,
          "seconds": secs, "mbps": (written + readb) * 8 / 1e6 / max(secs, 1e-9),
          "error": err, "sent_total": len(p.sent_raw), "received_total": len(p.recv_raw),
          "retrans": info1["total_retrans"] - info0["total_retrans"],
          "segs_out": info1.get("segs_out", 0) - info0.get("segs_out", 0),
          "dsack_dups": info1.get("dsack_dups", 0) - info0.get("dsack_dups", 0)})
    if args.wait_go:
        sys.stdin.readline()  # "close"
    try:
        s.shutdown(socket.SHUT_WR)
        _, how = p.read_to_eof(3.0)
    except OSError as e:
        how = str(e)
    p.close()
    emit({"event": "closed", "how": how})
    return 0 if err is None else 1


def counters(d):
    """iwarpd totals: iwarpctl stats and tcp (as tcp.NAME); pt.delta folds
    tcp.drop_* into drop_*."""
    t = {k: v for k, v in d.totals().items() if isinstance(v, int)}
    tcp = d.ctl_json("tcp")["/iwarpd/tcp"]["total"]
    t.update({"tcp." + k: v for k, v in tcp.items() if isinstance(v, int)})
    return t


class PeerProc:
    """A `tuple_flood.py peer` child inside the namespace; its JSON lines
    arrive on a queue."""

    def __init__(self, ns, workdir, seconds, vcap_mib, region_kib, wait_go):
        cmd = ["ip", "netns", "exec", ns, sys.executable, os.path.abspath(__file__), "peer",
               "--workdir", workdir, "--seconds", str(seconds), "--vcap-mib", str(vcap_mib),
               "--region-kib", str(region_kib)] + (["--wait-go"] if wait_go else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.q = queue.Queue()
        self.err = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.q.put(json.loads(line))
            except ValueError:
                self.err.append(line)
        self.q.put({"event": "eof"})

    def _read_err(self):
        for line in self.proc.stderr:
            self.err.append(line)

    def wait(self, event, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                e = self.q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise TestFailure("transfer peer: no '%s' within %.0f s (%s)" %
                                  (event, timeout, "".join(self.err)[-1500:]))
            if e["event"] == event:
                return e
            if e["event"] in ("error", "eof"):
                raise TestFailure("transfer peer ended before '%s': %s %s" %
                                  (event, e, "".join(self.err)[-1500:]))

    def say(self, line):
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)


# --- iwarpd and the bridge ---------------------------------------------------------

class Skip(Exception):
    pass


class TupleDaemon(dpi.Daemon):
    """iwarpd on net_tap iw0 with one iwarp_responder, iw0 on a bridge."""

    def __init__(self, args):
        super().__init__(args, "tf", memory_mb=512)

    def config_text(self):
        return """version: 1
eal:
  main_lcore: 0
  memory_mb: %d
  hugepages: off
  file_prefix: %s
ports:
  - name: tap0
    vdev: "net_tap0,iface=%s"
interfaces:
  - port: tap0
    ipv4: %s/24
workers:
  lcores: [1]
  idle_sleep_us: %d
mempools:
  mbufs: 16383
app_interface:
  enabled: false
tcp:
  max_connections: 64
  syn_backlog: 32
  receive_buffer_bytes: %d
iwarp:
  qps_per_service: 4
  scratch_bytes: %d
services:
  - {name: responder, type: iwarp_responder, port: %d, crc: true, markers: false}
""" % (self.memory_mb, self.prefix, IW_IF, IWARPD_IP, self.args.idle_sleep_us, RCV_BUFFER,
       self.args.region_kib * 1024, PORT)

    def start(self):
        dpi.run(["ip", "netns", "add", self.ns])
        self.ns_created = True
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
        while "running; SIGINT or SIGTERM stops" not in self.log():
            if self.proc.poll() is not None:
                raise TestFailure("iwarpd exited %d during start-up:\n%s" %
                                  (self.proc.returncode, self.log()))
            if time.time() > deadline:
                raise TestFailure("iwarpd did not start within 20 s:\n" + self.log())
            time.sleep(0.05)
        ports = self.ctl_json("ports")["/iwarpd/ports"]
        self.mac = ports["port_%d" % ports["port_ids"][0]]["mac"]
        r = self.ns_run("ip", "link", "add", BR_IF, "type", "bridge", "stp_state", "0",
                        "forward_delay", "0", check_rc=False)
        if r.returncode != 0:
            raise Skip("no Linux bridge here (ip link add type bridge: %s)" % r.stderr.strip())
        for cmd in (["ip", "link", "set", BR_IF, "address", BR_MAC],
                    ["ip", "link", "set", IW_IF, "address", IW_KMAC],
                    ["ip", "link", "set", IW_IF, "master", BR_IF],
                    # The ring between the kernel and iwarpd's net_tap queue:
                    # 16384 frames instead of 1000 ride out the worker's
                    # scheduling gaps on a shared core.
                    ["ip", "link", "set", IW_IF, "txqueuelen", str(self.args.txqueuelen)],
                    ["ip", "link", "set", IW_IF, "up"],
                    ["ip", "link", "set", BR_IF, "up"],
                    ["ip", "addr", "add", PEER_IP + "/24", "dev", BR_IF],
                    ["bridge", "fdb", "replace", self.mac, "dev", IW_IF, "master", "static"],
                    ["sysctl", "-qw",
                     "net.ipv4.neigh.%s.base_reachable_time_ms=600000" % BR_IF]):
            self.ns_run(*cmd)
        log("iwarpd up: prefix %s, namespace %s, mac %s; bridge %s (%s, %s) joins %s" %
            (self.prefix, self.ns, self.mac, BR_IF, PEER_IP, BR_MAC, IW_IF))

    def join_pktgen(self, timeout=30):
        """pktgen created pk0 inside the namespace: a MAC of its own, onto the
        bridge, up."""
        deadline = time.time() + timeout
        while self.ns_run("test", "-e", "/sys/class/net/" + PK_IF, check_rc=False).returncode:
            if time.time() > deadline:
                raise TestFailure("pktgen's TAP %s did not appear" % PK_IF)
            time.sleep(0.1)
        for cmd in (["ip", "link", "set", PK_IF, "address", PK_KMAC],
                    ["ip", "link", "set", PK_IF, "master", BR_IF],
                    ["ip", "link", "set", PK_IF, "up"]):
            self.ns_run(*cmd)

    def ring_sample(self, lport, with_srtt):
        """(frames pk0 took from pktgen so far, F's SRTT in us as iwarpd
        measures it, or -1)."""
        r = self.ns_run("cat", "/sys/class/net/%s/statistics/rx_packets" % PK_IF,
                        check_rc=False)
        rx = int(r.stdout.strip() or 0)
        srtt = -1
        if with_srtt:
            c = self.ctl("--json", "connections", check_rc=False)
            for line in c.stdout.splitlines():
                for k, e in json.loads(line).get("/iwarpd/connections", {}).items():
                    if k.startswith("conn_") and e["remote"].endswith(":%d" % lport):
                        srtt = e["srtt_us"]
        return rx, srtt

    def link_stats(self):
        """Kernel counters of iw0, pk0 and br0 (ip -s -j link)."""
        out = {}
        r = self.ns_run("ip", "-s", "-j", "link", "show")
        for l in json.loads(r.stdout):
            st = l.get("stats64") or l.get("stats") or {}
            out[l["ifname"]] = {"rx": st.get("rx", {}).get("packets", 0),
                                "rx_dropped": st.get("rx", {}).get("dropped", 0),
                                "tx": st.get("tx", {}).get("packets", 0),
                                "tx_dropped": st.get("tx", {}).get("dropped", 0)}
        return out


class TapPktgen(pt.Pktgen):
    """pktgen_traffic's Pktgen on a net_tap port (pk0) instead of net_memif."""

    def start(self, scenario_lua, params, pcap=None, lcores="0,1", main_lcore=1, port_lcore=0,
              cpus=None):
        with open(os.path.join(HERE, scenario_lua)) as f:
            body = f.read()
        head = "".join("%s = %s\n" % (k, pt.lua_value(v)) for k, v in params.items())
        head += "PKTGEN_DIR = %s\nOUT = %s\nCOMMON = %s\n" % (
            pt.lua_value(os.path.dirname(self.binary)), pt.lua_value(self.out),
            pt.lua_value(os.path.join(HERE, "common.lua")))
        with open(self.lua, "w") as f:
            f.write(head + body)
        cmd = [self.binary] + (["--lcores", cpus] if cpus else ["-l", lcores]) + [
               "--main-lcore", str(main_lcore), "--no-pci", "--no-huge", "-m", "2048",
               "--file-prefix", self.prefix, "--log-level", "7",
               "--vdev", "net_tap0,iface=%s" % PK_IF,
               "--", "-P", "-m", "%d.0" % port_lcore, "-f", self.lua]
        if pcap:
            cmd += ["-s", "0:" + pcap]
        inner = " ".join(shlex.quote(c) for c in ["ip", "netns", "exec", self.ns] + cmd)
        self.screen_f = open(self.screen, "wb")
        self.proc = subprocess.Popen(["script", "-qfec", inner, "/dev/null"],
                                     stdin=subprocess.DEVNULL, stdout=self.screen_f,
                                     stderr=subprocess.STDOUT, start_new_session=True)


# --- the pcap -------------------------------------------------------------------

def in_span(seq, lo, n):
    """seq within [lo, lo + n) modulo 2^32."""
    return (seq - lo) % (1 << 32) < n


def tuple_frames(dst_mac, conn, window, vcap, spread, seed):
    """One pcap cycle [(kind, frame)], kinds interleaved at random. `conn`:
    the peer's report (lport, iss, irs, sent, received); `window`: the window
    iwarpd offers F now; `vcap`: the most F's peer sends in the run;
    `spread`: how far into F's stream the rst_window and syn_window targets
    reach (half of them; the other half, and every data_window target, lie
    in the window iwarpd offers now)."""
    rnd = random.Random(seed)
    x0 = (conn["iss"] + 1 + conn["sent"]) % (1 << 32)      # iwarpd's RCV.NXT now
    s0 = (conn["irs"] + 1 + conn["received"]) % (1 << 32)  # iwarpd's SND.NXT now
    wmax = max(window, RCV_BUFFER)  # the most iwarpd's window can reach
    span_lo, span_n = (x0 - G) % (1 << 32), vcap + wmax + 2 * G
    half = 1 << 31
    e = pt.eth(dst_mac, PKT_MAC, 0x0800)
    w = min(window, 1 << 16) - 256  # the initial window targets
    spread = min(spread, vcap)

    def seg(seq, ack, flags, payload=b""):
        return e + pt.ipv4(PEER_IP, IWARPD_IP, pt.tcp_segment(PEER_IP, IWARPD_IP, conn["lport"],
                                                               PORT, seq % (1 << 32), ack, flags,
                                                               payload))

    def blind():  # anywhere but the span F's stream and window can reach
        while True:
            s = rnd.getrandbits(32)
            if not in_span(s, span_lo, span_n):
                return s

    def ahead():  # ahead of every RCV.NXT + window of the run, by less than 2^31
        return x0 + vcap + wmax + G + rnd.randrange(half - vcap - wmax - 2 * G)

    def behind():  # behind every RCV.NXT of the run, by less than 2^31
        return x0 - G - PAYLOAD - rnd.randrange(half - vcap - 2 * G)

    def target(n):  # in the window now, or (every other call) further into F's stream
        target.k += 1
        return rnd.randrange(w if target.k % 2 else n)
    target.k = 0

    # Beyond anything iwarpd sends in the run (it sends back at most what the
    # peer wrote, plus FPDU framing): SEG.ACK > SND.NXT throughout.
    def bad_ack():
        return (s0 + vcap + vcap // 8 + G + rnd.randrange(1 << 27)) % (1 << 32)
    payload = bytes(rnd.getrandbits(8) for _ in range(PAYLOAD))
    make = {
        "rst_blind": lambda: seg(blind(), 0, pt.RST),
        "rstack_blind": lambda: seg(blind(), rnd.getrandbits(32), pt.RST | pt.ACK),
        # 2 mod 4 past RCV.NXT: F's stream only ever stops at multiples of 4.
        "rst_window": lambda: seg(x0 + 4 * (target(spread) // 4) + 2, 0, pt.RST),
        "syn_blind": lambda: seg(blind(), 0, pt.SYN),
        "syn_window": lambda: seg(x0 + target(spread), 0, pt.SYN),
        "data_ahead": lambda: seg(ahead(), rnd.getrandbits(32), pt.ACK | pt.PSH, payload),
        "data_behind": lambda: seg(behind(), rnd.getrandbits(32), pt.ACK | pt.PSH, payload),
        "data_window": lambda: seg(x0 + rnd.randrange(w - PAYLOAD), bad_ack(), pt.ACK | pt.PSH,
                                   payload),
    }
    out = [(k, make[k]()) for k, (n, _) in KINDS.items() for _ in range(n)]
    rnd.shuffle(out)
    return out, x0, s0


# --- the scenario ---------------------------------------------------------------

def goodput_row(v, name, ev):
    ok = ev["error"] is None and ev["rounds"] > 0
    v.add("%s: every round read back intact" % name,
          "%d rounds of %d KiB, %.1f MiB written + %.1f MiB read in %.1f s%s" %
          (ev["rounds"], ev["region"] // 1024, ev["written"] / MIB, ev["read"] / MIB,
           ev["seconds"], "; " + ev["error"] if ev["error"] else ""),
          "no error, at least one round", ok)
    return ok


def kernel_tcpext(d):
    """The namespace's TcpExt counters (/proc/net/netstat)."""
    lines = d.ns_run("cat", "/proc/net/netstat").stdout.splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], (int(x) for x in values.split()[1:])))
    return {}


def rate(samples, t0, t1):
    """Frames per second pk0 took in between t0 and t1 (monotonic), from the
    samples inside that span."""
    inside = [(t, rx) for t, rx, _ in samples if t0 <= t <= t1]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return 0.0
    return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


def scenario(args, work, pktgen_bin):
    d = TupleDaemon(args)
    v = pt.Verdict("tuple_flood: an iWARP transfer from a kernel TCP peer while pktgen floods "
                   "its 4-tuple (net_tap, bridge)")
    p = f = None
    try:
        d.start()
        f = PeerProc(d.ns, work, args.seconds, args.vcap_mib, args.region_kib, wait_go=True)
        conn = f.wait("connected", 20)
        if conn["iss"] is None or conn["irs"] is None:
            raise TestFailure("the peer did not see its own handshake on %s: %s" % (BR_IF, conn))
        log("flood connection F: %s:%d -> %s:%d, ISS %d, iwarpd's ISS %d, %d bytes sent, %d "
            "received, window offered %d; scratch STag %#x TO %#x; CRC32c %s" %
            (PEER_IP, conn["lport"], IWARPD_IP, PORT, conn["iss"], conn["irs"], conn["sent"],
             conn["received"], conn["snd_wnd"], conn["stag"], conn["to"], conn["crc"]))
        if conn["sent"] % 4:
            raise TestFailure("F's stream is not 4-byte aligned (%d bytes sent)" % conn["sent"])
        window = conn["snd_wnd"]
        if window < 4096:
            raise TestFailure("iwarpd offers F a window of %d bytes (tcp_info snd_wnd)" % window)
        frames, x0, s0 = tuple_frames(d.mac, conn, window, args.vcap_mib * MIB,
                                      args.spread_mib * MIB, 5961 + conn["lport"])
        cycle = len(frames)
        pcap = os.path.join(work, "tuple.pcap")
        pt.write_pcap(pcap, [fr for _, fr in frames])
        log("pcap: %d frames a cycle aimed at RCV.NXT %d / SND.NXT %d: %s" %
            (cycle, x0, s0, ", ".join("%s %d" % (k, n) for k, (n, _) in KINDS.items())))

        stop_file, go_file = os.path.join(work, "stop"), os.path.join(work, "go")
        p = TapPktgen(pktgen_bin, work, d.ns, None, "tuple")
        p.start("tuple.lua", {"STOP": stop_file, "GO": go_file,
                              "MAX_MS": int((args.seconds + args.pre_flood) * 1000 + 60000),
                              "SETTLE_MS": 2100},
                pcap=pcap, cpus=args.pktgen_cpus or None)
        d.join_pktgen()
        if not p.wait_line("ready", 40):
            raise TestFailure("pktgen did not get ready:\n%s" % p.screen_text()[-3000:])

        # Flood-free run: connection B, pktgen silent on the link.
        ext_b0 = kernel_tcpext(d)
        b = PeerProc(d.ns, work, args.seconds, args.vcap_mib, args.region_kib, wait_go=False)
        try:
            b.wait("connected", 20)
            base = b.wait("done", args.seconds + 60)
            b.wait("closed", 10)
        finally:
            b.stop()
        ok_base = goodput_row(v, "flood-free transfer (connection B)", base)
        paws_b = kernel_tcpext(d).get("PAWSEstab", 0) - ext_b0.get("PAWSEstab", 0)

        rss0 = pt.vm_rss_kib(d.proc.pid)
        before, links0, ext0 = counters(d), d.link_stats(), kernel_tcpext(d)
        open(go_file, "w").close()
        if not p.wait_line("flooding", 10):
            raise TestFailure("pktgen did not start flooding:\n%s" % p.screen_text()[-3000:])
        t_flood = time.monotonic()
        probe = {"n": 0, "fail": 0, "worst_ms": 0.0, "rss_max": rss0, "stop": False}
        samples = []  # (time, frames pk0 took in, F's SRTT at iwarpd or -1)

        def prober():
            while not probe["stop"]:
                t0 = time.monotonic()
                r = dpi.run([args.iwarpctl, "--prefix", d.prefix, "stats"], check_rc=False,
                            timeout=10)
                ms = (time.monotonic() - t0) * 1000
                probe["n"] += 1
                probe["fail"] += r.returncode != 0
                probe["worst_ms"] = max(probe["worst_ms"], ms)
                probe["rss_max"] = max(probe["rss_max"], pt.vm_rss_kib(d.proc.pid))
                samples.append((time.monotonic(),) + d.ring_sample(conn["lport"], args.debug))
                time.sleep(0.25)
        th = threading.Thread(target=prober)
        th.start()
        try:
            time.sleep(args.pre_flood)
            mid = counters(d)
            t_go = time.monotonic()
            f.say("go")
            under = f.wait("done", args.seconds + 60)
            t_done = time.monotonic()
        finally:
            probe["stop"] = True
            th.join()
            t_stop = time.monotonic()
            open(stop_file, "w").close()
        if not p.wait_line("done", 20):
            raise TestFailure("pktgen did not stop (its output: %s):\n%s" %
                              (p.lines(), p.screen_text()[-1500:]))
        version = p.version()
        res = pt.parse_kv([l for l in p.lines() if l.startswith("flood ")][0])
        time.sleep(0.3)
        after, links1, ext1 = counters(d), d.link_stats(), kernel_tcpext(d)
        if args.debug:
            log(d.ns_run("ss", "-tinoe", check_rc=False).stdout)
            log(d.ctl("connections", check_rc=False).stdout)
        f.say("close")
        closed = f.wait("closed", 10)
        p.stop()
        p = None

        dd, dmid = pt.delta(before, after), pt.delta(before, mid)
        link = {i: {k: links1[i][k] - links0[i][k] for k in links1[i]}
                for i in links1 if i in links0}
        ext = {k: ext1.get(k, 0) - ext0.get(k, 0) for k in ext1}
        sent, secs = res["tx"], t_stop - t_flood
        if args.debug:
            for t, rx, srtt in samples:
                log("  t %6.2f s  pk0 rx %9d  F srtt %s us" % (t - t_flood, rx, srtt))
        log("pktgen version: %s" % version)
        log("pktgen: sent %d frames in %.1f s (%.0f frames/s; %.0f/s on the idle connection, "
            "%.0f/s during its transfer), received %d, oerrors %d" %
            (sent, secs, sent / secs, rate(samples, t_flood, t_go), rate(samples, t_go, t_done),
             res["rx"], res["oerrors"]))
        log("kernel links during the flood: %s" % ", ".join(
            "%s %s" % (i, " ".join("%s %d" % kv for kv in sorted(link[i].items())))
            for i in (PK_IF, IW_IF, BR_IF) if i in link))
        log("iwarpd counters during the flood (non-zero): " +
            ", ".join("%s %d" % (k, x) for k, x in sorted(dd.items()) if x))
        log("  of them in the %.1f s of flood before F's transfer: %s" %
            (args.pre_flood, ", ".join("%s %d" % (k[5:], dmid.get(k, 0)) for k in REASONS)))
        log("the peer's kernel during the flood (TcpExt, non-zero): " +
            ", ".join("%s %d" % (k, x) for k, x in sorted(ext.items()) if x))

        # The transfer.
        ok_f = goodput_row(v, "transfer under flood (connection F)", under)
        share = under["mbps"] / max(base["mbps"], 1e-9)
        v.add("goodput kept", "%.0f of %.0f Mbit/s (%.2f)" % (under["mbps"], base["mbps"], share),
              ">= %.2f of the flood-free run" % args.goodput_share,
              ok_base and ok_f and share >= args.goodput_share)
        paws = ext.get("PAWSEstab", 0)
        v.add("iwarpd's timestamps never go back (RFC 7323 5)",
              "the peer's kernel discarded %d of iwarpd's segments by PAWS under the flood (%d "
              "in the flood-free run); iwarpd retransmitted %d segments, %d RTO timeouts under "
              "the flood" % (paws, paws_b, dd.get("tcp.retransmitted_segments", 0),
                             dd.get("tcp.timeouts", 0)),
              "TcpExtPAWSEstab +0 in both (TSval monotonic non-decreasing)",
              paws == 0 and paws_b == 0)

        # The flood and the link.
        v.add("flood offered", "%d frames in %.1f s, %.0f frames/s (pktgen oerrors %d)" %
              (sent, secs, sent / secs, res["oerrors"]),
              "more than one %d-frame pcap cycle, no transmit error" % cycle,
              sent > cycle and res["oerrors"] == 0)
        pk, iw = link.get(PK_IF, {}), link.get(IW_IF, {})
        lost_max = iw.get("tx_dropped", 0)
        v.add("pktgen's frames entered the link",
              "sent %d; %s rx %d, rx_dropped %d" % (sent, PK_IF, pk.get("rx", 0),
                                                     pk.get("rx_dropped", 0)),
              "pk0 rx == sent, nothing dropped", pk.get("rx", 0) == sent and
              pk.get("rx_dropped", 0) == 0)
        v.add("lost on the link before iwarpd",
              "%s tx %d, tx_dropped %d (pktgen's and the peer's frames); iwarpd rx_packets +%d"
              % (IW_IF, iw.get("tx", 0), lost_max, dd.get("rx_packets", 0)),
              "iwarpd took in every frame iw0 passed; iw0 dropped (ring full: iwarpd fell "
              "behind) at most 1% of those sent; drops widen the accounting below",
              iw.get("tx", 0) == dd.get("rx_packets", 0) and lost_max * 100 <= sent)

        # Accounting.
        full, part = divmod(sent, cycle)
        expected = {k: n * full for k, (n, _) in KINDS.items()}
        for k, _ in frames[:part]:
            expected[k] += 1
        peer_extra = under["retrans"]  # the peer's retransmissions: tcp_duplicate_data at most
        fixed = {"drop_tcp_rst_out_of_window": expected["rst_blind"] + expected["rstack_blind"],
                 "drop_tcp_out_of_window": expected["syn_blind"] + expected["data_ahead"],
                 "drop_tcp_duplicate_data": expected["data_behind"]}
        log("fixed outcomes: tcp_rst_out_of_window %d (rst_blind + rstack_blind), "
            "tcp_out_of_window %d (syn_blind + data_ahead), tcp_duplicate_data %d (data_behind)"
            % tuple(fixed[r] for r in ("drop_tcp_rst_out_of_window", "drop_tcp_out_of_window",
                                       "drop_tcp_duplicate_data")))
        for kind, (in_r, out_r) in WINDOW_KINDS.items():
            n_in, n_out = dd.get(in_r, 0), dd.get(out_r, 0) - fixed[out_r]
            up = peer_extra if out_r == "drop_tcp_duplicate_data" else 0
            v.add("%s: %s + %s" % (kind, in_r[5:], out_r[5:]),
                  "%d + %d = %d (%s less the fixed %d)" % (n_in, n_out, n_in + n_out, out_r[5:],
                                                         fixed[out_r]),
                  "== %d sent%s%s" % (expected[kind],
                                       " (+ <= %d peer retransmissions)" % up if up else "",
                                       " (+- %d lost on the link)" % lost_max if lost_max else ""),
                  n_in > 0 and -lost_max <= n_in + n_out - expected[kind] <= up + lost_max)
        total = sum(dd.get(r, 0) for r in REASONS)
        v.add("every flood frame accounted",
              "%d counted under %s; %d sent; at most %d lost on the link" %
              (total, "/".join(r[9:] for r in REASONS), sent, lost_max),
              "sent - lost <= counted <= sent + %d peer retransmissions" % peer_extra,
              sent - lost_max <= total <= sent + peer_extra)
        others = {k: x for k, x in dd.items() if k.startswith("drop_") and x and k not in REASONS}
        v.add("no other drop", others or "none",
              "no drop reason but the six above moved (no tx_ring_full, no_mbuf, ...)", not others)
        chal = sum(dd.get(r, 0) for r in CHALLENGED)
        ca, cs = dd.get("tcp.challenge_acks", 0), dd.get("tcp.challenge_acks_suppressed", 0)
        limit = 1000 * (int(secs) + 2)
        v.add("challenge ACKs (RFC 5961 3.2, 4.2, 5.2; rate limited, 7)",
              "sent %d + suppressed %d = %d; challenged drops %d" % (ca, cs, ca + cs, chal),
              "sent + suppressed == rst_challenged + syn_challenged + ack_invalid > 0; sent <= "
              "1000/s (%d)" % limit, ca + cs == chal and chal > 0 and ca <= limit)
        acks = dd.get("tcp.acks_out", 0)
        oow = dd.get("drop_tcp_out_of_window", 0) + dd.get("drop_tcp_duplicate_data", 0)
        v.add("out-of-window segments answered (RFC 9293 3.10.7.4)",
              "acks_out %d >= out_of_window + duplicate_data %d + challenge ACKs %d" %
              (acks, oow, ca), "an ACK for each, none for an RST", acks >= oow + ca)
        v.add("no RST accepted", "rsts_in %d, closed_reset %d" %
              (dd.get("tcp.rsts_in", 0), dd.get("tcp.closed_reset", 0)),
              "both 0: only an RST at RCV.NXT resets (RFC 5961 3.2), none carries it",
              dd.get("tcp.rsts_in", 0) == 0 and dd.get("tcp.closed_reset", 0) == 0)
        v.add("iwarpctl answered throughout", "%d probes, %d failed, slowest %.0f ms" %
              (probe["n"], probe["fail"], probe["worst_ms"]), "every probe within 2000 ms",
              probe["n"] > 0 and probe["fail"] == 0 and probe["worst_ms"] < 2000)
        v.add("memory bounded", "VmRSS %d -> max %d KiB" % (rss0, probe["rss_max"]),
              "grows by less than 32 MiB", probe["rss_max"] - rss0 < 32 * 1024)
        v.add("F ends normally", "the peer's FIN answered: %s" % closed["how"],
              "fin (not reset)", closed["how"] == "fin")
        rc, stop_s = d.stop()
        v.add("iwarpd stops cleanly", "SIGTERM: exit %s after %.2f s" % (rc, stop_s),
              "exit 0, no sanitizer report", rc == 0 and not d.sanitizer_reports())
        log("")
        log("flood offered %.0f frames/s (%d frames in %.1f s; %.0f/s on the idle connection, "
            "%.0f/s during the transfer), all taken in by iwarpd but %d lost on the link; "
            "goodput %.0f Mbit/s flood-free, %.0f under flood, kept %.2f" %
            (sent / secs, sent, secs, rate(samples, t_flood, t_go), rate(samples, t_go, t_done),
             lost_max, base["mbps"], under["mbps"], share))
    finally:
        if p is not None:
            p.stop()
        if f is not None:
            f.stop()
        d.cleanup()
    v.print()
    return v.ok()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", nargs="?", default="run", choices=["run", "peer"])
    ap.add_argument("--iwarpd")
    ap.add_argument("--iwarpctl")
    ap.add_argument("--pktgen")
    ap.add_argument("--seconds", type=float, default=5.0,
                    help="each transfer's duration (the flood lasts it plus --pre-flood)")
    ap.add_argument("--pre-flood", type=float, default=1.0,
                    help="seconds of flood on the idle connection before its transfer")
    ap.add_argument("--goodput-share", type=float, default=0.25)
    ap.add_argument("--vcap-mib", type=int, default=512,
                    help="most a transfer peer sends (the blind kinds stay outside it)")
    ap.add_argument("--spread-mib", type=int, default=64,
                    help="half of the rst_window and syn_window targets lie up to this far "
                         "into the flood connection's stream (the rest in its initial window)")
    ap.add_argument("--region-kib", type=int, default=1024,
                    help="scratch region per QP, written and read back each round")
    ap.add_argument("--idle-sleep-us", type=int, default=10)
    ap.add_argument("--txqueuelen", type=int, default=16384,
                    help="txqueuelen of iwarpd's TAP (the kernel's ring towards iwarpd)")
    ap.add_argument("--pktgen-cpus", default="",
                    help="EAL --lcores map for pktgen (default: -l 0,1, main lcore 1)")
    ap.add_argument("--debug", action="store_true",
                    help="print F's SRTT over time and the kernel's view of F at the end")
    ap.add_argument("--workdir")
    ap.add_argument("--wait-go", action="store_true")
    ap.add_argument("--attempts", type=int, default=1,
                    help="run the scenario again after a failed verdict, up to this many "
                         "times in all (each verdict is printed); on 2 cores pktgen's "
                         "busy-polling TX, iwarpd's worker and the kernel peer share the CPUs")
    args = ap.parse_args()
    if args.mode == "peer":
        return peer_main(args)
    if not args.iwarpd or not args.iwarpctl:
        ap.error("--iwarpd and --iwarpctl are required")
    pktgen_bin = pt.find_pktgen(args.pktgen)
    if pktgen_bin is None:
        log("SKIP: pktgen not found ($PKTGEN or ../shared/pktgen/pktgen beside the repository)")
        return SKIP
    dpi.skip_unless_possible()
    for tool in ("script", "bridge"):
        if shutil.which(tool) is None:
            log("SKIP: '%s' not installed" % tool)
            return SKIP
    if args.vcap_mib > 1536 or args.spread_mib > args.vcap_mib:
        ap.error("--vcap-mib at most 1536 (the blind kinds need the rest of the sequence "
                 "space), --spread-mib at most --vcap-mib")
    log("pktgen: %s" % pktgen_bin)
    # meson's timeout sends SIGTERM: an exception, so that the cleanup runs.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    for attempt in range(1, max(1, args.attempts) + 1):
        work = tempfile.mkdtemp(prefix="iwarpd_tuple_")
        os.chmod(work, 0o755)
        try:
            ok = scenario(args, work, pktgen_bin)
        except Skip as e:
            log("SKIP: %s" % e)
            return SKIP
        except TestFailure as e:
            log("FAIL: %s" % e)
            ok = False
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if ok:
            return 0
        if attempt < args.attempts:
            log("attempt %d of %d failed; the CPUs are shared by pktgen, iwarpd and the kernel "
                "peer, so the scenario runs again from the start" % (attempt, args.attempts))
    return 1


if __name__ == "__main__":
    sys.exit(main())
