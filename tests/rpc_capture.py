#!/usr/bin/env python3
"""A live RPC-over-RDMA session on a wire the kernel can see, checked by tshark
and iwarp-decode.

Two iwarpd daemons, each on a net_tap port, in one private network namespace
(198.18.5.1 and 198.18.5.2); the kernel sides of the two TAPs (each first
given a MAC of its own: net_tap gives the kernel side the DPDK port's MAC,
which the bridge would take as its own) are joined by a Linux bridge, and
dumpcap records the bridge. iwarp-rpc-perf's server runs on daemon A, its
client on daemon B: NULL calls and echoes covering inline both ways, Read
list, Write list and Reply chunk (the client's counters must show each).

Checks on the capture:
  - tshark's rpcordma dissector decodes one RPC-over-RDMA message per call and
    per reply the tool made (counted by msg_type: RDMA_MSG / RDMA_NOMSG, and
    calls vs replies by the RPC layer beneath), every one version 1;
  - every MPA CRC is Good, none Bad;
  - no frame is malformed and tshark raises no error-severity expert item;
  - iwarp-decode counts the FPDUs and reports no violation.

The harness (BridgedPair) and the iWARP-layer checks (check_wire) serve
nfs_capture.py as well.

  rpc_capture.py --iwarpd PATH --iwarpctl PATH --rpc-perf PATH --decode PATH

Exit status: 0 pass, 1 fail, 77 skip (not root, no namespaces or bridge, no
hugepages, no tshark/dumpcap).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appif_wire_dataplane as awd  # noqa: E402  (app-interface daemons)
import iwarp_dataplane as iwd  # noqa: E402
import iwarp_peer as iw  # noqa: E402

from dataplane_integration import SKIP, TestFailure, check, log  # noqa: E402

PORT = 20049
A_IP, B_IP = "198.18.5.1", "198.18.5.2"
MIB = 1 << 20

# (client arguments, size, counter -> per-call count)
CASES = [
    (["--test", "null", "--count", "20"], 0, {}),
    (["--test", "echo", "--size", "100", "--count", "5", "--reply-chunk", "--read-threshold",
      str(MIB)], 100, {"read_chunks": 0, "write_chunks": 0, "reply_chunks": 0}),
    (["--test", "echo", "--size", "0", "--count", "5"], 0, {"write_chunks": 1}),
    (["--test", "echo", "--size", "4096", "--count", "5"], 4096,
     {"read_chunks": 1, "write_chunks": 1}),
    (["--test", "echo", "--size", "65536", "--count", "3", "--reply-chunk"], 65536,
     {"read_chunks": 1, "reply_chunks": 1, "write_chunks": 0}),
    (["--test", "echo", "--size", "65536", "--count", "3"], 65536,
     {"read_chunks": 1, "write_chunks": 1}),
    (["--test", "echo", "--size", str(MIB), "--count", "2"], MIB,
     {"read_chunks": 1, "write_chunks": 1}),
]


class TapDaemon(awd.AppDaemon):
    """An app-interface daemon on a net_tap port in a namespace shared with
    the other daemon (created by the test)."""

    def __init__(self, args, name, ip, iface, ns):
        super().__init__(args, name, ip, "server", "/unused", "")
        self.iface = iface
        self.ns = ns

    def config_text(self):
        text = super().config_text()
        text, n = re.subn(r'vdev: "net_memif0,[^"]*"', 'vdev: "net_tap0,iface=%s"' % self.iface,
                          text)
        check(n == 1, "daemon harness config changed (no net_memif vdev line)")
        return text

    def start(self):
        cfg = os.path.join(self.dir, "iwarpd.yaml")
        with open(cfg, "w") as f:
            f.write(self.config_text())
        self.logf = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, self.args.iwarpd, "--config", cfg],
            stdout=self.logf, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure("iwarpd %s exited %d during start-up:\n%s" %
                                  (self.prefix, self.proc.returncode, self.log()))
            if "running; SIGINT or SIGTERM stops" in self.log():
                return
            time.sleep(0.05)
        raise TestFailure("iwarpd %s did not start within 20 s:\n%s" % (self.prefix, self.log()))


def ns(nsname, *cmd, check_rc=True):
    r = subprocess.run(["ip", "netns", "exec", nsname] + list(cmd), capture_output=True,
                       text=True, timeout=30)
    if check_rc and r.returncode != 0:
        raise TestFailure("%s: rc %d %s" % (" ".join(cmd), r.returncode, r.stderr))
    return r


def tshark(path, *extra):
    r = subprocess.run(["tshark", "-r", path] + list(extra), capture_output=True, text=True,
                       timeout=180)
    return r.stdout


def skip_unless_capture_possible():
    """Exits SKIP without tshark/dumpcap, root or hugepages for two daemons."""
    if shutil.which("tshark") is None or shutil.which("dumpcap") is None:
        log("SKIP: tshark/dumpcap not installed (tools/setup.sh installs the tshark package)")
        sys.exit(SKIP)
    iwd.skip_unless_possible(2)


class BridgedPair:
    """Daemons A and B on net_tap ports in one private namespace whose kernel
    TAP sides (each given a MAC of its own: net_tap gives the kernel side the
    DPDK port's MAC, which the bridge would take as its own) a Linux bridge
    joins; dumpcap records the bridge (TCP `port`) into self.path. `tag`
    (two letters) names the namespace, the daemons and the interfaces."""

    def __init__(self, args, tag, port, a_ip=A_IP, b_ip=B_IP):
        self.nsname = "iw%s_%d" % (tag, os.getpid())
        self.tmp = tempfile.mkdtemp(prefix="iwarp_%scap_" % tag)
        self.port = port
        self.bridge = tag + "br0"
        self.a = TapDaemon(args, tag + "a", a_ip, tag + "ta", self.nsname)
        self.b = TapDaemon(args, tag + "b", b_ip, tag + "tb", self.nsname)
        self.path = os.path.join(self.tmp, "capture.pcapng")
        self.cap = None
        self.ns_created = False

    def start(self):
        """Returns SKIP when the namespace or the bridge cannot be made, else
        None with both daemons running and dumpcap capturing."""
        r = subprocess.run(["ip", "netns", "add", self.nsname], capture_output=True, text=True)
        if r.returncode != 0:
            log("SKIP: cannot create a network namespace: %s" % r.stderr.strip())
            return SKIP
        self.ns_created = True
        ns(self.nsname, "ip", "link", "set", "lo", "up")
        r = ns(self.nsname, "ip", "link", "add", self.bridge, "type", "bridge", check_rc=False)
        if r.returncode != 0:
            log("SKIP: cannot create a Linux bridge: %s" % r.stderr.strip())
            return SKIP
        self.a.start()
        self.b.start()
        for d, mac in ((self.a, "02:00:00:00:05:a1"), (self.b, "02:00:00:00:05:b1")):
            ns(self.nsname, "ip", "link", "set", d.iface, "down")
            ns(self.nsname, "ip", "link", "set", d.iface, "address", mac)
            ns(self.nsname, "sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % d.iface,
               check_rc=False)
            ns(self.nsname, "ip", "link", "set", d.iface, "master", self.bridge)
            ns(self.nsname, "ip", "link", "set", d.iface, "up")
        ns(self.nsname, "sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % self.bridge,
           check_rc=False)
        ns(self.nsname, "ip", "link", "set", self.bridge, "up")
        caplog = os.path.join(self.tmp, "dumpcap.log")
        logf = open(caplog, "w")
        self.cap = subprocess.Popen(["ip", "netns", "exec", self.nsname, "dumpcap", "-i",
                                     self.bridge, "-f", "tcp port %d" % self.port, "-w",
                                     self.path], stdout=logf, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while "Capturing on" not in open(caplog).read():
            if self.cap.poll() is not None or time.time() > deadline:
                raise TestFailure("dumpcap did not start: " + open(caplog).read())
            time.sleep(0.1)
        time.sleep(0.3)
        return None

    def stop_capture(self, keep=None):
        """Lets the last segments reach the bridge, stops dumpcap, copies the
        capture to `keep` when given."""
        time.sleep(0.5)
        self.cap.send_signal(signal.SIGINT)
        self.cap.wait(timeout=10)
        self.cap = None
        if keep:
            shutil.copy(self.path, keep)

    def stop_daemons(self):
        self.b.stop()
        self.a.stop()

    def cleanup(self):
        if self.cap is not None and self.cap.poll() is None:
            self.cap.kill()
            self.cap.wait()
        self.b.cleanup()
        self.a.cleanup()
        if self.ns_created:
            subprocess.run(["ip", "netns", "del", self.nsname], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


def rpcordma_messages(path):
    """[(version, msg_type, xid)] of every RPC-over-RDMA header tshark decodes."""
    rows = tshark(path, "-Y", "rpcordma", "-T", "fields", "-E", "occurrence=a", "-e",
                  "rpcordma.version", "-e", "rpcordma.msg_type", "-e", "rpcordma.xid")
    msgs = []
    for line in rows.splitlines():
        if not line.strip():
            continue
        vers, types, xids = (f.split(",") for f in line.split("\t"))
        msgs += list(zip(vers, types, xids))
    return msgs


def check_wire(path, decoder, two_pass=False, excused=None):
    """The checks of the iWARP layers common to every capture: every MPA CRC
    Good and none Bad (one per DDP/RDMAP PDU), no malformed frame and no
    error-severity expert item, and iwarp-decode counting the same FPDUs with
    no violation. `two_pass`: the malformed / expert check with tshark -2
    (the dissection Wireshark shows once a file is loaded); `excused`: {frame
    number: reason} of frames the caller has shown to be a known dissector
    limitation (each one printed). Returns the number of DDP/RDMAP PDUs."""
    good, bad, mpa, ddp, _ = iw.tshark_crc_counts(path)
    log("tshark MPA: %d PDUs, %d DDP/RDMAP, %d Good CRC, %d Bad" % (mpa, ddp, good, bad))
    check(bad == 0 and good > 0 and good == ddp,
          "every MPA CRC Good (%d), none Bad (%d), one per DDP/RDMAP PDU (%d)" %
          (good, bad, ddp))
    mal = tshark(path, *(["-2"] if two_pass else []),
                 "-Y", "_ws.malformed || _ws.expert.severity == error")
    excused = excused or {}
    left = []
    for line in mal.splitlines():
        if not line.strip():
            continue
        frame = int(line.split()[0])
        if frame in excused:
            log("NOTE: frame %d malformed in tshark, excused: %s" % (frame, excused[frame]))
        else:
            left.append(line)
    check(not left, "no malformed frame, no error expert item%s:\n%s" %
          (" (tshark -2)" if two_pass else "", "\n".join(left)[:3000]))
    rc, summ, out = iw._decode_summary(decoder, path)
    log("iwarp-decode: %s" % (summ,))
    check(rc == 0 and summ is not None and summ[0] > 0 and summ[1] == 0,
          "iwarp-decode: %s FPDUs, no violation%s" % (summ, "" if rc == 0 else "\n" + out))
    check(summ[0] == ddp, "iwarp-decode counts the FPDUs tshark does (%d, %d)" %
          (summ[0], ddp))
    return ddp


def counters(text):
    out = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("client transport counters"):
            for l in lines[i + 1:]:
                m = re.match(r"^  (\S+)\s+(\d+)$", l)
                if not m:
                    break
                out[m.group(1)] = int(m.group(2))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    p.add_argument("--rpc-perf", required=True)
    p.add_argument("--decode", required=True)
    p.add_argument("--keep", help="copy the capture here")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    skip_unless_capture_possible()
    pair = BridgedPair(args, "rc", PORT)
    a, b, tmp = pair.a, pair.b, pair.tmp
    srv = None
    try:
        if pair.start() == SKIP:
            return SKIP
        srv_out = os.path.join(tmp, "server.out")
        srvf = open(srv_out, "w")
        srv = subprocess.Popen([args.rpc_perf, "--server", "-S", a.socket(), "-p", str(PORT)],
                               stdout=srvf, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while "waiting for clients" not in open(srv_out).read():
            if srv.poll() is not None or time.time() > deadline:
                raise TestFailure("server did not start: " + open(srv_out).read())
            time.sleep(0.05)
        calls = 0
        nomsg_replies = 0
        for extra, size, want in CASES:
            what = " ".join(extra)
            r = subprocess.run([args.rpc_perf, "-S", b.socket(), "--client", A_IP, "-p",
                                str(PORT)] + extra, capture_output=True, text=True, timeout=120)
            sys.stdout.write(r.stdout + r.stderr)
            n = int(extra[extra.index("--count") + 1])
            check(r.returncode == 0 and ("verified: %d calls, errors 0" % n) in r.stdout,
                  "%s: client exit 0, every call verified (rc %d)" % (what, r.returncode))
            c = counters(r.stdout)
            for k, per in want.items():
                check(c.get(k) == per * n, "%s: client %s = %d x %d (%s)" % (what, k, per, n,
                                                                           c.get(k)))
            calls += n
            nomsg_replies += c.get("reply_chunks", 0)
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=15)
        check(srv.returncode == 0, "server exit 0")
        pair.stop_capture(args.keep)
        path = pair.path

        # One RPC-over-RDMA message per call and per reply.
        msgs = rpcordma_messages(path)
        log("tshark rpcordma: %d messages (%d calls made)" % (len(msgs), calls))
        check(len(msgs) == 2 * calls,
              "tshark decodes %d RPC-over-RDMA messages = %d calls + %d replies" %
              (len(msgs), calls, calls))
        check(all(v == "1" for v, _, _ in msgs), "every message is version 1")
        by_type = {}
        for _, t, _ in msgs:
            by_type[t] = by_type.get(t, 0) + 1
        # RDMA_MSG = 0, RDMA_NOMSG = 1 (RFC 8166 4.2.4): replies by Reply chunk are NOMSG.
        check(by_type.get("1", 0) == nomsg_replies and
              by_type.get("0", 0) == 2 * calls - nomsg_replies,
              "msg_types: %d RDMA_NOMSG (the Reply chunk replies), the rest RDMA_MSG: %s" %
              (nomsg_replies, by_type))
        xids = {}
        for _, _, x in msgs:
            xids[x] = xids.get(x, 0) + 1
        check(len(xids) == calls and all(v == 2 for v in xids.values()),
              "each of the %d XIDs appears in exactly one call and one reply" % calls)
        # The ONC RPC messages inside (the test program is no program
        # Wireshark knows: rpc.dissect_unknown_programs). A frame counts once
        # per message type: Wireshark dissects a reply with Write chunk data
        # a second time after putting the chunk back in place.
        rows = tshark(path, "-o", "rpc.dissect_unknown_programs:TRUE", "-Y", "rpc", "-T", "fields",
                      "-E", "occurrence=a", "-e", "rpc.msgtyp", "-e", "rpc.xid")
        rpc_msgs = set()
        for line in rows.splitlines():
            if not line.strip():
                continue
            types, xs = (f.split(",") for f in line.split("\t"))
            rpc_msgs |= set(zip(types, xs))
        nc = sum(1 for t, _ in rpc_msgs if t == "0")
        nr = sum(1 for t, _ in rpc_msgs if t == "1")
        log("tshark ONC RPC under RPC-over-RDMA: %d calls, %d replies" % (nc, nr))
        check(nr == calls, "tshark decodes the %d ONC RPC replies inside (%d)" % (calls, nr))
        # Calls with a Read chunk: Wireshark 4.0's rpcordma reassembles the
        # chunk data back into the call by the chunk's RDMA handle, and
        # iwarp-rpc-perf reuses one registered region (one STag, other
        # offsets) for every call; measured, it leaves some of those calls
        # undecoded (the wire checked by hand: position 44 = the opaque's
        # length word end, the Read Request's source STag/TO/length the
        # chunk's); nfs_capture.py's note 1 gives the mechanism (a segment
        # inside one already seen for the handle is taken for a reply).
        # Every call without a Read chunk must decode.
        read_xids = set(x for x in tshark(path, "-Y", "rpcordma.reads_count > 0", "-T", "fields",
                                          "-e", "rpcordma.xid").split())
        call_xids = set(x for t, x in rpc_msgs if t == "0")
        plain = set(xids) - read_xids
        check(plain <= call_xids, "every call without a Read chunk decodes as ONC RPC (missing %s)"
              % sorted(plain - call_xids))
        log("calls with a Read chunk that tshark decoded as ONC RPC: %d of %d" %
            (len(read_xids & call_xids), len(read_xids)))
        check_wire(path, args.decode)
        pair.stop_daemons()
    except TestFailure as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        if srv is not None and srv.poll() is None:
            srv.kill()
            srv.wait()
        pair.cleanup()
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
