# shellcheck shell=bash
# TLS material for the libnbd tests, made fresh by each test in $T with
# GnuTLS's tools (gnutls-bin), as nbdkit-tls(1) describes. Source it after
# tests/lib.sh.

# make_pki DIR CN: a CA in DIR (ca-cert.pem, ca-key.pem), and under it
# DIR/server (ca-cert.pem, server-cert.pem, server-key.pem for CN, which
# is also the server's DNS name and 127.0.0.1) and DIR/client (ca-cert.pem,
# client-cert.pem, client-key.pem), as nbdkit and libnbd look for them.
make_pki() {
	local d=$1 cn=$2
	mkdir -p "$d/server" "$d/client"
	printf 'cn = torus test CA %s\nca\ncert_signing_key\nexpiration_days = 2\n' "$d" >"$d/ca.info"
	printf 'cn = %s\ndns_name = %s\nip_address = 127.0.0.1\ntls_www_server\nencryption_key\nsigning_key\nexpiration_days = 2\n' \
		"$cn" "$cn" >"$d/server.info"
	printf 'cn = torus client\ntls_www_client\nencryption_key\nsigning_key\nexpiration_days = 2\n' >"$d/client.info"
	{
		certtool --generate-privkey --key-type=ecdsa --outfile "$d/ca-key.pem" &&
		certtool --generate-self-signed --load-privkey "$d/ca-key.pem" \
			--template "$d/ca.info" --outfile "$d/ca-cert.pem" &&
		certtool --generate-privkey --key-type=ecdsa --outfile "$d/server/server-key.pem" &&
		certtool --generate-certificate --load-ca-certificate "$d/ca-cert.pem" \
			--load-ca-privkey "$d/ca-key.pem" --load-privkey "$d/server/server-key.pem" \
			--template "$d/server.info" --outfile "$d/server/server-cert.pem" &&
		certtool --generate-privkey --key-type=ecdsa --outfile "$d/client/client-key.pem" &&
		certtool --generate-certificate --load-ca-certificate "$d/ca-cert.pem" \
			--load-ca-privkey "$d/ca-key.pem" --load-privkey "$d/client/client-key.pem" \
			--template "$d/client.info" --outfile "$d/client/client-cert.pem"
	} >"$d/certtool.log" 2>&1 || fail "certtool failed: $(cat "$d/certtool.log")"
	cp "$d/ca-cert.pem" "$d/server/" && cp "$d/ca-cert.pem" "$d/client/" ||
		fail "cannot copy the CA certificate under $d"
}

# make_psk FILE USER: a PSK file with one random key for USER.
make_psk() {
	psktool -u "$2" -p "$1" >"$1.log" 2>&1 || fail "psktool failed: $(cat "$1.log")"
}

# The engine must have been built with libnbd (meson's summary says).
require_libnbd_transport() {
	require fio nbdkit certtool psktool
	"$FIO" --enghelp="$ENGINE" 2>&1 | grep -q '^tls_psk_file ' ||
		skip "the engine was built without libnbd (install libnbd-dev: scripts/deps.sh)"
}
