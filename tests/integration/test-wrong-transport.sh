#!/bin/bash
# Description: a uri of the wrong transport is told at once (within 2 s),
# with the right uri: tcmu+unix:// to an NBD server (its newstyle and its
# oldstyle greeting), nbd+unix:// to tcmu-shim, whose log names the peer
# that is not a TCMU client (nothing sent; bytes that are not a request);
# and the shim still serves the right uri after them.
# $1: native (the engine's own clients) or libnbd (transport=libnbd to
# tcmu-shim).
. "$TORUS_SRC/tests/lib.sh"
mode=${TEST_ARGS[0]:-}
case $mode in
native) require fio nbdkit python3 ;;
libnbd)
	. "$TORUS_SRC/tests/libnbd/tls.sh"
	require_libnbd_transport
	;;
*) fail "argument 1: native or libnbd, not '$mode': run the test through meson (meson test -C build NAME)" ;;
esac
[ -x "$TCMU_SHIM" ] || fail "no handler host at $TCMU_SHIM: build the tree (scripts/build.sh)"

job=(--name=w --rw=read --size=1m)

# fast_error MESSAGE ARGS...: expect_fio_error, within 2 s.
fast_error() {
	local t0=$EPOCHREALTIME ms
	expect_fio_error "$@"
	ms=$(python3 -c 'import sys; print(int((float(sys.argv[2]) - float(sys.argv[1])) * 1000))' \
		"$t0" "$EPOCHREALTIME")
	[ "$ms" -lt 2000 ] || fail "told in $ms ms, not within 2 s: $1"
}

# said_once LINE: the shim's log has LINE exactly once.
said_once() {
	[ "$(grep -cF -- "$1" "$T/shim.log")" = 1 ] ||
		fail "tcmu-shim's log does not have once: $1 ($(cat "$T/shim.log"))"
}

start_bg "$TCMU_SHIM" --socket "$T/tcmu.sock" --size 16M --log "$T/shim.log"
wait_socket "$T/tcmu.sock"
tcmu_uri="tcmu+unix:///?socket=$T/tcmu.sock"
nbd_uri="nbd+unix:///?socket=$T/tcmu.sock"
silent="not a TCMU client: it sent nothing in 100 ms, had the host's hello and closed the connection (an NBD client? a job on this socket needs uri=tcmu+unix:///?socket=PATH)"

if [ "$mode" = libnbd ]; then
	fast_error "$nbd_uri: libnbd could not connect: nbd_poll: handshake: server did not send expected NBD magic; the server did not greet as an NBD server: if that socket is a TCMU handler host (tcmu-shim), use uri=tcmu+unix:///?socket=$T/tcmu.sock (transport=tcmu)" \
		"${job[@]}" --transport=libnbd --uri="$nbd_uri"
	said_once "$silent"
	expect_fio_ok "${job[@]}" --uri="$tcmu_uri"
	echo "PASS"
	exit 0
fi

# ---- nbd+unix:// to a TCMU handler host
fast_error "$nbd_uri: that socket is a TCMU handler host (tcmu-shim), not an NBD server: use uri=tcmu+unix:///?socket=$T/tcmu.sock (transport=tcmu)" \
	"${job[@]}" --uri="$nbd_uri"
said_once "$silent"

# Bytes that are not an attach request: refused at their 16th byte, with
# a TCMU reply, and logged with what came.
python3 - "$T/tcmu.sock" >"$T/stranger.out" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect(sys.argv[1])
s.sendall(b"GET / HTTP/1.1\r\n")
print(s.recv(16))
EOF
grep -qxF "b'TORUS-TCMU-ACK.\x00'" "$T/stranger.out" ||
	fail "no TCMU reply to a stranger: $(cat "$T/stranger.out")"
said_once "not a TCMU client: it sent \"GET / HTTP/1.1\\x0d\\x0a\" (16 bytes), not an attach request; refused and closed"

# The host still serves the right uri.
expect_fio_ok "${job[@]}" --uri="$tcmu_uri"

# ---- tcmu+unix:// to an NBD server, newstyle and oldstyle
for style in newstyle oldstyle; do
	args=()
	[ $style = oldstyle ] && args=(--oldstyle)
	start_nbdkit "$T/$style.sock" "${args[@]}" memory 16M
	fast_error "tcmu+unix:///?socket=$T/$style.sock: that socket speaks NBD (an NBD server's greeting), not TCMU: use uri=nbd+unix:///?socket=$T/$style.sock (transport=nbd; the export's name, if not the default, after the ///)" \
		"${job[@]}" --uri="tcmu+unix:///?socket=$T/$style.sock"
done
echo "PASS"
