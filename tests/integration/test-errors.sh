#!/bin/bash
# Description: every job/server mismatch is refused at start with a message
# that names the problem and the fix (never EIO at runtime).
. "$TORUS_SRC/tests/lib.sh"
require fio nbdkit nbd-server

nbdkit_sock() {	# VAR NAME ARGS...: an nbdkit on $T/NAME.sock, its uri in VAR
	local var=$1 name=$2
	shift 2
	start_nbdkit "$T/$name.sock" "$@"
	printf -v "$var" '%s' "nbd+unix:///?socket=$T/$name.sock"
}

nbdkit_sock u_mem mem memory 16M
expect_fio_error "the job needs 33554432 bytes (size=33554432 + offset=0) but the export has 16777216: lower size= or offset=, or use a larger export" \
	--name=big --uri="$u_mem" --size=32m --rw=read
expect_fio_error "the job needs 20971520 bytes (size=8388608 + offset=12582912)" \
	--name=big2 --uri="$u_mem" --size=8m --offset=12m --rw=read

nbdkit_sock u_ro ro -r memory 16M
expect_fio_error "the export is read-only but the job writes" --name=ro --uri="$u_ro" --rw=write --size=1m

nbdkit_sock u_nomc nomc --filter=multi-conn memory 16M multi-conn-mode=disable
expect_fio_error "conns=4 but the server does not advertise multi-conn (NBD_FLAG_CAN_MULTI_CONN)" \
	--name=mc --uri="$u_nomc" --rw=write --size=1m --conns=4

nbdkit_sock u_bs bs --filter=blocksize-policy memory 16M blocksize-minimum=4096 blocksize-preferred=4096 blocksize-maximum=65536
expect_fio_error "read block size 131072 exceeds the server's maximum request size 65536; use bs=65536 or less" \
	--name=bs --uri="$u_bs" --rw=read --bs=128k --size=1m
expect_fio_error "write block size 512 is not a multiple of the server's minimum block size 4096; use a multiple of 4096" \
	--name=bs --uri="$u_bs" --rw=write --bs=512 --size=1m
expect_fio_error "read block alignment 2048 is not a multiple of the server's minimum block size 4096" \
	--name=ba --uri="$u_bs" --rw=randread --bs=4k --blockalign=2k --size=1m
# Within the limits it works.
expect_fio_ok --name=ok --uri="$u_bs" --rw=randwrite --bs=64k --size=4m --verify=crc32c

# Trim and FUA against a server without them: nbd-server's defaults.
start_nbd_server "$T/disk.img"
port=$nbd_port
expect_fio_error "the server does not support trim (NBD_FLAG_SEND_TRIM not advertised); remove rw=trim/randtrim/trimwrite from the job" \
	--name=trim --uri="nbd://127.0.0.1:$port/d" --rw=randtrim --size=1m
expect_fio_error "fua=1 but the server does not support FUA (NBD_FLAG_SEND_FUA not advertised); drop fua=1" \
	--name=fua --uri="nbd://127.0.0.1:$port/d" --rw=write --size=1m --fua=1
# No FLUSH advertised (no write cache): fsync completes locally.
expect_fio_ok --name=fs --uri="nbd://127.0.0.1:$port/d" --rw=write --bs=64k --size=1m --fsync=2 --end_fsync=1 --verify=crc32c

# A bad value of an option with a list of values names them all.
expect_fio_error "torus: trim_mode=bogus is not a valid value: use unmap (UNMAP with one block descriptor) or write_same (WRITE SAME(16) with the UNMAP bit)" \
	--name=e --transport=tcmu --trim_mode=bogus --rw=read --size=1m
expect_fio_error "torus: handshake=bogus is not a valid value: use auto (NBD_OPT_GO, falling back to NBD_OPT_EXPORT_NAME for legacy servers (torus, 0-Disk)), go (NBD_OPT_GO only (with block size info)) or export-name (NBD_OPT_EXPORT_NAME only)" \
	--name=e --uri="$u_mem" --handshake=bogus --rw=read --size=1m
expect_fio_error "torus: ring=PRIVATE is not a valid value: use shared (One ring per device, joined by every job on it) or private (A ring of the job's own)" \
	--name=e --transport=tcmu --ring=PRIVATE --rw=read --size=1m
expect_fio_error "torus: trim_mode needs a value: use unmap (UNMAP with one block descriptor) or write_same (WRITE SAME(16) with the UNMAP bit)" \
	--name=e --transport=tcmu --trim_mode= --rw=read --size=1m
# The values themselves still parse (the callback stores them).
expect_fio_ok --name=hs --uri="$u_mem" --handshake=export-name --rw=read --size=1m

# Bad targets.
expect_fio_error "unsupported uri 'http://x/': expected nbd://host[:port]/export or nbd+unix:///export?socket=PATH" \
	--name=u --uri=http://x/ --rw=read --size=1m
expect_fio_error "asks for TLS, which the native nbd transport does not speak; use transport=libnbd for TLS" --name=u --uri=nbds://localhost/ --rw=read --size=1m
expect_fio_error "asks for TLS, which the native nbd transport does not speak; use transport=libnbd for TLS" --name=u --uri="nbds+unix:///?socket=$T/none.sock" --rw=read --size=1m
expect_fio_error "port must be a number from 1 to 65535" --name=u --uri=nbd://localhost:99999/ --rw=read --size=1m
expect_fio_error "cannot connect to Unix socket $T/none.sock: No such file or directory (is the NBD server running?)" \
	--name=u --uri="nbd+unix:///?socket=$T/none.sock" --rw=read --size=1m
port=$(free_port)
expect_fio_error "cannot connect to 127.0.0.1 port $port: Connection refused (is the NBD server running?)" \
	--name=u --uri="nbd://127.0.0.1:$port/" --rw=read --size=1m
# Something that is not an NBD server.
python3 -c '
import socket,sys
s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
while True:
    c,_=s.accept(); c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n"); c.close()' "$T/http.sock" &
_bg_pids+=($!)
wait_socket "$T/http.sock"
expect_fio_error "not an NBD server: the greeting has the wrong magic" --name=u --uri="nbd+unix:///?socket=$T/http.sock" --rw=read --size=1m

# The job against the export's extent and block size.
nbdkit_sock u_empty empty memory 0
expect_fio_error "the export is empty (0 bytes), so there is nothing to read or write; give the server a non-empty export" \
	--name=e --uri="$u_empty" --rw=read
expect_fio_error "job 'oi' starts at offset 16777216 (offset=0 + offset_increment=8388608 x job 2), at or past the end of the export (16777216 bytes), so it would do no I/O; lower offset=, offset_increment= or numjobs=" \
	--name=oi --uri="$u_mem" --rw=read --size=4m --numjobs=3 --offset_increment=8m
nbdkit_sock u_512 b512 --filter=blocksize-policy memory 16M blocksize-minimum=512
expect_fio_error "bs_unaligned=1 allows read block sizes that are not multiples of the server's minimum block size 512; drop bs_unaligned=1" \
	--name=bu --uri="$u_512" --rw=randread --bsrange=512-4k --bs_unaligned=1 --size=1m

# What a uri carries but this engine ignores is named, once.
expect_fio_ok --name=q --uri="$u_mem&foo=1" --rw=read --size=1m --numjobs=2
[ "$(grep -c "torus: warning: $u_mem&foo=1: unknown query parameter 'foo' in the uri is ignored" "$T/fio.out")" = 1 ] ||
	fail "unknown query parameter not warned about exactly once: $(cat "$T/fio.out")"
port=$(free_port)
expect_fio_error "cannot connect to 127.0.0.1 port $port" --name=u --uri="nbd://me@127.0.0.1:$port/" --rw=read --size=1m
grep -qF "the user name 'me' in the uri is ignored (it is only used for TLS" "$T/fio.out" ||
	fail "user@ not warned about: $(cat "$T/fio.out")"

# Engine options out of range, including negatives fio 3.33 lets through.
expect_fio_error "poll_us=-1 is out of range: use 0 (never spin) to 1000000 microseconds" \
	--name=p --uri="$u_mem" --poll_us=-1 --rw=read --size=1m
expect_fio_error "request_timeout=-1 is out of range: use 0 (wait forever) to 86400 seconds" \
	--name=p --uri="$u_mem" --request_timeout=-1 --rw=read --size=1m

expect_fio_error "unknown transport=bogus: use one of nbd" --name=t --transport=bogus --rw=read --size=1m

# An option of the other transport is named, with the transport it belongs
# to; one left at its default is not. Both directions, the TCMU one against
# a socket nobody serves (the warning comes before the connect).
expect_fio_ok --name=w --uri="$u_mem" --rw=read --size=1m --ring_size=16M --trim_mode=unmap
[ "$(grep -cxF "torus: ring_size is a TCMU option; the nbd transport ignores it" "$T/fio.out")" = 1 ] ||
	fail "ring_size given to the nbd transport not warned about exactly once: $(cat "$T/fio.out")"
! grep -q "trim_mode is" "$T/fio.out" || fail "trim_mode at its default warned about: $(cat "$T/fio.out")"
expect_fio_error "cannot connect to the handler host" --name=w --uri="tcmu+unix:///?socket=$T/none.sock" \
	--rw=read --size=1m --poll_us=50 --conns=2
grep -qxF "torus: poll_us is an NBD option; the tcmu transport ignores it" "$T/fio.out" ||
	fail "poll_us given to the tcmu transport not warned about: $(cat "$T/fio.out")"
grep -qxF "torus: conns is an NBD option; the tcmu transport ignores it" "$T/fio.out" ||
	fail "conns given to the tcmu transport not warned about: $(cat "$T/fio.out")"

# The start-up line names the engine's version, meson.build's.
version=$(sed -n "s/^[[:space:]]*version : '\([^']*\)',\$/\1/p" "$TORUS_SRC/meson.build" | head -n 1)
[ -n "$version" ] || fail "no version in $TORUS_SRC/meson.build"
grep -qE "^torus $version \(libtorus.so for fio-[0-9]" "$T/fio.out" ||
	fail "no start-up line 'torus $version (libtorus.so for fio-...)' in: $(cat "$T/fio.out")"

# Option values fio itself checks.
expect_fio_error "conns" --name=c --uri="$u_mem" --conns=0 --rw=read --size=1m
expect_fio_error "handshake" --name=h --uri="$u_mem" --handshake=bogus --rw=read --size=1m

# The engine refuses a fio it was not built against.
if FIO= "$FIO" --name=v --ioengine="external:$TORUS_BUILD/engines/libtorus-wrongfio.so" --size=1m --rw=read >"$T/fio.out" 2>&1; then
	fail "engine built for another fio was accepted"
fi
grep -qF "torus: libtorus.so was built against fio-0.0-test but is loaded by $("$FIO" --version)" "$T/fio.out" ||
	fail "no version message: $(cat "$T/fio.out")"
grep -qF "Rebuild it against this fio" "$T/fio.out" || fail "version message does not say how to rebuild"
echo "PASS"
