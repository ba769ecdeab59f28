#!/bin/bash
# scripts/passes.sh, as scripts/test.sh uses it, on a small meson project
# of two tests, one that passes and one that skips with a reason: without
# CI the run passes and its summary names the skip and the reason; with
# CI=true the same run fails, as does a whole pass that exits 77. Either
# way the summary gives each pass's time and result.
. "$TORUS_SRC/tests/lib.sh"
require meson ninja

mkdir "$T/p"
cat >"$T/p/meson.build" <<'MESON'
project('passes', [])
sh = find_program('sh')
test('fine', sh, args : ['-c', 'exit 0'])
test('needs-frob', sh, args : ['-c', 'echo "SKIP: frob is not installed"; exit 77'])
MESON
meson setup "$T/b" "$T/p" >"$T/setup.out" 2>&1 || fail "meson setup: $(cat "$T/setup.out")"

# run CI: source passes.sh in a fresh shell, as test.sh does, run a meson
# pass and a pass that exits 77; its output in $T/run.out, status in $rc.
run() {
	rc=0
	CI=$1 bash -c '
		set -euo pipefail
		. "$1/scripts/passes.sh"
		pass normal "normal" meson_suite normal "$2"
		pass newer-fio "newer" sh -c "echo SKIP: no source; exit 77"
		passes_summary' run "$TORUS_SRC" "$T/b" >"$T/run.out" 2>&1 || rc=$?
}
want="skips: normal: needs-frob: SKIPPED: frob is not installed"

run false
[ $rc = 0 ] || fail "without CI a skip failed the run ($rc): $(cat "$T/run.out")"
grep -qF "  $want" "$T/run.out" || fail "the summary does not name the skip: $(cat "$T/run.out")"
grep -qF "  skips: newer-fio: the whole pass SKIPPED" "$T/run.out" ||
	fail "the summary does not name the skipped pass: $(cat "$T/run.out")"
grep -qx "passes: 1 passed, 0 failed, 1 skipped" "$T/run.out" || fail "counts: $(cat "$T/run.out")"
grep -qEx "  normal +[0-9]+ s  passed: normal" "$T/run.out" ||
	fail "the summary does not give the normal pass's time: $(cat "$T/run.out")"
grep -qEx "  newer-fio +[0-9]+ s  SKIPPED: newer" "$T/run.out" ||
	fail "the summary does not give the skipped pass's time: $(cat "$T/run.out")"

run true
[ $rc = 1 ] || fail "with CI=true a skip did not fail the run ($rc): $(cat "$T/run.out")"
grep -qF "  $want" "$T/run.out" || fail "CI: the summary does not name the skip: $(cat "$T/run.out")"
grep -qF "  skips: newer-fio: the whole pass SKIPPED, fatal with CI=true" "$T/run.out" ||
	fail "CI: the summary does not name the skipped pass: $(cat "$T/run.out")"
grep -qx "passes: 0 passed, 2 failed, 0 skipped" "$T/run.out" || fail "CI counts: $(cat "$T/run.out")"
grep -qx "test.sh: FAILED: normal newer" "$T/run.out" || fail "CI: failed passes not named: $(cat "$T/run.out")"
grep -qEx "  normal +[0-9]+ s  FAILED: normal" "$T/run.out" &&
	grep -qEx "  newer-fio +[0-9]+ s  FAILED: newer" "$T/run.out" ||
	fail "CI: the summary does not give each failed pass's time: $(cat "$T/run.out")"
echo "PASS"
