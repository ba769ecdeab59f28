#!/bin/bash
# Runs the libFuzzer targets of fuzz/ for a bounded time each, as many at
# once as there are cores (each target is one process on one core; see
# docs/fuzzing.md).
#
#   scripts/fuzz.sh [--seconds N] [--jobs N] [TARGET...] [-- LIBFUZZER-ARGS]
#
# Targets: handshake replies shim cdb ring uri shim_args tcmu_uri
# tcmu_attach tcmu_args (default: all; then the five parsers of short
# inputs, the last five, run 2/5 of N each, so that the pass takes the
# time it took with seven targets: see docs/fuzzing.md). Sets up
# build-fuzz (clang, -Dfuzz=true, everything instrumented) when it is
# missing, builds the targets, and runs each for N seconds (default 60)
# over a working corpus in build-fuzz/fuzz-work/TARGET/, seeded from
# fuzz/corpus/TARGET/ and fuzz/regressions/TARGET/ (the committed corpus is
# never written). An input that crashes, hangs or runs out of memory is
# copied to fuzz/regressions/TARGET/, where every ordinary test run replays
# it, and the script exits 1 naming it. Needs scripts/deps.sh's packages
# and the configured fio tree the engine builds against (.deps/fio, made by
# scripts/build.sh or scripts/fio-source.sh; FIO_SRC=DIR for another).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# The longest first: two cores run them in this order.
all_targets=(handshake replies shim cdb ring uri shim_args tcmu_uri tcmu_attach tcmu_args)
# Percent of N a target runs when no target is named (default 100).
declare -A share=([uri]=40 [shim_args]=40 [tcmu_uri]=40 [tcmu_attach]=40 [tcmu_args]=40)
seconds=60
jobs=1
parallel=$(nproc 2>/dev/null || echo 1)
targets=()
extra=()

usage() {
	sed -n '5,6p' "$0" | sed 's/^# *//' >&2
	exit 2
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--seconds)
		[[ ${2:-} =~ ^[0-9]+$ && $2 -gt 0 ]] || usage
		seconds=$2
		shift 2
		;;
	--jobs)
		[[ ${2:-} =~ ^[0-9]+$ && $2 -gt 0 ]] || usage
		jobs=$2
		shift 2
		;;
	--)
		shift
		extra=("$@")
		break
		;;
	-h|--help)
		usage
		;;
	-*)
		usage
		;;
	*)
		[[ " ${all_targets[*]} " == *" $1 "* ]] || {
			echo "fuzz: unknown target '$1' (targets: ${all_targets[*]})" >&2
			exit 2
		}
		targets+=("$1")
		shift
		;;
	esac
done
named=${#targets[@]}
[[ $named -gt 0 ]] || targets=("${all_targets[@]}")

# The longest input worth trying, per target: a URI past the 4096-byte
# export name; a handshake of a few option replies; a reply stream with
# the 64 KiB reads of fuzz_replies.c's table whole; a shim session of
# several options and requests; a command line value; a few dozen CDBs,
# lists and replies; a region's ring and data bytes with a script; a
# tcmu+unix URI past the socket path's 108 bytes; an attach request or
# reply with its magic; a tcmu-shim command line of a dozen arguments.
declare -A max_len=(
	[uri]=4400
	[handshake]=4096
	[replies]=72000
	[shim]=16384
	[shim_args]=512
	[cdb]=2048
	[ring]=8192
	[tcmu_uri]=512
	[tcmu_attach]=512
	[tcmu_args]=1024
)

build=${FUZZ_BUILD:-$top/build-fuzz}
fio_src=${FIO_SRC:-$top/.deps/fio}
if ! command -v clang >/dev/null ||
   ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
	echo "fuzz: clang or its sanitizer and libFuzzer runtimes are missing (Debian: clang libclang-rt-14-dev; scripts/deps.sh)" >&2
	exit 1
fi
if [[ ! -f $build/build.ninja ]]; then
	if [[ ! -f $fio_src/config-host.h ]]; then
		echo "fuzz: no configured fio tree at $fio_src (meson needs it for the engine): run scripts/fio-source.sh or scripts/build.sh first, or set FIO_SRC" >&2
		exit 1
	fi
	# Every library is instrumented for coverage and checked by ASan and
	# UBSan; the targets link libFuzzer itself (fuzz/meson.build).
	CC=clang meson setup "$build" -Dfuzz=true -Dfio_src="$fio_src" \
		-Db_sanitize=address,undefined -Db_lundef=false \
		"-Dc_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
		>"$build.setup.log" 2>&1 || {
		cat "$build.setup.log" >&2
		exit 1
	}
	rm -f "$build.setup.log"
fi
# ninja prints a compiler's or linker's errors on stdout: kept, and shown
# when the build fails.
ninja -C "$build" "${targets[@]/#/fuzz/fuzz_}" >"$build.ninja.log" 2>&1 || {
	cat "$build.ninja.log" >&2
	echo "fuzz: building the fuzz targets in $build failed (above)" >&2
	exit 1
}
rm -f "$build.ninja.log"

# libFuzzer's own leak check runs too; UBSan stops at the first report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# secs TARGET: how long it runs.
secs() {
	local s=$seconds
	[[ $named -gt 0 ]] || s=$((seconds * ${share[$1]:-100} / 100))
	echo $((s > 0 ? s : 1))
}

# fuzz_one TARGET: run it; its exit status goes to $work/rc.
fuzz_one() {
	local t=$1 work=$build/fuzz-work/$1 rc=0
	local -a args
	args=(-max_total_time="$(secs "$t")" -max_len="${max_len[$t]}" -timeout=10
	      -rss_limit_mb=2048 -print_final_stats=1
	      -artifact_prefix="$work/artifacts/")
	if [[ $jobs -gt 1 ]]; then
		args+=(-jobs="$jobs" -workers="$jobs")
	fi
	(cd "$work" && "$build/fuzz/fuzz_$t" "${args[@]}" "${extra[@]}" \
		corpus >"$work/log" 2>&1) || rc=$?
	echo $rc >"$work/rc"
}

# --jobs N runs N processes of one target: then one target at a time.
[[ $jobs -eq 1 ]] || parallel=1
running=0
for t in "${targets[@]}"; do
	work=$build/fuzz-work/$t
	mkdir -p "$work/corpus" "$work/artifacts"
	rm -f "$work/artifacts/"* "$work/rc"
	# Seeds and regressions join the working corpus kept from earlier runs.
	cp -n fuzz/corpus/"$t"/* "$work/corpus/" 2>/dev/null || true
	cp -n fuzz/regressions/"$t"/* "$work/corpus/" 2>/dev/null || true
	if [[ $running -ge $parallel ]]; then
		wait -n || true
		running=$((running - 1))
	fi
	echo "fuzz: $t for $(secs "$t")s (working corpus $work/corpus)"
	fuzz_one "$t" &
	running=$((running + 1))
done
wait

found=()
for t in "${targets[@]}"; do
	work=$build/fuzz-work/$t
	rc=$(cat "$work/rc" 2>/dev/null || echo "no status")
	{ grep -E '^#[0-9]+' "$work/log" | tail -n 1
	  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$work/log"
	} | sed "s/^/fuzz: $t: /" || true
	shopt -s nullglob
	arts=("$work"/artifacts/{crash,timeout,oom,leak,slow-unit}-*)
	shopt -u nullglob
	if [[ $rc != 0 || ${#arts[@]} -gt 0 ]]; then
		# The report, from its first line (or the log's end).
		for log in "$work/log" "$work"/fuzz-*.log; do
			[[ -f $log ]] || continue
			first=$(grep -n -m1 -E 'ERROR: |invariant broken|runtime error:|deadly signal|ALARM: |out-of-memory' "$log" | cut -d: -f1)
			tail -n +"${first:-1}" "$log" | { [[ -n $first ]] && head -n 120 || tail -n 60; } >&2
		done
		for a in "${arts[@]}"; do
			[[ ${a##*/} == slow-unit-* ]] && continue
			mkdir -p fuzz/regressions/"$t"
			cp "$a" fuzz/regressions/"$t"/
			found+=("fuzz/regressions/$t/${a##*/}")
		done
		[[ ${#arts[@]} -gt 0 ]] || found+=("$t: libFuzzer exited $rc without an input (see $work/log)")
	fi
done

if [[ ${#found[@]} -gt 0 ]]; then
	echo "fuzz: FAILED: findings kept as regressions (replayed by meson test --suite fuzz):" >&2
	printf 'fuzz:   %s\n' "${found[@]}" >&2
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each$([[ $named -gt 0 ]] || echo " (2/5 of it for ${!share[*]})"): no findings"
