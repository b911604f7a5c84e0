#!/usr/bin/env python3
"""libiwarp applications over RDMA over SCTP (RFC 5043) on two iwarpd daemons:
iwarp-perf --transport sctp server on daemon A, client on daemon B connecting
to A's address, so every work request goes SQ ring -> B's worker 0
(WireEngine, engine::Qp on a DDP stream, usrsctp) -> net_memif -> A's worker
0 -> placement into the server's registered memory, and back. Both daemons
have `sctp: {enabled: true}` in their YAML. Each iwarp-perf verifies every
byte (-V) and exits non-zero on a failed completion or a wrong byte.

Cases: write_bw (64 KiB and 1 MiB), read_bw, send_bw, send_lat over SCTP; an
SCTP and a TCP iwarp-perf pair running at the same time on the same daemons
(same port number: the port spaces are separate); a reject path (the server
application rejects a client that runs another test, over SCTP, with the
client reporting the rejection); and the daemons' counters afterwards.

The daemons run in network namespaces the test creates (198.18.1.1 and
198.18.1.2), joined by a net_memif pair (hugepages needed; the harness is
iwarp_dataplane.py's, the app-interface config appif_wire_dataplane.py's).

  appif_wire_sctp_dataplane.py --iwarpd PATH --iwarpctl PATH --perf PATH

Exit status: 0 pass, 1 fail, 77 skip (not root, no hugepages, no netns).
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appif_wire_dataplane as awd  # noqa: E402  (app-interface daemons)
import iwarp_dataplane as iwd  # noqa: E402  (memif daemon harness)

from dataplane_integration import TestFailure, check, log  # noqa: E402

PORT = 18515


class SctpAppDaemon(awd.AppDaemon):
    """An app-interface daemon with RDMA over SCTP enabled (worker 0 hosts
    usrsctp; the wire engine carries SCTP QPs through it)."""

    sctp_extra = ("sctp:\n  enabled: true\n  rto_initial_ms: 200\n  rto_min_ms: 50\n"
                  "  rto_max_ms: 1000\n")

    def config_text(self):
        return super().config_text() + self.sctp_extra


def perf(args, daemon, test, extra, port=PORT, client_of=None):
    cmd = [args.perf, test, "-S", daemon.socket(), "-p", str(port), "-V"] + extra
    if client_of is not None:
        cmd.append(client_of)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc, what, timeout=120):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise TestFailure("%s did not finish in %d s:\n%s" % (what, timeout, out))
    return out


def start_server(args, a, test, extra, port):
    server = perf(args, a, test, extra, port=port)
    awd.wait_line(server, "waiting for a client", 15)
    return server


def run_pairs(args, a, b, pairs):
    """Runs every (test, extra, transport, port) pair at the same time: all
    servers first, then all clients; checks each exits 0 and names its
    transport. Returns the clients' outputs."""
    servers, clients, outs = [], [], []
    try:
        for test, extra, transport, port in pairs:
            servers.append(start_server(args, a, test, extra + ["--transport", transport], port))
        for test, extra, transport, port in pairs:
            clients.append(perf(args, b, test, extra + ["--transport", transport], port=port,
                                client_of=iwd.A_IP))
        for (test, extra, transport, port), client, server in zip(pairs, clients, servers):
            out = finish(client, "iwarp-perf %s client over %s" % (test, transport))
            sys.stdout.write(out)
            outs.append(out)
            check(client.returncode == 0,
                  "iwarp-perf %s client over %s exit %d" % (test, transport, client.returncode))
            srv = finish(server, "iwarp-perf %s server" % test, 20)
            check(server.returncode == 0,
                  "iwarp-perf %s server over %s exit %d:\n%s" %
                  (test, transport, server.returncode, srv))
            want = ("RDMA over SCTP (RFC 5043) to %s:%d" if transport == "sctp"
                    else "iWARP (MPA/TCP) to %s:%d") % (iwd.A_IP, port)
            check(want in out, "%s over %s: the client's table says '%s'" % (test, transport, want))
    finally:
        for p in servers + clients:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return outs


def sctp_configurable(args, daemon):
    """True if this iwarpd accepts the sctp: section; else prints why the test
    is skipped (a build whose data plane does not host SCTP)."""
    cfg = os.path.join(daemon.dir, "check.yaml")
    with open(cfg, "w") as f:
        f.write(daemon.config_text())
    r = subprocess.run([args.iwarpd, "--check-config", cfg], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 and "sctp" in r.stdout:
        log("SKIP: this iwarpd does not take the sctp: section (no RDMA over SCTP in its data "
            "plane): %s" % r.stdout.strip()[-300:])
        return False
    check(r.returncode == 0, "iwarpd --check-config accepts the test's config:\n%s" % r.stdout)
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    p.add_argument("--perf", required=True)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    iwd.skip_unless_possible(2)
    sockdir = tempfile.mkdtemp(prefix="iwarpd_as_")
    memif = os.path.join(sockdir, "memif.sock")
    a = SctpAppDaemon(args, "sa", iwd.A_IP, "server", memif, "")
    b = SctpAppDaemon(args, "sb", iwd.B_IP, "client", memif, "")
    t0 = time.time()
    if not sctp_configurable(args, a):
        shutil.rmtree(sockdir, ignore_errors=True)
        for d in (a, b):
            shutil.rmtree(d.dir, ignore_errors=True)
        return iwd.SKIP
    try:
        a.start()
        b.start()
        cases = [
            ("write_bw", ["-s", "65536", "-n", "1000"]),
            ("write_bw", ["-s", "1048576", "-n", "50"]),
            ("read_bw", ["-s", "65536", "-n", "1000"]),
            ("send_bw", ["-s", "65536", "-n", "1000"]),
            ("send_lat", ["-s", "64", "-n", "1000"]),
        ]
        for test, extra in cases:
            log("iwarp-perf %s %s over SCTP between two daemons" % (test, " ".join(extra)))
            run_pairs(args, a, b, [(test, extra, "sctp", PORT)])
        # SCTP and TCP applications at the same time on the same daemons,
        # on the same port number (separate port spaces).
        log("iwarp-perf write_bw over SCTP and over TCP at the same time, both on port %d" %
            (PORT + 1))
        run_pairs(args, a, b, [("write_bw", ["-s", "65536", "-n", "1000"], "sctp", PORT + 1),
                               ("write_bw", ["-s", "65536", "-n", "1000"], "tcp", PORT + 1)])
        # Reject path over SCTP: the server application rejects a client that
        # runs another test (RFC 5043 6.3 session Reject); the client is told.
        log("reject over SCTP: write_bw server, read_bw client")
        server = start_server(args, a, "write_bw", ["--transport", "sctp"], PORT + 2)
        client = perf(args, b, "read_bw", ["--transport", "sctp"], port=PORT + 2,
                      client_of=iwd.A_IP)
        out = finish(client, "rejected client", 30)
        srv = finish(server, "rejecting server", 20)
        check(client.returncode == 3 and "rejected us" in out,
              "the rejected client exits 3 and says so (exit %d):\n%s" % (client.returncode, out))
        check(server.returncode == 3 and "rejected" in srv,
              "the server rejected the mismatched client (exit %d):\n%s" % (server.returncode, srv))
        # An SCTP client aimed at a TCP-only listener finds nobody.
        log("an SCTP client to a port only a TCP server listens on is refused")
        server = start_server(args, a, "write_bw", [], PORT + 3)
        client = perf(args, b, "write_bw", ["--transport", "sctp"], port=PORT + 3,
                      client_of=iwd.A_IP)
        out = finish(client, "SCTP client to a TCP port", 60)
        check(client.returncode == 3 and "connect to port %d failed" % (PORT + 3) in out,
              "the SCTP client finds no SCTP listener (exit %d):\n%s" % (client.returncode, out))
        server.kill()
        server.communicate()

        # Counters: the wire engines carried every connection; nothing leaked.
        n = len(cases) + 2
        for d, role in ((a, "server"), (b, "client")):
            app = d.ctl_json("app")
            log("%s /iwarpd/app wire counters: %s" %
                (role, {k: v for k, v in app.items() if k.startswith("wire")}))
            check(app["wire_connections"] >= n,
                  "%s: %d wire connections counted (%s)" % (role, n, app))
            check(app["wire_qps_active"] == 0, "%s: no wire QP left after the runs" % role)
            # Every SCTP connect opened (client) or was accepted on (server) an
            # association of its own; none is held after the runs.
            check(app["wire_sctp_associations"] >= 1 and
                  app["wire_sctp_associations_refused"] == 0,
                  "%s: %d SCTP associations for application QPs, none refused (%s)" %
                  (role, app["wire_sctp_associations"], app))
            check(app["wire_ack_timeouts"] == 0 and app["wire_events_dropped"] == 0 and
                  app["wire_bad_sqes"] == 0 and app["wire_bad_rqes"] == 0 and
                  app["wire_ring_corruptions"] == 0,
                  "%s: no wire errors (%s)" % (role, app))
        check(a.ctl_json("app")["wire_requests"] >= n + 1,
              "server: SCTP session Initiates and MPA Requests reported to the application")
        log("two-daemon SCTP run took %.1f s" % (time.time() - t0))
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
