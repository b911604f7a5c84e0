#!/usr/bin/env python3
"""Writes the seed corpus of the l3_stack fuzz target (fuzz_corpus/l3_stack)."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_corpus", "l3_stack")
OUR_MAC = bytes([2, 0, 0, 0, 0, 1])
PEER_MAC = bytes([2, 0, 0, 0, 0, 2])
OUR_IP = bytes([198, 18, 0, 1])
PEER_IP = bytes([198, 18, 0, 2])


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(proto, payload, vihl=0x45, frag=0x4000):
    h = struct.pack("!BBHHHBBH4s4s", vihl, 0, 20 + len(payload), 1, frag, 64, proto, 0,
                    PEER_IP, OUR_IP)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return OUR_MAC + PEER_MAC + b"\x08\x00" + h + payload


def echo(n):
    m = struct.pack("!BBHHH", 8, 0, 0, 1, 1) + bytes(range(n))
    return m[:2] + struct.pack("!H", csum(m)) + m[4:]


def arp(op, tpa, eth_dst=b"\xff" * 6):
    return (eth_dst + PEER_MAC + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) +
            PEER_MAC + PEER_IP + bytes(6) + tpa)


SEEDS = {
    "arp_request": arp(1, OUR_IP),
    "arp_reply": arp(2, OUR_IP, OUR_MAC),
    "arp_other_target": arp(1, bytes([198, 18, 0, 9])),
    "icmp_echo": ipv4(1, echo(56)),
    "icmp_echo_padded": ipv4(1, echo(0)) + bytes(18),
    "ipv4_fragment": ipv4(1, echo(8), frag=0x2000),
    "ipv4_options": ipv4(1, bytes(4) + echo(8), vihl=0x46),
    "tcp": ipv4(6, bytes(20)),
    "short": OUR_MAC + PEER_MAC,
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), OUT))
