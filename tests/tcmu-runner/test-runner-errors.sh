#!/bin/bash
# The tcmu-runner store's errors, word for word: a missing plugin (the path
# searched, the package), an image the handler cannot open (the file and
# the handler's own reason), a size or block size qcow refuses, a plugin
# that needs a function no tcmu-runner 1.5.4 provides (dlerror), one that
# registers nothing, one built for another struct tcmur_handler.
#
#   test-runner-errors.sh STORE_IO TEST_PLUGIN_DIR
. "${TORUS_SRC:-$(dirname "$0")/../..}/tests/lib.sh"
arg_path store_io 1 "the store-io program"

arg_path test_plugins 2 "the directory of the test plugins"
plugins=/usr/lib/$(cc -print-multiarch)/tcmu-runner
require qemu-img
[ -f "$plugins/handler_qcow.so" ] || skip "no $plugins/handler_qcow.so (the Debian package tcmu-runner)"

# expect 'MESSAGE' ARGS...: store-io fails with exactly that line
expect() {
	local want=$1 out
	shift
	if out=$("$store_io" "$@" 2>&1); then
		fail "store-io $* succeeded; expected: $want"
	fi
	out=$(grep '^store-io: ' <<<"$out")
	if [ "$out" != "store-io: $want" ]; then
		echo "--- expected: store-io: $want" >&2
		echo "--- actual:   $out" >&2
		fail "store-io $*: another message"
	fi
	echo "ok: $want"
}

mkdir "$T/empty"
expect "no tcmu-runner handler 'qcow': $T/empty/handler_qcow.so does not exist (install the Debian package tcmu-runner, or give --plugin-dir)" \
	-d "$T/empty" "runner:qcow:$T/a.qcow2"
expect "no tcmu-runner handler 'nope': $plugins/handler_nope.so does not exist ($plugins has: $(cd "$plugins" && ls handler_*.so | sed 's/^handler_//; s/\.so$//' | sort -u | paste -sd, | sed 's/,/, /g'))" \
	"runner:nope:$T/a.qcow2"

expect "tcmu-runner qcow/$T/none.qcow2: no size given, and $T/none.qcow2 cannot be opened to take one: No such file or directory" \
	"runner:qcow:$T/none.qcow2"
expect "tcmu-runner qcow/$T/none.qcow2 ($plugins/handler_qcow.so): the handler could not open '$T/none.qcow2': faccessat failed dirfd -100, pathname $T/none.qcow2, errno 2; image format not recognized: $T/none.qcow2" \
	-s 67108864 "runner:qcow:$T/none.qcow2"
qemu-img create -q -f qcow2 "$T/a.qcow2" 64M
expect "tcmu-runner qcow/$T/a.qcow2 ($plugins/handler_qcow.so): the handler could not open '$T/a.qcow2': size misconfigured, TCMU says 1048576 but image says 67108864; image open failed: $T/a.qcow2" \
	-s 1048576 "runner:qcow:$T/a.qcow2"
expect "tcmu-runner qcow/$T/a.qcow2 ($plugins/handler_qcow.so): the handler could not open '$T/a.qcow2': block_size misconfigured, TCMU says 4096 but qcow only supports 512; image open failed: $T/a.qcow2" \
	-b 4096 "runner:qcow:$T/a.qcow2"
# a raw file of another size than the device's is no image qcow knows
head -c 1048576 /dev/urandom >"$T/junk"
expect "tcmu-runner qcow/$T/junk ($plugins/handler_qcow.so): the handler could not open '$T/junk': image format not recognized: $T/junk" \
	-s 2097152 "runner:qcow:$T/junk"

expect "cannot load a tcmu-runner plugin: $test_plugins/handler_nosym.so: undefined symbol: tcmu_from_another_version (the plugin needs a function this host does not provide: not a tcmu-runner $(dpkg-query -W -f='${Version}' tcmu-runner) handler?)" \
	-d "$test_plugins" -s 4096 runner:nosym:/x
expect "$test_plugins/handler_noreg.so: handler_init registered no handler" \
	-d "$test_plugins" -s 4096 runner:noreg:/x
expect "$test_plugins/handler_badabi.so: plugin ABI mismatch: name is not a string of the plugin's (this host was built with tcmu-runner $(dpkg-query -W -f='${Version}' tcmu-runner)'s headers: rebuild after scripts/tcmu-runner-source.sh)" \
	-d "$test_plugins" -s 4096 runner:badabi:/x
expect "no tcmu-runner handler plugin at $T/handler_none.so" \
	-s 4096 "runner:$T/handler_none.so:/x"
