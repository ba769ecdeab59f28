#!/bin/bash
# Install the Debian packages this project needs to build, test and benchmark.
#
# Idempotent: asks dpkg which packages are missing and installs only those
# (running `apt-get update` first only when something is missing). Needs root;
# re-runs itself through sudo when that is available.
#
#   scripts/deps.sh            install what is missing
#   scripts/deps.sh --list     print the package list and exit
#   scripts/deps.sh --check    exit 1 (naming them) if packages are missing

set -euo pipefail

# Build and test tools.
pkgs=(build-essential meson ninja-build pkg-config python3 python3-matplotlib
      dpkg-dev groff-base
      fio liburing-dev libcmocka-dev libnbd-bin libnbd-dev
      nbdkit nbd-server qemu-utils redis-server libhiredis-dev libb2-dev)

# Hardening: libFuzzer targets (clang), the shim under valgrind, network
# namespaces for the multi-host test (iproute2).
pkgs+=(clang libfuzzer-14-dev libclang-rt-14-dev valgrind iproute2)

# transport=libnbd's TLS tests and scripts/bench's TLS sections make
# certificates and PSK files with certtool and psktool (scripts/harness.py;
# libnbd-dev, above, builds the transport).
pkgs+=(gnutls-bin)

# The scripts-shellcheck test: shellcheck over the shell scripts and the
# guest's /init.
pkgs+=(shellcheck)

# The crash test's volatile layer: nbdfuse (libnbd-bin, above) mounts an NBD
# export as a file and needs fusermount3 to mount and unmount it.
pkgs+=(fuse3)

# TCMU: tcmu-runner's handler plugins (loaded by the handler host), and the
# qemu guest that runs Debian's kernel for the kernel paths (scripts/guest):
# qemu itself, a static busybox for its initramfs, cpio to pack it; the
# kernel's NBD client's userspace half (nbd-client, for scripts/nbd-kernel in
# the guest); socat, which relays the guest's TCP connections to a server on a
# Unix socket on the host (scripts/compare).
pkgs+=(tcmu-runner qemu-system-x86 busybox-static cpio nbd-client socat)

# The kernel paths' timeline (scripts/timeline_kernel.py, scripts/bpf/):
# bpftrace on tracepoints.
pkgs+=(bpftrace)

# What fio's ./configure must see so that config-host.h matches Debian's fio
# binary (scripts/fio-source.sh): Debian's fio build-depends on these, and
# CONFIG_LIBAIO, CONFIG_RDMA (librdmacm + libibverbs) and CONFIG_LIBNUMA change
# the layout of struct io_u and struct thread_data. libnbd-dev (above) is
# needed by Debian's --enable-libnbd. Debian's other build-depends (librbd,
# glusterfs, pmem, gtk for gfio) only enable engines or the gfio program and
# change no header fio exports to engines, so they are not installed here.
pkgs+=(libaio-dev libnuma-dev librdmacm-dev libibverbs-dev zlib1g-dev)

case "${1:-}" in
--list)
	printf '%s\n' "${pkgs[@]}"
	exit 0
	;;
--check|"")
	;;
*)
	echo "usage: $0 [--list|--check]" >&2
	exit 2
	;;
esac

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[[ $status == ii* ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
	echo "deps: all ${#pkgs[@]} packages are installed"
	exit 0
fi

if [[ ${1:-} == --check ]]; then
	echo "deps: missing: ${missing[*]} (run scripts/deps.sh as root)" >&2
	exit 1
fi

if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		exec sudo -- "$0" "$@"
	fi
	echo "deps: must run as root to install: ${missing[*]}" >&2
	echo "deps: re-run as root (e.g. 'su -c $0')" >&2
	exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/torus-deps.XXXXXX)
trap 'rm -f "$log"' EXIT
if ! { apt-get -q update && apt-get -q install -y --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
	tail -n 20 "$log" >&2
	echo "deps: apt-get failed (output above); check /etc/apt/sources.list.d and the network" >&2
	exit 1
fi
