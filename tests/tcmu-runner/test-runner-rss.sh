#!/bin/bash
# The runner store holds only what is in flight: tcmu-shim's peak resident
# memory (VmHWM) over a tcmu-runner plugin (handler_depth, built here; it
# keeps the device in memory as the memory store does) under 64 KiB randrw
# at iodepth 32 through the engine, within 16 MiB of the same shim and job
# over the memory store. A store that prepares a command slot for each of
# the ring's 65,535 commands at open holds about 83 MiB more.
#
#   test-runner-rss.sh PLUGIN_DIR
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"
arg_path dir 1 "the directory handler_depth.so was built in"

require "$FIO"
[ -x "$TCMU_SHIM" ] || fail "$TCMU_SHIM is not built (meson builds it for this test)"
[ -f "$ENGINE" ] || fail "$ENGINE is not built (meson builds it for this test)"
[ -f "$dir/handler_depth.so" ] || fail "no $dir/handler_depth.so"

# glibc's calloc() writes every byte when MALLOC_PERTURB_ is set (meson
# sets it): memory never used would count as resident.
unset MALLOC_PERTURB_
# The most the runner store may hold above the memory store, in KiB.
slack_kib=$((16 * 1024))
job=(--rw=randrw --bs=64k --iodepth=32 --size=64M --io_size=128M --randrepeat=1)

# peak_kib NAME STORE...: sets hwm, the shim's VmHWM in KiB after the job
# over STORE.
peak_kib() {
	local name=$1 shim
	shift
	start_tcmu_shim "$T/$name.sock" --size 64M "$@"
	shim=${_bg_pids[-1]}
	expect_fio_ok --name="$name" --uri="tcmu+unix:///?socket=$T/$name.sock" "${job[@]}"
	hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$shim/status")
	kill "$shim"
	wait_gone "$shim" 10 "tcmu-shim ($name) did not stop on SIGTERM"
	forget_bg "$shim"
	[ -n "$hwm" ] || fail "no VmHWM in /proc/$shim/status"
}

peak_kib memory --store memory
mem=$hwm
peak_kib runner --plugin-dir "$dir" --store "runner:depth:@$T/stats"
run=$hwm
echo "tcmu-shim's peak RSS under 64 KiB randrw QD32: memory store $mem KiB, runner store (handler_depth) $run KiB"
[ $((run - mem)) -le $slack_kib ] ||
	fail "tcmu-shim with a runner store peaked at $run KiB, $(((run - mem) / 1024)) MiB above the memory store's $mem KiB (at most 16 MiB allowed): the runner store holds memory for more commands than are in flight (bridges/runner/runner_aio.c)"
echo "ok: the runner store holds $(((run - mem) / 1024)) MiB more than the memory store"
