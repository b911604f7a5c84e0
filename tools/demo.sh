#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, moves RDMA
# Write, Read and Send traffic between two iwarpd daemons over net_memif
# (first the built-in iwarp_client and iwarp_responder services, then two
# application processes running iwarp-perf, one on each daemon, then ONC RPC
# calls over RPC-over-RDMA between iwarp-rpc-perf processes on the two
# daemons; data verified, figures printed); serves files with iwarp-nfsd
# (NFSv3 over RPC-over-RDMA between the two daemons: a 64 MiB file copied in
# and out, SHA-256 compared, a short bench); then runs iwarpd on the built-in default
# configuration (config/examples/default.yaml) inside a private network
# namespace, drives traffic at it from the Linux kernel and prints the
# daemon's counters; moves RDMA traffic through the daemon between two
# application processes (iwarp-perf write_bw, read_bw and send_lat over a
# loopback QP, data verified) and shows `iwarpctl app`; then shows the iWARP
# wire path by decoding a reference RDMA session built by iwarpd's own
# encoders.
# Usage (as root on Debian 12): tools/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "demo.sh: run as root (it installs packages and creates a network namespace)" >&2
  exit 1
fi

tools/setup.sh --hugepages 256
if [ ! -d build ]; then meson setup build -Dfuzz=disabled; fi
ninja -C build

ns="iwarpd-demo-$$"
log="$(mktemp /tmp/iwarpd-demo.XXXXXX.log)"
pid=""
perf_pid=""
nfsd_pid=""
cleanup() {
  if [ -n "$nfsd_pid" ] && kill -0 "$nfsd_pid" 2>/dev/null; then
    kill -TERM "$nfsd_pid" 2>/dev/null || true
    wait "$nfsd_pid" 2>/dev/null || true
  fi
  if declare -F stop_pair >/dev/null; then stop_pair; fi
  if [ -n "$perf_pid" ] && kill -0 "$perf_pid" 2>/dev/null; then
    kill -TERM "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
  fi
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT

# iWARP between two daemons: A runs iwarp_responder services, B iwarp_client
# services (RDMA Write read back, RDMA Read, Sends echoed; every byte
# compared, SHA-256 shown), joined by a net_memif pair.
demo_dir="$(mktemp -d /tmp/iwarpd-demo.XXXXXX)"
pid_a=""
pid_b=""
stop_pair() {
  for p in "$pid_b" "$pid_a"; do
    if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill -TERM "$p"; wait "$p" || true; fi
  done
  pid_a=""
  pid_b=""
}
pair_config() {  # pair_config PREFIX MAIN WORKER ROLE IP: the common part
  cat <<EOF_CFG
version: 1
eal: {main_lcore: $2, memory_mb: 128, hugepages: on, file_prefix: $1}
ports:
  - {name: m0, vdev: "net_memif0,role=$4,socket=$demo_dir/memif.sock,socket-abstract=no"}
interfaces:
  - {port: m0, ipv4: $5/24}
workers: {lcores: [$3], idle_sleep_us: 20}
app_interface: {enabled: true, socket_dir: $demo_dir}
tcp: {send_buffer_bytes: 1048576, receive_buffer_bytes: 1048576}
sctp: {enabled: true}
EOF_CFG
}
{ pair_config iwarpd-demo-a 0 1 server 198.18.1.1; cat <<'EOF_CFG'
iwarp: {qps_per_service: 4, scratch_bytes: 16777216, recv_buffers: 8, recv_buffer_bytes: 65536}
services:
  - {name: responder, type: iwarp_responder, port: 9999}
EOF_CFG
} >"$demo_dir/a.yaml"
{ pair_config iwarpd-demo-b 1 0 client 198.18.1.2; cat <<'EOF_CFG'
services:
  - {name: write-4k, type: iwarp_client, remote: 198.18.1.1, remote_port: 9999,
     start_delay_ms: 500, op: write, message_bytes: 4096, count: 5000, queue_depth: 8}
  - {name: read-64k, type: iwarp_client, remote: 198.18.1.1, remote_port: 9999,
     start_delay_ms: 500, op: read, message_bytes: 65536, count: 1000, queue_depth: 8}
  - {name: send-64, type: iwarp_client, remote: 198.18.1.1, remote_port: 9999,
     start_delay_ms: 500, op: send, message_bytes: 64, count: 10000, queue_depth: 8}
  - {name: write-16m, type: iwarp_client, remote: 198.18.1.1, remote_port: 9999,
     start_delay_ms: 500, op: write, message_bytes: 16777216, count: 4, queue_depth: 1}
EOF_CFG
} >"$demo_dir/b.yaml"
echo
echo "=== iWARP between two iwarpd daemons over net_memif: A (198.18.1.1) runs an"
echo "    iwarp_responder on port 9999, B (198.18.1.2) four iwarp_client workloads"
build/dataplane/iwarpd --config "$demo_dir/a.yaml" >"$demo_dir/a.log" 2>&1 &
pid_a=$!
for _ in $(seq 1 100); do grep -q "running; SIGINT" "$demo_dir/a.log" && break; sleep 0.1; done
build/dataplane/iwarpd --config "$demo_dir/b.yaml" >"$demo_dir/b.log" 2>&1 &
pid_b=$!
for _ in $(seq 1 300); do
  left="$(build/tools/iwarpctl --prefix iwarpd-demo-b services 2>/dev/null | grep -c "^  run running" || true)"
  done_runs="$(build/tools/iwarpctl --prefix iwarpd-demo-b services 2>/dev/null | grep -c "^  run \(ok\|failed\)" || true)"
  [ "$done_runs" = 4 ] && [ "$left" = 0 ] && break
  sleep 0.2
done
echo
echo "=== iwarpctl services on B (each run: messages, bytes, time, goodput, SHA-256)"
build/tools/iwarpctl --prefix iwarpd-demo-b services
echo
echo "=== iwarpctl qps on B (negotiated MPA parameters and engine counters)"
build/tools/iwarpctl --prefix iwarpd-demo-b qps
echo
echo "=== iwarpctl services on A (the responder's side)"
build/tools/iwarpctl --prefix iwarpd-demo-a services

# Applications on the two daemons: an iwarp-perf server on A's socket, the
# client on B's socket connecting to A's address. Each work request crosses
# the wire as iWARP (MPA with CRC, DDP, RDMAP) between the two daemons and is
# placed straight into the other application's registered memory; both sides
# check every byte (-V).
run_pair_perf() {  # run_pair_perf TEST ARGS...
  local test="$1"; shift
  local out; out="$(mktemp /tmp/iwarpd-demo.XXXXXX.perf)"
  build/tools/perf/iwarp-perf "$test" -S "$demo_dir/iwarpd-demo-a.sock" -p 18515 -V "$@" >"$out" 2>&1 &
  perf_pid=$!
  for _ in $(seq 1 100); do grep -q "waiting for a client" "$out" && break; sleep 0.1; done
  echo
  echo "=== iwarp-perf $test $* between applications on B and A (client table)"
  build/tools/perf/iwarp-perf "$test" -S "$demo_dir/iwarpd-demo-b.sock" -p 18515 -V "$@" 198.18.1.1
  wait "$perf_pid"
  perf_pid=""
  rm -f "$out"
}
run_pair_perf write_bw -s 65536 -n 2000
run_pair_perf read_bw -s 65536 -n 2000
run_pair_perf send_lat -s 64 -n 2000
# The same applications over RDMA over SCTP (RFC 5043): the DDP/RDMAP engine
# on a DDP stream of an SCTP association instead of MPA over TCP.
run_pair_perf write_bw -s 65536 -n 2000 --transport sctp
run_pair_perf send_lat -s 64 -n 2000 --transport sctp
echo
echo "=== iwarpctl sctp on B (associations, usrsctp packets, DDP sessions)"
build/tools/iwarpctl --prefix iwarpd-demo-b sctp

# ONC RPC over RPC-over-RDMA v1 (RFC 8166) between applications on the two
# daemons: the iwarp-rpc-perf server on A, its client on B. NULL calls go
# inline in Sends; 1 MiB echoes move their argument by RDMA Read of the
# client's Read chunk and their result by RDMA Write into its Write chunk.
run_rpc_perf() {  # run_rpc_perf ARGS...
  local out; out="$(mktemp /tmp/iwarpd-demo.XXXXXX.rpc)"
  build/tools/rpc/iwarp-rpc-perf --server -S "$demo_dir/iwarpd-demo-a.sock" >"$out" 2>&1 &
  perf_pid=$!
  for _ in $(seq 1 100); do grep -q "waiting for clients" "$out" && break; sleep 0.1; done
  echo
  echo "=== iwarp-rpc-perf $* (RPC-over-RDMA from B to A; every echoed byte checked)"
  build/tools/rpc/iwarp-rpc-perf --client 198.18.1.1 -S "$demo_dir/iwarpd-demo-b.sock" "$@"
  kill -TERM "$perf_pid" 2>/dev/null || true
  wait "$perf_pid" || true
  perf_pid=""
  rm -f "$out"
}
run_rpc_perf --test null --count 2000
run_rpc_perf --test echo --size 1048576 --count 200 --depth 4

# The storage service over RDMA: iwarp-nfsd is an application of daemon A
# and serves a scratch directory over NFSv3 on RPC-over-RDMA (RFC 8267, port
# 20049 of 198.18.1.1); iwarp-nfs on daemon B copies a 64 MiB file into the
# export and back: WRITE data pulled by the server's RDMA Reads, READ data
# pushed by its RDMA Writes, placed straight into registered buffers.
nfs_dir="$demo_dir/nfs"
mkdir -p "$nfs_dir/export" "$nfs_dir/state"
cat >"$nfs_dir/nfsd.yaml" <<EOF_NFS
version: 1
listen: {address: 127.0.0.1, nfs_port: 20490, mount_port: 20491}
state_dir: $nfs_dir/state
rpcbind: off
rdma: {socket: $demo_dir/iwarpd-demo-a.sock, port: 20049, transport: tcp}
exports:
  - path: $nfs_dir/export
    clients: [127.0.0.1, 198.18.1.0/24]
    access: rw
    root_squash: false
EOF_NFS
build/nfs/iwarp-nfsd --config "$nfs_dir/nfsd.yaml" 2>"$nfs_dir/nfsd.log" &
nfsd_pid=$!
for _ in $(seq 1 100); do grep -q "serving" "$nfs_dir/nfsd.log" && break; sleep 0.1; done
head -n 1 "$nfs_dir/nfsd.log"
nfs=(build/nfs/iwarp-nfs --export "$nfs_dir/export" --server 198.18.1.1 --rdma tcp
     --socket "$demo_dir/iwarpd-demo-b.sock")
head -c 67108864 /dev/urandom >"$nfs_dir/file.bin"
echo
echo "=== iwarp-nfs on B -> iwarp-nfsd on A over NFS/RDMA: put a 64 MiB file, list, get it back"
"${nfs[@]}" put "$nfs_dir/file.bin" file.bin
"${nfs[@]}" ls
"${nfs[@]}" get file.bin "$nfs_dir/back.bin"
echo "sha256 sent (B):      $(sha256sum <"$nfs_dir/file.bin" | cut -d' ' -f1)"
echo "sha256 stored (A):    $(sha256sum <"$nfs_dir/export/file.bin" | cut -d' ' -f1)"
echo "sha256 read back (B): $(sha256sum <"$nfs_dir/back.bin" | cut -d' ' -f1)"
echo
echo "=== iwarp-nfs bench over NFS/RDMA (sequential 1 MiB, random 4 KiB at queue depth 8)"
"${nfs[@]}" bench --size-mib 64 --qd 8 --seconds 2 || true
echo
echo "=== iwarp-nfsd counters (SIGUSR1): RDMA chunks and bytes"
kill -USR1 "$nfsd_pid"
sleep 0.5
grep -E "^(nfs_calls_(read|write|commit)|bytes_(read|written)|rdma_(calls|read_chunks|write_chunks|reply_chunks|read_bytes|written_bytes)) " \
  "$nfs_dir/state/stats" || true
kill -TERM "$nfsd_pid" 2>/dev/null || true
wait "$nfsd_pid" 2>/dev/null || true
nfsd_pid=""
stop_pair
rm -rf "$demo_dir"

echo
echo "=== iwarpd on config/examples/default.yaml, in network namespace $ns"
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up
ip netns exec "$ns" build/dataplane/iwarpd --config config/examples/default.yaml >"$log" 2>&1 &
pid=$!

# The TAP device appears once the port is up.
for _ in $(seq 1 150); do
  if ip netns exec "$ns" ip link show iw0 >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$log"; echo "iwarpd exited" >&2; exit 1; fi
  sleep 0.1
done
ip netns exec "$ns" ip addr add 198.18.0.2/24 dev iw0
ip netns exec "$ns" ip link set iw0 up
sleep 0.5
sed -n '1,40p' "$log"

echo
echo "=== the kernel (198.18.0.2) pings iwarpd (198.18.0.1): 500 echo requests"
ip netns exec "$ns" ping -c 500 -i 0.002 -q 198.18.0.1
ip netns exec "$ns" ip neigh show 198.18.0.1

echo
echo "=== iwarpctl stats"
build/tools/iwarpctl --prefix iwarpd stats
echo
echo "=== iwarpctl ports"
build/tools/iwarpctl --prefix iwarpd ports

# RDMA between two applications through the daemon: an iwarp-perf server and
# client (each links libiwarp only) on the daemon's application socket. Today
# QPs reach listeners of the same daemon ("loopback QPs"); the bytes are moved
# by iwarpd between the two processes' registered memory.
sock=/run/iwarpd/iwarpd.sock
for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
run_perf() {  # run_perf TEST ARGS...: one server and one client, client's table shown
  local test="$1"; shift
  local out; out="$(mktemp /tmp/iwarpd-demo.XXXXXX.perf)"
  build/tools/perf/iwarp-perf "$test" -S "$sock" "$@" >"$out" 2>&1 &
  perf_pid=$!
  for _ in $(seq 1 50); do grep -q "waiting for a client" "$out" && break; sleep 0.1; done
  echo
  echo "=== iwarp-perf $test $* (client table; the server checks the data)"
  build/tools/perf/iwarp-perf "$test" -S "$sock" "$@" 127.0.0.1
  wait "$perf_pid"
  perf_pid=""
  grep "^server:" "$out" | tail -n 3
  rm -f "$out"
}
run_perf write_bw -a -n 500 --verify
run_perf read_bw -s 65536 -n 5000 --verify
run_perf send_lat -s 64 -n 5000 --verify

echo
echo "=== iwarpctl app (the daemon's view of the applications)"
build/tools/iwarpctl --prefix iwarpd app

kill -TERM "$pid"
wait "$pid" && echo "iwarpd stopped cleanly (exit 0)"
pid=""

echo
echo "=== the iWARP wire path: a reference RDMA session (MPA Rev 2 with CRC and"
echo "    Markers, RTR, RPC-over-RDMA in Sends, RDMA Write, RDMA Read, Send with"
echo "    Invalidate) built by iwarpd's encoders and checked by iwarp-decode"
cap="$(mktemp /tmp/iwarpd-demo.XXXXXX.pcap)"
build/tools/decode/iwarp-synth --markers --write-size 65536 --read-size 16384 "$cap"
build/tools/decode/iwarp-decode "$cap"
rm -f "$cap" "$log"
