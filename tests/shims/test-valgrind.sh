#!/bin/bash
# nbd-shim under valgrind memcheck, every profile (torus, zeroos, standard):
# the engine runs a short fio verify job against it (writes, flushes, reads;
# trims where the profile has them; a file store and torus replication too),
# the shim is stopped with SIGTERM as a service manager would, and valgrind
# must report no error and no definitely lost block, and the shim must exit 0.
# A sanitized build (TORUS_SANITIZE=1) skips it: valgrind cannot run an
# ASan-instrumented program; the normal build's suite runs it.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

[ "${TORUS_SANITIZE:-0}" = 1 ] && skip "the shim is built with ASan here; valgrind runs in the normal build"
require valgrind "$FIO"
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

VG_ERR=99
n=0
# vg_shim NAME PROFILE ARGS...: the shim under valgrind on a private socket;
# sets $uri and $vg_pid, valgrind's log is $T/NAME.vg
vg_shim() {
	local name=$1 profile=$2 export i
	shift 2
	n=$((n + 1))
	case $profile in
	coreos) export=torus ;;
	zeroos) export=default ;;
	*) export= ;;
	esac
	start_bg valgrind --tool=memcheck --error-exitcode=$VG_ERR --leak-check=full \
		--show-leak-kinds=definite --errors-for-leak-kinds=definite \
		--track-origins=yes --log-file="$T/$name.vg" \
		"$NBD_SHIM" --profile "$profile" --listen "unix:$T/vg$n.sock" "$@"
	vg_pid=${_bg_pids[-1]}
	# valgrind starts slowly, on a busy machine more so than wait_socket allows
	for ((i = 0; i < 600; i++)); do
		[ -S "$T/vg$n.sock" ] && break
		kill -0 "$vg_pid" 2>/dev/null || { cat "$T/$name.vg" >&2; fail "$name: the shim exited at start"; }
		sleep 0.1
	done
	[ -S "$T/vg$n.sock" ] || fail "$name: no socket from the shim under valgrind within 60 s"
	uri="nbd+unix:///$export?socket=$T/vg$n.sock"
}

# vg_stop NAME: SIGTERM the shim, wait for it, check valgrind's verdict
vg_stop() {
	local name=$1 rc
	kill -TERM "$vg_pid"
	wait "$vg_pid"
	rc=$?
	if [ $rc -ne 0 ] || ! grep -q 'ERROR SUMMARY: 0 errors' "$T/$name.vg" ||
		grep -q 'definitely lost: [1-9]' "$T/$name.vg"; then
		cat "$T/$name.vg" >&2
		[ $rc -eq $VG_ERR ] && fail "$name: valgrind found errors in nbd-shim (log above)"
		fail "$name: nbd-shim under valgrind exited with status $rc (log above)"
	fi
	grep -E 'ERROR SUMMARY|definitely lost|in use at exit' "$T/$name.vg" | sed "s/^==[0-9]*==/$name:/"
}

# verify NAME ARGS...: write with a flush every 8 writes, then verify
verify() {
	local name=$1
	shift
	expect_fio_ok --name="$name" --uri="$uri" --rw=randwrite --verify=crc32c \
		--fsync=8 --size=4M --iodepth=8 "$@"
}

for profile in coreos zeroos standard; do
	vg_shim "$profile" "$profile" --size 16M --store memory
	verify "$profile-4k" --bs=4k
	verify "$profile-mixed" --bsrange=512-128k --blockalign=512 --offset=1M --conns=1
	case $profile in
	coreos | standard)
		expect_fio_ok --name="$profile-trim" --uri="$uri" --rw=randtrim --bs=512k --size=4M ;;
	esac
	[ "$profile" = standard ] && verify standard-structured --bs=4k --structured_replies=1
	vg_stop "$profile"
done

vg_shim standard-file standard --size 16M --store "file:$T/std.img"
verify standard-file --bs=16k --fua=1
vg_stop standard-file

vg_shim torus-replicas coreos --size 16M --replicas 2 --store "file:$T/rep"
verify torus-replicas --bsrange=1k-256k --blockalign=1k
vg_stop torus-replicas
echo "PASS"
