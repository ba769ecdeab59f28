#!/bin/bash
# Description: fio --enghelp lists every engine option with help text, and
# the README's option table documents exactly those options.
. "$TORUS_SRC/tests/lib.sh"
require fio

"$FIO" --enghelp="$ENGINE" >"$T/help" 2>&1 || fail "fio --enghelp failed: $(cat "$T/help")"
opts=$(awk -F: '/^[a-z_]+ +:/ { gsub(/ /, "", $1); print $1 }' "$T/help" | sort)
[ -n "$opts" ] || fail "no options in: $(cat "$T/help")"
for o in uri conns handshake fua structured_replies poll_us; do
	grep -qx "$o" <<<"$opts" || fail "--enghelp lacks option $o"
done
while read -r o; do
	grep -q "^| \`$o\` |" "$TORUS_SRC/README.md" || fail "README's option table lacks $o"
	grep -q "^$o  *: [A-Z]" "$T/help" || fail "option $o has no help text"
done <<<"$opts"
documented=$(sed -n 's/^| `\([a-z_]*\)` | .*/\1/p' "$TORUS_SRC/README.md" | sort)
[ "$documented" = "$opts" ] || fail "README documents [$documented] but --enghelp lists [$opts]"
echo "PASS"
