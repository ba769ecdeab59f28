#!/bin/bash
# Description: fio verify=crc32c through transport=libnbd against nbdkit
# memory: plain (Unix and TCP), TLS with X.509 certificates (Unix and TCP)
# and TLS with a PSK (Unix and TCP), and qemu-nbd with tls-creds (Unix), each at
# conns=1 and conns=4, with two processes and with two threads; the fio
# modes fio's built-in nbd engine crashes in (create_serialize=0; offload:
# libnbd-modes); FUA, trims, flushes and the embedded default server.
. "$TORUS_SRC/tests/lib.sh"
. "$TORUS_SRC/tests/libnbd/tls.sh"
require_libnbd_transport
require qemu-nbd

make_pki "$T/pki" localhost
make_psk "$T/keys.psk" alice

start_nbdkit "$T/plain.sock" memory 64M
start_nbdkit "$T/cert.sock" --tls=require --tls-certificates="$T/pki/server" memory 64M
start_nbdkit "$T/psk.sock" --tls=require --tls-psk="$T/keys.psk" memory 64M
port=$(free_port)
start_bg nbdkit --foreground --exit-with-parent -i 127.0.0.1 -p "$port" memory 64M
wait_port "$port"
tport=$(free_port)
start_bg nbdkit --foreground --exit-with-parent -i 127.0.0.1 -p "$tport" --tls=require \
	--tls-certificates="$T/pki/server" memory 64M
wait_port "$tport"

# Two jobs each, on their own 16 MiB (offset_increment), verified.
verify=(--transport=libnbd --size=8m --offset_increment=8m --numjobs=2 --verify=crc32c
	--verify_fatal=1 --do_verify=1)
# both: conns=1 and conns=4, each with two processes and with two threads.
both() {
	expect_fio_ok --name=procs1 "${verify[@]}" --conns=1 --rw=randwrite --bs=4k --iodepth=16 "$@"
	expect_fio_ok --name=procs4 "${verify[@]}" --conns=4 --rw=randrw --bs=16k --iodepth=16 \
		--fsync=16 "$@"
	expect_fio_ok --name=threads1 "${verify[@]}" --conns=1 --thread=1 --rw=randwrite --bs=8k \
		--iodepth=16 "$@"
	expect_fio_ok --name=threads4 "${verify[@]}" --conns=4 --thread=1 --rw=randrw --bs=64k \
		--iodepth=32 --fsync=16 "$@"
}
both --uri="nbd+unix:///?socket=$T/plain.sock"
both --uri="nbd://127.0.0.1:$port/"
# Certificates in the uri (libnbd's names) and as engine options.
both --uri="nbds+unix:///?socket=$T/cert.sock&tls-certificates=$T/pki/client"
both --uri="nbds://localhost:$tport/" --tls_certificates="$T/pki/client"
# A PSK: the user from the uri, or from tls_username=.
both --uri="nbds+unix://alice@/?socket=$T/psk.sock&tls-psk-file=$T/keys.psk"
pport=$(free_port)
start_bg nbdkit --foreground --exit-with-parent -i 127.0.0.1 -p "$pport" --tls=require \
	--tls-psk="$T/keys.psk" memory 64M
wait_port "$pport"
both --uri="nbds://127.0.0.1:$pport/" --tls_psk_file="$T/keys.psk" --tls_username=alice

# create_serialize=0 crashes fio's built-in nbd engine (offload too:
# libnbd-modes, tests/integration/test-fio-modes.sh libnbd, runs it).
uri="nbds+unix:///?socket=$T/cert.sock&tls-certificates=$T/pki/client"
expect_fio_ok --name=cs "${verify[@]}" --uri="$uri" --create_serialize=0 --rw=randwrite --bs=4k --iodepth=16
expect_fio_ok --name=cst "${verify[@]}" --uri="$uri" --create_serialize=0 --thread=1 --rw=randrw --bs=8k --iodepth=16

# FUA on every write (nbdkit memory has it); trims read back as zeroes.
expect_fio_ok --name=fua "${verify[@]}" --uri="$uri" --fua=1 --rw=randwrite --bs=4k --iodepth=16
u="nbd+unix:///?socket=$T/plain.sock"
expect_fio_ok --name=w --transport=libnbd --uri="$u" --size=4m --rw=write --bs=64k --buffer_pattern=0xab
expect_fio_ok --name=t --transport=libnbd --uri="$u" --size=4m --rw=trim --bs=64k --iodepth=8
expect_fio_ok --name=r --transport=libnbd --uri="$u" --size=4m --rw=read --bs=64k --verify=pattern \
	--verify_pattern=0x00 --verify_only=1

# qemu-nbd's own TLS (tls-creds-x509 over the same certificates), -e 4 for
# multi-conn (two jobs of four connections).
truncate -s 64M "$T/q.img"
start_bg qemu-nbd -t -f raw -k "$T/q.sock" -e 8 --cache=writeback \
	--object "tls-creds-x509,id=tls0,dir=$T/pki/server,endpoint=server" --tls-creds=tls0 "$T/q.img"
wait_socket "$T/q.sock"
both --uri="nbds+unix:///?socket=$T/q.sock&tls-certificates=$T/pki/client"

# No uri: the native transport's embedded nbdkit, reached through libnbd.
expect_fio_ok --name=emb --transport=libnbd --size=16m --rw=randwrite --bs=4k --iodepth=16 \
	--verify=crc32c --verify_fatal=1 --do_verify=1
grep -q "started the embedded default server 'nbdkit memory" "$T/fio.out" ||
	fail "no embedded server was started: $(cat "$T/fio.out")"
echo "PASS"
