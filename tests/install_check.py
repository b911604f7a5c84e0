#!/usr/bin/env python3
"""What `meson install` gives operators and application developers, used as
they would use it.

Installs the build into a scratch DESTDIR (meson install --destdir), then:
  - the files are there: iwarpd, iwarpctl, iwarp-perf, iwarp-rpc-perf; libiwarp.so.5 with
    its soname, libiwarp.pc, include/libiwarp/iwarp.h and iwarp.hpp; the
    systemd unit template iwarpd@.service; the example configurations;
  - libiwarp.so exports the C API (iwarp_*) and nothing else;
  - two applications outside the tree (tests/install_app/: a C program and
    a C++ one on iwarp.hpp) build with `pkg-config --cflags --libs libiwarp`
    against the installed tree only (PKG_CONFIG_SYSROOT_DIR) and link
    libiwarp.so.5;
  - the installed iwarpd checks the installed example configuration
    (--check-config, the unit's ExecStartPre);
  - the unit template passes `systemd-analyze verify` with no complaint (its
    paths pointed into DESTDIR), when systemd-analyze is installed;
  - as root: the installed iwarpd runs (net_tap port in a private network
    namespace, as dataplane_integration.py), and both applications run
    against it with the installed libiwarp.so.5: an RDMA Write between two
    sessions, its bytes compared.

  install_check.py --build-root DIR --cc CC --cxx CXX [--sanitize VALUE]
Exit status: 0 pass, 1 fail, 77 skip (the run part needs root and network
namespaces; the build part has passed by then and says so).
"""

import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import appif_integration as ai  # noqa: E402  (AppDaemon: the app socket in a private dir)
import dataplane_integration as dpi  # noqa: E402

check = dpi.check
log = dpi.log
TestFailure = dpi.TestFailure
PORT = 7481


def run(cmd, env=None, timeout=120):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env, timeout=timeout)
    return r.returncode, r.stdout


def must(cmd, what, env=None):
    rc, out = run(cmd, env=env)
    check(rc == 0, "%s (%s: exit %d)\n%s" % (what, " ".join(cmd), rc, out))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build-root", required=True)
    p.add_argument("--meson", default="meson")
    p.add_argument("--cc", required=True, help="the C compiler command of the build")
    p.add_argument("--cxx", required=True, help="the C++ compiler command of the build")
    p.add_argument("--sanitize", default="none",
                   help="the build's b_sanitize: the applications are built with it too")
    args = p.parse_args()
    dest = tempfile.mkdtemp(prefix="iwarpd_install_")
    daemon = None
    try:
        must([args.meson, "install", "-C", args.build_root, "--no-rebuild", "--destdir", dest,
              "--quiet"], "meson install into a DESTDIR")
        daemons = glob.glob(os.path.join(dest, "**", "bin", "iwarpd"), recursive=True)
        check(len(daemons) == 1, "one iwarpd installed: %s" % daemons)
        root = os.path.dirname(os.path.dirname(daemons[0]))  # DESTDIR + prefix
        bindir = os.path.join(root, "bin")
        for tool in ("iwarpd", "iwarpctl", "iwarp-perf", "iwarp-rpc-perf"):
            check(os.access(os.path.join(bindir, tool), os.X_OK), "%s installed" % tool)
        so = glob.glob(os.path.join(root, "lib*", "**", "libiwarp.so.5"), recursive=True)
        check(len(so) == 1, "libiwarp.so.5 installed: %s" % so)
        libdir = os.path.dirname(so[0])
        check(os.path.islink(os.path.join(libdir, "libiwarp.so")), "libiwarp.so link for -liwarp")
        dyn = must(["readelf", "-d", so[0]], "readelf libiwarp.so.5")
        check("Library soname: [libiwarp.so.5]" in dyn, "soname libiwarp.so.5")
        check("RPATH" not in dyn, "no build-tree run path left (RPATH, RUNPATH)")
        syms = must(["nm", "-D", "--defined-only", so[0]], "nm libiwarp.so.5").split()
        names = syms[2::3]  # address, type, name
        exported = [n for n in names if n.startswith("iwarp_")]
        other = [n for n in names if not n.startswith("iwarp_") and n != "LIBIWARP_5"]
        check(len(exported) >= 30 and not other,
              "only the C API is exported (%d iwarp_ functions; others: %s)" %
              (len(exported), other[:10]))
        for h in ("iwarp.h", "iwarp.hpp"):
            check(os.path.exists(os.path.join(root, "include", "libiwarp", h)),
                  "include/libiwarp/%s installed" % h)
        pc = glob.glob(os.path.join(libdir, "pkgconfig", "libiwarp.pc"))
        check(len(pc) == 1, "libiwarp.pc installed")
        unit = os.path.join(root, "lib", "systemd", "system", "iwarpd@.service")
        check(os.path.exists(unit), "systemd unit template installed")
        examples = os.path.join(root, "share", "iwarpd", "examples")
        for y in ("default.yaml", "reference.yaml", "iwarp-responder.yaml"):
            check(os.path.exists(os.path.join(examples, y)), "example %s installed" % y)

        # Applications outside the tree: pkg-config on the installed tree only.
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pc[0]),
                   PKG_CONFIG_LIBDIR=os.path.dirname(pc[0]), PKG_CONFIG_SYSROOT_DIR=dest)
        flags = shlex.split(must(["pkg-config", "--cflags", "--libs", "libiwarp"],
                                 "pkg-config libiwarp", env=env))
        check(any(f.startswith("-I" + dest) for f in flags) and "-liwarp" in flags,
              "pkg-config points into the installed tree: %s" % flags)
        san = [] if args.sanitize in ("", "none") else ["-fsanitize=" + args.sanitize]
        app_dir = os.path.join(HERE, "install_app")
        c_app = os.path.join(dest, "rdma_write")
        cxx_app = os.path.join(dest, "wrapper")
        must(shlex.split(args.cc) + ["-std=c11", "-Wall", "-Werror", "-O1"] + san +
             [os.path.join(app_dir, "rdma_write.c"), "-o", c_app] + flags,
             "a C application builds against the installed libiwarp")
        must(shlex.split(args.cxx) + ["-std=c++20", "-Wall", "-Werror", "-O1"] + san +
             [os.path.join(app_dir, "wrapper.cc"), "-o", cxx_app] + flags,
             "a C++ application on iwarp.hpp builds against the installed libiwarp")
        for app in (c_app, cxx_app):
            check("Shared library: [libiwarp.so.5]" in must(["readelf", "-d", app], "readelf"),
                  "%s links libiwarp.so.5" % os.path.basename(app))

        # The operator's side: the unit's ExecStartPre on an installed example.
        out = must([os.path.join(bindir, "iwarpd"), "--check-config",
                    os.path.join(examples, "default.yaml")],
                   "installed iwarpd checks the installed default.yaml")
        check("--no-pci" in out, "check-config prints the EAL arguments")
        if shutil.which("systemd-analyze") is None:
            log("systemd unit: not verified (systemd-analyze not installed on this machine)")
        else:
            vdir = os.path.join(dest, "verify")
            os.makedirs(vdir)
            text = open(unit).read()
            prefix_path = root[len(dest):]
            check("ExecStart=%s/bin/iwarpd --config " % prefix_path in text,
                  "the unit starts the installed iwarpd")
            with open(os.path.join(vdir, "iwarpd@.service"), "w") as f:
                f.write(text.replace(prefix_path + "/", root + "/"))
            rc, out = run(["systemd-analyze", "verify", os.path.join(vdir, "iwarpd@.service")])
            check(rc == 0 and out.strip() == "",
                  "systemd-analyze verify: no complaint (exit %d)\n%s" % (rc, out))

        log("build checks passed")
        if os.geteuid() != 0 or shutil.which("ip") is None:
            log("SKIP (after the install and build checks passed): running the installed "
                "iwarpd needs root and network namespaces")
            return dpi.SKIP
        # The installed daemon, and the applications on the installed library.
        args.iwarpd = os.path.join(bindir, "iwarpd")
        args.iwarpctl = os.path.join(bindir, "iwarpctl")
        daemon = ai.AppDaemon(args, "inst")
        daemon.start()
        run_env = dict(os.environ, LD_LIBRARY_PATH=libdir)
        rc, out = run([c_app, daemon.socket_path(), str(PORT)], env=run_env, timeout=60)
        check(rc == 0 and "INSTALLED_APP_OK" in out,
              "the C application moves an RDMA Write through the installed iwarpd "
              "(exit %d): %s" % (rc, out.strip()))
        rc, out = run([cxx_app, daemon.socket_path()], env=run_env, timeout=60)
        check(rc == 0 and "WRAPPER_OK" in out,
              "the C++ application opens a session (exit %d): %s" % (rc, out.strip()))
        rc, secs = daemon.stop()
        check(rc == 0, "the installed iwarpd stops cleanly (rc %s, %.2f s)" % (rc, secs))
        check(not daemon.sanitizer_reports(), "no sanitizer reports %s" %
              daemon.sanitizer_reports())
    except TestFailure as e:
        log("FAIL: %s" % e)
        if daemon is not None:
            log(daemon.log())
        return 1
    finally:
        if daemon is not None:
            daemon.cleanup()
        shutil.rmtree(dest, ignore_errors=True)
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
