#!/usr/bin/env python3
"""Writes the seed corpus of the sctp_session fuzz target (records of
op | stream | length | bytes, see sctp/sctp_session_fuzz.cc), built with
struct so the seeds do not depend on the C++ encoders.
Run: python3 sctp/gen_session_fuzz_seeds.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_corpus", "sctp_session")

SEG, CTL, OTHER, INITIATE, ACCEPT, REJECT, TERMINATE, SEND, FULL, OVERSIZE, DOWN = range(11)


def rec(op, stream, body=b""):
    return struct.pack(">BBH", op, stream, len(body)) + body


def ctl(ssn, fc, pd=b""):
    return struct.pack(">HH", ssn, fc) + pd


def seg(ssn, body):
    return struct.pack(">H", ssn) + body


def main():
    os.makedirs(OUT, exist_ok=True)
    ddp = bytes([0x41, 0x43]) + b"\0" * 16 + b"payload"
    seeds = {
        # passive: Initiate, Accept, segments in order, peer Terminate
        "passive_accept": rec(CTL, 1, ctl(0, 1, b"hi")) + rec(ACCEPT, 1, b"ok")
        + rec(SEG, 1, seg(1, ddp)) + rec(SEG, 1, seg(2, ddp)) + rec(CTL, 1, ctl(3, 4)),
        # active: Initiate, Accept arrives, send, local Terminate, peer Terminate
        "active_accept": rec(INITIATE, 0, b"pd") + rec(CTL, 0, ctl(0, 2, b"yes"))
        + rec(SEND, 0, ddp) + rec(TERMINATE, 0) + rec(CTL, 0, ctl(1, 4)),
        "active_reject": rec(INITIATE, 2) + rec(CTL, 2, ctl(0, 3, b"no")),
        # reordered segments within the window
        "reorder": rec(CTL, 3, ctl(0, 1)) + rec(ACCEPT, 3) + rec(SEG, 3, seg(3, ddp))
        + rec(SEG, 3, seg(2, ddp)) + rec(SEG, 3, seg(1, ddp)),
        # DDP-SSN far ahead, a duplicate, one behind
        "bad_ssn": rec(CTL, 1, ctl(0, 1)) + rec(ACCEPT, 1) + rec(SEG, 1, seg(40000, ddp))
        + rec(SEG, 1, seg(1, ddp)) + rec(CTL, 1, ctl(9, 4)),
        "duplicate": rec(CTL, 1, ctl(0, 1)) + rec(ACCEPT, 1) + rec(SEG, 1, seg(2, ddp))
        + rec(SEG, 1, seg(2, ddp)),
        # pending Initiate limit (2 in the fuzz config)
        "initiate_limit": rec(CTL, 0, ctl(0, 1)) + rec(CTL, 1, ctl(0, 1)) + rec(CTL, 2, ctl(0, 1)),
        # send buffer full: deferred Terminate, then flushed
        "deferred_terminate": rec(CTL, 0, ctl(0, 1)) + rec(ACCEPT, 0) + rec(FULL, 0)
        + rec(CTL, 0, ctl(1, 4)) + rec(FULL, 0),
        "illegal_accept_from_active": rec(CTL, 1, ctl(0, 1)) + rec(ACCEPT, 1) + rec(CTL, 1, ctl(1, 2)),
        "oversize_and_down": rec(CTL, 1, ctl(0, 1)) + rec(ACCEPT, 1) + rec(OVERSIZE, 1) + rec(DOWN, 0),
        "private_data_512": rec(CTL, 1, ctl(0, 1, b"\x5a" * 512)) + rec(REJECT, 1, b"\x01" * 512),
        "unknown_ppid_and_stream": rec(OTHER, 0, b"xx") + rec(SEG, 251, seg(0, ddp)),
        "reorder_full": rec(CTL, 0, ctl(0, 1)) + rec(ACCEPT, 0)
        + b"".join(rec(SEG, 0, seg(2 + i, ddp)) for i in range(20)),
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
