#!/bin/bash
# Description: kernel-loop's timeline (scripts/timeline_kernel.py, the
# bpftrace program scripts/bpf/kernel-loop.bt): nbdkit memory -> nbdfuse ->
# losetup --direct-io=on /dev/loopN -> fio libaio direct=1, 4 KiB randread at
# depth 4, 1 s untraced and 2 s under trace(). Every phase must
# count fio's I/Os (within 10%), the phases' means must add up to fio's mean
# latency (within 15%), and so must the total's; the cost line is printed
# with the traced/untraced ratio of fio's mean latency.

: "${TORUS_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TORUS_SRC/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip "kernel-loop and bpftrace need root (losetup, a FUSE mount, BPF)"
require "$FIO" nbdkit nbdfuse losetup mountpoint umount bpftrace python3
[ -c /dev/fuse ] || skip "no /dev/fuse: this kernel has no FUSE (modprobe fuse)"
[ -c /dev/loop-control ] || skip "no /dev/loop-control: this kernel has no loop driver (modprobe loop)"
# bpftrace, tracefs and the tracepoints (it says which one is missing)
why=$(python3 "$TORUS_SRC/scripts/timeline_kernel.py" check kernel-loop) || skip "$why"

sock=$T/nbd.sock
mnt=$T/fuse
fuse_pid=
loopdev=

# loop_down: detach the loop device, unmount nbdfuse and reap it (from the
# EXIT trap: it never calls fail).
loop_down() {
	local i
	if [ -n "$loopdev" ]; then
		losetup -d "$loopdev" 2>/dev/null
		# the detach is deferred while the device is open; the FUSE file
		# stays busy until it is done
		for ((i = 0; i < 100; i++)); do
			[ -e "/sys/block/${loopdev#/dev/}/loop/backing_file" ] || break
			sleep 0.05
		done
		loopdev=
	fi
	if [ -n "$fuse_pid" ]; then
		for ((i = 0; i < 50; i++)); do
			mountpoint -q "$mnt" || break
			umount "$mnt" 2>/dev/null && break
			sleep 0.1
		done
		mountpoint -q "$mnt" && umount -l "$mnt" 2>/dev/null
		for ((i = 0; i < 100; i++)); do
			kill -0 "$fuse_pid" 2>/dev/null || break
			sleep 0.05
		done
		kill "$fuse_pid" 2>/dev/null
		wait "$fuse_pid" 2>/dev/null
		fuse_pid=
	fi
}
trap 'loop_down; cleanup' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

start_nbdkit "$sock" memory 256M
mkdir -p "$mnt"
nbdfuse "$mnt" "nbd+unix:///?socket=$sock" </dev/null >"$T/nbdfuse.log" 2>&1 &
fuse_pid=$!
for ((i = 0; i < 200; i++)); do
	mountpoint -q "$mnt" && [ -e "$mnt/nbd" ] && break
	kill -0 "$fuse_pid" 2>/dev/null || { cat "$T/nbdfuse.log" >&2; fail "nbdfuse exited before mounting"; }
	sleep 0.05
done
[ -e "$mnt/nbd" ] || fail "nbdfuse did not show $mnt/nbd within 10 s"
loopdev=$(losetup --find --show --direct-io=on "$mnt/nbd") ||
	fail "losetup --find --show --direct-io=on $mnt/nbd failed"
[ "$(losetup --noheadings -O DIO "$loopdev" | tr -d ' ')" = 1 ] ||
	fail "$loopdev fell back to buffered I/O (DIO=0): not kernel-loop's direct path"

python3 - "$TORUS_SRC/scripts" "$loopdev" "$T" "$FIO" <<'EOF' || fail "kernel-loop's timeline (above)"
import json, os, subprocess, sys
sys.path.insert(0, sys.argv[1])
import timeline_kernel as tk

dev, tmp, fio = sys.argv[2:5]

def run_fio(name, seconds):
    out = os.path.join(tmp, name + ".json")
    subprocess.run([fio, "--name=r", f"--filename={dev}", "--ioengine=libaio", "--direct=1",
                    "--rw=randread", "--bs=4k", "--iodepth=4", "--size=64m", f"--runtime={seconds}",
                    "--time_based", "--output-format=json", f"--output={out}"], check=True)
    with open(out) as f:
        job = json.load(f)["jobs"][0]["read"]
    return job["total_ios"], job["lat_ns"]["mean"] / 1000


_, untraced_us = run_fio("untraced", 1)
with tk.trace("kernel-loop", os.path.join(tmp, "trace"), {"device": dev}) as t:
    ios, lat_us = run_fio("traced", 2)
t.set_fio_latency(untraced_us, lat_us)
phases = t.phases()
for p in phases:
    print(f"{p['name']:>20} [{p['where']}] {p['count']} I/Os, mean {p['mean_us']} µs, "
          f"p50 {p['p50_us']}, p99 {p['p99_us']}, p99.9 {p['p99.9_us']}")
print(t.cost_note())
print("notes:", t.notes())
bad = []
names = [p["name"] for p in phases]
want = ["submit", "loop to FUSE", "nbdfuse and server", "FUSE to loop", "reap", "total"]
if [n for n in names if n != "block queue"] != want:
    bad.append(f"phases {names}, expected {want} (block queue only where requests are inserted)")
for p in phases:
    if abs(p["count"] - ios) > 0.10 * ios:
        bad.append(f"{p['name']}: {p['count']} I/Os, fio did {ios} (more than 10% apart)")
parts = sum(p["mean_us"] for p in phases if p["where"] != "total")
for what, v in (("the phases' means add up to", parts),
                ("the total's mean is", phases[-1]["mean_us"] if phases else 0)):
    if abs(v - lat_us) > 0.15 * lat_us:
        bad.append(f"{what} {v:.1f} µs, fio's mean latency {lat_us:.1f} µs (more than 15% apart)")
print(f"fio: {ios} I/Os, mean latency {lat_us:.1f} µs traced, {untraced_us:.1f} µs untraced; "
      f"phases add up to {parts:.1f} µs")
if bad:
    sys.exit("\n".join(bad))
EOF
echo "PASS"
