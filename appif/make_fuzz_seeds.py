#!/usr/bin/env python3
"""Writes the seed corpus of the appif_session fuzzer (see session_fuzz.cc for
the record format). Ids are those a fresh server hands out: session 1, then
2, 3, ... for every PD, CQ, QP, listener and connection request."""
import os
import struct
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_corpus", "appif_session")
STAG = (1 << 8) | 0x5B  # first slot, first key of a fresh STag table
VA = 0x10000


def rec(kind, data):
    return struct.pack("<BH", kind, len(data)) + data


def msg(op, body, seq=1):
    return struct.pack("<IIiI", op, seq, 0, len(body)) + body


def ctl(op, body, fds=0):
    return rec(0 | (fds << 2), msg(op, body))


ALLOC_PD = ctl(2, struct.pack("<I", 0))
REG_MR = ctl(4, struct.pack("<IIQQQII", 2, 7, 0, 65536, VA, 1, 0), fds=3)
CREATE_CQ = ctl(6, struct.pack("<I", 16))  # the daemon makes the wake-up pipe
def create_qp(): return ctl(8, struct.pack("<IIIII", 2, 3, 3, 4, 4))
LISTEN = ctl(10, struct.pack("<IHHII", 0, 1, 0, 0, 0))
# An SCTP listener (ListenReq::transport 1): refused by a daemon without SCTP.
LISTEN_SCTP = ctl(10, struct.pack("<IHHII", 0, 2, 0, 1, 0))
CONNECT = ctl(12, struct.pack("<IIHHII", 4, 0, 1, 0, 0, 3) + b"abc" + bytes(253))
# ConnectReq over SCTP (transport 1) to a remote address.
CONNECT_SCTP = ctl(12, struct.pack("<IIHHII", 4, 0xC6120002, 7, 0, 1, 0) + bytes(256))
ACCEPT = ctl(13, struct.pack("<III", 7, 6, 0) + bytes(256))
POLL = rec(2, b"")


def sqe(wr_id, opcode, raddr, rkey, addr, length, lkey, inv=0):
    return struct.pack("<QBBBBIQII", wr_id, opcode, 1, 1, 0, inv, raddr, rkey, 0) + \
        struct.pack("<QII", addr, length, lkey) + bytes(48)


def shm_write(offset, data):
    return rec(1, struct.pack("<H", offset) + data)


# The last shared memory is the second QP's (id 6): SQ header at 0, slots at 192.
SETUP = ALLOC_PD + REG_MR + CREATE_CQ + create_qp() + LISTEN + create_qp() + CONNECT + ACCEPT
SEEDS = {
    "open_only": b"",
    "setup": SETUP,
    "write_ok": SETUP + shm_write(192, sqe(1, 4, VA + 100, STAG, VA, 64, STAG)) +
    shm_write(0, struct.pack("<I", 1)) + POLL,
    "read_bounds": SETUP + shm_write(192, sqe(2, 5, VA + 65530, STAG, VA, 64, STAG)) +
    shm_write(0, struct.pack("<I", 1)) + POLL,
    "send_no_buffer": SETUP + shm_write(192, sqe(3, 0, 0, 0, VA, 8, STAG)) +
    shm_write(0, struct.pack("<I", 1)) + POLL,
    "send_invalidate": SETUP + shm_write(192, sqe(4, 1, 0, 0, VA, 8, STAG, inv=STAG)) +
    shm_write(0, struct.pack("<I", 1)) + POLL,
    "corrupt_index": SETUP + shm_write(0, struct.pack("<I", 1000)) + POLL,
    "reconnect": SETUP + rec(3, b"") + ALLOC_PD,
    "bad_lengths": rec(0, msg(4, b"\x01\x02")) + rec(0, b"\x02\x00") +
    rec(0, struct.pack("<IIiI", 2, 1, 0, 999)),
    "sctp_transport": ALLOC_PD + CREATE_CQ + create_qp() + LISTEN_SCTP + CONNECT_SCTP,
    "destroy_busy": ALLOC_PD + CREATE_CQ + create_qp() + ctl(7, struct.pack("<I", 3)) +
    ctl(3, struct.pack("<I", 2)) + ctl(9, struct.pack("<I", 4)) + ctl(7, struct.pack("<I", 3)),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print("wrote %d seeds to %s" % (len(SEEDS), OUT), file=sys.stderr)
