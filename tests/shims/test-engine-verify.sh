#!/bin/bash
# The engine (handshake=auto) against every profile passes fio
# verify=crc32c with reads, writes and flushes, over a Unix socket and TCP,
# on the memory and file stores; torus with replication and odd-sized
# requests (read-modify-write across its 512 KiB blocks); the runner store
# (a qcow2 image through tcmu-runner's plugin); trims verified to read back
# zeroes where the profile has TRIM (torus, standard).
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" qemu-img
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

n=0
# start_shim PROFILE ARGS...: a shim on a private socket; sets $uri
start_shim() {
	local profile=$1 export
	shift
	n=$((n + 1))
	case $profile in
	coreos) export=torus ;;
	zeroos) export=default ;;
	*) export= ;;
	esac
	start_bg "$NBD_SHIM" --profile "$profile" --listen "unix:$T/s$n.sock" "$@"
	wait_socket "$T/s$n.sock"
	uri="nbd+unix:///$export?socket=$T/s$n.sock"
}

# start_shim_tcp PROFILE EXPORT ARGS...: the same on a free TCP port
start_shim_tcp() {
	local profile=$1 export=$2 port
	shift 2
	port=$(free_port)
	start_bg "$NBD_SHIM" --profile "$profile" --listen "tcp:127.0.0.1:$port" "$@"
	wait_port "$port"
	uri="nbd://127.0.0.1:$port/$export"
}

# verify_job NAME ARGS...: write, flush every 8 writes, verify
verify_job() {
	local name=$1
	shift
	expect_fio_ok --name="$name" --uri="$uri" --handshake=auto \
		--rw=randwrite --verify=crc32c --fsync=8 --size=16M \
		--iodepth=16 "$@"
	echo "$name: ok"
}

for profile in coreos zeroos standard; do
	start_shim "$profile" --size 64M
	verify_job "$profile-unix-4k" --bs=4k
	verify_job "$profile-unix-mixed" --bsrange=512-256k --blockalign=512 \
		--offset=3M
	verify_job "$profile-read-after-write" --bs=64k --rw=write --iodepth=4
done

start_shim_tcp coreos torus --size 64M
verify_job torus-tcp --bs=4k
start_shim_tcp zeroos default --size 64M
verify_job zeroos-tcp --bs=4k
start_shim_tcp standard "" --size 64M
verify_job standard-tcp --bs=4k --conns=4 --iodepth=64

# stores: file for every profile, torus replicated 3 ways
for profile in coreos zeroos standard; do
	start_shim "$profile" --size 64M --store "file:$T/$profile.img"
	verify_job "$profile-file" --bs=16k
done
start_shim coreos --size 64M --replicas 3 --store "file:$T/rep"
verify_job torus-replicas-3 --bsrange=1k-1m --blockalign=1k
for i in 0 1 2; do
	[ -s "$T/rep.$i" ] || fail "replica file $T/rep.$i missing"
done
cmp -s "$T/rep.0" "$T/rep.1" && cmp -s "$T/rep.0" "$T/rep.2" ||
	fail "the three torus replicas differ"
start_shim coreos --size 64M --replicas 2
verify_job torus-memory-replicas-2 --bs=8k

# trim: write, trim, then every byte must read back as zero (torus clears
# whole 512 KiB blocks, so its trims are whole blocks)
# trim_job NAME BS: on the shim at $uri
trim_job() {
	local name=$1 bs=$2
	expect_fio_ok --name="$name-write" --uri="$uri" --rw=write --bs="$bs" \
		--size=4M --verify=crc32c
	expect_fio_ok --name="$name-trim" --uri="$uri" --rw=randtrim --bs="$bs" \
		--size=4M
	expect_fio_ok --name="$name-zeroes" --uri="$uri" --rw=read --bs="$bs" \
		--size=4M --verify=pattern --verify_pattern=0 --verify_only=1
	echo "$name: ok"
}

start_shim coreos --size 64M
trim_job torus-trim 512k
start_shim coreos --size 64M --replicas 2
trim_job torus-trim-replicas 1m
start_shim standard --size 64M
trim_job standard-trim 64k
start_shim standard --size 64M --store "file:$T/trim.img"
trim_job standard-file-trim 64k
verify_job standard-fua --bs=4k --fua=1
verify_job standard-structured --bs=4k --structured_replies=1

# the runner store (a tcmu-runner plugin, the same registry as
# tcmu-shim's): a qcow2 image behind the standard profile, and the data in
# the image where fio wrote it
qemu-img create -q -f qcow2 "$T/r.qcow2" 64M || fail "qemu-img create failed"
start_shim standard --store "runner:qcow:$T/r.qcow2"
verify_job standard-runner-qcow --bs=64k --rw=write --size=4M --iodepth=4
kill "${_bg_pids[-1]}"
wait "${_bg_pids[-1]}" || fail "nbd-shim over runner:qcow did not exit 0 on SIGTERM"
qemu-img convert -O raw "$T/r.qcow2" "$T/r.raw" || fail "qemu-img convert failed"
[ "$(head -c 4M "$T/r.raw" | tr -d '\0' | wc -c)" -gt 0 ] ||
	fail "the runner store's qcow2 image holds none of the data fio wrote"

# deep queues: the engine holds requests back and sends them in batches
start_shim standard --size 64M
verify_job standard-deep --bs=4k --iodepth=64
verify_job standard-deep-mixed --bsrange=512-128k --blockalign=512 --iodepth=32
