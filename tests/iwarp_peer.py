#!/usr/bin/env python3
"""A raw-bytes iWARP peer: MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and RDMAP
(RFC 5040) built and parsed byte by byte in Python, for driving iwarpd from a
kernel TCP socket and for checking what it sends back.

Nothing here is shared with iwarpd's C++ codecs: every field offset and code
point comes from the RFC text, so that a disagreement between the two shows up
as a test failure instead of cancelling out.

Library contents:
  crc32c(), fpdu_crc()             CRC32c (table driven) and its FPDU byte order
  StartupFrame, IrdOrd             MPA Request/Reply frames, the RFC 6581 block
  FpduSender, FpduReceiver         FPDU framing with CRC and Markers
  DdpHeader, ReadRequest, Terminate  DDP/RDMAP headers
  Peer                             a TCP connection speaking the above
  write_pcap()                     a capture of two byte streams (for checkers)

Self-test (no root, no daemon):
  iwarp_peer.py --self-test [--decode IWARP_DECODE] [--synth IWARP_SYNTH]
checks the CRC against RFC 5044 section 4.3's annotated FPDU dumps, round-trips
every codec, decodes iwarp-synth's reference captures with this module, and
writes a session built by this module to a pcap that iwarp-decode and (when
installed) tshark must accept with every MPA CRC good.
Exit status: 0 pass, 1 fail.
"""

import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

# --------------------------------------------------------------------- CRC32c

# CRC32c (Castagnoli, reflected polynomial 0x82F63B78), the iSCSI digest
# RFC 5044 4.4 refers to.
_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data, crc=0):
    """CRC32c of `data`; pass a previous result as `crc` to continue."""
    c = crc ^ 0xFFFFFFFF
    table = _CRC_TABLE
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def fpdu_crc(data):
    """The 4 CRC bytes as they appear on the wire at the end of an FPDU.

    RFC 5044 4.4 Figures 5 and 6: the FPDU whose CRC32c register value is
    0x83992352 carries the octets 52 23 99 83, i.e. the iSCSI convention of
    sending the reflected register least significant byte first."""
    return struct.pack("<I", crc32c(data))


# --------------------------------------------------------------------- MPA startup frames

KEY_REQ = b"MPA ID Req Frame"  # RFC 5044 7.1.1
KEY_REP = b"MPA ID Rep Frame"
FLAG_M = 0x80  # Markers required towards the sender of this frame
FLAG_C = 0x40  # CRC
FLAG_R = 0x20  # Reject (Reply only)
FLAG_S = 0x10  # RFC 6581 enhanced connection setup (IRD/ORD block present)
STARTUP_HEADER = 20
MAX_PRIVATE_DATA = 512  # RFC 5044 7.1.1

# RFC 6581 IRD/ORD block control bits.
IRD_A = 0x8000  # peer-to-peer
IRD_B = 0x4000  # zero-length Send as RTR
ORD_C = 0x8000  # zero-length RDMA Write as RTR
ORD_D = 0x4000  # zero-length RDMA Read as RTR
IRD_ORD_MASK = 0x3FFF


class ProtocolError(Exception):
    pass


class IrdOrd:
    """RFC 6581 section 9.1: the first 4 octets of private data when S=1."""

    def __init__(self, ird=32, ord_=32, a=False, b=False, c=False, d=False):
        self.ird, self.ord, self.a, self.b, self.c, self.d = ird, ord_, a, b, c, d

    def encode(self):
        w1 = (self.ird & IRD_ORD_MASK) | (IRD_A if self.a else 0) | (IRD_B if self.b else 0)
        w2 = (self.ord & IRD_ORD_MASK) | (ORD_C if self.c else 0) | (ORD_D if self.d else 0)
        return struct.pack("!HH", w1, w2)

    @staticmethod
    def decode(data):
        if len(data) < 4:
            raise ProtocolError("IRD/ORD block needs 4 bytes, have %d" % len(data))
        w1, w2 = struct.unpack("!HH", data[:4])
        return IrdOrd(w1 & IRD_ORD_MASK, w2 & IRD_ORD_MASK, bool(w1 & IRD_A), bool(w1 & IRD_B),
                      bool(w2 & ORD_C), bool(w2 & ORD_D))

    def rtr_types(self):
        return {n for n, on in (("send", self.b), ("write", self.c), ("read", self.d)) if on}

    def __eq__(self, o):
        return isinstance(o, IrdOrd) and self.__dict__ == o.__dict__

    def __repr__(self):
        return "IrdOrd(ird=%d, ord=%d, A=%d B=%d C=%d D=%d)" % (
            self.ird, self.ord, self.a, self.b, self.c, self.d)


class StartupFrame:
    """RFC 5044 7.1.1 MPA Request / Reply frame. `private_data` is the whole
    Private Data field; with S=1 its first 4 octets are the IRD/ORD block
    (see ird_ord / ulp_data)."""

    def __init__(self, reply=False, m=False, c=True, r=False, s=False, rev=2,
                 private_data=b"", key=None, res=0, pd_length=None):
        self.reply, self.m, self.c, self.r, self.s, self.rev = reply, m, c, r, s, rev
        self.private_data = bytes(private_data)
        self.key = key if key is not None else (KEY_REP if reply else KEY_REQ)
        self.res = res  # the 4 low reserved flag bits (sent as given)
        self.pd_length = pd_length  # override of PD_Length on encode (malformed frames)

    @staticmethod
    def request(rev=2, m=False, c=True, ird_ord=None, ulp_data=b"", **kw):
        pd = (ird_ord.encode() if ird_ord is not None else b"") + ulp_data
        return StartupFrame(reply=False, m=m, c=c, s=ird_ord is not None, rev=rev,
                            private_data=pd, **kw)

    def flags(self):
        return ((FLAG_M if self.m else 0) | (FLAG_C if self.c else 0) | (FLAG_R if self.r else 0) |
                (FLAG_S if self.s else 0) | (self.res & 0x0F))

    def encode(self):
        n = len(self.private_data) if self.pd_length is None else self.pd_length
        return self.key + struct.pack("!BBH", self.flags(), self.rev, n) + self.private_data

    @staticmethod
    def decode(buf):
        """(frame, bytes consumed), or (None, 0) while incomplete. Raises
        ProtocolError on a frame no receiver may accept (PD_Length > 512)."""
        if len(buf) < STARTUP_HEADER:
            return None, 0
        key = bytes(buf[:16])
        flags, rev, n = struct.unpack("!BBH", bytes(buf[16:20]))
        if n > MAX_PRIVATE_DATA:
            raise ProtocolError("PD_Length %d > 512 (RFC 5044 7.1.1)" % n)
        if len(buf) < STARTUP_HEADER + n:
            return None, 0
        f = StartupFrame(reply=key == KEY_REP, m=bool(flags & FLAG_M), c=bool(flags & FLAG_C),
                         r=bool(flags & FLAG_R), s=bool(flags & FLAG_S), rev=rev,
                         private_data=bytes(buf[20:20 + n]), key=key, res=flags & 0x0F)
        return f, STARTUP_HEADER + n

    @property
    def ird_ord(self):
        return IrdOrd.decode(self.private_data) if self.s and self.rev >= 2 else None

    @property
    def ulp_data(self):
        return self.private_data[4:] if self.s and self.rev >= 2 else self.private_data

    def __repr__(self):
        return "%s(M=%d C=%d R=%d S=%d rev=%d pd=%d%s)" % (
            "Reply" if self.reply else ("Request" if self.key == KEY_REQ else "Frame?"),
            self.m, self.c, self.r, self.s, self.rev, len(self.private_data),
            (" " + repr(self.ird_ord)) if self.ird_ord else "")


# --------------------------------------------------------------------- FPDU framing

MARKER_INTERVAL = 512  # RFC 5044 4.3


def _pad_len(ulpdu_len):
    """RFC 5044 4.1: PAD makes ULPDU Length field + ULPDU a multiple of 4."""
    return (-(2 + ulpdu_len)) % 4


class FpduSender:
    """Frames ULPDUs for one direction of Full Operation Phase.

    `pos` counts octets since this direction's stream start: the first octet
    after the MPA Request (initiator) or the MPA Reply (responder). RFC 5044
    4.3: the first Marker immediately precedes the first FPDU, then one every
    512 octets; a Marker that falls between two FPDUs is 0 and belongs to (is
    in the CRC of) the following FPDU, a Marker inside an FPDU (also one right
    after its PAD) points back to its ULPDU Length field and is in its CRC."""

    def __init__(self, markers=False, crc=True):
        self.markers, self.crc = markers, crc
        self.pos = 0

    def _at_marker(self):
        return self.markers and self.pos % MARKER_INTERVAL == 0

    def frame(self, ulpdu, corrupt_crc=False, length=None, marker_rsvd=0, marker_ptr_delta=0):
        """The octets of one FPDU carrying `ulpdu` (Markers included).
        Malformed frames: `length` overrides the ULPDU Length field,
        `marker_rsvd` fills the Markers' RESERVED field and `marker_ptr_delta`
        is added to the FPDUPTR of Markers inside the FPDU (the CRC covers
        the Markers as sent)."""
        ulpdu = bytes(ulpdu)
        out = bytearray()
        if self._at_marker():
            out += b"\0\0\0\0"
            self.pos += 4
        start = self.pos
        body = struct.pack("!H", len(ulpdu) if length is None else length) + ulpdu + \
            b"\0" * _pad_len(len(ulpdu))
        i = 0
        while i < len(body):
            if self._at_marker():
                out += struct.pack("!HH", marker_rsvd,
                                   (self.pos - start + marker_ptr_delta) & 0xFFFF)
                self.pos += 4
            room = MARKER_INTERVAL - self.pos % MARKER_INTERVAL if self.markers else len(body)
            k = min(room, len(body) - i)
            out += body[i:i + k]
            self.pos += k
            i += k
        if self._at_marker():  # right after the PAD: still this FPDU's
            out += struct.pack("!HH", marker_rsvd,
                               (self.pos - start + marker_ptr_delta) & 0xFFFF)
            self.pos += 4
        c = fpdu_crc(out) if self.crc else b"\0\0\0\0"
        if corrupt_crc:
            c = bytes([c[0] ^ 0xFF]) + c[1:]
        out += c
        self.pos += 4
        return bytes(out)


class Fpdu:
    def __init__(self, ulpdu, crc_ok, marker_errors, raw_len, crc_field, start, raw_start):
        self.ulpdu = ulpdu              # ULPDU (DDP segment) without Markers or PAD
        self.crc_ok = crc_ok            # True, False, or None (CRC not in use)
        self.marker_errors = marker_errors  # list of strings
        self.raw_len = raw_len          # octets on the wire incl. Markers and CRC
        self.crc_field = crc_field
        self.start = start              # stream position of the ULPDU Length field
        self.raw_start = raw_start      # stream position of its first octet (a leading Marker)


class FpduReceiver:
    """Parses FPDUs from one direction of Full Operation Phase (positions as
    in FpduSender). feed() returns every complete FPDU; bytes of an
    incomplete one are kept."""

    def __init__(self, markers=False, crc=True):
        self.markers, self.crc = markers, crc
        self.pos = 0
        self.buf = bytearray()

    def feed(self, data):
        self.buf += data
        out = []
        while True:
            f = self._one()
            if f is None:
                return out
            out.append(f)

    def _one(self):
        buf, p, i = self.buf, self.pos, 0
        covered = bytearray()  # octets the CRC covers
        errors = []
        start = None

        def marker(expect):
            nonlocal p, i
            if len(buf) < i + 4:
                return False
            rsvd, ptr = struct.unpack("!HH", bytes(buf[i:i + 4]))
            # RFC 5044 4.3: RESERVED is zero on transmit (checked here, since
            # this receiver judges the daemon as a sender); the two low
            # FPDUPTR bits are treated as zero.
            if rsvd != 0 or (ptr & ~3) != expect:
                errors.append("marker at %d: %04x %04x, expected FPDUPTR %d" % (p, rsvd, ptr, expect))
            covered.extend(buf[i:i + 4])
            i += 4
            p += 4
            return True

        def take(n):
            nonlocal p, i
            got = bytearray()
            while len(got) < n:
                if self.markers and p % MARKER_INTERVAL == 0:
                    if not marker(p - start):
                        return None
                room = MARKER_INTERVAL - p % MARKER_INTERVAL if self.markers else n
                k = min(room, n - len(got), len(buf) - i)
                if k <= 0:
                    return None
                got += buf[i:i + k]
                covered.extend(buf[i:i + k])
                i += k
                p += k
            return bytes(got)

        if self.markers and p % MARKER_INTERVAL == 0:
            if not marker(0):
                return None
        start = p
        hdr = take(2)
        if hdr is None:
            return None
        n = struct.unpack("!H", hdr)[0]
        rest = take(n + _pad_len(n))
        if rest is None:
            return None
        if self.markers and p % MARKER_INTERVAL == 0:
            if not marker(p - start):
                return None
        if len(buf) < i + 4:
            return None
        crc_field = bytes(buf[i:i + 4])
        i += 4
        p += 4
        crc_ok = (fpdu_crc(covered) == crc_field) if self.crc else None
        del self.buf[:i]
        f = Fpdu(rest[:n], crc_ok, errors, i, crc_field, start, self.pos)
        self.pos = p
        return f


# --------------------------------------------------------------------- DDP / RDMAP

DDP_T = 0x80
DDP_L = 0x40
DDP_VERSION = 1
RDMAP_VERSION = 1
TAGGED_HEADER = 14    # RFC 5041 4.2
UNTAGGED_HEADER = 18  # RFC 5041 4.3

# RFC 5040 4.1 opcodes
OP_WRITE, OP_READ_REQ, OP_READ_RESP, OP_SEND, OP_SEND_INV, OP_SEND_SE, OP_SEND_SE_INV, \
    OP_TERMINATE = range(8)
OP_NAMES = ["Write", "ReadRequest", "ReadResponse", "Send", "SendInv", "SendSE", "SendSEInv",
            "Terminate"]
QN_SEND, QN_READ_REQ, QN_TERMINATE = 0, 1, 2  # RFC 5040 5.1 untagged queues
READ_REQUEST_SIZE = 28                       # RFC 5040 4.4


class DdpHeader:
    """RFC 5041 4.2/4.3 with the RDMAP control byte (RFC 5040 4.1) in the
    first RsvdULP octet. `dv`/`rv` default to 1; override for bad-version
    frames."""

    def __init__(self, tagged, opcode, last=True, stag=0, to=0, qn=0, msn=0, mo=0,
                 rsvd_ulp=0, dv=DDP_VERSION, rv=RDMAP_VERSION, rsvd_ctl=0):
        self.tagged, self.opcode, self.last = tagged, opcode, last
        self.stag, self.to, self.qn, self.msn, self.mo = stag, to, qn, msn, mo
        self.rsvd_ulp = rsvd_ulp  # untagged: RsvdULP[8:39] (Invalidate STag)
        self.dv, self.rv, self.rsvd_ctl = dv, rv, rsvd_ctl

    def ctrl(self):
        return ((DDP_T if self.tagged else 0) | (DDP_L if self.last else 0) |
                ((self.rsvd_ctl & 0xF) << 2) | (self.dv & 3))

    def rdmap_ctrl(self):
        return ((self.rv & 3) << 6) | (self.opcode & 0x0F)

    def encode(self):
        if self.tagged:
            return struct.pack("!BBIQ", self.ctrl(), self.rdmap_ctrl(), self.stag, self.to)
        return struct.pack("!BBIIII", self.ctrl(), self.rdmap_ctrl(), self.rsvd_ulp, self.qn,
                           self.msn, self.mo)

    @staticmethod
    def decode(seg):
        """(header, payload). Raises ProtocolError if `seg` is too short."""
        if len(seg) < 2:
            raise ProtocolError("DDP segment of %d bytes" % len(seg))
        ctrl, rc = seg[0], seg[1]
        tagged = bool(ctrl & DDP_T)
        need = TAGGED_HEADER if tagged else UNTAGGED_HEADER
        if len(seg) < need:
            raise ProtocolError("DDP %s header needs %d bytes, segment has %d" %
                                ("tagged" if tagged else "untagged", need, len(seg)))
        h = DdpHeader(tagged, rc & 0x0F, last=bool(ctrl & DDP_L), dv=ctrl & 3, rv=rc >> 6,
                      rsvd_ctl=(ctrl >> 2) & 0xF)
        if tagged:
            _, _, h.stag, h.to = struct.unpack("!BBIQ", bytes(seg[:14]))
        else:
            _, _, h.rsvd_ulp, h.qn, h.msn, h.mo = struct.unpack("!BBIIII", bytes(seg[:18]))
        return h, bytes(seg[need:])

    @property
    def size(self):
        return TAGGED_HEADER if self.tagged else UNTAGGED_HEADER

    def __repr__(self):
        op = OP_NAMES[self.opcode] if self.opcode < 8 else "op%d" % self.opcode
        if self.tagged:
            return "%s(T L=%d stag=%#x to=%#x dv=%d rv=%d)" % (op, self.last, self.stag, self.to,
                                                              self.dv, self.rv)
        return "%s(U L=%d qn=%d msn=%d mo=%d dv=%d rv=%d)" % (op, self.last, self.qn, self.msn,
                                                             self.mo, self.dv, self.rv)


class ReadRequest:
    """RFC 5040 4.4 RDMA Read Request header (28 octets)."""

    def __init__(self, sink_stag, sink_to, size, src_stag, src_to):
        self.sink_stag, self.sink_to, self.size = sink_stag, sink_to, size
        self.src_stag, self.src_to = src_stag, src_to

    def encode(self):
        return struct.pack("!IQIIQ", self.sink_stag, self.sink_to, self.size, self.src_stag,
                           self.src_to)

    @staticmethod
    def decode(b):
        if len(b) < READ_REQUEST_SIZE:
            raise ProtocolError("Read Request of %d bytes" % len(b))
        return ReadRequest(*struct.unpack("!IQIIQ", bytes(b[:28])))


# RFC 5040 4.8 / 7.4 Terminate layers and error types
LAYER_RDMAP, LAYER_DDP, LAYER_LLP = 0, 1, 2
TERM_M, TERM_D, TERM_R = 0x80, 0x40, 0x20


class Terminate:
    """RFC 5040 4.8 Terminate header: Layer(4) EType(4) Error Code(8) M D R
    and 13 reserved bits, then (when D) the DDP Segment Length (16 bits) and
    the terminated DDP header, then (when R) the terminated RDMA header (a
    28-octet Read Request header)."""

    def __init__(self, layer, etype, code, m=False, d=False, r=False, seg_len=0, ddp_header=b"",
                 rdma_header=b"", reserved=0):
        self.layer, self.etype, self.code = layer, etype, code
        self.m, self.d, self.r = m, d, r
        self.seg_len, self.ddp_header, self.rdma_header = seg_len, ddp_header, rdma_header
        self.reserved = reserved

    def triple(self):
        return (self.layer, self.etype, self.code)

    def encode(self):
        out = struct.pack("!BBH", (self.layer << 4) | self.etype, self.code,
                          ((TERM_M if self.m else 0) | (TERM_D if self.d else 0) |
                           (TERM_R if self.r else 0)) << 8)
        if self.d:
            out += struct.pack("!H", self.seg_len) + self.ddp_header
        if self.r:
            out += self.rdma_header
        return out

    @staticmethod
    def decode(b):
        if len(b) < 4:
            raise ProtocolError("Terminate of %d bytes" % len(b))
        lt, code, ctl = struct.unpack("!BBH", bytes(b[:4]))
        hc = ctl >> 8
        t = Terminate(lt >> 4, lt & 0xF, code, bool(hc & TERM_M), bool(hc & TERM_D),
                      bool(hc & TERM_R), reserved=ctl & 0x1FFF)
        i = 4
        if t.d:
            if len(b) < i + 3:
                raise ProtocolError("Terminate with D but no DDP header")
            t.seg_len = struct.unpack("!H", bytes(b[i:i + 2]))[0]
            i += 2
            n = TAGGED_HEADER if b[i] & DDP_T else UNTAGGED_HEADER
            if len(b) < i + n:
                raise ProtocolError("Terminate: DDP header cut short")
            t.ddp_header = bytes(b[i:i + n])
            i += n
        if t.r:
            if len(b) < i + READ_REQUEST_SIZE:
                raise ProtocolError("Terminate with R but no 28-byte RDMA header")
            t.rdma_header = bytes(b[i:i + READ_REQUEST_SIZE])
        return t

    def __repr__(self):
        return "Terminate(layer=%d etype=%d code=%#04x M=%d D=%d R=%d seg_len=%d ddp=%s)" % (
            self.layer, self.etype, self.code, self.m, self.d, self.r, self.seg_len,
            self.ddp_header.hex())


# --------------------------------------------------------------------- a peer on a socket

class Message:
    """One DDP segment received: its header, payload and FPDU facts."""

    def __init__(self, hdr, payload, fpdu):
        self.hdr, self.payload, self.fpdu = hdr, payload, fpdu

    def __repr__(self):
        return "%r +%d" % (self.hdr, len(self.payload))


class Peer:
    """One MPA connection over a kernel TCP socket, as initiator.

    connect() sends the Request and reads the Reply; then send_*() frame DDP
    segments and recv_message() returns the next DDP segment the daemon sent.
    MSNs of the three untagged queues are counted from 1 (RFC 5041 5.1)."""

    def __init__(self, host=None, port=None, timeout=5.0, sock=None):
        """Connects to (host, port), or adopts `sock`, an already connected
        TCP socket (e.g. one created in another network namespace)."""
        self.sock = sock if sock is not None else socket.create_connection((host, port),
                                                                           timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.rxbuf = bytearray()
        self.reply = None
        self.tx = None
        self.rx = None
        self.msn = {QN_SEND: 1, QN_READ_REQ: 1, QN_TERMINATE: 1}
        self.sent_raw = bytearray()   # every byte we sent, for captures
        self.recv_raw = bytearray()   # every byte we received
        self.pending = []

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_raw(self, data):
        self.sock.sendall(data)
        self.sent_raw += data

    def _recv_some(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("nothing from the daemon in time")
        r, _, _ = select.select([self.sock], [], [], left)
        if not r:
            raise TimeoutError("nothing from the daemon in time")
        try:
            b = self.sock.recv(1 << 16)
        except ConnectionResetError:
            raise EOFError("connection reset by the daemon")
        if not b:
            raise EOFError("daemon closed the connection")
        self.recv_raw += b
        return b

    def connect(self, request, timeout=None):
        """Sends `request` (a StartupFrame or raw bytes); returns the Reply
        frame. Raises EOFError if the daemon closed without one."""
        self.send_raw(request.encode() if isinstance(request, StartupFrame) else request)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            f, n = StartupFrame.decode(self.rxbuf)
            if f is not None:
                break
            self.rxbuf += self._recv_some(deadline)
        self.reply = f
        rest = bytes(self.rxbuf[n:])
        self.rxbuf = bytearray()
        if isinstance(request, StartupFrame):
            self.start_fpdus(markers_tx=f.m, markers_rx=request.m, crc=request.c or f.c)
            if rest:
                self.pending += self.rx.feed(rest)
        return f

    def start_fpdus(self, markers_tx, markers_rx, crc):
        # RFC 5044 7.1.1: M in the Reply asks us (the initiator) for Markers;
        # M in our Request asks the daemon.
        self.tx = FpduSender(markers=markers_tx, crc=crc)
        self.rx = FpduReceiver(markers=markers_rx, crc=crc)

    def send_segment(self, hdr, payload=b"", corrupt_crc=False):
        self.send_raw(self.tx.frame(hdr.encode() + payload, corrupt_crc=corrupt_crc))

    def next_msn(self, qn):
        m = self.msn[qn]
        self.msn[qn] = m + 1
        return m

    def send(self, payload, opcode=OP_SEND, inv_stag=0):
        self.send_segment(DdpHeader(False, opcode, qn=QN_SEND, msn=self.next_msn(QN_SEND),
                                    rsvd_ulp=inv_stag), payload)

    def write(self, stag, to, payload):
        self.send_segment(DdpHeader(True, OP_WRITE, stag=stag, to=to), payload)

    def read_request(self, rr):
        self.send_segment(DdpHeader(False, OP_READ_REQ, qn=QN_READ_REQ,
                                    msn=self.next_msn(QN_READ_REQ)), rr.encode())

    def recv_message(self, timeout=None):
        """The next DDP segment the daemon sent (a Message). Raises
        TimeoutError or EOFError."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while not self.pending:
            self.pending += self.rx.feed(self._recv_some(deadline))
        f = self.pending.pop(0)
        h, payload = DdpHeader.decode(f.ulpdu)
        return Message(h, payload, f)

    def read_to_eof(self, timeout=None):
        """Waits until the daemon closes; returns (bytes after what was
        parsed, how it ended: 'fin' / 'rst' / 'timeout')."""
        deadline = time.monotonic() + (timeout or self.timeout)
        extra = bytearray()
        while True:
            try:
                extra += self._recv_some(deadline)
            except EOFError as e:
                return bytes(extra), ("rst" if "reset" in str(e) else "fin")
            except TimeoutError:
                return bytes(extra), "timeout"


# --------------------------------------------------------------------- pcap writer

def _csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def write_pcap(path, chunks, a=("198.18.0.2", 40000), b=("198.18.0.1", 4791), mss=1460):
    """Writes a classic pcap of one TCP connection (handshake, then `chunks`
    as segments of at most `mss` bytes each, each acknowledged). `chunks` is
    a list of (from_a: bool, bytes)."""
    mac_a, mac_b = b"\x02\0\0\0\0\x02", b"\x02\0\0\0\0\x01"
    seq = {True: 1000, False: 50000}
    frames = []

    def seg(from_a, flags, payload=b""):
        src, dst = (a, b) if from_a else (b, a)
        ack = seq[not from_a] if flags & 0x10 else 0
        tcp = struct.pack("!HHIIBBHHH", src[1], dst[1], seq[from_a], ack, 5 << 4, flags, 65535, 0, 0)
        sip, dip = socket.inet_aton(src[0]), socket.inet_aton(dst[0])
        pseudo = sip + dip + struct.pack("!BBH", 0, 6, len(tcp) + len(payload))
        c = _csum(pseudo + tcp + payload)
        tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 1, 0x4000, 64, 6,
                         0, sip, dip)
        ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
        eth = (mac_b + mac_a if from_a else mac_a + mac_b) + b"\x08\x00"
        frames.append(eth + ip + tcp + payload)
        seq[from_a] = (seq[from_a] + len(payload) + (1 if flags & 0x03 else 0)) & 0xFFFFFFFF

    seg(True, 0x02)          # SYN
    seg(False, 0x12)         # SYN ACK
    seg(True, 0x10)
    for from_a, data in chunks:
        for i in range(0, len(data), mss):
            seg(from_a, 0x18, data[i:i + mss])
        seg(not from_a, 0x10)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000, i * 10, len(fr), len(fr)) + fr)


def read_pcap_packets(path):
    """The frames of a classic pcap or pcapng file, as bytes."""
    with open(path, "rb") as f:
        data = f.read()
    pkts = []
    if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        i = 24
        while i + 16 <= len(data):
            incl = struct.unpack("<I", data[i + 8:i + 12])[0]
            pkts.append(data[i + 16:i + 16 + incl])
            i += 16 + incl
    elif data[:4] == b"\x0a\x0d\x0d\x0a":
        i = 0
        while i + 12 <= len(data):
            btype, blen = struct.unpack("<II", data[i:i + 8])
            if btype == 6:
                cap = struct.unpack("<I", data[i + 20:i + 24])[0]
                pkts.append(data[i + 28:i + 28 + cap])
            if blen < 12:
                break
            i += blen
    else:
        raise ProtocolError("not a pcap file: " + path)
    return pkts


def read_tcp_segments(path):
    """Every IPv4/TCP segment of an Ethernet capture: dicts with sport,
    dport, seq, flags and payload."""
    out = []
    for p in read_pcap_packets(path):
        if len(p) < 54 or p[12:14] != b"\x08\x00" or p[23] != 6:
            continue
        ihl = (p[14] & 0xF) * 4
        t = 14 + ihl
        sport, dport, seq = struct.unpack("!HHI", p[t:t + 8])
        off = (p[t + 12] >> 4) * 4
        tot = struct.unpack("!H", p[16:18])[0]
        out.append({"sport": sport, "dport": dport, "seq": seq, "flags": p[t + 13],
                    "payload": p[t + off:14 + tot]})
    return out


def read_pcap_streams(path):
    """The two TCP payload streams of the first connection in a classic pcap
    (or pcapng) written without loss or reordering: (client bytes, server
    bytes). Enough for iwarp-synth's reference captures."""
    pkts = read_pcap_packets(path)
    client, streams = None, {}
    for p in pkts:
        if len(p) < 34 or p[12:14] != b"\x08\x00" or p[23] != 6:
            continue
        ihl = (p[14] & 0xF) * 4
        t = 14 + ihl
        sport, dport = struct.unpack("!HH", p[t:t + 4])
        off = (p[t + 12] >> 4) * 4
        flags = p[t + 13]
        tot = struct.unpack("!H", p[16:18])[0]
        payload = p[t + off:14 + tot]
        key = (p[26:30], sport)
        if flags & 0x02 and not flags & 0x10 and client is None:
            client = key
        streams.setdefault(key, bytearray()).extend(payload)
    if client is None:
        raise ProtocolError("no TCP SYN in " + path)
    server = [k for k in streams if k != client]
    return bytes(streams.get(client, b"")), bytes(streams[server[0]]) if server else b""


def parse_session(client, server):
    """Parses both directions of a captured MPA session with this module:
    (request, reply, client FPDUs, server FPDUs)."""
    req, n = StartupFrame.decode(client)
    rep, k = StartupFrame.decode(server)
    if req is None or rep is None:
        raise ProtocolError("no complete MPA Request/Reply")
    crc = req.c or rep.c
    c_rx = FpduReceiver(markers=rep.m, crc=crc)
    s_rx = FpduReceiver(markers=req.m, crc=crc)
    return req, rep, c_rx.feed(client[n:]), s_rx.feed(server[k:]), c_rx, s_rx


# --------------------------------------------------------------------- self-test

def _rfc_vectors(check):
    """RFC 5044 4.4 Figures 5 and 6, rebuilt field by field from the text."""
    ulpdu = DdpHeader(False, OP_SEND, qn=0, msn=1, mo=0).encode() + bytes(24)
    check(len(ulpdu) == 42 and ulpdu[:2] == b"\x41\x43",
          "RFC 5044 Fig. 5 ULPDU: 42 octets, DDP control 41 43")
    s = FpduSender(markers=True, crc=True)
    f5 = s.frame(ulpdu)
    want5 = bytes(4) + b"\x00\x2a" + ulpdu + bytes.fromhex("52239983")
    check(f5 == want5, "RFC 5044 Fig. 5: first FPDU with leading Marker, CRC 52 23 99 83 "
          "(got %s)" % f5[-4:].hex())
    check(crc32c(b"123456789") == 0xE3069283, "CRC32c check value of '123456789' is 0xE3069283")
    # Fig. 6: the first FPDU had 492 octets (Marker included), the second
    # starts at 0x1ec and has a Marker at 0x200 with FPDUPTR 0x14.
    s = FpduSender(markers=True, crc=True)
    first = s.frame(bytes(482))  # Marker 4 + length 2 + 482 + CRC 4 = 492
    check(len(first) == 492 and s.pos == 0x1EC, "RFC 5044 Fig. 6: first FPDU ends at 0x1ec")
    ulpdu2 = DdpHeader(False, OP_SEND, qn=0, msn=2, mo=0).encode() + bytes(24)
    f6 = s.frame(ulpdu2)
    want6 = b"\x00\x2a" + ulpdu2[:18] + b"\x00\x00\x00\x14" + bytes(24) + bytes.fromhex("84925898")
    check(f6 == want6, "RFC 5044 Fig. 6: Marker 00 00 00 14 at 0x200, CRC 84 92 58 98 (got %s)" %
          f6.hex())
    r = FpduReceiver(markers=True, crc=True)
    got = r.feed(f5)
    check(len(got) == 1 and got[0].crc_ok and got[0].ulpdu == ulpdu and not got[0].marker_errors,
          "receiver: Fig. 5 FPDU parsed, CRC good, Marker 0")
    r = FpduReceiver(markers=True, crc=True)
    stream = first + f6
    got = []
    for i in range(0, len(stream), 7):  # byte-dribbled: the parser resumes mid-frame
        got += r.feed(stream[i:i + 7])
    check(len(got) == 2 and all(g.crc_ok and not g.marker_errors for g in got) and
          got[1].ulpdu == ulpdu2 and got[1].start == 0x1EC,
          "receiver: Fig. 6 stream fed 7 bytes at a time, both FPDUs good, Marker ptr checked")
    bad = bytearray(f6)
    bad[0x200 - 0x1EC + 3] = 0x10
    r = FpduReceiver(markers=True, crc=False)
    r.feed(first)
    g = r.feed(bytes(bad))
    check(len(g) == 1 and g[0].marker_errors, "receiver: a wrong FPDUPTR is reported")


def _roundtrips(check):
    req = StartupFrame.request(rev=2, m=True, c=True,
                               ird_ord=IrdOrd(16, 8, a=True, c=True, d=True), ulp_data=b"hi")
    enc = req.encode()
    check(enc[:16] == KEY_REQ and enc[16] == 0xD0 and enc[17] == 2 and enc[18:20] == b"\x00\x06"
          and enc[20:24] == bytes.fromhex("8010c008"),
          "Request M C S rev 2: flags d0, PD_Length 6, IRD 8010 ORD c008 (%s)" % enc[16:24].hex())
    d, n = StartupFrame.decode(enc + b"xx")
    check(n == len(enc) and d.m and d.c and d.s and not d.r and d.rev == 2 and
          d.ird_ord == IrdOrd(16, 8, a=True, c=True, d=True) and d.ulp_data == b"hi",
          "Request decodes to the same fields")
    check(StartupFrame.decode(enc[:-1]) == (None, 0), "a cut Request is incomplete, not an error")
    try:
        StartupFrame.decode(KEY_REQ + b"\x40\x01\x02\x01" + bytes(513))
        check(False, "PD_Length 513 raises")
    except ProtocolError:
        check(True, "PD_Length 513 raises")
    for tagged in (True, False):
        h = DdpHeader(tagged, OP_READ_RESP if tagged else OP_SEND_INV, last=False, stag=0xA1B2C3D4,
                      to=0x0102030405060708, qn=1, msn=0xFFFFFFFF, mo=77, rsvd_ulp=0x55)
        b = h.encode()
        d, pl = DdpHeader.decode(b + b"z")
        same = d.tagged == tagged and d.opcode == h.opcode and not d.last and pl == b"z"
        same = same and ((d.stag, d.to) == (h.stag, h.to) if tagged else
                         (d.qn, d.msn, d.mo, d.rsvd_ulp) == (1, 0xFFFFFFFF, 77, 0x55))
        check(len(b) == (14 if tagged else 18) and b[0] == (0x81 if tagged else 0x01) and same,
              "DDP %s header round trip (%s)" % ("tagged" if tagged else "untagged", b.hex()))
    rr = ReadRequest(1, 2, 3, 4, 5)
    check(len(rr.encode()) == 28 and ReadRequest.decode(rr.encode()).__dict__ == rr.__dict__,
          "Read Request round trip (28 octets)")
    hdr = DdpHeader(False, OP_READ_REQ, qn=1, msn=1).encode()
    t = Terminate(LAYER_DDP, 2, 0x01, m=True, d=True, r=True, seg_len=46, ddp_header=hdr,
                  rdma_header=rr.encode())
    b = t.encode()
    d = Terminate.decode(b)
    check(b[:4] == b"\x12\x01\xe0\x00" and len(b) == 4 + 2 + 18 + 28 and
          d.triple() == (1, 2, 1) and d.m and d.d and d.r and d.seg_len == 46 and
          d.ddp_header == hdr and d.rdma_header == rr.encode(),
          "Terminate DDP/untagged/invalid QN with M D R round trip (%s)" % b[:4].hex())
    # Framing round trips over every Marker phase and size.
    for markers in (False, True):
        for crc in (False, True):
            s, r = FpduSender(markers, crc), FpduReceiver(markers, crc)
            sent, stream = [], bytearray()
            for k in range(300):
                u = bytes((k + j) & 0xFF for j in range((k * 37) % 1100))
                sent.append(u)
                stream += s.frame(u)
            got = []
            for i in range(0, len(stream), 997):
                got += r.feed(stream[i:i + 997])
            ok = [g.ulpdu for g in got] == sent and all(
                (g.crc_ok is (True if crc else None)) and not g.marker_errors for g in got)
            check(ok and r.pos == s.pos and not r.buf,
                  "framing round trip markers=%s crc=%s: 300 FPDUs, %d octets" %
                  (markers, crc, len(stream)))


def _robustness(check):
    """Seeded random and mutated inputs: every parser here returns or raises
    ProtocolError, nothing else (these parsers read what a daemon under test
    sends, so they must not fail in surprising ways)."""
    import random
    rnd = random.Random(5044)
    base = [StartupFrame.request(ird_ord=IrdOrd(1, 2, a=True, c=True)).encode(),
            DdpHeader(True, OP_WRITE, stag=7, to=9).encode() + b"xyz",
            DdpHeader(False, OP_READ_REQ, qn=1, msn=1).encode() + ReadRequest(1, 2, 3, 4, 5).encode(),
            Terminate(1, 2, 3, m=True, d=True, seg_len=9,
                      ddp_header=DdpHeader(False, OP_SEND).encode()).encode(),
            FpduSender(True, True).frame(bytes(700))]
    surprises = []
    for i in range(3000):
        b = bytearray(rnd.choice(base))
        for _ in range(rnd.randint(0, 6)):
            op = rnd.randint(0, 2)
            if op == 0 and b:
                b[rnd.randrange(len(b))] = rnd.randrange(256)
            elif op == 1:
                del b[rnd.randrange(len(b) + 1):]
            else:
                b += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 8)))
        data = bytes(b)
        for name, fn in (("StartupFrame", StartupFrame.decode), ("DdpHeader", DdpHeader.decode),
                         ("Terminate", Terminate.decode), ("ReadRequest", ReadRequest.decode),
                         ("FpduReceiver", lambda d: FpduReceiver(i % 2 == 0, True).feed(d))):
            try:
                fn(data)
            except ProtocolError:
                pass
            except Exception as e:  # noqa: BLE001 -- exactly what this check looks for
                surprises.append("%s(%s): %r" % (name, data.hex(), e))
    check(not surprises, "3000 mutated inputs x 5 parsers: only ProtocolError raised %s" %
          surprises[:3])


def _session_bytes(markers, crc):
    """An MPA session built by this module: Request/Reply, Write RTR, a Write,
    a Read Request and its Response, Sends both ways, with markers/CRC."""
    ir = IrdOrd(8, 8, a=True, c=True)
    req = StartupFrame.request(rev=2, m=markers, c=crc, ird_ord=ir, ulp_data=b"peer")
    rep = StartupFrame(reply=True, m=markers, c=crc, s=True, rev=2,
                       private_data=IrdOrd(8, 8, a=True, c=True).encode() + b"resp")
    ctx, stx = FpduSender(markers, crc), FpduSender(markers, crc)
    c = [req.encode()]
    s = [rep.encode()]
    c.append(ctx.frame(DdpHeader(True, OP_WRITE, stag=1, to=0).encode()))  # Write RTR
    c.append(ctx.frame(DdpHeader(True, OP_WRITE, stag=0x100, to=0x1000).encode() +
                       bytes(range(256)) * 4))
    c.append(ctx.frame(DdpHeader(False, OP_READ_REQ, qn=1, msn=1).encode() +
                       ReadRequest(0x200, 0, 1000, 0x100, 0x1000).encode()))
    s.append(stx.frame(DdpHeader(True, OP_READ_RESP, stag=0x200, to=0).encode() +
                       bytes(range(200)) * 5))
    c.append(ctx.frame(DdpHeader(False, OP_SEND, qn=0, msn=1).encode() + b"ping" * 100))
    s.append(stx.frame(DdpHeader(False, OP_SEND, qn=0, msn=1).encode() + b"pong" * 100))
    # One FPDU per TCP segment, as RFC 5044 4.5 asks of a sender.
    return [(True, c[0]), (False, s[0]), (True, c[1]), (True, c[2]), (True, c[3]), (False, s[1]),
            (True, c[4]), (False, s[2])]


def _decode_summary(decoder, path):
    r = subprocess.run([decoder, "--quiet", path], capture_output=True, text=True, timeout=60)
    import re
    m = re.search(r"fpdus=(\d+).*violations=(\d+)", r.stdout)
    return r.returncode, (int(m.group(1)), int(m.group(2))) if m else None, r.stdout + r.stderr


def tshark_crc_counts(path, display_filter=None):
    """(#"Good CRC32", #"Bad CRC32", #MPA PDUs, #DDP/RDMAP PDUs, the -V
    text) as tshark reports them (PDUs, not frames: a frame may hold several),
    over the frames `display_filter` selects (all by default)."""
    import re
    cmd = ["tshark", "-r", path, "-V"] + (["-Y", display_filter] if display_filter else [])
    v = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    good = len(re.findall(r"\(Good CRC32\)", v))
    bad = len(re.findall(r"Bad CRC32", v))

    mpa = len(re.findall(r"^iWARP Marker Protocol data unit Aligned framing", v, re.M))
    ddp = len(re.findall(r"^iWARP Direct Data Placement and Remote Direct Memory Access Protocol",
                         v, re.M))
    return good, bad, mpa, ddp, v


def _wireshark_notes(tmp):
    """Prints (does not check) two things Wireshark's iWARP dissectors do
    differently from the RFCs, measured on captures built here, so that a
    reader of a tshark-based check knows its blind spots."""
    counts = []
    for req_m, rep_m in ((True, False), (False, True)):
        req = StartupFrame.request(rev=2, m=req_m, c=True, ird_ord=IrdOrd(8, 8, a=True, c=True))
        rep = StartupFrame(reply=True, m=rep_m, c=True, s=True, rev=2,
                           private_data=IrdOrd(8, 8, a=True, c=True).encode())
        itx, rtx = FpduSender(rep_m, True), FpduSender(req_m, True)  # RFC 5044 7.1.1
        chunks = [(True, req.encode()), (False, rep.encode()),
                  (True, itx.frame(DdpHeader(True, OP_WRITE, stag=1).encode()))]
        for n in (100, 700):
            chunks.append((True, itx.frame(DdpHeader(False, OP_SEND, msn=1).encode() + bytes(n))))
            chunks.append((False, rtx.frame(DdpHeader(False, OP_SEND, msn=1).encode() + bytes(n))))
        path = os.path.join(tmp, "asym.pcap")
        write_pcap(path, chunks)
        ini = tshark_crc_counts(path, "tcp.srcport == 40000")[0]
        res = tshark_crc_counts(path, "tcp.srcport == 4791")[0]
        counts.append("Request M=%d Reply M=%d: initiator %d of 3 FPDUs decoded, responder %d of 2" %
                      (req_m, rep_m, ini, res))
    print("note: Wireshark with Markers in one direction only: " + "; ".join(counts))
    rr = ReadRequest(1, 2, 3, 4, 5).encode()
    bad = DdpHeader(False, OP_READ_REQ, qn=1, msn=1).encode() + rr
    t = Terminate(LAYER_RDMAP, 1, 0, m=True, d=True, r=True, seg_len=len(bad), ddp_header=bad[:18],
                  rdma_header=rr)
    tx = FpduSender(False, True)
    path = os.path.join(tmp, "term.pcap")
    write_pcap(path, [(True, StartupFrame.request(c=True).encode()),
                      (False, StartupFrame(reply=True, c=True).encode()),
                      (False, tx.frame(DdpHeader(False, OP_TERMINATE, qn=2, msn=1).encode() +
                                       t.encode()))])
    v = tshark_crc_counts(path)[4]
    import re
    m = re.search(r"Terminated DDP Header: ([0-9a-f]+)", v)
    print("note: Wireshark shows an untagged (18-byte) Terminated DDP Header as %s (%d bytes)" %
          (m.group(1) if m else "nothing", len(m.group(1)) // 2 if m else 0))


def self_test(decoder=None, synth=None):
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            failures.append(what)

    _rfc_vectors(check)
    _roundtrips(check)
    _robustness(check)
    tmp = tempfile.mkdtemp(prefix="iwarp_peer_")
    try:
        if synth:
            # iwarpd's own encoders (iwarp-synth) -> this module's decoders.
            for name, args in (("crc", []), ("markers", ["--markers", "--read-size", "1000"]),
                               ("nocrc", ["--no-crc"])):
                path = os.path.join(tmp, "synth_%s.pcap" % name)
                subprocess.run([synth, *args, path], check=True, timeout=60)
                cl, sv = read_pcap_streams(path)
                req, rep, cf, sf, crx, srx = parse_session(cl, sv)
                allf = cf + sf
                crc_state = {None} if "--no-crc" in args else {True}
                check(req.key == KEY_REQ and rep.key == KEY_REP and rep.rev == req.rev and
                      len(allf) > 3 and {f.crc_ok for f in allf} == crc_state and
                      not any(f.marker_errors for f in allf) and not crx.buf and not srx.buf,
                      "iwarp-synth %s: %r / %r, %d FPDUs parsed with CRC %s, Markers checked" %
                      (name, req, rep, len(allf), crc_state))
                if decoder:
                    rc, summ, _ = _decode_summary(decoder, path)
                    check(rc == 0 and summ is not None and summ[0] == len(allf),
                          "iwarp-decode counts the same %d FPDUs in iwarp-synth %s (%s)" %
                          (len(allf), name, summ))
        else:
            print("skip: iwarp-synth cross-check (no --synth given)")
        for markers, crc in ((False, True), (True, True), (False, False)):
            path = os.path.join(tmp, "peer_m%d_c%d.pcap" % (markers, crc))
            write_pcap(path, _session_bytes(markers, crc))
            cl, sv = read_pcap_streams(path)
            _, _, cf, sf, _, _ = parse_session(cl, sv)
            nf = len(cf) + len(sf)
            check(nf == 6, "own capture markers=%s crc=%s: 6 FPDUs read back" % (markers, crc))
            if decoder:
                rc, summ, text = _decode_summary(decoder, path)
                check(rc == 0 and summ == (nf, 0),
                      "iwarp-decode accepts this module's session markers=%s crc=%s (%s)%s" %
                      (markers, crc, summ, "" if rc == 0 else "\n" + text))
            if shutil.which("tshark") and crc:
                good, bad, mpa, ddp, _ = tshark_crc_counts(path)
                check(good == nf and bad == 0 and ddp == nf and mpa == nf + 2,
                      "tshark markers=%s: %d of %d CRCs Good, %d Bad, %d DDP/RDMAP PDUs, "
                      "%d MPA PDUs" % (markers, good, nf, bad, ddp, mpa))
        if shutil.which("tshark"):
            _wireshark_notes(tmp)
        if not decoder:
            print("skip: iwarp-decode cross-check (no --decode given)")
        if not shutil.which("tshark"):
            print("skip: tshark cross-check (tshark not installed)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--self-test", action="store_true", required=True)
    ap.add_argument("--decode")
    ap.add_argument("--synth")
    a = ap.parse_args()
    sys.exit(self_test(a.decode, a.synth))
