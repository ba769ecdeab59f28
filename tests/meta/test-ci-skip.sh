#!/bin/bash
# With CI=true a test that skips fails the run, naming the test and its
# reason: engine-enghelp is run with no fio on PATH, and the check that
# scripts/test.sh makes of every meson run (skips.py check --fatal, as with
# CI=true) must fail and say why; without --fatal it names the skip only.
# Then the same for a Python test with one skipped case, run as meson runs
# every Python test (tests/pyrun.py): meson records a SKIP, CI=true fails
# the pass (scripts/passes.sh, as scripts/test.sh runs it) unless the
# allow-list names the test; a failed case fails, a module with no case too.
. "$TORUS_SRC/tests/lib.sh"
require meson ninja

# A PATH with every tool but fio.
mkdir "$T/bin"
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
	for f in "$d"/*; do
		[ -e "$f" ] || continue
		n=${f##*/}
		[ "$n" = fio ] || [ -e "$T/bin/$n" ] || ln -s "$f" "$T/bin/$n"
	done
done
PATH=$T/bin command -v fio >/dev/null && fail "fio still on the reduced PATH"

PATH=$T/bin FIO=fio meson test -C "$TORUS_BUILD" --no-rebuild --logbase meta-ci-skip \
	engine-enghelp >"$T/meson.out" 2>&1 ||
	{ cat "$T/meson.out" >&2; fail "meson test failed instead of skipping engine-enghelp"; }
log=$TORUS_BUILD/meson-logs/meta-ci-skip.json
grep -q '"result": "SKIP"' "$log" || fail "engine-enghelp did not skip without fio: $(cat "$log")"

want="skips: normal: engine-enghelp: SKIPPED: fio is not installed (scripts/deps.sh installs it)"
rc=0
python3 "$TORUS_SRC/scripts/skips.py" check "$log" --pass normal --fatal >"$T/ci.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "with --fatal (CI=true) a skipped engine-enghelp exited $rc, not 1: $(cat "$T/ci.out")"
grep -qxF "$want" "$T/ci.out" || fail "the CI check did not name the test and its reason: $(cat "$T/ci.out")"
grep -qF "test(s) skipped that CI must run" "$T/ci.out" || fail "no summary of what CI must run: $(cat "$T/ci.out")"

rc=0
python3 "$TORUS_SRC/scripts/skips.py" check "$log" --pass normal >"$T/dev.out" 2>&1 || rc=$?
[ $rc = 0 ] || fail "without --fatal a skip failed the run: $(cat "$T/dev.out")"
grep -qxF "$want" "$T/dev.out" || fail "without --fatal the skip was not named: $(cat "$T/dev.out")"

# A Python test with a skipped case, in a meson project of its own.
pyrun=$TORUS_SRC/tests/pyrun.py
mkdir "$T/py"
cat >"$T/py/test_frob.py" <<'PY'
import unittest


class Frob(unittest.TestCase):
    def test_fine(self):
        self.assertTrue(True)

    def test_frob(self):
        self.skipTest("frob is not installed")
PY
cat >"$T/py/meson.build" <<MESON
project('pyskip', [])
test('py-frob', find_program('$pyrun'), args : [files('test_frob.py')])
MESON
meson setup "$T/py-build" "$T/py" >"$T/py-setup.out" 2>&1 || fail "meson setup: $(cat "$T/py-setup.out")"

rc=0
CI=true bash -c '
	set -euo pipefail
	. "$1/scripts/passes.sh"
	pass normal "normal" meson_suite normal "$2"
	passes_summary' run "$TORUS_SRC" "$T/py-build" >"$T/py-ci.out" 2>&1 || rc=$?
grep -q '"result": "SKIP"' "$T/py-build/meson-logs/testlog.json" ||
	fail "a Python test with a skipped case did not SKIP in meson: $(cat "$T/py-ci.out")"
[ $rc = 1 ] || fail "CI=true: a Python test with a skipped case exited $rc, not 1: $(cat "$T/py-ci.out")"
want="skips: normal: py-frob: SKIPPED: 1 case(s) skipped: Frob.test_frob: frob is not installed"
grep -qF "  $want" "$T/py-ci.out" || fail "CI=true: the skipped case is not named: $(cat "$T/py-ci.out")"

# Allowed by an allow-list entry, the same skip passes the check.
echo "normal py-frob frob is not on CI's machines" >"$T/allow"
python3 "$TORUS_SRC/scripts/skips.py" check "$T/py-build/meson-logs/testlog.json" --pass normal \
	--allow "$T/allow" --fatal >"$T/py-allow.out" 2>&1 ||
	fail "an allowed skip failed the CI check: $(cat "$T/py-allow.out")"

# The runner itself: all passed 0, a failed case 1, no case at all 1.
sed -i '/def test_frob/,$d' "$T/py/test_frob.py"
python3 "$pyrun" "$T/py/test_frob.py" >"$T/pyrun.out" 2>&1 ||
	fail "pyrun.py: a module whose cases pass did not exit 0: $(cat "$T/pyrun.out")"
printf '    def test_bad(self):\n        self.fail("bad")\n' >>"$T/py/test_frob.py"
rc=0
python3 "$pyrun" "$T/py/test_frob.py" >"$T/pyrun.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "pyrun.py: a failed case exited $rc, not 1: $(cat "$T/pyrun.out")"
printf 'import unittest\n' >"$T/py/test_none.py"
rc=0
python3 "$pyrun" "$T/py/test_none.py" >"$T/pyrun.out" 2>&1 || rc=$?
[ $rc = 1 ] && grep -qF "has no test cases" "$T/pyrun.out" ||
	fail "pyrun.py: a module with no test case exited $rc: $(cat "$T/pyrun.out")"
echo "PASS"
