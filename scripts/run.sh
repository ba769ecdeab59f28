#!/bin/bash
# The main job, from nothing: install what building the engine and running
# it needs (scripts/deps.sh --for run: fio, the build tools, liburing,
# nbdkit, what fio's source must be configured with), build the engine
# alone, then run a job file through libtorus.so (default jobs/randrw.fio,
# the torus document's fio test) and print fio's result. With no --uri the
# engine starts its embedded default server (nbdkit memory sized to the
# job). scripts/test.sh installs and builds the rest.
#
#   scripts/run.sh                                  jobs/randrw.fio, embedded server
#   scripts/run.sh jobs/X.fio [--uri=nbd://host/export] [fio options...]
#   scripts/run.sh --help                           this text
set -euo pipefail
# -h, --help: the comment above, before anything is installed or built
case "${1:-}" in
-h|--help)
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	exit 0
	;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

scripts/build.sh --for run
job=jobs/randrw.fio
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	job=$1
	shift
fi
set -x
exec fio --ioengine=external:./libtorus.so "$@" "$job"
