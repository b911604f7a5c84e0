#!/usr/bin/env python3
"""Traffic tests driven by Pktgen-DPDK against iwarpd.

One command starts iwarpd (net_memif server ports, in a private network
namespace) and pktgen (net_memif client, --no-pci --no-huge, its own
--file-prefix) on a shared link, runs a scenario for a bounded time, reads
pktgen's counters (written by its Lua script) and iwarpd's (iwarpctl --json)
and prints a verdict table. Frames are built here with the builders of
tests/dataplane_integration.py and replayed by pktgen from pcap files.

  pktgen_traffic.py SCENARIO --iwarpd PATH --iwarpctl PATH [--pktgen PATH]
                    [--sizes 64,512,1518] [--rates 1,5,25,100] [--step-ms N]
                    [--latency-ms N] [--latency-us N] [--idle-sleep-us N]
                    [--pktgen-timer idle|normal]
                    [--seconds S] [--tcp-extra YAML]
                    [--markers off|on|both] [--payloads 1400,64]
                    [--faults crc,stag,to,marker] [--fault-rate PCT]
                    [--fault-paced N] [--fault-passes N] [--fault-bursts N] [--loop-kib N]
  pktgen_traffic.py fpdu --self-check
  SCENARIO:
    throughput  RFC 2544-style: ICMP echo requests of each frame size replayed
                at a ladder of rates; the verdict is the highest rate at which
                every frame pktgen sent came back as an echo reply. Then
                latency: pktgen's latency mode (timestamped UDP probes, which
                iwarpd's udp_echo returns) idle, at that rate and at half of
                it; min/avg/max and p50/p99 per size, every probe accounted.
    flood       an iWARP transfer between two iwarpd daemons (RDMA Write then
                Read back, SHA-256 checked) runs once alone and once while
                pktgen floods the responder daemon's second port at its full
                rate with SYNs to the iWARP port from rotating sources, stray
                ACKs and RSTs with random sequence numbers, fragments,
                malformed IPv4 and TCP and junk Ethernet.
    fpdu        iwarpd in test mode holds one QP established from
                configuration (service iwarp_fpdu_test: agreed ISNs, STag,
                CRC and Markers, no SYN, no MPA exchange); pktgen replays that
                connection's generator side, a TCP stream of RDMA Write FPDUs
                into the service's region: valid streams (1400 and 64-byte
                Writes) at its full rate, then faulty FPDUs (bad CRC, unknown
                STag, TO outside the region, a Marker pointing wrong) at a low
                rate, each ending a connection pass. The verdict: every valid
                FPDU placed (FPDUs placed per second per busy core reported),
                every faulty one refused with its RFC Terminate code, a fresh
                QP after each, nothing written outside the region; with
                Markers off and on, one daemon each. --self-check builds the
                pcaps and reads them back (tests/iwarp_peer.py, tshark)
                without a daemon.

Pktgen is found at $PKTGEN, else ../shared/pktgen/pktgen beside the repository.
Exit status: 0 pass, 1 fail, 77 skip (no pktgen, not root, no hugepages).
"""

import argparse
import copy
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import dataplane_integration as dpi  # noqa: E402
import iwarp_dataplane as iwd  # noqa: E402
import iwarp_peer as iwp  # noqa: E402

from dataplane_integration import TestFailure, log  # noqa: E402

SKIP = 77
PKT_MAC = "02:00:00:00:03:02"   # pktgen's frames carry this source MAC
LINK_IP = "198.18.3.1"          # iwarpd's address on the pktgen link
PKT_IP = "198.18.3.2"           # pktgen's address on that link
FLOOD_NET = "198.18.4."         # rotating flood sources (off-link, via PKT_IP)


# --- pcap files ---------------------------------------------------------------

def write_pcap(path, frames):
    """Classic libpcap file, Ethernet link type, frames without FCS."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(fr), len(fr)))
            f.write(fr)


def eth(dst_mac, src_mac, ethertype):
    return dpi.mac_bytes(dst_mac) + dpi.mac_bytes(src_mac) + struct.pack("!H", ethertype)


def echo_frames(dst_mac, size, count=64):
    """ICMP echo requests whose frames are `size` bytes with the FCS (pktgen
    and RFC 2544 count it), each with its own sequence number."""
    payload_len = size - 4 - 14 - 20 - 8
    out = []
    for seq in range(count):
        payload = bytes((seq + i) & 0xFF for i in range(payload_len))
        icmp = dpi.icmp_echo(0x2544, seq, payload)
        out.append(eth(dst_mac, PKT_MAC, 0x0800) + dpi.ipv4_packet(PKT_IP, LINK_IP, icmp,
                                                                   flags_frag=0))
    return out


# --- pktgen -------------------------------------------------------------------

def find_pktgen(arg):
    """--pktgen, else $PKTGEN, else ../shared/pktgen/pktgen beside the
    repository; the first one given is the only one tried."""
    p = arg or os.environ.get("PKTGEN") or os.path.join(os.path.dirname(ROOT), "shared",
                                                         "pktgen", "pktgen")
    if os.path.isfile(p) and os.access(p, os.X_OK):
        return os.path.abspath(p)
    log("pktgen not found at %s" % p)
    return None


class Pktgen:
    """One pktgen run: a net_memif client port against `sock`, a Lua script
    with its parameters prepended, results read back from the file it writes.
    It runs under `script` (it needs a terminal) in a session of its own, so
    the whole process group it makes is ended by its id."""

    def __init__(self, binary, workdir, ns, sock, tag):
        self.binary, self.dir, self.ns, self.sock = binary, workdir, ns, sock
        self.prefix = "pkt_%s%d" % (tag, os.getpid())
        self.out = os.path.join(workdir, "pktgen_%s.out" % tag)
        self.screen = os.path.join(workdir, "pktgen_%s.screen" % tag)
        self.lua = os.path.join(workdir, "pktgen_%s.lua" % tag)
        self.proc = None
        self.raised = False

    def start(self, scenario_lua, params, pcap=None, lcores="0,1", main_lcore=1, port_lcore=0,
              cpus=None):
        """`cpus` (an EAL --lcores map, e.g. "0@0,1@0") places pktgen's lcores
        on CPUs instead of one CPU each."""
        with open(os.path.join(HERE, scenario_lua)) as f:
            body = f.read()
        head = "".join("%s = %s\n" % (k, lua_value(v)) for k, v in params.items())
        head += "PKTGEN_DIR = %s\nOUT = %s\nCOMMON = %s\n" % (
            lua_value(os.path.dirname(self.binary)), lua_value(self.out),
            lua_value(os.path.join(HERE, "common.lua")))
        with open(self.lua, "w") as f:
            f.write(head + body)
        cmd = [self.binary] + (["--lcores", cpus] if cpus else ["-l", lcores]) + [
               "--main-lcore", str(main_lcore), "--no-pci",
               "--no-huge", "-m", "2048", "--file-prefix", self.prefix, "--log-level", "7",
               "--vdev", "net_memif0,role=client,socket=%s,socket-abstract=no" % self.sock,
               "--", "-P", "-m", "%d.0" % port_lcore, "-f", self.lua]
        if pcap:
            cmd += ["-s", "0:" + pcap]
        inner = " ".join(shlex.quote(c) for c in ["ip", "netns", "exec", self.ns] + cmd)
        self.screen_f = open(self.screen, "wb")
        self.proc = subprocess.Popen(["script", "-qfec", inner, "/dev/null"],
                                     stdin=subprocess.DEVNULL, stdout=self.screen_f,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def lines(self):
        try:
            with open(self.out) as f:
                return f.read().splitlines()
        except OSError:
            return []

    def raise_script_thread(self):
        """Puts pktgen's main thread, which runs the Lua script, under
        SCHED_FIFO (priority 1) once the script has started (pktgen's set-up,
        which spins, is over then). Sharing its CPU with pktgen's spinning
        timer thread and the daemons' busy-polling workers, it otherwise
        waited seconds at a time for the CPU after a 10 ms sleep (seen on the
        6.18 kernel here: a STOP file noticed 8 to over 60 s late). It sleeps
        between its checks, so it takes the CPU for microseconds at a time;
        the threads that send and receive keep their normal policy."""
        if self.raised or not self.lines():
            return
        pid = pktgen_process(self)
        if pid is None:
            return
        try:
            os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(1))
        except OSError as e:
            log("pktgen's script thread stays under SCHED_OTHER: %s" % e)
        self.raised = True

    def wait_line(self, word, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.raise_script_thread()
            if word in self.lines():
                return True
            if self.proc.poll() is not None:
                return word in self.lines()
            time.sleep(0.1)
        return False

    def screen_text(self):
        try:
            with open(self.screen, "rb") as f:
                raw = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\r", "", raw)

    def version(self):
        for line in self.lines():
            if line.startswith("version "):
                return line[len("version "):]
        return "unknown"

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=5)
        self.screen_f.close()
        shutil.rmtree("/var/run/dpdk/" + self.prefix, ignore_errors=True)


def lua_value(v):
    if isinstance(v, str):
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(lua_value(x) for x in v) + "}"
    return str(v)


def parse_kv(line):
    return {k: (int(v) if re.fullmatch(r"-?\d+", v) else v)
            for k, v in (t.split("=", 1) for t in line.split()[1:] if "=" in t)}


# --- verdict table ------------------------------------------------------------

class Verdict:
    def __init__(self, title):
        self.title = title
        self.rows = []  # (check, value, rule, ok)

    def add(self, check, value, rule, ok):
        self.rows.append((check, str(value), rule, bool(ok)))
        return ok

    def ok(self):
        return all(r[3] for r in self.rows)

    def print(self):
        w0 = max([len(r[0]) for r in self.rows] + [5])
        w1 = max([len(r[1]) for r in self.rows] + [5])
        log("")
        log("== %s ==" % self.title)
        log("%-*s  %-*s  %-4s  %s" % (w0, "check", w1, "value", "", "rule"))
        for c, v, rule, ok in self.rows:
            log("%-*s  %-*s  %-4s  %s" % (w0, c, w1, v, "PASS" if ok else "FAIL", rule))
        log("verdict: %s" % ("PASS" if self.ok() else "FAIL"))


def counters(d):
    """iwarpd totals: stats (L2/L3 counters and drops by reason) and tcp."""
    t = dict(d.totals())
    try:
        tcp = d.ctl_json("tcp")
        t.update({"tcp." + k: v for k, v in tcp.get("total", tcp).items()
                  if isinstance(v, int)})
    except (TestFailure, ValueError, KeyError):
        pass
    return t


def delta(a, b):
    """Counter increments; TCP drops (iwarpctl tcp) are folded into the drop_*
    names of iwarpctl stats."""
    d = {k: b[k] - a.get(k, 0) for k in b if isinstance(b[k], int)}
    for k in list(d):
        if k.startswith("tcp.drop_"):
            d[k[4:]] = d.get(k[4:], 0) + d[k]
    return d


# --- scenario 1: throughput -----------------------------------------------------

# pktgen 23.06.1's latency probes go to UDP port 1028 (LATENCY_DPORT, set
# whenever latency is enabled; no command changes it), so iwarpd's udp_echo
# serves that port here.
LAT_PORT = 1028
LAT_FRAME = 88          # the probe's frame without the FCS: LATENCY_PKT_SIZE (72) + 16,
                        # added when pktgen's latency sampler starts
IDLE_FPS = 1000         # the idle phase's echo requests: one per transmit, burst 1


class EchoDaemon(iwd.MemifDaemon):
    """The throughput daemon with RFC 862 echo on pktgen's probe port."""

    def config_text(self):
        return super().config_text() + "udp_echo:\n  port: %d\n" % LAT_PORT


def pktgen_process(p):
    """The pid of the pktgen process `p` started (under script and ip netns
    exec), or None while it is not there."""
    procs = {}
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
            procs[int(pid)] = (int(st[st.rindex(")") + 2:].split()[1]),
                               st[st.index("(") + 1:st.rindex(")")])
        except (OSError, ValueError, IndexError):
            continue
    mine, grew = {p.proc.pid}, True
    while grew:
        more = {q for q, (pp, _) in procs.items() if pp in mine} - mine
        mine |= more
        grew = bool(more)
    for pid in sorted(mine):
        if procs.get(pid, (0, ""))[1] == "pktgen":
            return pid
    return None


def pktgen_timer_thread(p, timeout=30.0):
    """pktgen's timer thread (a second thread named pktgen that spins on the
    main lcore's CPU: stats once a second, the screen) as (pid, tid); None if
    it did not appear within `timeout` s."""
    deadline = time.time() + timeout
    while time.time() < deadline and p.proc.poll() is None:
        pid = pktgen_process(p)
        if pid is not None:
            try:
                for tid in os.listdir("/proc/%d/task" % pid):
                    with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                        if int(tid) != pid and f.read().strip() == "pktgen":
                            return pid, int(tid)
            except OSError:
                pass
        time.sleep(0.1)
    return None


def run_throughput_pktgen(p, d, sync_prefix, budget, timer_idle):
    """Waits for "done" while answering the script's "sync TAG" lines: at
    "start" pktgen's timer thread is put under SCHED_IDLE (`timer_idle`),
    otherwise iwarpd's counters are read; then SYNC_PREFIX + TAG is created.
    Returns {tag: counters}, or None when pktgen did not finish in `budget`
    seconds."""
    snaps = {}
    deadline = time.time() + budget
    while time.time() < deadline:
        p.raise_script_thread()
        lines = p.lines()
        for l in lines:
            tag = l[5:]
            if not l.startswith("sync ") or tag in snaps:
                continue
            if tag == "start":
                snaps[tag] = None
                if timer_idle:
                    t = pktgen_timer_thread(p)
                    if t is None:
                        raise TestFailure("pktgen's timer thread not found")
                    os.sched_setscheduler(t[1], os.SCHED_IDLE, os.sched_param(0))
                    snaps[tag] = t
            else:
                snaps[tag] = counters(d) if tag == "ladder" else d.totals()
            open(sync_prefix + tag, "w").close()
        if "done" in lines:
            return snaps
        if p.proc.poll() is not None:
            return snaps if "done" in p.lines() else None
        time.sleep(0.02)
    return None


def read_samples(path):
    """pktgen's latency sampler file: a "Latency" line, then one round trip
    (ns) per line; returns them in us, sorted."""
    try:
        with open(path) as f:
            return sorted(int(x) / 1000.0 for x in f.read().split()[1:])
    except (OSError, ValueError):
        return []


def percentile(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def judge_latency(v, size, lat, snaps, samples_prefix, figures):
    """One verdict row per latency phase of one frame size."""
    for ph in lat:
        name = ph["phase"]
        a, b = snaps.get(name + ".a"), snaps.get(name + ".b")
        tag = "%d B: latency %s" % (size, {"idle": "idle", "load": "at the held rate",
                                          "half": "at half the held rate"}[name])
        if a is None or b is None:
            v.add(tag, "no counters", "the harness read iwarpd before and after", False)
            continue
        dd = delta(a, b)
        echoes = dd.get("udp_echoes_out", 0)
        udp_drops = sum(dd.get(k, 0) for k in ("drop_udp_no_service", "drop_udp_bad_checksum",
                                               "drop_udp_truncated"))
        unknown = dd.get("drop_ipv4_unknown_protocol", 0)
        sent = echoes + udp_drops + unknown     # UDP datagrams that reached iwarpd
        back = ph["num"] + ph["skipped"]        # probes pktgen saw with its magic
        secs = ph["ms"] / 1000.0
        ring = dd.get("drop_tx_ring_full", 0)
        other = dd.get("drops", 0) - ring
        mn, av, mx = ph["min_us"], ph["avg_us"], ph["max_us"]
        xs = read_samples(samples_prefix + name)
        f = {"size": size, "phase": name, "rate": ph["rate"],
             "load": dd.get("icmp_echo_requests_in", 0) / secs, "sent": sent, "back": back,
             "timed": ph["num"], "min": mn, "avg": av, "max": mx, "samples": len(xs),
             "p50": percentile(xs, 0.5), "p99": percentile(xs, 0.99), "ring": ring}
        figures.append(f)
        share = 0.99 if name == "idle" else 0.0
        ok = (sent > 0 and echoes == sent and back <= echoes and back > 0 and
              back >= share * sent and ph["num"] > 0 and 0 < mn <= av <= mx and other == 0)
        v.add(tag, "probes sent %d, echoed %d, back %d (%d timed); min/avg/max %.1f/%.1f/%.1f us, "
              "p50/p99 %.1f/%.1f us; load %.0f f/s, tx_ring_full %d, other drops %d" %
              (sent, echoes, back, ph["num"], mn, av, mx, f["p50"], f["p99"], f["load"], ring,
               other),
              "udp_echoes_out == probes in; back <= echoed, > 0%s; 0 < min <= avg <= max; "
              "no drop but tx_ring_full" % (", >= 99% of sent" if share else ""), ok)


def scenario_throughput(args, work, pktgen_bin):
    sizes = [int(s) for s in args.sizes.split(",")]
    rates = [float(r) for r in args.rates.split(",")]
    sock = os.path.join(work, "memif.sock")
    d = EchoDaemon(args, "t", LINK_IP, "server", sock, "  []\n",
                   idle_sleep_us=args.idle_sleep_us)
    v = Verdict("throughput: ICMP echo through iwarpd over net_memif, latency of UDP echo "
                "(pktgen %s)" % os.path.basename(pktgen_bin))
    table = []
    figures = []
    version = None
    try:
        d.start()
        mac = port_mac(d)
        for size in sizes:
            pcap = os.path.join(work, "echo_%d.pcap" % size)
            write_pcap(pcap, echo_frames(mac, size))
            p = Pktgen(pktgen_bin, work, d.ns, sock, "t%d" % size)
            sync_prefix = os.path.join(work, "sync_t%d." % size)
            before = counters(d)
            try:
                # pktgen's rate is percent of 100 Gbit/s for frames of size + 20
                # bytes on the wire (preamble and gap).
                idle_rate = IDLE_FPS * (size + 20) * 8 / 1e11 * 100
                p.start("throughput.lua", {"RATES": rates, "STEP_MS": args.step_ms,
                                           "SETTLE_MS": 2100, "SEARCH": args.search,
                                           "LAT_MS": args.latency_ms, "LAT_US": args.latency_us,
                                           "DRAIN_MS": 100, "IDLE_RATE": "%.6g" % idle_rate,
                                           "DST_MAC": mac, "DST_IP": LINK_IP,
                                           "SRC_IP": PKT_IP + "/24", "SYNC": sync_prefix,
                                           "SAMPLES": os.path.join(work, "lat_t%d." % size)},
                        pcap=pcap)
                budget = 30 + (len(rates) + args.search) * (args.step_ms + 2200) / 1000.0 + \
                    3 * (args.latency_ms + 1000) / 1000.0
                snaps = run_throughput_pktgen(p, d, sync_prefix, budget,
                                              args.pktgen_timer == "idle")
                version = version or p.version()
                if snaps is None:
                    raise TestFailure("pktgen (%d B) did not finish in %.0f s:\n%s" %
                                      (size, budget, p.screen_text()[-3000:]))
            finally:
                p.stop()
            after = snaps.get("ladder") or counters(d)
            dd = delta(before, after)
            steps = [parse_kv(l) for l in p.lines() if l.startswith("step ")]
            tx = sum(s["tx"] for s in steps)
            rx = sum(s["rx"] for s in steps)
            best = None
            for s in steps:
                # The step's wall-clock length as pktgen's script measured it.
                s["fps"] = s["tx"] * 1000.0 / max(1, s["ms"])
                if s["tx"] > 0 and s["rx"] == s["tx"]:
                    if best is None or s["fps"] > best["fps"]:
                        best = s
            for s in steps:
                log("  %4d B  rate %6s%%  sent %9d  answered %9d  offered %10.0f frames/s%s" %
                    (size, s["rate"], s["tx"], s["rx"], s["fps"],
                     "" if s["rx"] == s["tx"] else "  LOSS %d" % (s["tx"] - s["rx"])))
            table.append((size, best, steps))
            held = best["fps"] if best else 0.0
            v.add("%d B: highest rate with every frame answered" % size,
                  "%.0f frames/s, %.1f Mbit/s" % (held, held * size * 8 / 1e6),
                  "the lowest rate step (%s%%) loses nothing" % rates[0],
                  steps and steps[0]["tx"] > 0 and steps[0]["rx"] == steps[0]["tx"])
            reqs = dd.get("icmp_echo_requests_in", 0)
            reps = dd.get("icmp_echo_replies_out", 0)
            ring = dd.get("drop_tx_ring_full", 0)
            other = dd.get("drops", 0) - ring
            v.add("%d B: iwarpd took in every frame pktgen sent" % size,
                  "sent %d, rx %d, echo requests %d, other drops %d" %
                  (tx, dd.get("rx_packets", 0), reqs, other),
                  "rx == echo requests == frames sent; no drop but tx_ring_full",
                  reqs == tx and dd.get("rx_packets", 0) == tx and other == 0)
            v.add("%d B: every reply accounted" % size,
                  "replies %d = tx %d + tx_ring_full %d; pktgen got %d" %
                  (reps, dd.get("tx_packets", 0), ring, rx),
                  "replies == requests == tx + tx_ring_full; pktgen received == tx",
                  reps == reqs and dd.get("tx_packets", 0) + ring == reps and
                  rx == dd.get("tx_packets", 0))
            if args.latency_ms > 0:
                lat = [parse_kv(l) for l in p.lines() if l.startswith("lat ")]
                for ph in lat:
                    for k in ("min_us", "avg_us", "max_us"):
                        ph[k] = float(ph[k])
                if not lat:
                    v.add("%d B: latency" % size, "no phase reported",
                          "pktgen's latency mode ran", False)
                judge_latency(v, size, lat, snaps, os.path.join(work, "lat_t%d." % size),
                              figures)
    finally:
        d.cleanup()
    log("pktgen version: %s" % version)
    log("")
    log("%6s  %16s  %16s  %12s" % ("size", "offered max f/s", "held f/s", "held Mbit/s"))
    for size, best, steps in table:
        held = best["fps"] if best else 0.0
        log("%6d  %16.0f  %16.0f  %12.1f" % (size, max([s["fps"] for s in steps] + [0]), held,
                                             held * size * 8 / 1e6))
    if figures:
        log("")
        log("latency: pktgen's timestamped UDP probes (%d-byte frames, + FCS) to port %d, one "
            "at most every %d us while the port sends, echoed by iwarpd's udp_echo; round "
            "trip pktgen -> memif -> iwarpd -> memif -> pktgen" %
            (LAT_FRAME, LAT_PORT, args.latency_us))
        log("%6s  %-5s  %8s  %12s  %7s  %7s  %7s  %8s  %8s  %8s  %8s  %8s" % (
            "size", "phase", "rate %", "load f/s", "sent", "back", "timed", "min us", "avg us",
            "p50 us", "p99 us", "max us"))
        for f in figures:
            log("%6d  %-5s  %8s  %12.0f  %7d  %7d  %7d  %8.1f  %8.1f  %8.1f  %8.1f  %8.1f" % (
                f["size"], f["phase"], f["rate"], f["load"], f["sent"], f["back"], f["timed"],
                f["min"], f["avg"], f["p50"], f["p99"], f["max"]))
        log("idle: %d echo requests/s of the size with a burst of 1 (pktgen sends probes only "
            "with its port's traffic); load: the highest rate the ladder/search held with "
            "every frame answered (100%%: as fast as net_memif takes them); half: half that "
            "rate; sent: UDP datagrams iwarpd took in; back: probes pktgen got back (timed, "
            "plus those it skips after a gap in the probe index); min/avg/max: pktgen's latency "
            "record; p50/p99: its latency sampler (every timed probe)" % IDLE_FPS)
    v.print()
    return v.ok()


# --- scenario 2: floods while an iWARP transfer runs -----------------------------

def tcp_segment(src, dst, sport, dport, seq, ack, flags, payload=b"", doff=5,
                bad_checksum=False):
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, doff << 4, flags, 65535, 0, 0)
    hdr += b"\0" * max(0, doff * 4 - 20) if doff >= 5 else b""
    seg = hdr + payload
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(seg))
    c = dpi.inet_checksum(pseudo + seg)
    if bad_checksum:
        c ^= 0x5A5A
    return seg[:16] + struct.pack("!H", c) + seg[18:]


SYN, RST, ACK, PSH = 0x02, 0x04, 0x10, 0x08


def ipv4(src, dst, payload, proto=6, version_ihl=0x45, flags_frag=0x4000, total_len=None,
         bad_checksum=False):
    """RFC 791 header (no options) over payload; the fields given are written
    as they are, so the header can be made wrong on purpose."""
    tl = total_len if total_len is not None else 20 + len(payload)
    hdr = struct.pack("!BBHHHBBH4s4s", version_ihl, 0, tl, 0x2544, flags_frag, 64, proto, 0,
                      socket.inet_aton(src), socket.inet_aton(dst))
    c = dpi.inet_checksum(hdr)
    if bad_checksum:
        c ^= 0x5A5A
    return hdr[:10] + struct.pack("!H", c) + hdr[12:] + payload


def flood_frames(dst_mac, dst_ip, port, seed=2544):
    """The flood mix, one pcap cycle: [(expected outcome, frame)]. Sources
    rotate over 198.18.4.1-64 and their ports; sequence numbers are random.
    Outcomes name the drop reason (or answer) each frame must be counted under."""
    rnd = random.Random(seed)
    e = eth(dst_mac, PKT_MAC, 0x0800)
    out = []

    def ip(src, seg, **kw):
        return e + ipv4(src, dst_ip, seg, flags_frag=kw.pop("ff", 0x4000), **kw)
    for i in range(64):
        src = FLOOD_NET + str(1 + i)
        sp = 20000 + rnd.randrange(40000)
        # SYNs at the iWARP port: answered (SYN-ACK, a cookie under pressure).
        for k in range(4):
            out.append(("syn", ip(src, tcp_segment(src, dst_ip, sp + k, port,
                                                   rnd.getrandbits(32), 0, SYN))))
        # A stray ACK with random numbers at the listener: not a valid cookie.
        out.append(("stray_ack",
                    ip(src, tcp_segment(src, dst_ip, sp + 7, port, rnd.getrandbits(32),
                                        rnd.getrandbits(32), ACK | PSH, b"x" * 32))))
        # RSTs with random sequence numbers: no connection for them.
        out.append(("stray_rst", ip(src, tcp_segment(src, dst_ip, sp + 8, port, rnd.getrandbits(32),
                                               0, RST))))
        out.append(("stray_rst", ip(src, tcp_segment(src, dst_ip, sp + 9, port, rnd.getrandbits(32),
                                               rnd.getrandbits(32), RST | ACK))))
    mal = []
    for i in range(16):
        src = FLOOD_NET + str(100 + i)
        seg = tcp_segment(src, dst_ip, 30000 + i, port, rnd.getrandbits(32), 0, SYN)
        mal += [
            ("fragment", ip(src, seg, ff=0x2000)),
            ("fragment", ip(src, seg, ff=0x0020)),
            ("ipv4_bad_checksum", ip(src, seg, bad_checksum=True)),
            ("ipv4_bad_version", ip(src, seg, version_ihl=0x65)),
            ("ipv4_bad_ihl", ip(src, seg, version_ihl=0x44)),
            # Total length beyond the frame (a frame is never under 60 bytes).
            ("ipv4_truncated", ip(src, seg, total_len=20 + len(seg) + 64)),
            ("tcp_bad_checksum", ip(src, tcp_segment(src, dst_ip, 30000 + i, port, 7, 0,
                                                          SYN, bad_checksum=True))),
            ("tcp_malformed", ip(src, tcp_segment(src, dst_ip, 30000 + i, port, 7, 0, SYN,
                                                       doff=3))),
            ("eth_unknown_type",
             eth(dst_mac, PKT_MAC, 0x88B5) + bytes(rnd.getrandbits(8) for _ in range(46))),
            ("eth_group_source",
             eth(dst_mac, "03:00:00:00:00:01", 0x0800) + ipv4(src, dst_ip, seg)),
            ("eth_other_dst",
             eth("02:00:00:00:00:77", PKT_MAC, 0x0800) + ipv4(src, dst_ip, seg)),
        ]
    out += mal
    return out


# What each kind of flood frame must be counted as (iwarpctl stats / tcp).
FLOOD_COUNTERS = {
    "syn": "tcp.syn_cookies_sent",           # SYN-ACK with a cookie (RFC 4987)
    "stray_ack": "drop_tcp_bad_syn_cookie",  # ACK to the listener, no valid cookie
    "stray_rst": "drop_tcp_listen_bad_flags",  # RST to the listener: ignored (RFC 9293 3.10.7.2)
    "fragment": "drop_ipv4_fragment",
    "ipv4_bad_checksum": "drop_ipv4_bad_checksum",
    "ipv4_bad_version": "drop_ipv4_bad_version",
    "ipv4_bad_ihl": "drop_ipv4_bad_ihl",
    "ipv4_truncated": "drop_ipv4_truncated",
    "tcp_bad_checksum": "drop_tcp_bad_checksum",
    "tcp_malformed": "drop_tcp_malformed",
    "eth_unknown_type": "drop_eth_unknown_ethertype",
    "eth_group_source": "drop_eth_bad_source",
    "eth_other_dst": "drop_eth_not_for_us",
}


class FloodResponder(iwd.MemifDaemon):
    """Daemon A: the iWARP responder on m0 (to daemon B) and a second
    net_memif server port m1 towards pktgen, whose flood sources
    (198.18.4.0/24) are reached through pktgen's address."""

    def __init__(self, args, sock, sock2, tcp_extra):
        super().__init__(args, "fa", iwd.A_IP, "server", sock, iwd.responder_services(),
                         iwd.RESPONDER_IWARP, tcp_extra=tcp_extra)
        self.sock2 = sock2

    def config_text(self):
        t = super().config_text()
        t = t.replace('socket-abstract=no"\n',
                      'socket-abstract=no"\n  - name: m1\n    vdev: "net_memif1,role=server,'
                      'socket=%s,socket-abstract=no"\n' % self.sock2, 1)
        t = t.replace("interfaces:\n", "interfaces:\n  - port: m1\n    ipv4: %s/24\n"
                      "    gateway: %s\n" % (LINK_IP, PKT_IP), 1)
        return t


def port_stats(d, name):
    ports = d.ctl_json("ports")
    for pid in ports["port_ids"]:
        p = ports["port_%d" % pid]
        if p.get("name") == name:
            return p
    raise TestFailure("no port %s in iwarpctl ports: %s" % (name, json.dumps(ports)))


def vm_rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def scenario_flood(args, work, pktgen_bin):
    sock2 = os.path.join(work, "memif_pktgen.sock")
    pair = iwd.Pair(args)
    # syn_cookies always: every SYN is answered with a cookie, none takes a
    # backlog slot, so each flood SYN maps to one counted SYN-ACK.
    tcp_extra = "  syn_cookies: %s\n" % args.syn_cookies + args.tcp_extra.replace("\\n", "\n")
    pair.a = FloodResponder(args, pair.sock, sock2, tcp_extra)
    msg, qd = 65536, 4
    count = args.transfer_mib * 1048576 // msg
    clients = [("xfer", "write", msg, count, qd)]
    v = Verdict("flood: iWARP transfer A<-B over net_memif while pktgen floods A's second port")
    p = None
    try:
        pair.start()
        mac1 = port_stats(pair.a, "m1")["mac"]
        frames = flood_frames(mac1, LINK_IP, iwd.PORT_CRC)
        pcap = os.path.join(work, "flood.pcap")
        write_pcap(pcap, [f for _, f in frames])
        per_cycle = {}
        for k, _ in frames:
            per_cycle[k] = per_cycle.get(k, 0) + 1
        cycle = len(frames)

        # Flood-free run first (the same minutes, the same daemons).
        svcs, _ = pair.run_clients(clients, timeout=args.seconds * 10 + 60)
        iwd.check_run(svcs, "xfer", "write", msg, count, qd)
        base = svcs["xfer"]["run_goodput_mbps"]

        stop_file = os.path.join(work, "stop")
        p = Pktgen(pktgen_bin, work, pair.a.ns, sock2, "flood")
        rss0 = vm_rss_kib(pair.a.proc.pid)
        go_file = os.path.join(work, "go")
        p.start("flood.lua", {"STOP": stop_file, "GO": go_file, "SRC_IP": PKT_IP + "/24",
                              "MAX_MS": int(args.seconds * 1000 + 60000),
                              "SETTLE_MS": 2100}, pcap=pcap)
        if not p.wait_line("ready", 30):
            raise TestFailure("pktgen did not get ready:\n%s" % p.screen_text()[-3000:])
        a_before = counters(pair.a)
        # net_memif's ethdev counters start at zero on connect and are gone
        # on disconnect: read while pktgen is attached.
        m1_before = port_stats(pair.a, "m1")
        open(go_file, "w").close()
        if not p.wait_line("flooding", 10):
            raise TestFailure("pktgen did not start flooding:\n%s" % p.screen_text()[-3000:])
        time.sleep(0.5)
        # iwarpctl must answer throughout; the daemon's memory must stay flat.
        probe = {"n": 0, "fail": 0, "worst_ms": 0.0, "rss_max": rss0, "stop": False}

        def prober():
            while not probe["stop"]:
                t0 = time.monotonic()
                r = dpi.run([args.iwarpctl, "--prefix", pair.a.prefix, "stats"],
                            check_rc=False, timeout=10)
                ms = (time.monotonic() - t0) * 1000
                probe["n"] += 1
                if r.returncode != 0:
                    probe["fail"] += 1
                probe["worst_ms"] = max(probe["worst_ms"], ms)
                probe["rss_max"] = max(probe["rss_max"], vm_rss_kib(pair.a.proc.pid))
                time.sleep(0.25)
        th = threading.Thread(target=prober)
        th.start()
        t_flood = time.monotonic()
        try:
            svcs, _ = pair.run_clients(clients, timeout=args.seconds * 10 + 60)
            # Keep the flood up for at least --seconds.
            while time.monotonic() - t_flood < args.seconds:
                time.sleep(0.1)
        finally:
            probe["stop"] = True
            th.join()
            open(stop_file, "w").close()
        if not p.wait_line("done", 15):
            raise TestFailure("pktgen did not stop:\n%s" % p.screen_text()[-3000:])
        version = p.version()
        res = parse_kv([l for l in p.lines() if l.startswith("flood ")][0])
        m1_after = port_stats(pair.a, "m1")
        p.stop()
        p = None
        time.sleep(0.5)
        a_after = counters(pair.a)

        dd = delta(a_before, a_after)
        log("pktgen version: %s" % version)
        log("pktgen: sent %d frames in %d ms (%.0f frames/s), received %d" %
            (res["tx"], res["ms"], res["tx"] * 1000.0 / max(1, res["ms"]), res["rx"]))
        log("iwarpd A counters during the flood (non-zero): " +
            ", ".join("%s %d" % (k, x) for k, x in sorted(dd.items()) if x))

        s = svcs["xfer"]
        ok_x = (s["run"] == "ok" and s["run_messages"] == count and s["verify_failures"] == 0
                and s["run_sha256"] == iwd.expected_sha256("write", msg, count, qd))
        v.add("transfer under flood: every byte verified",
              "%s, %d x %d B, SHA-256 %s, connect error %s" %
              (s["run"], s["run_messages"], msg, "match" if ok_x else "MISMATCH",
               s.get("run_connect_error", "?")),
              "run ok, all messages, no verify failures, SHA-256 as computed here", ok_x)
        share = s["run_goodput_mbps"] / max(1, base)
        v.add("goodput kept", "%d of %d Mbit/s (%.2f)" % (s["run_goodput_mbps"], base, share),
              ">= %.2f of the flood-free run" % args.goodput_share,
              share >= args.goodput_share)
        sent = res["tx"]
        v.add("flood offered", "%d frames in %d ms, %.0f frames/s" %
              (sent, res["ms"], sent * 1000.0 / max(1, res["ms"])),
              "pktgen at full rate sends more than one %d-frame cycle" % cycle, sent > cycle)
        m1_rx = m1_after["ipackets"] - m1_before["ipackets"]
        m1_miss = m1_after["imissed"] - m1_before["imissed"]
        v.add("every frame pktgen sent reached iwarpd", "sent %d; port m1 ipackets %d, imissed %d"
              % (sent, m1_rx, m1_miss), "ipackets == sent, imissed == 0 (pktgen's ARP aside)",
              m1_miss == 0 and 0 <= m1_rx - sent <= 2)
        # pktgen replays the pcap through a pool of prebuilt mbufs, in order
        # but wrapping where the pool does, so the share of each kind is the
        # pcap's up to a few frames; the sum must be exact.
        full, part = divmod(sent, cycle)
        expected = {k: n * full for k, n in per_cycle.items()}
        for k, _ in frames[:part]:
            expected[k] += 1
        # The transfer's own SYN got a cookie too (syn_cookies: always) and
        # completed (syn_cookies_accepted); flood SYNs never complete.
        dd["tcp.syn_cookies_sent"] = (dd.get("tcp.syn_cookies_sent", 0) -
                                      dd.get("tcp.syn_cookies_accepted", 0))
        accounted = 0
        for kind in sorted(expected, key=lambda k: -expected[k]):
            counter = FLOOD_COUNTERS[kind]
            n = dd.get(counter, 0)
            accounted += n
            slack = max(2, expected[kind] // 1000)
            v.add("%s -> %s" % (kind, counter), n,
                  "%d +- %d (%d per %d-frame cycle)" % (expected[kind], slack, per_cycle[kind],
                                                        cycle),
                  abs(n - expected[kind]) <= slack)
        # pktgen's own frames besides the pcap: its ARP reply to iwarpd
        # (which resolves the flood sources' gateway) and its ARP request;
        # pktgen's port counters show one of the two in the counted window.
        arp = dd.get("arp_requests_in", 0) + dd.get("arp_replies_in", 0)
        v.add("every flood frame accounted", "%d of %d sent (ARP frames from pktgen: %d)" %
              (accounted, sent, arp),
              "sent - (sum of the counters above) is 0 .. pktgen's ARP frames",
              0 <= sent - accounted <= arp)
        v.add("no SYN refused", "tcp_syn_backlog_full %d, tcp_table_full %d" %
              (dd.get("drop_tcp_syn_backlog_full", 0), dd.get("drop_tcp_table_full", 0)),
              "SYN cookies answer every SYN (tcp.syn_cookies: %s)" % args.syn_cookies,
              dd.get("drop_tcp_syn_backlog_full", 0) == 0 and dd.get("drop_tcp_table_full", 0) == 0)
        # Answers: a SYN-ACK per SYN, a RST per stray ACK (RFC 9293 3.10.7.2),
        # less those dropped before iwarpd had resolved its gateway (pktgen),
        # plus ARP; pktgen must have received each.
        ans = dd.get("tcp.syn_cookies_sent", 0) + dd.get("tcp.rsts_out", 0)
        lost = (dd.get("drop_arp_pending_overflow", 0) + dd.get("drop_arp_unresolved", 0) +
                dd.get("drop_tx_ring_full", 0))
        arp_out = dd.get("arp_requests_out", 0) + dd.get("arp_replies_out", 0)
        v.add("answers received by pktgen", "SYN-ACKs %d + RSTs %d - dropped before ARP %d "
              "(+ARP %d); pktgen received %d" % (dd.get("tcp.syn_cookies_sent", 0),
                                                  dd.get("tcp.rsts_out", 0), lost, arp_out,
                                                  res["rx"]),
              "received == answers - dropped (+- ARP); drops < 1000",
              abs(res["rx"] - (ans - lost)) <= arp_out and lost < 1000)
        v.add("no connection reset by the flood", "closed_reset %d, rsts_in %d" %
              (dd.get("tcp.closed_reset", 0), dd.get("tcp.rsts_in", 0)),
              "closed_reset == 0", dd.get("tcp.closed_reset", 0) == 0)
        v.add("iwarpctl answered throughout", "%d probes, %d failed, slowest %.0f ms" %
              (probe["n"], probe["fail"], probe["worst_ms"]),
              "every probe answered within 2000 ms",
              probe["n"] > 0 and probe["fail"] == 0 and probe["worst_ms"] < 2000)
        v.add("memory bounded", "VmRSS %d -> max %d KiB" % (rss0, probe["rss_max"]),
              "grows by less than 32 MiB", probe["rss_max"] - rss0 < 32 * 1024)
        log("")
        log("flood offered %.0f frames/s (%d frames in %.1f s); held: %d of them counted "
            "by iwarpd; goodput %d Mbit/s flood-free, %d Mbit/s under flood, kept %.2f" %
            (sent * 1000.0 / max(1, res["ms"]), sent, res["ms"] / 1000.0, accounted, base,
             s["run_goodput_mbps"], share))
    finally:
        if p is not None:
            p.stop()
        pair.cleanup()
    v.print()
    return v.ok()


# --- scenario 3: FPDU streams at the placement engine -----------------------------
#
# iwarpd's iwarp_fpdu_test service (top-level test_mode: true) holds one QP
# established from configuration: no SYN, no MPA exchange, the ISNs, STag and
# MPA settings agreed here. pktgen replays the generator's side of that
# connection: one FPDU per TCP segment, each a tagged RDMA Write (RFC 5040
# 4.3) into the service's region. After loop_bytes of stream the service's
# expected sequence number returns to REMOTE_ISN + 1, so a pcap of exactly
# loop_bytes replayed in a loop is one endless in-order stream. A faulty FPDU
# makes the QP send a Terminate, reset the connection and start a fresh QP
# with the same ISNs: a fault pcap is built of connection passes, each valid
# FPDUs ending with one faulty FPDU.

FPDU_PORT = 4791          # the service's TCP port
FPDU_SPORT = 40000        # the generator's
LOCAL_ISN = 1000          # the daemon's ISS: every generator segment acknowledges LOCAL_ISN + 1
REMOTE_ISN = 2000         # the generator's ISN: its first data byte has seq REMOTE_ISN + 1
FPDU_MAX = 1460           # one FPDU per segment, within a 1500-byte MTU's MSS
LARGE, SMALL = 1400, 64   # payload bytes of the valid streams' RDMA Writes

# The Terminate each fault must draw, as iwarpctl prints last_terminate_sent:
# RFC 5040 4.8 Layer (0 RDMAP, 1 DDP, 2 LLP), Error Type, Error Code.
FAULTS = {
    # MPA errors are LLP errors (RFC 5040 7 / RFC 5044 8): type 0 (MPA), code
    # 2 "received MPA CRC does not match", code 3 "Marker and ULPDU Length
    # fields do not agree on the start of an FPDU".
    "crc": "layer 2 etype 0 code 2",
    "marker": "layer 2 etype 0 code 3",
    # RFC 5041 7.1 checks 1 and 3/4, numbered in 7.2: Error Type 1 (Tagged
    # Buffer Error), code 0 Invalid STag, code 1 Base or bounds violation.
    "stag": "layer 1 etype 1 code 0",
    "to": "layer 1 etype 1 code 1",
}


class FpduStream:
    """One connection pass of the generator's byte stream, from its first
    data byte (seq REMOTE_ISN + 1, MPA stream offset 0, where the first Marker
    is when Markers are on): FPDUs one per segment, each an RDMA Write (tagged,
    last) whose payload is the pattern of the region offset it lands at, so
    the region's byte at offset o is always o mod 251."""

    def __init__(self, markers, stag, to_base, region, region_off=0):
        self.markers = markers
        self.tx = iwp.FpduSender(markers=markers, crc=True)
        self.stag, self.to_base, self.region = stag, to_base, region
        self.off = region_off      # where the next valid Write lands
        self.segments = []         # (stream offset, FPDU bytes, kind)
        self.valid_fpdus = 0
        self.valid_bytes = 0       # payload bytes the valid Writes place
        self.payloads = []         # payload size of every valid Write
        self.fault_kind = None     # crc, stag, to or marker: the pass's last FPDU

    def _ulpdu(self, stag, to, payload):
        return iwp.DdpHeader(True, iwp.OP_WRITE, last=True, stag=stag, to=to).encode() + payload

    def _emit(self, data, kind):
        if len(data) > FPDU_MAX:
            raise TestFailure("FPDU of %d bytes > %d" % (len(data), FPDU_MAX))
        self.segments.append((self.tx.pos - len(data), data, kind))

    def _length(self, sender, n):
        """The bytes an FPDU with an n-byte Write payload takes on the wire
        after `sender`'s position (Markers included), without changing it."""
        t = copy.copy(sender)
        t.crc = False
        return len(t.frame(bytes(iwp.TAGGED_HEADER + n)))

    def _payload_for(self, sender, length):
        """A Write payload size whose FPDU is exactly `length` bytes at
        `sender`'s position, or None (a Marker can make lengths skip 4)."""
        lo, hi = 1, FPDU_MAX
        if self._length(sender, hi) < length or self._length(sender, lo) > length:
            return None
        while lo < hi:  # smallest n with _length(n) >= length (lengths rise with n)
            mid = (lo + hi) // 2
            if self._length(sender, mid) < length:
                lo = mid + 1
            else:
                hi = mid
        return lo if self._length(sender, lo) == length else None

    def write(self, n):
        """A valid Write of n payload bytes at the next region offset
        (wrapping to the region's start where it would not fit)."""
        if self.off + n > self.region:
            self.off = 0
        data = self.tx.frame(self._ulpdu(self.stag, self.to_base + self.off,
                                         iwd.pattern(self.off, n)))
        self._emit(data, "valid")
        self.off += n
        self.valid_fpdus += 1
        self.valid_bytes += n
        self.payloads.append(n)

    def fill_to(self, target, n):
        """Valid Writes of n bytes, the last two resized so that the stream
        ends exactly at `target` bytes (the service's loop_bytes)."""
        while target - self.tx.pos > 2 * FPDU_MAX:
            self.write(n)
        while self.tx.pos < target:
            rem = target - self.tx.pos
            p = self._payload_for(self.tx, rem) if rem <= FPDU_MAX else None
            if p is not None:
                self.write(p)
                continue
            for first in range((rem // 2) & ~3, 64, -4):
                q = self._payload_for(self.tx, first)
                if q is None:
                    continue
                t = copy.copy(self.tx)
                t.crc = False
                t.frame(bytes(iwp.TAGGED_HEADER + q))
                if target - t.pos <= FPDU_MAX and self._payload_for(t, target - t.pos):
                    self.write(q)
                    break
            else:
                raise TestFailure("cannot end an FPDU stream at %d bytes (at %d)" %
                                  (target, self.tx.pos))
        if self.tx.pos != target:
            raise TestFailure("FPDU stream ends at %d, not %d" % (self.tx.pos, target))

    def fault(self, kind, n=LARGE):
        """The pass's faulty FPDU (its last segment): `kind` crc (a valid
        Write whose CRC is wrong), stag (an STag no region has), to_high /
        to_low (a Write crossing the region's end / start), marker (a Marker
        inside the FPDU pointing 8 bytes off; CRC right)."""
        stag, to, kw = self.stag, self.to_base + self.off, {}
        if self.off + n > self.region:
            to = self.to_base
        if kind == "crc":
            kw["corrupt_crc"] = True
        elif kind == "stag":
            stag = self.stag ^ 0x5A5A5A5A
        elif kind == "to_high":
            to = self.to_base + self.region - n // 2
        elif kind == "to_low":
            to = self.to_base - n // 2
        elif kind == "marker":
            kw["marker_ptr_delta"] = 8
        else:
            raise ValueError(kind)
        data = self.tx.frame(self._ulpdu(stag, to, bytes([0xEE]) * n), **kw)
        self._emit(data, kind)
        self.fault_kind = kind.split("_")[0]

    def frames(self, dst_mac):
        out = []
        e = eth(dst_mac, PKT_MAC, 0x0800)
        for off, data, _ in self.segments:
            seg = tcp_segment(PKT_IP, LINK_IP, FPDU_SPORT, FPDU_PORT,
                              (REMOTE_ISN + 1 + off) & 0xFFFFFFFF, LOCAL_ISN + 1, ACK | PSH, data)
            out.append(e + ipv4(PKT_IP, LINK_IP, seg))
        return out


class FpduPcap:
    """One pcap cycle: its connection passes and what they must do. A fault
    pcap is made of blocks of passes with one fault kind each; pktgen sends
    it one block at a time (a step) and the harness reads the daemon's
    counters between steps. A "paced" block is one pass: the next one starts
    only after the harness has seen the daemon's answer. A "burst" block is
    many passes back to back at the fault rate."""

    def __init__(self, name, kind, dst_mac, blocks):
        self.name, self.kind = name, kind
        self.streams = [st for _, b in blocks for st in b]
        self.frames = [f for st in self.streams for f in st.frames(dst_mac)]
        self.passes = len(self.streams)            # connection passes per cycle
        self.valid_fpdus = sum(st.valid_fpdus for st in self.streams)
        self.valid_bytes = sum(st.valid_bytes for st in self.streams)
        self.stream_bytes = sum(st.tx.pos for st in self.streams)
        self.payloads = sorted(set(n for st in self.streams for n in st.payloads))
        # (mode, fault kind, frames, passes, valid bytes) per step
        self.blocks = [(mode, b[0].fault_kind, sum(len(st.segments) for st in b), len(b),
                        sum(st.valid_bytes for st in b)) for mode, b in blocks]

    def describe(self):
        if self.kind == "valid":
            return ("%s: %d frames, %d valid FPDUs (Write payloads %s B) placing %d bytes, "
                    "%d stream bytes" % (self.name, len(self.frames), self.valid_fpdus,
                                         "/".join(str(n) for n in self.payloads),
                                         self.valid_bytes, self.stream_bytes))
        paced = [b for b in self.blocks if b[0] == "paced"]
        burst = [b for b in self.blocks if b[0] == "burst"]
        return ("%s: %d frames; kinds %s; %d paced steps of one pass, %d burst steps of %d "
                "passes; each pass %d valid Writes (%s B) then the faulty FPDU" %
                (self.name, len(self.frames), "/".join(sorted(set(b[1] for b in self.blocks))),
                 len(paced), len(burst), burst[0][3] if burst else 0,
                 self.valid_fpdus // self.passes, "/".join(str(n) for n in self.payloads)))


def fpdu_pcaps(dst_mac, stag, to_base, region, loop_bytes, markers, fault_valid, fault_kinds,
               paced, per_block, bursts):
    """The valid streams (LARGE and SMALL Writes, exactly loop_bytes each) and
    the fault pcap: `paced` rounds of one pass of each kind, then `bursts`
    rounds of a block of `per_block` passes of each kind. Each pass is
    `fault_valid` valid Writes (LARGE and SMALL alternately) then the faulty
    FPDU (to: crossing the region's end and start alternately)."""
    out = []
    for n in (LARGE, SMALL):
        s = FpduStream(markers, stag, to_base, region)
        s.fill_to(loop_bytes, n)
        out.append(FpduPcap("valid_%d" % n, "valid", dst_mac, [("valid", [s])]))
    subs = {"crc": ["crc"], "stag": ["stag"], "marker": ["marker"],
            "to": ["to_high"] + (["to_low"] if to_base >= LARGE else [])}
    kinds = [k for k in fault_kinds if markers or k != "marker"]

    def fault_pass(kind, i):
        s = FpduStream(markers, stag, to_base, region, (i * 4096) % region)
        for j in range(fault_valid):
            s.write(LARGE if j % 2 == 0 else SMALL)
        s.fault(subs[kind][i % len(subs[kind])])
        if s.tx.pos >= loop_bytes:
            raise TestFailure("a fault pass (%d bytes) must be shorter than loop_bytes %d" %
                              (s.tx.pos, loop_bytes))
        return s
    blocks = [("paced", [fault_pass(k, i)]) for i in range(paced) for k in kinds]
    if per_block:
        blocks += [("burst", [fault_pass(k, i) for i in range(per_block)])
                   for _ in range(bursts) for k in kinds]
    if blocks:
        out.append(FpduPcap("faults", "faults", dst_mac, blocks))
    return out


def check_fpdu_pcap(pc, markers, stag, to_base, region):
    """Reads a pcap's frames back with tests/iwarp_peer.py's receiver: IPv4
    and TCP checksums, sequence numbers, every valid FPDU's CRC, STag, TO
    inside the region and payload pattern, and the faulty FPDU faulty in
    exactly its own way. Returns a list of problems (empty: all good)."""
    bad = []
    pos = None
    rx = None
    passes = 0
    faults = []
    for i, fr in enumerate(pc.frames):
        ip, tcp = fr[14:34], fr[34:54]
        if len(fr) > 1514 or dpi.inet_checksum(ip) != 0:
            bad.append("frame %d: length %d or IPv4 checksum" % (i, len(fr)))
        seg = fr[34:]
        pseudo = socket.inet_aton(PKT_IP) + socket.inet_aton(LINK_IP) + \
            struct.pack("!BBH", 0, 6, len(seg))
        if dpi.inet_checksum(pseudo + seg) != 0:
            bad.append("frame %d: TCP checksum" % i)
        seq, ack = struct.unpack("!II", tcp[4:12])
        off = (seq - REMOTE_ISN - 1) & 0xFFFFFFFF
        if off == 0:
            if rx is not None and rx.buf:
                bad.append("frame %d: a pass ends inside an FPDU" % i)
            rx, pos, passes = iwp.FpduReceiver(markers=markers, crc=True), 0, passes + 1
        if off != pos or ack != LOCAL_ISN + 1 or tcp[13] != ACK | PSH:
            bad.append("frame %d: seq offset %d (expected %d), ack %d, flags %#x" %
                       (i, off, pos, ack, tcp[13]))
        payload = fr[54:]
        pos += len(payload)
        got = rx.feed(payload)
        if len(got) != 1:
            bad.append("frame %d: %d FPDUs in the segment" % (i, len(got)))
            continue
        f = got[0]
        h, data = iwp.DdpHeader.decode(f.ulpdu)
        inside = to_base <= h.to and h.to + len(data) <= to_base + region
        ok_write = (h.tagged and h.last and h.opcode == iwp.OP_WRITE and h.stag == stag and
                    inside and f.crc_ok and not f.marker_errors)
        if ok_write and data == iwd.pattern(h.to - to_base, len(data)):
            continue
        kinds = []
        if f.crc_ok is False:
            kinds.append("crc")
        if h.stag != stag:
            kinds.append("stag")
        if not inside:
            kinds.append("to")
        if f.marker_errors:
            kinds.append("marker")
        faults.append((i, kinds))
    if rx is not None and rx.buf:
        bad.append("the last pass ends inside an FPDU")
    if pc.kind == "valid":
        if faults:
            bad.append("faulty FPDUs in a valid stream: %s" % faults[:3])
        if pos != pc.stream_bytes:
            bad.append("stream of %d bytes, expected %d" % (pos, pc.stream_bytes))
        if markers and pos % iwp.MARKER_INTERVAL:
            bad.append("stream of %d bytes: not a multiple of 512 (Markers)" % pos)
    else:
        ends = [sum(len(s.segments) for s in pc.streams[:k + 1]) - 1 for k in range(pc.passes)]
        want = [(i, [s.fault_kind]) for i, s in zip(ends, pc.streams)]
        if faults != want:
            bad.append("faulty FPDUs %s, expected %s (one at each pass end)" %
                       (faults[:4], want[:4]))
    if passes != pc.passes:
        bad.append("%d passes, expected %d" % (passes, pc.passes))
    return bad


def tshark_check_fpdu_pcap(pc, markers, work):
    """tshark's view of one connection pass: the pcap's frames as they are
    (IPv4 and TCP checksums), and the pass's FPDUs behind a synthetic MPA
    Request/Reply (Wireshark decodes MPA only after one) with every CRC
    Good but a crc fault's. Returns a list of problems; None without tshark."""
    if shutil.which("tshark") is None:
        return None
    bad = []
    path = os.path.join(work, pc.name + ".pcap")
    r = subprocess.run(["tshark", "-r", path, "-o", "ip.check_checksum:TRUE", "-o",
                        "tcp.check_checksum:TRUE", "-T", "fields", "-e", "ip.checksum.status",
                        "-e", "tcp.checksum.status"], capture_output=True, text=True, timeout=120)
    rows = [l.split("\t") for l in r.stdout.splitlines() if l.strip()]
    if len(rows) != len(pc.frames) or any(c != ["1", "1"] for c in rows):
        bad.append("tshark checksum status (1 = good) of %d rows for %d frames: %s" %
                   (len(rows), len(pc.frames), sorted(set(tuple(c) for c in rows))))
    s = pc.streams[0]
    req = iwp.StartupFrame.request(rev=1, m=markers, c=True)
    rep = iwp.StartupFrame(reply=True, m=markers, c=True, rev=1)
    chunks = [(True, req.encode()), (False, rep.encode())] + [(True, d) for _, d, _ in s.segments]
    mpa = os.path.join(work, pc.name + "_mpa.pcap")
    iwp.write_pcap(mpa, chunks, a=(PKT_IP, FPDU_SPORT), b=(LINK_IP, FPDU_PORT))
    good, badcrc, n_mpa, _, _ = iwp.tshark_crc_counts(mpa)
    # Wireshark's MPA dissector (one FPDU per segment assumed) counts a
    # Marker position right after an FPDU's CRC as part of that FPDU; RFC
    # 5044 4.3 puts that Marker (FPDUPTR 0) in the following FPDU. It then
    # stops decoding: judge the FPDUs before the first such one.
    prefix = next((i for i, (off, d, _) in enumerate(s.segments)
                   if markers and (off + len(d)) % iwp.MARKER_INTERVAL == 0 and
                   i < len(s.segments) - 1), len(s.segments))
    fault_seen = s.fault_kind == "crc" and prefix == len(s.segments)
    if n_mpa - 2 < prefix or badcrc != (1 if fault_seen else 0) or \
            good < prefix - (1 if fault_seen else 0):
        bad.append("tshark on pass 1 behind an MPA exchange: %d FPDUs decoded of %d (%d before "
                   "the first ending at a Marker position), CRC good %d, bad %d" %
                   (n_mpa - 2, len(s.segments), prefix, good, badcrc))
    return bad


class FpduDaemon(iwd.MemifDaemon):
    """iwarpd with test_mode on and one iwarp_fpdu_test service towards
    pktgen (one worker: the service requires it)."""

    def __init__(self, args, sock, markers, loop_bytes, region):
        svc = ("  - {name: fpdu, type: iwarp_fpdu_test, port: %d, remote: %s, remote_port: %d,"
               " local_isn: %d, remote_isn: %d, loop_bytes: %d, region_bytes: %d, crc: true,"
               " markers: %s}\n" % (FPDU_PORT, PKT_IP, FPDU_SPORT, LOCAL_ISN, REMOTE_ISN,
                                    loop_bytes, region, str(markers).lower()))
        super().__init__(args, "fp%d" % int(markers), LINK_IP, "server", sock, svc)

    def config_text(self):
        return "test_mode: true\n" + super().config_text()

    def service(self):
        s = self.services_by_name().get("fpdu")
        if s is None:
            raise TestFailure("iwarpctl services has no 'fpdu' entry: %s" %
                              json.dumps(self.ctl_json("services")))
        return s


FPDU_FIELDS = ("test_stag", "test_to", "test_region_bytes", "test_qps_started", "fpdus_in",
               "bytes_placed", "crc_errors", "marker_errors", "terminates_sent",
               "last_terminate_sent", "guard_violations")


def thread_ticks(pid):
    """{tid: (name, utime + stime)} of every thread of `pid`."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                st = f.read()
        except OSError:
            continue
        name = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        out[int(tid)] = (name, int(fields[11]) + int(fields[12]))
    return out


def daemon_cores(t0, t1, wall_s):
    """Cores iwarpd kept busy between two thread_ticks(): its busy-polling
    worker counted in full (1 core whatever it moved) plus the measured CPU
    of every other thread (main lcore, control, telemetry). Returns (cores,
    worker thread's measured cores, the others' cores, worker name)."""
    hz = os.sysconf("SC_CLK_TCK")
    d = {tid: (t1[tid][0], t1[tid][1] - t0.get(tid, (None, 0))[1]) for tid in t1}
    workers = [tid for tid, (n, _) in d.items() if "worker" in n]
    if not workers:  # the thread that ran the most is the poller
        workers = [max(d, key=lambda k: d[k][1])]
    w = workers[0]
    rest = sum(x for tid, (_, x) in d.items() if tid != w) / hz / wall_s
    return 1.0 + rest, d[w][1] / hz / wall_s, rest, d[w][0]


def fpdu_sample(d):
    """The fpdu service entry, iwarpd's totals (stats and tcp), port m0 and
    the daemon's thread CPU ticks, with the time they were read."""
    t = time.monotonic()
    return {"t": t, "svc": d.service(), "stats": counters(d), "port": port_stats(d, "m0"),
            "threads": thread_ticks(d.proc.pid)}


class Prober:
    """Asks iwarpctl for the services every quarter second while it runs:
    every answer must come within 2 s; keeps (time, fpdus_in) of each."""

    def __init__(self, args, d):
        self.args, self.d = args, d
        self.samples, self.fail, self.worst_ms, self.stop = [], 0, 0.0, False
        self.th = threading.Thread(target=self.loop)

    def loop(self):
        while not self.stop:
            t0 = time.monotonic()
            try:
                r = dpi.run([self.args.iwarpctl, "--prefix", self.d.prefix, "--json", "services"],
                            check_rc=False, timeout=10)
                s = json.loads(r.stdout)["/iwarpd/services"]
                f = [s["svc_%d" % i] for i in range(len(s["names"]))
                     if s["svc_%d" % i]["name"] == "fpdu"][0]
                self.samples.append((t0, f["fpdus_in"]))
            except (ValueError, KeyError, IndexError, subprocess.TimeoutExpired):
                self.fail += 1
            self.worst_ms = max(self.worst_ms, (time.monotonic() - t0) * 1000)
            time.sleep(0.25)

    def __enter__(self):
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.th.join()
        return False


def fpdu_run(args, work, pktgen_bin, d, sock, pc, rate, seconds, tag, burst=0):
    """pktgen replays `pc` at `rate` percent: a valid stream for about
    `seconds` (whole pcap cycles), a fault pcap once, block by block, the
    daemon sampled after each block. Returns the samples, the probe results
    and what pktgen sent. `tag` names the run's files."""
    path = os.path.join(work, tag + ".pcap")
    go, stop = os.path.join(work, tag + ".go"), os.path.join(work, tag + ".stop")
    steps = [b[2] for b in pc.blocks] if pc.kind != "valid" else []
    p = Pktgen(pktgen_bin, work, d.ns, sock, tag)
    res = {"steps": []}
    try:
        # All of pktgen on CPU 0 (its main lcore starts a second busy thread):
        # iwarpd's busy-polling worker has CPU 1 to itself.
        p.start("fpdu.lua", {"GO": go, "STOP": stop, "SRC_IP": PKT_IP + "/24", "RATE": rate,
                             "BURST": burst, "CYCLE": len(pc.frames), "STEPS": steps,
                             "CHUNK_MS": 400, "MAX_MS": int(seconds * 1000 + 60000),
                             "SETTLE_MS": 300},
                pcap=path, cpus="0@0,1@0")
        if not p.wait_line("ready", 40):
            raise TestFailure("pktgen did not get ready (%s):\n%s" %
                              (pc.name, p.screen_text()[-3000:]))
        res["version"] = p.version()
        res["before"] = fpdu_sample(d)
        with Prober(args, d) as probe:
            t_send = time.monotonic()
            if not steps:
                open(go, "w").close()
                if not p.wait_line("sending", 10):
                    raise TestFailure("pktgen did not start sending (%s):\n%s" %
                                      (pc.name, p.screen_text()[-3000:]))
                t_send = time.monotonic()
                time.sleep(min(0.5, seconds / 4))
                res["s0"] = fpdu_sample(d)
                while time.monotonic() - t_send < seconds:
                    time.sleep(0.05)
                res["s1"] = fpdu_sample(d)
            else:
                for n in range(1, len(steps) + 1):
                    open(go + str(n), "w").close()
                    deadline = time.monotonic() + 30
                    while not any(l.startswith("step n=%d " % n) for l in p.lines()):
                        if time.monotonic() > deadline or p.proc.poll() is not None:
                            raise TestFailure("pktgen did not send step %d (%s):\n%s" %
                                              (n, pc.name, p.screen_text()[-3000:]))
                        time.sleep(0.02)
                    time.sleep(0.1)  # the daemon takes in the block's last frames
                    res["steps"].append((pc.blocks[(n - 1) % len(pc.blocks)], fpdu_sample(d)))
            open(stop, "w").close()
            if not p.wait_line("done", 60):
                raise TestFailure("pktgen did not finish (%s):\n%s" %
                                  (pc.name, p.screen_text()[-3000:]))
            res["send_s"] = time.monotonic() - t_send
            # What is still in the ring reaches the daemon; memif counters
            # are read while pktgen is attached (they are gone on disconnect).
            time.sleep(0.3)
            res["after"] = fpdu_sample(d)
            open(stop + ".quit", "w").close()
            try:
                p.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass  # p.stop() ends it
        res["probes"], res["fail"], res["worst_ms"] = probe.samples, probe.fail, probe.worst_ms
        res["sent"] = parse_kv([l for l in p.lines() if l.startswith("fpdu ")][0])
        steps_kv = [parse_kv(l) for l in p.lines() if l.startswith("step ")]
        burst = [(k["frames"], k["ms"]) for k, (blk, _) in zip(steps_kv, res["steps"])
                 if blk[0] == "burst"]
        if burst and sum(ms for _, ms in burst) > 0:
            res["burst_fps"] = sum(f for f, _ in burst) * 1000.0 / sum(ms for _, ms in burst)
    finally:
        p.stop()
    return res


def judge_fpdu_common(v, tag, pc, res):
    """Rules of every run: whole cycles sent and taken in, the guard bytes,
    iwarpctl answering. Returns the number of pcap cycles sent."""
    b, a = res["before"], res["after"]
    frames = res["sent"]["frames"]
    cycles, part = divmod(frames, len(pc.frames))
    ipk = a["port"]["ipackets"] - b["port"]["ipackets"]
    miss = a["port"].get("imissed", 0) - b["port"].get("imissed", 0)
    v.add("%s: pktgen's frames all taken in" % tag,
          "%d frames (%d pcap cycles of %d%s), port m0 ipackets %d, imissed %d" %
          (frames, cycles, len(pc.frames), " + %d" % part if part else "", ipk, miss),
          "whole passes; ipackets == sent (+ pktgen's ARP, <= 2); imissed == 0",
          frames > 0 and 0 <= ipk - frames <= 2 and miss == 0)
    v.add("%s: nothing written outside the region" % tag, a["svc"].get("guard_violations"),
          "guard_violations == 0", a["svc"].get("guard_violations") == 0)
    v.add("%s: iwarpctl answered throughout" % tag,
          "%d probes, %d failed, slowest %.0f ms" % (len(res["probes"]), res["fail"],
                                                     res["worst_ms"]),
          "every probe (every 0.25 s) answered within 2000 ms",
          len(res["probes"]) > 0 and res["fail"] == 0 and res["worst_ms"] < 2000)
    return cycles, part


def judge_fpdu_valid(v, tag, pc, res, markers, figures):
    b, a, s0, s1 = res["before"], res["after"], res["s0"], res["s1"]

    def dsvc(k):
        return a["svc"].get(k, 0) - b["svc"].get(k, 0)
    cycles, part = judge_fpdu_common(v, tag, pc, res)
    want_f, want_b = cycles * pc.valid_fpdus, cycles * pc.valid_bytes
    v.add("%s: every FPDU placed" % tag,
          "fpdus_in +%d of %d sent, bytes_placed +%d of %d" %
          (dsvc("fpdus_in"), want_f, dsvc("bytes_placed"), want_b),
          "exactly what the whole passes sent carry",
          part == 0 and dsvc("fpdus_in") == want_f and dsvc("bytes_placed") == want_b)
    v.add("%s: no error, no Terminate, no restart" % tag,
          "crc_errors +%d, marker_errors +%d, terminates_sent +%d, test_qps_started +%d" %
          (dsvc("crc_errors"), dsvc("marker_errors"), dsvc("terminates_sent"),
           dsvc("test_qps_started")), "all 0",
          not any(dsvc(k) for k in ("crc_errors", "marker_errors", "terminates_sent",
                                    "test_qps_started")))
    wall = s1["t"] - s0["t"]
    fps = (s1["svc"]["fpdus_in"] - s0["svc"]["fpdus_in"]) / wall
    bps = (s1["svc"]["bytes_placed"] - s0["svc"]["bytes_placed"]) / wall
    offered = (s1["port"]["ipackets"] - s0["port"]["ipackets"]) / wall
    cores, wcores, rest, wname = daemon_cores(s0["threads"], s1["threads"], wall)
    loop, per_busy = None, None
    if "poll_us" in s1["stats"] and "poll_us" in s0["stats"]:
        pu = s1["stats"]["poll_us"] - s0["stats"]["poll_us"]
        bu = s1["stats"]["busy_us"] - s0["stats"]["busy_us"]
        loop = 100.0 * bu / pu if pu > 0 else None
        # FPDUs per second of worker time spent in polls that found work:
        # what one core would place if the generator kept it busy.
        per_busy = (s1["svc"]["fpdus_in"] - s0["svc"]["fpdus_in"]) * 1e6 / bu if bu > 0 else None
    figures.append({"markers": markers, "name": pc.name, "offered": offered, "fps": fps,
                    "bps": bps, "cores": cores, "worker": wcores, "rest": rest, "loop": loop,
                    "per_busy": per_busy, "wname": wname,
                    "pktgen": res["sent"]["frames"] / res["send_s"]})
    # Probes taken while the measured window ran (the last chunk may end
    # before the stop is seen).
    rises = [y - x for (t, x), (_, y) in zip(res["probes"], res["probes"][1:])
             if s0["t"] - 0.3 <= t and t + 0.3 <= s1["t"]]
    v.add("%s: placement at full rate" % tag,
          "%.0f FPDU/s placed (%.1f MB/s), port took in %.0f frames/s; fpdus_in rose in %d of "
          "%d probe intervals" % (fps, bps / 1e6, offered, sum(1 for x in rises if x > 0),
                                  len(rises)),
          "> 0, rising between every two probes while pktgen sends",
          fps > 0 and all(x > 0 for x in rises))


def judge_fpdu_faults(v, tag, pc, res, args):
    judge_fpdu_common(v, tag, pc, res)
    prev = res["before"]
    per = {}
    for (mode, kind, _, passes, valid_bytes), s in res["steps"]:
        e = per.setdefault((mode, kind), {"steps": 0, "passes": 0, "valid": 0, "term": 0,
                                          "placed": 0, "crc": 0, "marker": 0, "codes": set()})

        def d(k):
            return s["svc"].get(k, 0) - prev["svc"].get(k, 0)
        e["steps"] += 1
        e["passes"] += passes
        e["valid"] += valid_bytes
        e["term"] += d("terminates_sent")
        e["placed"] += d("bytes_placed")
        e["crc"] += d("crc_errors")
        e["marker"] += d("marker_errors")
        e["codes"].add(s["svc"].get("last_terminate_sent"))
        prev = s
    for (mode, kind), e in sorted(per.items()):
        t = "%s, %s, %s" % (tag, kind, "paced" if mode == "paced" else
                            "%d back to back" % (e["passes"] // e["steps"]))
        v.add("%s: one Terminate per faulty FPDU" % t,
              "terminates_sent +%d, %d passes sent in %d steps" % (e["term"], e["passes"],
                                                                    e["steps"]),
              "== passes", e["term"] == e["passes"] and e["passes"] > 0)
        v.add("%s: the RFC's error code" % t, " / ".join(sorted(str(c) for c in e["codes"])),
              "last_terminate_sent after each step == '%s'" % FAULTS[kind],
              e["codes"] == {FAULTS[kind]})
        per_pass = e["valid"] // max(1, e["passes"])
        v.add("%s: only the valid FPDUs placed" % t,
              "bytes_placed +%d of %d valid bytes sent (%d passes x %d)" %
              (e["placed"], e["valid"], e["passes"], per_pass),
              "== the valid Writes' payload (+-1 pass)",
              abs(e["placed"] - e["valid"]) <= per_pass)
        counter = {"crc": "crc", "marker": "marker"}.get(kind)
        v.add("%s: MPA error counters" % t,
              "crc_errors +%d, marker_errors +%d" % (e["crc"], e["marker"]),
              ("%s_errors == passes, the other 0" % counter) if counter else "both 0",
              all((n == e["passes"] if k == counter else n == 0)
                  for k, n in (("crc", e["crc"]), ("marker", e["marker"]))))
    a, b = res["after"], res["before"]
    v.add("%s: a fresh QP after each Terminate" % tag,
          "test_qps_started %d, terminates_sent %d (totals)" %
          (a["svc"].get("test_qps_started", 0), a["svc"].get("terminates_sent", 0)),
          "test_qps_started == terminates_sent + 1",
          a["svc"].get("test_qps_started", 0) == a["svc"].get("terminates_sent", 0) + 1)
    rst = a["stats"].get("tcp.rsts_out", 0) - b["stats"].get("tcp.rsts_out", 0)
    term = a["svc"].get("terminates_sent", 0) - b["svc"].get("terminates_sent", 0)
    dd = delta(b["stats"], a["stats"])
    log("  %s: %d steps, %d frames, burst steps at %.0f frames/s (%s%% of 100 Gbit/s, pktgen "
        "burst %s); terminates_sent +%d, RSTs out +%d, fpdus_in +%d; drops: %s" %
        (tag, len(res["steps"]), res["sent"]["frames"], res.get("burst_fps", 0),
         args.fault_rate, args.fault_burst or 64, term, rst,
         a["svc"].get("fpdus_in", 0) - b["svc"].get("fpdus_in", 0),
         ", ".join("%s %d" % (k, x) for k, x in sorted(dd.items())
                   if x and k.startswith("drop_")) or "none"))


def scenario_fpdu(args, work, pktgen_bin):
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.markers]
    loop_bytes, region = args.loop_kib * 1024, args.region_kib * 1024
    kinds = [k for k in args.faults.split(",") if k]
    for k in kinds:
        if k not in FAULTS:
            raise TestFailure("unknown fault kind %s (%s)" % (k, ", ".join(FAULTS)))
    v = Verdict("fpdu: FPDU streams from pktgen at iwarpd's placement engine "
                "(iwarp_fpdu_test over net_memif)")
    figures = []
    version = None
    for markers in modes:
        tagm = "markers %s" % ("on" if markers else "off")
        sock = os.path.join(work, "memif_fpdu%d.sock" % markers)
        d = FpduDaemon(args, sock, markers, loop_bytes, region)
        try:
            d.start()
            svc = d.service()
            missing = [k for k in FPDU_FIELDS if k not in svc]
            if missing:
                raise TestFailure("the fpdu service entry lacks %s: %s" %
                                  (missing, json.dumps(svc)))
            stag, to_base = svc["test_stag"], svc["test_to"]
            v.add("%s: QP established from configuration" % tagm,
                  "test_stag %#x, test_to %#x, test_region_bytes %d, test_qps_started %d" %
                  (stag, to_base, svc["test_region_bytes"], svc["test_qps_started"]),
                  "region as configured (%d); one QP started" % region,
                  svc["test_region_bytes"] == region and svc["test_qps_started"] == 1)
            pcs = fpdu_pcaps(port_mac(d), stag, to_base, region, loop_bytes, markers,
                             args.fault_valid, kinds, args.fault_paced, args.fault_passes,
                             args.fault_bursts)
            for pc in pcs:
                write_pcap(os.path.join(work, "%s_m%d.pcap" % (pc.name, markers)), pc.frames)
                problems = check_fpdu_pcap(pc, markers, stag, to_base, region)
                if problems:
                    raise TestFailure("pcap %s does not read back: %s" % (pc.name, problems[:5]))
                log("  %s: %s" % (tagm, pc.describe()))
            for pc in pcs:
                tag = "%s, %s" % (tagm, pc.name)
                if pc.kind == "valid" and \
                        pc.name[len("valid_"):] not in args.payloads.split(","):
                    continue
                try:
                    if pc.kind == "valid":
                        res = fpdu_run(args, work, pktgen_bin, d, sock, pc, 100, args.seconds,
                                       "%s_m%d" % (pc.name, markers))
                        judge_fpdu_valid(v, tag, pc, res, markers, figures)
                    else:
                        res = fpdu_run(args, work, pktgen_bin, d, sock, pc, args.fault_rate, 0,
                                       "%s_m%d" % (pc.name, markers), args.fault_burst)
                        judge_fpdu_faults(v, tag, pc, res, args)
                    version = version or res.get("version")
                except TestFailure as e:
                    # The other runs are still judged (the next on the same
                    # daemon, if it is alive).
                    v.add("%s: run completed" % tag, str(e).splitlines()[0][:200],
                          "pktgen and iwarpd finished the run", False)
                    if d.proc.poll() is not None:
                        raise
            d.stop()
        except TestFailure as e:
            v.add("%s: daemon" % tagm, str(e).splitlines()[0][:200],
                  "iwarpd starts, answers and stops cleanly", False)
            log(str(e))
        finally:
            d.cleanup()
    log("pktgen version: %s" % version)
    if figures:
        log("")
        log("%-8s  %-10s  %12s  %12s  %12s  %6s  %13s  %10s  %s" % (
            "markers", "stream", "offered f/s", "placed f/s", "placed MB/s", "cores",
            "FPDU/s / core", "loop busy", "FPDU per busy s"))
        for f in figures:
            log("%-8s  %-10s  %12.0f  %12.0f  %12.1f  %6.2f  %13.0f  %10s  %s" % (
                "on" if f["markers"] else "off", f["name"], f["offered"], f["fps"],
                f["bps"] / 1e6, f["cores"], f["fps"] / f["cores"],
                "%.0f%%" % f["loop"] if f["loop"] is not None else "?",
                "%.0f" % f["per_busy"] if f["per_busy"] is not None else "?"))
        log("offered: frames/s iwarpd's port took in over the measured window (pktgen asked "
            "for 100%% of 100 Gbit/s; net_memif back-pressures it, so this is what the daemon "
            "accepted); cores: iwarpd's busy-polling worker counted as 1 (its thread %s "
            "measured %s) plus the measured CPU of its other threads (%s); pktgen, the "
            "generator, is not counted; loop busy: the worker's poll-loop time in polls that "
            "found work (below 100%%: pktgen, not iwarpd, set the rate); FPDU per busy s: "
            "FPDUs placed per second of that time, what one fully busy worker core would "
            "place" %
            (figures[0]["wname"], "/".join("%.2f" % f["worker"] for f in figures),
             "/".join("%.2f" % f["rest"] for f in figures)))
    v.print()
    return v.ok()


def fpdu_self_check(args, work):
    """--self-check: builds every pcap of the fpdu scenario against a made-up
    region (no daemon, no pktgen) and reads each back with iwarp_peer's
    receiver and, when installed, tshark."""
    ok = True
    loop_bytes, region = args.loop_kib * 1024, args.region_kib * 1024
    kinds = [k for k in args.faults.split(",") if k]
    for markers in (False, True):
        for stag, to_base in ((0x1234500, 0x7F0000000000), (0x100, 0)):
            for pc in fpdu_pcaps("02:00:00:00:03:01", stag, to_base, region, loop_bytes,
                                 markers, args.fault_valid, kinds, args.fault_paced,
                                 args.fault_passes, args.fault_bursts):
                write_pcap(os.path.join(work, pc.name + ".pcap"), pc.frames)
                problems = check_fpdu_pcap(pc, markers, stag, to_base, region)
                t = tshark_check_fpdu_pcap(pc, markers, work) if to_base else []
                if t:
                    problems += t
                ok = ok and not problems
                log("%s markers %s, stag %#x to %#x: %s %s" % (
                    "FAIL" if problems else "ok", "on" if markers else "off", stag, to_base,
                    pc.describe(), problems[:5] if problems else
                    ("(tshark: no)" if t is None else "")))
    return ok


def port_mac(d):
    ports = d.ctl_json("ports")
    return ports["port_%d" % ports["port_ids"][0]]["mac"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario", choices=["throughput", "flood", "fpdu"])
    ap.add_argument("--iwarpd")
    ap.add_argument("--iwarpctl")
    ap.add_argument("--pktgen")
    ap.add_argument("--sizes", default="64,128,256,512,1024,1280,1518")
    ap.add_argument("--rates", default="0.05,0.1,0.2,0.5,1,2,5,100")
    ap.add_argument("--step-ms", type=int, default=1000)
    ap.add_argument("--search", type=int, default=0,
                    help="throughput: binary-search trials after the ladder")
    ap.add_argument("--latency-ms", type=int, default=1000,
                    help="throughput: length of each latency phase (idle, held rate, half "
                         "of it); 0 measures no latency")
    ap.add_argument("--latency-us", type=int, default=900,
                    help="throughput: pktgen's latency probe interval (us)")
    ap.add_argument("--pktgen-timer", choices=["idle", "normal"], default="idle",
                    help="throughput: scheduling policy of pktgen's timer thread, which "
                         "spins on the CPU of iwarpd's worker (idle: SCHED_IDLE, it runs "
                         "when the worker sleeps)")
    ap.add_argument("--idle-sleep-us", type=int, default=50,
                    help="throughput: iwarpd's workers.idle_sleep_us")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--tcp-extra", default="")
    ap.add_argument("--goodput-share", type=float, default=0.25,
                    help="flood: share of the flood-free goodput the transfer must keep")
    ap.add_argument("--syn-cookies", default="always",
                    help="flood: the responder's tcp.syn_cookies (off shows the rule failing)")
    ap.add_argument("--transfer-mib", type=int, default=256)
    ap.add_argument("--markers", choices=["off", "on", "both"], default="both",
                    help="fpdu: MPA Markers off, on, or one daemon each")
    ap.add_argument("--payloads", default="%d,%d" % (LARGE, SMALL),
                    help="fpdu: the valid streams to replay at 100%% (Write payload bytes)")
    ap.add_argument("--faults", default="crc,stag,to,marker",
                    help="fpdu: fault kinds to replay (marker only with Markers on)")
    ap.add_argument("--fault-rate", type=float, default=0.02,
                    help="fpdu: pktgen rate (%% of 100 Gbit/s) of the fault pcap")
    ap.add_argument("--fault-burst", type=int, default=1,
                    help="fpdu: pktgen's transmit burst for the fault pcap (frames back to "
                         "back; pktgen's default is 64)")
    ap.add_argument("--fault-paced", type=int, default=4,
                    help="fpdu: paced steps per fault kind (one pass, then the daemon's "
                         "answer is read before the next)")
    ap.add_argument("--fault-passes", type=int, default=32,
                    help="fpdu: passes per burst step (one fault kind, back to back at "
                         "--fault-rate; 0: no burst steps)")
    ap.add_argument("--fault-bursts", type=int, default=2,
                    help="fpdu: burst steps per fault kind")
    ap.add_argument("--fault-valid", type=int, default=16,
                    help="fpdu: valid Writes before the faulty FPDU of each pass")
    ap.add_argument("--loop-kib", type=int, default=256,
                    help="fpdu: the service's loop_bytes (KiB): one valid pcap cycle")
    ap.add_argument("--region-kib", type=int, default=1024,
                    help="fpdu: the service's region_bytes (KiB)")
    ap.add_argument("--self-check", action="store_true",
                    help="fpdu: build and read back every pcap (iwarp_peer, tshark); no "
                         "daemon, no pktgen")
    args = ap.parse_args()
    if args.scenario == "fpdu" and args.self_check:
        work = tempfile.mkdtemp(prefix="iwarpd_pktgen_")
        try:
            return 0 if fpdu_self_check(args, work) else 1
        except TestFailure as e:
            log("FAIL: %s" % e)
            return 1
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if not args.iwarpd or not args.iwarpctl:
        ap.error("--iwarpd and --iwarpctl are required")
    pktgen_bin = find_pktgen(args.pktgen)
    if pktgen_bin is None:
        log("SKIP: pktgen not found ($PKTGEN or ../shared/pktgen/pktgen beside the repository; "
            "README 'Traffic tests with pktgen' says how to build Pktgen-DPDK 23.06.1)")
        return SKIP
    dpi.skip_unless_possible()
    for tool in ("script", "timeout"):
        if shutil.which(tool) is None:
            log("SKIP: '%s' not installed (pktgen needs a terminal)" % tool)
            return SKIP
    need = (2 if args.scenario == "flood" else 1) * iwd.MEMORY_MB
    if iwd.free_hugepage_mib() < need:
        log("SKIP: iwarpd on net_memif needs %d MiB of free hugepages (%d free; "
            "tools/setup.sh --hugepages N)" % (need, iwd.free_hugepage_mib()))
        return SKIP
    log("pktgen: %s" % pktgen_bin)
    work = tempfile.mkdtemp(prefix="iwarpd_pktgen_")
    try:
        fn = {"throughput": scenario_throughput, "flood": scenario_flood,
              "fpdu": scenario_fpdu}[args.scenario]
        ok = fn(args, work, pktgen_bin)
    except TestFailure as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
