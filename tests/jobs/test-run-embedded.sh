#!/bin/bash
# The GlusterFS, Lustre and ZeroOS-baseline jobs run for a couple of seconds
# through the engine against its embedded default (nbdkit memory), each with
# verify where it writes; and verify really checks (against nbdkit null, which
# drops writes, it must fail).
. "$TORUS_SRC/tests/lib.sh"
require fio nbdkit
[ -f "$ENGINE" ] || skip "no engine at $ENGINE (ninja -C build)"
J=$TORUS_SRC/jobs
export TORUS_SIZE=16M TORUS_RUNTIME=2 TORUS_NRFILES=50
cd "$T" || fail "cd $T"

for job in gluster-dd-1g-fsync lustre-single-writer lustre-seq-buffered lustre-rand-buffered \
	lustre-seq-direct lustre-rand-direct lustre-bs-sweep zeroos-baseline-randrw-4k; do
	expect_fio_ok --verify=crc32c "$J/$job.fio"
	grep -q 'verify' "$T/fio.out" && fail "$job: fio mentions verify: $(grep verify "$T/fio.out")"
done
# The small files all map to the export (the engine is diskless), each from
# offset 0: verify every block right after it is written, before the next
# file overwrites it.
expect_fio_ok --verify=crc32c --verify_backlog=1 "$J/gluster-smallfiles-extract.fio"
# The delete half trims: fill its range with a pattern (checked), delete,
# then every byte reads back as zero, as nbdkit memory makes trimmed bytes
# (its trim is its zero: plugins/memory/memory.c). The document's job goes
# verbatim into one job file between the two, so that the jobs share the
# embedded nbdkit (fio gives command-line options to its first job file
# only, and an included file may not add a section); stonewall in [global]
# runs them one after the other. No runtime limit: the check needs the
# whole range trimmed.
{
	cat <<JOB
[global]
ioengine=external:$ENGINE
stonewall
[fill]
rw=write
bs=1m
size=$TORUS_SIZE
verify=pattern
verify_pattern=0xa5
JOB
	cat "$J/gluster-smallfiles-delete.fio"
	cat <<JOB
[zeroes]
rw=read
bs=1m
size=$TORUS_SIZE
verify=pattern
verify_pattern=0
JOB
} >"$T/delete.fio"
if ! TORUS_RUNTIME=0 run_fio "$T/delete.fio" || grep -q 'err=[ ]*[1-9]' "$T/fio.out"; then
	cat "$T/fio.out" >&2
	grep -q 'verify failed at file zeroes' "$T/fio.out" &&
		fail "gluster-smallfiles-delete: the range it trimmed does not read back as zeroes: its trims did not reach the server"
	fail "fio failed: fio $T/delete.fio"
fi

# verify must catch a server that loses writes
start_nbdkit "$T/null.sock" null size=1G
for job in gluster-dd-1g-fsync zeroos-baseline-randrw-4k; do
	if run_fio --uri="nbd+unix:///?socket=$T/null.sock" --verify=crc32c "$J/$job.fio"; then
		fail "$job: verify passed against nbdkit null"
	fi
	grep -q 'verify: bad' "$T/fio.out" || { cat "$T/fio.out" >&2; fail "$job: no verify error"; }
done
echo "ok: GlusterFS, Lustre and ZeroOS-baseline jobs run through the embedded default"
