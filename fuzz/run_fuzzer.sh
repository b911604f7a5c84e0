#!/bin/sh
# Runs one libFuzzer target for a bounded time.
# usage: run_fuzzer.sh FUZZER SEED_DIR WORK_DIR SECONDS
# New inputs go to WORK_DIR (inside the build tree), never into the seed corpus.
# libFuzzer exits 77 on a finding by default, which meson would read as SKIP:
# findings exit 1.
set -eu
fuzzer=$1 seeds=$2 work=$3 secs=$4
mkdir -p "$work"
exec "$fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -print_final_stats=1 "$work" "$seeds"
