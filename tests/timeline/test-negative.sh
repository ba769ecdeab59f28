#!/bin/bash
# Description: no phase below zero. scripts/compare --timeline, one round of
# 1 s, on jobs/randrw.fio (64 KiB randrw QD64, TORUS_SIZE=64M) and on a
# 4 KiB randread at QD16, through engine-nbd, engine-tcmu, engine-libnbd
# (when the engine has libnbd) and kernel-loop (as root, with nbdfuse,
# losetup and bpftrace): every path's phases there, none below zero beyond
# the clocks' error (timelinelib.below_zero: not a mean or median, nor
# one I/O's phase), every engine I/O joined with its server's record
# (check_negative.py). Each
# stamp is read on the causal side of its event; one read on the wrong
# side (a reply stamped after its send, a publish stamped late) shows here.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" python3
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -x "$TCMU_SHIM" ] || skip "$TCMU_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

# TORUS_NEGATIVE_PATHS, a comma-separated list of the paths to keep (of
# those that run here), narrows the run to the paths a mutation of
# tests/meta/mutations.py breaks.
paths=engine-nbd,engine-tcmu
"$FIO" --enghelp="$ENGINE" 2>&1 | grep -q '^tls_psk_file ' && paths+=,engine-libnbd
if [[ ,${TORUS_NEGATIVE_PATHS:-kernel-loop}, != *,kernel-loop,* ]]; then
	:
elif [ "$(id -u)" = 0 ] && command -v nbdfuse >/dev/null &&
	command -v losetup >/dev/null && command -v bpftrace >/dev/null &&
	python3 "$TORUS_SRC/scripts/timeline_kernel.py" check kernel-loop >/dev/null 2>&1; then
	paths+=,kernel-loop
else
	echo "kernel-loop left out: it needs root, nbdfuse, losetup and bpftrace"
fi
if [ -n "${TORUS_NEGATIVE_PATHS:-}" ]; then
	kept=
	for p in ${paths//,/ }; do
		[[ ,$TORUS_NEGATIVE_PATHS, == *,$p,* ]] && kept+=${kept:+,}$p
	done
	[ -n "$kept" ] || fail "TORUS_NEGATIVE_PATHS=$TORUS_NEGATIVE_PATHS: none of them runs here ($paths)"
	paths=$kept
fi

cat >"$T/qd16.fio" <<'JOB'
[qd16]
rw=randread
bs=4k
iodepth=16
size=64m
JOB

# phases JOB NAME: compare --timeline on JOB into $T/NAME, then the check
phases() {
	TORUS_SIZE=64M "$TORUS_SRC/scripts/compare" "$1" --timeline --paths "$paths" \
		--rounds 1 --seconds 1 --size 64M --results "$T/$2" --engine "$ENGINE" \
		--nbd-shim "$NBD_SHIM" --tcmu-shim "$TCMU_SHIM" >"$T/$2.out" 2>&1 ||
		{ cat "$T/$2.out" >&2; fail "scripts/compare --timeline $1 exited non-zero"; }
	python3 "$TORUS_SRC/tests/timeline/check_negative.py" "$T/$2" ${paths//,/ } ||
		{ sed -n '/## Where the time goes/,/^$/p;/^| path | phase/,/^$/p' \
			"$T/$2/report.md" >&2
		  fail "phases below zero on $1 (above)"; }
}

phases "$TORUS_SRC/jobs/randrw.fio" randrw
phases "$T/qd16.fio" qd16
echo "PASS"
