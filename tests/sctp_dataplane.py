#!/usr/bin/env python3
"""RDMA over SCTP (RFC 5043) between two iwarpd daemons: the iwarp_responder
and iwarp_client services with `transport: sctp`, usrsctp hosted on worker 0
of each daemon, IPv4 protocol 132 over net_memif.

Daemon A runs an SCTP iwarp_responder (4 QPs, pre-created on DDP streams
0..3 of each association it accepts), daemon B iwarp_client services; the
clients of one run name the same remote and port, so they share ONE
association, each on its own DDP stream, running at the same time. Every run
is verified by the client (Write read back, Read compared, Send echoed) and
here by the SHA-256 of the data that came back, and B's /iwarpd/sctp must
show exactly one association for the run.

  sctp_dataplane.py CASE --iwarpd PATH --iwarpctl PATH
  CASE: sizes | reject | impair | abort

  sizes:  write/read/send at 0 B, 4 KiB, 64 KiB and 1 MiB (three streams of
          one association at once per size) with 1 MiB socket buffers; each
          run ends with the RFC 5043 session Terminate on every stream and a
          graceful SCTP shutdown, which gives the responder's QP slots back
          (checked by the next run). The link is clean: no packet may be
          dropped on either daemon and no chunk may arrive out of DDP-SSN
          order (a loss would show as both).
  reject: a client on DDP stream 6, where the responder has no QP: the
          session Initiate is Rejected (RFC 5043 6.3); the run fails with
          connect error "rejected", the responder counts initiates_refused,
          and a client on stream 0 of the same association still runs.
          Terminate path: a third client refuses the responder's private data
          (its Sends would not fit) after the session is up and ends it with
          the session Terminate (RFC 5043 6.2); the responder counts the
          session ended by the peer's Terminate.
  impair: loss, reordering and duplication of SCTP packets both ways on B's
          port (impairment counters checked): the same SHA-256 of every run.
  abort:  B is stopped (SIGTERM) while two sessions move data; its iwarpd
          sends SCTP ABORT, so A's association count is 0 within 2.5 s (not
          after heartbeat failure detection) with both sessions ended as
          association_down, and a new client then runs on the freed slots.

Exit status: 0 pass, 1 fail, 77 skip (not root, no hugepages, no netns).
"""

import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iwarp_dataplane as iwd  # noqa: E402  (memif daemon harness, SHA-256 of runs)

from dataplane_integration import TestFailure, check, log  # noqa: E402

SCTP_PORT = 5043
MIB = 1 << 20

# Short RTOs: the link is a shared-memory wire, losses come only from the
# impairment stage. The sizes case runs with 1 MiB socket buffers (a window
# of ~720 packets released at once must reach the peer without loss), the
# other cases at the daemon's default 256 KiB.
def sctp_section(buffer_bytes=256 * 1024):
    return ("sctp:\n  enabled: true\n  streams: 8\n  send_buffer_bytes: %d\n"
            "  receive_buffer_bytes: %d\n  rto_initial_ms: 200\n  rto_min_ms: 50\n"
            "  rto_max_ms: 1000\n" % (buffer_bytes, buffer_bytes))


RESPONDER = ("  - {name: r_sctp, type: iwarp_responder, transport: sctp, port: %d}\n"
             % SCTP_PORT)
RESPONDER_IWARP = ("  qps_per_service: 4\n  scratch_bytes: %d\n  recv_buffers: 4\n"
                   "  recv_buffer_bytes: %d\n" % (4 * MIB, 4 * MIB))


def client(name, op, msg, count, qd, stream=None):
    extra = ", stream: %d" % stream if stream is not None else ""
    return ("  - {name: %s, type: iwarp_client, transport: sctp, remote: %s, remote_port: %d,"
            " start_delay_ms: 300, op: %s, message_bytes: %d, count: %d, queue_depth: %d%s}\n"
            % (name, iwd.A_IP, SCTP_PORT, op, msg, count, qd, extra))


def sctp_stats(daemon):
    return daemon.ctl_json("sctp")


class SctpPair:
    """Responder daemon A (kept) and a client daemon B per run."""

    def __init__(self, args, buffer_bytes=256 * 1024):
        self.args = args
        self.sctp = sctp_section(buffer_bytes)
        self.dir = iwd.tempfile.mkdtemp(prefix="iwarpd_sctp_")
        self.sock = os.path.join(self.dir, "memif.sock")
        self.a = iwd.MemifDaemon(args, "sa", iwd.A_IP, "server", self.sock, RESPONDER,
                                 RESPONDER_IWARP, tcp_extra=self.sctp)
        self.b = None

    def start(self):
        self.a.start()

    def run_clients(self, clients, impairment="", timeout=40.0):
        """Starts B with `clients` (tuples for client()), waits for every run;
        returns (services, sctp stats, totals) of B."""
        services = "".join(client(*c) for c in clients)
        self.b = iwd.MemifDaemon(self.args, "sb", iwd.B_IP, "client", self.sock, services,
                                 impairment=impairment, tcp_extra=self.sctp)
        try:
            self.b.start()
            deadline = time.time() + timeout
            while True:
                svcs = self.b.services_by_name()
                if all(svcs[c[0]].get("run") in ("ok", "failed") for c in clients):
                    break
                if time.time() > deadline:
                    raise TestFailure("client runs did not finish in %.0f s: %s\n%s" %
                                      (timeout, svcs, self.b.log()))
                time.sleep(0.2)
            # The last client's session Terminate and the SCTP SHUTDOWN.
            deadline = time.time() + 5
            while True:
                st = sctp_stats(self.b)
                if st["associations_up"] == 0 or time.time() > deadline:
                    break
                time.sleep(0.1)
            svcs = self.b.services_by_name()
            totals = self.b.totals()
            self.b.stop()
            return svcs, st, totals
        finally:
            self.b.cleanup()

    def wait_responder_idle(self, timeout=5.0):
        """A's association of the last run ends (SHUTDOWN): its slots free."""
        deadline = time.time() + timeout
        while True:
            st = sctp_stats(self.a)
            if st["associations"] == 0:
                return st
            if time.time() > deadline:
                raise TestFailure("responder still holds %d associations: %s" %
                                  (st["associations"], st))
            time.sleep(0.1)

    def cleanup(self):
        if self.b is not None:
            self.b.cleanup()
        self.a.cleanup()
        iwd.shutil.rmtree(self.dir, ignore_errors=True)


def svcs_sum(svcs, clients, key):
    return sum(svcs[c[0]][key] for c in clients)


def check_one_association(st, what):
    check(st["sctp_connects"] == 1 and st["sctp_peers_added"] == 1,
          "%s: the clients shared one association (connects %d, peers %d)" %
          (what, st["sctp_connects"], st["sctp_peers_added"]))


def case_sizes(args):
    iwd.skip_unless_possible(2)
    pair = SctpPair(args, buffer_bytes=MIB)
    try:
        pair.start()
        plan = [(0, 64, 4), (4096, 64, 8), (65536, 32, 8), (MIB, 8, 2)]
        established = 0
        echoed = 0
        for msg, count, qd in plan:
            clients = [("w%d" % msg, "write", msg, count, qd),
                       ("r%d" % msg, "read", msg, count, qd),
                       ("s%d" % msg, "send", msg, count, qd)]
            svcs, st, bt = pair.run_clients(clients)
            sa = sctp_stats(pair.a)
            at = pair.a.totals()

            def interesting(d):
                return {k: v for k, v in d.items()
                        if isinstance(v, int) and v and
                        ("end_" in k or "tx_queue" in k or "reorder" in k or "full" in k or
                         "retrans" in k or "timeout" in k or "t3" in k or "dup" in k or
                         "tx_held" in k or "deferred" in k or "drop" in k)}
            log("%d B: client side: %s %s" % (msg, interesting(st), interesting(bt)))
            log("%d B: responder side: %s %s" % (msg, interesting(sa), interesting(at)))
            for c in clients:
                iwd.check_run(svcs, *c)
            check_one_association(st, "%d B" % msg)
            check(st["sctp_ddp_tx_segments"] > 0 and st["sctp_rx_bad_crc"] == 0,
                  "%d B: %d DDP segments sent over SCTP, no CRC32c drops" %
                  (msg, st["sctp_ddp_tx_segments"]))
            # Initiate + Terminate per stream (RFC 5043 6.2), each answered.
            # A clean link: nothing is dropped on the way (the worker holds what
            # the memif ring cannot take yet), so no chunk waits for a
            # retransmission and none arrives out of DDP-SSN order.
            for side, s_, t_ in (("client", st, bt), ("responder", sa, at)):
                check(t_["drop_tx_ring_full"] == 0 and t_["drop_no_mbuf"] == 0 and
                      t_["drop_arp_pending_overflow"] == 0 and s_["sctp_tx_queue_full"] == 0,
                      "%d B, %s: no packet dropped on the way out (tx_ring_full %d, no_mbuf %d, "
                      "sctp_tx_queue_full %d)" % (msg, side, t_["drop_tx_ring_full"],
                                                  t_["drop_no_mbuf"], s_["sctp_tx_queue_full"]))
                check(s_["sctp_ddp_rx_reordered"] == 0 and s_["sctp_ddp_end_reorder_full"] == 0,
                      "%d B, %s: no chunk out of DDP-SSN order (reordered %d, reorder_full %d)" %
                      (msg, side, s_["sctp_ddp_rx_reordered"], s_["sctp_ddp_end_reorder_full"]))
            check(st["sctp_stream_end_closed"] == 3,
                  "%d B: the three sessions ended with the session Terminate exchange "
                  "(closed %d)" % (msg, st["sctp_stream_end_closed"]))
            check(svcs_sum(svcs, clients, "session_end_timeouts") == 0 and
                  svcs_sum(svcs, clients, "shutdowns_forced") == 0,
                  "%d B: every session ended before its client released the association" % msg)
            a = pair.wait_responder_idle()
            established += 3
            echoed += count
        r = pair.a.services_by_name()["r_sctp"]
        check(r["established"] == established and r["setup_failed"] == 0 and
              r["terminates_sent"] == 0 and r["initiates_refused"] == 0 and
              r["associations"] == len(plan),
              "responder: %d sessions on %d associations, no setup failures, RDMAP "
              "Terminates or refused Initiates (established %d, associations %d)" %
              (established, len(plan), r["established"], r["associations"]))
        check(r["sends_echoed"] == echoed, "responder echoed %d Sends (want %d)" %
              (r["sends_echoed"], echoed))
        check(a["sctp_stream_end_peer_terminate"] == established and
              a["sctp_accepts"] == len(plan) and a["sctp_rx_bad_crc"] == 0,
              "responder endpoint: %d sessions ended by the peer's Terminate, %d associations "
              "accepted" % (a["sctp_stream_end_peer_terminate"], a["sctp_accepts"]))
        pair.a.stop()
    finally:
        pair.cleanup()


def case_reject(args):
    iwd.skip_unless_possible(2)
    pair = SctpPair(args)
    try:
        pair.start()
        # big: Sends larger than the responder's receive buffers (4 MiB): the
        # client refuses the responder's private data after the session Accept
        # and ends the session with the RFC 5043 Terminate.
        clients = [("ok0", "mixed", 4096, 30, 4, 0), ("bad6", "write", 4096, 4, 1, 6),
                   ("big", "send", 8 * MIB, 1, 1)]
        svcs, st, _ = pair.run_clients(clients)
        iwd.check_run(svcs, *clients[0][:5])
        big = svcs["big"]
        check(big["run"] == "failed" and big["bad_private_data"] == 1 and
              big["run_messages"] == 0 and big["established"] == 1,
              "big: session up, responder's private data refused, run failed (bad_private_data "
              "%d)" % big["bad_private_data"])
        bad = svcs["bad6"]
        check(bad["run"] == "failed" and bad["run_connect_error"] == "rejected" and
              bad["setup_failed"] == 1 and bad["run_messages"] == 0,
              "stream 6: session Rejected (run %s, connect error %s, setup_failed %d)" %
              (bad["run"], bad["run_connect_error"], bad["setup_failed"]))
        check_one_association(st, "reject")
        a = pair.wait_responder_idle()
        r = pair.a.services_by_name()["r_sctp"]
        check(r["initiates_refused"] == 1 and r["established"] == 2,
              "responder: 1 Initiate refused (no QP on stream 6), 2 sessions established "
              "(refused %d, established %d)" % (r["initiates_refused"], r["established"]))
        check(a["sctp_stream_end_peer_terminate"] == 2 and a["sctp_ddp_rx_control"] >= 5,
              "responder endpoint: both sessions ended by the client's session Terminate "
              "(peer_terminate %d; control messages received %d: 3 Initiates, 2 Terminates)" %
              (a["sctp_stream_end_peer_terminate"], a["sctp_ddp_rx_control"]))
        pair.a.stop()
    finally:
        pair.cleanup()


def case_impair(args):
    iwd.skip_unless_possible(2)
    # protocol any: only IPv4 frames match, and SCTP is the only IPv4 traffic.
    impairment = """      seed: 11
      tx:
        - {action: drop, protocol: any, min_payload: 1, probability_ppm: 20000}
        - {action: reorder, protocol: any, every: 37, reorder_gap: 3}
        - {action: duplicate, protocol: any, every: 53}
      rx:
        - {action: drop, protocol: any, min_payload: 1, probability_ppm: 10000}
        - {action: duplicate, protocol: any, every: 41}
"""
    pair = SctpPair(args)
    try:
        pair.start()
        clients = [("iw", "write", 65536, 16, 4), ("ir", "read", 65536, 16, 4),
                   ("is", "send", 65536, 16, 4), ("im", "mixed", 4096, 60, 8)]
        svcs, st, t = pair.run_clients(clients, impairment=impairment, timeout=60)
        for c in clients:
            iwd.check_run(svcs, *c)
        check(t["drop_impair_drop"] > 0 and t["impair_reordered"] > 0 and
              t["impair_duplicated"] > 0,
              "the impairment acted: %d dropped, %d reordered, %d duplicated" %
              (t["drop_impair_drop"], t["impair_reordered"], t["impair_duplicated"]))
        check_one_association(st, "impair")
        pair.a.stop()
    finally:
        pair.cleanup()


def case_abort(args):
    iwd.skip_unless_possible(2)
    pair = SctpPair(args)
    try:
        pair.start()
        # Long runs on two streams: B is stopped while they move data.
        services = "".join(client(*c) for c in [("lw", "write", 65536, 1000000, 4),
                                                ("ls", "send", 4096, 10000000, 4)])
        pair.b = iwd.MemifDaemon(args, "sb", iwd.B_IP, "client", pair.sock, services,
                                 tcp_extra=pair.sctp)
        pair.b.start()
        deadline = time.time() + 20
        while True:
            st = sctp_stats(pair.a)
            r = pair.a.services_by_name()["r_sctp"]
            if st["associations_up"] == 1 and r["established"] == 2:
                break
            if time.time() > deadline:
                raise TestFailure("sessions did not come up: %s %s" % (st, r))
            time.sleep(0.1)
        time.sleep(0.5)  # data moving
        check(pair.b.services_by_name()["lw"]["run"] not in ("ok", "failed"),
              "abort: B's runs still going when it is stopped")
        stopped = time.time()
        pair.b.stop()
        # Without an ABORT, A would hold the association (and its two QP
        # slots) until heartbeat failure detection, tens of seconds.
        while True:
            st = sctp_stats(pair.a)
            if st["associations"] == 0 or time.time() - stopped > 3.0:
                break
            time.sleep(0.05)
        took = time.time() - stopped
        log("abort: responder endpoint after B stopped (%.2f s): %s" % (took, {
            k: v for k, v in st.items() if isinstance(v, int) and v and
            ("assoc" in k or "end_" in k)}))
        check(st["associations"] == 0 and took <= 2.5,
              "abort: the responder's association ended %.2f s after B stopped (associations %d)"
              % (took, st["associations"]))
        check(st["sctp_stream_end_association_down"] == 2,
              "abort: both sessions ended as association_down on the responder (%d)" %
              st["sctp_stream_end_association_down"])
        pair.b.cleanup()
        pair.b = None
        # The responder's QP slots are free again: a new client runs.
        svcs, st, _ = pair.run_clients([("after", "write", 4096, 16, 4)])
        iwd.check_run(svcs, "after", "write", 4096, 16, 4)
        pair.a.stop()
    finally:
        pair.cleanup()


CASES = {"sizes": case_sizes, "reject": case_reject, "impair": case_impair, "abort": case_abort}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    try:
        CASES[args.case](args)
    except TestFailure as e:
        log("FAIL: %s" % e)
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
