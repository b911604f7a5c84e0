#!/usr/bin/env python3
"""iwarp-nfsd served over NFS/RDMA between two real iwarpd daemons.

iwarp-nfsd is an application of daemon A (198.18.1.1): NFSv3 and MOUNT over
RPC-over-RDMA v1 (RFC 8166, RFC 8267) on A's data plane. iwarp-nfs runs on
daemon B; the daemons are joined by net_memif in namespaces the test creates
(hugepages and root needed, else SKIP). Checked:

  - files of 0 B, 1 B, 4095 B, 1 MiB + 7 B and 64 MiB (with
    IWARP_NFS_LONG=1, for the long suite: one 1 GiB file and nothing else) put and got back with SHA-256 equal to what was sent
    and to the bytes on the server's disk; mkdir, ls (a directory big enough
    that READDIRPLUS replies go by Reply chunk), stat, rm, rm of a missing
    file (NFS3ERR_NOENT);
  - the chunk kinds the server's counters show: WRITE data pulled by RDMA
    Read (Read chunks), READ data pushed by RDMA Write (Write chunks), long
    directory listings by Reply chunk;
  - iwarp-nfs bench over RDMA prints sane numbers;
  - a killed client: the server frees its connection and serves the next;
  - a server restart in the middle of a put: the client reconnects, the
    COMMIT's new write verifier makes it write the window again, and the
    file is whole;
  - the same put/get over RDMA over SCTP when this iwarpd hosts SCTP.

  nfs_rdma_dataplane.py --iwarpd PATH --iwarpctl PATH --nfsd PATH --nfs PATH

Exit status: 0 pass, 1 fail, 77 skip.
"""

import argparse
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appif_wire_sctp_dataplane as aws  # noqa: E402  (SCTP-enabled app daemons)
import iwarp_dataplane as iwd  # noqa: E402  (memif daemon harness)

from dataplane_integration import TestFailure, check, log  # noqa: E402

RDMA_PORT = 20049
MIB = 1 << 20


def brief(stats):
    """The counters a check message needs (the transport's and the data's)."""
    return {k: v for k, v in stats.items()
            if k.startswith(("rdma_", "bytes_", "io_queue")) and v}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MIB), b""):
            h.update(chunk)
    return h.hexdigest()


class Nfsd:
    """iwarp-nfsd with an rdma: section pointing at daemon A."""

    def __init__(self, args, tmp, export, socket, transport, port):
        self.args = args
        self.tmp = tmp
        self.conf = os.path.join(tmp, "nfsd-%s.yaml" % transport)
        self.state = os.path.join(tmp, "state")
        os.makedirs(self.state, exist_ok=True)
        self.stats_path = os.path.join(tmp, "nfsd.stats")
        with open(self.conf, "w") as f:
            f.write("version: 1\n"
                    "listen: {address: 127.0.0.1, nfs_port: 0, mount_port: 0}\n"
                    "state_dir: %s\n"
                    "stats_file: %s\n"
                    "rpcbind: off\n"
                    "rdma:\n"
                    "  socket: %s\n"
                    "  port: %d\n"
                    "  transport: %s\n"
                    "  credits: 32\n"
                    "exports:\n"
                    "  - path: %s\n"
                    "    clients: [127.0.0.1, 198.18.0.0/15]\n"
                    "    access: rw\n"
                    "    root_squash: false\n" %
                    (self.state, self.stats_path, socket, port, transport, export))
        self.log_path = os.path.join(tmp, "nfsd-%s.log" % transport)
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen([self.args.nfsd, "--config", self.conf], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            t = self.text()
            if "NFS/RDMA port" in t.split("iwarp-nfsd: stopping")[-1]:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise TestFailure("iwarp-nfsd did not start serving NFS/RDMA:\n" + self.text())

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def stats(self):
        """SIGUSR1: the counters as a dict (read from the stats file)."""
        before = os.stat(self.stats_path).st_mtime_ns if os.path.exists(self.stats_path) else 0
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.time() + 10
        while time.time() < deadline:
            if os.path.exists(self.stats_path) and os.stat(self.stats_path).st_mtime_ns != before:
                break
            time.sleep(0.05)
        time.sleep(0.05)
        out = {}
        with open(self.stats_path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1].isdigit():
                    out[parts[0]] = int(parts[1])
        check(out, "SIGUSR1 wrote the counters to %s" % self.stats_path)
        return out

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise TestFailure("iwarp-nfsd did not stop on SIGTERM:\n" + self.text())
        self.log.close()
        t = self.text()
        check(rc == 0, "iwarp-nfsd exit 0 on SIGTERM (rc %d):\n%s" % (rc, t))
        check("runtime error" not in t and "Sanitizer" not in t,
              "no sanitizer reports from iwarp-nfsd:\n" + t)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Client:
    def __init__(self, args, socket, export, transport, port, server=iwd.A_IP):
        self.base = [args.nfs, "--export", export, "--server", server, "--rdma", transport,
                     "--socket", socket, "--port", str(port)]

    def cmd(self, *rest):
        return self.base + list(rest)

    def run(self, *rest, ok=True, timeout=300):
        r = subprocess.run(self.cmd(*rest), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
        what = "iwarp-nfs " + " ".join(rest)
        check("runtime error" not in r.stdout and "Sanitizer" not in r.stdout,
              "%s: no sanitizer reports:\n%s" % (what, r.stdout))
        if ok:
            check(r.returncode == 0, "%s: exit 0 (rc %d):\n%s" % (what, r.returncode, r.stdout))
        return r


def make_file(path, size):
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, 4 * MIB)
            f.write(os.urandom(n))
            left -= n


def case_files(client, export, tmp, sizes, transport):
    client.run("mkdir", "d")
    check(os.path.isdir(os.path.join(export, "d")), "mkdir d made the directory on the server")
    for size in sizes:
        name = "f%d.bin" % size
        local = os.path.join(tmp, name)
        back = os.path.join(tmp, name + ".back")
        make_file(local, size)
        t0 = time.time()
        out = client.run("put", local, "d/" + name).stdout
        t_put = time.time() - t0
        check(("%d bytes" % size) in out, "put %s reports %d bytes: %s" % (name, size, out))
        t0 = time.time()
        out = client.run("get", "d/" + name, back).stdout
        t_get = time.time() - t0
        check(("%d bytes" % size) in out, "get %s reports %d bytes: %s" % (name, size, out))
        sent = sha256_file(local)
        on_disk = sha256_file(os.path.join(export, "d", name))
        got = sha256_file(back)
        log("%s over %s: %d bytes, put %.2f s, get %.2f s; sha256 sent %s disk %s back %s" %
            (name, transport, size, t_put, t_get, sent[:16], on_disk[:16], got[:16]))
        check(sent == on_disk == got, "%s: SHA-256 equal sent / on disk / read back" % name)
        os.unlink(local)
        os.unlink(back)
    out = client.run("ls", "d").stdout
    for size in sizes:
        check(re.search(r"\s%d f%d\.bin$" % (size, size), out, re.M),
              "ls d lists f%d.bin with its size:\n%s" % (size, out))
    out = client.run("stat", "d/f%d.bin" % sizes[-1]).stdout
    check(("size %d" % sizes[-1]) in out and out.startswith("type -"), "stat: %s" % out)
    client.run("rm", "d/f%d.bin" % sizes[0])
    check(not os.path.exists(os.path.join(export, "d", "f%d.bin" % sizes[0])),
          "rm removed the file on the server")
    r = client.run("rm", "d/f%d.bin" % sizes[0], ok=False)
    check(r.returncode == 1 and "NFS3ERR_NOENT" in r.stdout,
          "rm of a missing file: exit 1 naming NFS3ERR_NOENT (rc %d): %s" % (r.returncode, r.stdout))


def case_long_listing(client, export):
    """Enough entries with long names that a READDIRPLUS reply passes the
    4 KiB inline threshold: the client offers a Reply chunk and the server
    must use it."""
    big = os.path.join(export, "many")
    os.makedirs(big)
    names = ["entry-%04d-%s" % (i, "x" * 80) for i in range(300)]
    for n in names:
        open(os.path.join(big, n), "w").close()
    out = client.run("ls", "many").stdout
    listed = [l.split()[-1] for l in out.splitlines() if l.strip()]
    check(sorted(listed) == sorted(names), "ls many lists all %d entries (got %d)" %
          (len(names), len(listed)))


def case_bench(client):
    out = client.run("bench", "--size-mib", "16", "--qd", "4", "--seconds", "1").stdout
    sys.stdout.write(out)
    rows = {l.split()[0]: l.split() for l in out.splitlines()
            if re.match(r"^(seq|rand)-", l)}
    for job in ("seq-write-1M", "seq-read-1M", "rand-read-4K", "rand-write-4K"):
        check(job in rows, "bench prints a %s row:\n%s" % (job, out))
        mibs, iops, p50, p99 = [float(x) for x in rows[job][1:5]]
        check(mibs > 0 and iops > 0 and 0 < p50 <= p99, "bench %s: sane numbers %s" %
              (job, rows[job]))


def case_killed_client(client, nfsd):
    before = nfsd.stats()
    p = subprocess.Popen(client.cmd("bench", "--size-mib", "64", "--qd", "8", "--seconds", "5"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(1.5)
    check(p.poll() is None, "the bench is still running when killed")
    p.kill()
    p.wait()
    # The connection goes at once; I/O jobs already running finish first
    # (a write behind a busy disk may take seconds) and are then freed.
    deadline = time.time() + 60
    s = nfsd.stats()
    while time.time() < deadline and (s.get("rdma_connections", 1) != 0 or
                                      s.get("io_queue_depth", 1) != 0):
        time.sleep(0.2)
        s = nfsd.stats()
    check(s.get("rdma_connections") == 0 and
          s["rdma_disconnects"] > before.get("rdma_disconnects", 0),
          "the killed client's connection was freed: %s" % brief(s))
    check(s["io_queue_depth"] == 0, "no I/O job left behind: %s" % brief(s))
    client.run("ls")  # the next client is served


def case_restart(args, client, nfsd, export, tmp):
    """SIGTERM and restart iwarp-nfsd while a 192 MiB put runs."""
    local = os.path.join(tmp, "restart.bin")
    make_file(local, 192 * MIB)
    p = subprocess.Popen(client.cmd("put", local, "restart.bin"), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    target = os.path.join(export, "restart.bin")
    deadline = time.time() + 60
    while time.time() < deadline and (not os.path.exists(target) or
                                      os.path.getsize(target) < 8 * MIB):
        time.sleep(0.02)
    check(p.poll() is None, "the put is still running when the server restarts")
    nfsd.stop()
    time.sleep(0.5)
    nfsd.start()
    out, _ = p.communicate(timeout=300)
    sys.stdout.write(out)
    check(p.returncode == 0, "put across the restart: exit 0 (rc %d):\n%s" % (p.returncode, out))
    check("write verifier changed" in out,
          "the client noticed the new write verifier at COMMIT and wrote again:\n" + out)
    check(sha256_file(target) == sha256_file(local),
          "the file written across the restart is whole (SHA-256 equal)")
    s = nfsd.stats()
    check(s["rdma_connections_total"] >= 1 and s["bytes_written"] >= 64 * MIB,
          "the client reconnected to the new server and wrote the window again: %s" % brief(s))
    os.unlink(local)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    p.add_argument("--nfsd", required=True)
    p.add_argument("--nfs", required=True)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    iwd.skip_unless_possible(2)
    tmp = tempfile.mkdtemp(prefix="iwarp_nfsrdma_")
    export = os.path.join(tmp, "export")
    os.makedirs(export)
    t0 = time.time()
    nfsd = None
    try:
        memif = os.path.join(tmp, "memif.sock")
        a = aws.SctpAppDaemon(args, "na", iwd.A_IP, "server", memif, "")
        b = aws.SctpAppDaemon(args, "nb", iwd.B_IP, "client", memif, "")
        sctp = aws.sctp_configurable(args, a)
        if not sctp:
            a.sctp_extra = b.sctp_extra = ""
        try:
            a.start()
            b.start()
            nfsd = Nfsd(args, tmp, export, a.socket(), "tcp", RDMA_PORT)
            nfsd.start()
            client = Client(args, b.socket(), export, "tcp", RDMA_PORT)
            # IWARP_NFS_LONG=1 (the long suite): the 1 GiB file only; the
            # default run has every other case.
            long_run = os.environ.get("IWARP_NFS_LONG") == "1"
            sizes = [1024 * MIB] if long_run else [0, 1, 4095, MIB + 7, 64 * MIB]
            case_files(client, export, tmp, sizes, "iWARP")
            if not long_run:
                case_long_listing(client, export)
            s = nfsd.stats()
            put_bytes = sum(sizes)
            check(s["rdma_read_chunks"] > 0 and s["rdma_read_bytes"] >= put_bytes - MIB,
                  "WRITE data came by RDMA Read of Read chunks (%d bytes put): %s" % (put_bytes, brief(s)))
            check(s["rdma_write_chunks"] > 0 and s["rdma_written_bytes"] >= put_bytes - MIB,
                  "READ data went by RDMA Write into Write chunks: %s" % brief(s))
            check(long_run or s["rdma_reply_chunks"] > 0,
                  "the long listing went by Reply chunk: %s" % brief(s))
            check(s["bytes_written"] >= put_bytes and s["bytes_read"] >= put_bytes,
                  "the NFS counters saw the data: %s" % brief(s))
            # Every client so far left between calls: no error of any kind.
            check(not any(k.startswith("rdma_error_") and v for k, v in s.items()),
                  "no RDMA transport errors at the server: %s" % brief(s))
            if long_run:
                nfsd.stop()
                nfsd = None
                b.stop()
                a.stop()
                log("PASS (%.1f s)" % (time.time() - t0))
                return 0
            case_bench(client)
            case_killed_client(client, nfsd)
            case_restart(args, client, nfsd, export, tmp)
            nfsd.stop()
            nfsd = None
            if sctp:
                nfsd = Nfsd(args, tmp, export, a.socket(), "sctp", RDMA_PORT + 1)
                nfsd.start()
                sc = Client(args, b.socket(), export, "sctp", RDMA_PORT + 1)
                local = os.path.join(tmp, "sctp.bin")
                make_file(local, 4 * MIB + 5)
                sc.run("put", local, "sctp.bin")
                sc.run("get", "sctp.bin", local + ".back")
                check(sha256_file(local) == sha256_file(local + ".back") ==
                      sha256_file(os.path.join(export, "sctp.bin")),
                      "over RDMA over SCTP: SHA-256 equal sent / on disk / read back")
                s = nfsd.stats()
                check(s["rdma_read_chunks"] > 0 and s["rdma_write_chunks"] > 0,
                      "over SCTP: Read and Write chunks used: %s" % brief(s))
                nfsd.stop()
                nfsd = None
            else:
                log("SKIP (part): no RDMA over SCTP in this iwarpd; the SCTP case did not run")
            b.stop()
            a.stop()
        finally:
            if nfsd is not None:
                nfsd.kill()
            b.cleanup()
            a.cleanup()
    except TestFailure as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log("PASS (%.1f s)" % (time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
