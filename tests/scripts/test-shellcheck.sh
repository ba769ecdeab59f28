#!/bin/bash
# shellcheck (errors and warnings) over the guest's /init, which runs under
# busybox sh where no test of ours sees it fail early, and over the scripts
# written in shell. A finding fails the test with shellcheck's own report.

: "${TORUS_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TORUS_SRC/tests/lib.sh"

require shellcheck

# -x follows what a script sources, as it names it: from the tree's root
cd "$TORUS_SRC" || fail "no $TORUS_SRC"
files=(scripts/*.sh scripts/nbd-kernel scripts/tcmu-kernel)
if ! shellcheck -x -S warning "${files[@]}" >"$T/report" 2>&1; then
	cat "$T/report" >&2
	fail "shellcheck found the problems above (in ${#files[@]} files: ${files[*]})"
fi
grep -qx '# shellcheck shell=sh' "$TORUS_SRC/scripts/guest-init.sh" ||
	fail "scripts/guest-init.sh must be checked as sh (busybox), not bash"
echo "PASS: shellcheck: ${#files[@]} files clean (${files[*]})"
