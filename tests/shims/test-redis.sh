#!/bin/bash
# The zeroos profile over the 0-Disk layout in real redis servers, in the
# document's arrangement: 8 storage servers + 1 metadata server.
# - fio verify=crc32c through the engine;
# - the data is under the documented keys (redis-layout.py checks every
#   key, hash and server placement);
# - 256 identical blocks are stored once; zero blocks are not stored;
# - a new shim over the same redis reads the data back (verify_only);
# - the block map spread over several metadata servers by sector % M: by
#   default the storage servers (0-Disk since 2017), or two given ones;
# - several connections each with its own copy of the block map
#   (zeroos-conns.py: unflushed and stale entries, lost updates, a client
#   gone without FLUSH);
# - tcmu-shim over the same store (both shims share the registry);
# - a read the store fails gets 0-Disk's treatment: the success header
#   is already out, then the connection is dropped.
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"

require "$FIO" redis-server redis-cli python3
[ -x "$NBD_SHIM" ] || skip "$NBD_SHIM is not built"
[ -f "$ENGINE" ] || skip "$ENGINE is not built"

ports=()
for i in $(seq 0 8); do
	port=$(free_port)
	mkdir -p "$T/redis$i"
	start_bg redis-server --port "$port" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$T/redis$i" --loglevel warning \
		--logfile "$T/redis$i/log"
	ports+=("$port")
done
for port in "${ports[@]}"; do
	wait_port "$port"
done
storage=$(printf '127.0.0.1:%s,' "${ports[@]:0:8}")
storage=${storage%,}
meta=127.0.0.1:${ports[8]}

start_shim() {
	"$NBD_SHIM" --profile zeroos --size 64M --listen "unix:$T/z.sock" \
		--store "redis:$storage" --redis-meta "$meta" --vdisk vd1 &
	shim=$!
	wait_socket "$T/z.sock"
}
stop_shim() {
	kill $shim
	wait $shim || fail "the shim did not exit 0 on SIGTERM"
}
layout() {
	python3 "$TORUS_SRC/tests/shims/redis-layout.py" --storage "$storage" \
		--meta "$meta" --vdisk vd1 "$@" >"$T/layout.json" ||
		fail "redis layout check failed"
	cat "$T/layout.json"
}
field() {
	python3 -c "import json,sys; print(json.load(open('$T/layout.json'))['$1'])"
}
uri="nbd+unix:///default?socket=$T/z.sock"
job=(--name=data --uri="$uri" --rw=randwrite --bs=4k --size=8M --iodepth=4
     --verify=crc32c --randseed=42)

start_shim
expect_fio_ok "${job[@]}"
stop_shim		# the block map is written back on shutdown too
layout
[ "$(field mapped_blocks)" = 2048 ] || fail "expected 2048 mapped blocks"
[ "$(field distinct_hashes)" = 2048 ] || fail "expected 2048 distinct blocks"
keys=$(python3 -c "import json; print(sum(json.load(open('$T/layout.json'))['keys']))")
[ "$keys" = 2048 ] || fail "expected 2048 stored blocks, found $keys"
python3 -c "import json,sys; k=json.load(open('$T/layout.json'))['keys']; sys.exit(min(k) == 0)" ||
	fail "some storage server got no block: hash[0] % 8 spreading is wrong"
for port in "${ports[@]:0:8}"; do
	[ "$(redis-cli -p "$port" EXISTS lba:vd1)" = 0 ] ||
		fail "lba:vd1 found on storage server $port"
done
[ "$(redis-cli -p "${ports[8]}" HLEN lba:vd1)" = 16 ] ||
	fail "expected 16 sectors (2048 blocks / 128) in lba:vd1"
echo "layout: 2048 blocks under their hashes on 8 servers, lba:vd1 on the metadata server"

# a restarted shim over the same redis reads everything back
start_shim
expect_fio_ok "${job[@]}" --verify_only=1
echo "restart: data read back and verified"

# 256 identical blocks (1 MiB of one pattern at 32 MiB) are stored once
expect_fio_ok --name=same --uri="$uri" --rw=write --bs=4k --size=1M \
	--offset=32M --buffer_pattern=0x5a5a5a5a --fsync=256
layout --blocks 8192:256
[ "$(field range_hashes)" = 1 ] || fail "the 256 identical blocks have several hashes"
keys2=$(python3 -c "import json; print(sum(json.load(open('$T/layout.json'))['keys']))")
[ "$keys2" = $((keys + 1)) ] || fail "identical blocks added $((keys2 - keys)) keys, expected 1"
echo "dedup: 256 identical blocks stored once"

# zero blocks are not stored: their map entries go back to nil, and a
# sector of nil entries is deleted from lba:vd1
expect_fio_ok --name=zero --uri="$uri" --rw=write --bs=4k --size=1M \
	--offset=32M --zero_buffers=1 --fsync=256
layout --blocks 8192:256
[ "$(field range_nil)" = True ] && [ "$(field range_hashes)" = 1 ] ||
	fail "zeroed blocks still map to content"
[ "$(redis-cli -p "${ports[8]}" HEXISTS lba:vd1 64)" = 0 ] ||
	fail "a sector of nil hashes was kept in lba:vd1"
echo "zeroes: not stored, sector deleted"

# the block map over the storage servers themselves (no --redis-meta),
# sector S on server S % 8, and over two metadata servers, S % 2
other_shim() {
	local vdisk=$1
	shift
	"$NBD_SHIM" --profile zeroos --size 64M --listen "unix:$T/$vdisk.sock" \
		--store "redis:$storage" --vdisk "$vdisk" "$@" &
	other=$!
	wait_socket "$T/$vdisk.sock"
}
meta2=$meta,127.0.0.1:${ports[0]}
for case in "vd2" "vd3 --redis-meta $meta2"; do
	set -- $case
	vdisk=$1
	shift
	other_shim "$vdisk" "$@"
	expect_fio_ok --name=spread --uri="nbd+unix:///default?socket=$T/$vdisk.sock" \
		--rw=randwrite --bs=4k --size=8M --iodepth=4 --verify=crc32c
	kill $other
	wait $other || fail "the shim for $vdisk did not exit 0 on SIGTERM"
	if [ "$vdisk" = vd2 ]; then
		layout --vdisk "$vdisk" --meta "$storage" >/dev/null
		want="[2, 2, 2, 2, 2, 2, 2, 2]"
	else
		layout --vdisk "$vdisk" --meta "$meta2" >/dev/null
		want="[8, 8]"
	fi
	[ "$(field lba_per_meta)" = "$want" ] ||
		fail "$vdisk: sectors per metadata server $(field lba_per_meta), expected $want"
	echo "$vdisk: 16 sectors spread $want over the metadata servers"
done
[ "$(redis-cli -p "${ports[8]}" EXISTS lba:vd2)" = 0 ] ||
	fail "lba:vd2 is on the metadata server; it belongs on the storage servers"

# tcmu-shim offers the same redis store (one registry): a ring's writes
# verified, their map under its --vdisk on the metadata server
[ -x "$TCMU_SHIM" ] || fail "$TCMU_SHIM is not built"
start_tcmu_shim "$T/t.sock" --store "redis:$storage" --redis-meta "$meta" \
	--vdisk tcmu1 --size 16M --block-size 4096
expect_fio_ok --name=tcmu --uri="tcmu+unix:///?socket=$T/t.sock" --rw=randwrite \
	--bs=4k --size=4M --iodepth=4 --verify=crc32c --end_fsync=1
[ "$(redis-cli -p "${ports[8]}" EXISTS lba:tcmu1)" = 1 ] ||
	fail "tcmu-shim's redis store kept no block map lba:tcmu1 on the metadata server"
echo "tcmu-shim over the redis store: verified, map in lba:tcmu1"

# one copy of the block map per connection
other_shim vd4
python3 "$TORUS_SRC/tests/shims/zeroos-conns.py" "$T/vd4.sock" ||
	fail "connections to one vdisk do not behave as 0-Disk's"
kill $other
wait $other || fail "the shim for vd4 did not exit 0 on SIGTERM"

# the storage servers go away: block 0 (mapped) cannot be read
for port in "${ports[@]:0:8}"; do
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
done
python3 - "$T/z.sock" <<'PY' || fail "a failed read did not end as in 0-Disk"
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
def recv(n):
    b = b""
    while len(b) < n:
        got = s.recv(n - len(b))
        if not got:
            break
        b += got
    return b
recv(18)
s.sendall(struct.pack(">I", 3) + struct.pack(">QII", 0x49484156454F5054, 1, 7) + b"default")
recv(10)
s.sendall(struct.pack(">IHHQQI", 0x25609513, 0, 0, 77, 0, 4096))
hdr = recv(16)
rest = recv(4096)
ok = hdr == struct.pack(">IIQ", 0x67446698, 0, 77) and rest == b""
print("failed read: header", hdr.hex(), "then", len(rest), "bytes and EOF")
sys.exit(0 if ok else 1)
PY
echo "read error: success header, then the connection dropped"
stop_shim
