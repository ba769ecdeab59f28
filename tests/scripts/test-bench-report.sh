#!/bin/bash
# scripts/bench --report, run for real with tiny runtimes on one section
# (4 KiB randread QD16 over a Unix socket: fio's nbd engine, the engine and
# pipe-probe against nbdkit null), in both placements: the page has the
# run's command, mode and machine, the section in each placement, its lean
# probe and the command that re-runs it; the records kept beside the
# report render the same page again. The rendering of every kind of
# section is unit-tested in test_perfreport.py.

: "${TORUS_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$TORUS_SRC/tests/lib.sh"

require fio nbdkit taskset
[ -f "$ENGINE" ] || fail "no engine at $ENGINE: ninja -C $TORUS_BUILD"

page=$T/page.md
start=$SECONDS
if ! "$TORUS_SRC/scripts/bench" --report "$page" --quick --runtime 1 --quiet-wait 0 \
	--no-speed-probe --build "$TORUS_BUILD" --sections randread4k_qd16 --out "$T/report.md" \
	>"$T/bench.log" 2>&1; then
	cat "$T/bench.log" >&2
	fail "bench --report failed (its output above)"
fi
[ -s "$page" ] || fail "bench --report wrote no page at $page"

# expect TEXT: a line of the page holds TEXT (fixed string).
expect() {
	grep -qF -- "$1" "$page" || {
		cat "$page" >&2
		fail "the page (above) has no line with: $1"
	}
}

places=pinned,free
[ "$(nproc --all)" -ge 2 ] || places=free
expect "# Performance"
expect "(performance-history.md)"
expect "- **Command**: \`scripts/bench --report $page --quick --runtime 1"
expect "- **Mode**: quick (1 round of 1 s per client): a smoke run"
expect "- **Machine**: "
expect "- **Commit**: "
expect "## 4 KiB randread QD16, nbdkit null, Unix socket (\`randread4k_qd16\`)"
expect "Re-run: \`scripts/bench --sections randread4k_qd16 --placements $places --rounds 1 --runtime 1 --size 1G\`"
expect "Lean probe (\`probe\`): pipe-probe over the Unix socket, 4 KiB reads at QD16, no fio."
expect "| IOPS: torus / builtin (fio's own engine) |"
expect "| IOPS: torus / probe (the lean probe) |"
expect "| figure, median [min–max] | placement | builtin | torus | probe |"
for p in ${places//,/ }; do
	expect "| IOPS | $p | "
done
# the records kept beside the report render the same page again
python3 "$TORUS_SRC/scripts/perfreport.py" "$T/report.json" "$T/again.md" ||
	fail "perfreport.py could not render $T/report.json (above)"
cmp -s "$page" "$T/again.md" || {
	diff "$page" "$T/again.md" >&2
	fail "the page rendered again from the records differs (above)"
}
# so do the page's own records (the runs its sections come from)
python3 "$TORUS_SRC/scripts/perfreport.py" "$T/page.json" "$T/again2.md" ||
	fail "perfreport.py could not render $T/page.json (above)"
cmp -s "$page" "$T/again2.md" || {
	diff "$page" "$T/again2.md" >&2
	fail "the page rendered again from page.json differs (above)"
}
echo "PASS: bench --report wrote the page with its section in $places ($((SECONDS - start)) s)"
