#!/bin/bash
# The whole test suite, from nothing: install, build, then meson test
# (unit, integration, shims, jobs). Extra arguments go to meson test,
# e.g. scripts/test.sh --suite unit
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

scripts/build.sh
exec meson test -C build --print-errorlogs "$@"
