#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Description: the patch series of upstream/fio/ proved on the fio that runs
# this suite, without building fio. scripts/fio-patched.sh --engine-only
# builds fio's nbd engine with the series (engines/nbd.c alone, as fio builds
# a dynamic engine) against FIO_SRC, the configured tree this build's engine
# is compiled against; fio-nbd-engine.py --check then runs the hostile table
# with it loaded into that tree's unpatched fio ($FIO): no crash, hang, fake
# read or accepted violation. The normal pass runs it under Debian 12's fio
# 3.33, the newer-fio pass under its fio (3.41).
#
#   test-fio-nbd-so.sh FIO_SRC
#
# What the .so cannot carry, the patches to fio's core (0005, 0006 and
# upstream/fio/<version>/), is proved by the full build
# (docs/fio-nbd-engine.md, "In CI").
. "$TORUS_SRC/tests/lib.sh"
fio_src=
arg_path fio_src 1 "the configured fio tree (meson's fio_src)"
require "$FIO" python3 make cc git pkg-config
pkg-config --exists libnbd || skip "libnbd's development files are missing (scripts/deps.sh installs libnbd-dev)"

version=$(sed -n 's/^FIO_VERSION = //p' "$fio_src/FIO-VERSION-FILE")
[ "$("$FIO" --version)" = "$version" ] ||
	fail "$FIO is $("$FIO" --version), but $fio_src is $version: the engine must be built against the tree of the very fio that loads it (FIO=, -Dfio_src=)"

"$TORUS_SRC/scripts/fio-patched.sh" --engine-only --src "$fio_src" "$T/tree" >"$T/build.log" 2>&1 ||
	{ cat "$T/build.log" >&2; fail "scripts/fio-patched.sh --engine-only failed (above)"; }

# The binary is stock fio, whose core (not the series) has two bugs an
# offloaded verify job can meet when fio keeps its verify state: 3.41
# aborts ("inflight_idx already set", upstream/fio/3.41/0007) and 3.33's
# ring of write offsets overruns (3.33/0008). Neither is the nbd engine's,
# and verify_state_save=0 keeps every case clear of both, so every case
# runs on both versions. The full builds show those two patches.
python3 "$TORUS_SRC/tests/hostile/fio-nbd-engine.py" --fio "$FIO" \
	--engine-so "$T/tree/engines/fio-nbd.so" --jobs 8 --offload-tries 3 --check \
	--fio-opt=--verify_state_save=0 ||
	fail "the hostile table of $version with the series' nbd engine (above)"
