#!/usr/bin/env bash
# Runs the benchmarks (never part of tools/test.sh). Each prints its figure next
# to a baseline measured in the same run; these machines are noisy, so compare
# ratios, not absolute numbers.
# Usage: tools/bench.sh [BENCHMARK_NAME...]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
[ -d build-release ] || meson setup build-release --buildtype=release -Dfuzz=disabled
ninja -C build-release
exec meson test -C build-release --benchmark --verbose --num-processes 1 "$@"
