#!/usr/bin/env python3
"""libiwarp applications on two iwarpd daemons: iwarp-perf server on daemon A,
iwarp-perf client on daemon B connecting to A's address, so every work
request goes SQ ring -> B's worker (WireEngine, engine::Qp, tcp_lite) ->
net_memif -> A's worker -> placement into the server's registered memory,
and back. Each iwarp-perf verifies every byte (-V) and exits non-zero on a
failed completion or a wrong byte; the test also checks that the client's
table names the iWARP transport and the negotiated MPA framing. Then the
same with the daemons' MPA defaults changed, with zero-copy transmit. Every
daemon runs the default delayed ACK (tcp.delayed_ack_us 200), where the
ping-pongs carry their ACKs on the replies when the round trip is well under
the timer (checked then; a sanitizer build's round trip can exceed it, and
the timer then rightly fires first); a pair with tcp.delayed_ack_us 20000
must always carry them on the replies, and a last pair runs
tcp.delayed_ack_us 0 (an ACK at the end of every receive burst).

The daemons run in network namespaces the test creates (198.18.1.1 and
198.18.1.2), joined by a net_memif pair (hugepages needed; see
iwarp_dataplane.py, whose daemon harness this reuses).

  appif_wire_dataplane.py --iwarpd PATH --iwarpctl PATH --perf PATH

Exit status: 0 pass, 1 fail, 77 skip (not root, no hugepages, no netns).
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
import iwarp_dataplane as iwd  # noqa: E402  (memif daemon harness)

from dataplane_integration import TestFailure, check, log  # noqa: E402

PORT = 18515


class AppDaemon(iwd.MemifDaemon):
    """A memif daemon with the application interface on and no services;
    `app_extra` adds lines to its app_interface: section."""

    app_extra = ""

    def config_text(self):
        text = super().config_text()
        app = ("app_interface:\n  enabled: true\n  socket_dir: %s\n  socket_mode: \"0666\"\n"
               "  allowed_uids: []\n%s" % (self.dir, self.app_extra))
        check("app_interface:\n  enabled: false\n" in text, "daemon harness config changed")
        text = text.replace("app_interface:\n  enabled: false\n", app)
        return text.replace("services:\n", "services: []\n")

    def socket(self):
        return os.path.join(self.dir, self.prefix + ".sock")


def perf(args, daemon, test, extra, client_of=None):
    cmd = [args.perf, test, "-S", daemon.socket(), "-p", str(PORT), "-V"] + extra
    if client_of is not None:
        cmd.append(client_of)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_line(proc, needle, timeout):
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise TestFailure("no '%s' from %s:\n%s" % (needle, proc.args, "".join(seen)))


def result_row(out):
    """The figures of iwarp-perf's result row (the line after " #bytes")."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(" #bytes") and i + 1 < len(lines):
            return [float(x) for x in lines[i + 1].split()]
    raise TestFailure("no result row from iwarp-perf:\n" + out)


def run_pair(args, a, b, test, extra, expect):
    """iwarp-perf `test` (verifying, -V) with its server on daemon a and its
    client on daemon b; checks both exit 0 and the client's header (`expect`:
    "client_extra" options, "lines" it must print); returns the client's
    output."""
    server = perf(args, a, test, extra)
    try:
        wait_line(server, "waiting for a client", 15)
        client = perf(args, b, test, extra + expect.get("client_extra", []), client_of=iwd.A_IP)
        try:
            out, _ = client.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            client.kill()
            out, _ = client.communicate()
            raise TestFailure("iwarp-perf %s client did not finish in 120 s:\n%s" % (test, out))
        sys.stdout.write(out)
        check(client.returncode == 0, "iwarp-perf %s client exit %d" % (test, client.returncode))
        srv_out, _ = server.communicate(timeout=20)
        check(server.returncode == 0,
              "iwarp-perf %s server exit %d:\n%s" % (test, server.returncode, srv_out))
        check("iWARP (MPA/TCP) to %s:%d" % (iwd.A_IP, PORT) in out,
              "%s: the client's table names the iWARP transport" % test)
        for needle in expect.get("lines", []):
            check(needle in out, "%s: '%s' in the client's header" % (test, needle))
        return out
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    p.add_argument("--perf", required=True)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    iwd.skip_unless_possible(2)
    sockdir = tempfile.mkdtemp(prefix="iwarpd_aw_")
    memif = os.path.join(sockdir, "memif.sock")
    a = AppDaemon(args, "wa", iwd.A_IP, "server", memif, "")
    b = AppDaemon(args, "wb", iwd.B_IP, "client", memif, "")
    try:
        a.start()
        b.start()
        crc_on = {"lines": ["CRC             : on (negotiated)"]}
        cases = [
            ("write_bw", ["-s", "65536", "-n", "2000"], crc_on),
            ("write_bw", ["-s", "1048576", "-n", "100"], crc_on),
            ("read_bw", ["-s", "65536", "-n", "2000"], crc_on),
            ("send_bw", ["-s", "65536", "-n", "2000"],
             {"client_extra": ["--markers"],
              "lines": ["Markers         : peer sends (negotiated; --markers asked)"]}),
            ("write_lat", ["-s", "64", "-n", "2000"], crc_on),
            ("read_lat", ["-s", "64", "-n", "2000"], crc_on),
            ("send_lat", ["-s", "64", "-n", "2000"], crc_on),
        ]
        for test, extra, expect in cases:
            log("iwarp-perf %s %s over two daemons" % (test, " ".join(extra)))
            run_pair(args, a, b, test, extra, expect)
        # The wire counters of both daemons moved (iwarpctl --json app and
        # the text form): every case connected once, and the client side's
        # worker posted and completed the work requests.
        n = len(cases)
        for d, role in ((a, "server"), (b, "client")):
            app = d.ctl_json("app")
            log("%s /iwarpd/app wire counters: %s" %
                (role, {k: v for k, v in app.items() if k.startswith("wire")}))
            check(app.get("wire_engine") == "on", "%s: wire engine reported on" % role)
            check(app["wire_connections"] >= n and app["wire_engine_connections"] >= n,
                  "%s: %d wire connections counted (%s)" % (role, n, app))
            check(app["wire_qps_active"] == 0, "%s: no wire QP left after the runs" % role)
            check(app["wire_ack_timeouts"] == 0 and app["wire_events_dropped"] == 0 and
                  app["wire_bad_sqes"] == 0 and app["wire_bad_rqes"] == 0 and
                  app["wire_ring_corruptions"] == 0,
                  "%s: no wire errors (%s)" % (role, app))
            check(app["wire_completions"] >= 2000 and app["wire_commands"] > 0,
                  "%s: wire completions and commands moved (%s)" % (role, app))
            text = subprocess.run([args.iwarpctl, "--prefix", d.prefix, "app"], check=True,
                                  stdout=subprocess.PIPE, text=True).stdout
            # Read after the JSON: the command counter can only have grown
            # (the control thread may still be handing over teardown commands).
            m = re.search(r"wire engine    commands (\d+)", text)
            check(m is not None and int(m.group(1)) >= app["wire_commands"],
                  "%s: iwarpctl app prints the wire engine line (commands >= %d):\n%s" %
                  (role, app["wire_commands"], text))
        check(a.ctl_json("app")["wire_requests"] >= n,
              "server: remote MPA Requests reported to the application")
        b.stop()
        a.stop()
        for d in (a, b):
            check("iWARP connections" in d.log() and " 0 iWARP connections" not in d.log(),
                  "%s logs its iWARP connections at stop" % d.prefix)
        # Daemon-wide MPA defaults (app_interface.mpa_crc / mpa_markers) reach
        # the wire: with CRC off and Markers on at both daemons, the
        # connection negotiates no CRC and Markers both ways (RFC 5044 7.1).
        b.cleanup()
        a.cleanup()
        a = AppDaemon(args, "wc", iwd.A_IP, "server", memif + "2", "")
        b = AppDaemon(args, "wd", iwd.B_IP, "client", memif + "2", "")
        for d in (a, b):
            d.app_extra = "  mpa_crc: false\n  mpa_markers: true\n"
        a.start()
        b.start()
        log("iwarp-perf write_bw with app_interface mpa_crc: false, mpa_markers: true")
        run_pair(args, a, b, "write_bw", ["-s", "65536", "-n", "200"],
                 {"lines": ["CRC             : off (negotiated)",
                            "Markers         : both ways (negotiated)"]})
        # app_interface.zero_copy_tx: FPDU payloads read from the
        # applications' registered memory until acknowledged. iwarp-perf
        # verifies every byte at the sink (-V); Read Responses go the same way.
        b.cleanup()
        a.cleanup()
        zc_tcp = "  max_zero_copy_sends: 1024\n"
        a = AppDaemon(args, "we", iwd.A_IP, "server", memif + "3", "", tcp_extra=zc_tcp)
        b = AppDaemon(args, "wf", iwd.B_IP, "client", memif + "3", "", tcp_extra=zc_tcp)
        for d in (a, b):
            d.app_extra = "  zero_copy_tx: true\n"
        a.start()
        b.start()
        for test, extra in (("write_bw", ["-s", "65536", "-n", "2000"]),
                            ("write_bw", ["-s", "4096", "-n", "5000"]),
                            ("read_bw", ["-s", "65536", "-n", "1000"]),
                            ("send_bw", ["-s", "65536", "-n", "1000"])):
            log("iwarp-perf %s %s with app_interface zero_copy_tx: true" % (test, " ".join(extra)))
            run_pair(args, a, b, test, extra, crc_on)
        for d, role in ((a, "server"), (b, "client")):
            app = d.ctl_json("app")
            # The client's worker sent the Writes and Sends, the server's the
            # Read Responses: both read payload in place.
            check(app["wire_zero_copy_fpdus"] > 1000,
                  "%s: FPDUs sent by zero-copy (%d)" % (role, app["wire_zero_copy_fpdus"]))
            check(app["wire_dereg_aborts"] == 0 and app["wire_bad_sqes"] == 0 and
                  app["wire_qps_active"] == 0,
                  "%s: zero-copy runs ended cleanly, no QP aborted by a dereg (%s)" % (role, app))
        # The daemon's default delayed ACK (tcp.delayed_ack_us 200, as every
        # case above), 20000, and 0 (an ACK at the end of each receive burst):
        # the same ping-pongs verify every byte with each. When a reply leaves
        # before the delayed-ACK timer, the ACK rides on it (RFC 5681 4.2), so
        # the daemons send far fewer pure ACKs than messages (483-527 for 6000
        # under load with the default); with 0 about one per message (6031 for
        # 6000 measured). With the default the piggybacking is checked only when
        # the median round trip is under half the timer: a sanitizer build on a
        # loaded machine measured 800 us round trips, and then the 200 us timer
        # fires first, as it should (3065 pure ACKs for 6000 measured). 20000
        # is far above any round trip here, so there it is always checked.
        iters = 2000
        default_delayed_ack_us = 200
        lat_cases = (("write_lat", ["-s", "64", "-n", str(iters)]),
                     ("write_lat", ["-s", "64", "-n", str(iters), "--poll-byte"]),
                     ("send_lat", ["-s", "64", "-n", str(iters)]))
        messages = iters * len(lat_cases)  # each way
        # (tcp.delayed_ack_us, daemon names, memif link, bulk runs after the
        # ping-pongs)
        for delayed_ack, names, link, bulk in ((None, ("wg", "wh"), "4", True),
                                               (20000, ("wk", "wl"), "6", False),
                                               (0, ("wi", "wj"), "5", True)):
            b.cleanup()
            a.cleanup()
            a = AppDaemon(args, names[0], iwd.A_IP, "server", memif + link, "",
                          delayed_ack_us=delayed_ack)
            b = AppDaemon(args, names[1], iwd.B_IP, "client", memif + link, "",
                          delayed_ack_us=delayed_ack)
            a.start()
            b.start()
            mode = "the default tcp.delayed_ack_us" if delayed_ack is None else \
                "tcp.delayed_ack_us %d" % delayed_ack
            timer_us = default_delayed_ack_us if delayed_ack is None else delayed_ack
            acks0 = [d.ctl_json("tcp")["total"]["acks_out"] for d in (a, b)]
            round_trips = []
            for test, extra in lat_cases:
                log("iwarp-perf %s %s with %s" % (test, " ".join(extra), mode))
                out = run_pair(args, a, b, test, extra, crc_on)
                # t_typical (the median) is half the round trip, as perftest.
                round_trips.append(2 * result_row(out)[4])
            slowest = max(round_trips)
            for d, role, before in ((a, "server", acks0[0]), (b, "client", acks0[1])):
                pure = d.ctl_json("tcp")["total"]["acks_out"] - before
                log("%s: %d pure ACKs for %d messages received (%s; median round trip %.1f us "
                    "in the slowest case)" % (role, pure, messages, mode, slowest))
                if timer_us == 0:
                    check(pure >= messages * 9 // 10,
                          "%s: an ACK for every message with %s (%d pure ACKs for %d)" %
                          (role, mode, pure, messages))
                elif delayed_ack is None and slowest >= timer_us / 2:
                    log("%s: piggybacked ACKs not checked with %s: the median round trip "
                        "(%.1f us) is not under half the %d us timer, so the timer fires "
                        "before most replies" % (role, mode, slowest, timer_us))
                else:
                    check(pure < messages // 2,
                          "%s: ACKs ride on the replies (%d pure ACKs for %d messages)" %
                          (role, pure, messages))
            if not bulk:
                continue
            for test, extra in (("write_bw", ["-s", "65536", "-n", "2000"]),
                                ("send_bw", ["-s", "64", "-n", "20000"])):
                log("iwarp-perf %s %s with %s" % (test, " ".join(extra), mode))
                run_pair(args, a, b, test, extra, crc_on)
    except TestFailure as e:
        log("FAIL: %s" % e)
        for d in (a, b):
            log("--- %s log:\n%s" % (d.prefix, d.log()[-4000:]))
        return 1
    finally:
        b.cleanup()
        a.cleanup()
        shutil.rmtree(sockdir, ignore_errors=True)
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
