#!/bin/bash
# Description: the engine on two load generators at once, driven by fio's
# client/server mode, against one NBD server across a network. Built from
# network namespaces on this machine:
#
#   ctl (fio --client, 192.0.2.1 on bridge brc)
#    |  control network 192.0.2.0/24: fio's own protocol, port 8765
#   h1 (fio --server, 192.0.2.11 / 198.51.100.11)
#   h2 (fio --server, 192.0.2.12 / 198.51.100.12)
#    |  storage network 198.51.100.0/24: NBD, port 10809
#   nbd (nbdkit memory, 198.51.100.1 on bridge brs)
#
# Each host writes and verifies its own half of the export (two jobs each,
# offset_increment). The client has no route to the storage network, so
# every NBD byte goes through the hosts. All addresses are TEST-NET ranges
# that exist only inside these namespaces; deleting the namespaces removes
# the links and bridges with them. Skips unless root and `ip netns add`
# works.
. "$TORUS_SRC/tests/lib.sh"
require fio nbdkit ip ss timeout python3
[ -f "$ENGINE" ] || skip "$ENGINE is not built"
[ "$(id -u)" = 0 ] || skip "network namespaces need root"

P=tmh$$
NSES=()

# Stop our servers (SIGTERM, up to 2 s), kill whatever else still runs in
# our namespaces (fio's per-connection children), then delete the
# namespaces, which takes their links and bridges with them.
net_cleanup() {
	local ns pid i alive
	for pid in "${_bg_pids[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for ((i = 0; i < 40; i++)); do
		alive=0
		for pid in "${_bg_pids[@]}"; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done
		[ $alive = 0 ] && break
		sleep 0.05
	done
	for ns in "${NSES[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null
		done
	done
	for pid in "${_bg_pids[@]}"; do
		wait "$pid" 2>/dev/null
	done
	for ns in "${NSES[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
}
trap 'net_cleanup; cleanup' EXIT
# Without these, bash would die of SIGTERM or SIGINT without the EXIT trap.
trap 'exit 143' TERM
trap 'exit 130' INT

# add_ns NAME: a namespace with loopback up.
add_ns() {
	local err
	err=$(ip netns add "$P-$1" 2>&1) ||
		skip "cannot create a network namespace here: ${err:-ip netns add failed}"
	NSES+=("$P-$1")
	ip -n "$P-$1" link set lo up || fail "lo up in $P-$1"
}

# link HOST IFNAME BRIDGE_NS BRIDGE ADDR: a veth pair from HOST (IFNAME with
# ADDR/24) to a port on BRIDGE in BRIDGE_NS; both ends made inside the
# namespaces, never in the test's own.
link() {
	local host=$1 ifname=$2 bns=$3 br=$4 addr=$5 err
	err=$(ip link add "$ifname" netns "$P-$host" type veth \
		peer name "$ifname-$host" netns "$P-$bns" 2>&1) ||
		skip "cannot create veth pairs here: $err"
	ip -n "$P-$bns" link set "$ifname-$host" master "$br" up &&
		ip -n "$P-$host" addr add "$addr/24" dev "$ifname" &&
		ip -n "$P-$host" link set "$ifname" up ||
		fail "setting up $ifname in $P-$host"
}

# bridge NS NAME ADDR: a bridge in NS, holding NS's address on that network.
bridge() {
	local err
	err=$(ip -n "$P-$1" link add "$2" type bridge 2>&1) ||
		skip "cannot create a bridge here: $err"
	ip -n "$P-$1" addr add "$3/24" dev "$2" &&
		ip -n "$P-$1" link set "$2" up || fail "setting up bridge $2"
}

# wait_listen NS PORT: up to 10 s for a TCP listener on PORT inside NS.
wait_listen() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ -n "$(ip netns exec "$P-$1" ss -Hltn "sport = :$2")" ] && return 0
		sleep 0.05
	done
	fail "nothing listens on port $2 in $P-$1 within 10 s"
}

for ns in nbd ctl h1 h2; do
	add_ns $ns
done
bridge nbd brs 198.51.100.1
bridge ctl brc 192.0.2.1
link h1 st nbd brs 198.51.100.11
link h2 st nbd brs 198.51.100.12
link h1 ct ctl brc 192.0.2.11
link h2 ct ctl brc 192.0.2.12

start_bg ip netns exec "$P-nbd" nbdkit --foreground --exit-with-parent \
	-P "$T/nbdkit.pid" -i 198.51.100.1 -p 10809 memory 256M
for h in h1 h2; do
	start_bg ip netns exec "$P-$h" "$FIO" --server="ip:192.0.2.1${h#h},8765" \
		>"$T/server-$h.log" 2>&1
done
wait_listen nbd 10809
wait_listen h1 8765
wait_listen h2 8765

# The control network must not reach the storage network.
if ip netns exec "$P-ctl" timeout 5 bash -c 'exec 3<>/dev/tcp/198.51.100.1/10809' 2>/dev/null; then
	fail "the client namespace reaches the NBD server directly"
fi

# One job file per host: two jobs of 32 MiB each in the host's 64 MiB.
for h in 1 2; do
	cat >"$T/h$h.fio" <<EOF
[global]
ioengine=external:$ENGINE
uri=nbd://198.51.100.1/
conns=2
rw=randwrite
bs=16k
iodepth=16
size=32m
offset=$(((h - 1) * 64))m
offset_increment=32m
numjobs=2
verify=crc32c
verify_fatal=1
do_verify=1

[host$h]
EOF
done

rc=0
timeout 120 ip netns exec "$P-ctl" "$FIO" --output-format=json \
	--client=192.0.2.11 "$T/h1.fio" --client=192.0.2.12 "$T/h2.fio" \
	>"$T/client.json" 2>"$T/client.err" || rc=$?
if [ $rc -ne 0 ]; then
	cat "$T/client.json" "$T/client.err" "$T"/server-*.log >&2
	fail "fio --client exited $rc"
fi

python3 - "$T/client.json" <<'EOF' || { cat "$T/client.err" >&2; fail "the client's report (above)"; }
import json, sys
s = open(sys.argv[1]).read()
stats = json.loads(s[s.index('{'):])['client_stats']
jobs = [j for j in stats if j['jobname'] != 'All clients']
bad = []
for j in stats:
    if j['error'] != 0:
        bad.append(f"{j['jobname']} on {j.get('hostname')}: err={j['error']}")
for j in jobs:
    w, r = j['write']['io_bytes'], j['read']['io_bytes']
    print(f"{j['hostname']}: job {j['jobname']}: err={j['error']}, "
          f"wrote {w >> 20} MiB, verified {r >> 20} MiB")
    # each job writes its 32 MiB once and reads all of it back to verify
    if w != 32 << 20 or r != 32 << 20:
        bad.append(f"{j['jobname']} on {j['hostname']}: wrote {w}, read {r}")
seen = sorted((j['jobname'], j['hostname']) for j in jobs)
want = [('host1', '192.0.2.11')] * 2 + [('host2', '192.0.2.12')] * 2
if seen != want:
    bad.append(f"jobs seen {seen}, wanted {want}")
if bad:
    sys.exit("\n".join(bad))
EOF

# Each host's data crossed its own link: the NBD server's bridge port for
# h1 received h1's 64 MiB of writes and sent back its 64 MiB of reads.
for h in h1 h2; do
	ip -n "$P-nbd" -s -j link show "st-$h" >"$T/link-$h.json" ||
		fail "no statistics for st-$h"
	python3 - "$T/link-$h.json" "$h" <<'EOF' || fail "traffic on the link to $h"
import json, sys
s = json.load(open(sys.argv[1]))[0]['stats64']
rx, tx = s['rx']['bytes'], s['tx']['bytes']
print(f"{sys.argv[2]} <-> nbd link: {rx >> 20} MiB to the server, {tx >> 20} MiB back")
if rx < 64 << 20 or tx < 64 << 20:
    sys.exit(f"expected at least 64 MiB each way")
EOF
done
echo "PASS"
