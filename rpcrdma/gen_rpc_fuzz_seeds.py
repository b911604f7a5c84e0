#!/usr/bin/env python3
"""Writes the seed corpora of the `rpc_dispatch` and `rpc_record` fuzz targets.

rpc_dispatch seeds: two piece-boundary bytes, then an ONC RPC call (RFC 5531
9) written word by word here, independently of the C++ encoder: NULL and
ECHO of the test program (0x20494950 v1) with AUTH_NONE and AUTH_SYS, and
one call for each error the dispatcher answers or drops.
rpc_record seeds: maximum record size (2 bytes), split step (1 byte), then
a record-marked stream (RFC 5531 11).

usage: gen_rpc_fuzz_seeds.py [OUT_DIR]   (default: fuzz_corpus beside this file)
"""
import os
import struct
import sys

PROG, VERS = 0x20494950, 1


def words(*ws):
    return b"".join(struct.pack(">I", w & 0xFFFFFFFF) for w in ws)


def opaque(b):
    return words(len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


def auth_sys(stamp, name, uid, gid, gids):
    body = words(stamp) + opaque(name) + words(uid, gid, len(gids), *gids)
    return words(1) + opaque(body)


NONE = words(0, 0)


def call(xid, prog, vers, proc, cred=NONE, verf=NONE, args=b"", rpcvers=2):
    return words(xid, 0, rpcvers, prog, vers, proc) + cred + verf + args


def dispatch_seeds():
    sys_cred = auth_sys(7, b"client", 1000, 100, [100, 27])
    return {
        "null": call(1, PROG, VERS, 0),
        "echo_5": call(2, PROG, VERS, 1, args=opaque(b"hello")),
        "echo_0": call(3, PROG, VERS, 1, args=opaque(b"")),
        "echo_4096": call(4, PROG, VERS, 1, args=opaque(bytes(range(256)) * 16)),
        "echo_auth_sys": call(5, PROG, VERS, 1, cred=sys_cred, args=opaque(b"abc")),
        "echo_garbage": call(6, PROG, VERS, 1, args=words(9) + b"ab"),
        "echo_too_long": call(7, PROG, VERS, 1, args=words(0x100001)),
        "rpc_mismatch": call(8, PROG, VERS, 0, rpcvers=3),
        "prog_unavail": call(9, PROG + 16, VERS, 0),
        "prog_mismatch": call(10, PROG, 9, 0),
        "proc_unavail": call(11, PROG, VERS, 7),
        "bad_flavor": call(12, PROG, VERS, 0, cred=words(6, 0)),
        "bad_auth_sys": call(13, PROG, VERS, 0, cred=words(1, 8, 0, 300)),
        "cred_401": words(14, 0, 2, PROG, VERS, 0, 0, 401) + b"\0" * 404,
        "strict_none": call(15, PROG + 1, 3, 0, args=words(5)),
        "strict_sys": call(16, PROG + 1, 3, 0, cred=sys_cred, args=words(5)),
        "reply_not_call": words(17, 1, 0, 0, 0, 0),
        "short": words(18, 0, 2),
    }


def fragment(body, last):
    return words((0x80000000 if last else 0) | len(body)) + body


def record_seeds():
    rec = call(1, PROG, VERS, 1, args=opaque(b"hello"))
    return {
        "one_record": (1024, 0, fragment(rec, True)),
        "three_fragments": (1024, 3, fragment(rec[:5], False) + fragment(b"", False) + fragment(rec[5:], True)),
        "two_records": (1024, 7, fragment(b"abcd", True) + fragment(b"efgh", True)),
        "oversize": (16, 0, fragment(b"x" * 17, True)),
        "exact_max": (16, 1, fragment(b"y" * 16, True)),
        "cut_header": (64, 0, fragment(b"z" * 8, True) + b"\x80\x00"),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_corpus")
    d = os.path.join(out, "rpc_dispatch")
    os.makedirs(d, exist_ok=True)
    for i, (name, c) in enumerate(sorted(dispatch_seeds().items())):
        # Piece boundaries: whole call in one piece for half the seeds, cut otherwise.
        cuts = bytes([0, 0]) if i % 2 == 0 else bytes([11, 37])
        with open(os.path.join(d, name), "wb") as f:
            f.write(cuts + c)
    r = os.path.join(out, "rpc_record")
    os.makedirs(r, exist_ok=True)
    for name, (mx, step, stream) in sorted(record_seeds().items()):
        with open(os.path.join(r, name), "wb") as f:
            f.write(struct.pack(">HB", mx, step) + stream)


if __name__ == "__main__":
    main()
