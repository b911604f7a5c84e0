#!/usr/bin/env python3
"""A live NFS/RDMA session on a wire the kernel can see, checked by tshark
and iwarp-decode.

The harness of rpc_capture.py: two iwarpd daemons on net_tap ports in one
private namespace (198.18.5.1 and 198.18.5.2) joined by a Linux bridge that
dumpcap records. iwarp-nfsd is an application of daemon A (NFSv3 and MOUNT
over RPC-over-RDMA v1, RFC 8166 / RFC 8267), iwarp-nfs runs on daemon B:
mkdir, put of 100 KiB and 2 MiB (WRITE data by Read chunk), ls of a
directory of 150 entries with 80-character names (READDIRPLUS replies by
Reply chunk), stat, get of both files (READ data by Write chunk) with SHA-256
equal, rm. Checks on the capture (the NFS ones on tshark -2, the dissection
Wireshark shows for a loaded file; see the notes above reuse_reason() for
what Wireshark's rpcordma cannot show of this wire, and how that is checked
instead):

  - tshark's rpcordma dissector decodes one RPC-over-RDMA v1 message per
    call and per reply the server counted (rdma_calls, rdma_replies), each
    XID once as call and once as reply; the replies by Reply chunk are
    RDMA_NOMSG, as many as the server's rdma_reply_chunks;
  - the `nfs` and `mount` dissectors name the procedures: per procedure, as
    many calls as the server's nfs_calls_<proc> / mount_calls_<proc>
    counters, each of MNT, GETATTR, LOOKUP, MKDIR, CREATE, WRITE, COMMIT,
    READ, READDIRPLUS, REMOVE at least once; one reply per call, of its
    procedure; the READDIRPLUS replies list every entry; the WRITE and READ
    data tshark puts back from the chunks are the files' bytes;
  - the RDMA operations (RDMAP opcodes) agree with the server's counters:
    RDMA Read Requests from A, as many Read Responses from B, the bytes
    asked = the bytes answered = rdma_read_bytes; RDMA Writes from A adding
    up to rdma_written_bytes, at least one per Write and Reply chunk; from B
    only Read Responses, Sends and each connection's RTR; one Send per call
    and per reply;
  - every MPA CRC is Good, none Bad; no malformed frame, no error-severity
    expert item; iwarp-decode counts the FPDUs tshark does and reports no
    violation.

  nfs_capture.py --iwarpd PATH --iwarpctl PATH --nfsd PATH --nfs PATH --decode PATH

Exit status: 0 pass, 1 fail, 77 skip (not root, no namespaces or bridge, no
hugepages, no tshark/dumpcap).
"""

import argparse
import hashlib
import os
import re
import signal
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nfs_rdma_dataplane as ndp  # noqa: E402  (iwarp-nfsd and iwarp-nfs drivers)
import rpc_capture as rc  # noqa: E402  (the bridged two-daemon capture harness)

from dataplane_integration import SKIP, TestFailure, check, log  # noqa: E402

PORT = 20049
KIB, MIB = 1 << 10, 1 << 20
FILES = [("small.bin", 100 * KIB), ("big.bin", 2 * MIB)]
LISTING = 150           # entries in the directory listed by Reply chunk
NAME_LEN = 80

# NFSv3 (RFC 1813) and MOUNT v3 procedure numbers, as Wireshark reports them.
NFS3_PROCS = ["null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write",
              "create", "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link",
              "readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit"]
MOUNT_PROCS = ["null", "mnt", "dump", "umnt", "umntall", "export"]
NFS3_PROGRAM, MOUNT_PROGRAM = 100003, 100005
MUST_SEE = {("mount", "mnt")} | {("nfs", p) for p in (
    "getattr", "lookup", "mkdir", "create", "write", "commit", "read", "readdirplus", "remove")}

# RDMAP opcodes (RFC 5040 4.3).
OP_WRITE, OP_READ_REQ, OP_READ_RESP = 0, 1, 2
OP_SENDS = (3, 4, 5, 6)     # Send, Send with Invalidate, with SE, with SE and Invalidate
TAGGED_HDR = 14             # DDP tagged header with the RDMAP control byte (RFC 5041 4.3)
READ_REQ_ULPDU = 18 + 28    # untagged DDP header with RDMAP control, Read Request body


def session(client, export, tmp):
    """The NFS session the capture records; returns the names listed."""
    client.run("mkdir", "d")
    check(os.path.isdir(os.path.join(export, "d")), "mkdir d made the directory on the server")
    for name, size in FILES:
        local = os.path.join(tmp, name)
        ndp.make_file(local, size)
        out = client.run("put", local, "d/" + name).stdout
        check(("%d bytes" % size) in out, "put %s reports %d bytes: %s" % (name, size, out))
    many = os.path.join(export, "many")
    os.makedirs(many)
    names = [("%03d-" % i).ljust(NAME_LEN, "n") for i in range(LISTING)]
    for n in names:
        open(os.path.join(many, n), "w").close()
    r = subprocess.run(client.cmd("ls", "many"), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    check(r.returncode == 0 and "runtime error" not in r.stdout and "Sanitizer" not in r.stdout,
          "iwarp-nfs ls many: exit 0, no sanitizer report (rc %d)%s" %
          (r.returncode, "" if r.returncode == 0 else ":\n" + r.stdout))
    listed = [l.split()[-1] for l in r.stdout.splitlines() if l.strip()]
    check(sorted(listed) == sorted(names), "ls many lists all %d entries of %d characters (got "
          "%d)" % (LISTING, NAME_LEN, len(listed)))
    name, size = FILES[-1]
    out = client.run("stat", "d/" + name).stdout
    check(("size %d" % size) in out and out.startswith("type -"), "stat d/%s: %s" % (name, out))
    for name, size in FILES:
        local = os.path.join(tmp, name)
        back = local + ".back"
        out = client.run("get", "d/" + name, back).stdout
        check(("%d bytes" % size) in out, "get %s reports %d bytes: %s" % (name, size, out))
        sent, disk, got = (ndp.sha256_file(p) for p in
                           (local, os.path.join(export, "d", name), back))
        log("%s: %d bytes, sha256 sent %s disk %s back %s" % (name, size, sent[:16], disk[:16],
                                                            got[:16]))
        check(sent == disk == got, "%s: SHA-256 equal sent / on disk / read back" % name)
    for name, _ in FILES:
        client.run("rm", "d/" + name)
        check(not os.path.exists(os.path.join(export, "d", name)),
              "rm d/%s removed the file on the server" % name)
    return names


def rows(path, display_filter, *fields, two_pass=False):
    """tshark's fields of every frame `display_filter` selects: one list of
    the occurrences per field, per frame."""
    cmd = (["-2"] if two_pass else []) + ["-Y", display_filter, "-T", "fields", "-E",
                                          "occurrence=a", "-E", "separator=/t"]
    for f in fields:
        cmd += ["-e", f]
    out = []
    for line in rc.tshark(path, *cmd).splitlines():
        if line.strip():
            out.append([c.split(",") if c else [] for c in line.split("\t")])
    return out


def messages(path):
    """The RPC-over-RDMA headers and the ONC RPC messages tshark dissects, in
    capture order, from its PDML (a frame may hold several of each):
    rpcordma: dicts of frame, src, stream, xid, msg_type, segs [(list:
    reads / writes / reply, handle, length, offset)], inline (the bytes
    tshark leaves undissected after the header, as data.data); rpc: dicts of
    frame, xid, msgtyp, program, proc (from the nfs / mount dissector),
    replystat, accept, and of NFS offset, count, data (hex), names (of
    READDIRPLUS entries)."""
    xml = subprocess.run(["tshark", "-2", "-r", path, "-Y", "rpcordma || rpc", "-T", "pdml"],
                         capture_output=True, text=True, timeout=180).stdout
    rdma, rpc = [], []
    # ET.fromstring: iterparse over a string is slow on the megabyte-long
    # attributes of the reassembled data.
    for pkt in ET.fromstring(xml).iter("packet"):
        frame = src = stream = None
        cur_r = cur_c = None
        kind = None
        for el in pkt.iter():
            name = el.get("name")
            if el.tag == "proto" and name == "rpcordma":
                cur_r = None
            elif el.tag == "proto" and name == "rpc":
                cur_c = {"frame": frame, "program": None, "proc": None, "offset": None,
                         "count": None, "data": None, "names": []}
                rpc.append(cur_c)
            if el.tag != "field":
                continue
            show = el.get("show")
            if name == "frame.number":
                frame = int(show)
            elif name == "ip.src":
                src = show
            elif name == "tcp.stream":
                stream = int(show)
            elif name == "rpcordma.xid":
                cur_r = {"frame": frame, "src": src, "stream": stream, "xid": show, "segs": [],
                         "inline": None}
                rdma.append(cur_r)
            elif name == "rpcordma.msg_type" and cur_r is not None:
                cur_r["msg_type"] = int(show)
            elif name in ("rpcordma.reads_count", "rpcordma.writes_count",
                          "rpcordma.reply_count"):
                kind = name.split(".")[1].split("_")[0]  # reads / writes / reply
            elif name == "rpcordma.rdma_handle" and cur_r is not None:
                cur_r["segs"].append([kind, int(show, 0), 0, 0])
            elif name == "rpcordma.rdma_length" and cur_r is not None and cur_r["segs"]:
                cur_r["segs"][-1][2] = int(show)
            elif name == "rpcordma.rdma_offset" and cur_r is not None and cur_r["segs"]:
                cur_r["segs"][-1][3] = int(show, 0)
            elif name == "data.data" and cur_r is not None and cur_r["inline"] is None:
                cur_r["inline"] = bytes.fromhex(el.get("value", ""))
            elif name == "rpc.xid" and cur_c is not None:
                cur_c["xid"] = show
            elif name == "rpc.msgtyp" and cur_c is not None:
                cur_c["msgtyp"] = int(show)
            elif name == "rpc.program" and cur_c is not None:
                cur_c["program"] = int(show)
            elif name == "rpc.replystat" and cur_c is not None:
                cur_c["replystat"] = int(show)
            elif name == "rpc.state_accept" and cur_c is not None:
                cur_c["accept"] = int(show)
            elif name in ("nfs.procedure_v3", "mount.procedure_v3") and cur_c is not None:
                cur_c["proc"] = int(show)
            elif name == "nfs.offset3" and cur_c is not None and cur_c["offset"] is None:
                cur_c["offset"] = int(show)
            elif name == "nfs.count3" and cur_c is not None and cur_c["count"] is None:
                cur_c["count"] = int(show)
            elif name == "nfs.data" and cur_c is not None and cur_c["data"] is None:
                cur_c["data"] = el.get("value", "")
            elif name == "nfs.readdirplus.entry.name" and cur_c is not None:
                cur_c["names"].append(show)
    return rdma, rpc


def proc_name(program, proc):
    if program == NFS3_PROGRAM and proc is not None and proc < len(NFS3_PROCS):
        return ("nfs", NFS3_PROCS[proc])
    if program == MOUNT_PROGRAM and proc is not None and proc < len(MOUNT_PROCS):
        return ("mount", MOUNT_PROCS[proc])
    return ("?", "%s/%s" % (program, proc))


def inline_call(msg):
    """(program, procedure) of the ONC RPC call header (RFC 5531) at the start
    of the inline XDR of an RPC-over-RDMA call tshark left undissected."""
    b = msg["inline"] or b""
    check(len(b) >= 24, "call %s: tshark shows its inline XDR (%d bytes)" % (msg["xid"], len(b)))
    xid, mtype, rpcvers, prog, vers, proc = struct.unpack(">6I", b[:24])
    check(xid == int(msg["xid"], 0) and mtype == 0 and rpcvers == 2 and vers == 3,
          "call %s: the inline XDR starts with its ONC RPC v2 call header, version 3 (xid "
          "%#x type %d rpcvers %d vers %d)" % (msg["xid"], xid, mtype, rpcvers, vers))
    return prog, proc


# What Wireshark's rpcordma dissector (packet-rpcrdma.c; 4.0 here) can and
# cannot show of this wire, measured on these captures and read in its source:
#
# 1. It puts chunk data back into its message by the chunk's RDMA handle: it
#    keeps, per TCP connection, the last segment it saw for each handle, and
#    takes a call segment whose handle and offset fall inside one it already
#    knows for the reply to that earlier call ("this must be the reply"), so
#    no reassembly is set up for the new call. iwarp-nfs registers its
#    buffers once per connection and reuses them (rpcrdma/rdma_transport.h:
#    nothing is registered per call), so the second 1 MiB WRITE of a put
#    offers the Read chunk of the first (same STag, same offset) and the
#    second 1 MiB READ of a get the Write chunk of the first. RPC-over-RDMA
#    v1 does not require a fresh handle per call (clients that register
#    memory per call, a new STag each time, never show this). Consequences:
#    such a WRITE call is never handed to the rpc dissector (its reply then
#    has no call to match: "Program: Unknown (0)"), and such a READ reply is
#    dissected without its Write chunk data put back, as if complete, and
#    ends in an exception (Malformed). They are checked here instead: the
#    call's header decodes in rpcordma and the test parses its inline XDR
#    (data.data) as an ONC RPC call header; its reply decodes as an accepted
#    ONC RPC reply; the chunk data is on the wire (the RDMA checks); the
#    malformed READ replies are exactly the ones whose Write chunk reuses an
#    earlier call's segment. (A Reply chunk reused the same way, the second
#    READDIRPLUS of a listing, is put together right: measured.)
# 2. A reply with a Write list is dissected "reduced" on the first pass and
#    completed with the chunk data on the second ("reassembly is done on the
#    second pass", in its source); in tshark's default single pass every
#    such reply is dissected a second time as if complete and is Malformed.
#    The NFS checks therefore read tshark -2 (two passes, as Wireshark shows
#    a loaded file); the single-pass malformed frames are printed and must
#    all be replies with a Write list.
def reuse_reason(msg, earlier, kind):
    """A segment of call `msg`'s `kind` list (reads / writes / reply) that
    one of the `earlier` calls on the same connection already offered
    (handle equal, offset inside): the text, else None."""
    names = {"reads": "Read chunk", "writes": "Write chunk", "reply": "Reply chunk"}
    for k, handle, length, offset in msg["segs"]:
        if k != kind:
            continue
        for m in earlier:
            for k2, h, ln, off in m["segs"]:
                if h == handle and off <= offset < off + ln:
                    return ("%s STag %#x offset %#x already offered by call %s (%s)" %
                            (names[k], handle, offset, m["xid"], names[k2]))
    return None


def check_rpc(path, stats, listed, rdma, rpc):
    """The RPC-over-RDMA headers and the ONC RPC, NFS and MOUNT messages;
    `listed`: the names of the directory listed by Reply chunk; `rdma`,
    `rpc`: messages(path). Returns the ONC RPC messages by (type, XID), the
    frames Wireshark cannot complete ({frame: reason}) and the frames of the
    replies with a Write list."""
    msgs = rc.rpcordma_messages(path)
    calls, replies = stats["rdma_calls"], stats["rdma_replies"]
    log("tshark rpcordma: %d messages; the server counted %d calls, %d replies" %
        (len(msgs), calls, replies))
    check(calls == replies and len(msgs) == calls + replies,
          "tshark decodes %d RPC-over-RDMA messages = %d calls + %d replies" %
          (len(msgs), calls, replies))
    check(all(v == "1" for v, _, _ in msgs), "every message is version 1")
    by_type = {}
    for _, t, _ in msgs:
        by_type[t] = by_type.get(t, 0) + 1
    # RDMA_MSG = 0, RDMA_NOMSG = 1 (RFC 8166 4.2.4): a reply by Reply chunk
    # is RDMA_NOMSG; iwarp-nfs sends every call as RDMA_MSG (its calls fit
    # inline once the WRITE data is moved to a Read chunk).
    check(by_type.get("1", 0) == stats["rdma_reply_chunks"] > 0 and
          by_type.get("0", 0) == len(msgs) - stats["rdma_reply_chunks"],
          "msg_types: %d RDMA_NOMSG (the server's rdma_reply_chunks), the rest RDMA_MSG: %s" %
          (stats["rdma_reply_chunks"], by_type))
    xids = {}
    for _, _, x in msgs:
        xids[x] = xids.get(x, 0) + 1
    check(len(xids) == calls and all(v == 2 for v in xids.values()),
          "each of the %d XIDs appears in exactly one call and one reply" % calls)

    check(len(rdma) == len(msgs), "the PDML holds the same %d rpcordma headers (%d)" %
          (len(msgs), len(rdma)))
    call_msgs = [m for m in rdma if m["src"] == rc.B_IP]
    check(len(call_msgs) == calls, "the client sent the %d calls (%d from %s)" %
          (calls, len(call_msgs), rc.B_IP))
    # ONC RPC messages by (type, XID), once each (a frame may show one twice:
    # a reply with Write chunk data, reduced and then completed).
    seen = {}
    for c in rpc:
        first = seen.setdefault((c["msgtyp"], c["xid"]), c)
        if first is not c:
            for k in ("data", "count", "offset"):
                if first[k] is None:
                    first[k] = c[k]
            if not first["names"]:
                first["names"] = c["names"]

    # Calls tshark did not hand to the rpc dissector: each must be the
    # Wireshark limitation described above, and is named by its inline
    # header instead.
    inline_names = {}
    for i, m in enumerate(call_msgs):
        if (0, m["xid"]) in seen:
            continue
        earlier = [e for e in call_msgs[:i] if e["stream"] == m["stream"]]
        why = reuse_reason(m, earlier, "reads")
        check(why is not None, "call %s (frame %d) decodes as ONC RPC, or is the Wireshark "
              "handle-reuse case (a Read chunk segment an earlier call on the connection "
              "offered): segments %s" % (m["xid"], m["frame"], m["segs"]))
        name = proc_name(*inline_call(m))
        log("NOTE: call %s (frame %d, %s %s) not reassembled by Wireshark: %s; named by its "
            "inline ONC RPC header" % (m["xid"], m["frame"], name[0], name[1], why))
        inline_names[m["xid"]] = name
    # The same parse on the calls with a Read chunk that tshark did
    # reassemble must agree with what tshark's dissectors say.
    for m in call_msgs:
        c = seen.get((0, m["xid"]))
        if c is not None and m["inline"] is not None:
            check(proc_name(*inline_call(m)) == proc_name(c["program"], c["proc"]),
                  "call %s: the test's parse of the inline header agrees with tshark (%s)" %
                  (m["xid"], proc_name(c["program"], c["proc"])))
    # Wireshark shows a reply it cannot match as program 0 ("Unknown").
    orphan = set(c["xid"] for (t, _), c in seen.items() if t == 1 and not c["program"])
    check(orphan == set(inline_names), "the replies tshark cannot match to a call (%s) are "
          "those of the calls it did not reassemble (%s)" % (sorted(orphan),
                                                             sorted(inline_names)))
    for x in orphan:
        c = seen[(1, x)]
        check(c.get("replystat") == 0 and c.get("accept") == 0,
              "reply %s: tshark decodes its ONC RPC header, accepted, executed (replystat %s, "
              "accept state %s)" % (x, c.get("replystat"), c.get("accept")))
    # kind: call / reply as tshark names them; call* / reply* named by the
    # inline header of a call Wireshark did not reassemble.
    tally = {}
    for x, name in inline_names.items():
        tally[("call*", name)] = tally.get(("call*", name), 0) + 1
    for (t, x), c in seen.items():
        if t == 0:
            key = ("call", proc_name(c["program"], c["proc"]))
        elif x in inline_names:
            key = ("reply*", inline_names[x])
        else:
            key = ("reply", proc_name(c["program"], c["proc"]))
        tally[key] = tally.get(key, 0) + 1
    names = sorted(set(n for _, n in tally))
    log("tshark ONC RPC under RPC-over-RDMA, by procedure: calls, replies as tshark names them "
        "[calls, replies named from the inline header of a call Wireshark did not reassemble]:")
    for n in names:
        log("  %-6s %-12s %4d %4d   [%d %d]" % (n[0], n[1], tally.get(("call", n), 0),
                                               tally.get(("reply", n), 0),
                                               tally.get(("call*", n), 0),
                                               tally.get(("reply*", n), 0)))
    want = {}
    for k, v in stats.items():
        for prefix, prog in (("nfs_calls_", "nfs"), ("mount_calls_", "mount")):
            if k.startswith(prefix) and v:
                want[(prog, k[len(prefix):])] = v
    got = {n: tally.get(("call", n), 0) + tally.get(("call*", n), 0)
           for n in set(want) | set(names)}
    check(got == {n: want.get(n, 0) for n in got},
          "per procedure, as many calls on the wire as the server counted:\n  wire   %s\n"
          "  server %s" % (sorted(got.items()), sorted(want.items())))
    decoded = {n: tally.get(("call", n), 0) for n in got}
    check(MUST_SEE <= set(n for n, v in decoded.items() if v),
          "tshark's nfs / mount dissectors name each of the session's procedures (at least one "
          "call each): missing %s" % sorted(MUST_SEE - set(n for n, v in decoded.items() if v)))
    rep = {n: tally.get(("reply", n), 0) + tally.get(("reply*", n), 0) for n in got}
    check(rep == got, "one ONC RPC reply per call, of the call's procedure: replies %s" %
          sorted(rep.items()))
    # The replies Wireshark cannot complete (1. above): those whose call
    # reuses a Write chunk segment of an earlier call on the connection.
    excused = {}
    for i, m in enumerate(call_msgs):
        earlier = [e for e in call_msgs[:i] if e["stream"] == m["stream"]]
        why = reuse_reason(m, earlier, "writes")
        if why is None:
            continue
        for r in rdma:
            if r["src"] == rc.A_IP and r["xid"] == m["xid"]:
                excused[r["frame"]] = ("reply %s to a call whose %s: Wireshark does not put the "
                                       "chunk data back (see the note in nfs_capture.py)" %
                                       (m["xid"], why))
    with_writes = set(r["frame"] for r in rdma if r["src"] == rc.A_IP and
                      any(seg[0] == "writes" for seg in r["segs"]))
    # The READDIRPLUS replies came by Reply chunk (RDMA_NOMSG, the whole
    # reply in RDMA Writes): tshark puts them together and lists every entry.
    got_names = []
    for (t, _), c in seen.items():
        if t == 1 and proc_name(c["program"], c["proc"]) == ("nfs", "readdirplus"):
            got_names += c["names"]
    check(sorted(got_names) == sorted(listed + [".", ".."]),
          "tshark decodes the READDIRPLUS replies (by Reply chunk) with all %d entries of the "
          "listing and . and .. (%d names)" % (len(listed), len(got_names)))
    log("tshark decodes %d of %d calls and %d of %d replies as NFS / MOUNT; %d call(s) not "
        "reassembled (Wireshark's handle-reuse limitation, see above)" %
        (sum(decoded.values()), calls, sum(tally.get(("reply", n), 0) for n in got), replies,
         len(inline_names)))
    return seen, excused, with_writes


def check_data(seen, rdma, tmp, excused):
    """The WRITE and READ data as tshark puts it back from the chunks (Read
    chunk into the WRITE call, Write chunk into the READ reply) must be the
    bytes of the files at the call's offset: the XDR positions and chunk
    offsets on the wire are right."""
    slices = {}
    for name, size in FILES:
        with open(os.path.join(tmp, name), "rb") as f:
            data = f.read()
        for off in range(0, size, MIB):
            piece = data[off:off + MIB]
            slices[(off, len(piece))] = hashlib.sha256(piece).hexdigest()
    frames = {r["xid"]: r["frame"] for r in rdma if r["src"] == rc.A_IP}
    ok = 0
    for (t, xid), c in sorted(seen.items(), key=lambda kv: kv[1]["frame"] or 0):
        if proc_name(c["program"], c["proc"]) not in (("nfs", "write"), ("nfs", "read")):
            continue
        if c["proc"] == 7 and t == 1 or c["proc"] == 6 and t == 0:
            continue  # the data is in WRITE calls and READ replies
        what = "%s %s (frame %d)" % ("WRITE call" if t == 0 else "READ reply", xid, c["frame"])
        if t == 1 and frames.get(xid) in excused:
            log("NOTE: %s: no data to compare, Wireshark did not put it back (excused above)" %
                what)
            continue
        call = seen.get((0, xid))
        off = call["offset"] if call else None
        data = c["data"]
        check(data is not None and re.fullmatch(r"[0-9a-f]*", data) is not None,
              "%s: tshark shows the data" % what)
        data = bytes.fromhex(data)
        check(len(data) == c["count"] and
              slices.get((off, len(data))) == hashlib.sha256(data).hexdigest(),
              "%s: the %d bytes tshark shows are the file's at offset %s" % (what, len(data), off))
        ok += 1
    log("tshark shows the chunk data of %d WRITE calls and READ replies, each equal to the file's "
        "bytes at its offset" % ok)
    check(ok >= 4, "at least two WRITE calls and two READ replies with their chunk data (%d)" % ok)


def check_rdma(path, stats, a_ip, b_ip):
    """RDMA Read Requests / Read Responses / Writes (and Sends) against the
    server's counters."""
    ops = []  # (source, TCP stream, opcode, last, read size, ULPDU length)
    bad_rows = []
    for r in rows(path, "iwarp_ddp_rdmap", "ip.src", "tcp.stream", "iwarp_rdma.opcode",
                  "iwarp_ddp.last_flag", "iwarp_rdma.rdmardsz", "iwarp_mpa.ulpdulength"):
        src, stream, opc, last, rdsz, ulpdu = r
        if not (len(opc) == len(last) == len(ulpdu)) or \
                len(rdsz) != sum(1 for o in opc if int(o, 0) == OP_READ_REQ):
            bad_rows.append(r)
            continue
        rd = iter(rdsz)
        for o, l, u in zip(opc, last, ulpdu):
            o = int(o, 0)
            ops.append((src[0], int(stream[0]), o, l in ("1", "True"),
                        int(next(rd)) if o == OP_READ_REQ else 0, int(u, 0)))
    check(not bad_rows, "one opcode, last flag and ULPDU length per DDP segment, one size per "
          "Read Request: %s" % bad_rows[:3])
    # RFC 6581 (MPA with enhanced connection set-up): the initiator's first
    # FPDU on each connection is the RTR, here a zero-length RDMA Write.
    first = {}
    for op in ops:
        if op[0] == b_ip:
            first.setdefault(op[1], op)
    rtr = [op for op in first.values() if op[2] == OP_WRITE and op[3] and op[5] == TAGGED_HDR]
    check(len(rtr) == len(first) == stats["rdma_connections_total"],
          "each of the %d connections starts with the client's RTR, a zero-length RDMA Write "
          "(%d of %d)" % (stats["rdma_connections_total"], len(rtr), len(first)))
    ops = [op for op in ops if not any(op is r for r in rtr)]
    reqs = [op for op in ops if op[2] == OP_READ_REQ]
    resp = [op for op in ops if op[2] == OP_READ_RESP]
    writes = [op for op in ops if op[2] == OP_WRITE]
    sends = [op for op in ops if op[2] in OP_SENDS]
    others = [op for op in ops if op[2] not in (OP_WRITE, OP_READ_REQ, OP_READ_RESP) + OP_SENDS]
    resp_msgs = sum(1 for op in resp if op[3])
    write_msgs = sum(1 for op in writes if op[3])
    send_msgs = sum(1 for op in sends if op[3])
    asked = sum(op[4] for op in reqs)
    resp_bytes = sum(op[5] - TAGGED_HDR for op in resp)
    write_bytes = sum(op[5] - TAGGED_HDR for op in writes)
    log("tshark RDMAP: %d RTR (zero-length Writes), %d Read Requests (%d bytes asked), %d Read "
        "Responses (%d DDP segments, %d bytes), %d RDMA Writes (%d DDP segments, %d bytes), %d "
        "Sends (%d DDP segments)" %
        (len(rtr), len(reqs), asked, resp_msgs, len(resp), resp_bytes, write_msgs, len(writes),
         write_bytes, send_msgs, len(sends)))
    log("server: rdma_calls %d rdma_replies %d rdma_read_chunks %d rdma_read_bytes %d "
        "rdma_write_chunks %d rdma_reply_chunks %d rdma_written_bytes %d" %
        (stats["rdma_calls"], stats["rdma_replies"], stats["rdma_read_chunks"],
         stats["rdma_read_bytes"], stats["rdma_write_chunks"], stats["rdma_reply_chunks"],
         stats["rdma_written_bytes"]))
    check(not others, "no RDMAP opcode other than Write, Read Request/Response, Send: %s" %
          others[:5])
    check(all(op[0] == a_ip for op in reqs) and all(op[0] == b_ip for op in resp) and
          all(op[0] == a_ip for op in writes),
          "the server (%s) reads and writes, the client (%s) only answers Reads" % (a_ip, b_ip))
    check(send_msgs == stats["rdma_calls"] + stats["rdma_replies"],
          "one Send per call and per reply (%d = %d + %d)" %
          (send_msgs, stats["rdma_calls"], stats["rdma_replies"]))
    check(all(op[3] and op[5] == READ_REQ_ULPDU for op in reqs),
          "every Read Request one DDP segment of %d bytes" % READ_REQ_ULPDU)
    check(len(reqs) >= stats["rdma_read_chunks"] > 0,
          "RDMA Read Requests (%d) >= the server's Read chunks (%d) > 0" %
          (len(reqs), stats["rdma_read_chunks"]))
    check(resp_msgs == len(reqs), "one Read Response per Read Request (%d, %d)" %
          (resp_msgs, len(reqs)))
    check(asked == resp_bytes == stats["rdma_read_bytes"],
          "bytes asked by Read Requests (%d) = bytes in Read Responses (%d) = the server's "
          "rdma_read_bytes (%d)" % (asked, resp_bytes, stats["rdma_read_bytes"]))
    sent = sum(size for _, size in FILES)
    check(stats["rdma_read_bytes"] == sent, "the WRITE data (%d bytes) all went by Read chunk "
          "(%d)" % (sent, stats["rdma_read_bytes"]))
    chunks = stats["rdma_write_chunks"] + stats["rdma_reply_chunks"]
    check(write_msgs >= chunks and stats["rdma_write_chunks"] > 0,
          "RDMA Writes (%d) >= the server's Write chunks + Reply chunks (%d + %d)" %
          (write_msgs, stats["rdma_write_chunks"], stats["rdma_reply_chunks"]))
    check(write_bytes == stats["rdma_written_bytes"] and write_bytes >= sent,
          "bytes in RDMA Writes (%d) = the server's rdma_written_bytes (%d), at least the READ "
          "data (%d)" % (write_bytes, stats["rdma_written_bytes"], sent))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iwarpd", required=True)
    p.add_argument("--iwarpctl", required=True)
    p.add_argument("--nfsd", required=True)
    p.add_argument("--nfs", required=True)
    p.add_argument("--decode", required=True)
    p.add_argument("--keep", help="copy the capture here")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(TestFailure("terminated")))
    rc.skip_unless_capture_possible()
    t0 = time.time()
    pair = rc.BridgedPair(args, "nc", PORT)
    nfsd = None
    try:
        if pair.start() == SKIP:
            return SKIP
        export = os.path.join(pair.tmp, "export")
        os.makedirs(export)
        nfsd = ndp.Nfsd(args, pair.tmp, export, pair.a.socket(), "tcp", PORT)
        nfsd.start()
        client = ndp.Client(args, pair.b.socket(), export, "tcp", PORT, server=pair.a.ip)
        listed = session(client, export, pair.tmp)
        stats = nfsd.stats()
        # Every iwarp-nfs command is a connection of its own, ended between
        # calls: a normal end, so no transport error at all.
        check(not any(k.startswith("rdma_error_") and v for k, v in stats.items()) and
              stats["rdma_disconnects"] == stats["rdma_connections_total"],
              "every connection ended normally, no RDMA transport error at the server: %s" %
              ndp.brief(stats))
        nfsd.stop()
        nfsd = None
        pair.stop_capture(args.keep)
        t1 = time.time()
        rdma, rpc = messages(pair.path)
        seen, excused, with_writes = check_rpc(pair.path, stats, listed, rdma, rpc)
        check_data(seen, rdma, pair.tmp, excused)
        check_rdma(pair.path, stats, pair.a.ip, pair.b.ip)
        single = [int(l.split()[0]) for l in
                  rc.tshark(pair.path, "-Y", "_ws.malformed").splitlines() if l.strip()]
        log("NOTE: tshark's single pass marks %d frame(s) malformed %s: replies with a Write list "
            "dissected a second time as if complete (2. in nfs_capture.py); the checks read "
            "tshark -2" % (len(single), single))
        check(set(single) <= with_writes, "every frame malformed in tshark's single pass is a "
              "reply with a Write list (others: %s)" % sorted(set(single) - with_writes))
        rc.check_wire(pair.path, args.decode, two_pass=True, excused=excused)
        pair.stop_daemons()
        log("session and capture %.1f s, tshark and iwarp-decode checks %.1f s" %
            (t1 - t0, time.time() - t1))
    except TestFailure as e:
        log("FAIL: %s" % e)
        return 1
    finally:
        if nfsd is not None:
            nfsd.kill()
        pair.cleanup()
    log("PASS (%.1f s)" % (time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
