#!/usr/bin/env python3
"""workers.idle_block_after_us with applications: two iwarpd daemons joined by
a vhost-user link (net_vhost on A, net_virtio_user on B; both raise receive
interrupts), both blocking after 200 us without work. iwarp-perf write_lat,
send_lat and read_lat run with --gap-us 3000: before every iteration the
client sleeps 3 ms, so both workers have blocked by the time it posts. The
post reaches B's blocked worker only through the application's doorbell (the
SQ's consumer_waiting flag -> the session doorbell -> the control thread ->
the worker's wake eventfd), and the frames reach A's through its receive
interrupt. The workers block for up to 200 ms (idle_block_max_ms), so a
lost wake-up stalls an iteration visibly. Checked: every iteration completes
with the data verified (-V), the workers blocked in every gap (idle_blocks),
the median round trip stays below 10 ms (~1 ms here) and none reaches
100 ms. Then write_bw after idle moves its bytes verified, and both daemons
stop on SIGTERM.

  idle_block_wire.py --iwarpd PATH --iwarpctl PATH --perf PATH

Exit status: 0 pass, 1 fail, 77 skip (not root, no hugepages, no netns).
"""

import argparse
import os
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appif_wire_dataplane as aw  # noqa: E402  (application daemon harness)
import iwarp_dataplane as iwd  # noqa: E402
import mtu_jumbo as mj  # noqa: E402  (vhost-user ports)

from dataplane_integration import TestFailure, check, log  # noqa: E402

GAP_US = 3000
ITERS = 60


class BlockingVhostDaemon(mj.VhostPort, aw.AppDaemon):
    """An application daemon on a vhost-user port whose worker blocks when idle."""

    def config_text(self):
        text = super().config_text()
        idle = "  idle_sleep_us: %d\n" % self.idle_sleep_us
        if idle not in text:
            raise TestFailure("daemon harness config changed: no %r" % idle)
        # Blocks of up to 200 ms: a lost wake-up stalls an iteration for tens
        # of milliseconds instead of hiding in the noise.
        return text.replace(idle, "  idle_block_after_us: 200\n  idle_block_max_ms: 200\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    p.add_argument("--perf", required=True)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    iwd.skip_unless_possible(2)
    sockdir = tempfile.mkdtemp(prefix="iwarpd_ib_")
    sock = os.path.join(sockdir, "vhost.sock")
    a = BlockingVhostDaemon(args, "ba", iwd.A_IP, "server", "unused", "")
    a.use_vhost(mj.vhost_vdev(sock), 1500)
    b = BlockingVhostDaemon(args, "bb", iwd.B_IP, "client", "unused", "")
    b.use_vhost(mj.virtio_user_vdev(sock), 1500)
    try:
        a.start()
        b.start()
        for test in ("write_lat", "send_lat", "read_lat"):
            before = [d.ctl_json("stats")["total"]["idle_blocks"] for d in (a, b)]
            row = aw.result_row(aw.run_pair(
                args, a, b, test, ["-s", "64", "-n", str(ITERS), "--gap-us", str(GAP_US)], {}))
            after = [d.ctl_json("stats")["total"]["idle_blocks"] for d in (a, b)]
            blocks = [y - x for x, y in zip(before, after)]
            # Columns: bytes, iterations, t_min, t_max, t_typical (median), ...;
            # half the round trip for write_lat and send_lat.
            scale = 1 if test == "read_lat" else 2
            rtt_us, max_us = row[4] * scale, row[3] * scale
            log("%s after %d us gaps: round trip median %.1f us, min %.1f us, max %.1f us; "
                "blocks %s" % (test, GAP_US, rtt_us, row[2] * scale, max_us, blocks))
            check(min(blocks) >= ITERS,
                  "%s: both workers blocked in every gap (%s blocks, %d gaps)" %
                  (test, blocks, ITERS))
            # ~1 ms here (four or five wake-ups from deep idle in a row); a
            # lost wake-up waits for the 200 ms block timeout.
            check(rtt_us < 10000 and max_us < 100000,
                  "%s: round trips from blocked workers: median %.1f us (< 10000), max %.1f us "
                  "(< 100000; a wake-up left to the 200 ms block timeout)" %
                  (test, rtt_us, max_us))
        row = aw.result_row(aw.run_pair(args, a, b, "write_bw", ["-s", "65536", "-n", "2000"], {}))
        log("write_bw 64 KiB with blocking workers: %.1f MiB/s" % row[2])
        for d in (b, a):
            d.stop()  # raises unless it exits 0 within 10 s without sanitizer reports
            check(d.proc.returncode == 0, "%s stopped on SIGTERM" % d.prefix)
    except TestFailure as e:
        log("FAIL: %s" % e)
        for d in (a, b):
            log("--- %s log:\n%s" % (d.prefix, d.log()[-3000:]))
        return 1
    finally:
        for d in (b, a):
            d.cleanup()
        shutil.rmtree(sockdir, ignore_errors=True)
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
