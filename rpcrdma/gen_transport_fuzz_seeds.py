#!/usr/bin/env python3
"""Writes the seed corpus of the `rpcrdma_transport` fuzz target.

Each seed is one inbound Send as RdmaServer receives it (and, through the
same bytes, a reply as RdmaClient receives it): RPC-over-RDMA v1 headers
(RFC 8166 4.1.2) written word by word here, independently of the C++
encoder, aimed at the transport's planning: Read chunks at several
positions, RDMA_NOMSG with chunks reinserted into the Position Zero chunk,
Write lists and Reply chunks of several segments, and the transport's own
bounds (more than 3 Read chunks or Write chunks, calls over 64 KiB, the
fuzzer's call limit).

usage: gen_transport_fuzz_seeds.py [OUT_DIR]
       (default: fuzz_corpus/rpcrdma_transport beside this file)
"""
import os
import struct
import sys

MSG, NOMSG, ERROR = 0, 1, 4


def w(*ws):
    return b"".join(struct.pack(">I", v & 0xFFFFFFFF) for v in ws)


def segment(handle, length, offset):
    return w(handle, length) + struct.pack(">Q", offset)


def header(xid, proc, reads=(), writes=(), reply=None, credit=16):
    out = w(xid, 1, credit, proc)
    for pos, s in reads:
        out += w(1, pos) + segment(*s)
    out += w(0)
    for chunk in writes:
        out += w(1, len(chunk)) + b"".join(segment(*s) for s in chunk)
    out += w(0)
    if reply is None:
        out += w(0)
    else:
        out += w(1, len(reply)) + b"".join(segment(*s) for s in reply)
    return out


def body(xid, n):
    return w(xid) + bytes((i * 5) & 0xFF for i in range(n - 4))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "fuzz_corpus", "rpcrdma_transport")
    os.makedirs(out, exist_ok=True)
    x = 0x1234ABCD
    seeds = {
        "null_call": header(x, MSG) + w(x, 0),
        "echo_write_list": header(x, MSG, writes=[[(0x10, 4096, 0x100000)]]) + w(x, 4096),
        "echo_two_segment_write": header(x, MSG, writes=[[(0x10, 100, 0x1000), (0x11, 4000, 0x9000)]])
        + w(x, 3000),
        "read_chunk_mid": header(x, MSG, reads=[(8, (0x20, 1000, 0x2000))],
                                 writes=[[(0x10, 1000, 0x100000)]]) + w(x, 1000) + w(7),
        "read_two_segments": header(x, MSG, reads=[(8, (0x20, 10, 0x2000)), (8, (0x21, 7, 0x3000))])
        + w(x, 17),
        "three_read_chunks": header(x, MSG, reads=[(8, (1, 5, 0)), (12, (2, 6, 0)), (16, (3, 7, 0))])
        + w(x, 5, 6, 7),
        "four_read_chunks": header(x, MSG, reads=[(8, (1, 4, 0)), (12, (2, 4, 0)), (16, (3, 4, 0)),
                                                  (20, (4, 4, 0))]) + w(x, 1, 2, 3, 4),
        "nomsg_call": header(x, NOMSG, reads=[(0, (0x30, 2000, 0x40000))],
                             writes=[[(0x10, 1024, 0x100000)]]),
        "nomsg_call_with_chunk": header(x, NOMSG, reads=[(0, (0x30, 64, 0x40000)),
                                                         (8, (0x31, 100, 0x50000))]),
        "nomsg_chunk_beyond": header(x, NOMSG, reads=[(0, (0x30, 8, 0)), (64, (0x31, 4, 0))]),
        "reply_chunk_call": header(x, MSG, reply=[(0x40, 2048, 0x60000), (0x41, 65536, 0x70000)])
        + w(x, 60000),
        "call_too_long": header(x, MSG, reads=[(8, (1, 0x10000, 0)), (8, (2, 0x10000, 0))]) + w(x, 1),
        "four_write_chunks": header(x, MSG, writes=[[(1, 8, 0)]] * 4) + w(x, 8),
        "empty_write_chunk": header(x, MSG, writes=[[]]) + w(x, 0),
        # Replies as the client sees them.
        "reply_inline": header(x, MSG) + w(x, 1, 0),
        "reply_write_list": header(x, MSG, writes=[[(0x10, 4000, 0)], [(1, 50, 0), (2, 50, 0)]]) + w(x, 1),
        "reply_nomsg": header(x, NOMSG, reply=[(0x40, 8000, 0)]),
        "reply_err_vers": w(x, 1, 16, ERROR, 1, 1, 1),
        "reply_err_chunk": w(x, 1, 16, ERROR, 2),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {out}")


if __name__ == "__main__":
    main()
