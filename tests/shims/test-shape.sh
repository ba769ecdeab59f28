#!/bin/bash
# Latency and bandwidth shaping: a serial profile (torus) pays the latency
# per request, a pipelined one (standard) overlaps it; the bandwidth cap
# holds across the job; at the storage, torus pays for its block traffic. Upper bounds are exact; lower bounds are loose, so
# that a busy machine does not fail the test.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" python3
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

# measure NAME URI ARGS...: prints "IOPS BYTES_PER_S" of a 2 s read job
measure() {
	local name=$1 uri=$2
	shift 2
	expect_fio_ok --name="$name" --uri="$uri" --rw=randread --size=16M \
		--time_based --runtime=2 --output-format=json "$@"
	python3 -c "
import json
text = open('$T/fio.out').read()
j = json.JSONDecoder().raw_decode(text[text.index('{'):])[0]
r = j['jobs'][0]['read']
print(int(r['iops']), int(r['bw_bytes']))"
}

# in_range NAME VALUE LOW HIGH
in_range() {
	echo "$1: $2 (expected $3 to $4)"
	[ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || fail "$1 out of range"
}

start_bg "$NBD_SHIM" --profile coreos --size 64M --listen "unix:$T/t.sock" \
	--latency-us 2000
start_bg "$NBD_SHIM" --profile standard --size 64M --listen "unix:$T/s.sock" \
	--latency-us 2000
start_bg "$NBD_SHIM" --profile standard --size 64M --listen "unix:$T/b.sock" \
	--bandwidth 20M
wait_socket "$T/t.sock"
wait_socket "$T/s.sock"
wait_socket "$T/b.sock"

# torus, one request at a time: at most 1 / 2 ms = 500 IOPS at any depth
read -r iops bw < <(measure torus-latency "nbd+unix:///torus?socket=$T/t.sock" \
	--bs=4k --iodepth=8)
in_range "torus 2 ms latency, QD8, IOPS" "$iops" 150 505

# standard, pipelined: QD8 overlaps the latency, up to 8 / 2 ms = 4000 IOPS
read -r iops bw < <(measure std-latency "nbd+unix:///?socket=$T/s.sock" \
	--bs=4k --iodepth=8)
in_range "standard 2 ms latency, QD8, IOPS" "$iops" 2000 4040

# 20 MB/s cap, 64 KiB reads at QD8
read -r iops bw < <(measure std-bandwidth "nbd+unix:///?socket=$T/b.sock" \
	--bs=64k --iodepth=8)
in_range "standard 20M bandwidth, bytes/s" "$bw" 10000000 21000000

# shaping at the storage: torus moves whole 512 KiB blocks, each write to
# both replicas. A 4 KiB write is a block read + 2 block writes = 1.5 MiB
# over a 1 Gbit/s link: at most 125e6 / 1572864 = 79 writes per second.
start_bg "$NBD_SHIM" --profile coreos --size 64M --listen "unix:$T/ts.sock" \
	--replicas 2 --bandwidth 1gbit --shape-at storage
wait_socket "$T/ts.sock"
expect_fio_ok --name=torus-storage --uri="nbd+unix:///torus?socket=$T/ts.sock" \
	--rw=randwrite --bs=4k --size=16M --iodepth=8 --time_based --runtime=2 \
	--output-format=json
iops=$(python3 -c "
import json
text = open('$T/fio.out').read()
j = json.JSONDecoder().raw_decode(text[text.index('{'):])[0]
print(int(j['jobs'][0]['write']['iops']))")
in_range "torus 1 Gbit/s at the storage, 4 KiB write IOPS" "$iops" 20 80

# replies sent as they fall due keep their data and order: verify through it
expect_fio_ok --name=shaped-verify --uri="nbd+unix:///?socket=$T/s.sock" \
	--rw=randwrite --bs=4k --size=2M --iodepth=16 --verify=crc32c
echo "standard with 2 ms latency: verify ok"
