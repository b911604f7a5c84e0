#!/usr/bin/env python3
"""Writes the seed corpora of the nfs/ fuzz targets (format: nfs_fuzz_common.h).

Each seed: procedure index in the target's family (1 byte), handle choice
(1 byte: 0 none, 1 export root, 2 file, 3 symlink; +4 calls as uid 1000),
then the arguments after the leading handle, written word by word here from
RFC 1813's XDR, independently of the C++ encoders.

usage: gen_nfs_fuzz_seeds.py [OUT_DIR]   (default: fuzz_corpus beside this file)
"""
import os
import struct
import sys


def words(*ws):
    return b"".join(struct.pack(">I", w & 0xFFFFFFFF) for w in ws)


def hyper(v):
    return struct.pack(">Q", v)


def opaque(b):
    return words(len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


FH = opaque(bytes(range(1, 37)))   # a handle that fails its MAC
SATTR_NONE = words(0, 0, 0, 0, 0, 0)
SATTR_MODE = words(1, 0o640, 0, 0, 1) + hyper(3) + words(2, 0, 0)  # mode, size 3, atime server, mtime unchanged


def seed(idx, handle, args):
    return bytes([idx, handle]) + args


def handle_family():
    # 1 GETATTR, 4 ACCESS, 5 READLINK, 6 READ, 16 READDIR, 17 READDIRPLUS, 18 FSSTAT, 19 FSINFO, 20 PATHCONF, 21 COMMIT
    out = {}
    for i, name in enumerate(["getattr", "access", "readlink", "read", "readdir", "readdirplus", "fsstat",
                              "fsinfo", "pathconf", "commit"]):
        extra = {
            "access": words(0x3F),
            "read": hyper(0) + words(4096),
            "readdir": hyper(0) + b"\0" * 8 + words(4096),
            "readdirplus": hyper(0) + b"\0" * 8 + words(1024, 8192),
            "commit": hyper(0) + words(0),
        }.get(name, b"")
        for h in (1, 2, 3):
            out[f"{name}_h{h}"] = seed(i, h, extra)
        out[f"{name}_forged"] = seed(i, 0, FH + extra)
    out["read_huge_count"] = seed(3, 2, hyper(1 << 40) + words(0xFFFFFFFF))
    out["readdir_bad_cookie"] = seed(4, 1, hyper(0xDEADBEEF) + b"\0" * 8 + words(100))
    return out


def dirop_family():
    # 2 SETATTR, 3 LOOKUP, 8 CREATE, 9 MKDIR, 10 SYMLINK, 11 MKNOD, 12 REMOVE, 13 RMDIR, 14 RENAME, 15 LINK
    out = {
        "setattr_mode": seed(0, 2, SATTR_MODE + words(0)),
        "setattr_guard": seed(0, 2, SATTR_NONE + words(1, 1, 2)),
        "lookup_f": seed(1, 1, opaque(b"f")),
        "lookup_dotdot": seed(1, 1, opaque(b"..")),
        "lookup_slash": seed(1, 1, opaque(b"l/x")),
        "create_unchecked": seed(2, 1, opaque(b"new") + words(0) + SATTR_MODE),
        "create_guarded": seed(2, 1, opaque(b"f") + words(1) + SATTR_NONE),
        "create_exclusive": seed(2, 1, opaque(b"x") + words(2) + b"verifier"),
        "mkdir": seed(3, 1, opaque(b"dir") + SATTR_NONE),
        "symlink": seed(4, 1, opaque(b"s") + SATTR_NONE + opaque(b"../../etc")),
        "mknod_fifo": seed(5, 1, opaque(b"p") + words(7) + SATTR_NONE),
        "mknod_chr": seed(5, 5, opaque(b"c") + words(4) + SATTR_NONE + words(1, 3)),
        "mknod_reg": seed(5, 1, opaque(b"r") + words(1)),
        "remove": seed(6, 1, opaque(b"new")),
        "rmdir": seed(7, 1, opaque(b"dir")),
        "rename": seed(8, 1, opaque(b"f") + FH + opaque(b"g")),
        "link": seed(9, 2, FH + opaque(b"hard")),
        "uid1000_create": seed(2, 5, opaque(b"u") + words(1) + SATTR_NONE),
    }
    return out


def write_family():
    return {
        "unstable": seed(0, 2, hyper(0) + words(5, 0) + opaque(b"hello")),
        "file_sync": seed(0, 2, hyper(100) + words(3, 2) + opaque(b"abc")),
        "count_mismatch": seed(0, 2, hyper(0) + words(9, 1) + opaque(b"abc")),
        "to_dir": seed(0, 1, hyper(0) + words(1, 0) + opaque(b"x")),
        "truncated": seed(0, 2, hyper(0) + words(5, 0) + words(100) + b"ab"),
    }


def mount_family():
    return {
        "null": seed(0, 0, b""),
        "mnt_unknown": seed(1, 0, opaque(b"/nope")),
        "mnt_long": seed(1, 0, words(5000)),
        "dump": seed(2, 0, b""),
        "umnt": seed(3, 0, opaque(b"/x")),
        "umntall": seed(4, 0, b""),
        "export": seed(5, 0, b""),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_corpus")
    for target, seeds in (("nfs_handle", handle_family()), ("nfs_dirop", dirop_family()),
                          ("nfs_write", write_family()), ("mount_dispatch", mount_family())):
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
