#!/bin/bash
# Benchmark the NBD shim (build/shims/nbd/nbd-shim) through the engine.
#
#   scripts/bench-shims.sh [--runtime S] [--rounds N] [--quick]
#                          [--sections LIST] [--engine PATH] [--out FILE]
#
# Servers pinned to CPU 0, fio (and the probe) to CPU 1; in every section
# the servers take turns round by round, so that drift on the machine hits
# them alike; the report gives medians over rounds and the ratios.
#
# Sections:
#   shim_std_qd64  4 KiB randread QD64 through the engine: nbd-shim
#                  --profile standard --backend null vs nbdkit null.
#                  Target: the shim serves >= 2x the IOPS of nbdkit.
#                  Also the shim with --coalesce-us 0 (informational).
#   shim_probe     the same two servers measured by pipe-probe, a lean
#                  pipelined client (what the servers can do without the
#                  engine in the way; informational).
#   shim_docs      the documents' workloads on each profile, memory backend:
#                  torus 64 KiB randrw QD64 rwmixread=75 and its 4 KiB
#                  variant (torus, 2 replicas; the same with its block
#                  traffic over 1 Gbit/s, --shape-at storage, as the
#                  document's cluster; vs standard); 0-Disk 4 KiB
#                  randrw QD4 rwmixwrite=80 (zeroos; zeroos over 8 + 1
#                  redis-servers when installed; vs standard).
#
# scripts/bench.sh can run these too: source this file (it then only
# defines the section_* functions, which use bench.sh's record, wait_quiet,
# pin_server, pin_client, server_pids, runtime, rounds, engine, T and lib)
# and add the section ids to its SECTIONS.

shim_bench_sourced=0
[[ ${BASH_SOURCE[0]} != "$0" ]] && shim_bench_sourced=1

shim_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shim_bin=${NBD_SHIM:-$shim_repo/build/shims/nbd/nbd-shim}
shim_probe_bin=${PIPE_PROBE:-$shim_repo/build/tests/shims/pipe-probe}
SHIM_SECTIONS=(shim_std_qd64 shim_probe shim_docs)

# shim_start NAME ARGS...: nbd-shim on $T/NAME.sock, pinned to CPU 0.
shim_start() {
	local name=$1 i
	shift
	"${pin_server[@]}" "$shim_bin" --listen "unix:$T/$name.sock" "$@" \
		2>"$T/$name.log" &
	server_pids+=($!)
	for ((i = 0; i < 200; i++)); do
		[[ -S $T/$name.sock ]] && return 0
		sleep 0.05
	done
	cat "$T/$name.log" >&2
	echo "bench-shims: nbd-shim $* did not start" >&2
	exit 1
}

# shim_nbdkit NAME ARGS...: nbdkit on $T/NAME.sock, pinned to CPU 0.
shim_nbdkit() {
	local name=$1 i
	shift
	"${pin_server[@]}" nbdkit --exit-with-parent -f -U "$T/$name.sock" "$@" &
	server_pids+=($!)
	for ((i = 0; i < 200; i++)); do
		[[ -S $T/$name.sock ]] && return 0
		sleep 0.05
	done
	echo "bench-shims: nbdkit $* did not start" >&2
	exit 1
}

# shim_fio SID LABEL ROUND URI FIO-ARGS...: one fio run through the engine.
shim_fio() {
	local sid=$1 label=$2 round=$3 uri=$4 json metrics metric value
	shift 4
	json=$T/json/$sid-$label-$round.json
	wait_quiet
	if ! "${pin_client[@]}" fio --output-format=json --output="$json" \
		--name="$sid" --ioengine="external:$engine" --uri="$uri" \
		--handshake=auto --time_based --runtime="$runtime" \
		--norandommap --randrepeat=0 --group_reporting "$@" \
		>"$T/fio.log" 2>&1; then
		cat "$T/fio.log" >&2
		[[ -f $json ]] && sed -n '/^{/q;p' "$json" >&2
		echo "bench-shims: fio failed: $sid, $label, round $round" >&2
		exit 1
	fi
	metrics=$(python3 "$lib" extract "$json") || exit 1
	while read -r metric value; do
		record value "$sid" "$label" "$round" "$metric" "$value"
	done <<<"$metrics"
	printf '  %-16s %-14s round %d: %s\n' "$sid" "$label" "$round" \
		"$(awk '$1=="iops"{printf "%.1fk IOPS", $2/1000}' <<<"$metrics")"
}

# shim_probe_run SID LABEL ROUND SOCKET: pipe-probe, 4 KiB reads at QD64.
shim_probe_run() {
	local sid=$1 label=$2 round=$3 sock=$4 iops
	wait_quiet
	iops=$("${pin_client[@]}" "$shim_probe_bin" "unix:$sock" -q 64 -b 4096 \
		-t "$runtime") || { echo "bench-shims: pipe-probe failed" >&2; exit 1; }
	record value "$sid" "$label" "$round" iops "$iops"
	printf '  %-16s %-14s round %d: %.1fk IOPS\n' "$sid" "$label" "$round" \
		"$(python3 -c "print($iops / 1000)")"
}

section_shim_std_qd64() {
	local sid=shim_std_qd64 r
	record section $sid "4 KiB randread QD64 through the engine: nbd-shim standard (null) vs nbdkit null"
	record target $sid iops shim nbdkit ">=" 2.0
	record ratio $sid cpu_us_per_io shim nbdkit
	record ratio $sid iops shim-nocoalesce nbdkit
	shim_nbdkit std_nbdkit null size=8G
	shim_start std_shim --profile standard --backend null --size 8G
	shim_start std_shim_c0 --profile standard --backend null --size 8G \
		--coalesce-us 0
	for ((r = 1; r <= rounds; r++)); do
		shim_fio $sid nbdkit "$r" "nbd+unix:///?socket=$T/std_nbdkit.sock" \
			--rw=randread --bs=4k --iodepth=64
		shim_fio $sid shim "$r" "nbd+unix:///?socket=$T/std_shim.sock" \
			--rw=randread --bs=4k --iodepth=64
		shim_fio $sid shim-nocoalesce "$r" \
			"nbd+unix:///?socket=$T/std_shim_c0.sock" \
			--rw=randread --bs=4k --iodepth=64
	done
}

section_shim_probe() {
	local sid=shim_probe r
	record section $sid "4 KiB read QD64 by pipe-probe (no engine): nbd-shim standard (null) vs nbdkit null"
	record ratio $sid iops shim nbdkit
	[[ -S $T/std_nbdkit.sock ]] || shim_nbdkit std_nbdkit null size=8G
	[[ -S $T/std_shim.sock ]] ||
		shim_start std_shim --profile standard --backend null --size 8G
	for ((r = 1; r <= rounds; r++)); do
		shim_probe_run $sid nbdkit "$r" "$T/std_nbdkit.sock"
		shim_probe_run $sid shim "$r" "$T/std_shim.sock"
	done
}

# The redis servers for zeroos: 8 storage + 1 metadata, as in document 004.
shim_redis_start() {
	local i port storage=
	for i in $(seq 0 8); do
		port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
		mkdir -p "$T/redis$i"
		redis-server --port "$port" --bind 127.0.0.1 --save '' \
			--appendonly no --dir "$T/redis$i" --loglevel warning \
			--logfile "$T/redis$i/log" &
		server_pids+=($!)
		if ((i < 8)); then
			storage+=${storage:+,}127.0.0.1:$port
		else
			shim_redis_meta=127.0.0.1:$port
		fi
		for ((j = 0; j < 200; j++)); do
			(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
			sleep 0.05
		done
	done
	shim_redis_storage=$storage
}

section_shim_docs() {
	local r sz=1G with_redis=0
	local torus64=(--rw=randrw --rwmixread=75 --bs=64k --iodepth=64 --size=$sz)
	local torus4=(--rw=randrw --rwmixread=75 --bs=4k --iodepth=64 --size=$sz)
	local zeroos4=(--rw=randrw --rwmixwrite=80 --bs=4k --iodepth=4 --size=$sz)

	record section shim_doc_torus64k "torus document: 64 KiB randrw QD64 rwmixread=75 ($sz), memory backend"
	record ratio shim_doc_torus64k iops torus standard
	record section shim_doc_torus4k "torus document, 4 KiB variant: 4 KiB randrw QD64 rwmixread=75 ($sz), memory backend"
	record ratio shim_doc_torus4k iops torus standard
	record section shim_doc_zeroos4k "0-Disk document: 4 KiB randrw QD4 rwmixwrite=80 ($sz), memory backend (and 8 + 1 redis)"
	record ratio shim_doc_zeroos4k iops zeroos standard

	shim_start doc_torus --profile torus --size 2G --replicas 2
	shim_start doc_torus_1g --profile torus --size 2G --replicas 2 \
		--bandwidth 1gbit --shape-at storage
	record ratio shim_doc_torus64k iops torus-1gbit standard
	record ratio shim_doc_torus4k iops torus-1gbit standard
	shim_start doc_zeroos --profile zeroos --size 2G
	shim_start doc_std --profile standard --size 2G
	if command -v redis-server >/dev/null; then
		with_redis=1
		record ratio shim_doc_zeroos4k iops zeroos-redis standard
		shim_redis_start
		shim_start doc_zeroos_redis --profile zeroos --size 2G \
			--backend "redis:$shim_redis_storage" \
			--redis-meta "$shim_redis_meta" --vdisk bench
	fi
	local torus_uri="nbd+unix:///torus?socket=$T/doc_torus.sock"
	local torus1g_uri="nbd+unix:///torus?socket=$T/doc_torus_1g.sock"
	local zeroos_uri="nbd+unix:///default?socket=$T/doc_zeroos.sock"
	local std_uri="nbd+unix:///?socket=$T/doc_std.sock"
	for ((r = 1; r <= rounds; r++)); do
		shim_fio shim_doc_torus64k torus "$r" "$torus_uri" "${torus64[@]}"
		shim_fio shim_doc_torus64k torus-1gbit "$r" "$torus1g_uri" \
			"${torus64[@]}"
		shim_fio shim_doc_torus64k standard "$r" "$std_uri" "${torus64[@]}"
		shim_fio shim_doc_torus4k torus "$r" "$torus_uri" "${torus4[@]}"
		shim_fio shim_doc_torus4k torus-1gbit "$r" "$torus1g_uri" \
			"${torus4[@]}"
		shim_fio shim_doc_torus4k standard "$r" "$std_uri" "${torus4[@]}"
		shim_fio shim_doc_zeroos4k zeroos "$r" "$zeroos_uri" "${zeroos4[@]}"
		((with_redis)) && shim_fio shim_doc_zeroos4k zeroos-redis "$r" \
			"nbd+unix:///default?socket=$T/doc_zeroos_redis.sock" \
			"${zeroos4[@]}"
		shim_fio shim_doc_zeroos4k standard "$r" "$std_uri" "${zeroos4[@]}"
	done
}

((shim_bench_sourced)) && return 0

# --- standalone ----------------------------------------------------------

set -euo pipefail

runtime=8
rounds=3
engine=$shim_repo/build/engines/libtorus.so
lib=$shim_repo/scripts/benchlib.py
sections=
out=

usage() {
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	echo "defaults: --runtime $runtime --rounds $rounds; --quick: --runtime 3 --rounds 1"
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--runtime) runtime=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--quick) runtime=3; rounds=1 ;;
	--sections) sections=$2; shift ;;
	--engine) engine=$(realpath "$2"); shift ;;
	--out) out=$2; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
[[ -n $sections ]] && IFS=, read -r -a SHIM_SECTIONS <<<"$sections"
for tool in fio nbdkit taskset python3; do
	command -v "$tool" >/dev/null || { echo "bench-shims: $tool not found" >&2; exit 1; }
done
for f in "$shim_bin" "$engine" "$shim_probe_bin"; do
	[[ -e $f ]] || { echo "bench-shims: $f is missing: ninja -C build" >&2; exit 1; }
done
for s in "${SHIM_SECTIONS[@]}"; do
	declare -F "section_$s" >/dev/null || { echo "bench-shims: unknown section $s" >&2; exit 2; }
done

if [[ $(nproc --all) -ge 2 ]]; then
	pin_server=(taskset -c 0)
	pin_client=(taskset -c 1)
	pinning="server CPU 0, client CPU 1"
else
	pin_server=()
	pin_client=()
	pinning="none (one CPU)"
fi

T=$(mktemp -d /tmp/bench-shims.XXXXXX)
records=$T/records.tsv
server_pids=()
mkdir -p "$T/json"
cleanup() {
	local pid
	for pid in "${server_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${server_pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

record() {
	local IFS=$'\t'
	echo "$*" >>"$records"
}

# wait_quiet: wait up to 20 s for every CPU to be under 15% busy.
wait_quiet() {
	local a b busy waited=0
	while :; do
		a=$(grep '^cpu[0-9]' /proc/stat)
		sleep 0.5
		b=$(grep '^cpu[0-9]' /proc/stat)
		busy=$(awk 'NR == FNR { for (i = 2; i <= NF; i++) t0[$1] += $i; i0[$1] = $5 + $6; next }
			{ t = 0; for (i = 2; i <= NF; i++) t += $i
			  dt = t - t0[$1]; di = $5 + $6 - i0[$1]
			  if (dt > 0 && (dt - di) * 100 / dt > m) m = (dt - di) * 100 / dt }
			END { printf "%d\n", m }' <(echo "$a") <(echo "$b"))
		((busy <= 15)) && return 0
		if ((waited >= 20)); then
			echo "  (machine busy, ${busy}% on one CPU: running anyway)"
			return 0
		fi
		waited=$((waited + 1))
	done
}

record header date "$(date -Iseconds)"
record header commit "$(git -C "$shim_repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
record header machine "$(nproc --all) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1), kernel $(uname -r)"
record header runs "$rounds round(s) of ${runtime}s per server, alternating; pinning: $pinning"
record header "load average at start" "$(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench-shims: $rounds round(s), ${runtime}s per run, sections: ${SHIM_SECTIONS[*]}"
for s in "${SHIM_SECTIONS[@]}"; do
	"section_$s"
done
record header "load average at end" "$(cut -d' ' -f1-3 /proc/loadavg)"
echo
if [[ -n $out ]]; then
	python3 "$lib" report "$records" --md "$out"
	echo "bench-shims: report written to $out"
else
	python3 "$lib" report "$records"
fi
