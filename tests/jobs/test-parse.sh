#!/bin/bash
# Every job file in jobs/ parses (fio --parse-only) with the kernel-path options
# (libaio on /dev/nbd0, and libaio in a directory) and with the engine's options;
# the job files match scripts/docs_tests.py (check_jobs.py); and the scaling
# variables work: unset, a job keeps the document's value, set, they replace it.
. "$TORUS_SRC/tests/lib.sh"
require fio python3

jobs=("$TORUS_SRC"/jobs/*.fio)
[ "${#jobs[@]}" -ge 17 ] || fail "expected at least 17 job files, found ${#jobs[@]}"

python3 "$TORUS_SRC/tests/jobs/check_jobs.py" || fail "check_jobs.py found problems"

# parse LABEL OPTIONS...: every job with OPTIONS, unscaled and scaled. fio
# parses all the files of one invocation, so one run per option set; on a
# failure, one run per file tells which file it is.
parse() {
	local label=$1 scaled job
	shift
	for scaled in "" "TORUS_SIZE=1M TORUS_RUNTIME=1 TORUS_NRFILES=3"; do
		if env $scaled "$FIO" --parse-only "$@" "${jobs[@]}" >"$T/parse.out" 2>&1; then
			continue
		fi
		for job in "${jobs[@]}"; do
			env $scaled "$FIO" --parse-only "$@" "$job" >"$T/parse.out" 2>&1 ||
				{ cat "$T/parse.out" >&2; fail "$(basename "$job") does not parse ($label${scaled:+, $scaled})"; }
		done
		cat "$T/parse.out" >&2
		fail "the job files do not parse together ($label${scaled:+, $scaled})"
	done
}

mkdir -p "$T/fs"
parse "kernel path, device" --ioengine=libaio --filename=/dev/nbd0
parse "kernel path, filesystem" --ioengine=libaio --directory="$T/fs"

# Scaling through the environment, checked with fio's null engine (no I/O).
# total BYTES ENV... JOB: fio's read+write+trim bytes for JOB with ENV.
total() {
	env -u TORUS_SIZE -u TORUS_RUNTIME -u TORUS_NRFILES "${@:1:$#-1}" \
		"$FIO" --ioengine=null --output-format=json "${@: -1}" >"$T/null.json" 2>"$T/null.err" ||
		{ cat "$T/null.err" >&2; fail "fio --ioengine=null ${*: -1} failed"; }
	python3 -c 'import json,sys
j=json.load(open(sys.argv[1]))["jobs"]
print(sum(x[d]["io_bytes"] for x in j for d in ("read","write","trim")), max(x["job_runtime"] for x in j))' "$T/null.json"
}
expect_total() { # WANT_BYTES ENV... JOB
	local want=$1 got
	shift
	read -r got _ < <(total "$@")
	[ "$got" = "$want" ] || fail "$(basename "${*: -1}") with ${*:1:$#-1}: $got bytes, want $want"
}
J=$TORUS_SRC/jobs
expect_total $((4 << 30)) TORUS_X=unset "$J/randrw.fio"               # the document's 4G
expect_total $((8 << 20)) TORUS_SIZE=8M "$J/randrw.fio"
expect_total 4096000000 TORUS_X=unset "$J/torus-ddwrite.fio"          # dd's 4000000 x 1K
expect_total $((3 << 20)) TORUS_SIZE=3M "$J/lustre-seq-direct.fio"
expect_total $((4 * (32 << 20))) TORUS_SIZE=32M "$J/lustre-bs-sweep.fio"   # 4 sections
read -r bytes ms < <(total TORUS_RUNTIME=1 TORUS_SIZE=4M "$J/zeroos-baseline-randrw-4k.fio")
[ "$ms" -ge 900 ] && [ "$ms" -le 3000 ] || fail "zeroos baseline with TORUS_RUNTIME=1 ran $ms ms"
read -r bytes _ < <(total TORUS_NRFILES=7 "$J/gluster-smallfiles-extract.fio")
[ "$bytes" -ge $((7 * 4096)) ] && [ "$bytes" -le $((7 * 61440)) ] ||
	fail "7 small files wrote $bytes bytes"
read -r bytes _ < <(total TORUS_X=unset "$J/gluster-smallfiles-extract.fio")
[ "$bytes" -ge $((2000 * 28 * 1024)) ] && [ "$bytes" -le $((2000 * 36 * 1024)) ] ||
	fail "2000 small files (the default) wrote $bytes bytes"

# The engine's options (needs the engine built).
[ -f "$ENGINE" ] || skip "kernel-path parsing passed; no engine at $ENGINE to parse the engine options (ninja -C build)"
"$FIO" --parse-only --ioengine="external:$ENGINE" --uri=nbd://127.0.0.1:10809/x --no-such-option=1 \
	"$J/randrw.fio" >/dev/null 2>&1 && fail "--parse-only accepted an unknown engine option"
parse "engine, uri" --ioengine="external:$ENGINE" --uri=nbd://127.0.0.1:10809/x
parse "engine, unix uri" --ioengine="external:$ENGINE" --uri="nbd+unix:///x?socket=$T/s"
parse "engine, embedded default" --ioengine="external:$ENGINE"
echo "ok: ${#jobs[@]} job files parse with the kernel-path and the engine options"
