#!/usr/bin/env bash
# Builds iwarpd twice and runs the whole test suite in both builds:
#   build/       g++ -Werror, all suites (unit, integration, conformance, interop,
#                and fuzz: every fuzzer replays its seed corpus)
#   build-asan/  clang -Werror with ASan+UBSan, all suites; the fuzz suite runs
#                each libFuzzer target for FUZZ_SECONDS (default 20)
# Usage (as root on Debian 12): tools/test.sh [--quick]   (--quick: gcc build only)
# The gcc build also runs the interop-long suite (1 GiB each way between the
# kernel and iwarpd, a 1 GiB file through iwarp-nfsd by libnfs over TCP and by
# iwarp-nfs over NFS/RDMA between two daemons, SHA-256 checked; a few
# minutes) and the traffic suite (Pktgen-DPDK against iwarpd over net_memif,
# about 80 s; SKIP without the pktgen binary); the ASan build leaves both
# out. Benchmarks are not part of this run: see tools/bench.sh.
set -uo pipefail
cd "$(dirname "$0")/.."

quick=0
[ "${1:-}" = "--quick" ] && quick=1

tools/setup.sh --hugepages 256 || exit 1

fuzz_seconds=${FUZZ_SECONDS:-20}
status=0
summaries=()

run_build() {  # dir, meson test setup, meson setup args...
  local dir=$1 setup=$2; shift 2
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null || meson setup --wipe "$dir" "$@" || return 1
  else
    meson setup "$dir" "$@" || return 1
  fi
  ninja -C "$dir" || return 1
  # A stale log must not be counted if this run does not get to write one.
  rm -f "$dir"/meson-logs/testlog*.json
  meson test -C "$dir" --setup "$setup" --print-errorlogs --num-processes 2
}

count_results() {  # log file -> "passed failed skipped"
  python3 - "$1" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line).get("result")
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(p, f, s)
PY
}

echo "=== gcc build (build/) ==="
if ! CC=gcc CXX=g++ run_build build long -Dfuzz=disabled; then status=1; fi
# meson names the log after the test setup: testlog-SETUP.json.
log=build/meson-logs/testlog-long.json
[ -f "$log" ] && summaries+=("gcc $(count_results "$log")")

if [ $quick -eq 0 ]; then
  echo "=== clang ASan+UBSan build (build-asan/) ==="
  if ! CC=clang CXX=clang++ run_build build-asan default -Db_sanitize=address,undefined \
      -Db_lundef=false -Dfuzz=enabled -Dfuzz_seconds="$fuzz_seconds"; then status=1; fi
  log=build-asan/meson-logs/testlog-default.json
  [ -f "$log" ] && summaries+=("asan $(count_results "$log")")
fi

tp=0 tf=0 ts=0
for s in "${summaries[@]}"; do
  read -r name p f sk <<<"$s"
  echo "$name: $p passed, $f failed, $sk skipped"
  tp=$((tp + p)); tf=$((tf + f)); ts=$((ts + sk))
done
[ ${#summaries[@]} -eq 0 ] && tf=1
[ $tf -gt 0 ] && status=1
echo "total: $tp passed, $tf failed, $ts skipped"
exit $status
