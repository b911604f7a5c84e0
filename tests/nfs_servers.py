"""NFSv3 servers in private network namespaces, shared by tests/nfs_ganesha.py
(the iwarp-nfs checks against iwarp-nfsd and nfs-ganesha) and
tools/nfs_bench.py (iwarp-nfs bench against both).

  Netns        a network namespace the caller creates (loopback up), with an
               optional veth pair to a second one; deleted by delete().
  IwarpNfsd    iwarp-nfsd with a YAML file exporting one directory
               (rpcbind: off: the namespace's rpcbind belongs to ganesha and
               the client is given the ports).
  Ganesha      rpcbind and ganesha.nfsd (FSAL VFS, NFSv3 over TCP only, no
               NLM/RQUOTA, Graceless) in the namespace, both in a private
               mount namespace with a tmpfs over /run, so that rpcbind's
               socket, lock and warm-start files never reach the host's /run
               (rpcbind keeps them at fixed paths there).
  IwarpNfs     the iwarp-nfs command line for one server (address, ports,
               export path) run in a namespace.
  IwarpNfsdRdma / IwarpNfsRdma
               the same over RPC-over-RDMA (iWARP) through iwarpd: the
               server an application of one daemon (its rdma: section names
               the daemon's application socket), the client of another.

Every process is stopped by its own PID; each server's log is kept in its
work directory. Python standard library only.
"""

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def sh(*cmd, check=True, timeout=60):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError("%s: rc %d: %s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def which(name):
    """shutil.which, also looking in the sbin directories (rpcbind lives in
    /usr/sbin, which a non-login PATH may lack)."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")


def ganesha_missing():
    """Why ganesha cannot run here (a sentence), or None."""
    for tool in ("ganesha.nfsd", "rpcbind", "unshare", "ip", "ss"):
        if which(tool) is None:
            return "%s not installed (Debian: nfs-ganesha nfs-ganesha-vfs rpcbind)" % tool
    if not glob.glob("/usr/lib/*/ganesha/libfsalvfs.so") + glob.glob("/usr/lib*/ganesha/libfsalvfs.so"):
        return "ganesha's VFS FSAL (libfsalvfs.so) not installed (Debian: nfs-ganesha-vfs)"
    return None


def cpu_seconds(pid):
    """utime + stime of a process (all its threads) from /proc/PID/stat, in
    seconds."""
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()  # from field 3, the state
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def stop_pid(proc_or_pid, name, timeout=15.0):
    """SIGTERM to one process we started, SIGKILL after `timeout` seconds.
    `proc_or_pid`: a Popen (reaped here) or the PID of a process that is not
    our child (checked by its /proc/PID/comm, so that a reused PID is never
    signalled)."""
    if isinstance(proc_or_pid, subprocess.Popen):
        p = proc_or_pid
        if p.poll() is not None:
            return p.returncode
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.wait(10)
    pid = proc_or_pid

    def alive():
        try:
            with open("/proc/%d/comm" % pid) as f:
                return f.read().strip() == name
        except OSError:
            return False

    if not alive():
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive():
        os.kill(pid, signal.SIGKILL)
    return None


class Netns:
    """A network namespace with loopback up."""

    def __init__(self, name):
        self.name = name
        self.created = False

    def create(self):
        sh("ip", "netns", "add", self.name)
        self.created = True
        sh("ip", "netns", "exec", self.name, "ip", "link", "set", "lo", "up")
        return self

    def prefix(self):
        return ["ip", "netns", "exec", self.name]

    def veth_to(self, other, dev, other_dev, ip, other_ip, prefixlen=24):
        """A veth pair: `dev` (address `ip`) here, `other_dev` in `other`."""
        sh("ip", "link", "add", dev, "netns", self.name, "type", "veth", "peer", "name", other_dev,
           "netns", other.name)
        for ns, d, a in ((self, dev, ip), (other, other_dev, other_ip)):
            sh(*ns.prefix(), "ip", "addr", "add", "%s/%d" % (a, prefixlen), "dev", d)
            sh(*ns.prefix(), "ip", "link", "set", d, "up")

    def delete(self):
        if self.created:
            sh("ip", "netns", "del", self.name, check=False)
            self.created = False


def wait_listening(ns, port, proc, what, log, timeout=30.0):
    """Until something listens on TCP `port` in `ns`; raises with the log's
    tail if `proc` exits first or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("%s exited (rc %s) before listening on %d:\n%s" %
                               (what, proc.returncode, port, tail(log)))
        r = sh(*ns.prefix(), "ss", "-Hltn", "sport = :%d" % port, check=False)
        if r.stdout.strip():
            return
        time.sleep(0.1)
    raise RuntimeError("%s: nothing listens on %d after %.0f s:\n%s" % (what, port, timeout, tail(log)))


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log %s)" % path


class IwarpNfsd:
    """iwarp-nfsd exporting `export_dir` to `clients` (root not squashed)."""

    name = "iwarp-nfsd"

    def __init__(self, exe, ns, workdir, export_dir, address="127.0.0.1", nfs_port=12049,
                 mount_port=12048, clients=("127.0.0.1",), io_threads=4, cpu_prefix=()):
        self.exe, self.ns, self.workdir, self.export_dir = exe, ns, workdir, export_dir
        self.address, self.nfs_port, self.mount_port = address, nfs_port, mount_port
        self.clients, self.io_threads, self.cpu_prefix = list(clients), io_threads, list(cpu_prefix)
        self.log = os.path.join(workdir, "iwarp-nfsd.log")
        self.proc = None

    def config_text(self):
        return ("version: 1\n"
                "listen: {address: %s, nfs_port: %d, mount_port: %d}\n"
                "state_dir: %s\n"
                "io_threads: %d\n"
                "rpcbind: off\n"
                "exports:\n"
                "  - {path: %s, id: 1, clients: [%s], access: rw, root_squash: false}\n" %
                (self.address, self.nfs_port, self.mount_port, os.path.join(self.workdir, "state"),
                 self.io_threads, self.export_dir, ", ".join(self.clients)))

    def start(self):
        os.makedirs(os.path.join(self.workdir, "state"), exist_ok=True)
        conf = os.path.join(self.workdir, "nfsd.yaml")
        with open(conf, "w") as f:
            f.write(self.config_text())
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(self.ns.prefix() + self.cpu_prefix + [self.exe, "--config", conf],
                                         stdout=log, stderr=subprocess.STDOUT)
        wait_listening(self.ns, self.nfs_port, self.proc, self.name, self.log)
        wait_listening(self.ns, self.mount_port, self.proc, self.name, self.log)
        return self

    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc is not None:
            stop_pid(self.proc, "iwarp-nfsd")
            self.proc = None


class IwarpNfsdRdma(IwarpNfsd):
    """iwarp-nfsd serving NFS/RDMA (iWARP on MPA/TCP) on `rdma_port` as an
    application of the iwarpd whose application socket is `socket`; its TCP
    listeners stay on 127.0.0.1 with ephemeral ports."""

    def __init__(self, exe, workdir, export_dir, socket, rdma_port=20049,
                 clients=("127.0.0.1", "198.18.0.0/15"), io_threads=4, cpu_prefix=()):
        super().__init__(exe, None, workdir, export_dir, clients=clients, io_threads=io_threads,
                         cpu_prefix=cpu_prefix)
        self.socket, self.rdma_port = socket, rdma_port

    def config_text(self):
        return ("version: 1\n"
                "listen: {address: 127.0.0.1, nfs_port: 0, mount_port: 0}\n"
                "state_dir: %s\n"
                "io_threads: %d\n"
                "rpcbind: off\n"
                "rdma:\n"
                "  socket: %s\n"
                "  port: %d\n"
                "  transport: tcp\n"
                "exports:\n"
                "  - {path: %s, id: 1, clients: [%s], access: rw, root_squash: false}\n" %
                (os.path.join(self.workdir, "state"), self.io_threads, self.socket, self.rdma_port,
                 self.export_dir, ", ".join(self.clients)))

    def start(self, timeout=30.0):
        os.makedirs(os.path.join(self.workdir, "state"), exist_ok=True)
        conf = os.path.join(self.workdir, "nfsd.yaml")
        with open(conf, "w") as f:
            f.write(self.config_text())
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(self.cpu_prefix + [self.exe, "--config", conf],
                                         stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "NFS/RDMA port" in tail(self.log):
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("iwarp-nfsd did not start serving NFS/RDMA:\n" + tail(self.log))


class Ganesha:
    """rpcbind + ganesha.nfsd exporting `export_dir` (Path and Pseudo) over
    NFSv3/TCP, sec=sys, RW, no root squash; and each (path, bytes) of
    `limited_exports` alike, with MaxRead and MaxWrite (FSINFO rtmax and
    wtmax) of that many bytes."""

    name = "ganesha"

    def __init__(self, ns, workdir, export_dir, nfs_port=2049, mount_port=20048, cpu_prefix=(),
                 limited_exports=()):
        self.ns, self.workdir, self.export_dir = ns, workdir, export_dir
        self.limited_exports = list(limited_exports)
        self.nfs_port, self.mount_port, self.cpu_prefix = nfs_port, mount_port, list(cpu_prefix)
        self.log = os.path.join(workdir, "ganesha.log")
        self.conf = os.path.join(workdir, "ganesha.conf")
        self.rpcbind_pidfile = os.path.join(workdir, "rpcbind.pid")
        self.proc = None

    def config_text(self):
        # Graceless: no grace period after start (it would hold NFSv4 state
        # only, but it also keeps the start-up log free of waits). The fs
        # recovery backend writes under the work directory, never in
        # /var/lib/nfs/ganesha.
        exports = [(self.export_dir, "")] + [
            (path, "  MaxRead = %d;\n  MaxWrite = %d;\n" % (limit, limit))
            for path, limit in self.limited_exports]
        blocks = "".join("""EXPORT {
  Export_Id = %d;
  Path = "%s";
  Pseudo = "%s";
  Protocols = 3;
  Transports = TCP;
  SecType = sys;
  Access_Type = RW;
  Squash = No_Root_Squash;
%s  FSAL { Name = VFS; }
}
""" % (i + 1, path, path, extra) for i, (path, extra) in enumerate(exports))
        return """NFS_CORE_PARAM {
  Protocols = 3;
  NFS_Port = %(nfs)d;
  MNT_Port = %(mnt)d;
  Enable_NLM = false;
  Enable_RQUOTA = false;
  Enable_UDP = false;
}
NFS_KRB5 {
  Active_krb5 = false;
}
NFSv4 {
  Graceless = true;
  RecoveryBackend = fs;
  RecoveryRoot = "%(work)s/recovery";
}
""" % {"nfs": self.nfs_port, "mnt": self.mount_port, "work": self.workdir} + blocks

    def start(self):
        os.makedirs(os.path.join(self.workdir, "recovery"), exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(self.config_text())
        # One shell in a private mount namespace: a tmpfs over /run, rpcbind
        # in the background (its PID in a file), then exec ganesha.nfsd, so
        # that the Popen's PID is ganesha's (ip netns exec, taskset, unshare
        # and sh all exec). rpcbind drops to user _rpc, which must own
        # /run/rpcbind for its warm-start files.
        script = """set -e
mount -t tmpfs -o mode=0755 nfs-run /run
mkdir -p /run/rpcbind /run/ganesha
chown _rpc /run/rpcbind 2>/dev/null || true
%(rpcbind)s -w -f &
echo $! > %(rpcpid)s
i=0
while [ ! -S /run/rpcbind.sock ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
exec %(ganesha)s -F -f %(conf)s -L %(log)s -p %(work)s/ganesha.pid
""" % {"rpcbind": which("rpcbind"), "rpcpid": self.rpcbind_pidfile, "ganesha": which("ganesha.nfsd"),
       "conf": self.conf, "log": self.log, "work": self.workdir}
        with open(os.path.join(self.workdir, "ganesha.stderr"), "w") as err:
            self.proc = subprocess.Popen(self.ns.prefix() + self.cpu_prefix +
                                         ["unshare", "--mount", "--propagation", "private",
                                          "sh", "-c", script],
                                         stdout=err, stderr=subprocess.STDOUT)
        wait_listening(self.ns, self.nfs_port, self.proc, self.name, self.log)
        wait_listening(self.ns, self.mount_port, self.proc, self.name, self.log)
        try:
            with open(os.path.join(self.workdir, "ganesha.pid")) as f:
                written = int(f.read().strip())
        except (OSError, ValueError):
            written = self.proc.pid
        if written != self.proc.pid:
            raise RuntimeError("ganesha.nfsd runs as PID %d, not the started %d" % (written, self.proc.pid))
        return self

    def pid(self):
        return self.proc.pid

    def rpcbind_pid(self):
        try:
            with open(self.rpcbind_pidfile) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def stop(self):
        if self.proc is not None:
            stop_pid(self.proc, "ganesha.nfsd", timeout=20)
            self.proc = None
        pid = self.rpcbind_pid()
        if pid is not None:
            stop_pid(pid, "rpcbind")


class IwarpNfs:
    """iwarp-nfs against one server, run in `ns`."""

    def __init__(self, exe, ns, server_ip, nfs_port, mount_port, export, cpu_prefix=()):
        self.base = ns.prefix() + list(cpu_prefix) + [
            exe, "--server", server_ip, "--port", str(nfs_port), "--mount-port", str(mount_port),
            "--export", export]

    def run(self, *args, timeout=120):
        """(rc, stdout, stderr) of one command."""
        r = subprocess.run(self.base + list(args), capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr

    def run_measured(self, *args, timeout=600):
        """As run(), plus the process's CPU seconds (utime + stime from
        /proc/PID/stat, read after it exited and before it is reaped:
        waitid with WNOWAIT) and its wall-clock seconds."""
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            t0 = time.monotonic()
            p = subprocess.Popen(self.base + list(args), stdout=out, stderr=err)
            deadline = t0 + timeout
            while True:
                info = os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
                if info is not None:
                    break
                if time.monotonic() > deadline:
                    p.kill()
                    p.wait()
                    raise RuntimeError("iwarp-nfs %s: no answer after %d s" % (" ".join(args), timeout))
                time.sleep(0.01)
            wall = time.monotonic() - t0
            cpu = cpu_seconds(p.pid)
            rc = p.wait()
            out.seek(0)
            err.seek(0)
            return rc, out.read(), err.read(), cpu, wall


class IwarpNfsRdma(IwarpNfs):
    """iwarp-nfs over RPC-over-RDMA (iWARP) through the iwarpd whose
    application socket is `socket`, to the server at `server_ip`:`port`."""

    def __init__(self, exe, socket, server_ip, port, export, cpu_prefix=()):
        self.base = list(cpu_prefix) + [exe, "--export", export, "--server", server_ip, "--rdma", "tcp",
                                        "--socket", socket, "--port", str(port)]


def parse_bench(out):
    """iwarp-nfs bench's table: {job: {mib_s, iops, p50_us, p99_us, p999_us,
    max_us, ops}}."""
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 8 and f[0] in ("seq-write-1M", "seq-read-1M", "rand-read-4K", "rand-write-4K"):
            rows[f[0]] = dict(zip(("mib_s", "iops", "p50_us", "p99_us", "p999_us", "max_us"),
                                  map(float, f[1:7])), ops=int(f[7]))
    return rows
