#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and runs iwarpd
# on the built-in default configuration (config/examples/default.yaml) inside a
# private network namespace, drives traffic at it from the Linux kernel and
# prints the daemon's counters; then shows the iWARP wire path by decoding a
# reference RDMA session built by iwarpd's own encoders.
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
cleanup() {
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
