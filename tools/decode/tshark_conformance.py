#!/usr/bin/env python3
"""Checks captures written by iwarpd's encoders against an independent decoder.

tshark (Wireshark) must decode every synthesised iWARP session as MPA ->
DDP/RDMAP -> RPC-over-RDMA -> RPC with every MPA CRC "Good", no malformed
packet and no warning; SCTP checksums (CRC32c, RFC 9260) must verify.
iwarp-decode must agree on the clean captures (exit 0) and find an injected
CRC fault (exit 1) exactly where tshark reports the bad CRC.

usage: tshark_conformance.py IWARP_SYNTH IWARP_DECODE
Exit 77 (meson: skipped) with the reason when tshark is not installed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def tshark(*args):
    r = subprocess.run(["tshark", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("tshark failed: " + r.stderr)
    return r.stdout


def count(path, display_filter, *extra):
    out = tshark("-r", path, "-Y", display_filter, *extra)
    return len([l for l in out.splitlines() if l.strip()])


def decode(decoder, path):
    r = subprocess.run([decoder, "--quiet", path], capture_output=True, text=True)
    m = re.search(r"fpdus=(\d+).*ddp_segments=(\d+).*rpcrdma_messages=(\d+).*violations=(\d+)", r.stdout)
    if not m:
        raise SystemExit("iwarp-decode printed no summary:\n" + r.stdout + r.stderr)
    return r.returncode, [int(x) for x in m.groups()], r.stdout


def main():
    synth, decoder = sys.argv[1], sys.argv[2]
    if shutil.which("tshark") is None:
        print("SKIP: tshark is not installed (tools/setup.sh installs it)")
        return 77
    version = tshark("--version").splitlines()[0]
    print("using", version)
    tmp = tempfile.mkdtemp(prefix="iwarp_tshark_")
    try:
        # Read size 1000 with Markers keeps every FPDU from ending exactly on a
        # Marker position. Wireshark's MPA dissector counts a Marker that sits
        # right after an FPDU's CRC into that FPDU, while RFC 5044 4.3 puts it
        # in the following FPDU (our encoder does the latter; the unit tests
        # pin it against the RFC's own example), so Wireshark cannot follow
        # that case.
        variants = [
            ("crc", []),
            ("crc_markers", ["--markers", "--read-size", "1000"]),
            ("crc_jumbo", ["--mss", "8960", "--write-size", "40000", "--read-size", "20000"]),
            ("no_crc", ["--no-crc"]),
        ]
        for name, args in variants:
            path = os.path.join(tmp, name + ".pcap")
            subprocess.run([synth, *args, path], check=True)
            rc, (fpdus, segs, rpcs, viol), _ = decode(decoder, path)
            check(rc == 0 and viol == 0, f"{name}: iwarp-decode finds no violation")
            verbose = tshark("-r", path, "-V")
            good = len(re.findall(r"CRC check: 0x[0-9a-f]+ \(Good CRC32\)", verbose))
            bad = len(re.findall(r"Bad CRC32", verbose))
            if "--no-crc" in args:
                check(verbose.count("CRC flag: False") == 2, f"{name}: tshark sees C=0 in Request and Reply")
            else:
                check(good == fpdus and fpdus > 0, f"{name}: tshark marks all {fpdus} FPDU CRCs Good (saw {good})")
            check(bad == 0, f"{name}: tshark reports no bad CRC")
            check(count(path, "iwarp_ddp") == segs, f"{name}: tshark decodes all {segs} DDP segments")
            check(count(path, "iwarp_mpa.req") == 1 and count(path, "iwarp_mpa.rep") == 1,
                  f"{name}: tshark decodes the MPA Request and Reply")
            check(count(path, "rpcordma") == rpcs == 2, f"{name}: tshark decodes both RPC-over-RDMA messages")
            check(count(path, "rpc.msgtyp == 0") == 1 and count(path, "rpc.msgtyp == 1") == 1,
                  f"{name}: tshark decodes the RPC call and its reply inside the Sends")
            check(count(path, "_ws.malformed") == 0, f"{name}: no malformed packet")
            check(count(path, "_ws.expert.severity >= 6291456") == 0, f"{name}: no tshark warning or error")

        # The same session as pcapng (what dpdk-dumpcap and Wireshark write)
        # decodes identically.
        if shutil.which("editcap"):
            plain = os.path.join(tmp, "crc.pcap")
            ng = os.path.join(tmp, "crc.pcapng")
            subprocess.run(["editcap", "-F", "pcapng", plain, ng], check=True)
            a = decode(decoder, plain)
            b = decode(decoder, ng)
            check(b[0] == 0 and a[1] == b[1], "pcapng: iwarp-decode gives the same result as for pcap")
        else:
            print("skip pcapng check: editcap not installed")

        # An injected CRC fault: both decoders flag it, in the same frame.
        path = os.path.join(tmp, "corrupt.pcap")
        subprocess.run([synth, "--fault", "corrupt-payload", path], check=True)
        rc, (_, _, _, viol), text = decode(decoder, path)
        check(rc == 1 and viol == 1, "corrupt: iwarp-decode exits 1 with one violation")
        ours = re.search(r"^\s*(\d+)\s.*VIOLATION: MPA crc_error", text, re.M)
        bad_frames = re.findall(r"Frame (\d+):.*?Bad CRC32", tshark("-r", path, "-V"), re.S)
        check(ours is not None and len(bad_frames) >= 1, "corrupt: both report a bad CRC")
        if ours and bad_frames:
            # Frame numbers: the last "Frame N:" header before the first "Bad CRC32".
            v = tshark("-r", path, "-V")
            upto = v[: v.index("Bad CRC32")]
            tshark_frame = re.findall(r"^Frame (\d+):", upto, re.M)[-1]
            check(ours.group(1) == tshark_frame,
                  f"corrupt: same frame (iwarp-decode {ours.group(1)}, tshark {tshark_frame})")

        # RDMA over SCTP: Wireshark has no DDP-over-SCTP dissector; it checks
        # the SCTP CRC32c of every packet we wrote, iwarp-decode the rest.
        path = os.path.join(tmp, "sctp.pcap")
        subprocess.run([synth, "--sctp", path], check=True)
        rc, (_, segs, rpcs, viol), _ = decode(decoder, path)
        check(rc == 0 and viol == 0 and segs > 0 and rpcs == 2, "sctp: iwarp-decode finds no violation")
        statuses = tshark("-r", path, "-o", "sctp.checksum:CRC 32c", "-T", "fields",
                          "-e", "sctp.checksum.status").split()
        check(len(statuses) > 0 and all(s == "1" for s in statuses),
              f"sctp: tshark verifies all {len(statuses)} SCTP checksums as good")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILURES)} check(s) failed" if FAILURES else "all checks passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
