#!/usr/bin/env python3
"""Writes the seed corpus of the qp_rx fuzzer (layout in qp_rx_fuzz.cc).

Run by hand when the input layout changes:
  iwarp/gen_fuzz_seeds.py iwarp/fuzz_corpus/qp_rx
"""
import os
import struct
import sys


def tagged(op, stag, to, payload, last=True):
    ctrl = 0x80 | (0x40 if last else 0) | 0x01
    return bytes([ctrl, 0x40 | op]) + struct.pack(">IQ", stag, to) + payload


def untagged(op, qn, msn, mo, payload, inv=0, last=True):
    ctrl = (0x40 if last else 0) | 0x01
    return bytes([ctrl, 0x40 | op]) + struct.pack(">IIII", inv, qn, msn, mo) + payload


def read_req(sink_stag, sink_to, size, src_stag, src_to):
    return struct.pack(">IQIIQ", sink_stag, sink_to, size, src_stag, src_to)


def records(*ulpdus):
    return b"".join(struct.pack(">H", len(u)) + u for u in ulpdus)


SEEDS = {
    "write_ok": (0x11, 0x05, records(tagged(0, 1, 0x10000, bytes(range(32))))),
    "write_oob": (0x11, 0x05, records(tagged(0, 1, 0x10000 + 4090, bytes(16)))),
    "write_wrap": (0x11, 0x05, records(tagged(0, 3, 2**64 - 8, bytes(16)))),
    "send_ok": (0x21, 0x01, records(untagged(3, 0, 1, 0, b"hello world!"))),
    "send_two_segments": (0x01, 0x02, records(untagged(5, 0, 1, 0, bytes(8), last=False),
                                             untagged(5, 0, 1, 8, bytes(8)))),
    "send_invalidate": (0x11, 0x01, records(untagged(4, 0, 1, 0, b"abcd", inv=1),
                                           tagged(0, 1, 0x10000, b"late"))),
    "send_no_buffer": (0x11, 0x00, records(untagged(3, 0, 1, 0, b"x"))),
    "read_request": (0x11, 0x0C, records(untagged(1, 1, 1, 0, read_req(0x99, 0, 64, 2, 0x20000)))),
    "read_beyond_ird": (0x11, 0x04, records(
        untagged(1, 1, 1, 0, read_req(0x99, 0, 4096, 2, 0x20000)),
        untagged(1, 1, 2, 0, read_req(0x99, 0, 4096, 2, 0x20000)))),
    "read_response_unsolicited": (0x11, 0x00, records(tagged(2, 1, 0x10000, bytes(8)))),
    "terminate": (0x11, 0x00, records(untagged(7, 2, 1, 0, bytes([0x12, 0x01, 0x00, 0x00])))),
    "markers_write": (0x13, 0x01, records(*[tagged(0, 1, 0x10000 + 256 * i, bytes(range(256)))
                                            for i in range(8)])),
    "nocrc_send": (0x00, 0x03, records(untagged(3, 0, 1, 0, b"a"), untagged(3, 0, 2, 0, b"b"))),
    "raw_garbage": (0x14, 0x01, bytes(range(7, 200))),
    "bad_versions": (0x11, 0x01, records(bytes([0xC2, 0x40]) + bytes(20))),
}

out = sys.argv[1] if len(sys.argv) > 1 else "iwarp/fuzz_corpus/qp_rx"
os.makedirs(out, exist_ok=True)
for name, (mode, setup, body) in SEEDS.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([mode, setup]) + body)
