#!/usr/bin/env python3
"""iwarp-tcp-baseline, the kernel TCP side of tools/iwarp_perf_bench.py,
tools/iwarp_bench.py and tools/tcp_bench.py, over
127.0.0.1: the bulk writer's bytes all reach the sink (the sink's count is
checked by the writer and here), the ping-pong's answers are its messages,
the servers outlive clients that go away mid-stream, and bad arguments and
refused connections end with their exit codes and a reason; against a peer
that answers wrongly (a short byte count, a changed echo) every client mode
fails with the reason.

  tcp_baseline_test.py PATH_TO_IWARP_TCP_BASELINE
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

FAILURES = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        FAILURES.append(what)


def free_port_pair():
    """A port P with P and P+1 free on 127.0.0.1 (bound and released here)."""
    for _ in range(100):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free pair of ports on 127.0.0.1")


def run(tool, *argv, timeout=60):
    return subprocess.run([tool] + [str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    tool = sys.argv[1]
    port = free_port_pair()
    server = subprocess.Popen([tool, "serve", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        ready = server.stdout.readline().strip()
        check(ready == "ready", "serve prints ready once it listens (%r)" % ready)

        r = run(tool, "bulk", "127.0.0.1", port, 4096, 2500)
        check(r.returncode == 0, "bulk 4096 x 2500 ends with 0 (%s)" % r.stderr.strip())
        if r.returncode == 0:
            out = json.loads(r.stdout)
            check(out["bytes"] == 4096 * 2500,
                  "the sink read all 10240000 bytes (%d)" % out["bytes"])
            check(out["secs"] > 0, "bulk reports a positive time (%f s)" % out["secs"])

        r = run(tool, "bulk", "127.0.0.1", port, 64, 5000, "nodelay")
        check(r.returncode == 0 and json.loads(r.stdout)["bytes"] == 64 * 5000,
              "bulk 64 x 5000 with TCP_NODELAY: every byte read (%s%s)" % (r.stdout.strip(),
                                                                          r.stderr.strip()))

        r = run(tool, "pingpong", "127.0.0.1", port + 1, 500)
        check(r.returncode == 0, "pingpong 500 ends with 0 (%s)" % r.stderr.strip())
        if r.returncode == 0:
            out = json.loads(r.stdout)
            check(out["count"] == 500, "500 round trips measured (%d)" % out["count"])
            check(0 < out["min_us"] <= out["median_us"],
                  "0 < min <= median (%s)" % r.stdout.strip())

        r = run(tool, "echo", "127.0.0.1", port + 1, 20000, 16)
        check(r.returncode == 0,
              "echo 20000 with 16 outstanding ends with 0 (%s)" % r.stderr.strip())
        if r.returncode == 0:
            out = json.loads(r.stdout)
            check(out["count"] == 20000 and out["secs"] > 0,
                  "20000 echoes checked (%s)" % r.stdout.strip())

        r = run(tool, "stream", "127.0.0.1", port, 65536, 200)
        check(r.returncode == 0 and json.loads(r.stdout)["secs"] > 0,
              "stream 64 KiB x 200 reads to the sink's FIN (%s%s)" % (r.stdout.strip(),
                                                                     r.stderr.strip()))
        r = run(tool, "rr", "127.0.0.1", port + 1, 1)
        if r.returncode == 0:
            out = json.loads(r.stdout)
        check(r.returncode == 0 and out["transactions"] > 0 and 1.0 <= out["secs"] < 3.0,
              "rr for 1 s: transactions checked and counted (%s%s)" % (r.stdout.strip(),
                                                                      r.stderr.strip()))

        # A client that goes away mid-stream: the servers stay up for the next.
        for mode, argv in (("bulk", ["bulk", "127.0.0.1", port, 1 << 20, 100000]),
                           ("echo", ["echo", "127.0.0.1", port + 1, 10 ** 9, 64]),
                           ("pingpong", ["pingpong", "127.0.0.1", port + 1, 10 ** 9])):
            c = subprocess.Popen([tool] + [str(a) for a in argv], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            c.send_signal(signal.SIGKILL)
            c.wait()
            time.sleep(0.2)
            check(server.poll() is None, "serve outlives a %s client killed mid-stream" % mode)
        r = run(tool, "pingpong", "127.0.0.1", port + 1, 50)
        check(r.returncode == 0, "the echo answers a new client after that (%s)" % r.stderr.strip())
        r = run(tool, "bulk", "127.0.0.1", port, 1000, 10)
        check(r.returncode == 0 and json.loads(r.stdout)["bytes"] == 10000,
              "the sink counts a new client's bytes after that (%s%s)" % (r.stdout.strip(),
                                                                         r.stderr.strip()))
    finally:
        server.kill()
        server.wait()

    # A peer that answers wrongly: every client mode exits 1 and says so.
    # The fake listens on 127.0.0.1: a sink that reports one byte fewer than
    # it read, and an echo that flips the first byte of every message.
    fake = socket.socket()
    fake.bind(("127.0.0.1", 0))
    fake.listen(8)
    fport = fake.getsockname()[1]

    def serve_fake(mode):
        c, _ = fake.accept()
        with c:
            if mode == "sink":
                total = 0
                while True:
                    d = c.recv(65536)
                    if not d:
                        break
                    total += len(d)
                c.sendall((total - 1).to_bytes(8, "big"))
                return
            while True:
                d = b""
                while len(d) < 64:
                    more = c.recv(64 - len(d))
                    if not more:
                        return
                    d += more
                c.sendall(bytes([d[0] ^ 1]) + d[1:])

    for mode, argv, reason in (("sink", ["bulk", "127.0.0.1", fport, 1000, 10],
                                "the sink read 9999 bytes, not 10000"),
                               ("echo", ["pingpong", "127.0.0.1", fport, 5],
                                "answer 0 is not the message sent"),
                               ("echo", ["rr", "127.0.0.1", fport, 1],
                                "answer 0 is not the message sent"),
                               ("echo", ["echo", "127.0.0.1", fport, 5, 2],
                                "answer 0 is not the message sent")):
        t = threading.Thread(target=serve_fake, args=(mode,), daemon=True)
        t.start()
        r = run(tool, *argv)
        t.join(timeout=10)
        check(r.returncode == 1 and reason in r.stderr,
              "%s against a wrong %s exits 1 with '%s' (%d: %s)" %
              (argv[0], mode, reason, r.returncode, r.stderr.strip()))
    fake.close()

    # Refused connection: exit 1 and the failing call named.
    r = run(tool, "pingpong", "127.0.0.1", port + 1, 5)
    check(r.returncode == 1 and "connect" in r.stderr,
          "a refused connection exits 1 naming connect (%d: %s)" % (r.returncode, r.stderr.strip()))
    # Usage errors: exit 2 with the reason.
    for argv, reason in ((["serve", "65535"], "out of range"),
                         (["serve", "0"], "out of range"),
                         (["bulk", "127.0.0.1", "70000", "4096", "1"], "out of range"),
                         (["bulk", "127.0.0.1", str(port), "0", "1"], "out of range"),
                         (["bulk", "127.0.0.1", str(port), "4k", "1"], "not a number"),
                         (["pingpong", "127.0.0.1", str(port), "-1"], "not a number"),
                         (["pingpong", "localhost", str(port), "1"], "not an IPv4 address"),
                         (["echo", "127.0.0.1", str(port), "10", "0"], "out of range"),
                         (["rr", "127.0.0.1", str(port), "0"], "out of range"),
                         (["stream", "127.0.0.1", str(port), "1"], "usage"),
                         (["bulk", "127.0.0.1", str(port), "1", "1", "fast"], "usage")):
        r = run(tool, *argv)
        check(r.returncode == 2 and reason in r.stderr,
              "%s exits 2 with '%s' (%d: %s)" % (" ".join(argv), reason, r.returncode,
                                                   r.stderr.strip()))
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
