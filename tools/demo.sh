#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and runs iwarpd
# on the built-in default configuration (config/examples/default.yaml) inside a
# private network namespace, drives traffic at it from the Linux kernel and
# prints the daemon's counters; moves RDMA traffic through the daemon between
# two application processes (iwarp-perf write_bw, read_bw and send_lat over a
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
cleanup() {
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
