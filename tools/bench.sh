#!/usr/bin/env bash
# Runs the benchmarks (never part of tools/test.sh). Each prints its figure next
# to a baseline measured in the same run; these machines are noisy, so compare
# ratios, not absolute numbers.
# Usage: tools/bench.sh [BENCHMARK_NAME...]
#        tools/bench.sh tcp [--bulk-mib N] [--rr-seconds S]
#          iwarpd's TCP (echo/sink services on net_tap) against the kernel TCP
#          stack over a veth pair, in one run (root; tools/tcp_bench.py)
#        tools/bench.sh iwarp [--count-4k N] [--count-64k N] [--count-send N] [--count-lat N]
#          two iwarpd daemons over net_memif (iwarp_client -> iwarp_responder):
#          RDMA Write goodput at 4 KiB and 64 KiB, 64-byte Send message rate and
#          round trip (no application on the path),
#          next to the kernel TCP stack over a veth pair moving the same bytes
#          (root, hugepages; tools/iwarp_bench.py)
#        tools/bench.sh iwarp-perf [--count-4k N] [--count-64k N] [--count-send N]
#                                  [--count-lat N] [--count-vhost-4k N] [--count-vhost-64k N]
#                                  [--count-pcap-4k N] [--count-pcap-64k N] [--mtus 1500,9000]
#                                  [--links memif,vhost,vhost-tso[,pcap]] [--baseline-iwarpd PATH]
#                                  [--baseline-perf PATH] [--no-pin]
#                                  [--memif-rsize N] [--repeat N]
#          application QPs: iwarp-perf (libiwarp) server and client on two
#          iwarpd daemons over net_memif (rings of 2^14 slots unless
#          --memif-rsize N; MTU 1500: write_bw 4 KiB and 64 KiB, read_bw
#          64 KiB, send_bw 64 B message rate, send_lat and write_lat 64 B
#          round trips)
#          and over vhost-user (net_vhost / net_virtio_user: write_bw 4 KiB and
#          64 KiB at MTU 1500 and 9000; net_pcap on a veth pair with --links
#          ...,pcap), each next to the kernel TCP stack over a veth pair
#          (same MTU, same bytes and pattern) with the ratio (root, hugepages;
#          tools/iwarp_perf_bench.py); --baseline-iwarpd runs each iwarpd row
#          also with that daemon (e.g. the previous build) just before, with
#          the new/baseline ratio; --baseline-perf likewise with a previous
#          iwarp-perf (and the libiwarp linked into it)
#        tools/bench.sh sctp [--count-4k N] [--count-64k N] [--count-send N] [--rows w4k,w64k,s64] [--repeat N]
#          RDMA over SCTP (RFC 5043) against iWARP over TCP/MPA through the same
#          two iwarpd daemons over net_memif: RDMA Write goodput at 4 KiB and
#          64 KiB and 64-byte Send message rate, with ratios (root, hugepages;
#          tools/sctp_bench.py)
#        tools/bench.sh rpc [--count-null N] [--count-1m N] [--depth N]
#          iwarp-rpc-perf: NULL round trip and 1 MiB echo goodput over
#          RPC-over-RDMA on two iwarpd daemons (iWARP, net_memif, one
#          busy-polling worker per core) next to the same program over kernel
#          TCP on a veth pair, with ratios and per-busy-core figures (root,
#          hugepages; tools/rpc_bench.py)
#        tools/bench.sh nfs [--size-mib N] [--seconds S] [--qd N] [--lat-size-mib N]
#                           [--repeat N] [--dir DIR] [--no-pin]
#          iwarp-nfs bench against iwarp-nfsd over RPC-over-RDMA (two iwarpd
#          daemons on net_memif, busy-polling worker per core), iwarp-nfsd
#          over kernel TCP on a veth pair and nfs-ganesha (FSAL VFS) over
#          kernel TCP, alternated: sequential 1 MiB write and read MiB/s,
#          random 4 KiB read and write IOPS and latency percentiles (and
#          4 KiB read latency at queue depth 1), busy cores and MiB/s per
#          busy core per job, with ratios and the NFS issue's targets
#          (root, hugepages, nfs-ganesha; tools/nfs_bench.py)
#        tools/bench.sh pktgen [throughput|flood|fpdu|sctp|tuple]
#          Pktgen-DPDK against iwarpd over net_memif (tools/pktgen/pktgen_traffic.py;
#          the pktgen binary at $PKTGEN or ../shared/pktgen/pktgen): ICMP echo at
#          64..1518 B, a ladder of rates then a binary search, printing the rate
#          offered and the highest rate held with every frame answered, then
#          the round trip of pktgen's latency probes through iwarpd's UDP echo
#          (5 s each: idle, at the held rate and at half of it; min/avg/p50/
#          p99/max); a
#          1 GiB iWARP transfer between two daemons alone and then under pktgen's
#          full-rate flood, printing the flood's rate, the goodput of both runs
#          and their ratio; and FPDU streams replayed into iwarpd's test-mode QP
#          (iwarp_fpdu_test) for 10 s each, 1400 and 64-byte RDMA Writes,
#          Markers off and on, printing the frames offered and FPDUs placed per
#          second and per busy core, then faulty FPDUs of each kind (16 one
#          at a time, 512 in blocks of 64 back to back) checked for their
#          Terminate code; and RDMA over SCTP, 256 MiB alone and under a
#          full-rate SCTP flood at the responder (tools/pktgen/sctp_flood.py:
#          INITs, forged cookies, blind DDP chunks, ABORTs and SHUTDOWNs with
#          wrong tags, malformed packets), printing the flood's rate, the rate
#          the daemon held, both goodputs and their ratio and the per-kind
#          accounting (root, hugepages); and a kernel peer's iWARP transfer
#          (RDMA Writes read back) to iwarpd on net_tap, 20 s alone and 20 s
#          while pktgen, bridged onto the same link, floods its 4-tuple
#          (tools/pktgen/tuple_flood.py: blind and in-window RSTs, SYNs and
#          data, RFC 5961), printing the flood's rate, both goodputs, their
#          ratio and the per-kind accounting (root)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# -Werror is left to the test builds (tools/test.sh): at -O3, g++ 12 reports
# -Warray-bounds false positives inside std::vector's inlined inserts in some
# unit tests, which would stop the benchmark build.
[ -d build-release ] || meson setup build-release --buildtype=release -Dfuzz=disabled -Dwerror=false
meson configure build-release -Dwerror=false
if [ "${1:-}" = tcp ]; then
  shift
  ninja -C build-release dataplane/iwarpd tools/iwarpctl tools/perf/iwarp-tcp-baseline
  exec python3 tools/tcp_bench.py --iwarpd build-release/dataplane/iwarpd \
    --iwarpctl build-release/tools/iwarpctl \
    --tcp-baseline build-release/tools/perf/iwarp-tcp-baseline "$@"
fi
if [ "${1:-}" = iwarp ]; then
  shift
  ninja -C build-release dataplane/iwarpd tools/iwarpctl tools/perf/iwarp-tcp-baseline
  exec python3 tools/iwarp_bench.py --iwarpd build-release/dataplane/iwarpd \
    --iwarpctl build-release/tools/iwarpctl \
    --tcp-baseline build-release/tools/perf/iwarp-tcp-baseline "$@"
fi
if [ "${1:-}" = sctp ]; then
  shift
  ninja -C build-release dataplane/iwarpd tools/iwarpctl
  exec python3 tools/sctp_bench.py --iwarpd build-release/dataplane/iwarpd \
    --iwarpctl build-release/tools/iwarpctl "$@"
fi
if [ "${1:-}" = rpc ]; then
  shift
  ninja -C build-release dataplane/iwarpd tools/iwarpctl tools/rpc/iwarp-rpc-perf
  exec python3 tools/rpc_bench.py --iwarpd build-release/dataplane/iwarpd \
    --iwarpctl build-release/tools/iwarpctl --rpc-perf build-release/tools/rpc/iwarp-rpc-perf "$@"
fi
if [ "${1:-}" = nfs ]; then
  shift
  ninja -C build-release dataplane/iwarpd tools/iwarpctl nfs/iwarp-nfsd nfs/iwarp-nfs
  exec python3 tools/nfs_bench.py --nfsd build-release/nfs/iwarp-nfsd \
    --nfs build-release/nfs/iwarp-nfs --iwarpd build-release/dataplane/iwarpd \
    --iwarpctl build-release/tools/iwarpctl "$@"
fi
if [ "${1:-}" = pktgen ]; then
  shift
  ninja -C build-release dataplane/iwarpd tools/iwarpctl
  which=${1:-all}
  st=0
  if [ "$which" = all ] || [ "$which" = throughput ]; then
    python3 tools/pktgen/pktgen_traffic.py throughput --iwarpd build-release/dataplane/iwarpd \
      --iwarpctl build-release/tools/iwarpctl --sizes 64,128,256,512,1024,1280,1518 \
      --rates 0.02,0.05,0.1,0.2,0.5,1,2,5,100 --step-ms 1000 --search 4 \
      --latency-ms 5000 || st=1
  fi
  if [ "$which" = all ] || [ "$which" = flood ]; then
    python3 tools/pktgen/pktgen_traffic.py flood --iwarpd build-release/dataplane/iwarpd \
      --iwarpctl build-release/tools/iwarpctl --seconds 10 --transfer-mib 1024 || st=1
  fi
  if [ "$which" = all ] || [ "$which" = fpdu ]; then
    python3 tools/pktgen/pktgen_traffic.py fpdu --iwarpd build-release/dataplane/iwarpd \
      --iwarpctl build-release/tools/iwarpctl --seconds 10 --loop-kib 1024 \
      --fault-paced 16 --fault-passes 64 --fault-bursts 8 || st=1
  fi
  if [ "$which" = all ] || [ "$which" = sctp ]; then
    python3 tools/pktgen/sctp_flood.py --iwarpd build-release/dataplane/iwarpd \
      --iwarpctl build-release/tools/iwarpctl --seconds 10 --transfer-mib 256 || st=1
  fi
  if [ "$which" = all ] || [ "$which" = tuple ]; then
    python3 tools/pktgen/tuple_flood.py --iwarpd build-release/dataplane/iwarpd \
      --iwarpctl build-release/tools/iwarpctl --seconds 20 --vcap-mib 1536 \
      --spread-mib 256 || st=1
  fi
  exit $st
fi
if [ "${1:-}" = iwarp-perf ]; then
  shift
  ninja -C build-release dataplane/iwarpd tools/iwarpctl tools/perf/iwarp-perf \
    tools/perf/iwarp-tcp-baseline
  exec python3 tools/iwarp_perf_bench.py --iwarpd build-release/dataplane/iwarpd \
    --iwarpctl build-release/tools/iwarpctl --perf build-release/tools/perf/iwarp-perf "$@"
fi
ninja -C build-release
exec meson test -C build-release --benchmark --verbose --num-processes 1 "$@"
