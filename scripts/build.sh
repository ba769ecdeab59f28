#!/bin/bash
# Install what is missing, fetch and configure the matching fio source, and
# build everything. Leaves ./libtorus.so (a link to build/engines/libtorus.so)
# so that `fio --ioengine=external:./libtorus.so ...` works from the top.
#
#   scripts/build.sh                  build against the installed fio
#   FIO_SRC=/path/to/fio scripts/build.sh   against your own configured tree
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

scripts/deps.sh
if [ -n "${FIO_SRC:-}" ]; then
	fio_src=$FIO_SRC
else
	scripts/fio-source.sh "$top/.deps/fio"
	fio_src=$top/.deps/fio
fi

if [ ! -f build/build.ninja ]; then
	meson setup build -Dfio_src="$fio_src" >/dev/null
else
	meson configure build -Dfio_src="$fio_src" >/dev/null
fi
ninja -C build >/dev/null
ln -sfn build/engines/libtorus.so libtorus.so
echo "build: ./libtorus.so -> build/engines/libtorus.so (fio source: $fio_src)"
