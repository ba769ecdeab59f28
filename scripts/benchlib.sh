# shellcheck shell=bash disable=SC2154,SC2034
# (SC2154, SC2034: the variables named below are set or read by bench.sh.)
# The machinery of scripts/bench.sh, sourced by it: the placements (pinned
# or free), the scratch directory and its servers, waiting for a quiet
# machine, one measured fio run, the records, the report and the page
# (scripts/harness.py waits for the servers and reads fio's JSON,
# scripts/benchlib.py builds the tables, scripts/perfreport.py the page).
# What is measured (the section_* functions) lives in bench.sh.
#
# The sourcing script sets repo and bench_name (for messages) before it
# sources this file, and runtime, quiet_wait, keep, out (the report;
# empty: print only), report (the page of --report; empty: none) and
# speed_probe (0: no CPU probe around the runs) before bench_setup; then
# bench_placements, and bench_place before each section.

bench_lib=$repo/scripts/benchlib.py
bench_harness=$repo/scripts/harness.py
runs_total=0
runs_busy=0
server_pids=()
bench_sid_suffix=
bench_section=
speed_probe=1

die() {
	echo "${bench_name:-bench}: $*" >&2
	exit 1
}

# client_died WHAT: a client failed: the last lines of each server's log
# in $T (why a server closed a connection is there), then die.
client_died() {
	local log
	for log in "$T"/*.log; do
		# fio's, the prefill's, nbdcopy's and --enghelp's are clients'
		case ${log##*/} in
		fio.log | prefill.log | nbdcopy.log | enghelp.log) continue ;;
		esac
		[[ -s $log ]] || continue
		echo "--- the last lines of $(basename "$log"):" >&2
		tail -n 5 "$log" >&2
	done
	die "$@"
}

# bench_setup: the scratch directory $T_base with its records file, and
# the cleanup of servers started into server_pids. Pinning is set per
# placement by bench_place.
bench_setup() {
	T_base=$(mktemp -d "/tmp/$bench_name.XXXXXX")
	T=$T_base
	records=$T_base/records.tsv
	mkdir -p "$T/json"
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

# bench_placements WANTED: the placements of WANTED (a comma-separated list
# of pinned and free) this machine can run, in bench_places: pinned needs
# two CPUs (one for the servers, one for the clients).
bench_placements() {
	local p
	bench_places=()
	IFS=, read -r -a wanted_places <<<"$1"
	for p in "${wanted_places[@]}"; do
		case $p in
		pinned)
			if [[ $(nproc --all) -ge 2 ]]; then
				bench_places+=(pinned)
			else
				echo "$bench_name: warning: one CPU only, no pinned placement" >&2
			fi ;;
		free) bench_places+=(free) ;;
		*) die "--placements: unknown placement '$p': use pinned, free or pinned,free" ;;
		esac
	done
	if ((${#bench_places[@]} == 0)); then
		bench_places=(free)
	fi
}

# bench_place PLACE NAME: run what follows pinned (servers on CPU 0,
# clients on CPU 1) or free (no pinning, as users run them), in a scratch
# directory of its own ($T_base/NAME.PLACE, so that its servers start
# afresh). Records of the free placement name their section SID@free.
bench_place() {
	bench_placement=$1
	case $1 in
	pinned)
		pin_server=(taskset -c 0)
		pin_client=(taskset -c 1)
		pinning="server CPU 0, client CPU 1"
		bench_sid_suffix= ;;
	free)
		pin_server=()
		pin_client=()
		pinning="none: the scheduler places servers and clients"
		bench_sid_suffix=@free ;;
	esac
	T=$T_base/$2.$1
	mkdir -p "$T/json"
}

# bench_stop_servers: stop every server started so far (between
# placements: the next one starts its own).
bench_stop_servers() {
	local pid
	for pid in "${server_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${server_pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	server_pids=()
}

bench_cleanup() {
	bench_stop_servers
	if [[ $keep -eq 1 && -n $out ]]; then
		mkdir -p "${out%.md}"
		cp "$T_base"/*/json/* "${out%.md}/" 2>/dev/null || true
	fi
	rm -rf "$T_base"
}

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

# record KIND FIELDS...: append one record (see benchlib.py). A section's
# records in the free placement name it SID@free; a section record also
# names the bench.sh section it comes from ($bench_section), for the
# command that re-runs it.
record() {
	local kind=$1 IFS=$'\t'
	shift
	case $kind in
	header | meta) ;;
	*) set -- "$1$bench_sid_suffix" "${@:2}" ;;
	esac
	[[ $kind != section ]] || set -- "$@" "$bench_section"
	echo "$kind$IFS$*" >>"$records"
}

# free_port: print a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
	python3 "$bench_harness" free-port
}

# bench_wait KIND TARGET LOG WHAT [PID]: wait up to 10 s for a server started
# in the background (process PID, when given) to create the socket TARGET
# (KIND socket) or listen on the port TARGET (KIND port); on failure show
# LOG (if any) and die.
bench_wait() {
	local kind=$1 target=$2 log=$3 what=$4 pid=${5:-} msg rc=0
	msg=$(python3 "$bench_harness" "wait-$kind" "$target" 10 --what "$what" \
		${pid:+--pid "$pid"} 2>&1) || rc=$?
	((rc != 0)) || return 0
	# 3: the server had gone; its exit status is ours to collect
	if ((rc == 3)); then
		rc=0
		wait "$pid" || rc=$?
		msg+=" (exit status $rc)"
	fi
	[[ -n $log && -f $log ]] && cat "$log" >&2
	die "$msg"
}

# wait_socket SOCK LOG WHAT [PID], wait_port PORT LOG WHAT [PID]: bench_wait.
wait_socket() {
	bench_wait socket "$@"
}
wait_port() {
	bench_wait port "$@"
}

# start_nbdkit SOCK ARGS...: nbdkit ARGS on a private socket, server CPU.
start_nbdkit() {
	local sock=$1
	shift
	"${pin_server[@]}" nbdkit --exit-with-parent -f -U "$sock" "$@" \
		2>"$sock.log" &
	server_pids+=($!)
	wait_socket "$sock" "$sock.log" "nbdkit $*" $!
}

# The server's CPU time around a run: when bench_server_pid is set (by a
# section, before bench_fio or its own client), bench_server_begin notes
# the process's utime + stime (/proc/PID/stat, every thread, live or
# gone), and bench_server_end SID LABEL ROUND IOS records
# server_cpu_us_per_io (its CPU over the run per I/O) and server_cpu_pct
# (over --runtime), and sets bench_server_note for the progress line.
# bench_server_ticks (set for one call) gives bench_server_end the ticks of
# a run measured before the last bench_server_begin (probe_run's).
bench_server_pid=
bench_server_ticks0=
bench_server_note=
clk_tck=$(getconf CLK_TCK)

# proc_cpu_ticks PID: utime + stime of PID in clock ticks (harness.py's).
proc_cpu_ticks() {
	python3 "$bench_harness" cpu-ticks "$1" || die "server $1 has gone"
}

bench_server_begin() {
	bench_server_note=
	[[ -n $bench_server_pid ]] || return 0
	bench_server_ticks0=$(proc_cpu_ticks "$bench_server_pid")
}

bench_server_end() {
	local sid=$1 label=$2 round=$3 ios=$4 ticks us pct
	[[ -n $bench_server_pid ]] || return 0
	# bench_server_ticks, when set: the ticks of a run measured earlier.
	ticks=${bench_server_ticks:-$(($(proc_cpu_ticks "$bench_server_pid") - bench_server_ticks0))}
	us=$(awk -v t="$ticks" -v hz="$clk_tck" -v n="$ios" \
		'BEGIN { printf "%.6f", (n > 0 ? t / hz * 1e6 / n : 0) }')
	pct=$(awk -v t="$ticks" -v hz="$clk_tck" -v s="$runtime" \
		'BEGIN { printf "%.2f", t / hz / s * 100 }')
	record value "$sid" "$label" "$round" server_cpu_us_per_io "$us"
	record value "$sid" "$label" "$round" server_cpu_pct "$pct"
	bench_server_note=$(printf ', server %.3f us CPU/IO (%.0f%%)' "$us" "$pct")
}

# in_turn ROUND CMD...: runs the commands (each a string, evaluated in the
# caller's variables) one after the other, the order rotated by one each
# round: round 1 A B C, round 2 B C A, round 3 C A B. Over as many rounds
# as there are commands each takes each place once. In a fixed order the
# later runs of a round came out slower on these VMs (docs/performance.md).
in_turn() {
	local _it_round=$1 _it_n _it_i
	shift
	_it_n=$#
	local _it_cmds=("$@")
	for ((_it_i = 0; _it_i < _it_n; _it_i++)); do
		eval "${_it_cmds[(_it_i + _it_round - 1) % _it_n]}"
	done
}

# cpu_probe: milliseconds a fixed loop takes on the client CPU. These VMs'
# CPUs switch between two speeds (about 1.8x apart) every few seconds
# whatever runs on them; the probe before and after each run (their mean:
# speed_probe_ms, in the report's rounds) says which speed the machine was
# at. Scaling the figures by it did not make
# them steadier (the speed also changes within a run), so it is context.
cpu_probe() {
	((speed_probe)) || return 0
	"${pin_client[@]}" python3 -c 'import time
t = time.perf_counter()
x = 0
for i in range(1500000):
    x += i
print(f"{(time.perf_counter() - t) * 1e3:.1f}")'
}

# bench_fio SID LABEL ROUND FIO-ARGS...: one time-based fio run on the
# client CPU (FIO-ARGS name the engine, the target and the workload), its
# metrics recorded as LABEL's in round ROUND of section SID.
bench_fio() {
	local sid=$1 label=$2 round=$3
	shift 3
	fio_timed "$sid" "$label" "$round" --group_reporting --name="$sid" "$@"
	fio_record "$sid" "$label" "$round" server
}

# bench_fio_jobs SID ROUND ALL FIO-ARGS...: one time-based fio run whose
# jobs (--name=LABEL in FIO-ARGS, global options first) run side by side on
# the client CPU: each job's metrics recorded as its LABEL's in round ROUND,
# and the run's as ALL's (every job together, with the server's CPU). Jobs
# in one run share every change of the VM's speed, which runs taken in turn
# do not (a section comparing two variants by a few percent).
bench_fio_jobs() {
	local sid=$1 round=$2 all=$3 arg label labels=()
	shift 3
	for arg in "$@"; do
		[[ $arg != --name=* ]] || labels+=("${arg#--name=}")
	done
	fio_timed "$sid" "$all" "$round" "$@"
	for label in "${labels[@]}"; do
		fio_record "$sid" "$label" "$round" "" --job "$label"
	done
	fio_record "$sid" "$all" "$round" server --all-jobs
}

# fio_timed SID TAG ROUND FIO-ARGS...: run fio for bench_fio and
# bench_fio_jobs, FIO-ARGS after the time options every run shares (so a
# --name in them starts the jobs); its JSON in $fio_json, the CPU-speed
# probe before and after it in $fio_speed. Dies with fio's messages when
# it fails.
fio_timed() {
	local sid=$1 tag=$2 round=$3 attempt rc p0 p1
	shift 3
	fio_json=$T/json/$sid$bench_sid_suffix-$tag-$round.json
	for attempt in 1 2; do
		wait_quiet
		p0=$(cpu_probe)
		bench_server_begin
		rc=0
		"${pin_client[@]}" fio --output-format=json --output="$fio_json" \
			--time_based --runtime="$runtime" \
			--norandommap --randrepeat=0 "$@" \
			>"$T/fio.log" 2>&1 || rc=$?
		# Killed by a signal from outside (a shared machine): try once more.
		((rc > 128 && attempt == 1)) || break
		echo "  ($sid $tag round $round: fio killed by signal $((rc - 128)), retrying)"
	done
	if ((rc != 0)); then
		# fio's own messages; the JSON (if any) is of no help here.
		cat "$T/fio.log" >&2
		[[ -f $fio_json ]] && python3 "$bench_harness" fio-messages "$fio_json" >&2
		client_died "fio failed: $sid, $tag, round $round (output above)"
	fi
	p1=$(cpu_probe)
	fio_speed=
	((!speed_probe)) ||
		fio_speed=$(awk -v a="$p0" -v b="$p1" 'BEGIN { printf "%.1f", (a + b) / 2 }')
}

# fio_record SID LABEL ROUND SERVER [FIO-SUMMARY-ARGS...]: record what
# fio_timed measured as LABEL's (with SERVER set, the server's CPU too).
fio_record() {
	local sid=$1 label=$2 round=$3 server=$4 metrics metric value
	shift 4
	metrics=$(python3 "$bench_harness" fio-summary "$fio_json" "$@") ||
		die "cannot read fio's JSON for $sid, $label, round $round"
	[[ -z $fio_speed ]] ||
		record value "$sid" "$label" "$round" speed_probe_ms "$fio_speed"
	while read -r metric value; do
		record value "$sid" "$label" "$round" "$metric" "$value"
	done <<<"$metrics"
	# bench_server_begin (in fio_timed) emptied bench_server_note
	[[ -z $server ]] || bench_server_end "$sid" "$label" "$round" \
		"$(awk '$1 == "ios" { printf "%d", $2 }' <<<"$metrics")"
	bench_say "$sid" "$label" "$round" \
		"$(awk '$1=="iops"{printf "%.1fk IOPS ", $2/1000} $1=="cpu_us_per_io"{printf "%.3f us CPU/IO ", $2} $1=="clat_mean_us"{printf "clat %.2f us", $2}' <<<"$metrics")$bench_server_note"
}

# bench_say SID LABEL ROUND TEXT: the progress line of one run.
bench_say() {
	printf '  %-17s %-15s round %d: %s\n' "$1" "$2" "$3" "$4"
}

# bench_report: the closing header records, then the report (printed, and
# written to $out when set, the records beside it as .tsv), and the page of
# --report ($report, when set: scripts/perfreport.py, which renders it
# again from those records).
bench_report() {
	record header "load average at end" "$(cut -d' ' -f1-3 /proc/loadavg)"
	record meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
	record meta finished "$(date -u '+%Y-%m-%d %H:%M UTC')"
	((quiet_wait == 0)) ||
		record header "busy machine" "$runs_busy of $runs_total runs started with a CPU over 15% busy after waiting ${quiet_wait}s"
	record meta busy "$runs_busy $runs_total $quiet_wait"
	echo
	if [[ -n $out ]]; then
		python3 "$bench_lib" report "$records" --md "$out"
		cp "$records" "${out%.md}.tsv"
		echo
		echo "$bench_name: report written to $out, its records to ${out%.md}.tsv"
	else
		python3 "$bench_lib" report "$records"
	fi
	if [[ -n ${report:-} ]]; then
		python3 "$repo/scripts/perfreport.py" "$records" "$report" ||
			die "could not write the page $report (above)"
		echo "$bench_name: page written to $report"
	fi
}
