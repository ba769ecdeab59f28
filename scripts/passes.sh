# shellcheck shell=bash
# The passes of scripts/test.sh: each runs whole, its result is kept, and
# the summary at the end names every skip with its reason. With CI=true a
# skip fails its pass (a skipped test, or a whole pass that exits 77),
# unless tests/skips-allowed lists it (scripts/skips.py). Sourced by
# scripts/test.sh, and by tests/meta/test-passes.sh, which runs it against
# a small meson project.
failed=() skipped=() passed=0 times=()
fatal_skips=
[ "${CI:-}" = true ] && fatal_skips=--fatal
skip_log=$(mktemp "${TMPDIR:-/tmp}/torus-skips.XXXXXX")
trap 'rm -f "$skip_log"' EXIT
_skips=$(dirname "${BASH_SOURCE[0]}")/skips.py

# pass KEY NAME CMD...: run one pass (KEY as in tests/skips-allowed),
# remember it if it fails (or, when CMD exits 77, if it was skipped: a
# failure in CI unless allowed)
pass() {
	local key=$1 name=$2 start=$SECONDS rc=0
	shift 2
	echo "=== test.sh: $name ==="
	"$@" || rc=$?
	if [ $rc = 77 ] && [ -n "$fatal_skips" ] &&
	   ! python3 "$_skips" allowed --pass "$key" -; then
		echo "test.sh: CI=true and the pass '$key' skipped (above); tests/skips-allowed does not allow it" >&2
		echo "skips: $key: the whole pass SKIPPED, fatal with CI=true (its reason is above)" >>"$skip_log"
		rc=1
	fi
	local took=$((SECONDS - start)) result
	if [ $rc = 0 ]; then
		result=passed
		passed=$((passed + 1))
	elif [ $rc = 77 ]; then
		result=SKIPPED
		skipped+=("$name")
		echo "skips: $key: the whole pass SKIPPED (its reason is above)" >>"$skip_log"
	else
		result=FAILED
		failed+=("$name")
	fi
	echo "=== test.sh: $name $result ($took s) ==="
	times+=("$(printf '%-9s %5d s  %s: %s' "$key" "$took" "$result" "$name")")
}

# meson_suite KEY BUILD ARGS...: meson test in BUILD; then every skipped
# test with its reason, which with CI=true fails the pass unless allowed
meson_suite() {
	local key=$1 build=$2 rc=0
	shift 2
	meson test -C "$build" --print-errorlogs "$@" || rc=$?
	if ! python3 "$_skips" check "$build/meson-logs/testlog.json" \
		--pass "$key" $fatal_skips | tee -a "$skip_log"; then
		[ $rc != 0 ] || rc=1
	fi
	return $rc
}

# passes_summary: every skip with its reason, one countable line, the
# failed passes; exits 1 if any failed, else 0.
passes_summary() {
	if [ -s "$skip_log" ]; then
		echo "test.sh: every skip, with its reason:"
		sed 's/^/  /' "$skip_log"
	fi
	# Each pass's time, where CI's budget goes.
	echo "test.sh: each pass's time:"
	printf '  %s\n' "${times[@]}"
	# One plain line a CI reader can count: passes, not single tests.
	echo "passes: $passed passed, ${#failed[@]} failed, ${#skipped[@]} skipped"
	if [ ${#failed[@]} -gt 0 ]; then
		echo "test.sh: FAILED: ${failed[*]}" >&2
		exit 1
	fi
	[ ${#skipped[@]} -eq 0 ] || echo "test.sh: SKIPPED: ${skipped[*]}"
	echo "test.sh: all passes passed"
	exit 0
}
