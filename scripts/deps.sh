#!/bin/bash
# Install the Debian packages this project needs: what building the engine
# and running a job needs (--for run, scripts/run.sh), or that and what
# the tests and benchmarks need too (--for test, the default:
# scripts/test.sh and scripts/build.sh).
#
# Idempotent: asks dpkg which packages are missing and installs only those
# (running `apt-get update` first only when something is missing). Needs root;
# re-runs itself through sudo when that is available.
#
#   scripts/deps.sh [--for run|test]            install what is missing
#   scripts/deps.sh [--for run|test] --list     print the package list and exit
#   scripts/deps.sh [--for run|test] --check    exit 1 (naming them) if packages are missing

set -euo pipefail

args=("$@")
mode="test"
if [ "${1:-}" = --for ]; then
	case ${2:-} in
	run|test) mode=$2 ;;
	*)
		echo "deps: --for takes run or test, not '${2:-}'" >&2
		exit 2
		;;
	esac
	shift 2
fi

# Building the engine (meson -Dshims=false -Dtests=false) and running a job
# through its embedded default server (nbdkit). fio-source.sh fetches the
# installed fio's source (dpkg-dev) and configures it as Debian did, which
# must see what Debian's fio was built with, or config-host.h would not
# match the binary: CONFIG_LIBAIO, CONFIG_RDMA (librdmacm + libibverbs) and
# CONFIG_LIBNUMA change the layout of struct io_u and struct thread_data,
# and Debian's --enable-libnbd needs libnbd-dev (which also builds
# transport=libnbd). Debian's other build-depends (librbd, glusterfs, pmem,
# gtk for gfio) only enable engines or the gfio program and change no
# header fio exports to engines, so they are not installed.
pkgs=(build-essential meson ninja-build pkg-config python3 dpkg-dev
      fio liburing-dev nbdkit libnbd-dev
      libaio-dev libnuma-dev librdmacm-dev libibverbs-dev zlib1g-dev)

if [ "$mode" = test ]; then

# The shims' stores, the tests' tools and libraries, the man pages' check.
pkgs+=(python3-matplotlib groff-base libcmocka-dev libnbd-bin
       nbd-server qemu-utils redis-server libhiredis-dev libb2-dev)

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

fi

case "${1:-}" in
--list)
	printf '%s\n' "${pkgs[@]}"
	exit 0
	;;
--check|"")
	;;
*)
	echo "usage: $0 [--for run|test] [--list|--check]" >&2
	exit 2
	;;
esac

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[[ $status == ii* ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
	echo "deps: all ${#pkgs[@]} packages for $mode are installed"
	exit 0
fi

if [[ ${1:-} == --check ]]; then
	echo "deps: missing: ${missing[*]} (run scripts/deps.sh as root)" >&2
	exit 1
fi

if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		exec sudo -- "$0" "${args[@]}"
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
