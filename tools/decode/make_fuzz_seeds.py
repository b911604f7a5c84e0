#!/usr/bin/env python3
"""Writes the decode fuzzer's seed corpus from captures made by iwarp-synth.

usage: make_fuzz_seeds.py IWARP_SYNTH OUTPUT_DIR
Each seed is the capture's frames, each prefixed by a 2-byte big-endian length.
"""
import os
import struct
import subprocess
import sys
import tempfile

VARIANTS = [
    ("tcp_crc", []),
    ("tcp_markers", ["--markers", "--read-size", "1000"]),
    ("tcp_nocrc_markers", ["--markers", "--no-crc", "--write-size", "700"]),
    ("tcp_corrupt", ["--fault", "corrupt-payload"]),
    ("tcp_bad_marker", ["--markers", "--no-crc", "--fault", "bad-marker"]),
    ("tcp_msn_gap", ["--fault", "msn-gap"]),
    ("tcp_bad_rpc", ["--fault", "bad-rpc-version"]),
    ("sctp", ["--sctp"]),
    ("sctp_ordered", ["--sctp", "--fault", "sctp-ordered"]),
]


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    off = 24  # classic pcap global header
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        off += 16
        yield data[off:off + incl]
        off += incl


def main():
    synth, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in VARIANTS:
            cap = os.path.join(tmp, name + ".pcap")
            subprocess.run([synth, "--write-size", "1500", "--read-size", "900", *args, cap], check=True)
            seed = b"".join(struct.pack(">H", len(fr)) + fr for fr in frames(cap))
            with open(os.path.join(out, name), "wb") as f:
                f.write(seed)


if __name__ == "__main__":
    main()
