#!/bin/bash
# Benchmark libtorus.so: against fio's built-in nbd engine (and nbdcopy),
# and through it the NBD shim's profiles (build/shims/nbd/nbd-shim).
#
#   scripts/bench.sh [--runtime S] [--rounds N] [--quick] [--sections LIST]
#                    [--placements LIST] [--report [PAGE]] [--build DIR]
#                    [--engine PATH] [--engine-opt OPT]... [--size SIZE]
#                    [--out FILE] [--keep] [--quiet-wait S]
#                    [--no-speed-probe] [--tcmu-size SIZE]
#
# --report writes the page every published figure comes from, PAGE
# (default docs/performance.md; scripts/perfreport.py renders it): the
# date, the machine (CPU, cores, kernel, fio, the commit), the mode and
# rounds, and for each section its ratios (median and min-max of the
# rounds' own), its figures, its lean probe and the command that re-runs
# it. It runs every section (unless --sections says otherwise) in both
# placements (unless --placements does). With --quick the page says it
# is a smoke run.
#
# Placements (--placements pinned,free; default pinned): pinned runs the
# servers on CPU 0 and the clients (fio, nbdcopy, the probes) on CPU 1;
# free pins nothing, as users run them. Each section runs in each
# placement in turn, its servers started afresh. One CPU: free only.
#
# In every section the clients (or servers) take turns, builtin, torus,
# probe, then torus, probe, builtin, ... for --rounds rounds, the order
# rotated each round (in_turn), so that drift on the machine hits them
# alike and none is always second; the report gives the median over rounds
# for each and the ratios (the median of each round's own ratio: the runs
# of a round are back to back, which matters on VMs whose CPUs switch
# between two speeds every few seconds), with PASS/MISS for each target.
# The report is printed and written to results/bench-<date>.md, its
# records beside it as .tsv (`scripts/perfreport.py RECORDS PAGE` renders
# the page from them again; --keep also keeps every fio JSON). Before each run it waits up to
# --quiet-wait seconds (default 20, 0 = never) for the machine to be idle,
# and the report says how many runs started on a busy machine. Around each
# fio run a fixed loop times the client CPU's speed (CPU probe ms;
# --no-speed-probe leaves it out).
#
# Every section has a lean probe: the same transport on this machine
# driven by a client that does nothing else, no fio (pipe-probe over the
# Unix socket or TCP for NBD, at the section's block size, depth and mix
# of reads and writes, each round once sleeping for replies and once
# busy-polling, the faster counting; ring-client --bench over the TCMU
# ring), so that the engine's gap to the transport's limit is reported
# beside its gap to fio's engine.
#
# --build DIR takes the engine, the shims, pipe-probe and ring-client from
# DIR (default build; NBD_SHIM, PIPE_PROBE, TCMU_SHIM, RING_CLIENT and
# --engine name one each).
#
# Sections (--sections takes ids and the groups engine, shims, all):
#   engine (the default): the engine vs fio's nbd engine, `nbdkit null` of
#     --size on a private Unix socket, and the same over TCP on loopback
#     (nbd://127.0.0.1:PORT; the sections ending in _tcp):
#     randread4k_qd16 randrw64k_qd64 randrw64k_qd64_r75 randread4k_qd1
#     (each also as ..._tcp), read256k_qd64 (also vs nbdcopy --no-extents
#     reading the whole server; its probe reads at random offsets),
#     ceiling_qd64. randrw64k_qd64 uses fio's 50/50 mix, _r75 the torus
#     document's 75% reads, as jobs/randrw.fio; both also report the
#     spread of the engine's CPU per I/O over the rounds (max/min; the
#     target wants 7 rounds), judged only where the built-in engine's own
#     spread is within the target (NOT JUDGED when both are beyond it).
#     randread4k_qd1 runs the engine as it is (no busy-polling) and with
#     --poll_us=50 (torus-poll, above a typical round trip to nbdkit over
#     a Unix socket), beside pipe-probe -q 1 -p (probe-poll: busy-polling,
#     no fio), the floor for any client of that server on this machine.
#     ceiling_qd64: 4 KiB randread QD64 over a Unix socket to nbd-shim
#     --profile standard --backend null, the engine vs pipe-probe (a lean
#     pipelined client, no fio): the engine's fraction of what the pair can
#     do, with each side's CPU (fio's, or pipe-probe's, and the shim's).
#     timeline_cost: 4 KiB randread QD16 on nbd-shim standard (null) over
#     a Unix socket, the engine with timeline=DIR (on) and without (off),
#     two jobs side by side in each fio run: what the stamps cost (target:
#     CPU per I/O on/off <= 1.05); the records go to a tmpfs.
#     transports_plain: 4 KiB randread QD16 on nbdkit null over a Unix
#     socket and over TCP (transports_plain_tcp), three clients inside fio
#     taking turns: the engine's native transport (torus), the engine with
#     transport=libnbd (libnbd), fio's nbd engine (builtin): what libnbd
#     costs next to the native transport inside the same glue.
#     transports_tls: the same job, each TLS-capable client on a plain and
#     a TLS-only nbdkit null (--tls=require, credentials made by harness.py
#     into the scratch directory) in turn: libnbd-plain, libnbd-tls
#     (certificates), libnbd-psk, builtin-plain, builtin-tls (certificates
#     from libnbd's default directory); TLS's cost per client as TLS / plain
#     and TLS - plain CPU per I/O. The native transport has no TLS and fio's
#     engine cannot be given a PSK; pipe-probe has no TLS either, so the
#     lean probe runs on the plain server only.
#     transports_plain_64k, transports_tls_64k: the same with fio's 50/50
#     64 KiB randrw at QD64 (TLS's cost grows with the bytes it encrypts);
#     run by name only, in no group (with them --report takes 40 minutes
#     more).
#   shims: the NBD shim through the engine (handshake=auto):
#     shim_std_qd64  4 KiB randread QD64: nbd-shim --profile standard
#                    --backend null vs nbdkit null (target: >= 2x the
#                    IOPS)
#     shim_probe     the same two servers measured by pipe-probe, a lean
#                    pipelined client (what the servers can do without the
#                    engine in the way; informational)
#     shim_docs      each profile's IOPS on the documents' workloads,
#                    memory backend: torus 64 KiB randrw QD64 rwmixread=75
#                    and its 4 KiB variant (torus, 2 replicas; the same
#                    with its block traffic over 1 Gbit/s, --shape-at
#                    storage, as the document's cluster; vs standard);
#                    0-Disk 4 KiB randrw QD4 rwmixwrite=80 (zeroos; zeroos
#                    over 8 + 1 redis-servers when installed; vs standard)
#   tcmu: the TCMU transport (tcmu+unix://) to build/shims/tcmu/tcmu-shim,
#     the stores --tcmu-size large; the first two 4 KiB randread QD32, one
#     job (memory stores written once, unmeasured, so reads never touch a
#     fresh page):
#     tcmu_vs_nbd_qd32   the ring to tcmu-shim --backend memory vs NBD
#                        over a Unix socket to nbd-shim --profile standard
#                        --backend memory, both through the engine (target:
#                        the ring >= 1.5x the IOPS)
#     tcmu_ceiling_qd32  tcmu-shim --backend null through the engine vs
#                        ring-client --bench, a lean ring driver that
#                        spins on cmd_tail (the engine's fraction of what
#                        the ring can do)
#     timeline_cost_tcmu timeline_cost's two jobs over the ring to
#                        tcmu-shim --backend null (4 KiB randread QD16)
#     These sections also report the server's CPU per I/O (from
#     /proc/PID/stat around each run).
# --engine-opt options apply to every run of the engine.
#
# Sections are functions named section_<id>; each declares itself (record
# section), its targets (record target / ratio), its lean probe (record
# probe), starts the servers it needs and runs its rounds. To add one,
# write the function and add its id to ENGINE_SECTIONS, SHIM_SECTIONS or
# TCMU_SECTIONS. The machinery is in scripts/benchlib.sh.
#
# CPU per I/O = (fio usr+sys % / 100 * job runtime) / I/Os done: the CPU the
# fio process spent (all its threads) per I/O, the server's CPU excluded.
# Server CPU per I/O (tcmu sections) = the server process's utime + stime
# (/proc/PID/stat, 10 ms ticks, every thread) over the fio run / I/Os done.

set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench_name=bench
. "$repo/scripts/benchlib.sh"

runtime=8
rounds=3
size=8G
build=$repo/build
engine=
engine_opts=()
tcmu_size=1G
sections=engine
out=
keep=0
quiet_wait=20
report=
probe_mix=
mode=full
placements=
sections_given=0
argv=("$@")

ENGINE_SECTIONS=(randread4k_qd16 randread4k_qd16_tcp randrw64k_qd64 randrw64k_qd64_tcp
	randrw64k_qd64_r75 randrw64k_qd64_r75_tcp randread4k_qd1 randread4k_qd1_tcp
	read256k_qd64 ceiling_qd64 timeline_cost transports_plain transports_tls)
# transports_plain_64k and transports_tls_64k run by name only: in every
# group the page would take some 40 minutes more.
SHIM_SECTIONS=(shim_std_qd64 shim_probe shim_docs)
TCMU_SECTIONS=(tcmu_vs_nbd_qd32 tcmu_ceiling_qd32 timeline_cost_tcmu)

usage() {
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	echo "defaults: --runtime $runtime --rounds $rounds --size $size --sections $sections (server size = nbdcopy's copy)"
	echo "--quick: --runtime 2 --rounds 1 --size 1G (a smoke run; figures are noisy)"
	echo "--report: --sections all --placements pinned,free; the page docs/performance.md"
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--runtime) runtime=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--quick) runtime=2; rounds=1; size=1G; mode=quick ;;
	--sections) sections=$2; sections_given=1; shift ;;
	--placements) placements=$2; shift ;;
	--report)
		report=$repo/docs/performance.md
		if [[ $# -ge 2 && $2 != -* ]]; then
			report=$2
			shift
		fi ;;
	--engine) engine=$(realpath "$2"); shift ;;
	--build) build=$(realpath "$2"); shift ;;
	--engine-opt) engine_opts+=("$2"); shift ;;
	--size) size=$2; shift ;;
	--out) out=$2; shift ;;
	--keep) keep=1 ;;
	--quiet-wait) quiet_wait=$2; shift ;;
	--no-speed-probe) speed_probe=0 ;;
	--tcmu-size) tcmu_size=$2; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
[[ $runtime =~ ^[0-9]+$ && $runtime -gt 0 ]] || die "--runtime wants whole seconds, got '$runtime'"
[[ $rounds =~ ^[0-9]+$ && $rounds -gt 0 ]] || die "--rounds wants a positive number, got '$rounds'"
[[ $quiet_wait =~ ^[0-9]+$ ]] || die "--quiet-wait wants whole seconds, got '$quiet_wait'"
engine=${engine:-$build/engines/libtorus.so}
shim_bin=${NBD_SHIM:-$build/shims/nbd/nbd-shim}
probe_bin=${PIPE_PROBE:-$build/tests/shims/pipe-probe}
tcmu_shim_bin=${TCMU_SHIM:-$build/shims/tcmu/tcmu-shim}
ring_client_bin=${RING_CLIENT:-$build/tests/tcmu/ring-client}
if [[ -n $report ]]; then
	((sections_given)) || sections=all
	placements=${placements:-pinned,free}
	[[ -d $(dirname "$report") ]] ||
		die "--report $report: no directory $(dirname "$report"): give a file in an existing directory"
fi
placements=${placements:-pinned}

SECTIONS=()
IFS=, read -r -a wanted <<<"$sections"
for s in "${wanted[@]}"; do
	case $s in
	engine) SECTIONS+=("${ENGINE_SECTIONS[@]}") ;;
	shims) SECTIONS+=("${SHIM_SECTIONS[@]}") ;;
	tcmu) SECTIONS+=("${TCMU_SECTIONS[@]}") ;;
	all) SECTIONS+=("${ENGINE_SECTIONS[@]}" "${SHIM_SECTIONS[@]}" "${TCMU_SECTIONS[@]}") ;;
	*) SECTIONS+=("$s") ;;
	esac
done
((${#SECTIONS[@]})) || die "--sections: no section given"

# --- servers ----------------------------------------------------------------------

# The `nbdkit null` server of $size that the sections share: null_sock,
# null_uri, started the first time a section needs it.
null_sock=
null_uri=
null_pid=
need_null_server() {
	[[ -n $null_uri ]] && return 0
	null_sock=$T/null.sock
	null_uri="nbd+unix:///?socket=$null_sock"
	start_nbdkit "$null_sock" null size="$size"
	null_pid=${server_pids[-1]}
}

# The same null server over TCP on loopback: null_tcp_uri.
null_tcp_uri=
null_tcp_pid=
need_null_tcp_server() {
	[[ -n $null_tcp_uri ]] && return 0
	local port
	port=$(free_port)
	"${pin_server[@]}" nbdkit --foreground --exit-with-parent --ipaddr 127.0.0.1 \
		--port "$port" null size="$size" 2>"$T/null-tcp.log" &
	server_pids+=($!)
	null_tcp_pid=$!
	wait_port "$port" "$T/null-tcp.log" "nbdkit null (TCP)" $!
	null_tcp_uri="nbd://127.0.0.1:$port"
}

# need_null_on NET: the null server over unix or tcp, started when needed
# (here, not in a subshell, so that it is stopped at exit); its URI in
# net_uri. net_where NET: the same for pipe-probe (after need_null_on).
# net_text NET: how the report names it.
need_null_on() {
	case $1 in
	unix) need_null_server; net_uri=$null_uri ;;
	tcp) need_null_tcp_server; net_uri=$null_tcp_uri ;;
	esac
}
# net_pid NET: that server's pid (its CPU is recorded around each run: a
# server at 100% is the bound every client meets, the probe included).
net_pid() {
	case $1 in
	unix) echo "$null_pid" ;;
	tcp) echo "$null_tcp_pid" ;;
	esac
}
net_where() {
	case $1 in
	unix) echo "unix:$null_sock" ;;
	tcp) echo "tcp:${null_tcp_uri#nbd://}" ;;
	esac
}
net_text() {
	case $1 in
	unix) echo "Unix socket" ;;
	tcp) echo "TCP loopback" ;;
	esac
}

# shim_start NAME ARGS...: nbd-shim on $T/NAME.sock, server CPU.
shim_start() {
	local name=$1
	shift
	"${pin_server[@]}" "$shim_bin" --listen "unix:$T/$name.sock" "$@" \
		2>"$T/$name.log" &
	server_pids+=($!)
	wait_socket "$T/$name.sock" "$T/$name.log" "nbd-shim $*" $!
}

# The redis servers for zeroos: 8 storage + 1 metadata, as in document 004;
# sets shim_redis_storage and shim_redis_meta.
shim_redis_start() {
	local i port storage=
	for i in $(seq 0 8); do
		port=$(free_port)
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
		wait_port "$port" "$T/redis$i/log" "redis-server $i" $!
	done
	shim_redis_storage=$storage
}

# tcmu_start NAME ARGS...: tcmu-shim on $T/NAME.sock, server CPU; its pid
# in tcmu_pid_NAME.
tcmu_start() {
	local name=$1
	shift
	"${pin_server[@]}" "$tcmu_shim_bin" --socket "$T/$name.sock" "$@" \
		2>"$T/$name.log" &
	server_pids+=($!)
	printf -v "tcmu_pid_$name" %s $!
	wait_socket "$T/$name.sock" "$T/$name.log" "tcmu-shim $*" $!
}

# prefill URI: write the whole store once (unmeasured), so that the reads
# measured later find its pages in place rather than faulting fresh ones.
prefill() {
	"${pin_client[@]}" fio --name=prefill "--ioengine=external:$engine" \
		"--uri=$1" --rw=write --bs=1m --iodepth=8 --size="$tcmu_size" \
		>"$T/prefill.log" 2>&1 ||
		{ cat "$T/prefill.log" >&2; die "prefilling $1 failed (above)"; }
}

# --- clients ----------------------------------------------------------------------

# run_fio SID LABEL ROUND URI FIO-ARGS...: fio's nbd engine (LABEL builtin)
# or this engine (torus) on URI.
run_fio() {
	local sid=$1 label=$2 round=$3 uri=$4
	shift 4
	case $label in
	builtin | builtin-*) bench_fio "$sid" "$label" "$round" --ioengine=nbd "--uri=$uri" "$@" ;;
	torus) engine_fio "$sid" "$label" "$round" "$uri" "$@" ;;
	*) die "run_fio: unknown client $label" ;;
	esac
}

# engine_fio SID LABEL ROUND URI FIO-ARGS...: this engine on URI, recorded
# as LABEL (the server's name in the shim sections).
engine_fio() {
	local sid=$1 label=$2 round=$3 uri=$4
	shift 4
	bench_fio "$sid" "$label" "$round" "--ioengine=external:$engine" \
		"--uri=$uri" "${engine_opts[@]}" "$@"
}

# shim_fio SID LABEL ROUND URI FIO-ARGS...: the engine on a shim (or on
# nbdkit, to compare), with the handshake that copes with legacy servers.
shim_fio() {
	engine_fio "$@" --handshake=auto
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
	bench_say "$sid" nbdcopy "$round" "$secs s for $size"
}

# lean_client_record SID LABEL ROUND IOPS "USER SYS": records a lean
# client's run of $runtime seconds (pipe-probe, ring-client): its IOPS,
# its CPU per I/O from its user + system seconds, and the server's.
lean_client_record() {
	local sid=$1 label=$2 round=$3 iops=$4 t=$5 cpu
	cpu=$(awk -v t="$t" -v n="$iops" -v s="$runtime" \
		'BEGIN { split(t, a, " "); printf "%.6f", (a[1] + a[2]) * 1e6 / (n * s) }')
	record value "$sid" "$label" "$round" iops "$iops"
	record value "$sid" "$label" "$round" cpu_us_per_io "$cpu"
	bench_server_end "$sid" "$label" "$round" "$(awk -v n="$iops" -v s="$runtime" 'BEGIN { printf "%d", n * s }')"
	bench_say "$sid" "$label" "$round" \
		"$(awk -v n="$iops" -v c="$cpu" 'BEGIN { printf "%.1fk IOPS %.3f us CPU/IO", n / 1000, c }')$bench_server_note"
}

# probe_once WHERE QD BS [-p]: one pipe-probe run of $runtime seconds;
# sets probe_iops, probe_t ("USER SYS" seconds) and probe_ticks (the
# server's CPU ticks over it, when bench_server_pid is set). 1 if it failed.
probe_once() {
	local where=$1 qd=$2 bs=$3 TIMEFORMAT='%U %S'
	shift 3
	wait_quiet
	bench_server_begin
	{ probe_t=$( { time "${pin_client[@]}" "$probe_bin" "$where" -q "$qd" -b "$bs" \
		${probe_mix:+-m "$probe_mix"} -t "$runtime" "$@" >"$T/probe.out" 2>"$T/probe.err"; } 2>&1 ); } ||
		return 1
	probe_iops=$(<"$T/probe.out")
	probe_ticks=
	[[ -z $bench_server_pid ]] ||
		probe_ticks=$(($(proc_cpu_ticks "$bench_server_pid") - bench_server_ticks0))
}

# probe_run SID LABEL ROUND WHERE [QD [BS]]: pipe-probe, reads of BS
# (default 4096; $probe_mix, when set, the percentage of reads in a mix with
# writes) at QD (default 64) on WHERE (unix:PATH or tcp:HOST:PORT), run
# twice, sleeping for replies and busy-polling (-p), in turn first: the
# faster run is the limit (a client that sleeps pays a wake-up per batch
# of replies, one that spins pays none but takes a CPU). Its IOPS,
# bandwidth and CPU per I/O (its own user + system time), and the
# server's when bench_server_pid is set.
probe_run() {
	local sid=$1 label=$2 round=$3 where=$4 qd=${5:-64} bs=${6:-4096}
	local ways=(sleeping spinning) w best_iops=0 best_t best_ticks best_way
	((round % 2)) || ways=(spinning sleeping)
	for w in "${ways[@]}"; do
		local poll=()
		[[ $w == spinning ]] && poll=(-p)
		probe_once "$where" "$qd" "$bs" "${poll[@]}" ||
			{ cat "$T/probe.err" >&2; client_died "pipe-probe ($w) failed: $sid, $label, round $round"; }
		if awk -v a="$probe_iops" -v b="$best_iops" 'BEGIN { exit !(a > b) }'; then
			best_iops=$probe_iops best_t=$probe_t best_ticks=$probe_ticks best_way=$w
		fi
	done
	record value "$sid" "$label" "$round" bw_mib \
		"$(awk -v n="$best_iops" -v b="$bs" 'BEGIN { printf "%.3f", n * b / 2^20 }')"
	bench_server_ticks=$best_ticks lean_client_record "$sid" "$label" "$round" "$best_iops" "$best_t"
	echo "    (the $best_way probe was the faster)"
}

# probe_qd1_run SID LABEL ROUND WHERE: pipe-probe -q 1 -p (busy-polling,
# no fio) on WHERE (unix:PATH or tcp:HOST:PORT): the lowest QD1 latency
# any client gets from the server, recorded as lat_mean_us (1 / IOPS).
probe_qd1_run() {
	local sid=$1 label=$2 round=$3 where=$4 iops
	wait_quiet
	"${pin_client[@]}" "$probe_bin" "$where" -q 1 -b 4096 -p -t "$runtime" \
		>"$T/probe.out" 2>"$T/probe.err" ||
		{ cat "$T/probe.err" >&2; client_died "pipe-probe failed: $sid, $label, round $round"; }
	iops=$(<"$T/probe.out")
	record value "$sid" "$label" "$round" iops "$iops"
	record value "$sid" "$label" "$round" lat_mean_us \
		"$(awk -v n="$iops" 'BEGIN { printf "%.3f", 1e6 / n }')"
	bench_say "$sid" "$label" "$round" \
		"$(awk -v n="$iops" 'BEGIN { printf "%.1f us per read", 1e6 / n }')"
}

# ring_client_run SID LABEL ROUND SOCKET: ring-client --bench, 4 KiB random
# reads at QD32; its IOPS and CPU per I/O (its own user + system time).
ring_client_run() {
	local sid=$1 label=$2 round=$3 sock=$4 t iops TIMEFORMAT='%U %S'
	wait_quiet
	bench_server_begin
	{ t=$( { time "${pin_client[@]}" "$ring_client_bin" --socket "$sock" \
		--bench "$runtime" --qd 32 --bs 4096 >"$T/ring-client.out" \
		2>&1; } 2>&1 ); } ||
		{ cat "$T/ring-client.out" >&2; client_died "ring-client failed: $sid, $label, round $round"; }
	iops=$(sed -n 's/^iops //p' "$T/ring-client.out")
	[[ -n $iops ]] || { cat "$T/ring-client.out" >&2; die "no IOPS from ring-client"; }
	lean_client_record "$sid" "$label" "$round" "$iops" "$t"
}

# alternate SID URI WHERE QD BS FIO-ARGS...: builtin, torus, probe,
# builtin, torus, probe, ... (the probe: pipe-probe on WHERE, reads of BS
# at QD).
# shellcheck disable=SC2034 # used in in_turn's commands
alternate() {
	local sid=$1 uri=$2 where=$3 qd=$4 bs=$5 r
	shift 5
	local args=("$@")
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'run_fio "$sid" builtin "$r" "$uri" "${args[@]}"' \
			'run_fio "$sid" torus "$r" "$uri" "${args[@]}"' \
			'probe_run "$sid" probe "$r" "$where" "$qd" "$bs"'
	done
}

# --- engine sections ------------------------------------------------------------

# Each engine section over NET (unix or tcp); the _tcp sections call them
# with tcp.
engine_randread4k_qd16() {
	local sid=$1 net=$2
	record section $sid "4 KiB randread QD16, nbdkit null, $(net_text $net)"
	record target $sid cpu_us_per_io torus builtin "<=" 0.55
	# IOPS >= builtin; the server is the bottleneck, so 5% is left for noise.
	record target $sid iops torus builtin ">=" 0.95
	record ratio $sid clat_mean_us torus builtin
	record probe $sid probe "pipe-probe over the $(net_text $net), 4 KiB reads at QD16, no fio"
	record ratio $sid iops torus probe
	record ratio $sid server_cpu_us_per_io torus probe
	need_null_on $net
	bench_server_pid=$(net_pid $net)
	alternate $sid "$net_uri" "$(net_where $net)" 16 4096 \
		--rw=randread --bs=4k --iodepth=16
	bench_server_pid=
}

# engine_randrw64k_qd64 SID NET [READ%]: fio's 50/50 mix, or READ% reads
# (75: the torus document's mix).
engine_randrw64k_qd64() {
	local sid=$1 net=$2 mix=${3:-} title="64 KiB randrw QD64"
	[[ -z $mix ]] || title+=" with $mix% reads (the torus document's mix)"
	record section $sid "$title, nbdkit null, $(net_text $net)"
	record target $sid cpu_us_per_io torus builtin "<=" 0.6
	record ratio $sid iops torus builtin
	record spread $sid cpu_us_per_io torus "<=" 1.25 builtin
	record spread $sid cpu_us_per_io builtin
	record probe $sid probe "pipe-probe over the $(net_text $net), 64 KiB at QD64, the same mix (${mix:-50}% reads), no fio"
	record ratio $sid iops torus probe
	record ratio $sid server_cpu_us_per_io torus probe
	need_null_on $net
	bench_server_pid=$(net_pid $net)
	probe_mix=${mix:-50}
	alternate $sid "$net_uri" "$(net_where $net)" 64 65536 \
		--rw=randrw ${mix:+--rwmixread=$mix} --bs=64k --iodepth=64
	probe_mix=
	bench_server_pid=
}

# shellcheck disable=SC2034 # used in in_turn's commands
engine_randread4k_qd1() {
	local sid=$1 net=$2 r uri where qd1=(--rw=randread --bs=4k --iodepth=1)
	record section $sid "4 KiB randread QD1, nbdkit null, $(net_text $net)"
	# as it comes (no busy-polling), and busy-polling when asked for
	record ratio $sid lat_mean_us torus builtin
	record ratio $sid cpu_us_per_io torus builtin
	# On total latency (fio's lat: from fio's start of the I/O to its
	# completion). fio stamps the built-in engine's issue time after its
	# ->queue has sent the request (it has no ->commit), so that engine's
	# clat leaves the send out; ours, like fio's io_uring engine, is
	# stamped before the send. clat is shown as fio reports it.
	record target $sid lat_mean_us torus-poll builtin "<=" 0.7
	record ratio $sid clat_mean_us torus-poll builtin
	record ratio $sid cpu_us_per_io torus-poll builtin
	# the floor: pipe-probe busy-polling, no fio (its time per read)
	record ratio $sid lat_mean_us probe-poll builtin
	record probe $sid probe-poll "pipe-probe -p over the $(net_text $net), busy-polling, 4 KiB reads at QD1, no fio"
	record ratio $sid lat_mean_us torus-poll probe-poll
	need_null_on $net
	uri=$net_uri
	where=$(net_where $net)
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'run_fio $sid builtin "$r" "$uri" "${qd1[@]}"' \
			'run_fio $sid torus "$r" "$uri" "${qd1[@]}"' \
			'engine_fio $sid torus-poll "$r" "$uri" "${qd1[@]}" --poll_us=50' \
			'probe_qd1_run $sid probe-poll "$r" "$where"'
	done
}

section_randread4k_qd16() { engine_randread4k_qd16 randread4k_qd16 unix; }
section_randread4k_qd16_tcp() { engine_randread4k_qd16 randread4k_qd16_tcp tcp; }
section_randrw64k_qd64() { engine_randrw64k_qd64 randrw64k_qd64 unix; }
section_randrw64k_qd64_tcp() { engine_randrw64k_qd64 randrw64k_qd64_tcp tcp; }
section_randrw64k_qd64_r75() { engine_randrw64k_qd64 randrw64k_qd64_r75 unix 75; }
section_randrw64k_qd64_r75_tcp() { engine_randrw64k_qd64 randrw64k_qd64_r75_tcp tcp 75; }
section_randread4k_qd1() { engine_randread4k_qd1 randread4k_qd1 unix; }
section_randread4k_qd1_tcp() { engine_randread4k_qd1 randread4k_qd1_tcp tcp; }

# The engine against the transport's ceiling: pipe-probe and the engine
# take turns on one nbd-shim standard (null); the shim's CPU per I/O shows
# which side runs out first.
section_ceiling_qd64() {
	local sid=ceiling_qd64 r
	record section $sid "4 KiB randread QD64, Unix socket, nbd-shim standard (null): the engine vs pipe-probe (lean pipelined client)"
	record target $sid iops torus probe ">=" 0.8
	record ratio $sid server_cpu_us_per_io torus probe
	record ratio $sid cpu_us_per_io torus probe
	record probe $sid probe "pipe-probe over the Unix socket, 4 KiB reads at QD64, no fio"
	# a shim of its own, so that its CPU is this section's alone
	shim_start ceiling_shim --profile standard --backend null --size "$size"
	bench_server_pid=${server_pids[-1]}
	# fio's own cost per I/O on this job (its null engine): with
	# pipe-probe's, about the least any fio engine can spend per I/O here
	record ratio $sid cpu_us_per_io fio-null probe
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'probe_run $sid probe "$r" "unix:$T/ceiling_shim.sock"' \
			'engine_fio $sid torus "$r" "nbd+unix:///?socket=$T/ceiling_shim.sock" --rw=randread --bs=4k --iodepth=64' \
			'bench_server_pid="" bench_fio $sid fio-null "$r" --ioengine=null --size="$size" --rw=randread --bs=4k --iodepth=64'
	done
	bench_server_pid=
}

# What timeline=DIR costs the engine: a clock read per stamp, a record per
# command, against the same job without it. On and off are two jobs of one
# fio run, side by side on the client CPU, each with its own connection to
# a shim of their own: runs taken in turn moved each other by ±20% on these
# VMs (their speed changes every few seconds), which hid a cost of a few
# percent; jobs in one run share every change. Which job comes first
# alternates. The records go to a tmpfs (/dev/shm): on a disk, the page
# cache's writeback of them competes for CPU, which is the disk's cost.
section_timeline_cost() {
	local sid=timeline_cost
	record section $sid "4 KiB randread QD16, nbd-shim standard (null), Unix socket: two jobs side by side in one fio run, the engine with timeline=DIR on a tmpfs (on) and without (off)"
	record probe $sid probe "pipe-probe over the Unix socket to the same nbd-shim, 4 KiB reads at QD32 (the two jobs' QD16 together), no fio"
	record ratio $sid iops both probe
	shim_start tl_shim --profile standard --backend null --size "$size"
	bench_server_pid=${server_pids[-1]}
	timeline_pairs $sid "nbd+unix:///?socket=$T/tl_shim.sock" \
		'probe_run $sid probe "$r" "unix:$T/tl_shim.sock" 32 4096'
	bench_server_pid=
}

# The same over the TCMU ring: the two jobs each attach a ring of their own.
section_timeline_cost_tcmu() {
	local sid=timeline_cost_tcmu
	record section $sid "4 KiB randread QD16, tcmu-shim --backend null ($tcmu_size): two jobs side by side in one fio run, the engine with timeline=DIR on a tmpfs (on) and without (off)"
	record probe $sid ring-client "ring-client --bench over a ring to the same tcmu-shim, 4 KiB random reads at QD32, no fio"
	record ratio $sid iops both ring-client
	tcmu_start tl_tcmu --backend null --size "$tcmu_size"
	# shellcheck disable=SC2154 # set by tcmu_start (printf -v)
	bench_server_pid=$tcmu_pid_tl_tcmu
	timeline_pairs $sid "tcmu+unix:///?socket=$T/tl_tcmu.sock" \
		'ring_client_run $sid ring-client "$r" "$T/tl_tcmu.sock"'
	bench_server_pid=
}

# timeline_pairs SID URI PROBE: the rounds of a timeline_cost section: on
# and off side by side at 4 KiB randread QD16 (the job listed first
# alternates), then PROBE (a command, evaluated) each round.
timeline_pairs() {
	local sid=$1 uri=$2 probe=$3 r jobs tl=$T/timeline
	[[ -w /dev/shm ]] && tl=$(mktemp -d /dev/shm/torus-timeline.XXXXXX)
	record target $sid cpu_us_per_io on off "<=" 1.05
	record ratio $sid iops on off
	record ratio $sid clat_mean_us on off
	for ((r = 1; r <= rounds; r++)); do
		jobs=(--name=on --timeline="$tl" --name=off)
		((r % 2)) || jobs=(--name=off --name=on --timeline="$tl")
		bench_fio_jobs $sid "$r" both "--ioengine=external:$engine" \
			"--uri=$uri" "${engine_opts[@]}" --rw=randread --bs=4k \
			--iodepth=16 "${jobs[@]}"
		eval "$probe"
	done
	rm -rf "$tl"
}

section_read256k_qd64() {
	local sid=read256k_qd64 r
	record section $sid "256 KiB sequential read QD64 vs nbdcopy --no-extents of $size, nbdkit null"
	record target $sid bw_mib torus nbdcopy ">=" 1.0
	record ratio $sid bw_mib torus builtin
	record ratio $sid cpu_us_per_io torus builtin
	record probe $sid probe "pipe-probe over the Unix socket, 256 KiB random reads at QD64, no fio"
	record ratio $sid bw_mib torus probe
	need_null_server
	bench_server_pid=$null_pid
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'run_fio $sid builtin "$r" "$null_uri" --rw=read --bs=256k --iodepth=64' \
			'run_fio $sid torus "$r" "$null_uri" --rw=read --bs=256k --iodepth=64' \
			'run_nbdcopy $sid "$r" "$null_uri"' \
			'probe_run $sid probe "$r" "unix:$null_sock" 64 262144'
	done
	bench_server_pid=
}

# --- shim sections --------------------------------------------------------------

# need_std_shim: nbd-shim standard (null) on $T/std_shim.sock, its pid in
# std_shim_pid, started once for the shim sections that share it.
std_shim_pid=
need_std_shim() {
	[[ -z $std_shim_pid ]] || return 0
	shim_start std_shim --profile standard --backend null --size "$size"
	std_shim_pid=${server_pids[-1]}
}

section_shim_std_qd64() {
	local sid=shim_std_qd64 r
	local rr=(--rw=randread --bs=4k --iodepth=64)
	record section $sid "4 KiB randread QD64 through the engine: nbd-shim standard (null) vs nbdkit null"
	record target $sid iops shim nbdkit ">=" 2.0
	record ratio $sid cpu_us_per_io shim nbdkit
	record probe $sid probe "pipe-probe over the Unix socket to nbd-shim standard, 4 KiB reads at QD64, no fio"
	record ratio $sid iops shim probe
	need_null_server
	need_std_shim
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'bench_server_pid=$null_pid shim_fio $sid nbdkit "$r" "$null_uri" "${rr[@]}"' \
			'bench_server_pid=$std_shim_pid shim_fio $sid shim "$r" "nbd+unix:///?socket=$T/std_shim.sock" "${rr[@]}"' \
			'bench_server_pid=$std_shim_pid probe_run $sid probe "$r" "unix:$T/std_shim.sock"'
	done
}

section_shim_probe() {
	local sid=shim_probe r
	record section $sid "4 KiB read QD64 by pipe-probe (no engine): nbd-shim standard (null) vs nbdkit null"
	record ratio $sid iops shim nbdkit
	record probe $sid shim "the section is the probe: pipe-probe over the Unix socket, 4 KiB reads at QD64, no fio"
	need_null_server
	need_std_shim
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'bench_server_pid=$null_pid probe_run $sid nbdkit "$r" "unix:$null_sock"' \
			'bench_server_pid=$std_shim_pid probe_run $sid shim "$r" "unix:$T/std_shim.sock"'
	done
}

# shellcheck disable=SC2034 # used in in_turn's commands
section_shim_docs() {
	local r sz=1G with_redis=0 qd bs
	local torus64=(--rw=randrw --rwmixread=75 --bs=64k --iodepth=64 "--size=$sz")
	local torus4=(--rw=randrw --rwmixread=75 --bs=4k --iodepth=64 "--size=$sz")
	local zeroos4=(--rw=randrw --rwmixwrite=80 --bs=4k --iodepth=4 "--size=$sz")

	record section shim_doc_torus64k "torus document: 64 KiB randrw QD64 rwmixread=75 ($sz), memory backend"
	record ratio shim_doc_torus64k iops torus standard
	record section shim_doc_torus4k "torus document, 4 KiB variant: 4 KiB randrw QD64 rwmixread=75 ($sz), memory backend"
	record ratio shim_doc_torus4k iops torus standard
	record section shim_doc_zeroos4k "0-Disk document: 4 KiB randrw QD4 rwmixwrite=80 ($sz), memory backend (and 8 + 1 redis)"
	record ratio shim_doc_zeroos4k iops zeroos standard
	local d
	for d in torus64k:64:65536 torus4k:64:4096 zeroos4k:4:4096; do
		IFS=: read -r d qd bs <<<"$d"
		record probe shim_doc_$d probe "pipe-probe over the Unix socket to nbd-shim standard, $((bs / 1024)) KiB reads at QD$qd, no fio"
		record ratio shim_doc_$d iops standard probe
	done

	shim_start doc_torus --profile torus --size 2G --replicas 2
	shim_start doc_torus_1g --profile torus --size 2G --replicas 2 \
		--bandwidth 1gbit --shape-at storage
	record ratio shim_doc_torus64k iops torus-1gbit standard
	record ratio shim_doc_torus4k iops torus-1gbit standard
	shim_start doc_zeroos --profile zeroos --size 2G
	shim_start doc_std --profile standard --size 2G
	local doc_std_pid=${server_pids[-1]}
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
	local redis_run=()
	((with_redis)) && redis_run=('shim_fio shim_doc_zeroos4k zeroos-redis "$r" "nbd+unix:///default?socket=$T/doc_zeroos_redis.sock" "${zeroos4[@]}"')
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'shim_fio shim_doc_torus64k torus "$r" "$torus_uri" "${torus64[@]}"' \
			'shim_fio shim_doc_torus64k torus-1gbit "$r" "$torus1g_uri" "${torus64[@]}"' \
			'bench_server_pid=$doc_std_pid shim_fio shim_doc_torus64k standard "$r" "$std_uri" "${torus64[@]}"' \
			'bench_server_pid=$doc_std_pid probe_run shim_doc_torus64k probe "$r" "unix:$T/doc_std.sock" 64 65536'
		in_turn $r 'shim_fio shim_doc_torus4k torus "$r" "$torus_uri" "${torus4[@]}"' \
			'shim_fio shim_doc_torus4k torus-1gbit "$r" "$torus1g_uri" "${torus4[@]}"' \
			'bench_server_pid=$doc_std_pid shim_fio shim_doc_torus4k standard "$r" "$std_uri" "${torus4[@]}"' \
			'bench_server_pid=$doc_std_pid probe_run shim_doc_torus4k probe "$r" "unix:$T/doc_std.sock" 64 4096'
		in_turn $r 'shim_fio shim_doc_zeroos4k zeroos "$r" "$zeroos_uri" "${zeroos4[@]}"' \
			"${redis_run[@]}" \
			'bench_server_pid=$doc_std_pid shim_fio shim_doc_zeroos4k standard "$r" "$std_uri" "${zeroos4[@]}"' \
			'bench_server_pid=$doc_std_pid probe_run shim_doc_zeroos4k probe "$r" "unix:$T/doc_std.sock" 4 4096'
	done
}

# --- transport sections -----------------------------------------------------------

# The credentials of the TLS sections, made once per run (scripts/harness.py):
# tls_dir (a CA, server and client certificates), tls_psk (a PSK file for
# user torus), tls_home (a HOME whose .pki/libnbd holds the client's
# certificates, for fio's nbd engine, which takes no tls-certificates).
tls_dir=
tls_psk=
tls_home=
need_tls_keys() {
	[[ -z $tls_dir ]] || return 0
	python3 "$bench_harness" tls-certificates "$T_base/tls" &&
		python3 "$bench_harness" tls-psk "$T_base/tls.psk" --user torus &&
		python3 "$bench_harness" libnbd-home "$T_base/tls-home" "$T_base/tls" ||
		die "could not make the TLS credentials (above)"
	tls_dir=$T_base/tls
	tls_psk=$T_base/tls.psk
	# shellcheck disable=SC2034 # read by transports_tls's commands (in_turn)
	tls_home=$T_base/tls-home
}

# need_null_tls_on NET KIND: a TLS-only nbdkit null (--tls=require) of
# $size over NET (unix or tcp) with KIND's credentials (certs or psk),
# started when needed; its URI in net_uri (nbds+unix:// or nbds://), its
# pid in net_tls_pid.
need_null_tls_on() {
	local net=$1 kind=$2 tls port uvar=tls_uri_$1_$2 pvar=tls_pid_$1_$2
	need_tls_keys
	if [[ -z ${!uvar:-} ]]; then
		case $kind in
		certs) tls=(--tls=require "--tls-certificates=$tls_dir") ;;
		psk) tls=(--tls=require "--tls-psk=$tls_psk") ;;
		esac
		case $net in
		unix)
			start_nbdkit "$T/null-$kind.sock" "${tls[@]}" null size="$size"
			printf -v "$uvar" %s "nbds+unix:///?socket=$T/null-$kind.sock" ;;
		tcp)
			port=$(free_port)
			"${pin_server[@]}" nbdkit --foreground --exit-with-parent --ipaddr 127.0.0.1 \
				--port "$port" "${tls[@]}" null size="$size" 2>"$T/null-tcp-$kind.log" &
			server_pids+=($!)
			wait_port "$port" "$T/null-tcp-$kind.log" "nbdkit null (TCP, TLS $kind)" $!
			printf -v "$uvar" %s "nbds://127.0.0.1:$port" ;;
		esac
		printf -v "$pvar" %s "${server_pids[-1]}"
	fi
	net_uri=${!uvar}
	net_tls_pid=${!pvar}
}

# The workloads of the transport sections: transport_job WORK sets job (fio's
# arguments), job_text, and probe_qd, probe_bs and probe_mix for pipe-probe.
transport_job() {
	case $1 in
	4k)
		job=(--rw=randread --bs=4k --iodepth=16)
		job_text="4 KiB randread QD16"
		probe_qd=16 probe_bs=4096 probe_mix= ;;
	64k)
		job=(--rw=randrw --bs=64k --iodepth=64)
		job_text="64 KiB randrw QD64"
		probe_qd=64 probe_bs=65536 probe_mix=50 ;;
	esac
}

# libnbd_fio SID LABEL ROUND URI FIO-ARGS...: this engine through
# transport=libnbd.
libnbd_fio() {
	engine_fio "$@" --transport=libnbd
}

# transports_plain SID NET WORK: one server (nbdkit null over NET) and
# three clients inside fio: the engine's native transport (torus), the
# engine with transport=libnbd (libnbd), fio's nbd engine (builtin, itself
# on libnbd); and pipe-probe. libnbd / torus is what a general client
# library costs next to the lean one inside the same glue; libnbd /
# builtin is the glue's own cost on the same library.
transports_plain() {
	local sid=$1 net=$2 r uri where job job_text probe_qd probe_bs
	transport_job "$3"
	record section $sid "$job_text, nbdkit null, $(net_text $net): the engine's native transport (torus), the engine with transport=libnbd (libnbd), fio's nbd engine (builtin)"
	record ratio $sid cpu_us_per_io libnbd torus
	record ratio $sid cpu_us_per_io builtin torus
	record ratio $sid cpu_us_per_io libnbd builtin
	record ratio $sid iops libnbd torus
	record ratio $sid iops builtin torus
	record ratio $sid clat_mean_us libnbd torus
	record ratio $sid clat_mean_us builtin torus
	record ratio $sid server_cpu_us_per_io libnbd torus
	record probe $sid probe "pipe-probe over the $(net_text $net) to the same server, $((probe_bs / 1024)) KiB at QD$probe_qd${probe_mix:+ ($probe_mix% reads)}, no fio"
	record ratio $sid iops torus probe
	record ratio $sid iops libnbd probe
	need_null_on $net
	uri=$net_uri
	where=$(net_where $net)
	bench_server_pid=$(net_pid $net)
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'run_fio $sid torus "$r" "$uri" "${job[@]}"' \
			'libnbd_fio $sid libnbd "$r" "$uri" "${job[@]}"' \
			'run_fio $sid builtin "$r" "$uri" "${job[@]}"' \
			'probe_run $sid probe "$r" "$where" "$probe_qd" "$probe_bs"'
	done
	bench_server_pid=
	probe_mix=
}

# transports_tls SID NET WORK: what TLS costs each client that has it, as
# TLS / plain (and TLS - plain) of the same client on a plain and a
# TLS-only nbdkit null over NET, run in turn in one section: the engine
# with transport=libnbd over certificates (libnbd-tls) and a PSK
# (libnbd-psk), fio's nbd engine over certificates (builtin-tls: it takes
# them from libnbd's default directory, $HOME/.pki/libnbd, run with HOME
# set to tls_home; as root libnbd looks in /etc/pki/libnbd instead, and
# finding none there it does TLS without checking the server's
# certificate: the same cipher, so the same cost per I/O). fio's engine
# cannot use a PSK (no way to give it the file) and the native transport
# has no TLS. The lean probe runs on the plain server: pipe-probe has no
# TLS, so TLS has no lean probe.
# shellcheck disable=SC2034 # the clients' variables: read by in_turn's commands
transports_tls() {
	local sid=$1 net=$2 r plain certs psk plain_pid certs_pid psk_pid where
	local job job_text probe_qd probe_bs l
	transport_job "$3"
	record section $sid "$job_text, nbdkit null, $(net_text $net): TLS (certificates, PSK) against plain, the engine with transport=libnbd (libnbd-*) and fio's nbd engine (builtin-*)"
	for l in libnbd-tls libnbd-psk builtin-tls; do
		record ratio $sid cpu_us_per_io $l ${l%-*}-plain
		record diff $sid cpu_us_per_io $l ${l%-*}-plain
	done
	for l in libnbd-tls libnbd-psk builtin-tls; do
		record ratio $sid iops $l ${l%-*}-plain
	done
	record ratio $sid clat_mean_us libnbd-tls libnbd-plain
	record ratio $sid clat_mean_us builtin-tls builtin-plain
	record ratio $sid server_cpu_us_per_io libnbd-tls libnbd-plain
	record diff $sid server_cpu_us_per_io libnbd-tls libnbd-plain
	record ratio $sid cpu_us_per_io libnbd-tls builtin-tls
	record probe $sid probe "pipe-probe over the $(net_text $net) to the plain server, $((probe_bs / 1024)) KiB at QD$probe_qd${probe_mix:+ ($probe_mix% reads)}, no fio; TLS has no lean probe (pipe-probe speaks no TLS)"
	record ratio $sid iops libnbd-plain probe
	need_null_on $net
	plain=$net_uri
	plain_pid=$(net_pid $net)
	where=$(net_where $net)
	need_null_tls_on $net certs
	certs=$net_uri
	certs_pid=$net_tls_pid
	need_null_tls_on $net psk
	psk=$net_uri
	psk_pid=$net_tls_pid
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'bench_server_pid=$plain_pid libnbd_fio $sid libnbd-plain "$r" "$plain" "${job[@]}"' \
			'bench_server_pid=$certs_pid libnbd_fio $sid libnbd-tls "$r" "$certs" "${job[@]}" --tls_certificates="$tls_dir"' \
			'bench_server_pid=$psk_pid libnbd_fio $sid libnbd-psk "$r" "$psk" "${job[@]}" --tls_psk_file="$tls_psk" --tls_username=torus' \
			'bench_server_pid=$plain_pid run_fio $sid builtin-plain "$r" "$plain" "${job[@]}"' \
			'bench_server_pid=$certs_pid HOME=$tls_home run_fio $sid builtin-tls "$r" "$certs" "${job[@]}"' \
			'bench_server_pid=$plain_pid probe_run $sid probe "$r" "$where" "$probe_qd" "$probe_bs"'
	done
	probe_mix=
}

section_transports_plain() {
	transports_plain transports_plain unix 4k
	transports_plain transports_plain_tcp tcp 4k
}
section_transports_tls() {
	transports_tls transports_tls unix 4k
	transports_tls transports_tls_tcp tcp 4k
}
section_transports_plain_64k() {
	transports_plain transports_plain_64k unix 64k
	transports_plain transports_plain_64k_tcp tcp 64k
}
section_transports_tls_64k() {
	transports_tls transports_tls_64k unix 64k
	transports_tls transports_tls_64k_tcp tcp 64k
}

# --- TCMU sections --------------------------------------------------------------

# shellcheck disable=SC2034 # used in in_turn's commands
section_tcmu_vs_nbd_qd32() {
	local sid=tcmu_vs_nbd_qd32 r
	local rr=(--rw=randread --bs=4k --iodepth=32 --size="$tcmu_size")
	local tcmu_uri="tcmu+unix:///?socket=$T/tcmu_mem.sock"
	local nbd_uri="nbd+unix:///?socket=$T/nbd_mem.sock"
	record section $sid "4 KiB randread QD32 through the engine, memory stores of $tcmu_size: TCMU ring (tcmu-shim) vs NBD over a Unix socket (nbd-shim standard)"
	record target $sid iops tcmu nbd ">=" 1.5
	record ratio $sid cpu_us_per_io tcmu nbd
	record ratio $sid server_cpu_us_per_io tcmu nbd
	record ratio $sid clat_mean_us tcmu nbd
	record probe $sid ring-client "ring-client --bench over the ring to tcmu-shim memory, 4 KiB random reads at QD32, no fio"
	record probe $sid nbd-probe "pipe-probe over the Unix socket to nbd-shim memory, 4 KiB reads at QD32, no fio"
	record ratio $sid iops tcmu ring-client
	record ratio $sid iops nbd nbd-probe
	[[ -S $T/tcmu_mem.sock ]] ||
		tcmu_start tcmu_mem --backend memory --size "$tcmu_size"
	[[ -S $T/nbd_mem.sock ]] || {
		shim_start nbd_mem --profile standard --backend memory \
			--size "$tcmu_size"
		nbd_mem_pid=${server_pids[-1]}
	}
	prefill "$tcmu_uri"
	prefill "$nbd_uri"
	# shellcheck disable=SC2154 # tcmu_pid_*: set by start_tcmu (printf -v)
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'bench_server_pid=$tcmu_pid_tcmu_mem engine_fio $sid tcmu "$r" "$tcmu_uri" "${rr[@]}"' \
			'bench_server_pid=$tcmu_pid_tcmu_mem ring_client_run $sid ring-client "$r" "$T/tcmu_mem.sock"' \
			'bench_server_pid=$nbd_mem_pid engine_fio $sid nbd "$r" "$nbd_uri" "${rr[@]}"' \
			'bench_server_pid=$nbd_mem_pid probe_run $sid nbd-probe "$r" "unix:$T/nbd_mem.sock" 32 4096'
	done
}

# shellcheck disable=SC2034 # used in in_turn's commands
section_tcmu_ceiling_qd32() {
	local sid=tcmu_ceiling_qd32 r
	local rr=(--rw=randread --bs=4k --iodepth=32 --size="$tcmu_size")
	record section $sid "4 KiB randread QD32, tcmu-shim --backend null ($tcmu_size): the engine vs ring-client --bench (a lean ring driver)"
	record ratio $sid iops engine ring-client
	record ratio $sid cpu_us_per_io engine ring-client
	record ratio $sid server_cpu_us_per_io engine ring-client
	record probe $sid ring-client "ring-client --bench over the ring, 4 KiB random reads at QD32, no fio"
	[[ -S $T/tcmu_null.sock ]] ||
		tcmu_start tcmu_null --backend null --size "$tcmu_size"
	# shellcheck disable=SC2154 # set by start_tcmu (printf -v)
	bench_server_pid=$tcmu_pid_tcmu_null
	for ((r = 1; r <= rounds; r++)); do
		in_turn $r 'engine_fio $sid engine "$r" "tcmu+unix:///?socket=$T/tcmu_null.sock" "${rr[@]}"' \
			'ring_client_run $sid ring-client "$r" "$T/tcmu_null.sock"'
	done
	bench_server_pid=
}

# --- main -------------------------------------------------------------------------

for s in "${SECTIONS[@]}"; do
	declare -F "section_$s" >/dev/null || die "unknown section '$s' (have: engine shims all $(declare -F | sed -n 's/^declare -f section_//p' | tr '\n' ' '))"
done
needs=(fio taskset python3 numfmt)
for s in "${SECTIONS[@]}"; do
	case $s in
	tcmu_* | timeline_cost_tcmu) ;;
	# every other section uses nbdkit null, and pipe-probe as its probe
	*) needs+=(nbdkit "$probe_bin") ;;
	esac
	case $s in
	read256k_qd64) needs+=(nbdcopy) ;;
	transports_tls*) needs+=(certtool psktool) ;;
	shim_* | ceiling_qd64 | timeline_cost) needs+=("$shim_bin") ;;
	tcmu_vs_nbd_qd32) needs+=("$shim_bin" "$probe_bin" "$tcmu_shim_bin" "$ring_client_bin") ;;
	tcmu_ceiling_qd32 | timeline_cost_tcmu) needs+=("$tcmu_shim_bin" "$ring_client_bin") ;;
	esac
done
for tool in "${needs[@]}"; do
	if [[ $tool == */* ]]; then
		[[ -x $tool ]] || die "$tool is missing: ninja -C $build"
	else
		command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/deps.sh"
	fi
done
size_bytes=$(numfmt --from=iec "$size") || die "--size: cannot parse '$size'"
[[ -f $engine ]] || die "no engine at $engine: build it with
  scripts/fio-source.sh && meson setup build -Dfio_src=\$PWD/.deps/fio && ninja -C build"

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p "$repo/results"
out=${out:-$repo/results/bench-$stamp.md}
bench_placements "$placements"
bench_setup

# The engine must load before anything is measured.
if ! fio --enghelp="$engine" >"$T/enghelp.log" 2>&1; then
	cat "$T/enghelp.log" >&2
	die "fio cannot load $engine (above)"
fi

# (sed -n 1p, not head: head's early exit would fail the pipeline)
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p)
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet 2>/dev/null || echo ' (dirty tree)')
versions="$(fio --version), $(nbdkit --version 2>/dev/null | sed -n 1p), $(nbdcopy --version 2>/dev/null | sed -n 1p)"
record header date "$(date -Iseconds)"
record header commit "$commit"
record header engine "$engine${engine_opts[*]:+ ${engine_opts[*]}} (built $(date -r "$engine" -Iseconds))"
if [[ " ${SECTIONS[*]}" == *" shim_"* || " ${SECTIONS[*]}" == *" tcmu_vs_nbd"* ]]; then
	record header nbd-shim "$shim_bin (built $(date -r "$shim_bin" -Iseconds))"
fi
if [[ " ${SECTIONS[*]}" == *" tcmu_"* ]]; then
	record header tcmu-shim "$tcmu_shim_bin (built $(date -r "$tcmu_shim_bin" -Iseconds)); stores $tcmu_size"
	record header "server CPU per I/O" "the server's utime + stime (/proc/PID/stat, every thread) over the run / I/Os"
fi
record header machine "$(nproc --all) CPUs, $cpu_model, kernel $(uname -r)"
record header versions "$versions"
record header runs "$rounds round(s) of ${runtime}s per client, alternating; server size $size; placements: ${bench_places[*]} (pinned: server CPU 0, client CPU 1; free: no pinning)"
record header "CPU per I/O" "(fio usr+sys % / 100 * runtime) / I/Os, fio process only"

# What the page of --report says of the run (scripts/perfreport.py).
record meta command "scripts/bench.sh${argv[*]:+ $(printf '%q ' "${argv[@]}" | sed 's/ $//')}"
rerun=(--rounds "$rounds" --runtime "$runtime" --size "$size")
[[ " ${SECTIONS[*]}" != *" tcmu_"* ]] || rerun+=(--tcmu-size "$tcmu_size")
for o in "${engine_opts[@]}"; do
	rerun+=(--engine-opt "$o")
done
record meta rerun "$(printf '%q ' "${rerun[@]}" | sed 's/ $//')"
record meta mode "$mode"
record meta started "$(date -u '+%Y-%m-%d %H:%M UTC')"
record meta commit "$commit"
record meta cpu "$cpu_model"
record meta cores "$(nproc --all)"
record meta kernel "$(uname -r)"
record meta versions "$versions"
record meta rounds "$rounds"
record meta runtime "$runtime"
record meta placements "${bench_places[*]}"
record meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"

# Other work on the machine skews the figures: say how busy it was.
record header "load average at start" "$(cut -d' ' -f1-3 /proc/loadavg)"
echo "$bench_name: $rounds round(s), ${runtime}s per run, placements: ${bench_places[*]}, sections: ${SECTIONS[*]}"
# Each section in every placement, its servers started afresh for each.
for s in "${SECTIONS[@]}"; do
	bench_section=$s
	for p in "${bench_places[@]}"; do
		bench_place "$p" "$s"
		null_uri='' null_tcp_uri='' null_sock='' std_shim_pid=''
		unset "${!tls_uri_@}" "${!tls_pid_@}"
		((${#bench_places[@]} == 1)) || echo "$s, $p:"
		"section_$s"
		bench_stop_servers
	done
done
bench_report
