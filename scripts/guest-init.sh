#!/bin/busybox sh
# shellcheck shell=sh
# The guest's /init (scripts/guest copies it into the initramfs; busybox sh).
# Settings come from the control directory (torus.ctl= on the kernel command
# line, read through the host's root): cmd, modules, share<N>, nbd-disk,
# net. COMMAND's stdout and stderr go out on two virtio-serial ports, its
# exit status (or why it could not run) on a third. "torus-guest: running"
# on the console marks the point before which nothing of COMMAND has run:
# scripts/guest boots again a guest that has not reached it in time.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
console=/dev/ttyS0
status=/dev/null
log() { echo "torus-guest: $*" >"$console"; }
die() {
	log "error: $*"
	echo "error $*" >"$status"
	reboot -f
	sleep 5
}
if grep -q torus.probe /proc/cmdline; then
	log probe-ok
	reboot -f
fi
while read -r ko; do
	insmod "/lib/modules/$ko" || die "insmod $ko failed"
done </modules.order
# The ports: stdout, stderr, and the status line (the exit status, or why not).
out='' err=''
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	for p in /sys/class/virtio-ports/*; do
		[ -f "$p/name" ] || continue
		case $(cat "$p/name") in
		torus.out) out=/dev/${p##*/} ;;
		torus.err) err=/dev/${p##*/} ;;
		torus.status) status=/dev/${p##*/} ;;
		esac
	done
	[ -c "$out" ] && [ -c "$err" ] && [ -c "$status" ] && break
	sleep 0.05
done
[ -c "$status" ] || status=/dev/null
if ! [ -c "$out" ] || ! [ -c "$err" ]; then
	die "the virtio-serial ports for stdout and stderr did not appear"
fi
ctl=
read -r cmdline </proc/cmdline
for arg in $cmdline; do
	case $arg in torus.ctl=*) ctl=${arg#torus.ctl=} ;; esac
done
[ -n "$ctl" ] || die "no torus.ctl= on the kernel command line"
mkdir -p /lower /rw /newroot
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose hostroot /lower ||
	die "cannot mount the host's root over 9p"
ctl=/lower$ctl
[ -f "$ctl/cmd" ] || die "the host's $ctl/cmd is not visible over 9p"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot ||
	die "cannot mount the overlay"
moddir=$(cat "$ctl/modules")
kver=$(uname -r)
# The kernel's own module requests run /sbin/modprobe here (pid 1 never chroots).
mount --bind "/lower$moddir" "/lib/modules/$kver" || die "cannot bind the modules ($moddir)"
R=/newroot
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
mount -t tmpfs -o mode=0755 tmpfs $R/run
mkdir -p $R/run/lock $R/run/torus-guest "$R/lib/modules/$kver"
mount --bind "/lower$moddir" "$R/lib/modules/$kver"
for f in "$ctl"/share*; do
	[ -f "$f" ] || continue
	tag=${f##*/}
	dir=$(cat "$f")
	mkdir -p "$R$dir"
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=mmap "$tag" "$R$dir" ||
		die "cannot mount the share $dir"
done
# --nbd-disk: the virtio-blk disk whose serial is torus-nbd.
disk=
if [ -f "$ctl/nbd-disk" ]; then
	modprobe virtio_blk || die "cannot load virtio_blk"
	for _ in $(seq 1 200); do
		for b in /sys/block/vd*; do
			[ -f "$b/serial" ] && [ "$(cat "$b/serial")" = torus-nbd ] && disk=/dev/${b##*/}
		done
		[ -n "$disk" ] && [ -b "$R$disk" ] && break
		disk=
		sleep 0.05
	done
	[ -n "$disk" ] || die "the --nbd-disk (virtio-blk, serial torus-nbd) did not appear within 10 s"
	log "nbd disk $disk"
fi
# --net: qemu's user-mode network (slirp): 10.0.2.15/24, the host at 10.0.2.2.
if [ -f "$ctl/net" ]; then
	modprobe virtio_net || die "cannot load virtio_net"
	nic=
	for _ in $(seq 1 200); do
		for n in /sys/class/net/*; do
			[ "${n##*/}" != lo ] && [ -f "$n/address" ] && nic=${n##*/}
		done
		[ -n "$nic" ] && break
		sleep 0.05
	done
	[ -n "$nic" ] || die "the --net interface (virtio-net) did not appear within 10 s"
	{ ip link set "$nic" up && ip addr add 10.0.2.15/24 dev "$nic" &&
		ip route add default via 10.0.2.2; } || die "cannot configure $nic"
	echo "nameserver 10.0.2.3" >$R/etc/resolv.conf 2>/dev/null
	log "net $nic 10.0.2.15"
fi
cp "$ctl/cmd" $R/run/torus-guest/cmd
hostname torus-guest
ip link set lo up
log running
chroot $R /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM=dumb ${disk:+TORUS_GUEST_DISK=$disk} /bin/sh /run/torus-guest/cmd </dev/null >"$out" 2>"$err"
echo "status $?" >"$status"
reboot -f
sleep 5
