#!/bin/bash
# scripts/rerun-documents runs end to end in its short mode (one second per
# test) against every server it needs and writes its report (report.md with a
# row per figure, report.png, results.json), the torus tests over NBD and over
# TCMU (tcmu-shim in front of the same nbd-shim coreos profile), every figure non-zero,
# no test's runs apart in the syncs and trims they issued; and
# it stops with a clear error naming the package or the build step when a
# server is missing.
. "$TORUS_SRC/tests/lib.sh"
require fio python3 nbdkit nbd-server redis-server
[ -f "$ENGINE" ] || skip "no engine at $ENGINE (ninja -C build)"
[ -x "$NBD_SHIM" ] || skip "no shim at $NBD_SHIM (ninja -C build)"
[ -x "$TCMU_SHIM" ] || skip "no handler host at $TCMU_SHIM (ninja -C build)"
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || python3 -c 'import matplotlib' 2>/dev/null ||
	skip "matplotlib is not installed (python3-matplotlib)"
# The engine and shim of this build (TORUS_BUILD), not the default build/.
R() { "$TORUS_SRC/scripts/rerun-documents" --engine "$ENGINE" --nbd-shim "$NBD_SHIM" \
	--tcmu-shim "$TCMU_SHIM" "$@"; }

# A missing server: the error names what provides it, and nothing runs.
mkdir -p "$T/bin"
for tool in fio python3 nbdkit redis-server bash; do
	ln -s "$(command -v $tool)" "$T/bin/$tool"
done
[ -x /usr/bin/python3 ] && ln -sf /usr/bin/python3 "$T/bin/python3"
if PATH=$T/bin R --short --only zeroos-baseline --results "$T/none" >"$T/out" 2>&1; then
	fail "rerun-documents ran without nbd-server"
fi
grep -q "nbd-server not found: install the Debian package nbd-server" "$T/out" ||
	{ cat "$T/out" >&2; fail "no clear error for a missing nbd-server"; }
R --short --only torus --nbd-shim "$T/no-shim" --results "$T/none" >"$T/out" 2>&1 &&
	fail "rerun-documents ran without the shim"
grep -q "nbd-shim not found: build it" "$T/out" || { cat "$T/out" >&2; fail "no clear error for a missing shim"; }
R --short --only torus-ddwrite-tcmu --tcmu-shim "$T/no-tcmu" --results "$T/none" >"$T/out" 2>&1 &&
	fail "rerun-documents ran the TCMU tests without tcmu-shim"
grep -q "tcmu-shim not found: build it" "$T/out" ||
	{ cat "$T/out" >&2; fail "no clear error for a missing tcmu-shim"; }
[ -e "$T/none" ] && fail "a results folder was made although nothing could run"

# The short mode, end to end.
if ! R --short --seconds 1 --redis-servers 2 --results "$T/res" >"$T/out" 2>&1; then
	cat "$T/out" >&2
	fail "rerun-documents --short failed"
fi
cat "$T/out"
n=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import docs_tests; print(len(docs_tests.TESTS))' \
	"$TORUS_SRC/scripts")
[ "$(grep -c '^\[[0-9]*/[0-9]*\] .*\.\.\.$' "$T/out")" = "$n" ] || fail "expected $n progress lines"
[ -s "$T/res/report.md" ] || fail "no report.md"
[ "$(head -c 8 "$T/res/report.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
	fail "report.png is not a PNG"
grep -q '^| document | test | metric | transport | documents. figure | ours | units | server |' "$T/res/report.md" ||
	fail "report.md has no table header"
grep -q '| failed: ' "$T/res/report.md" && fail "report.md reports a failure: $(grep '| failed: ' "$T/res/report.md")"
python3 - "$T/res" <<'PY' || fail "results.json or report.md incomplete"
import json, os, sys
res = sys.argv[1]
r = json.load(open(os.path.join(res, "results.json")))
sys.path.insert(0, os.path.join(os.environ["TORUS_SRC"], "scripts"))
import docs_tests
md = open(os.path.join(res, "report.md")).read()
rows = [l for l in md.splitlines() if l.startswith("| 00")]
want = sum(len(t["metrics"]) for t in docs_tests.TESTS)
assert len(rows) == want, f"{len(rows)} table rows, want {want}"
assert len(r["tests"]) == len(docs_tests.TESTS)
for t in r["tests"]:
    assert not t.get("error"), t
    for k, v in t["figures"].items():
        assert v > 0, (t["id"], k, v)
    assert os.path.exists(os.path.join(res, t["id"] + ".json")), t["id"]
assert "filesystem" in md and "block I/O pattern" in md
# the syncs and trims: the small files' delete trims (fio counts no end_fsync=), and
# the NBD and TCMU runs of a torus test issue the same
assert "## Syncs and trims" in md and "| gluster-smallfiles-delete | engine-nbd | " in md, md
assert r["issued_differ"] == {}, r["issued_differ"]
for server in ("nbd-shim torus", "nbd-server (official)", "nbd-shim zeroos on Redis", "nbdkit memory",
               "tcmu-shim, NBD store to nbd-shim torus"):
    assert server in md, server
# the torus tests over TCMU: a run each, non-zero, beside the document's TCMU figures,
# each row right after its NBD row
tcmu = [t for t in r["tests"] if t["transport"] == "tcmu"]
assert sorted(t["base"] for t in tcmu) == sorted(
    t["id"] for t in docs_tests.TESTS if t["server"] == "torus" and t["transport"] == "nbd"), tcmu
for t in tcmu:
    want = {m["key"] for m in docs_tests.by_id(t["id"])["metrics"]}
    assert set(t["figures"]) == want and all(v > 0 for v in t["figures"].values()), t
tcmu_rows = [l for l in rows if "| TCMU |" in l]
assert len(tcmu_rows) == sum(len(docs_tests.by_id(t["id"])["metrics"]) for t in tcmu), tcmu_rows
assert all("TCMU)" in l or "| — |" in l for l in tcmu_rows), tcmu_rows
assert not any("TCMU)" in l for l in rows if "| NBD |" in l)
names = [l.split("|")[2] + l.split("|")[3] for l in rows]
for i, l in enumerate(rows):
    if "| TCMU |" in l and "| TCMU |" not in rows[i - 1]:
        nbd = [j for j, n in enumerate(names) if n == names[i] and "| NBD |" in rows[j]]
        assert nbd and nbd[-1] < i and "| NBD |" in rows[i - 1], (i, l)
print("TCMU rows:", ", ".join(f"{t['id']} " + " ".join(f"{k}={v:.1f}" for k, v in t["figures"].items())
                              for t in tcmu))
PY

# --kernel-paths: the same tests through kernel-loop (nbdfuse + loop, this
# machine's own kernel) as further columns: a device test on the raw device,
# a filesystem test on ext4, and the 0-Disk shim, which libnbd cannot reach.
R --short --kernel-paths kernel-lop --results "$T/none" >"$T/out" 2>&1 &&
	fail "rerun-documents took an unknown kernel path"
grep -q "kernel-paths: unknown kernel-lop: choose from kernel-loop," "$T/out" ||
	{ cat "$T/out" >&2; fail "no clear error for an unknown kernel path"; }
echo "ok: rerun-documents --short wrote its report"
# kernel-loop needs root, nbdfuse, losetup and mkfs.ext4, FUSE and the loop
# driver: without them its columns are not checked, and the test says so.
[ "$(id -u)" = 0 ] || skip "the kernel-loop columns need root (losetup, a FUSE mount); the rest passed"
require nbdfuse losetup mkfs.ext4
[ -c /dev/fuse ] || skip "no /dev/fuse: the kernel-loop columns need FUSE (modprobe fuse); the rest passed"
[ -c /dev/loop-control ] ||
	skip "no /dev/loop-control: the kernel-loop columns need the loop driver (modprobe loop); the rest passed"
if ! R --short --seconds 1 --redis-servers 2 --only 'zeroos-baseline|gluster-dd|zerodisk-device' \
	--kernel-paths kernel-loop --results "$T/kres" >"$T/out" 2>&1; then
	cat "$T/out" >&2
	fail "rerun-documents --kernel-paths kernel-loop failed"
fi
cat "$T/out"
python3 - "$T/kres" <<'PY' || fail "the kernel-loop columns are wrong"
import json, os, sys
res = sys.argv[1]
r = {t["id"]: t for t in json.load(open(os.path.join(res, "results.json")))["tests"]}
md = open(os.path.join(res, "report.md")).read()
assert "## The kernel paths" in md and "| ours (engine, NBD) | kernel-loop |" in md, md
for i, form in (("zeroos-baseline-randrw-4k", "filename=/dev/loop"), ("gluster-dd-1g-fsync", "directory=")):
    k = r[i]["kernel"]["kernel-loop"]
    assert k["status"] == "ok", (i, k)
    assert all(v > 0 for v in k["figures"].values()) and set(k["figures"]) == set(r[i]["figures"]), k
    job = open(os.path.join(res, "kernel", i, "kernel-loop.fio")).read()
    assert form in job, (i, job)
k = r["zerodisk-device"]["kernel"]["kernel-loop"]
assert k["status"] == "failed" and "nbdfuse exited" in k["reason"], k
# the writes each path issued, counted; no path apart in syncs or trims
for p in (r["gluster-dd-1g-fsync"], r["gluster-dd-1g-fsync"]["kernel"]["kernel-loop"]):
    assert p["issued"]["writes"] > 0, p["issued"]
assert json.load(open(os.path.join(res, "results.json")))["issued_differ"] == {}
assert "zerodisk-device, kernel-loop: nbdfuse exited" in md
PY
echo "ok: --kernel-paths kernel-loop: raw device, ext4, and the 0-Disk shim's refusal"
