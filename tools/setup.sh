#!/usr/bin/env bash
# Installs what iwarpd needs on Debian 12 (as root), only what is missing.
#   tools/setup.sh [--hugepages N]
# --hugepages N  also reserve N 2-MiB hugepages (if fewer are reserved) and mount
#                hugetlbfs on /dev/hugepages when nothing is mounted there.
#                Without it, iwarpd still runs: it falls back to --no-huge.
set -euo pipefail

hugepages=0
while [ $# -gt 0 ]; do
  case "$1" in
    --hugepages) hugepages=${2:?--hugepages needs a number}; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential meson ninja-build pkg-config clang lld
  libdpdk-dev dpdk libusrsctp-dev libabsl-dev libyaml-cpp-dev libisal-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev libpcap-dev
  python3 python3-pyelftools iproute2 iputils-ping tshark
  liblua5.3-0
  libtirpc-dev rpcbind
  libnfs-dev libnfs-utils
  nlohmann-json3-dev libssl-dev libsodium-dev
  nfs-ganesha nfs-ganesha-vfs
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: missing packages: ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; the answer does not matter here.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: all packages present"
fi

if [ "$hugepages" -gt 0 ] && [ "$(id -u)" -eq 0 ]; then
  have=$(cat /proc/sys/vm/nr_hugepages)
  if [ "$have" -lt "$hugepages" ]; then
    echo "$hugepages" > /proc/sys/vm/nr_hugepages || true
  fi
  if ! grep -q ' /dev/hugepages hugetlbfs ' /proc/mounts; then
    mkdir -p /dev/hugepages
    mount -t hugetlbfs nodev /dev/hugepages || echo "setup.sh: could not mount hugetlbfs; iwarpd will use --no-huge"
  fi
  echo "setup.sh: hugepages reserved: $(cat /proc/sys/vm/nr_hugepages) x 2 MiB"
fi
