#!/bin/bash
# Benchmark libtorus.so against fio's built-in nbd engine (and nbdcopy).
#
#   scripts/bench.sh [--runtime S] [--rounds N] [--quick] [--sections LIST]
#                    [--engine PATH] [--engine-opt OPT]... [--size SIZE]
#                    [--out FILE] [--keep] [--quiet-wait S]
#
# One `nbdkit null` server on a private Unix socket, pinned to CPU 0; fio (and
# nbdcopy) pinned to CPU 1. In every section the clients run alternately,
# builtin, torus, builtin, torus, ... for --rounds rounds, so that drift on
# the machine hits both alike; the report gives the median over rounds for
# each client and the ratios, with PASS/MISS for each target. The report is
# printed and written to results/bench-<date>.md (--keep also keeps every
# fio JSON beside it). Before each run it waits up to --quiet-wait seconds
# (default 20, 0 = never) for the machine to be idle, and the report says
# how many runs started on a busy machine.
#
# Sections are functions named section_<id>, listed in SECTIONS; each
# declares itself (record section), its targets (record target / ratio) and
# runs its rounds. To add one (e.g. an NBD shim profile), write the function,
# start its own server if it needs one, and add its id to SECTIONS.
#
# CPU per I/O = (fio usr+sys % / 100 * job runtime) / I/Os done: the CPU the
# fio process spent (all its threads) per I/O, the server's CPU excluded.

set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib=$repo/scripts/benchlib.py

runtime=8
rounds=3
size=8G
engine=$repo/build/engines/libtorus.so
engine_opts=()
sections=
out=
keep=0
quiet_wait=20
runs_total=0
runs_busy=0

SECTIONS=(randread4k_qd16 randrw64k_qd64 randread4k_qd1 read256k_qd64)

usage() {
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	echo "sections: ${SECTIONS[*]} (default: all)"
	echo "defaults: --runtime $runtime --rounds $rounds --size $size (server size = nbdcopy's copy)"
	echo "--quick: --runtime 2 --rounds 1 --size 1G (a smoke run; figures are noisy)"
}

die() {
	echo "bench: $*" >&2
	exit 1
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--runtime) runtime=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--quick) runtime=2; rounds=1; size=1G ;;
	--sections) sections=$2; shift ;;
	--engine) engine=$(realpath "$2"); shift ;;
	--engine-opt) engine_opts+=("$2"); shift ;;
	--size) size=$2; shift ;;
	--out) out=$2; shift ;;
	--keep) keep=1 ;;
	--quiet-wait) quiet_wait=$2; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
[[ $runtime =~ ^[0-9]+$ && $runtime -gt 0 ]] || die "--runtime wants whole seconds, got '$runtime'"
[[ $rounds =~ ^[0-9]+$ && $rounds -gt 0 ]] || die "--rounds wants a positive number, got '$rounds'"
[[ $quiet_wait =~ ^[0-9]+$ ]] || die "--quiet-wait wants whole seconds, got '$quiet_wait'"
if [[ -n $sections ]]; then
	IFS=, read -r -a SECTIONS <<<"$sections"
fi
for tool in fio nbdkit nbdcopy taskset python3 numfmt; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/deps.sh"
done
[[ -f $engine ]] || die "no engine at $engine: build it with
  scripts/fio-source.sh && meson setup build -Dfio_src=\$PWD/.deps/fio && ninja -C build"
size_bytes=$(numfmt --from=iec "$size") || die "--size: cannot parse '$size'"

# CPU 0 for the server, CPU 1 for the client.
if [[ $(nproc --all) -ge 2 ]]; then
	pin_server=(taskset -c 0)
	pin_client=(taskset -c 1)
	pinning="server CPU 0, client CPU 1"
else
	pin_server=()
	pin_client=()
	pinning="none (one CPU): figures are not comparable with pinned runs"
	echo "bench: warning: one CPU only, running unpinned" >&2
fi

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p "$repo/results"
out=${out:-$repo/results/bench-$stamp.md}
T=$(mktemp -d /tmp/torus-bench.XXXXXX)
records=$T/records.tsv
server_pids=()

cleanup() {
	local pid
	for pid in "${server_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${server_pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	if [[ $keep -eq 1 && -d $T/json ]]; then
		mkdir -p "${out%.md}"
		cp "$T"/json/* "${out%.md}/" 2>/dev/null || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$T/json"

# busiest_cpu_pct: the highest busy share (%) of any CPU over half a second.
busiest_cpu_pct() {
	local a b
	a=$(grep '^cpu[0-9]' /proc/stat)
	sleep 0.5
	b=$(grep '^cpu[0-9]' /proc/stat)
	awk 'NR == FNR { for (i = 2; i <= NF; i++) t0[$1] += $i; i0[$1] = $5 + $6; next }
	     { t = 0; for (i = 2; i <= NF; i++) t += $i
	       dt = t - t0[$1]; di = $5 + $6 - i0[$1]
	       if (dt > 0 && (dt - di) * 100 / dt > m) m = (dt - di) * 100 / dt }
	     END { printf "%d\n", m }' <(echo "$a") <(echo "$b")
}

# wait_quiet: other work on the machine (builds, tests) skews the figures;
# wait up to $quiet_wait s for every CPU to be under 15% busy before a run.
wait_quiet() {
	local waited=0 busy
	((quiet_wait > 0)) || return 0
	runs_total=$((runs_total + 1))
	while busy=$(busiest_cpu_pct); ((busy > 15)); do
		if ((waited >= quiet_wait)); then
			runs_busy=$((runs_busy + 1))
			echo "  (machine still busy, ${busy}% on one CPU: running anyway)"
			return 0
		fi
		sleep 1.5
		waited=$((waited + 2))
	done
}

# record KIND FIELDS...: append one record (see benchlib.py).
record() {
	local IFS=$'\t'
	echo "$*" >>"$records"
}

# start_null_server SOCK: nbdkit null of $size on a private socket, CPU 0.
start_null_server() {
	local sock=$1 i
	"${pin_server[@]}" nbdkit --exit-with-parent -f -U "$sock" null size="$size" &
	server_pids+=($!)
	for ((i = 0; i < 100; i++)); do
		[[ -S $sock ]] && return 0
		sleep 0.05
	done
	die "nbdkit did not create $sock"
}

# run_fio SID LABEL ROUND URI FIO-ARGS...: one fio run, its metrics recorded.
run_fio() {
	local sid=$1 label=$2 round=$3 uri=$4 json
	shift 4
	local eng
	case $label in
	builtin) eng=(--ioengine=nbd "--uri=$uri") ;;
	torus) eng=("--ioengine=external:$engine" "--uri=$uri" "${engine_opts[@]}") ;;
	*) die "run_fio: unknown client $label" ;;
	esac
	json=$T/json/$sid-$label-$round.json
	local attempt rc
	for attempt in 1 2; do
		wait_quiet
		rc=0
		"${pin_client[@]}" fio --output-format=json --output="$json" \
			--name="$sid" "${eng[@]}" --time_based --runtime="$runtime" \
			--norandommap --randrepeat=0 --group_reporting "$@" \
			>"$T/fio.log" 2>&1 || rc=$?
		# Killed by a signal from outside (a shared machine): try once more.
		((rc > 128 && attempt == 1)) || break
		echo "  ($sid $label round $round: fio killed by signal $((rc - 128)), retrying)"
	done
	if ((rc != 0)); then
		# fio's own messages; the JSON (if any) is of no help here.
		cat "$T/fio.log" >&2
		[[ -f $json ]] && sed -n '/^{/q;p' "$json" >&2
		die "fio failed: $sid, $label, round $round (output above)"
	fi
	local metrics metric value
	metrics=$(python3 "$lib" extract "$json") ||
		die "cannot read fio's JSON for $sid, $label, round $round"
	while read -r metric value; do
		record value "$sid" "$label" "$round" "$metric" "$value"
	done <<<"$metrics"
	printf '  %-16s %-8s round %d: %s\n' "$sid" "$label" "$round" \
		"$(awk '$1=="iops"{printf "%.1fk IOPS ", $2/1000} $1=="cpu_us_per_io"{printf "%.3f us CPU/IO ", $2} $1=="clat_mean_us"{printf "clat %.2f us", $2}' <<<"$metrics")"
}

# run_nbdcopy SID ROUND URI: read the whole server with nbdcopy, timed.
run_nbdcopy() {
	local sid=$1 round=$2 uri=$3 t0 t1 secs
	wait_quiet
	t0=$EPOCHREALTIME
	"${pin_client[@]}" nbdcopy --no-extents "$uri" null: >"$T/nbdcopy.log" 2>&1 ||
		{ cat "$T/nbdcopy.log" >&2; die "nbdcopy failed (above)"; }
	t1=$EPOCHREALTIME
	secs=$(python3 -c "print(f'{$t1 - $t0:.6f}')")
	record value "$sid" nbdcopy "$round" seconds "$secs"
	record value "$sid" nbdcopy "$round" bw_mib \
		"$(python3 -c "print(f'{$size_bytes / 2**20 / $secs:.3f}')")"
	printf '  %-16s %-8s round %d: %s s for %s\n' "$sid" nbdcopy "$round" "$secs" "$size"
}

# alternate SID URI FIO-ARGS...: builtin, torus, builtin, torus, ...
alternate() {
	local sid=$1 uri=$2 r
	shift 2
	for ((r = 1; r <= rounds; r++)); do
		run_fio "$sid" builtin "$r" "$uri" "$@"
		run_fio "$sid" torus "$r" "$uri" "$@"
	done
}

# --- sections -----------------------------------------------------------------

section_randread4k_qd16() {
	local sid=randread4k_qd16
	record section $sid "4 KiB randread QD16, nbdkit null"
	record target $sid cpu_us_per_io torus builtin "<=" 0.6
	# IOPS >= builtin; the server is the bottleneck, so 5% is left for noise.
	record target $sid iops torus builtin ">=" 0.95
	record ratio $sid clat_mean_us torus builtin
	alternate $sid "$null_uri" --rw=randread --bs=4k --iodepth=16
}

section_randrw64k_qd64() {
	local sid=randrw64k_qd64
	record section $sid "64 KiB randrw QD64, nbdkit null"
	record target $sid cpu_us_per_io torus builtin "<=" 0.6
	record ratio $sid iops torus builtin
	alternate $sid "$null_uri" --rw=randrw --bs=64k --iodepth=64
}

section_randread4k_qd1() {
	local sid=randread4k_qd1
	record section $sid "4 KiB randread QD1, nbdkit null"
	record target $sid clat_mean_us torus builtin "<=" 0.85
	record ratio $sid lat_mean_us torus builtin
	record ratio $sid cpu_us_per_io torus builtin
	alternate $sid "$null_uri" --rw=randread --bs=4k --iodepth=1
}

section_read256k_qd64() {
	local sid=read256k_qd64 r
	record section $sid "256 KiB sequential read QD64 vs nbdcopy --no-extents of $size, nbdkit null"
	record target $sid bw_mib torus nbdcopy ">=" 1.0
	record ratio $sid bw_mib torus builtin
	record ratio $sid cpu_us_per_io torus builtin
	for ((r = 1; r <= rounds; r++)); do
		run_fio $sid builtin "$r" "$null_uri" --rw=read --bs=256k --iodepth=64
		run_fio $sid torus "$r" "$null_uri" --rw=read --bs=256k --iodepth=64
		run_nbdcopy $sid "$r" "$null_uri"
	done
}

# --- main -------------------------------------------------------------------------

for s in "${SECTIONS[@]}"; do
	declare -F "section_$s" >/dev/null || die "unknown section '$s' (have: $(declare -F | sed -n 's/^declare -f section_//p' | tr '\n' ' '))"
done

# The engine must load before anything is measured.
if ! fio --enghelp="$engine" >"$T/enghelp.log" 2>&1; then
	cat "$T/enghelp.log" >&2
	die "fio cannot load $engine (above)"
fi

null_sock=$T/null.sock
null_uri="nbd+unix:///?socket=$null_sock"
start_null_server "$null_sock"

record header date "$(date -Iseconds)"
record header commit "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet 2>/dev/null || echo ' (dirty tree)')"
record header engine "$engine${engine_opts[*]:+ ${engine_opts[*]}} (built $(date -r "$engine" -Iseconds))"
record header machine "$(nproc --all) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1), kernel $(uname -r)"
record header versions "$(fio --version), $(nbdkit --version 2>/dev/null | head -n1), $(nbdcopy --version 2>/dev/null | head -n1)"
record header runs "$rounds round(s) of ${runtime}s per client, alternating; server size $size; pinning: $pinning"
record header "CPU per I/O" "(fio usr+sys % / 100 * runtime) / I/Os, fio process only"

# Other work on the machine skews the figures: say how busy it was.
record header "load average at start" "$(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench: $rounds round(s), ${runtime}s per run, sections: ${SECTIONS[*]}"
for s in "${SECTIONS[@]}"; do
	"section_$s"
done
record header "load average at end" "$(cut -d' ' -f1-3 /proc/loadavg)"
((quiet_wait == 0)) ||
	record header "busy machine" "$runs_busy of $runs_total runs started with a CPU over 15% busy after waiting ${quiet_wait}s"

echo
python3 "$lib" report "$records" --md "$out"
echo
echo "bench: report written to $out"
