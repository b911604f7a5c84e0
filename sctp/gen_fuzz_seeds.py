#!/usr/bin/env python3
"""Writes the seed corpus of the sctp_adapt fuzz target (RFC 5043 chunk user
data and the adaptation indication parameter), built with struct so that the
seeds do not depend on the C++ encoders. Run: python3 sctp/gen_fuzz_seeds.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_corpus", "sctp_adapt")


def ssc(ssn, function, pd=b""):
    return struct.pack(">HH", ssn, function) + pd


def main():
    os.makedirs(OUT, exist_ok=True)
    ddp_send = struct.pack(">BBIIII", 0x41, 0x43, 0, 0, 1, 0) + b"payload"
    seeds = {
        "param_ddp": struct.pack(">HHI", 0xC006, 8, 1),
        "param_other": struct.pack(">HHI", 0xC006, 8, 0x12345678),
        "param_bad_len": struct.pack(">HHI", 0xC006, 12, 1),
        "segment_chunk": struct.pack(">H", 3) + ddp_send,
        "segment_chunk_max": struct.pack(">H", 0xFFFF) + bytes(1450),
        "segment_chunk_too_big": struct.pack(">H", 1) + bytes(1451),
        "segment_chunk_empty": struct.pack(">H", 0),
        "initiate": ssc(0, 1, b"private data"),
        "accept_512": ssc(0, 2, bytes(range(256)) * 2),
        "accept_513": ssc(0, 2, bytes(513)),
        "reject_empty": ssc(0, 3),
        "terminate": ssc(7, 4),
        "terminate_with_pd": ssc(7, 4, b"x"),
        "unknown_function": ssc(0, 5),
        "sequence_passive": bytes([0, 4, 4, 4, 3]),
        "sequence_active": bytes([1, 4, 4, 3, 4]),
        "mtu_9000_v6": struct.pack(">IBBHB", 9000, 1, 8, 16, 0),
        "mtu_576": struct.pack(">IBBHB", 576, 0, 0, 0, 0),
        "one_byte": b"\x00",
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()
