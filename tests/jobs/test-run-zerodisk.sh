#!/bin/bash
# The 0-Disk document's jobs run for a couple of seconds through the engine
# against the zeroos shim, with verify: on its memory store, and on Redis
# (the deduped layout the document used).
. "$TORUS_SRC/tests/lib.sh"
require fio redis-server
[ -f "$ENGINE" ] || skip "no engine at $ENGINE (ninja -C build)"
[ -x "$NBD_SHIM" ] || skip "no shim at $NBD_SHIM (ninja -C build)"
J=$TORUS_SRC/jobs
export TORUS_SIZE=8M TORUS_RUNTIME=2
cd "$T" || fail "cd $T"

start_bg "$NBD_SHIM" --profile zeroos --listen "unix:$T/zeroos.sock" --size 64M --store memory
wait_socket "$T/zeroos.sock"
uri="nbd+unix:///default?socket=$T/zeroos.sock"
for job in zerodisk-fs-randrw zerodisk-fs-readwrite zerodisk-device; do
	expect_fio_ok --uri="$uri" --verify=crc32c "$J/$job.fio"
done

port=$(free_port)
start_bg redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
	--dir "$T" --daemonize no --protected-mode no --loglevel warning >"$T/redis.log"
wait_port "$port"
start_bg "$NBD_SHIM" --profile zeroos --listen "unix:$T/redis.sock" --size 64M \
	--store "redis:127.0.0.1:$port"
wait_socket "$T/redis.sock"
export TORUS_RUNTIME=1
expect_fio_ok --uri="nbd+unix:///default?socket=$T/redis.sock" --verify=crc32c \
	"$J/zerodisk-fs-randrw.fio"
echo "ok: the 0-Disk jobs run against the zeroos shim, on memory and on Redis"
