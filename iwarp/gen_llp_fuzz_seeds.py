#!/usr/bin/env python3
"""Writes the seed corpus of the qp_llp_rx fuzzer (layout in qp_llp_rx_fuzz.cc).

Run by hand when the input layout changes:
  iwarp/gen_llp_fuzz_seeds.py iwarp/fuzz_corpus/qp_llp_rx
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


def records(*segments):
    return b"".join(struct.pack(">H", len(s)) + s for s in segments)


def pd(ird, ord_, app=b""):
    return struct.pack(">HH", ird, ord_) + app


SEEDS = {
    "responder_write": (0x30, pd(4, 4, b"hi"), records(tagged(0, 1, 0x10000, bytes(range(32))))),
    "initiator_send": (0x35, pd(8, 2), records(untagged(3, 0, 1, 0, b"hello world!"))),
    "short_private_data": (0x00, b"\x00\x01", b""),
    "ord_above_ird": (0x01, pd(4, 9), b""),
    "read_request_flaky": (0x72, pd(4, 4), records(
        untagged(1, 1, 1, 0, read_req(0x99, 0, 1024, 2, 0x20000)))),
    "invalid_stag": (0x30, pd(4, 4), records(tagged(0, 0x777, 0x10000, bytes(16)),
                                              tagged(0, 1, 0x10000, b"late"))),
    "terminate": (0x30, pd(4, 4), records(untagged(7, 2, 1, 0, bytes([0x12, 0x01, 0x00, 0x00])))),
}

out = sys.argv[1] if len(sys.argv) > 1 else "iwarp/fuzz_corpus/qp_llp_rx"
os.makedirs(out, exist_ok=True)
for name, (mode, private, body) in SEEDS.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([mode, len(private)]) + private + body)
