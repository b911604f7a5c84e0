#!/usr/bin/env python3
"""Writes the seed corpus of the `rpcrdma` fuzz target.

Seeds are RPC-over-RDMA v1 transport headers (RFC 8166 4.1.2) written word by
word, independently of the C++ encoder, plus RFC 8797 private data. Valid
headers of every procedure and edge cases for each receive check. Within the
fuzzer's limits: 8 read segments, 4 write chunks, 8 segments per chunk.

usage: gen_fuzz_seeds.py [OUT_DIR]   (default: fuzz_corpus/rpcrdma beside this file)
"""
import os
import struct
import sys

MSG, NOMSG, MSGP, DONE, ERROR = 0, 1, 2, 3, 4


def words(*ws):
    return b"".join(struct.pack(">I", w & 0xFFFFFFFF) for w in ws)


def seg(handle, length, offset):
    return words(handle, length) + struct.pack(">Q", offset)


def fixed(xid, proc, vers=1, credit=32):
    return words(xid, vers, credit, proc)


def read_list(entries):
    out = b"".join(words(1, pos) + seg(*s) for pos, s in entries)
    return out + words(0)


def write_list(chunks):
    out = b"".join(words(1, len(c)) + b"".join(seg(*s) for s in c) for c in chunks)
    return out + words(0)


def reply_chunk(segs):
    if segs is None:
        return words(0)
    return words(1, len(segs)) + b"".join(seg(*s) for s in segs)


def rpc(xid, n=36):
    return words(xid) + bytes(range(n - 4))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "fuzz_corpus", "rpcrdma")
    os.makedirs(out_dir, exist_ok=True)
    x = 0x0BADCAFE
    seeds = {
        # Valid calls and replies.
        "msg_short_call": fixed(x, MSG) + read_list([]) + write_list([]) + reply_chunk(None) + rpc(x),
        "msg_read_chunk": fixed(1, MSG) + read_list([(112, (0x1111, 4096, 0x7F0000001000)),
                                                     (112, (0x1112, 904, 0x20000000))])
        + write_list([]) + reply_chunk(None) + rpc(1, 120),
        "nomsg_long_call": fixed(x, NOMSG) + read_list([(0, (0xA, 2000, 1 << 32)), (16, (0xB, 8192, 0))])
        + write_list([[(0xB, 8192, 0x10), (0xC, 8192, 0x2010)], []])
        + reply_chunk([(0xD, 1024, 0xFFFFFFFFFFFF0000)]),
        "msg_reply_write_chunk": fixed(x, MSG) + read_list([]) + write_list([[(0xB, 4000, 0x10)]])
        + reply_chunk(None) + rpc(x),
        "nomsg_long_reply": fixed(x, NOMSG) + read_list([]) + write_list([])
        + reply_chunk([(0xD, 3000, 0x40)]),
        "limits_full": fixed(2, MSG) + read_list([(8 * i, (i, 4, 0)) for i in range(1, 9)])
        + write_list([[(c, 1, 2)] * 8 for c in range(4)]) + reply_chunk([(9, 9, 9)] * 8) + rpc(2),
        "err_vers": fixed(x, ERROR) + words(1, 1, 1),
        "err_chunk": fixed(x, ERROR) + words(2),
        "done": fixed(x, DONE),
        # Edge cases for the checks.
        "bad_version": fixed(x, MSG, vers=2) + words(0, 0, 0) + rpc(x),
        "error_bad_version": fixed(x, ERROR, vers=7) + words(1, 7, 7),
        "msgp": fixed(x, MSGP) + words(0, 0, 0, 0, 0),
        "unknown_proc": fixed(x, 5) + words(0, 0, 0),
        "bad_discriminator": fixed(x, MSG) + words(2, 0, 0) + rpc(x),
        "misaligned_position": fixed(3, MSG) + read_list([(114, (1, 100, 0))]) + write_list([])
        + reply_chunk(None) + rpc(3, 200),
        "position_zero_in_msg": fixed(3, MSG) + read_list([(0, (1, 100, 0))]) + write_list([])
        + reply_chunk(None) + rpc(3),
        "nomsg_no_chunks": fixed(x, NOMSG) + words(0, 0, 0),
        "overlap": fixed(3, MSG) + read_list([(8, (1, 10, 0)), (16, (2, 4, 0))]) + write_list([])
        + reply_chunk(None) + rpc(3, 64),
        "beyond_payload": fixed(3, MSG) + read_list([(112, (1, 4096, 0))]) + write_list([])
        + reply_chunk(None) + rpc(3, 108),
        "xid_mismatch": fixed(x, MSG) + words(0, 0, 0) + rpc(x + 1),
        "too_many_segments": fixed(x, MSG) + words(0, 1, 0xFFFFFFFF),
        "truncated_read": fixed(x, MSG) + words(1, 8, 0),
        "short_16": fixed(x, MSG),
        # RFC 8797 private data: Linux defaults, and with reserved bits and padding.
        "cm_private_linux": words(0xF6AB0E18) + bytes([1, 1, 3, 3]),
        "cm_private_padded": words(0xF6AB0E18) + bytes([1, 0xFE, 0, 255]) + bytes(48),
    }
    for name, data in seeds.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {out_dir}")


if __name__ == "__main__":
    main()
