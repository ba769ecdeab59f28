#!/bin/bash
# Benchmark the NBD shim (build/shims/nbd/nbd-shim) through the engine:
# short for `scripts/bench.sh --sections shims`, i.e. shim_std_qd64,
# shim_probe and shim_docs (see `scripts/bench.sh --help`). Takes bench.sh's
# options; a --sections given here replaces the default.
exec "$(dirname "${BASH_SOURCE[0]}")/bench.sh" --sections shims "$@"
