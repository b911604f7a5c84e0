#!/usr/bin/env python3
"""Traffic scenario `sctp_flood`: RDMA over SCTP (RFC 5043) between two
iwarpd daemons while Pktgen-DPDK replays, at its full rate, SCTP packets at
the responder daemon: INITs with the DDP adaptation indication from rotating
sources, COOKIE ECHOs with forged cookies, DDP Segment chunks (PPID 16, well
formed and malformed) and DDP Stream Session Control messages (PPID 17),
ABORTs and SHUTDOWNs aimed at the transfer's own association with wrong
verification tags (blind injection, RFC 9260 8.5), and packets with a bad
CRC32c, a truncated chunk header or a chunk length beyond the packet.

  sctp_flood.py --iwarpd PATH --iwarpctl PATH [--pktgen PATH] [--seconds S]
                [--transfer-mib N] [--goodput-share F] [--sources N]

Topology (the `flood` scenario of pktgen_traffic.py, over SCTP): daemon A
(198.18.1.1, an SCTP iwarp_responder on port 5043) and daemon B (198.18.1.2,
iwarp_client services, transport: sctp) are joined by one net_memif pair; A
has a second net_memif port (198.18.3.1/24, gateway pktgen's 198.18.3.2)
that pktgen floods. The flood sources 198.18.4.0/24 are reached through
pktgen. The transfer (RDMA Write, read back and compared, SHA-256 of the
data) runs once alone and once under the flood, in the same minutes.

Aiming at the transfer's association: B's SCTP port is ephemeral (usrsctp
picks it at random) and iwarpctl shows neither it nor the verification tags,
so the test learns them from the wire: a small LD_PRELOAD library, compiled
here from the C source below, wraps usrsctp's conn_output callback and
notes B's INIT and COOKIE ECHO (ports, tags, the state cookie). On A the
same library also copies usrsctp's own statistics (usrsctp_get_stat, which
iwarpd calls whenever iwarpctl reads its counters) to a file, and counts the
packets usrsctp sends by chunk type: iwarpctl exports only four of usrsctp's
statistics, so the bad-verification-tag, short-header and INIT-ACK counts are
read through this tap and labelled as such. The library changes nothing:
every call goes on to usrsctp unchanged.

Sequence of the flood run: B starts with three clients on one association:
`open` (a small Write at 300 ms: the association comes up and the tap sees
its port and tags), `xfer` (the measured transfer, after a start delay) and
`hold` (never starts, so the association outlives the transfer and the flood
never meets a closing one). Once `open` is over, B is frozen (SIGSTOP), the
pcap is built for B's port, pktgen starts and floods, then B is released
(SIGCONT): the transfer starts under the flood, with no guessed delay.

iwarpd's IPv4 layer takes an address only on its own port (strong host), so
the blind packets are addressed to A's pktgen-link address; usrsctp (AF_CONN)
looks an association up by the link cookie of the source address and the
ports, so they reach the transfer's association all the same.

Pass rules (each a row of the verdict table): both transfers complete with
the SHA-256 of the data read back; the one under the flood keeps
--goodput-share of the flood-free goodput; the accounting is first checked on
the flood-free run (A took in exactly what B sent and the reverse); every
frame pktgen sent reaches A's SCTP endpoint, and each kind of flood packet is
counted where a counter exists (iwarpctl sctp: bad CRC32c, shorter than the
common header; usrsctp through the tap: bad verification tag, short chunk
header, INIT ACKs) in its share of the pcap, the rest (forged cookies, a
control chunk of length 0: nothing counts them) as the remainder of the
packets handed to usrsctp; A answers nothing but INITs (no ABORT), pktgen
receives the INIT ACKs; A's DDP layer takes exactly B's DDP Segment and
Session Control chunks, with no DDP drop, stream end, Terminate or refusal;
the association stays up (one accept, both sessions ended by B's Terminate);
no association or peer-table overflow from the INITs and cookies; iwarpctl
answers every probe within 2 s; A's VmRSS grows by less than 32 MiB.

Exit status: 0 pass, 1 fail, 77 skip (no pktgen, not root, no hugepages, no
C compiler for the tap).
"""

import argparse
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pktgen_traffic as pt  # noqa: E402  (Pktgen, pcap, Verdict, IPv4 builders)

sys.path.insert(0, os.path.join(pt.ROOT, "tests"))
import iwarp_peer as iwp  # noqa: E402  (crc32c, DDP/RDMAP headers)
import sctp_dataplane as sdp  # noqa: E402  (sctp: section, responder service)

iwd, dpi, log, TestFailure = pt.iwd, pt.dpi, pt.log, pt.TestFailure

SKIP = 77
SCTP_PORT = sdp.SCTP_PORT      # A's iwarp_responder (5043)
DDP_STREAMS = 8                # sctp.streams of both daemons
MIB = 1 << 20

# --- the tap: LD_PRELOAD library over usrsctp -------------------------------------

TAP_C = r"""
/* sctp_flood.py's tap: wraps usrsctp_init_nothreads (to see every packet
 * usrsctp sends, through its conn_output callback) and usrsctp_get_stat (to
 * copy usrsctp's statistics to a file). Observation only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <usrsctp.h>

typedef int (*conn_output_fn)(void *, void *, size_t, uint8_t, uint8_t);
typedef void (*debug_fn)(const char *, ...);
static conn_output_fn real_output;
static FILE *hs_log;
static int hs_logged;
static uint64_t out_by_chunk[256];
static uint64_t out_packets;

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int tap_output(void *addr, void *buf, size_t len, uint8_t tos, uint8_t df) {
  const uint8_t *p = buf;
  if (len >= 16) {
    ++out_by_chunk[p[12]];
    ++out_packets;
    /* INIT, INIT ACK, COOKIE ECHO: ports, tags and (COOKIE ECHO) the cookie */
    if (hs_log != NULL && hs_logged < 16 && (p[12] == 1 || p[12] == 2 || p[12] == 10)) {
      unsigned clen = (unsigned)p[14] << 8 | p[15];
      fprintf(hs_log, "chunk=%u sport=%u dport=%u vtag=%u", p[12], (unsigned)p[0] << 8 | p[1],
              (unsigned)p[2] << 8 | p[3], be32(p + 4));
      if (p[12] != 10 && len >= 32)
        fprintf(hs_log, " itag=%u itsn=%u", be32(p + 16), be32(p + 28));
      if (p[12] == 10 && clen >= 4 && 12 + (size_t)clen <= len) {
        fprintf(hs_log, " cookie=");
        for (unsigned i = 4; i < clen; ++i) fprintf(hs_log, "%02x", p[12 + i]);
      }
      fprintf(hs_log, "\n");
      fflush(hs_log);
      ++hs_logged;
    }
  }
  return real_output(addr, buf, len, tos, df);
}

void usrsctp_init_nothreads(uint16_t port, conn_output_fn out, debug_fn dbg) {
  void (*real)(uint16_t, conn_output_fn, debug_fn) =
      (void (*)(uint16_t, conn_output_fn, debug_fn))dlsym(RTLD_NEXT, "usrsctp_init_nothreads");
  const char *path = getenv("SCTP_FLOOD_TAP_LOG");
  if (path != NULL) hs_log = fopen(path, "a");
  real_output = out;
  real(port, out != NULL ? tap_output : NULL, dbg);
}

void usrsctp_get_stat(struct sctpstat *st) {
  void (*real)(struct sctpstat *) =
      (void (*)(struct sctpstat *))dlsym(RTLD_NEXT, "usrsctp_get_stat");
  real(st);
  const char *path = getenv("SCTP_FLOOD_TAP_STATS");
  if (path == NULL) return;
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (f == NULL) return;
#define S(x) fprintf(f, #x "=%u\n", (unsigned)st->x);
  S(sctps_recvpackets) S(sctps_recvdatagrams) S(sctps_hdrops) S(sctps_badsum)
  S(sctps_noport) S(sctps_badvtag) S(sctps_outoftheblue) S(sctps_checksumerrors)
  S(sctps_recvdata) S(sctps_incontrolchunks) S(sctps_aborted) S(sctps_shutdown)
  S(sctps_passiveestab) S(sctps_activeestab) S(sctps_currestab) S(sctps_sendpackets)
  S(sctps_recvdupdata) S(sctps_nomem) S(sctps_datadropchklmt) S(sctps_datadroprwnd)
  S(sctps_recvauthmissing)
#undef S
  fprintf(f, "out_packets=%llu\n", (unsigned long long)out_packets);
  for (int i = 0; i < 256; ++i)
    if (out_by_chunk[i] != 0) fprintf(f, "out_chunk_%d=%llu\n", i,
                                      (unsigned long long)out_by_chunk[i]);
  fclose(f);
  rename(tmp, path);
}
"""

# First chunk types of the packets usrsctp sends (RFC 9260 3.2).
CHUNK_NAMES = {0: "DATA", 1: "INIT", 2: "INIT_ACK", 3: "SACK", 4: "HEARTBEAT",
               5: "HEARTBEAT_ACK", 6: "ABORT", 7: "SHUTDOWN", 8: "SHUTDOWN_ACK", 9: "ERROR",
               10: "COOKIE_ECHO", 11: "COOKIE_ACK", 14: "SHUTDOWN_COMPLETE"}


def build_tap(work):
    """Compiles the tap; None (and the reason printed) without a compiler or
    usrsctp.h."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        log("no C compiler (cc) for the usrsctp tap")
        return None
    src = os.path.join(work, "sctp_tap.c")
    so = os.path.join(work, "sctp_tap.so")
    with open(src, "w") as f:
        f.write(TAP_C)
    r = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", so, src, "-ldl"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        log("the usrsctp tap does not build (%s): %s" % (cc, r.stderr.strip()[-600:]))
        return None
    return so


def read_kv_file(path):
    try:
        with open(path) as f:
            return {k: int(v) for k, v in (l.strip().split("=", 1) for l in f if "=" in l)}
    except (OSError, ValueError):
        return {}


def read_handshake(path):
    """The tap's log lines as dicts (chunk, sport, dport, vtag, itag, cookie)."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                d = {}
                for t in line.split():
                    k, _, v = t.partition("=")
                    d[k] = v if k == "cookie" else int(v)
                out.append(d)
    except (OSError, ValueError):
        pass
    return out


# --- SCTP packets (RFC 9260 3) and RFC 5043 user data -------------------------------

INIT, INIT_ACK, ABORT, SHUTDOWN, COOKIE_ECHO, DATA, SACK = 1, 2, 6, 7, 10, 0, 3
PPID_DDP_SEGMENT, PPID_DDP_CONTROL = 16, 17     # RFC 5043 5.2
ADAPTATION_DDP = struct.pack("!HHI", 0xC006, 8, 0x00000001)  # RFC 5043 5.1
SIG_SIZE = 20   # usrsctp's state cookie signature (HMAC-SHA1), at the cookie's end
# struct sctp_state_cookie (usrsctp sctp_header.h, x86-64): my_vtag, peerport
# and myport, which usrsctp compares with the packet before the HMAC. The test
# checks them against B's real cookie before it forges any.
COOKIE_MY_VTAG, COOKIE_PEERPORT, COOKIE_MYPORT = 48, 96, 98


def chunk(ctype, flags, body, length=None):
    """A chunk with its 4-byte header; `length` overrides the length field
    (kept as given, so it can lie). Padded to 4 bytes."""
    c = struct.pack("!BBH", ctype, flags, 4 + len(body) if length is None else length) + body
    return c + b"\0" * (-len(c) % 4)


def sctp_packet(sport, dport, vtag, chunks, bad_crc=False):
    """Common header + chunks, CRC32c over the packet with the field zero,
    stored as RFC 9260 appendix B says (the iSCSI/MPA byte order)."""
    p = struct.pack("!HHII", sport, dport, vtag, 0) + chunks
    crc = iwp.crc32c(p)
    if bad_crc:
        crc ^= 0x5A5A5A5A
    return p[:8] + struct.pack("<I", crc) + p[12:]


def init_chunk(itag, itsn, streams=DDP_STREAMS, params=ADAPTATION_DDP):
    return chunk(INIT, 0, struct.pack("!IIHHI", itag, 65536, streams, streams, itsn) + params)


def data_chunk(tsn, sid, ppid, user, flags=0x07, length=None):
    """Unordered (U), one fragment (B, E): RFC 5043 10 sends every DDP chunk
    unordered; the stream sequence number is unused then (0)."""
    return chunk(DATA, flags, struct.pack("!IHHI", tsn, sid, 0, ppid) + user, length)


def ddp_segment(ssn, header, payload=b""):
    """RFC 5043 5.2.2: DDP-SSN, then the DDP segment (RFC 5041)."""
    return struct.pack("!H", ssn) + header + payload


def session_control(ssn, function, private=b""):
    """RFC 5043 5.2.3: DDP-SSN, function code, private data."""
    return struct.pack("!HH", ssn, function) + private


def forged_cookie(template, sport, vtag, rnd):
    """B's real state cookie with the ports and tag a new association from
    (source, sport) would carry, a few bytes of its body changed and its
    signature changed: it passes usrsctp's size, port and tag checks and
    fails the HMAC (RFC 9260 5.1.5 step 1: silently discarded)."""
    c = bytearray(template)
    struct.pack_into("!I", c, COOKIE_MY_VTAG, vtag)
    struct.pack_into("!HH", c, COOKIE_PEERPORT, sport, SCTP_PORT)
    for i in range(len(c) - SIG_SIZE, len(c)):
        c[i] = rnd.getrandbits(8)
    return bytes(c)


def wrong_vtag(rnd, right):
    while True:
        v = rnd.getrandbits(32)
        if v not in right:
            return v


def flood_packets(b_port, right_vtags, cookie_template, sources, seed=5043):
    """One pcap cycle of the flood: [(kind, source IP, SCTP packet)].

    - from `sources` rotating addresses in 198.18.4.0/24: INITs with the DDP
      adaptation indication (answered statelessly with an INIT ACK),
      COOKIE ECHOs with forged cookies, INITs with a bad CRC32c;
    - from B's address and port into the transfer's association (A's port
      5043), every tag wrong (`right_vtags` are never used): DDP Segment
      chunks, valid and malformed, Session Control messages, ABORTs (T bit
      clear and set), SHUTDOWNs, a chunk longer than its packet, a control
      chunk with length 0, a chunk header cut short, a bad CRC32c, and
      packets shorter than the SCTP common header."""
    rnd = random.Random(seed)
    out = []
    b_ip = iwd.B_IP
    for i in range(sources):
        src = pt.FLOOD_NET + str(1 + i)
        sp = 20000 + rnd.randrange(40000)
        for k in range(4):
            out.append(("init", src, sctp_packet(sp + k, SCTP_PORT, 0,
                                                 init_chunk(wrong_vtag(rnd, right_vtags) or 1,
                                                            rnd.getrandbits(32)))))
        tag = wrong_vtag(rnd, right_vtags)
        if cookie_template is not None:
            cookie = forged_cookie(cookie_template, sp + 5, tag, rnd)
        else:
            cookie = bytes(rnd.getrandbits(8) for _ in range(300))
        out.append(("cookie_forged", src, sctp_packet(sp + 5, SCTP_PORT, tag,
                                                      chunk(COOKIE_ECHO, 0, cookie))))
        out.append(("bad_crc", src, sctp_packet(sp + 6, SCTP_PORT, 0,
                                                init_chunk(rnd.getrandbits(32) | 1,
                                                           rnd.getrandbits(32)), bad_crc=True)))

    def blind(kind, chunks, **kw):
        out.append((kind, b_ip, sctp_packet(b_port, SCTP_PORT, wrong_vtag(rnd, right_vtags),
                                            chunks, **kw)))
    W, S = iwp.OP_WRITE, iwp.OP_SEND
    for i in range(16):
        sid = i % 4
        tsn = rnd.getrandbits(32)
        ssn = rnd.getrandbits(16)
        payload = bytes(rnd.getrandbits(8) for _ in range(64 + 16 * i))
        write = iwp.DdpHeader(True, W, stag=rnd.getrandbits(32), to=rnd.getrandbits(20)).encode()
        send = iwp.DdpHeader(False, S, qn=0, msn=1 + i, mo=0).encode()
        blind("ddp_write", data_chunk(tsn, sid, PPID_DDP_SEGMENT,
                                      ddp_segment(ssn, write, payload)))
        blind("ddp_send", data_chunk(tsn + 1, sid, PPID_DDP_SEGMENT,
                                     ddp_segment(ssn + 1, send, payload)))
        blind("ddp_truncated", data_chunk(tsn + 2, sid, PPID_DDP_SEGMENT,
                                          ddp_segment(ssn + 2, write[:6])))
        blind("ddp_bad_version",
              data_chunk(tsn + 3, sid, PPID_DDP_SEGMENT,
                         ddp_segment(ssn, iwp.DdpHeader(True, W, stag=7, dv=2).encode(), payload)))
        blind("rdmap_bad_version",
              data_chunk(tsn + 4, sid, PPID_DDP_SEGMENT,
                         ddp_segment(ssn, iwp.DdpHeader(False, S, msn=1, rv=2).encode(), payload)))
        if i % 2 == 0:
            blind("session_control", data_chunk(tsn + 5, sid, PPID_DDP_CONTROL,
                                                session_control(0, 1, b"blind initiate")))
            blind("session_control", data_chunk(tsn + 6, sid, PPID_DDP_CONTROL,
                                                session_control(ssn, 4)))
            # Several DATA chunks bundled in one packet.
            blind("ddp_write", data_chunk(tsn + 7, sid, PPID_DDP_SEGMENT,
                                          ddp_segment(ssn + 3, write, payload[:32])) +
                  data_chunk(tsn + 8, sid, PPID_DDP_SEGMENT, ddp_segment(ssn + 4, write[:3])))
        if i % 4 == 0:
            blind("abort", chunk(ABORT, 0, b""))
            blind("abort", chunk(ABORT, 1, b""))        # T bit: the tag would be the peer's
            blind("shutdown", chunk(SHUTDOWN, 0, struct.pack("!I", tsn)))
            blind("chunk_len_beyond", data_chunk(tsn, sid, PPID_DDP_SEGMENT,
                                                 ddp_segment(ssn, write), length=1200))
            blind("chunk_len_zero", chunk(SACK, 0, struct.pack("!IIHH", tsn, 65536, 0, 0),
                                          length=0))
            # 14 bytes: the common header and half a chunk header.
            out.append(("chunk_hdr_truncated", b_ip,
                        sctp_packet(b_port, SCTP_PORT, wrong_vtag(rnd, right_vtags), b"\x00\x07")))
            blind("bad_crc", data_chunk(tsn, sid, PPID_DDP_SEGMENT,
                                        ddp_segment(ssn, write, payload)), bad_crc=True)
            # Shorter than the 12-byte common header.
            out.append(("too_short", b_ip, struct.pack("!HHI", b_port, SCTP_PORT,
                                                       rnd.getrandbits(32))))
    return out


def frames_of(packets, dst_mac):
    e = pt.eth(dst_mac, pt.PKT_MAC, 0x0800)
    return [(kind, e + pt.ipv4(src, pt.LINK_IP, pkt, proto=132)) for kind, src, pkt in packets]


# Where each kind must show. iwarpctl: the counter of iwarpctl sctp that
# counts it alone. tap: the usrsctp statistic (read through the tap) that
# counts it. None: nothing counts it by itself; it is checked in the
# remainder (packets handed to usrsctp less everything counted).
BLIND = ("ddp_write", "ddp_send", "ddp_truncated", "ddp_bad_version", "rdmap_bad_version",
         "session_control", "abort", "shutdown", "chunk_len_beyond")
KINDS = {
    "init": ("-", "out_chunk_2 (INIT ACKs usrsctp sent)"),
    "cookie_forged": ("-", "-"),
    "bad_crc": ("sctp_rx_bad_crc + sctp_rx_new_peer_bad_crc", "-"),
    "too_short": ("sctp_rx_truncated", "-"),
    "chunk_hdr_truncated": ("-", "sctps_hdrops"),
    "chunk_len_zero": ("-", "-"),
}
for _k in BLIND:
    KINDS[_k] = ("-", "sctps_badvtag")
WHY_UNCOUNTED = {
    "cookie_forged": "usrsctp drops a cookie whose HMAC fails without counting it",
    "chunk_len_zero": "usrsctp drops a control chunk shorter than its header without "
                      "counting it",
}


# --- daemons -----------------------------------------------------------------------

class SctpResponder(iwd.MemifDaemon):
    """Daemon A: the SCTP iwarp_responder on m0 (to B) and a second
    net_memif server port m1 towards pktgen, whose flood sources
    (198.18.4.0/24) are reached through pktgen's address."""

    def __init__(self, args, sock, sock2, sctp):
        super().__init__(args, "fsa", iwd.A_IP, "server", sock, sdp.RESPONDER,
                         sdp.RESPONDER_IWARP, tcp_extra=sctp)
        self.sock2 = sock2

    def config_text(self):
        t = super().config_text()
        t = t.replace('socket-abstract=no"\n',
                      'socket-abstract=no"\n  - name: m1\n    vdev: "net_memif1,role=server,'
                      'socket=%s,socket-abstract=no"\n' % self.sock2, 1)
        t = t.replace("interfaces:\n", "interfaces:\n  - port: m1\n    ipv4: %s/24\n"
                      "    gateway: %s\n" % (pt.LINK_IP, pt.PKT_IP), 1)
        return t


def client_line(name, op, msg, count, qd, stream, start_delay_ms):
    return ("  - {name: %s, type: iwarp_client, transport: sctp, remote: %s, remote_port: %d,"
            " start_delay_ms: %d, op: %s, message_bytes: %d, count: %d, queue_depth: %d,"
            " stream: %d}\n" % (name, iwd.A_IP, SCTP_PORT, start_delay_ms, op, msg, count, qd,
                                stream))


def start_with_env(d, env):
    """Starts daemon `d` with `env` added to its environment (the harness
    starts it with subprocess.Popen, which inherits ours)."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        d.start()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Side:
    """Counters of one daemon at one moment: stats totals, sctp, services,
    the tap's usrsctp statistics."""

    def __init__(self, d, tap_stats=None):
        self.sctp = d.ctl_json("sctp")   # first: it makes iwarpd refresh the tap file
        self.stats = d.totals()
        self.svcs = d.services_by_name()
        self.tap = read_kv_file(tap_stats) if tap_stats else {}


def sctp_in(s):
    """Every IPv4 protocol-132 packet A's SCTP endpoint took in, whatever
    became of it (iwarpctl sctp)."""
    return sum(s.get(k, 0) for k in ("sctp_rx_packets", "sctp_rx_bad_crc", "sctp_rx_truncated",
                                     "sctp_rx_oversize", "sctp_rx_no_peer",
                                     "sctp_rx_peer_table_full", "sctp_rx_new_peer_bad_crc"))


def d_of(a, b, key, part="sctp"):
    return getattr(b, part).get(key, 0) - getattr(a, part).get(key, 0)


DDP_FAULTS = ("sctp_ddp_drop_bad_ppid", "sctp_ddp_drop_bad_stream", "sctp_ddp_ordered_chunk",
              "sctp_ddp_drop_not_up", "sctp_ddp_drop_after_failure", "sctp_ddp_drop_idle",
              "sctp_ddp_initiate_limit", "sctp_ddp_end_illegal_sequence", "sctp_ddp_end_bad_ssn",
              "sctp_ddp_end_reorder_full", "sctp_ddp_end_malformed", "sctp_assoc_refused_no_ddp",
              "sctp_assoc_refused_other", "sctp_accept_overflow",
              "sctp_stream_end_association_down")


# --- one transfer ----------------------------------------------------------------------

class Run:
    """Daemon B (the tap preloaded) with its three clients on one
    association: `open` (a small Write at 300 ms), `xfer` (the measured
    transfer, after --start-delay-ms), `hold` (never starts: it keeps the
    association up until B stops)."""

    def __init__(self, args, sock, sctp, tap_so, work, tag, msg, count, qd):
        self.args, self.sock, self.sctp, self.tap_so = args, sock, sctp, tap_so
        self.log_path = os.path.join(work, "tap_%s.log" % tag)
        self.clients = (client_line("open", "write", 4096, 4, 1, 1, 300) +
                        client_line("xfer", "write", msg, count, qd, 0, args.start_delay_ms) +
                        client_line("hold", "write", 4096, 1, 1, 2, 3600000))
        self.b = iwd.MemifDaemon(args, "fsb" + tag, iwd.B_IP, "client", sock, self.clients,
                                 tcp_extra=sctp)

    def start(self):
        start_with_env(self.b, {"LD_PRELOAD": self.tap_so, "SCTP_FLOOD_TAP_LOG": self.log_path,
                                "ASAN_OPTIONS": "verify_asan_link_order=0:" +
                                os.environ.get("ASAN_OPTIONS", "")})

    def wait_open(self, timeout=20.0):
        """Waits for `open` to finish and its session to end (RFC 5043 6.2
        Terminate both ways) with nothing left to send; returns B's port,
        B's tag (the one A writes), A's tag (the one B writes) and A's state
        cookie as B echoed it."""
        deadline = time.time() + timeout
        while True:
            hs = read_handshake(self.log_path)
            init = [h for h in hs if h.get("chunk") == INIT]
            echo = [h for h in hs if h.get("chunk") == COOKIE_ECHO]
            svcs = self.b.services_by_name()
            st = self.b.ctl_json("sctp")
            if (init and echo and svcs["open"].get("run") in ("ok", "failed") and
                    st["sctp_stream_end_closed"] >= 1 and st["outbound_pending"] == 0):
                break
            if time.time() > deadline:
                raise TestFailure("B's association or its `open` run did not come up in %.0f s: "
                                  "tap %s, services %s\n%s" % (timeout, hs, svcs, self.b.log()))
            time.sleep(0.05)
        if svcs["open"]["run"] != "ok":
            raise TestFailure("B's `open` run failed: %s" % svcs["open"])
        # The SACKs of the last chunks (delayed_sack_ms 10) before anything else.
        time.sleep(0.2)
        self.xfer_started_early = "run" in self.b.services_by_name()["xfer"]
        i, e = init[0], echo[0]
        cookie = bytes.fromhex(e["cookie"]) if e.get("cookie") else None
        return {"b_port": i["sport"], "b_vtag": i["itag"], "a_vtag": e["vtag"], "cookie": cookie,
                "b_itsn": i["itsn"]}

    def wait_xfer(self, timeout):
        deadline = time.time() + timeout
        while True:
            svcs = self.b.services_by_name()
            if svcs["xfer"].get("run") in ("ok", "failed"):
                return svcs
            if time.time() > deadline:
                raise TestFailure("the transfer did not finish in %.0f s: %s\n%s" %
                                  (timeout, svcs["xfer"], self.b.log()))
            time.sleep(0.1)

    def settle(self, a, timeout=5.0):
        """After the transfer: its session ended both ways, nothing queued on
        either side (B's sessions: open and xfer closed)."""
        deadline = time.time() + timeout
        while True:
            sb = self.b.ctl_json("sctp")
            sa = a.ctl_json("sctp")
            if (sb["sctp_stream_end_closed"] >= 2 and sb["outbound_pending"] == 0 and
                    sa["outbound_pending"] == 0):
                break
            if time.time() > deadline:
                break
            time.sleep(0.05)
        time.sleep(0.2)


def b_sctp_frames(st):
    """SCTP frames B put on the wire and took off it: its frame counters less
    ARP (B runs nothing but SCTP)."""
    tx = st.get("tx_packets", 0) - st.get("arp_requests_out", 0) - st.get("arp_replies_out", 0)
    rx = st.get("rx_packets", 0) - st.get("arp_requests_in", 0) - st.get("arp_replies_in", 0)
    return tx, rx


def check_transfer(v, label, s, msg, count, qd):
    want = iwd.expected_sha256("write", msg, count, qd)
    ok = (s.get("run") == "ok" and s["run_messages"] == count and s["verify_failures"] == 0 and
          s["completion_errors"] == 0 and s["run_sha256"] == want)
    v.add("%s: every byte verified" % label,
          "%s, %d x %d B, SHA-256 %s, connect error %s" %
          (s.get("run"), s.get("run_messages", 0), msg,
           "match" if s.get("run_sha256") == want else "MISMATCH",
           s.get("run_connect_error", "?")),
          "run ok, all messages, no verify or completion errors, SHA-256 as computed here", ok)
    return ok


# --- the scenario -----------------------------------------------------------------------

def scenario(args, work, pktgen_bin, tap_so):
    sock = os.path.join(work, "memif.sock")
    sock2 = os.path.join(work, "memif_pktgen.sock")
    sctp = sdp.sctp_section(MIB)
    a = SctpResponder(args, sock, sock2, sctp)
    a_tap = os.path.join(work, "tap_a.stats")
    msg, qd = 65536, 4
    count = args.transfer_mib * MIB // msg
    v = pt.Verdict("sctp_flood: RDMA over SCTP A<-B over net_memif while pktgen floods A's "
                   "second port with SCTP")
    p = None
    runs = []
    try:
        start_with_env(a, {"LD_PRELOAD": tap_so, "SCTP_FLOOD_TAP_STATS": a_tap,
                           "ASAN_OPTIONS": "verify_asan_link_order=0:" +
                           os.environ.get("ASAN_OPTIONS", "")})
        mac1 = pt.port_stats(a, "m1")["mac"]

        # Run 1: the transfer alone.
        r1 = Run(args, sock, sctp, tap_so, work, "1", msg, count, qd)
        runs.append(r1)
        a0 = Side(a, a_tap)
        r1.start()
        r1.wait_open()
        svcs = r1.wait_xfer(args.seconds * 10 + 60)
        r1.settle(a)
        b1 = Side(r1.b)
        a1 = Side(a, a_tap)
        r1.b.stop()
        # B's stop aborts its association (hold): A lets it go.
        deadline = time.time() + 5
        while a.ctl_json("sctp")["associations"] != 0 and time.time() < deadline:
            time.sleep(0.05)
        base = svcs["xfer"].get("run_goodput_mbps", 0)
        check_transfer(v, "transfer alone", svcs["xfer"], msg, count, qd)
        b1_tx, _ = b_sctp_frames(b1.stats)
        # The accounting below, on a run with no flood: A's SCTP endpoint
        # took in exactly what B sent and sent exactly what B took in, its
        # DDP layer took exactly B's chunks; the association's own INIT ACK
        # (to B) is counted by the tap too.
        a_in1, a_out1 = sctp_in(a1.sctp) - sctp_in(a0.sctp), d_of(a0, a1, "sctp_tx_packets")
        own_init_acks = a1.tap.get("out_chunk_2", 0) - a0.tap.get("out_chunk_2", 0)
        cal_ok = (a_in1 == b1_tx and a_out1 == sctp_in(b1.sctp) and
                  d_of(a0, a1, "sctp_ddp_rx_segments") == b1.sctp["sctp_ddp_tx_segments"] and
                  (not a1.tap or own_init_acks == 1))
        v.add("accounting calibrated (no flood)",
              "A took in %d SCTP packets, B sent %d; A sent %d, B took in %d; DDP segments %d "
              "in, %d sent; INIT ACKs %s" %
              (a_in1, b1_tx, a_out1, sctp_in(b1.sctp), d_of(a0, a1, "sctp_ddp_rx_segments"),
               b1.sctp["sctp_ddp_tx_segments"], own_init_acks if a1.tap else "?"),
              "equal both ways, one INIT ACK: the counters used below see every packet once",
              cal_ok)

        # Run 2: the same transfer under the flood.
        r2 = Run(args, sock, sctp, tap_so, work, "2", msg, count, qd)
        runs.append(r2)
        a2 = Side(a, a_tap)
        r2.start()
        wire = r2.wait_open()
        early = r2.xfer_started_early
        os.kill(r2.b.proc.pid, signal.SIGSTOP)
        frozen = True
        try:
            right = {wire["a_vtag"], wire["b_vtag"]}
            template = wire["cookie"]
            cookie_note = "B's state cookie, ports and tag set, HMAC wrong"
            if template is None or len(template) < COOKIE_MYPORT + 2 + SIG_SIZE or \
                    struct.unpack_from("!I", template, COOKIE_MY_VTAG)[0] != wire["a_vtag"] or \
                    struct.unpack_from("!HH", template, COOKIE_PEERPORT) != (wire["b_port"],
                                                                             SCTP_PORT):
                cookie_note = "random bytes (B's cookie did not have the expected layout)"
                template = None
            packets = flood_packets(wire["b_port"], right, template, args.sources)
            frames = frames_of(packets, mac1)
            pcap = os.path.join(work, "sctp_flood.pcap")
            pt.write_pcap(pcap, [f for _, f in frames])
            per_cycle = {}
            for k, _ in frames:
                per_cycle[k] = per_cycle.get(k, 0) + 1
            cycle = len(frames)
            log("association under test: B %s:%d -> A %s:%d, A's tag %#010x, B's tag %#010x; "
                "flood cycle %d packets (%s), forged cookies: %s" %
                (iwd.B_IP, wire["b_port"], iwd.A_IP, SCTP_PORT, wire["a_vtag"], wire["b_vtag"],
                 cycle, ", ".join("%s %d" % kv for kv in sorted(per_cycle.items())),
                 cookie_note))

            stop_file = os.path.join(work, "stop")
            go_file = os.path.join(work, "go")
            p = pt.Pktgen(pktgen_bin, work, a.ns, sock2, "sctp")
            p.start("flood.lua", {"STOP": stop_file, "GO": go_file, "SRC_IP": pt.PKT_IP + "/24",
                                  "MAX_MS": int(args.seconds * 1000 + 90000),
                                  "SETTLE_MS": 2100}, pcap=pcap)
            if not p.wait_line("ready", 40):
                raise TestFailure("pktgen did not get ready:\n%s" % p.screen_text()[-3000:])
            m1_before = pt.port_stats(a, "m1")
            rss0 = pt.vm_rss_kib(a.proc.pid)
            open(go_file, "w").close()
            if not p.wait_line("flooding", 10):
                raise TestFailure("pktgen did not start flooding:\n%s" % p.screen_text()[-3000:])
            t_flooding = time.monotonic()
            time.sleep(0.5)
            probe = {"n": 0, "fail": 0, "worst_ms": 0.0, "rss_max": rss0, "stop": False,
                     "m1": []}

            def prober():
                # In turn: the L2/L3 counters, the SCTP endpoint's (a snapshot
                # made by worker 0, the one the flood keeps busy) and the
                # ports (m1's frame counter over time: the rate A held).
                while not probe["stop"]:
                    t0 = time.monotonic()
                    what = ("stats", "sctp", "ports")[probe["n"] % 3]
                    r = dpi.run([args.iwarpctl, "--prefix", a.prefix, "--json", what],
                                check_rc=False, timeout=10)
                    ms = (time.monotonic() - t0) * 1000
                    probe["n"] += 1
                    if r.returncode != 0:
                        probe["fail"] += 1
                    elif what == "ports":
                        try:
                            ports = pt.json.loads(r.stdout)["/iwarpd/ports"]
                            for pid in ports["port_ids"]:
                                q = ports["port_%d" % pid]
                                if q.get("name") == "m1":
                                    probe["m1"].append((t0, q["ipackets"]))
                        except (ValueError, KeyError):
                            probe["fail"] += 1
                    probe["worst_ms"] = max(probe["worst_ms"], ms)
                    probe["rss_max"] = max(probe["rss_max"], pt.vm_rss_kib(a.proc.pid))
                    time.sleep(0.25)
            th = threading.Thread(target=prober)
            th.start()
            t_flood = time.monotonic()
            try:
                os.kill(r2.b.proc.pid, signal.SIGCONT)
                frozen = False
                svcs2 = r2.wait_xfer(args.seconds * 10 + 60)
                while time.monotonic() - t_flood < args.seconds:
                    time.sleep(0.1)
                # The association is still up (hold) while the flood runs.
                assoc_during = a.ctl_json("sctp")
            finally:
                probe["stop"] = True
                th.join()
                open(stop_file, "w").close()
            flood_s = time.monotonic() - t_flood
            flood_wall = time.monotonic() - t_flooding
            # pktgen's Lua delays stretch when its lcores wait for CPU behind
            # the daemons' busy-polling workers: allow for a slow stop.
            if not p.wait_line("done", 60):
                # The verdict needs only the "flood" line (pktgen's counters
                # after its stop); without it, say how far the script got.
                if not any(l.startswith("flood ") for l in p.lines()):
                    raise TestFailure("pktgen did not stop; its script wrote %r; screen:\n%s" %
                                      (p.lines(), p.screen_text()[-3000:]))
                log("pktgen wrote its counters but not 'done' within 60 s; going on")
            version = p.version()
            res = pt.parse_kv([l for l in p.lines() if l.startswith("flood ")][0])
            m1_after = pt.port_stats(a, "m1")
            p.stop()
            p = None
        finally:
            if frozen:
                os.kill(r2.b.proc.pid, signal.SIGCONT)
        r2.settle(a)
        b2 = Side(r2.b)
        a3 = Side(a, a_tap)
        r2.b.stop()
        b2_tx, _ = b_sctp_frames(b2.stats)

        # --- verdict --------------------------------------------------------------
        s = svcs2["xfer"]
        check_transfer(v, "transfer under flood", s, msg, count, qd)
        share = s.get("run_goodput_mbps", 0) / max(1, base)
        v.add("goodput kept",
              "%d of %d Mbit/s (%.2f)" % (s.get("run_goodput_mbps", 0), base, share),
              ">= %.2f of the flood-free run" % args.goodput_share, share >= args.goodput_share)
        v.add("the transfer ran under the flood",
              "started after the flood began: %s; flood lasted %.1f s, transfer %.1f s" %
              ("no" if early else "yes", flood_s, s.get("run_elapsed_us", 0) / 1e6),
              "B frozen before the transfer's start delay, released once pktgen flooded; the "
              "flood outlasted the transfer", not early and flood_s * 1e6 > s.get(
                  "run_elapsed_us", 0))
        sent = res["tx"]
        offered = sent / max(0.001, flood_wall)
        m1 = [x for x in probe["m1"] if x[0] >= t_flood]
        held = ((m1[-1][1] - m1[0][1]) / (m1[-1][0] - m1[0][0])) if len(m1) >= 2 and \
            m1[-1][0] > m1[0][0] else 0.0
        v.add("flood offered",
              "%d frames in about %.1f s: about %.0f frames/s; A's port m1 held %.0f frames/s "
              "(sampled %d times)" % (sent, flood_wall, offered, held, len(m1)),
              "pktgen at its full rate (net_memif pushes back: pktgen sends as fast as A takes "
              "frames in) sends more than one %d-frame cycle" % cycle, sent > cycle)
        m1_rx = m1_after["ipackets"] - m1_before["ipackets"]
        m1_miss = m1_after["imissed"] - m1_before["imissed"]
        v.add("every frame pktgen sent reached iwarpd",
              "sent %d; port m1 ipackets %d, imissed %d" % (sent, m1_rx, m1_miss),
              "ipackets == sent, imissed == 0 (pktgen's ARP aside)",
              m1_miss == 0 and 0 <= m1_rx - sent <= 2)

        full, part = divmod(sent, cycle)
        expected = {k: n * full for k, n in per_cycle.items()}
        for k, _ in frames[:part]:
            expected[k] += 1

        def slack(n):
            return max(2, n // 1000)

        def dA(key, part="sctp"):
            return d_of(a2, a3, key, part)
        # ARP frames pktgen sent (not SCTP): A's ARP input less B's ARP output.
        arp_pkt = (dA("arp_requests_in", "stats") + dA("arp_replies_in", "stats") -
                   b2.stats.get("arp_requests_out", 0) - b2.stats.get("arp_replies_out", 0))
        flood_sctp = sctp_in(a3.sctp) - sctp_in(a2.sctp) - b2_tx
        v.add("every flood packet reached A's SCTP endpoint",
              "%d (all SCTP taken in %d - B's %d) of %d sent (pktgen's ARP frames: %d)" %
              (flood_sctp, sctp_in(a3.sctp) - sctp_in(a2.sctp), b2_tx, sent, arp_pkt),
              "sent - flood SCTP packets is 0 .. pktgen's ARP frames; no other drop on A",
              0 <= sent - flood_sctp <= max(0, arp_pkt))

        def exp(kinds):
            return sum(expected.get(k, 0) for k in kinds)
        rows = []   # (kinds, label, counted, source)
        rows.append((["bad_crc"], "bad CRC32c -> sctp_rx_bad_crc + sctp_rx_new_peer_bad_crc",
                     dA("sctp_rx_bad_crc") + dA("sctp_rx_new_peer_bad_crc"), "iwarpctl"))
        rows.append((["too_short"], "shorter than the common header -> sctp_rx_truncated",
                     dA("sctp_rx_truncated"), "iwarpctl"))
        tap_ok = bool(a3.tap)
        if tap_ok:
            rows.append((["chunk_hdr_truncated"], "chunk header cut short -> usrsctp sctps_hdrops",
                         a3.tap.get("sctps_hdrops", 0) - a2.tap.get("sctps_hdrops", 0), "tap"))
            rows.append((list(BLIND), "blind, wrong tag -> usrsctp sctps_badvtag",
                         a3.tap.get("sctps_badvtag", 0) - a2.tap.get("sctps_badvtag", 0), "tap"))
            # Less the transfer association's own (to B), as in the calibration.
            init_acks = (a3.tap.get("out_chunk_2", 0) - a2.tap.get("out_chunk_2", 0) -
                         own_init_acks)
            rows.append((["init"], "INIT -> INIT ACK sent by usrsctp", init_acks, "tap"))
        for kinds, label, n, src in rows:
            e = exp(kinds)
            v.add(label, "%d (%s)" % (n, "iwarpctl sctp" if src == "iwarpctl" else
                                      "usrsctp through the tap; iwarpctl has no counter"),
                  "%d +- %d (%d per %d-packet cycle)" % (e, slack(e),
                                                         sum(per_cycle.get(k, 0) for k in kinds),
                                                         cycle),
                  abs(n - e) <= slack(e))
        handed = dA("sctp_rx_packets") - b2_tx
        counted_inside = 0
        if tap_ok:
            counted_inside = sum(n for kinds, _, n, src in rows if src == "tap")
            v.add("usrsctp saw what iwarpd handed it",
                  "sctps_recvpackets +%d, sctp_rx_packets +%d" %
                  (a3.tap.get("sctps_recvpackets", 0) - a2.tap.get("sctps_recvpackets", 0),
                   dA("sctp_rx_packets")),
                  "equal", a3.tap.get("sctps_recvpackets", 0) - a2.tap.get("sctps_recvpackets", 0)
                  == dA("sctp_rx_packets"))
        uncounted = ["cookie_forged", "chunk_len_zero"]
        if not tap_ok:
            uncounted = [k for k in expected if k not in ("bad_crc", "too_short")]
        rest = handed - counted_inside
        e_rest = exp(uncounted)
        v.add("no counter: %s" % ", ".join(uncounted),
              "%d (handed to usrsctp %d less counted %d)" % (rest, handed, counted_inside),
              "%d +- %d: %s" % (e_rest, slack(e_rest),
                                "; ".join(WHY_UNCOUNTED.get(k, k + ": no usrsctp statistic read")
                                          for k in uncounted)),
              abs(rest - e_rest) <= slack(e_rest))
        # Answers: INIT ACKs only, each received by pktgen (less those dropped
        # before A resolved pktgen's address), nothing else sent anywhere.
        a_out = dA("sctp_tx_packets")
        to_b = sctp_in(b2.sctp)
        lost = (dA("drop_arp_pending_overflow", "stats") + dA("drop_arp_unresolved", "stats") +
                dA("drop_tx_ring_full", "stats") + dA("sctp_tx_queue_full"))
        arp_out = dA("arp_requests_out", "stats") + dA("arp_replies_out", "stats")
        answers = a_out - to_b
        v.add("answers: INIT ACKs only, received by pktgen",
              "A sent %d SCTP packets, B received %d: %d towards pktgen; INIT ACKs %s; dropped "
              "before ARP/ring %d; pktgen received %d (ARP out %d)" %
              (a_out, to_b, answers, init_acks if tap_ok else "?", lost, res["rx"], arp_out),
              "to pktgen == INIT ACKs; pktgen received == that - dropped (+- ARP); drops < 1000",
              (not tap_ok or answers == init_acks) and
              abs(res["rx"] - (answers - lost)) <= arp_out and lost < 1000)
        if tap_ok:
            other = {CHUNK_NAMES.get(int(k[10:]), k): a3.tap[k] - a2.tap.get(k, 0)
                     for k in a3.tap if k.startswith("out_chunk_") and k != "out_chunk_2" and
                     a3.tap[k] - a2.tap.get(k, 0)}
            log("A's usrsctp sent besides INIT ACKs (first chunk: packets): %s" % other)
            v.add("no ABORT from A", "ABORT %d, ERROR %d" % (other.get("ABORT", 0),
                                                          other.get("ERROR", 0)),
                  "usrsctp answers no blind packet (RFC 9260 8.5: discard)",
                  other.get("ABORT", 0) == 0 and other.get("ERROR", 0) == 0)

        # Nothing from the flood reached DDP.
        segs_in, segs_b = dA("sctp_ddp_rx_segments"), b2.sctp["sctp_ddp_tx_segments"]
        ctl_in, ctl_b = dA("sctp_ddp_rx_control"), b2.sctp["sctp_ddp_tx_control"]
        v.add("DDP segments placed on A",
              "%d; B sent %d (alone: %d)" % (segs_in, segs_b, b1.sctp["sctp_ddp_tx_segments"]),
              "== B's DDP Segment chunks: none from the flood", segs_in == segs_b)
        v.add("session control messages on A", "%d; B sent %d" % (ctl_in, ctl_b),
              "== B's: none from the flood", ctl_in == ctl_b)
        faults = {k: dA(k) for k in DDP_FAULTS if dA(k)}
        r_before, r_after = a2.svcs["r_sctp"], a3.svcs["r_sctp"]
        rs = {k: r_after.get(k, 0) - r_before.get(k, 0)
              for k in ("established", "setup_failed", "terminates_sent", "initiates_refused",
                        "associations")}
        v.add("no DDP error, drop or refusal on A", faults or "none",
              "every sctp_ddp_drop_*, sctp_ddp_end_*, refusal and association_down counter +0",
              not faults)
        v.add("responder sessions", "established +%d, associations +%d, setup_failed +%d, "
              "RDMAP Terminates sent +%d, Initiates refused +%d" %
              (rs["established"], rs["associations"], rs["setup_failed"], rs["terminates_sent"],
               rs["initiates_refused"]),
              "+2 sessions (open, xfer) on +1 association; no failure, Terminate or refusal",
              rs["established"] == 2 and rs["associations"] == 1 and rs["setup_failed"] == 0 and
              rs["terminates_sent"] == 0 and rs["initiates_refused"] == 0)
        ends = dA("sctp_stream_end_peer_terminate")
        v.add("association never aborted",
              "up during the flood %d of %d; accepts +%d; sessions ended by the peer's Terminate "
              "+%d; B: shutdowns forced %d, session end timeouts %d" %
              (assoc_during["associations_up"], assoc_during["associations"],
               dA("sctp_accepts"), ends, s.get("shutdowns_forced", 0),
               s.get("session_end_timeouts", 0)),
              "still up once the flood stopped; one accept; both sessions ended normally",
              assoc_during["associations_up"] == 1 and assoc_during["associations"] == 1 and
              dA("sctp_accepts") == 1 and ends == 2 and s.get("shutdowns_forced", 0) == 0)
        v.add("no state for the INITs and cookies",
              "associations %d after; peers +%d (max_peers %d), peer table full %d" %
              (a3.sctp["associations"], dA("sctp_peers_added"), 64,
               dA("sctp_rx_peer_table_full")),
              "the only association is the transfer's; per-source link cookies only, one per "
              "flood source (%d), none refused" % args.sources,
              a3.sctp["associations"] == 1 and dA("sctp_peers_added") <= args.sources and
              dA("sctp_rx_peer_table_full") == 0)
        v.add("iwarpctl answered throughout",
              "%d probes (stats, sctp, ports), %d failed, slowest %.0f ms" %
              (probe["n"], probe["fail"], probe["worst_ms"]),
              "every probe answered within 2000 ms",
              probe["n"] > 0 and probe["fail"] == 0 and probe["worst_ms"] < 2000)
        v.add("memory bounded", "VmRSS %d -> max %d KiB" % (rss0, probe["rss_max"]),
              "grows by less than 32 MiB", probe["rss_max"] - rss0 < 32 * 1024)

        log("")
        log("pktgen version: %s" % version)
        log("pktgen: sent %d frames, received %d, oerrors %d, imissed %d (the script's "
            "flood lasted %d ms by its clock, the harness's %.1f s from start to stop)" %
            (sent, res["rx"], res.get("oerrors", 0), res.get("imissed", 0), res["ms"],
             flood_wall))
        log("A's SCTP counters during the flood run (non-zero): " +
            ", ".join("%s %d" % (k, dA(k)) for k in sorted(a3.sctp) if isinstance(
                a3.sctp[k], int) and dA(k)))
        if tap_ok:
            log("A's usrsctp statistics (tap) during the flood run (non-zero): " +
                ", ".join("%s %d" % (k, a3.tap[k] - a2.tap.get(k, 0)) for k in sorted(a3.tap)
                          if a3.tap[k] - a2.tap.get(k, 0)))
        m1_tx = m1_after["opackets"] - m1_before["opackets"]
        m1_ob = m1_after.get("obytes", 0) - m1_before.get("obytes", 0)
        m1_ib = m1_after.get("ibytes", 0) - m1_before.get("ibytes", 0)
        log("port m1: in %d frames %d bytes, out %d frames %d bytes (reply bytes per flood byte "
            "%.2f)" % (m1_rx, m1_ib, m1_tx, m1_ob, m1_ob / max(1, m1_ib)))
        if m1_ib and m1_tx:
            log("INIT ACK amplification: %.0f B per INIT ACK frame vs %d B per INIT frame" %
                (m1_ob / max(1, m1_tx), len([f for k, f in frames if k == "init"][0])))
        log("flood offered about %.0f frames/s (%d frames in about %.1f s), held %.0f frames/s "
            "at A's port, every frame taken in by iwarpd; goodput %d Mbit/s alone, %d Mbit/s "
            "under flood, kept %.2f" % (offered, sent, flood_wall, held, base,
                                        s.get("run_goodput_mbps", 0), share))
        a.stop()
    finally:
        if p is not None:
            p.stop()
        for r in runs:
            r.b.cleanup()
        a.cleanup()
    v.print()
    return v.ok()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iwarpd", required=True)
    ap.add_argument("--iwarpctl", required=True)
    ap.add_argument("--pktgen")
    ap.add_argument("--seconds", type=float, default=3.0,
                    help="the flood lasts at least this long (and until the transfer ends)")
    ap.add_argument("--transfer-mib", type=int, default=64)
    ap.add_argument("--goodput-share", type=float, default=0.25,
                    help="share of the flood-free goodput the transfer must keep")
    ap.add_argument("--sources", type=int, default=32,
                    help="rotating flood source addresses (198.18.4.1..N), each an AF_CONN "
                         "link cookie on A for sctp.peer_idle_ms; more than max_peers - 1 (63) "
                         "fill A's peer table and the INITs of the rest go unanswered "
                         "(sctp_rx_peer_table_full): the rules then fail")
    ap.add_argument("--start-delay-ms", type=int, default=3000,
                    help="the transfer client's start delay (B is frozen before it runs out)")
    args = ap.parse_args()
    pktgen_bin = pt.find_pktgen(args.pktgen)
    if pktgen_bin is None:
        log("SKIP: pktgen not found ($PKTGEN or ../shared/pktgen/pktgen beside the repository; "
            "README 'Traffic tests with pktgen' says how to build Pktgen-DPDK 23.06.1)")
        return SKIP
    dpi.skip_unless_possible()
    for tool in ("script", "timeout"):
        if shutil.which(tool) is None:
            log("SKIP: '%s' not installed (pktgen needs a terminal)" % tool)
            return SKIP
    need = 2 * iwd.MEMORY_MB
    if iwd.free_hugepage_mib() < need:
        log("SKIP: iwarpd on net_memif needs %d MiB of free hugepages (%d free; "
            "tools/setup.sh --hugepages N)" % (need, iwd.free_hugepage_mib()))
        return SKIP
    log("pktgen: %s" % pktgen_bin)
    work = tempfile.mkdtemp(prefix="iwarpd_sctpflood_")
    try:
        tap_so = build_tap(work)
        if tap_so is None:
            log("SKIP: the usrsctp tap (LD_PRELOAD) is needed to learn B's SCTP port")
            return SKIP
        ok = scenario(args, work, pktgen_bin, tap_so)
    except TestFailure as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
