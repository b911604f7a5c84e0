#!/usr/bin/env python3
"""Writes the seed corpus of the mpa_gate fuzzer (layout in mpa_gate_fuzz.cc).

  iwarp/gen_gate_fuzz_seeds.py iwarp/fuzz_corpus/mpa_gate
"""
import os
import struct
import sys


def open_(src):
    return bytes([(src << 2) | 0])


def write(conn, data):
    return bytes([(conn << 2) | 1, len(data)]) + data


def close(conn, rst=False):
    return bytes([(conn << 2) | 2 | (0x80 if rst else 0)])


def wait(ms):
    return bytes([(ms << 2) | 3])


def request(pd=b"", rev=2, key=b"MPA ID Req Frame"):
    block = struct.pack(">HH", 0x8000 | 4, 0x8000 | 4) if rev == 2 else b""
    body = block + pd
    return key + bytes([0x40 | (0x10 if rev == 2 else 0), rev]) + struct.pack(">H", len(body)) + body


SEEDS = {
    "valid": open_(0) + write(0, b"R"),
    "idle_then_valid": open_(0) + open_(0) + open_(0) + open_(1) + write(3, b"R") + wait(30),
    "three_valid_two_qps": open_(0) + open_(1) + open_(2) + write(0, b"R") + write(1, b"R") +
                           write(2, b"R"),
    "bad_key": open_(1) + write(0, request(key=b"MPA ID Rep Frame")),
    "pd_over_limit": open_(2) + write(0, request(pd=bytes(300))[:200]) +
                     write(0, request(pd=bytes(300))[200:]),
    "split_request": open_(0) + write(0, request()[:7]) + wait(2) + write(0, request()[7:]),
    "close_before_request": open_(0) + write(0, b"MPA") + close(0) + open_(0) + close(1, rst=True),
    "flood_one_source": open_(0) * 8 + write(7, b"R") + wait(25),
    "rev1": open_(1) + write(0, request(rev=1, pd=b"hello")),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
