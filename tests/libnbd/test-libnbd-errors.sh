#!/bin/bash
# Description: transport=libnbd's messages: a plain client to a TLS-only
# server, a certificate from a CA the server does not trust, a client key
# that does not match its certificate, a wrong PSK,
# TLS options that cannot be used, a uri it does not serve; what the server
# cannot do (trim, FUA, multi-conn, block sizes) and request_timeout; no
# server at all, which gets no TLS hint.
. "$TORUS_SRC/tests/lib.sh"
. "$TORUS_SRC/tests/libnbd/tls.sh"
require_libnbd_transport
require nbd-server

make_pki "$T/pki" localhost
make_pki "$T/other" localhost
make_psk "$T/keys.psk" alice
make_psk "$T/wrong.psk" alice

start_nbdkit "$T/psk.sock" --tls=require --tls-psk="$T/keys.psk" memory 16M
job=(--name=e --transport=libnbd --rw=randwrite --bs=4k --size=1m)

# also_said MESSAGE: the last fio run's output has MESSAGE too.
also_said() {
	grep -qF -- "$1" "$T/fio.out" || { cat "$T/fio.out" >&2; fail "not said: $1"; }
}

u="nbd+unix:///?socket=$T/psk.sock"
expect_fio_error "$u: libnbd could not connect: " "${job[@]}" --uri="$u"
also_said "; the server requires TLS: use nbds:// or nbds+unix:// with tls_certificates=DIR or tls_psk_file=FILE (docs/libnbd.md)"

tls_hint="; check that the server speaks TLS and trusts this client: the certificates (tls_certificates=DIR or ?tls-certificates=DIR) must be signed by a CA the server and this client share, or the PSK (tls_psk_file=FILE or ?tls-psk-file=FILE, user tls_username= or nbds://USER@...) must be the server's (docs/libnbd.md)"
# A CA that did not sign the server's certificate: over TCP the client
# refuses the server (over a Unix socket libnbd 1.14 checks no server
# certificate: docs/libnbd.md); the server refuses the client's
# certificate with --tls-verify-peer.
port=$(free_port)
start_bg nbdkit --foreground --exit-with-parent -i 127.0.0.1 -p "$port" --tls=require \
	--tls-certificates="$T/pki/server" memory 16M
wait_port "$port"
u="nbds://localhost:$port/"
expect_fio_error "$u: libnbd could not connect: " "${job[@]}" --uri="$u" --tls_certificates="$T/other/client"
also_said "$tls_hint"
# No certificates anywhere: encrypted, but the server is not checked.
expect_fio_ok "${job[@]}" --uri="$u"
also_said "torus: warning: $u: no TLS certificates or PSK given (tls_certificates=, tls_psk_file=, the uri's ?tls-certificates= or ?tls-psk-file=, or libnbd's default directories): libnbd encrypts but does not check the server's identity; give tls_certificates=DIR with the CA's certificate to check it"
start_nbdkit "$T/peer.sock" --tls=require --tls-certificates="$T/pki/server" --tls-verify-peer memory 16M
u="nbds+unix:///?socket=$T/peer.sock"
expect_fio_error "$u: libnbd could not connect: " "${job[@]}" --uri="$u" --tls_certificates="$T/other/client"
also_said "$tls_hint"
expect_fio_ok "${job[@]}" --uri="$u" --tls_certificates="$T/pki/client" --verify=crc32c
# A client key that is not the one its certificate was made for.
cp -r "$T/pki/client" "$T/badkey"
certtool --generate-privkey --key-type=ecdsa --outfile "$T/badkey/client-key.pem" >/dev/null 2>&1 ||
	fail "certtool could not make a key"
expect_fio_error "$u: libnbd could not connect: " "${job[@]}" --uri="$u" --tls_certificates="$T/badkey"
also_said "client-key.pem: The certificate and the given key do not match."
u="nbds+unix://alice@/?socket=$T/psk.sock&tls-psk-file=$T/wrong.psk"
expect_fio_error "$u: libnbd could not connect: " "${job[@]}" --uri="$u"
also_said "$tls_hint"

# Nothing listening: TLS never started, so no hint about certificates.
u="nbds+unix:///?socket=$T/nobody.sock"
expect_fio_error "$u: libnbd could not connect: " "${job[@]}" --uri="$u" --tls_psk_file="$T/keys.psk"
also_said "; is a server listening there? (docs/libnbd.md)"
grep -qF "trusts this client" "$T/fio.out" && fail "a missing socket got the TLS hint: $(cat "$T/fio.out")"

u="nbds+unix:///?socket=$T/psk.sock"
expect_fio_error "tls_psk_file=$T/none.psk: No such file or directory; make one with psktool -u USER -p FILE and give the server the same file" \
	"${job[@]}" --uri="$u" --tls_psk_file="$T/none.psk"
expect_fio_error "tls_certificates=$T/none: No such file or directory; give the directory holding ca-cert.pem, client-cert.pem and client-key.pem" \
	"${job[@]}" --uri="$u" --tls_certificates="$T/none"
expect_fio_error "tls_psk_file= is set but uri 'nbd+unix:///?socket=$T/psk.sock' does not ask for TLS; use nbds:// or nbds+unix://, or drop tls_psk_file=" \
	"${job[@]}" --uri="nbd+unix:///?socket=$T/psk.sock" --tls_psk_file="$T/keys.psk"

expect_fio_error "transport=libnbd does not serve uri 'tcmu+unix:///?socket=$T/t.sock'; it serves nbd://, nbds://, nbd+unix://, nbds+unix://, nbd+vsock:// or nbds+vsock:// (as libnbd's nbd_connect_uri takes them): change the uri, or drop transport= to let the uri pick its transport" \
	"${job[@]}" --uri="tcmu+unix:///?socket=$T/t.sock"
expect_fio_error "transport=tcmu does not serve uri 'nbds+unix:///?socket=$T/psk.sock'; it serves tcmu+unix:///?socket=PATH" \
	--name=e --transport=tcmu --rw=read --size=1m --uri="nbds+unix:///?socket=$T/psk.sock"

# What the server cannot do, refused before any I/O.
start_nbdkit "$T/nomc.sock" --filter=multi-conn memory 16M multi-conn-mode=disable
u="nbd+unix:///?socket=$T/nomc.sock"
expect_fio_error "$u: conns=4 but the server does not advertise multi-conn (NBD_FLAG_CAN_MULTI_CONN), so connections could see each other's writes out of order; use conns=1" \
	"${job[@]}" --uri="$u" --conns=4
start_nbdkit "$T/bs.sock" --filter=blocksize-policy memory 16M blocksize-minimum=4096 \
	blocksize-preferred=4096 blocksize-maximum=65536
u="nbd+unix:///?socket=$T/bs.sock"
expect_fio_error "$u: read block size 131072 exceeds the server's maximum request size 65536; use bs=65536 or less" \
	"${job[@]}" --uri="$u" --rw=read --bs=128k
expect_fio_error "$u: write block size 512 is not a multiple of the server's minimum block size 4096; use a multiple of 4096" \
	"${job[@]}" --uri="$u" --bs=512
expect_fio_ok "${job[@]}" --uri="$u" --bs=64k --size=4m --verify=crc32c

# Trim and FUA against a server without them: nbd-server's defaults.
start_nbd_server "$T/disk.img"
port=$nbd_port
u="nbd://127.0.0.1:$port/d"
expect_fio_error "$u: the server does not support trim (NBD_FLAG_SEND_TRIM not advertised); remove rw=trim/randtrim/trimwrite from the job" \
	"${job[@]}" --uri="$u" --rw=randtrim
expect_fio_error "$u: fua=1 but the server does not support FUA (NBD_FLAG_SEND_FUA not advertised); drop fua=1" \
	"${job[@]}" --uri="$u" --fua=1

# A reply that never comes: the request fails, its connection is closed.
start_nbdkit "$T/slow.sock" --filter=delay memory 16M rdelay=10
u="nbd+unix:///?socket=$T/slow.sock"
expect_fio_error "$u: connection 1: no reply for 1 s to a read of 4096 bytes at offset " \
	"${job[@]}" --uri="$u" --rw=randread --iodepth=4 --request_timeout=1
also_said "(request_timeout=1); libnbd cannot cancel one command, so the connection is closed and its 3 other outstanding requests fail with EIO"
also_said "error=Connection timed out"
# With continue_on_error the job goes on after each connection is closed:
# their slots are free again, so the requests that follow fail at once
# (no connection left) and the job ends at its runtime, not spinning on a
# full queue with nothing in flight.
# A server of its own: nbdkit 1.32's delay filter aborts now and then once
# clients have closed connections in the middle of a delay (as the one
# above did), and the run below would find nobody listening.
start_nbdkit "$T/slow2.sock" --filter=delay memory 16M rdelay=10
u="nbd+unix:///?socket=$T/slow2.sock"
start=$SECONDS
rc=0
timeout -s KILL 30 "$FIO" --ioengine="external:$ENGINE" "${job[@]}" --uri="$u" --rw=randread \
	--iodepth=4 --conns=2 --request_timeout=1 --continue_on_error=all --time_based --runtime=4 \
	>"$T/fio.out" 2>&1 || rc=$?
[ $rc != 137 ] || { cat "$T/fio.out" >&2; fail "continue_on_error after request_timeout: fio still ran 30 s later"; }
((SECONDS - start <= 15)) || fail "continue_on_error after request_timeout: fio took $((SECONDS - start)) s for a 4 s job"
also_said "connection 2: no reply for 1 s to a read"
echo "PASS"
