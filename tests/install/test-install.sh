#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# meson install into a private DESTDIR puts every file where man/libtorus.7
# says, and the installed engine works on its own: fio loads it from there,
# it starts the embedded TCMU handler host it finds on PATH (the installed
# tcmu-shim, not the build tree's), and verify=crc32c reads back every block
# it wrote.
. "$TORUS_SRC/tests/lib.sh"
require fio meson python3

dest=$T/dest
meson install -C "$TORUS_BUILD" --destdir "$dest" --no-rebuild --quiet \
	>"$T/install.log" 2>&1 ||
	fail "meson install --destdir $dest failed: $(cat "$T/install.log")"

# Where meson puts things in this build (prefix, libdir, ...).
dirs=$(meson introspect "$TORUS_BUILD" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["libdir"], o["bindir"], o["mandir"])') ||
	fail "cannot read the install directories from meson introspect"
read -r prefix libdir bindir mandir <<<"$dirs"
root=$dest$prefix
engine=$root/$libdir/torus/libtorus.so
bin=$root/$bindir

for f in "$engine" "$bin/nbd-shim" "$bin/tcmu-shim"; do
	[ -x "$f" ] || fail "meson install did not install $f"
done
for page in man7/libtorus.7 man1/nbd-shim.1 man1/tcmu-shim.1; do
	cmp -s "$root/$mandir/$page" "$TORUS_SRC/man/${page#*/}" ||
		fail "meson install did not install man/${page#*/} as $root/$mandir/$page"
done
if readelf -d "$engine" "$bin/tcmu-shim" | grep -q "$TORUS_BUILD"; then
	fail "an installed file still names the build tree in its run path: $(readelf -d "$engine" "$bin/tcmu-shim" | grep PATH)"
fi

# The installed tcmu-shim first on PATH; the engine looks beside itself for
# a build tree's ../shims/tcmu/tcmu-shim first, which an install has not.
export PATH=$bin:$PATH
[ "$(command -v tcmu-shim)" = "$bin/tcmu-shim" ] ||
	fail "PATH finds $(command -v tcmu-shim), not the installed $bin/tcmu-shim"

"$FIO" --name=installed --ioengine=external:"$engine" --transport=tcmu \
	--rw=randwrite --bs=4k --size=16M --iodepth=8 \
	--verify=crc32c --verify_fatal=1 --output-format=json \
	>"$T/fio.json" 2>"$T/fio.err" ||
	fail "fio with the installed engine failed: $(cat "$T/fio.err")"
grep -q "started the embedded default handler host 'tcmu-shim --store memory" "$T/fio.err" ||
	fail "the installed engine did not start the embedded tcmu-shim: $(cat "$T/fio.err")"

# Every byte written, every byte read back and checked.
python3 - "$T/fio.json" <<'EOF' || fail "fio's counts are wrong (above)"
import json, sys
job = json.load(open(sys.argv[1]))['jobs'][0]
want = 16 << 20
got = (job['write']['io_bytes'], job['read']['io_bytes'], job['error'])
if got != (want, want, 0):
    sys.exit(f'written, verified, error: {got}; expected {(want, want, 0)}')
EOF
echo "PASS: installed under $root, fio verified 16 MiB through the installed engine and tcmu-shim"
