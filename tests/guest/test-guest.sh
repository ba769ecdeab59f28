#!/bin/bash
# scripts/guest: a command's exit status, its stdout and stderr kept apart
# and byte for byte, the host's files seen from the guest (the built engine),
# a --share written by the guest, --env, and the timeout. Each case boots a
# guest (a few seconds under TCG); the cases that can share one boot do.

: "${TORUS_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TORUS_SRC/tests/lib.sh"

require qemu-system-x86_64 cpio
GUEST=$TORUS_SRC/scripts/guest

# guest ARGS...: scripts/guest with stdout in $T/out, stderr in $T/err; the
# exit status in $rc.
# A boot under TCG very rarely hangs (seen once in CI: no output for the
# test's whole 600 s): each run gets 150 s, and one that timed out without
# asking for it is booted once more, with a note, instead of failing the run.
guest() {
	local try
	for try in 1 2; do
		rc=0
		"$GUEST" --timeout 150 "$@" >"$T/out" 2>"$T/err" || rc=$?
		[ "$rc" = 124 ] && [[ " $* " != *" --timeout "* ]] || return 0
		echo "NOTE: scripts/guest $* timed out after 150 s (try $try): $(tail -n 3 "$T/err")" >&2
	done
}

expect_rc() {
	if [ "$rc" != "$1" ]; then
		echo "--- stdout:" >&2; cat "$T/out" >&2
		echo "--- stderr:" >&2; cat "$T/err" >&2
		fail "$2: expected exit $1, got $rc"
	fi
}

# true: exit 0, nothing on stdout. Its first boot hangs (TORUS_GUEST_TEST_HANG:
# qemu's CPUs never start) and is killed after 1 s: the second boot runs it.
TORUS_GUEST_TEST_HANG=1:1 guest -- true
expect_rc 0 "scripts/guest -- true (the first boot hung)"
[ ! -s "$T/out" ] || fail "scripts/guest -- true printed on stdout: $(head -c 200 "$T/out")"
grep -qE '^guest: (KVM|TCG) ' "$T/err" || fail "scripts/guest did not say KVM or TCG on stderr: $(cat "$T/err")"
grep -q "^guest: the guest did not start the command within the boot time bound of 1 s .*: killed qemu; the console stayed empty$" "$T/err" &&
	grep -qx "guest: booting once more (nothing of the command had run)" "$T/err" ||
	fail "a hung first boot was not reported and booted once more: $(cat "$T/err")"

# Three hung boots: exit 125, saying so.
TORUS_GUEST_TEST_HANG=3:1 guest -- true
expect_rc 125 "three hung boots"
grep -qx "guest: 3 boots hung: giving up (exit 125)" "$T/err" || fail "three hung boots: $(cat "$T/err")"

# A binary round trip: 1 MiB of random bytes from a host file, through the
# guest's cat, back on stdout unchanged; the guest runs in this directory.
head -c 1048576 /dev/urandom >"$T/blob"
guest -- cat blob
expect_rc 0 "cat blob"
cmp -s "$T/blob" "$T/out" || fail "1 MiB through the guest's stdout came back changed ($(stat -c %s "$T/out") bytes)"

# One boot for the rest (a boot is most of a case's time under TCG):
# - the host's files (the built engine) are there, read-only under an
#   overlay the guest may write; a --share is written through to the host;
# - the guest kernel's modules are in /lib/modules/$(uname -r) of the
#   chroot, with /sys and a writable /run;
# - an exit status, and stdout/stderr on their own streams with nothing
#   else (no kernel messages) on stdout.
mkdir "$T/share"
engine=$TORUS_BUILD/engines/libtorus.so
[ -f "$engine" ] || skip "$engine is not built"
guest --share "$T/share" --env WHERE="$T/share" -- sh -c '
	test -r "$1" && sha256sum "$1" | cut -d" " -f1 >"$WHERE/engine.sum"
	echo scratch >/usr/torus-guest-scratch && echo written >"$WHERE/scratch"
	uname -r >"$WHERE/uname"
	test -f /lib/modules/$(uname -r)/modules.dep && test -d /sys/module && test -w /run &&
		echo there >"$WHERE/modules"
	echo to-stdout; echo to-stderr >&2; exit 7' sh "$engine"
expect_rc 7 "sh -c '... exit 7'"
[ "$(cat "$T/out")" = to-stdout ] || fail "stdout: expected 'to-stdout', got '$(cat "$T/out")'"
grep -qx to-stderr "$T/err" || fail "stderr lacks 'to-stderr': $(cat "$T/err")"
grep -q to-stderr "$T/out" && fail "stderr leaked into stdout"
[ "$(cat "$T/share/engine.sum" 2>/dev/null)" = "$(sha256sum "$engine" | cut -d' ' -f1)" ] ||
	fail "the guest's sha256 of $engine differs from the host's"
[ "$(cat "$T/share/scratch" 2>/dev/null)" = written ] ||
	fail "the guest could not write its /usr (an overlay over the host's): $(cat "$T/err")"
[ ! -e /usr/torus-guest-scratch ] || fail "a write to the guest's /usr reached the host"
grep -q amd64 "$T/share/uname" || fail "the guest's uname -r is '$(cat "$T/share/uname" 2>/dev/null)'"
[ "$(cat "$T/share/uname")" != "$(uname -r)" ] || fail "the guest runs the host's kernel?"
[ "$(cat "$T/share/modules" 2>/dev/null)" = there ] ||
	fail "the guest's /lib/modules/\$(uname -r)/modules.dep, /sys/module or a writable /run is missing"

# A timeout kills the guest and says so.
guest --timeout 3 -- sleep 60
expect_rc 124 "--timeout 3 -- sleep 60"
grep -q 'timed out' "$T/err" || fail "no timeout message: $(cat "$T/err")"

echo "PASS: scripts/guest"
