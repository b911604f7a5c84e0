#!/usr/bin/env python3
"""Application listeners on a daemon with two workers.

Application QPs and listeners (libiwarp) live on worker 0 of a daemon. With
several workers a segment to them may arrive on any worker; every worker
hands frames to a local TCP port that an application holds to worker 0
(appif/app_ports.h), counted as steered_app. Without that, the other workers
have no listener for the port and answer RST.

Daemon A (the server) runs two workers on a net_af_packet port with two
queue pairs: the kernel fans frames out to the two queues by flow hash
(PACKET_FANOUT_HASH), so about half of the connections arrive on worker 1's
queue, and software steering applies (af_packet has no RSS). Its lcores
float over the machine's CPUs (eal.cpus), so this runs on 2 CPUs. Daemon B
(the client) runs one worker on the other end of the veth pair. The pair's
ends sit in two namespaces the test creates (198.18.1.1 and 198.18.1.2) and
carry no kernel address.

An app_fanout server listens once on A; an app_fanout client on B opens N
connections at once (each from its own local port) and sends each a
message of its own, which the server echoes; the client checks every byte.
The test then checks that every connection was accepted by A's wire engine,
that A's worker 1 handed frames to worker 0 (steered_app > 0) and answered
no RST, that no steering ring overflowed, and that A holds no port once the
connections and the listener are gone. Then the roles swap: an application
on A connects N times to a listener on B (active opens from A's worker 0,
replies fanned out over A's two queues) with the same checks; A's
connections, closed by A, keep their ports held while they linger in
TIME-WAIT (tcp.time_wait_s 3 on A) and give them back after. A first case
checks that an
application cannot listen on the port of a built-in service (iwarp_responder
on A): the listen fails with EADDRINUSE and says so.

  appif_steer_dataplane.py --iwarpd PATH --iwarpctl PATH --fanout PATH

Exit status: 0 pass, 1 fail, 77 skip (not root, no netns).
"""

import argparse
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appif_wire_dataplane as awd  # noqa: E402  (AppDaemon: app_interface on)
import dataplane_integration as dpi  # noqa: E402
import iwarp_dataplane as iwd  # noqa: E402
import mtu_jumbo as mj  # noqa: E402  (VethPair, VdevPort)

from dataplane_integration import TestFailure, check, log  # noqa: E402

PORT = 18600
CONNECTIONS = 32
MESSAGE = 16384
RESPONDER_PORT = 9999
TIME_WAIT_S = 3  # daemon A's tcp.time_wait_s (2*MSL; the default is 60)


class SteerDaemon(mj.VdevPort, awd.AppDaemon):
    """An AppDaemon on a net_af_packet port in an existing namespace, with
    `workers` worker lcores floating over CPUs 0 and 1."""

    def __init__(self, args, name, ip, ns, vdev, workers, services="", tcp_extra=""):
        super().__init__(args, name, ip, "server", "unused", services, tcp_extra=tcp_extra)
        self.workers = workers
        self.use_port(ns, vdev, 1500)

    def config_text(self):
        text = super().config_text()
        if self.services:  # AppDaemon assumes none
            text = text.replace("services: []\n", "services:\n")
        if self.workers == 1:
            return text
        lcores = "  lcores: [%d]\n" % self.worker_lcore
        check(lcores in text and "  file_prefix: %s\n" % self.prefix in text,
              "the daemon harness config has the lcores and file_prefix lines")
        text = text.replace(lcores, "  lcores: [%s]\n" %
                            ", ".join(str(1 + i) for i in range(self.workers)))
        return text.replace("  file_prefix: %s\n" % self.prefix,
                            "  file_prefix: %s\n  cpus: [0, 1]\n" % self.prefix)

    def lcore_stats(self):
        """Counters of each worker lcore, in worker order."""
        stats = self.ctl_json("stats")
        out = []
        for i in range(self.workers):
            lc = stats.get("lcore_%d" % (1 + i))
            check(lc is not None, "%s: counters of lcore %d (keys %s)" %
                  (self.prefix, 1 + i, sorted(stats)))
            out.append(lc)
        return out


def fanout(args, daemon, *rest):
    return subprocess.Popen([args.fanout, rest[0], daemon.socket()] + [str(x) for x in rest[1:]],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_line(proc, needle, timeout):
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return
    raise TestFailure("no '%s' from %s:\n%s" % (needle, proc.args, "".join(seen)))


def finish(proc, what, timeout):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise TestFailure("%s did not finish in %d s:\n%s" % (what, timeout, out))
    sys.stdout.write(out)
    check(proc.returncode == 0, "%s exit %d:\n%s" % (what, proc.returncode, out))
    return out


def worker_delta(before, after):
    """Per-worker counter increments between two lcore_stats() reads of a
    two-worker daemon; logs the steering ones."""
    delta = [{k: after[w][k] - before[w].get(k, 0) for k in after[w]
              if isinstance(after[w][k], int)} for w in range(2)]
    log("daemon A worker counters during the run: %s" %
        [{k: d[k] for k in ("rx_packets", "steered_out", "steered_app", "steered_in")}
         for d in delta])
    return delta


def port_holds_drain(d, timeout_s=10):
    """True once daemon `d` holds no application TCP port (within timeout_s)."""
    deadline = time.time() + timeout_s
    while d.ctl_json("app")["wire_tcp_port_holds"] != 0 and time.time() < deadline:
        time.sleep(0.2)
    return d.ctl_json("app")["wire_tcp_port_holds"] == 0


def tcp_connections(d, lcore):
    """TCP connections (any state, TIME-WAIT included) of daemon `d`'s lcore."""
    return d.ctl_json("tcp")["lcore_%d" % lcore]["connections"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    p.add_argument("--fanout", required=True)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    dpi.skip_unless_possible()
    link = mj.VethPair(1500)
    a = b = None
    try:
        link.create()
        # A: two workers; an iwarp_responder (a built-in service on every
        # worker) reserves its port.
        a = SteerDaemon(args, "sa", iwd.A_IP, link.ns[0],
                        "net_af_packet0,iface=%s,qpairs=2" % link.ifs[0], 2,
                        services="  - {name: resp, type: iwarp_responder, port: %d}\n" %
                        RESPONDER_PORT, tcp_extra="  time_wait_s: %d\n" % TIME_WAIT_S)
        a.start()
        b = SteerDaemon(args, "sb", iwd.B_IP, link.ns[1],
                        "net_af_packet0,iface=%s,qpairs=1" % link.ifs[1], 1)
        b.start()
        check("queues rx 2 tx 2" in a.log() and "steering software" in a.log(),
              "daemon A: two RX queues, software steering:\n%s" % a.log())

        # An application cannot take the built-in service's port.
        srv = fanout(args, a, "server", RESPONDER_PORT, 1)
        try:
            out, _ = srv.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()
            out, _ = srv.communicate()
        log("app_fanout listening on port %d said (a refusal is expected): %s" %
            (RESPONDER_PORT, out.strip()))
        check(srv.returncode == 1 and "FAIL: listen" in out and
              "used by a built-in service" in out,
              "a listen on the iwarp_responder's port %d is refused, the error naming the "
              "built-in service (app_fanout's output above)" % RESPONDER_PORT)
        app = a.ctl_json("app")
        check(app["wire_listens_reserved"] == 1,
              "daemon A counted the refused listen (wire_listens_reserved %d)" %
              app["wire_listens_reserved"])

        log("%d application connections from B to an application listener on A "
            "(two workers)" % CONNECTIONS)
        before = a.lcore_stats()
        srv = fanout(args, a, "server", PORT, CONNECTIONS)
        try:
            wait_line(srv, "READY", 15)
            check(a.ctl_json("app")["wire_tcp_port_holds"] == 1,
                  "daemon A holds the listening port for worker 0")
            cli = fanout(args, b, "client", iwd.A_IP, PORT, CONNECTIONS, MESSAGE)
            out = finish(cli, "app_fanout client", 90)
            check("CLIENT_OK %d connections" % CONNECTIONS in out, "client verified every echo")
            out = finish(srv, "app_fanout server", 30)
            check("SERVER_OK %d connections" % CONNECTIONS in out, "server served every connection")
        finally:
            for proc in (srv,):
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
        after = a.lcore_stats()
        delta = worker_delta(before, after)
        app = a.ctl_json("app")
        log("daemon A wire counters: %s" % {k: v for k, v in app.items() if k.startswith("wire")})
        check(app["wire_engine_requests"] >= CONNECTIONS and
              app["wire_engine_connections"] >= CONNECTIONS,
              "daemon A's wire engine took every connection request and connection")
        check(app["wire_requests_refused"] == 0, "daemon A refused no request")
        # The kernel put part of the connections on worker 1's queue; worker 1
        # handed them to worker 0 instead of answering RST.
        check(delta[1]["rx_packets"] > 0, "worker 1 received frames of the run (fanout by hash)")
        check(delta[1]["steered_app"] > 0,
              "worker 1 handed application frames to worker 0 (steered_app)")
        check(delta[0]["steered_in"] >= delta[1]["steered_app"],
              "worker 0 took in what worker 1 steered")
        check(delta[0]["steered_app"] == 0, "worker 0 never steers application frames away")
        tcp = a.ctl_json("tcp")
        log("daemon A TCP per worker: %s" %
            [{k: tcp["lcore_%d" % (1 + w)][k] for k in ("segments_in", "rsts_out", "connections")}
             for w in range(2)])
        check(tcp["lcore_2"]["segments_in"] == 0 and tcp["lcore_2"]["rsts_out"] == 0,
              "worker 1's TCP stack saw none of the application's segments and sent no RST")
        for w in range(2):
            check(after[w]["drop_steer_ring_full"] == 0, "worker %d: no steering ring overflow" % w)
        # Every connection and the listener are gone: no port held.
        check(port_holds_drain(a),
              "daemon A holds no port once the application is gone")

        # The other way round: A's application connects (active opens from
        # worker 0, each holding its ephemeral port) to a listener on B; the
        # kernel again hands part of the replies to A's worker 1.
        log("%d application connections from A (two workers) to an application listener "
            "on B" % CONNECTIONS)
        before = a.lcore_stats()
        srv = fanout(args, b, "server", PORT, CONNECTIONS)
        try:
            wait_line(srv, "READY", 15)
            cli = fanout(args, a, "client", iwd.B_IP, PORT, CONNECTIONS, MESSAGE)
            out = finish(cli, "app_fanout client on A", 90)
            check("CLIENT_OK %d connections" % CONNECTIONS in out, "client on A verified every echo")
            out = finish(srv, "app_fanout server on B", 30)
            check("SERVER_OK %d connections" % CONNECTIONS in out, "server on B served every one")
        finally:
            if srv.poll() is None:
                srv.kill()
                srv.communicate()
        after = a.lcore_stats()
        delta = worker_delta(before, after)
        check(delta[1]["rx_packets"] > 0 and delta[1]["steered_out"] == delta[1]["rx_packets"],
              "everything A's worker 1 received went to worker 0")
        tcp = a.ctl_json("tcp")
        check(tcp["lcore_2"]["segments_in"] == 0 and tcp["lcore_2"]["rsts_out"] == 0,
              "A's worker 1 TCP stack still saw nothing and sent no RST")
        # A's application closed its connections (active closes): each
        # lingers in TIME-WAIT on worker 0 and keeps its port steered there,
        # so the peer's late FIN still finds the stack that answers it; the
        # ports go when the TIME-WAITs end.
        holds = a.ctl_json("app")["wire_tcp_port_holds"]
        lingering = tcp_connections(a, 1)
        log("after the QPs were destroyed: %d ports held, %d TCP connections on worker 0" %
            (holds, lingering))
        check(holds > 0 and holds == lingering,
              "daemon A still holds the port of each connection in TIME-WAIT (%d ports, %d "
              "connections)" % (holds, lingering))
        check(port_holds_drain(a, TIME_WAIT_S + 10),
              "daemon A gave back every ephemeral port once its connections left TIME-WAIT")
        check(tcp_connections(a, 1) == 0, "worker 0's TIME-WAITs are over")
        sys.stdout.write(dpi.run([args.iwarpctl, "--prefix", a.prefix, "app"]).stdout)
        b.stop()
        a.stop()
    except TestFailure as e:
        log("FAIL: %s" % e)
        for d in (a, b):
            if d is not None:
                log("--- %s log:\n%s" % (d.prefix, d.log()[-4000:]))
        return 1
    finally:
        for d in (b, a):
            if d is not None:
                d.cleanup()
        link.delete()
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
