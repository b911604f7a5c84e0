#!/usr/bin/env python3
"""NFS benchmark: `iwarp-nfs bench` against iwarp-nfsd and against the
reference nfs-ganesha (FSAL VFS), both over kernel TCP on a veth pair between
two private namespaces, in one run, alternating.

The servers run in namespace S (198.18.7.1), the client in namespace C
(198.18.7.2). Each repeat runs every column once, in turn (iwarp-nfsd,
ganesha, iwarp-nfsd, ...); each column's server is started with an empty
export directory, measured, and stopped. The table shows medians over the
repeats:

  seq-write 1 MiB / seq-read 1 MiB    MiB/s (iwarp-nfs bench's rows: --size-mib
                                      of 1 MiB UNSTABLE WRITEs then COMMIT,
                                      then the same bytes read back, --qd in
                                      flight)
  rand-read 4 KiB / rand-write 4 KiB  IOPS and latency percentiles (p50, p99,
                                      p99.9, as iwarp-nfs prints them), for
                                      --seconds each
  server / client CPU s               utime + stime of the server process (all
                                      its threads; ganesha.nfsd, not its
                                      rpcbind) and of the iwarp-nfs process
                                      over the whole bench run, from
                                      /proc/PID/stat
  busy cores                          (server + client CPU s) / wall s
  MiB/s per busy core                 all bytes the run moved (both sequential
                                      passes and every 4 KiB operation) per
                                      CPU second of server + client, i.e. the
                                      run's MiB/s over its busy cores. The
                                      kernel's softirq work for the veth is
                                      charged to whichever process it
                                      interrupted, or to neither.

Processes are pinned as in tools/rpc_bench.py (server side CPU 1, client side
CPU 0) unless --no-pin. Both servers export a directory on the same file
system (--dir, default /tmp); COMMIT makes both fsync.

Adding a column: write a function like run_iwarp_nfsd_tcp(args, env) that
sets its server up, runs measure(args, env, client, server_pid) and tears it
down, returning measure()'s dict, and add it to COLUMNS. (iwarp-nfsd over
RPC-over-RDMA through two iwarpd daemons would be one; it needs iwarp-nfs and
iwarp-nfsd on the RDMA transport, which is not here yet.)

  nfs_bench.py --nfsd PATH --nfs PATH [--size-mib N] [--seconds S] [--qd N]
               [--repeat N] [--dir DIR] [--no-pin]
Root, nfs-ganesha and rpcbind needed (else a skip reason and exit 77).
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import nfs_servers as ns  # noqa: E402

SKIP = 77
MIB = 1 << 20
SERVER_IP, CLIENT_IP = "198.18.7.1", "198.18.7.2"
SERVER_CPU, CLIENT_CPU = 1, 0
JOBS = ("seq-write-1M", "seq-read-1M", "rand-read-4K", "rand-write-4K")
JOB_BYTES = {"seq-write-1M": MIB, "seq-read-1M": MIB, "rand-read-4K": 4096, "rand-write-4K": 4096}


class Env:
    """The namespaces and scratch directory every column shares."""

    def __init__(self, args):
        self.server_ns = ns.Netns("nfsb_s%d" % os.getpid())
        self.client_ns = ns.Netns("nfsb_c%d" % os.getpid())
        self.work = tempfile.mkdtemp(prefix="nfs_bench.", dir=args.dir)
        self.runs = 0

    def create(self):
        self.server_ns.create()
        self.client_ns.create()
        self.server_ns.veth_to(self.client_ns, "nfsb_s", "nfsb_c", SERVER_IP, CLIENT_IP)
        return self

    def fresh_dirs(self, name):
        """(work directory, export directory) for one server run."""
        self.runs += 1
        d = os.path.join(self.work, "%s.%d" % (name, self.runs))
        os.makedirs(os.path.join(d, "export"))
        return d, os.path.join(d, "export")

    def cleanup(self):
        self.client_ns.delete()
        self.server_ns.delete()
        shutil.rmtree(self.work, ignore_errors=True)


def pin(args, cpu):
    return [] if args.no_pin else ["taskset", "-c", str(cpu)]


def measure(args, env, client, server_pid):
    """One `iwarp-nfs bench` run; the result dict every column returns:
    rows (parse_bench's), server_cpu_s, client_cpu_s, wall_s, mib (all bytes
    moved, in MiB)."""
    cpu0 = ns.cpu_seconds(server_pid)
    rc, out, err, client_cpu, wall = client.run_measured(
        "bench", "--size-mib", str(args.size_mib), "--seconds", str(args.seconds), "--qd", str(args.qd))
    server_cpu = ns.cpu_seconds(server_pid) - cpu0
    rows = ns.parse_bench(out)
    if rc != 0 or sorted(rows) != sorted(JOBS):
        raise RuntimeError("iwarp-nfs bench failed (rc %d):\n%s%s" % (rc, out, err))
    mib = sum(rows[j]["ops"] * JOB_BYTES[j] for j in JOBS) / MIB
    return {"rows": rows, "server_cpu_s": server_cpu, "client_cpu_s": client_cpu, "wall_s": wall,
            "mib": mib}


def run_iwarp_nfsd_tcp(args, env):
    work, export = env.fresh_dirs("iwarp-nfsd")
    server = ns.IwarpNfsd(args.nfsd, env.server_ns, work, export, address=SERVER_IP, nfs_port=12049,
                          mount_port=12048, clients=[CLIENT_IP], cpu_prefix=pin(args, SERVER_CPU))
    try:
        server.start()
        client = ns.IwarpNfs(args.nfs, env.client_ns, SERVER_IP, 12049, 12048, export,
                             cpu_prefix=pin(args, CLIENT_CPU))
        return measure(args, env, client, server.pid())
    finally:
        server.stop()


def run_ganesha_tcp(args, env):
    work, export = env.fresh_dirs("ganesha")
    server = ns.Ganesha(env.server_ns, work, export, nfs_port=2049, mount_port=20048,
                        cpu_prefix=pin(args, SERVER_CPU))
    try:
        server.start()
        client = ns.IwarpNfs(args.nfs, env.client_ns, SERVER_IP, 2049, 20048, export,
                             cpu_prefix=pin(args, CLIENT_CPU))
        return measure(args, env, client, server.pid())
    finally:
        server.stop()


# (column title, function(args, env) -> measure()'s dict), in the order each
# repeat runs them.
COLUMNS = [
    ("iwarp-nfsd TCP", run_iwarp_nfsd_tcp),
    ("ganesha TCP", run_ganesha_tcp),
]


def median_result(results):
    """The per-field median of several measure() dicts."""
    med = {"rows": {}}
    for job in JOBS:
        med["rows"][job] = {k: statistics.median(r["rows"][job][k] for r in results)
                            for k in results[0]["rows"][job]}
    for k in ("server_cpu_s", "client_cpu_s", "wall_s", "mib"):
        med[k] = statistics.median(r[k] for r in results)
    med["busy_cores"] = statistics.median((r["server_cpu_s"] + r["client_cpu_s"]) / r["wall_s"]
                                          for r in results)
    med["mib_per_core"] = statistics.median(r["mib"] / (r["server_cpu_s"] + r["client_cpu_s"])
                                            for r in results)
    return med


def table_lines(meds):
    """(label, value per column, format) of every row."""
    lines = [
        ("seq-write 1 MiB (MiB/s)", lambda m: m["rows"]["seq-write-1M"]["mib_s"], "%.1f"),
        ("seq-read 1 MiB (MiB/s)", lambda m: m["rows"]["seq-read-1M"]["mib_s"], "%.1f"),
    ]
    for job, title in (("rand-read-4K", "rand-read 4 KiB"), ("rand-write-4K", "rand-write 4 KiB")):
        lines.append(("%s IOPS" % title, lambda m, j=job: m["rows"][j]["iops"], "%.0f"))
        for key, name in (("p50_us", "p50"), ("p99_us", "p99"), ("p999_us", "p99.9")):
            lines.append(("  %s (us)" % name, lambda m, j=job, k=key: m["rows"][j][k], "%.1f"))
    lines += [
        ("bench wall time (s)", lambda m: m["wall_s"], "%.2f"),
        ("MiB moved", lambda m: m["mib"], "%.0f"),
        ("server CPU (s)", lambda m: m["server_cpu_s"], "%.2f"),
        ("client CPU (s)", lambda m: m["client_cpu_s"], "%.2f"),
        ("busy cores (server+client)", lambda m: m["busy_cores"], "%.2f"),
        ("MiB/s per busy core", lambda m: m["mib_per_core"], "%.1f"),
    ]
    return [(label, [fn(m) for m in meds], fmt) for label, fn, fmt in lines]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nfsd", required=True, help="iwarp-nfsd")
    p.add_argument("--nfs", required=True, help="iwarp-nfs")
    p.add_argument("--size-mib", type=int, default=256, help="bench file size (sequential passes)")
    p.add_argument("--seconds", type=float, default=3, help="each random 4 KiB job")
    p.add_argument("--qd", type=int, default=8, help="calls in flight")
    p.add_argument("--repeat", type=int, default=3, help="runs of each column (medians)")
    p.add_argument("--dir", default="/tmp", help="where the export directories are made")
    p.add_argument("--no-pin", action="store_true",
                   help="leave the processes to the scheduler (default: servers on CPU 1, client on CPU 0)")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (network namespaces, veth devices)")
        return SKIP
    reason = ns.ganesha_missing()
    if reason:
        print("SKIP: " + reason)
        return SKIP
    if not args.no_pin and os.cpu_count() < 2:
        args.no_pin = True
    t0 = time.time()
    env = Env(args)
    results = {title: [] for title, _ in COLUMNS}
    try:
        env.create()
        for i in range(args.repeat):
            for title, run in COLUMNS:
                r = run(args, env)
                results[title].append(r)
                print("repeat %d %-16s seq-write %7.1f seq-read %7.1f MiB/s, rand-read %6.0f "
                      "rand-write %6.0f IOPS, CPU server %.2f client %.2f s" %
                      (i + 1, title, r["rows"]["seq-write-1M"]["mib_s"], r["rows"]["seq-read-1M"]["mib_s"],
                       r["rows"]["rand-read-4K"]["iops"], r["rows"]["rand-write-4K"]["iops"],
                       r["server_cpu_s"], r["client_cpu_s"]), flush=True)
    finally:
        env.cleanup()
    meds = [median_result(results[title]) for title, _ in COLUMNS]
    print()
    print("NFSv3 over kernel TCP (veth between two namespaces), iwarp-nfs bench --size-mib %d "
          "--seconds %g --qd %d; medians of %d alternated runs; %s; export on %s; load average %s; "
          "%.0f s" % (args.size_mib, args.seconds, args.qd, args.repeat,
                      "unpinned" if args.no_pin else "servers on CPU 1, client on CPU 0", args.dir,
                      " ".join(open("/proc/loadavg").read().split()[:3]), time.time() - t0))
    titles = [title for title, _ in COLUMNS]
    ratio = len(COLUMNS) == 2
    print("%-30s" % "" + "".join("%16s" % t for t in titles) + ("%10s" % "ratio" if ratio else ""))
    for label, values, fmt in table_lines(meds):
        cells = "".join("%16s" % (fmt % v) for v in values)
        if ratio:
            cells += "%10s" % ("%.2f" % (values[0] / values[1]) if values[1] else "-")
        print("%-30s%s" % (label, cells))
    if ratio:
        print("ratio: %s / %s" % (titles[0], titles[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
