#!/bin/bash
# Description: the TCMU transport's embedded default (transport=tcmu starts
# tcmu-shim sized to the job, shares it, stops it), its refusals at start,
# verify through the file (and O_DIRECT) store and a run on the null store,
# a handler that dies or stalls mid-job (EIO or ETIMEDOUT with a message,
# within a time bound), and a CHECK CONDITION reported with its sense.
# $1: the fail-sync library (every fsync fails with EIO).
. "$TORUS_SRC/tests/lib.sh"
require fio
arg_path fail_sync 1 "the fail-sync library"

# ---- a CHECK CONDITION: the sense becomes an errno and a message
truncate -s 16M "$T/disk.img"
# Only tcmu-shim gets the library; in a sanitized build the ASan runtime
# must come first in its preload list.
start_bg env LD_PRELOAD="${TORUS_ASAN_RUNTIME:+$TORUS_ASAN_RUNTIME:}$fail_sync" \
	"$TCMU_SHIM" --socket "$T/fs.sock" --store "file:$T/disk.img"
_servers_wait socket "$T/fs.sock" "${_bg_pids[-1]}" "tcmu-shim with fail-sync"
expect_fio_error "flush of 0 bytes at offset 0: MEDIUM ERROR" \
	--name=sync --uri="tcmu+unix:///?socket=$T/fs.sock" --size=1m --rw=write --bs=4k --fsync=4
grep -q "err= *5" "$T/fio.out" || fail "not EIO: $(cat "$T/fio.out")"

# ---- the embedded default
expect_fio_ok --name=e --transport=tcmu --size=48m --rw=randrw --bs=4k --iodepth=16 --verify=crc32c
grep -q "torus: no uri given: started the embedded default handler host 'tcmu-shim --store memory --size 50331648'" "$T/fio.out" ||
	fail "no message about the embedded handler host: $(cat "$T/fio.out")"
sock=$(sed -n 's/.* on \(\/tmp\/torus-embedded-[^ ]*\) (pid .*/\1/p' "$T/fio.out")
pid=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' "$T/fio.out")
[ -n "$pid" ] || fail "no pid in the message"
kill -0 "$pid" 2>/dev/null && fail "embedded tcmu-shim (pid $pid) still runs after fio exited"
[ -e "$sock" ] && fail "socket $sock left behind"

# A write job, then a verify-only job of the same run, share it.
cat >"$T/two.fio" <<JOB
[global]
transport=tcmu
size=16m
bs=64k
iodepth=8
verify=crc32c
[write]
rw=randwrite
do_verify=0
verify_state_save=0
[check]
stonewall
rw=randread
verify_only=1
JOB
expect_fio_ok "$T/two.fio"
expect_fio_ok --name=et --transport=tcmu --size=16m --rw=randwrite --bs=4k --iodepth=8 --verify=crc32c --thread=1

# No handler host beside the engine nor in $PATH.
mkdir -p "$T/alone" "$T/bin"
cp "$ENGINE" "$T/alone/libtorus.so"
ln -s "$(command -v "$FIO")" "$T/bin/fio"
if PATH=$T/bin fio --ioengine="external:$T/alone/libtorus.so" --name=nok --transport=tcmu --size=1m --rw=read >"$T/fio.out" 2>&1; then
	fail "fio succeeded with no handler host to start"
fi
grep -qF "no uri given, and the TCMU handler host tcmu-shim (the embedded default target of transport=tcmu) was found neither beside libtorus.so in the build tree (../shims/tcmu/tcmu-shim) nor in \$PATH: build it with scripts/build.sh, or point the engine at a running one with uri=tcmu+unix:///?socket=PATH" "$T/fio.out" ||
	fail "no message naming the handler host: $(cat "$T/fio.out")"
# The names it offers are the engine's list (transports.c), as --enghelp gives it.
names=$("$FIO" --enghelp="$ENGINE" 2>&1 | sed -n 's/^transport *: Which transport: one of \([^;]*\);.*/\1/p')
[ -n "$names" ] || fail "--enghelp names no transports: $("$FIO" --enghelp="$ENGINE" 2>&1)"
expect_fio_error "unknown transport=iscsi: use one of $names" --name=tr --transport=iscsi --size=1m --rw=read

# ---- refused at start, before any I/O
expect_fio_error "tcmu+unix:///?socket=$T/none.sock: cannot connect to the handler host: No such file or directory (is tcmu-shim --socket running there?)" \
	--name=nosock --uri="tcmu+unix:///?socket=$T/none.sock" --size=1m --rw=read
expect_fio_error "uri=tcmu://host/: the TCMU transport takes a handler host's Unix socket: tcmu+unix:///?socket=/path/to/socket" \
	--name=tcp --uri="tcmu://host/" --size=1m --rw=read
expect_fio_error "uri=tcmu+unix:///: no socket= parameter: tcmu+unix:///?socket=/path/to/socket" \
	--name=nosock2 --uri="tcmu+unix:///" --size=1m --rw=read

start_tcmu_shim "$T/s.sock" --store memory --size 16M
u="tcmu+unix:///?socket=$T/s.sock"
expect_fio_error "the job needs 33554432 bytes (size=33554432 + offset=0) but the export has 16777216" \
	--name=big --uri="$u" --size=32m --rw=read
expect_fio_error "ring_size=65540 is out of range: use a multiple of 8 bytes from 64k to 256M (the kernel's default is 8M)" \
	--name=ring --uri="$u" --size=1m --rw=read --ring_size=65540
expect_fio_error "max_transfer=1000 is out of range: use a multiple of 512 bytes up to 1G, or 0 for the kernel's default (128 of the device's logical blocks)" \
	--name=mt --uri="$u" --size=1m --rw=read --max_transfer=1000
expect_fio_error "data_size=65536 is out of range: use a multiple of 4k, at least max_transfer=131072, at most 64G (the kernel's default is 1G)" \
	--name=ds --uri="$u" --size=1m --rw=read --data_size=64k --max_transfer=128k
expect_fio_error "write block size 256 is not a multiple of the server's minimum block size 512; use a multiple of 512" \
	--name=bs --uri="$u" --size=1m --rw=write --bs=256

# A 4096-byte-block device: 512-byte I/O is refused, 4k works.
start_tcmu_shim "$T/s4k.sock" --store memory --size 16M --block-size 4096
expect_fio_error "read block size 512 is not a multiple of the server's minimum block size 4096" \
	--name=bs4k --uri="tcmu+unix:///?socket=$T/s4k.sock" --size=1m --rw=read --bs=512
expect_fio_ok --name=ok4k --uri="tcmu+unix:///?socket=$T/s4k.sock" --size=8m --rw=randwrite --bs=4k --iodepth=8 --verify=crc32c
# max_transfer's default is 128 logical blocks: 512k here, 64k on 512-byte blocks.
expect_fio_error "data_size=262144 is smaller than one command of max_transfer=524288 (0: 128 of the device's 4096-byte blocks); raise data_size or lower max_transfer" \
	--name=ds4k --uri="tcmu+unix:///?socket=$T/s4k.sock" --size=1m --rw=read --data_size=256k
expect_fio_ok --name=ds512 --uri="$u" --size=1m --rw=read --bs=64k --data_size=64k

# ---- trims, as UNMAP and as WRITE SAME(16) with the UNMAP bit: fio's data
# at 4 MiB (4 MiB for each trim_mode), trimmed, then read back as zeroes
# through the transport. The memory store promises them: LBPRZ set in READ
# CAPACITY(16) and the logical block provisioning VPD page
# (shims/tcmu/store.c, scsi_pages.c). The file store does not (a file system
# may keep trimmed data), but it punches a hole for UNMAP
# (storage/store_file.c), and for WRITE SAME, LBPRZ clear, writes the zero
# block the command carries (FALLOC_FL_ZERO_RANGE): its file must hold
# zeroes there too, and a hole where UNMAP went.
# trims NAME SOCKET [IMG]
trims() {
	local name=$1 u="tcmu+unix:///?socket=$2" img=${3:-} got
	expect_fio_ok --name="$name-fill" --uri="$u" --offset=4m --size=8m --bs=64k \
		--iodepth=8 --rw=write --verify=crc32c
	if [ -n "$img" ]; then
		[ "$(allocated "$img" 4m 8m)" = 8388608 ] ||
			fail "$name: the 8 MiB fio wrote are not all allocated in $img"
	fi
	cat >"$T/trims.fio" <<JOB
[global]
ioengine=external:$ENGINE
uri=$u
bs=64k
iodepth=8
size=4m
[$name-unmap]
rw=trim
offset=4m
trim_mode=unmap
[$name-write_same]
rw=trim
offset=8m
trim_mode=write_same
[$name-zeroes]
stonewall
rw=read
offset=4m
size=8m
verify=pattern
verify_pattern=0
JOB
	if ! run_fio "$T/trims.fio" || grep -q 'err=[ ]*[1-9]' "$T/fio.out"; then
		cat "$T/fio.out" >&2
		grep -q "verify failed at file $name-zeroes" "$T/fio.out" &&
			fail "$name: the trimmed 8 MiB do not read back as zeroes through the transport"
		fail "$name: fio failed: fio $T/trims.fio"
	fi
	[ -n "$img" ] || return 0
	cmp -i 4194304:0 -n 8388608 "$img" /dev/zero ||
		fail "$name: the trimmed 8 MiB at 4 MiB of $img are not zeroes"
	got=$(allocated "$img" 4m 4m)
	[ "$got" = 0 ] || fail "$name: $got bytes of the 4 MiB unmapped are still allocated in $img"
}
# the memory store here; the file store after its own section below
trims memory "$T/s.sock"

# ---- every storage-library store behind the handler host
require python3
# io_bytes JSON: the bytes fio read and wrote, from its JSON report
io_bytes() {
	python3 -c 'import json, sys
s = open(sys.argv[1]).read()
j = json.loads(s[s.index("{"):])["jobs"][0]
print(j["read"]["io_bytes"], j["write"]["io_bytes"])' "$1"
}
# A verify through the store reads from wherever the store put a block. So a
# file store's blocks are checked in the file itself: in_place NAME IMG
# JOB... replays the job just run (its JSON report in fio.out) with fio
# verify_only and psync on IMG. fio draws the same blocks again, and every
# block it wrote must hold its verify header there: the offset it was
# written at, and the crc32c of its data. fio counts a job's verify reads
# with its reads, and the replay counts its workload as the job did, without
# I/O, before it reads back each block written: the same counts mean it
# checked every block the job wrote.
in_place() {
	local name=$1 img=$2 wrote got
	shift 2
	wrote=$(io_bytes "$T/fio.out")
	if ! "$FIO" --name="$name" --ioengine=psync --filename="$img" "$@" \
		--verify_only=1 --verify_fatal=1 --output-format=json >"$T/replay.json" 2>&1; then
		cat "$T/replay.json" >&2
		fail "$name: the blocks written through the handler host are not where fio wrote them in $img (fio above)"
	fi
	got=$(io_bytes "$T/replay.json")
	[ "$got" = "$wrote" ] ||
		fail "$name: the replay on $img read and wrote $got bytes, the job $wrote: it did not check every block written"
}
file_job=(--size=32m --rw=randrw --bs=4k-64k --verify=crc32c --fsync=32)
direct_job=(--size=32m --rw=randwrite --bs=512-64k --verify=crc32c)
truncate -s 32M "$T/f.img" "$T/fd.img"
start_tcmu_shim "$T/f.sock" --store "file:$T/f.img"
expect_fio_ok --name=file --uri="tcmu+unix:///?socket=$T/f.sock" "${file_job[@]}" --iodepth=16 --output-format=json
in_place file "$T/f.img" "${file_job[@]}"
start_tcmu_shim "$T/fd.sock" --store "file:$T/fd.img,direct"
expect_fio_ok --name=direct --uri="tcmu+unix:///?socket=$T/fd.sock" "${direct_job[@]}" --iodepth=16 --output-format=json
in_place direct "$T/fd.img" "${direct_job[@]}"
start_tcmu_shim "$T/null.sock" --store null --size 1G
expect_fio_ok --name=null --uri="tcmu+unix:///?socket=$T/null.sock" --size=1g --rw=randrw --bs=4k --iodepth=32 --number_ios=20000

# (the memory store's trims ran above)
trims file "$T/f.sock" "$T/f.img"

# ---- a handler that dies mid-job: EIO and a message, promptly
start_tcmu_shim "$T/die.sock" --store memory --size 64M
die_pid=${_bg_pids[-1]}
(sleep 1; kill -9 "$die_pid") &
start=$(date +%s%N)
if run_fio --name=die --uri="tcmu+unix:///?socket=$T/die.sock" --size=64m --rw=randrw --bs=4k --iodepth=16 --time_based --runtime=20; then
	fail "fio succeeded although the handler host was killed"
fi
elapsed=$((($(date +%s%N) - start) / 1000000))
grep -qF "the handler host closed the connection; failing the ring's outstanding I/O" "$T/fio.out" ||
	fail "no message about the lost handler: $(cat "$T/fio.out")"
grep -q "err= *5" "$T/fio.out" || fail "not EIO: $(cat "$T/fio.out")"
[ "$elapsed" -lt 6000 ] || fail "fio took ${elapsed} ms to notice the handler died"

# ---- a handler that stalls: request_timeout fails the ring with ETIMEDOUT
start_tcmu_shim "$T/stall.sock" --store memory --size 64M
stall_pid=${_bg_pids[-1]}
(sleep 1; kill -STOP "$stall_pid") &
start=$(date +%s%N)
if run_fio --name=stall --uri="tcmu+unix:///?socket=$T/stall.sock" --size=64m --rw=randread --bs=4k --iodepth=16 --time_based --runtime=30 --request_timeout=2; then
	fail "fio succeeded although the handler host stalled"
fi
elapsed=$((($(date +%s%N) - start) / 1000000))
kill -CONT "$stall_pid"
grep -qF "a command had no completion from the handler within request_timeout=2 s; failing the ring's outstanding I/O" "$T/fio.out" ||
	fail "no timeout message: $(cat "$T/fio.out")"
grep -q "err= *110" "$T/fio.out" || fail "not ETIMEDOUT: $(cat "$T/fio.out")"
[ "$elapsed" -lt 8000 ] || fail "fio took ${elapsed} ms with request_timeout=2"

# A stalled handler and no timeout: SIGTERM still ends fio promptly.
kill -STOP "$stall_pid"
run_fio --name=term --uri="tcmu+unix:///?socket=$T/stall.sock" --size=64m --rw=randread --bs=4k --iodepth=16 --time_based --runtime=30 --request_timeout=0 &
fio_pid=$!
sleep 1
kill -TERM "$(pgrep -P "$fio_pid" -x fio | head -1)" 2>/dev/null || kill -TERM "$fio_pid"
start=$(date +%s%N)
wait "$fio_pid"
elapsed=$((($(date +%s%N) - start) / 1000000))
kill -CONT "$stall_pid"
[ "$elapsed" -lt 3000 ] || fail "fio took ${elapsed} ms to stop after SIGTERM with a stalled handler"

echo "PASS"
