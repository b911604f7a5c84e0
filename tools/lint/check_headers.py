#!/usr/bin/env python3
"""Checks which headers are a folder's API and which are internal.

A header whose leading comment says "Internal to FOLDER/" is internal: only
files of FOLDER/ may include it, and no API header includes it. Every other
header of a library folder is the folder's API. The folders that build
programs (APP_FOLDERS) have no API: none of their headers may be included
from another folder.
With --list, prints each folder's headers with the folders that include
them (the input for deciding what to mark).

Exit status 0 when no internal header is included from another folder.
"""
import os
import re
import sys

FOLDERS = ["common", "config", "tcp_lite", "mpa", "ddp", "iwarp", "sctp", "rpcrdma", "appif",
           "libiwarp", "nfs", "dataplane", "tools", "tests", "fuzz"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
APP_FOLDERS = ["dataplane", "nfs", "tools", "tests", "fuzz"]
MARK = re.compile(r"^// Internal to ([a-z_0-9/]+)/", re.M)


def sources(root):
    for folder in FOLDERS:
        base = os.path.join(root, folder)
        for dirpath, _, files in os.walk(base):
            for f in files:
                if f.endswith((".h", ".hpp", ".cc", ".c", ".cpp")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def leading_comment(text):
    lines = []
    for line in text.splitlines():
        if line.startswith("//"):
            lines.append(line)
        elif line.strip() == "" and not lines:
            continue
        else:
            break
    return "\n".join(lines)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    listing = "--list" in sys.argv
    files = sorted(sources(root))
    internal = {}  # header -> owning folder prefix
    for f in files:
        if f.endswith((".h", ".hpp")):
            m = MARK.search(leading_comment(open(os.path.join(root, f), encoding="utf-8").read()))
            if m:
                internal[f] = m.group(1)
    users = {}
    for f in files:
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        for inc in INCLUDE.findall(text):
            if os.path.exists(os.path.join(root, inc)):
                users.setdefault(inc, set()).add(f)
    errors = 0
    for h, owner in sorted(internal.items()):
        if not h.startswith(owner + "/"):
            print(f"{h}: says it is internal to {owner}/ but lives elsewhere")
            errors += 1
        for u in sorted(users.get(h, ())):
            if not u.startswith(owner + "/"):
                print(f"{u}: includes {h}, which is internal to {owner}/")
                errors += 1
    for h, us in sorted(users.items()):
        folder = h.split("/")[0]
        if folder in APP_FOLDERS:
            for u in sorted(us):
                if u.split("/")[0] != folder:
                    print(f"{u}: includes {h}, but {folder}/ builds programs and has no API")
                    errors += 1
        if h in internal:
            for u in sorted(us):
                if u.endswith((".h", ".hpp")) and u not in internal and \
                        u.split("/")[0] not in APP_FOLDERS and "_test" not in u and "test_" not in u:
                    print(f"{u}: API header includes {h}, which is internal to {internal[h]}/")
                    errors += 1
    if listing:
        for f in files:
            if not f.endswith((".h", ".hpp")):
                continue
            folder = f.split("/")[0]
            outside = sorted({u.split("/")[0] for u in users.get(f, ()) if u.split("/")[0] != folder})
            kind = "internal" if f in internal else "api"
            print(f"{kind:8} {f:45} used from: {', '.join(outside) or '-'}")
    n_api = sum(1 for f in files if f.endswith((".h", ".hpp")) and f not in internal)
    print(f"{len(internal)} internal headers, {n_api} API headers, {errors} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
