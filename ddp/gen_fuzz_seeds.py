#!/usr/bin/env python3
"""Writes the seed corpus of the ddp_rdmap fuzz target.

Each seed is one DDP segment (header + payload) built here with struct, i.e.
independently of the C++ encoders, against the fixture the fuzz target uses
(STag 0x101 writable, STag 0x201 readable near the top of TO space, Send
buffers for MSN 1 and 2, one Read Request and one Terminate buffer).
Run from anywhere: python3 ddp/gen_fuzz_seeds.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_corpus", "ddp_rdmap")


def ctrl(tagged, last, dv=1, rsvd=0):
    return (0x80 if tagged else 0) | (0x40 if last else 0) | (rsvd << 2) | dv


def rdmap(op, rv=1):
    return (rv << 6) | op


def tagged(op, stag, to, payload, last=True, dv=1, rv=1):
    return struct.pack(">BBIQ", ctrl(True, last, dv), rdmap(op, rv), stag, to) + payload


def untagged(op, qn, msn, mo, payload, last=True, inv=0, dv=1, rv=1):
    return struct.pack(">BBIIII", ctrl(False, last, dv), rdmap(op, rv), inv, qn, msn, mo) + payload


def read_request(sink_stag, sink_to, size, src_stag, src_to):
    return struct.pack(">IQIIQ", sink_stag, sink_to, size, src_stag, src_to)


def terminate(layer, etype, code, m=False, d=False, r=False, seglen=0, ddp_hdr=b"", rdma_hdr=b""):
    hdrct = (0x80 if m else 0) | (0x40 if d else 0) | (0x20 if r else 0)
    out = struct.pack(">BBBB", (layer << 4) | etype, code, hdrct, 0)
    if d:
        out += struct.pack(">H", seglen) + ddp_hdr
    if r:
        out += rdma_hdr
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    rr = read_request(0x101, 0x1000, 4096, 0x201, 0xFFFFFFFFFFFF0000)
    send_hdr = untagged(3, 0, 2, 0, b"")
    seeds = {
        # RFC 5041 5.2 examples (first and last segment of each).
        "write_rfc_first": tagged(0, 0x101, 16384, bytes(1486), last=False),
        "write_rfc_last": tagged(0, 0x101, 17870, bytes(562)),
        "send_rfc_first": untagged(3, 0, 1, 0, bytes(1482), last=False),
        "send_rfc_last": untagged(3, 0, 1, 1482, bytes(566)),
        "read_response": tagged(2, 0x101, 0, b"\xAB" * 64),
        "write_zero_len": tagged(0, 0xDEADBEEF, 0xFFFFFFFFFFFFFFFF, b""),
        "send_se_inv": untagged(6, 0, 1, 0, b"hello", inv=0x201),
        "send_zero_len": untagged(3, 0, 1, 0, b""),
        "read_request": untagged(1, 1, 1, 0, rr),
        "read_request_zero": untagged(1, 1, 1, 0, read_request(1, 0, 0, 1, 0)),
        "terminate_bare": untagged(7, 2, 1, 0, terminate(0, 2, 0x07)),
        "terminate_ddp": untagged(7, 2, 1, 0, terminate(1, 2, 0x02, m=True, d=True, seglen=28,
                                                        ddp_hdr=send_hdr)),
        "terminate_rr": untagged(7, 2, 1, 0, terminate(0, 1, 0x02, m=True, d=True, r=True,
                                                       seglen=46,
                                                       ddp_hdr=untagged(1, 1, 1, 0, b""),
                                                       rdma_hdr=rr)),
        "terminate_tagged_hdr": untagged(7, 2, 1, 0, terminate(1, 1, 0x01, d=True,
                                                               ddp_hdr=tagged(0, 0x101, 7, b""))),
        # Errors, one per check.
        "err_bad_dv": tagged(0, 0x101, 0, b"x", dv=2),
        "err_bad_rv": untagged(3, 0, 1, 0, b"x", rv=2),
        "err_reserved_opcode": untagged(9, 0, 1, 0, b"x"),
        "err_send_tagged": tagged(3, 0x101, 0, b"x"),
        "err_send_on_qn1": untagged(3, 1, 1, 0, b"x"),
        "err_invalid_stag": tagged(0, 0x901, 0, b"x"),
        "err_base_bounds": tagged(0, 0x101, (1 << 20) - 1, b"xy"),
        "err_to_wrap": tagged(0, 0x201, 0xFFFFFFFFFFFFFFF0, bytes(32)),
        "err_access": tagged(0, 0x201, 0xFFFFFFFFFFFF0000, b"x"),
        "err_no_buffer": untagged(3, 0, 3, 0, b"x"),
        "err_msn_range": untagged(3, 0, 0, 0, b"x"),
        "err_invalid_mo": untagged(3, 0, 2, 100, b"x"),
        "err_too_long": untagged(3, 0, 2, 0, bytes(101)),
        "err_truncated": tagged(0, 0x101, 0, b"")[:9],
        "err_rr_short": untagged(1, 1, 1, 0, rr[:20]),
        "err_term_m_without_d": untagged(7, 2, 1, 0, bytes([0x12, 0x02, 0x80, 0x00, 0x00, 0x10])),
        "one_byte": b"\x41",
        # Found by the fuzzer: an empty last segment whose MO lies past the buffer.
        "regress_zero_len_big_mo": untagged(3, 0, 1, 0x02000000, b""),
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()
