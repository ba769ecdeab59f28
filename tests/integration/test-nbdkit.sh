#!/bin/bash
# Description: read, write, trim and flush workloads with verify=crc32c
# against nbdkit memory, over a Unix socket and over TCP, with conns 1 and 4,
# with simple and structured replies. Trims are checked on the data and on
# nbdkit's log of requests, and so is that conns=4 spreads I/O over all four
# connections.
. "$TORUS_SRC/tests/lib.sh"
require fio nbdkit

sock=$T/nbd.sock
start_nbdkit "$sock" memory 256M
uri="nbd+unix:///?socket=$sock"

common=(--name=v --size=64m --verify=crc32c --verify_fatal=1 --do_verify=1)
# A second nbdkit memory that logs every request (the log filter): each
# check below reads the requests its own fio run sent.
start_nbdkit "$T/log.sock" --filter=log memory 64M logfile="$T/requests.log"
log_uri="nbd+unix:///?socket=$T/log.sock"
# log_mark: the log's length now; log_since MARK: its requests after it,
# one line each: CONNECTION OP OFFSET COUNT (numbers in decimal).
log_mark() {
	wc -l <"$T/requests.log"
}
log_since() {
	tail -n +$(($1 + 1)) "$T/requests.log" | awk '
		# mawk reads no hex
		function num(h,   i, v) {
			v = 0
			for (i = 3; i <= length(h); i++)
				v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
			return v
		}
		# requests, not their replies ("...Trim id=1 return=0")
		$3 ~ /^connection=/ && $4 !~ /^\.\.\./ && $5 ~ /^id=/ {
			split($3, c, "="); split($6, o, "="); split($7, n, "=")
			printf "%s %s %.0f %.0f\n", c[2], $4, num(o[2]), num(n[2])
		}'
}
# read_back PATTERN: the first 16 MiB of the logged export read through the
# engine, every byte PATTERN.
read_back() {
	expect_fio_ok --name=r --uri="$log_uri" --size=16m --rw=read --bs=64k --iodepth=16 \
		--verify=pattern --verify_pattern="$1" --verify_only=1
}

# conns=4 spreads the I/O: each of the four connections carries at least
# a tenth of the requests (round robin gives each a quarter).
mark=$(log_mark)
expect_fio_ok "${common[@]}" --size=16m --uri="$log_uri" --conns=4 --rw=randrw --bs=4k --iodepth=32
log_since "$mark" | awk '$2 == "Read" || $2 == "Write" { print $1 }' | sort | uniq -c >"$T/conns"
awk '{ total += $1; n++; if (min == "" || $1 < min) min = $1 }
     END { exit !(n == 4 && min * 10 >= total) }' "$T/conns" ||
	fail "conns=4: reads and writes did not go over four connections, a tenth or more each (requests, connection): $(cat "$T/conns")"
echo "conns=4: requests per connection:" $(awk '{ print $2 ": " $1 }' "$T/conns")

for conns in 1 4; do
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=randwrite --bs=4k --iodepth=32
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=randrw --bs=64k --iodepth=64
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=write --bs=1m --iodepth=8 --fsync=4 --end_fsync=1
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=randwrite --bs=8k --iodepth=16 --fdatasync=8
	expect_fio_ok "${common[@]}" --uri="$uri" --conns=$conns --rw=randwrite --bs=4k --iodepth=16 --structured_replies=1
done

# randtrim over 16 MiB of 0xab, 4 KiB at a time: every block trimmed once,
# and all of it reads back as zeroes (nbdkit memory zeroes what is trimmed).
expect_fio_ok --name=w --uri="$log_uri" --size=16m --rw=write --bs=64k --iodepth=16 --buffer_pattern=0xab
mark=$(log_mark)
expect_fio_ok --name=t --uri="$log_uri" --size=16m --rw=randtrim --bs=4k --iodepth=16
log_since "$mark" >"$T/randtrim.req"
awk -v end=$((16 << 20)) '
	$2 == "Trim" { if ($4 != 4096 || $3 % 4096 || $3 >= end || seen[$3]++) bad++; n++ }
	$2 != "Trim" && $2 != "Flush" { other++ }
	END { exit !(n == end / 4096 && !bad && !other) }' "$T/randtrim.req" ||
	fail "randtrim: the server did not get each 4 KiB block of 16 MiB trimmed once, and nothing else: $(awk '{ print $2 }' "$T/randtrim.req" | sort | uniq -c)"
read_back 0x00

# trimwrite over 16 MiB of 0xab: each 64 KiB block trimmed, then written
# (serialize_overlap: the write waits for its trim), so it all reads back
# as the new 0xcd, neither the old data nor zeroes.
expect_fio_ok --name=w --uri="$log_uri" --size=16m --rw=write --bs=64k --iodepth=16 --buffer_pattern=0xab
mark=$(log_mark)
expect_fio_ok --name=t --uri="$log_uri" --size=16m --rw=trimwrite --bs=64k --iodepth=16 \
	--serialize_overlap=1 --buffer_pattern=0xcd
log_since "$mark" >"$T/trimwrite.req"
awk -v end=$((16 << 20)) '
	$4 != 65536 || $3 % 65536 || $3 >= end { bad++ }
	$2 == "Trim" { if (trimmed[$3]++) bad++; trims++ }
	$2 == "Write" { if (!trimmed[$3] || written[$3]++) bad++; writes++ }
	END { exit !(trims == end / 65536 && writes == trims && !bad) }' "$T/trimwrite.req" ||
	fail "trimwrite: the server did not get each 64 KiB block of 16 MiB trimmed once and then written once: $(awk '{ print $2 }' "$T/trimwrite.req" | sort | uniq -c)"
read_back 0xcd

# trim after write, then read: the trimmed range reads back as zeroes.
expect_fio_ok --name=w --uri="$uri" --size=32m --rw=write --bs=64k --iodepth=16 --buffer_pattern=0xab
expect_fio_ok --name=t --uri="$uri" --size=32m --rw=trim --bs=64k --iodepth=16
expect_fio_ok --name=r --uri="$uri" --size=32m --rw=read --bs=64k --iodepth=16 --verify=pattern --verify_pattern=0x00 --verify_only=1

# FUA on every write (nbdkit memory advertises it).
expect_fio_ok "${common[@]}" --uri="$uri" --rw=randwrite --bs=4k --iodepth=16 --fua=1

# TCP on loopback.
port=$(free_port)
start_bg nbdkit --foreground --exit-with-parent -i 127.0.0.1 -p "$port" memory 128M
wait_port "$port"
expect_fio_ok "${common[@]}" --uri="nbd://127.0.0.1:$port/" --rw=randrw --bs=16k --iodepth=32 --conns=4
echo "PASS"
