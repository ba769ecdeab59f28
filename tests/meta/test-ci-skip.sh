#!/bin/bash
# With CI=true a test that skips fails the run, naming the test and its
# reason: engine-enghelp is run with no fio on PATH, and the check that
# scripts/test.sh makes of every meson run (skips.py check --fatal, as with
# CI=true) must fail and say why; without --fatal it names the skip only.
. "$TORUS_SRC/tests/lib.sh"

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
echo "PASS"
