"""scripts/guest: run one command inside a qemu guest that boots Debian's own kernel.

    scripts/guest [-v] [--mem MB] [--cpus N] [--timeout S] [--boot-timeout S]
                  [--share DIR]...
                  [--env NAME[=VALUE]]... [--nbd-disk URI] [--net]
                  [--accel kvm|tcg] [--] COMMAND...

The guest is for what this machine's kernel lacks (nbd.ko, TCMU, UIO,
configfs): it boots the linux-image-6.1.0-N-amd64 that Debian's
linux-image-amd64 currently depends on, with a busybox initramfs that mounts
the host's root read-only over 9p under a tmpfs overlay (so the guest can
write, and the host never sees it), chroots into it and runs COMMAND as root
in the current directory. The guest's fresh /proc, /sys, /dev and /run are
its own; /tmp and /var/log are the host's as seen through the overlay
(writable, the writes stay in the guest); /lib/modules/$(uname -r) holds the
guest kernel's modules. --share DIR shares a host directory read-write at the
same path, for results. Environment variables named TORUS_* and FIO are
passed in, with PATH, HOME=/root and whatever --env names.

--nbd-disk URI gives the guest a virtio-blk disk backed by qemu's own NBD
client, connected (from the host) to nbd://HOST[:PORT]/EXPORT or
nbd+unix:///EXPORT?socket=PATH, raw, cache=none; COMMAND finds it in
TORUS_GUEST_DISK (/dev/vda). --net adds qemu's user-mode network: the guest
is 10.0.2.15 and reaches the host's 127.0.0.1 as 10.0.2.2.

COMMAND's stdout and stderr come back on this script's stdout and stderr (two
virtio-serial ports; the kernel's console goes elsewhere, to stderr with -v),
and its exit status is this script's. Exit statuses of the script's own:
124 the timeout expired (qemu is killed), 125 the guest or this script failed
before COMMAND ran (the message says why).

A boot that has not started COMMAND within --boot-timeout (default 120 s,
or TORUS_GUEST_BOOT_TIMEOUT) is killed and booted once more: nothing of
COMMAND has run before /init says so. A second such hang is exit 125, with
the console's last lines (the kernel's messages are kept even without -v).

The kernel and initramfs are cached under <repo>/.deps/guest (remove it to
fetch the kernel again). KVM is used when /dev/kvm really boots a guest (a
boot probe, answer cached), TCG otherwise; --accel or TORUS_GUEST_ACCEL
chooses. Progress and the choice go to stderr. TORUS_GUEST_APPEND adds
kernel parameters (e.g. initcall_debug ignore_loglevel, with -v).
"""

import argparse
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

REPO = Path(__file__).resolve().parent.parent
# The initramfs's /init (busybox sh), copied in as it is
INIT_FILE = Path(__file__).resolve().parent / "guest-init.sh"
CACHE = Path(os.environ.get("TORUS_GUEST_CACHE", REPO / ".deps" / "guest"))
STAMP = "torus-stamp"

EXIT_TIMEOUT = 124
EXIT_GUEST = 125

# Modules the initramfs loads before it can mount the host's root; each
# one's dependencies are found in modules.dep and loaded first.
BOOT_MODULES = ["virtio_pci", "virtio_console", "9pnet_virtio", "9p", "overlay"]

PROBE_SECONDS = 8

# How long a boot may take to start the command, and how many boots are
# tried. A boot under TCG on a loaded 2-core machine takes well under a
# tenth of the default (docs/guest.md); a hang, seen in CI, lasts forever.
# Three boots: guest-helper's case of one hung boot left a real hang (CI,
# 2026-11-29, stuck at "Loading compiled-in X.509 certificates") no retry.
BOOT_TIMEOUT = 120
BOOT_ATTEMPTS = 3
RUNNING = b"torus-guest: running"
BOOT_MARKS = (b"Linux version", b"Run /init")


class GuestError(Exception):
    """A failure of the helper itself (exit 125), with a message naming the fix."""


def say(msg):
    print(f"guest: {msg}", file=sys.stderr, flush=True)


def run_quiet(cmd, what, fix, **kw):
    """Run cmd; on failure raise GuestError with its output's tail and the fix."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        raise GuestError(f"{what} failed (exit {proc.returncode}):\n{tail}\n{fix}")
    return proc.stdout


class Lock:
    """An flock on CACHE/lock: tests run scripts/guest in parallel."""

    def __enter__(self):
        CACHE.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(CACHE / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


# --- the kernel ---------------------------------------------------------------


def debian_deb_entries():
    """The enabled Debian 'deb' entries of this machine's apt sources.

    Returns (text, suffix): deb822 stanzas ('.sources') or one-line entries
    ('.list'). The system's configuration is read, never changed.
    """
    stanzas, lines = [], []
    for f in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for stanza in re.split(r"\n\s*\n", f.read_text()):
            fields = {}
            for line in stanza.splitlines():
                m = re.match(r"^([A-Za-z-]+):\s*(.*)$", line)
                if m:
                    fields[m.group(1).lower()] = m.group(2)
            if "deb" not in fields.get("types", "").split():
                continue
            if fields.get("enabled", "yes").strip().lower() == "no":
                continue
            if "debian.org" not in fields.get("uris", "") and \
               "debian-archive-keyring" not in fields.get("signed-by", ""):
                continue
            stanzas.append(re.sub(r"(?im)^types:.*$", "Types: deb", stanza.strip()))
    for f in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*.list"))]:
        if not f.is_file():
            continue
        for line in f.read_text().splitlines():
            words = line.split()
            if words and words[0] == "deb" and ("debian.org" in line or "debian-archive-keyring" in line):
                lines.append(line.strip())
    if stanzas and not lines:
        return "\n\n".join(stanzas) + "\n", ".sources"
    if lines and not stanzas:
        return "\n".join(lines) + "\n", ".list"
    if stanzas and lines:
        # apt takes one format per file: convert the one-line entries.
        for line in lines:
            m = re.match(r"deb\s+(\[([^]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$", line)
            if not m:
                continue
            stanza = f"Types: deb\nURIs: {m.group(3)}\nSuites: {m.group(4)}\n"
            if m.group(5):
                stanza += f"Components: {m.group(5)}\n"
            for opt in (m.group(2) or "").split():
                k, _, v = opt.partition("=")
                if k == "signed-by":
                    stanza += f"Signed-By: {v}\n"
            stanzas.append(stanza.strip())
        return "\n\n".join(stanzas) + "\n", ".sources"
    codename = ""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            codename = line.split("=", 1)[1].strip('"')
    if not codename:
        raise GuestError("no Debian apt source found and no VERSION_CODENAME in /etc/os-release")
    return (f"deb http://deb.debian.org/debian {codename} main\n"
            f"deb http://deb.debian.org/debian-security {codename}-security main\n"), ".list"


def fetch_kernel():
    """Download, extract and depmod the current Debian kernel into CACHE/kernel.

    Returns (version, kernel_dir). Idempotent: a stamp names the version.
    """
    kdir = CACHE / "kernel"
    stamp = kdir / STAMP
    if stamp.is_file():
        version = stamp.read_text().split()[1]
        if (kdir / "boot" / f"vmlinuz-{version}").is_file():
            return version, kdir
    for tool, pkg in (("apt-get", "apt"), ("apt-cache", "apt"), ("dpkg-deb", "dpkg")):
        if not shutil.which(tool):
            raise GuestError(f"{tool} not found: this helper fetches Debian's kernel with apt "
                             f"(install {pkg}; the guest needs a Debian host)")

    say(f"fetching Debian's kernel into {kdir} (once)")
    with tempfile.TemporaryDirectory(prefix="torus-guest-apt.") as tmp:
        tmp = Path(tmp)
        entries, suffix = debian_deb_entries()
        srclist = tmp / f"src{suffix}"
        srclist.write_text(entries)
        for d in ("lists/partial", "cache/archives/partial", "deb"):
            (tmp / d).mkdir(parents=True)
        apt = ["-q", "-o", f"Dir::Etc::SourceList={srclist}", "-o", "Dir::Etc::SourceParts=/dev/null",
               "-o", f"Dir::State::Lists={tmp}/lists", "-o", f"Dir::Cache={tmp}/cache"]
        if os.geteuid() == 0:
            apt += ["-o", "APT::Sandbox::User=root"]
        fix = ("check the network and the Debian entries in /etc/apt/sources.list(.d) "
               f"(used here: {srclist.name}:\n{entries.strip()})")
        run_quiet(["apt-get", *apt, "update"], "apt-get update (private lists)", fix)
        deps = run_quiet(["apt-cache", *apt, "depends", "linux-image-amd64"],
                         "apt-cache depends linux-image-amd64", fix)
        names = re.findall(r"Depends:\s*(linux-image-[0-9][^\s]*-amd64)\s*$", deps, re.M)
        if not names:
            raise GuestError(f"linux-image-amd64 depends on no linux-image-<version>-amd64:\n{deps}")
        pkg = names[0]
        run_quiet(["apt-get", *apt, "download", pkg], f"apt-get download {pkg}",
                  fix + f"\n(is {pkg} still in the archive? remove {CACHE} and retry after apt-get update)",
                  cwd=tmp / "deb")
        debs = list((tmp / "deb").glob("*.deb"))
        if len(debs) != 1:
            raise GuestError(f"apt-get download {pkg} left {len(debs)} .deb files in {tmp / 'deb'}")
        version = pkg[len("linux-image-"):]
        part = CACHE / "kernel.partial"
        shutil.rmtree(part, ignore_errors=True)
        say(f"extracting {debs[0].name}")
        run_quiet(["dpkg-deb", "-x", str(debs[0]), str(part)], f"dpkg-deb -x {debs[0].name}",
                  f"is there room in {CACHE}? (about 400 MB)")
    if not (part / "boot" / f"vmlinuz-{version}").is_file():
        raise GuestError(f"{pkg} has no boot/vmlinuz-{version}")
    depmod(part, version)
    shutil.rmtree(kdir, ignore_errors=True)
    part.rename(kdir)
    (kdir / STAMP).write_text(f"kernel {version} {pkg}\n")
    return version, kdir


def kernel_image(version, kdir):
    """The image qemu boots: an uncompressed vmlinux with a PVH entry when the
    bzImage's payload can be unpacked (cached beside it), else the bzImage.

    PVH starts the kernel at its 32-bit entry: no real-mode setup and no
    decompressor, which under TCG take longer than the kernel's own boot.
    """
    bz = kdir / "boot" / f"vmlinuz-{version}"
    elf = kdir / "boot" / f"vmlinux-{version}"
    if elf.is_file():
        return elf
    data = bz.read_bytes()
    image = None
    xz = data.find(b"\xfd7zXZ\x00")
    gz = data.find(b"\x1f\x8b\x08\x00")
    try:
        if xz >= 0:
            import lzma
            image = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[xz:])
        elif gz >= 0:
            import zlib
            image = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[gz:])
    except Exception:  # an unexpected payload: boot the bzImage
        image = None
    if not image or not has_pvh_note(image):
        return bz
    part = elf.with_suffix(".partial")
    part.write_bytes(image)
    part.rename(elf)
    return elf


def has_pvh_note(image):
    """Whether an ELF image carries XEN_ELFNOTE_PHYS32_ENTRY (18), qemu's PVH entry."""
    if image[:4] != b"\x7fELF" or image[4] != 2:
        return False
    phoff, = struct.unpack_from("<Q", image, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", image, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", image, phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", image, pos)
            name = image[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == 18:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def depmod(root, version):
    """modules.dep for the extracted tree: kmod's depmod when present, else busybox's."""
    if shutil.which("depmod"):
        cmd = ["depmod", "-b", str(root), version]
    else:
        cmd = [busybox(), "depmod", "-b", str(root), version]
    say(f"depmod ({' '.join(cmd[:2]) if cmd[0] != 'depmod' else 'depmod'})")
    run_quiet(cmd, "depmod", "install kmod or busybox-static (scripts/deps.sh)")


def busybox():
    """The static busybox (the initramfs has no libc)."""
    path = shutil.which("busybox") or "/bin/busybox"
    if not os.path.isfile(path):
        raise GuestError("busybox not found: run scripts/deps.sh (installs busybox-static)")
    with open(path, "rb") as f:
        elf = f.read(1 << 16)
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise GuestError(f"{path} is not a 64-bit ELF binary")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, = struct.unpack_from("<I", elf, phoff + i * phentsize)
        if p_type == 3:  # PT_INTERP: dynamically linked
            raise GuestError(f"{path} is dynamically linked: install busybox-static "
                             "(scripts/deps.sh) in place of busybox")
    return path


def module_order(moddir, names):
    """The .ko paths (relative to moddir) to insmod for names, dependencies first."""
    deps = {}
    by_name = {}
    for line in (moddir / "modules.dep").read_text().splitlines():
        ko, _, rest = line.partition(":")
        deps[ko] = rest.split()
        by_name[re.sub(r"\.ko(\.\w+)?$", "", os.path.basename(ko)).replace("-", "_")] = ko
    order, seen = [], set()

    def visit(ko):
        if ko in seen:
            return
        seen.add(ko)
        for d in deps.get(ko, []):
            visit(d)
        order.append(ko)

    builtin = (moddir / "modules.builtin").read_text()
    for name in names:
        ko = by_name.get(name.replace("-", "_"))
        if ko is None:
            if re.search(rf"/{re.escape(name)}\.ko", builtin):
                continue
            raise GuestError(f"the guest kernel has no module {name} ({moddir})")
        visit(ko)
    return order


def initramfs_key(init, version, order, busybox_path, size, mtime_ns):
    """The initramfs's cache key: whatever goes into it (/init's bytes, the
    kernel version, the modules, busybox) changes it."""
    h = hashlib.sha256(init)
    h.update("\n".join([version, *order, busybox_path, str(size), str(mtime_ns)]).encode())
    return h.hexdigest()[:16]


def build_initramfs(version, kdir):
    """CACHE/initramfs-<hash>.cpio: busybox, /init, the boot modules."""
    moddir = kdir / "lib" / "modules" / version
    order = module_order(moddir, BOOT_MODULES)
    bb = busybox()
    st = os.stat(bb)
    init = INIT_FILE.read_bytes()
    key = initramfs_key(init, version, order, bb, st.st_size, st.st_mtime_ns)
    out = CACHE / f"initramfs-{key}.cpio"
    if out.is_file():
        return out
    say("building the initramfs")
    for old in CACHE.glob("initramfs-*.cpio"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="torus-initramfs.") as tmp:
        root = Path(tmp)
        for d in ("bin", "sbin", "proc", "sys", "dev", "lower", "rw", "newroot", "run", "tmp",
                  f"lib/modules/{version}"):
            (root / d).mkdir(parents=True, exist_ok=True)
        shutil.copy2(bb, root / "bin" / "busybox")
        os.symlink("../bin/busybox", root / "sbin" / "modprobe")
        os.symlink("busybox", root / "bin" / "sh")
        for ko in order:
            dst = root / "lib" / "modules" / version / ko
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(moddir / ko, dst)
        (root / "modules.order").write_text("".join(f"{version}/{ko}\n" for ko in order))
        (root / "init").write_bytes(init)
        (root / "init").chmod(0o755)
        names = subprocess.run(["find", ".", "-mindepth", "1"], cwd=root, check=True,
                               stdout=subprocess.PIPE).stdout
        part = out.with_suffix(".partial")
        with open(part, "wb") as f:
            proc = subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], cwd=root,
                                  input=names, stdout=f, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise GuestError(f"cpio failed: {proc.stderr.decode().strip()} (scripts/deps.sh installs cpio)")
        part.rename(out)
    return out


# --- qemu -----------------------------------------------------------------------


def qemu_binary():
    path = shutil.which("qemu-system-x86_64")
    if not path:
        raise GuestError("qemu-system-x86_64 not found: run scripts/deps.sh (installs qemu-system-x86)")
    return path


class Relay(threading.Thread):
    """Copy what qemu writes to a channel's file to a file descriptor (or
    nowhere) as it comes, keeping the tail, until qemu has exited (set
    .finished) and the file is read to its end.

    A file, not a pipe: a pipe that this side empties too slowly (a loaded
    machine) makes qemu hold the guest's writes back, and those still held
    when the guest powers off are lost."""

    POLL = 0.02

    def __init__(self, rfd, dest, keep=0, watch=None):
        super().__init__(daemon=True)
        self.rfd, self.dest, self.keep, self.watch = rfd, dest, keep, watch
        self.tail = b""
        self.seen = {}
        self.broken = False
        self.on_broken = None
        self.finished = threading.Event()

    def run(self):
        while True:
            try:
                data = os.read(self.rfd, 65536)
            except OSError:
                break
            if not data:
                if self.finished.is_set():
                    # qemu has gone: what it wrote is all there; one more
                    # read ends at its end
                    data = os.read(self.rfd, 65536)
                    if not data:
                        break
                else:
                    self.finished.wait(self.POLL)
                    continue
            if self.dest is not None:
                view = memoryview(data)
                while view:
                    try:
                        n = os.write(self.dest, view)
                    except BrokenPipeError:
                        # Our reader went away (| head): stop the guest,
                        # as SIGPIPE would stop the command.
                        self.dest = None
                        self.broken = True
                        if self.on_broken:
                            self.on_broken()
                        break
                    view = view[n:]
            if self.watch:
                # a marker may straddle two reads
                recent = self.tail[-64:] + data
                for marker in self.watch:
                    if marker not in self.seen and marker in recent:
                        self.seen[marker] = time.monotonic()
            if self.keep:
                self.tail = (self.tail + data)[-self.keep:]
            elif self.watch:
                self.tail = (self.tail + data)[-64:]
        os.close(self.rfd)


def boot(args, version, kdir, initramfs, accel, ctl, probe=False, timeout=None,
         boot_timeout=None, hang=False):
    """Boot the guest once. Returns (qemu status or None when killed, console
    relay, elapsed); console.boot_hung tells a boot killed at BOOT_TIMEOUT
    before /init said it runs the command. hang: qemu starts with its CPUs
    stopped (tests of the retry)."""
    # Boot time under TCG: the crypto self-tests alone take over a second;
    # no keyboard, no KASLR, no speculation mitigations (a throw-away guest).
    # Not quiet: the console's tail is what tells where a hung boot stopped.
    cmdline = ["console=ttyS0", "panic=-1", "oops=panic", "mitigations=off", "nokaslr",
               "cryptomgr.notests", "i8042.noaux", "i8042.nokbd", "i8042.nopnp",
               "tsc=reliable", "no_timer_check", "rdinit=/init"]
    cmdline.extend(os.environ.get("TORUS_GUEST_APPEND", "").split())
    if probe:
        cmdline.append("torus.probe")
    else:
        cmdline.append(f"torus.ctl={ctl}")
    qemu = [qemu_binary(), "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-machine", f"pc,accel={accel}", "-cpu", "host" if accel == "kvm" else "max",
            "-smp", str(args.cpus), "-m", str(args.mem),
            "-kernel", str(kernel_image(version, kdir)), "-initrd", str(initramfs),
            "-append", " ".join(cmdline)] + (["-S"] if hang else [])
    writers = {}
    pass_fds = []
    relays = []
    iodir = tempfile.TemporaryDirectory(prefix="torus-guest-io.")

    def file_chardev(name, dest, keep=0, watch=None):
        path = os.path.join(iodir.name, name)
        w = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        r = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        os.unlink(path)
        writers[name] = w
        pass_fds.append(w)
        relay = Relay(r, dest, keep, watch)
        relays.append(relay)
        set_id = len(pass_fds)
        qemu.extend(["-add-fd", f"fd={w},set={set_id}",
                     "-chardev", f"file,id={name},path=/dev/fdset/{set_id},append=on"])
        return relay

    console = file_chardev("console", 2 if args.verbose else None, keep=16384,
                           watch=[RUNNING, b"torus-guest: probe-ok", *BOOT_MARKS])
    qemu.extend(["-serial", "chardev:console"])
    if not probe:
        file_chardev("out", 1)
        file_chardev("err", 2)
        console.status = file_chardev("status", None, keep=4096)
        qemu.extend(["-device", "virtio-serial-pci,id=vser0",
                     "-device", "virtserialport,bus=vser0.0,chardev=out,name=torus.out",
                     "-device", "virtserialport,bus=vser0.0,chardev=err,name=torus.err",
                     "-device", "virtserialport,bus=vser0.0,chardev=status,name=torus.status",
                     "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
                     "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot"])
        for i, share in enumerate(args.share):
            qemu.extend(["-fsdev", f"local,id=share{i},path={share},security_model=none,multidevs=remap",
                         "-device", f"virtio-9p-pci,fsdev=share{i},mount_tag=share{i}"])
        if args.net:
            qemu.extend(["-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0"])
        if args.nbd_disk:
            # cache=none: no host page cache (the NBD client has none anyway)
            # and a volatile write cache the guest flushes.
            blockdev = {"driver": "raw", "node-name": "torus-nbd",
                        "cache": {"direct": True, "no-flush": False},
                        "file": {"driver": "nbd", "server": args.nbd_disk["server"],
                                 "cache": {"direct": True, "no-flush": False}}}
            if args.nbd_disk["export"]:
                blockdev["file"]["export"] = args.nbd_disk["export"]
            qemu.extend(["-blockdev", json.dumps(blockdev, separators=(",", ":")),
                         "-device", "virtio-blk-pci,drive=torus-nbd,serial=torus-nbd,write-cache=on"])
    if args.verbose:
        say("qemu: " + " ".join(shlex.quote(a) for a in qemu))
    start = time.monotonic()
    proc = subprocess.Popen(qemu, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, pass_fds=pass_fds, start_new_session=True)
    for w in writers.values():
        os.close(w)

    def stop_guest():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    console.start_time = start
    for r in relays:
        if r.dest is not None:
            r.on_broken = stop_guest
        r.start()
    errbuf = []
    errthread = threading.Thread(target=lambda: errbuf.append(proc.stderr.read()), daemon=True)
    errthread.start()
    status = None
    console.boot_hung = False
    try:
        status, why = wait_guest(proc, console, start, timeout, boot_timeout)
        if status is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            console.boot_hung = why == "boot"
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    elapsed = time.monotonic() - start
    for r in relays:
        r.finished.set()
    for r in relays:
        # COMMAND's output whole; the console's and status's bounded
        r.join(None if r.dest is not None and r is not console else 5)
    errthread.join(5)
    iodir.cleanup()
    console.qemu_stderr = (errbuf[0] if errbuf else b"").decode(errors="replace")
    console.broken = any(r.broken for r in relays)
    return status, console, elapsed


def wait_guest(proc, console, start, timeout, boot_timeout):
    """(qemu's exit status, None), or (None, 'timeout') once TIMEOUT has
    passed, or (None, 'boot') once BOOT_TIMEOUT has without /init's running
    mark: the caller kills qemu."""
    if boot_timeout and (not timeout or boot_timeout < timeout):
        boot_end = start + boot_timeout
        while RUNNING not in console.seen:
            now = time.monotonic()
            if now >= boot_end:
                return None, "boot"
            try:
                return proc.wait(timeout=min(0.2, boot_end - now)), None
            except subprocess.TimeoutExpired:
                pass
    try:
        left = max(0, start + timeout - time.monotonic()) if timeout else None
        return proc.wait(timeout=left), None
    except subprocess.TimeoutExpired:
        return None, "timeout"


def boot_hang_text(bound, marks, empty):
    """What a hung boot showed: MARKS, {console mark: seconds after qemu
    started} of BOOT_MARKS seen; EMPTY when the console showed nothing."""
    seen = [f"'{m.decode()}' at {marks[m]:.1f} s" for m in BOOT_MARKS if m in marks]
    unseen = [f"'{m.decode()}'" for m in BOOT_MARKS if m not in marks]
    if empty:
        seen = "the console stayed empty"
    elif seen:
        seen = "the console showed " + ", ".join(seen) + \
            (", not " + " nor ".join(unseen) if unseen else "")
    else:
        seen = "the console showed none of " + ", ".join(unseen)
    return (f"the guest did not start the command within the boot time bound of {bound:g} s "
            f"(--boot-timeout, TORUS_GUEST_BOOT_TIMEOUT): killed qemu; {seen}")


def after_hung_boot(attempt, attempts=BOOT_ATTEMPTS):
    """'retry' after a hung boot with boots left (nothing of the command
    ran before /init's running mark), 'fail' after the last one."""
    return "retry" if attempt < attempts else "fail"


def accel_from_probe(status, probe_ok, qemu_stderr, elapsed):
    """(accel, why) from the KVM probe boot: qemu's exit status (None: it
    was killed at PROBE_SECONDS), whether /init said probe-ok, what qemu
    said on stderr."""
    if status == 0 and probe_ok:
        return "kvm", f"KVM booted the probe in {elapsed:.1f} s"
    if status is None:
        return "tcg", f"KVM did not boot the probe within {PROBE_SECONDS} s (nested KVM?)"
    last = (qemu_stderr.strip().splitlines() or [""])[-1]
    last = re.sub(r"^qemu-system-x86_64: ", "", last)
    return "tcg", (f"qemu -accel kvm failed, exit {status}: "
                   + (last[:100] + "..." if len(last) > 100 else last))


def choose_accel(args, version, kdir, initramfs):
    """'kvm' when /dev/kvm boots the guest (probed once, cached), else 'tcg'."""
    forced = args.accel or os.environ.get("TORUS_GUEST_ACCEL")
    if forced:
        if forced not in ("kvm", "tcg"):
            raise GuestError(f"--accel/TORUS_GUEST_ACCEL must be kvm or tcg, not '{forced}'")
        return forced, "as asked"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "no usable /dev/kvm"
    qver = subprocess.run([qemu_binary(), "--version"], stdout=subprocess.PIPE, text=True).stdout.split("\n")[0]
    key = hashlib.sha256(f"{os.uname().release}\n{qver}\n{version}".encode()).hexdigest()[:16]
    cached = CACHE / f"accel-{key}"
    if cached.is_file():
        answer = cached.read_text().split("\n")[0].split(" ", 1)
        return answer[0], (answer[1] if len(answer) > 1 else "") + " (cached probe)"
    say(f"probing whether KVM boots a guest (once, up to {PROBE_SECONDS} s)")
    status, console, elapsed = boot(args, version, kdir, initramfs, "kvm", None, probe=True,
                                    timeout=PROBE_SECONDS)
    answer = accel_from_probe(status, b"torus-guest: probe-ok" in console.seen,
                              console.qemu_stderr, elapsed)
    cached.write_text(f"{answer[0]} {answer[1]}\n")
    return answer


# --- the command ----------------------------------------------------------------


def command_script(argv, env, cwd=None):
    """The guest's /run/torus-guest/cmd: into CWD (the caller's directory;
    / when the guest lacks it), ENV exported, ARGV exec'd, all quoted."""
    lines = ["cd -- " + shlex.quote(cwd or os.getcwd()) + " 2>/dev/null || cd /"]
    for name, value in env:
        lines.append(f"export {name}={shlex.quote(value)}")
    lines.append("exec " + " ".join(shlex.quote(a) for a in argv))
    return "\n".join(lines) + "\n"


def parse_nbd_uri(uri):
    """{'uri', 'server': a qemu SocketAddress, 'export'} from an NBD URI."""
    u = urlsplit(uri)
    export = unquote(u.path[1:] if u.path.startswith("/") else u.path)
    if u.scheme == "nbd+unix":
        if u.netloc:
            raise ValueError(f"'{uri}': nbd+unix:// takes no host (nbd+unix:///EXPORT?socket=PATH)")
        q = parse_qs(u.query, keep_blank_values=True)
        if set(q) - {"socket"} or len(q.get("socket", [])) != 1 or not q["socket"][0]:
            raise ValueError(f"'{uri}': expected nbd+unix:///EXPORT?socket=PATH")
        path = os.path.abspath(q["socket"][0])
        server = {"type": "unix", "path": path}
    elif u.scheme == "nbd":
        if u.query or not u.hostname:
            raise ValueError(f"'{uri}': expected nbd://HOST[:PORT]/EXPORT")
        try:
            port = u.port or 10809
        except ValueError:
            raise ValueError(f"'{uri}': the port is not a number")
        server = {"type": "inet", "host": u.hostname, "port": str(port)}
    elif u.scheme in ("nbds", "nbds+unix"):
        raise ValueError(f"'{uri}': TLS (nbds) is not supported")
    else:
        raise ValueError(f"'{uri}': expected nbd://HOST[:PORT]/EXPORT or nbd+unix:///EXPORT?socket=PATH")
    return {"uri": uri, "server": server, "export": export}


def check_nbd_server(disk):
    """Fail early, naming the fix, when the NBD server is plainly not there."""
    server = disk["server"]
    if server["type"] == "unix":
        path = server["path"]
        try:
            st = os.stat(path)
        except OSError as e:
            raise GuestError(f"--nbd-disk {disk['uri']}: {path}: {e.strerror}: start the NBD server "
                             f"first (e.g. nbdkit --unix {path} memory 64M)")
        if not stat.S_ISSOCK(st.st_mode):
            raise GuestError(f"--nbd-disk {disk['uri']}: {path} is not a socket")


def env_seconds(name, default):
    """A number of seconds from the environment; None when it is not one."""
    text = os.environ.get(name, "")
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        return None


def parse_test_hang(text):
    """TORUS_GUEST_TEST_HANG=BOOTS:SECONDS, for tests of the boot retry: the
    first BOOTS boots hang (qemu's CPUs never start) and are given SECONDS.
    Returns (boots, seconds); (0, None) when unset."""
    if not text:
        return 0, None
    m = re.fullmatch(r"([0-9]+):([0-9]+(?:\.[0-9]+)?)", text)
    if not m or float(m.group(2)) <= 0:
        raise ValueError(f"TORUS_GUEST_TEST_HANG='{text}': expected BOOTS:SECONDS, e.g. 1:2")
    return int(m.group(1)), float(m.group(2))


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="scripts/guest", usage="%(prog)s [options] [--] COMMAND...",
        description="Run COMMAND as root in a qemu guest booted from Debian's kernel, "
                    "with the host's root mounted read-only under a writable overlay.",
        epilog="Exit status: COMMAND's; 124 on timeout, 125 when the guest failed before COMMAND ran.")
    p.add_argument("--mem", type=int, default=1024, metavar="MB", help="guest memory (default 1024)")
    p.add_argument("--cpus", type=int, default=2, metavar="N", help="guest CPUs (default 2)")
    p.add_argument("--timeout", type=float, default=600, metavar="S",
                   help="kill the guest S seconds after its boot started (default 600)")
    p.add_argument("--boot-timeout", type=float, metavar="S",
                   default=env_seconds("TORUS_GUEST_BOOT_TIMEOUT", BOOT_TIMEOUT),
                   help="a boot that has not started COMMAND after S seconds is killed and "
                        f"booted once more (default {BOOT_TIMEOUT}, or TORUS_GUEST_BOOT_TIMEOUT)")
    p.add_argument("--share", action="append", default=[], metavar="DIR",
                   help="share host directory DIR read-write at the same path (repeatable)")
    p.add_argument("--env", action="append", default=[], metavar="NAME[=VALUE]",
                   help="pass an environment variable (its value here when no =)")
    p.add_argument("--nbd-disk", metavar="URI",
                   help="a virtio-blk disk on qemu's NBD client to URI (nbd://HOST[:PORT]/EXPORT or "
                        "nbd+unix:///EXPORT?socket=PATH, served on the host); $TORUS_GUEST_DISK names it")
    p.add_argument("--net", action="store_true",
                   help="user-mode networking: the guest is 10.0.2.15, the host's loopback 10.0.2.2")
    p.add_argument("--accel", choices=("kvm", "tcg"), help="skip the KVM probe")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show qemu's command line and the guest kernel's console on stderr")
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        p.error("no COMMAND given (scripts/guest [options] -- COMMAND...)")
    if args.boot_timeout is None or args.boot_timeout <= 0:
        p.error("--boot-timeout and TORUS_GUEST_BOOT_TIMEOUT must be a number of seconds above 0")
    try:
        args.test_hang = parse_test_hang(os.environ.get("TORUS_GUEST_TEST_HANG", ""))
    except ValueError as e:
        p.error(str(e))
    if args.mem < 128:
        p.error("--mem must be at least 128 (MB)")
    if args.cpus < 1:
        p.error("--cpus must be at least 1")
    shares = []
    for s in args.share:
        path = os.path.realpath(s)
        if not os.path.isdir(path):
            p.error(f"--share {s}: not a directory")
        if "\n" in path or "," in path:
            p.error(f"--share {s}: newlines and commas in the path are not supported")
        shares.append(path)
    args.share = shares
    if args.nbd_disk:
        try:
            args.nbd_disk = parse_nbd_uri(args.nbd_disk)
        except ValueError as e:
            p.error(f"--nbd-disk: {e}")
    env = []
    for name, value in os.environ.items():
        if name == "TORUS_GUEST_DISK":
            continue  # the guest's own, set by /init for --nbd-disk
        if name.startswith("TORUS_") or name == "FIO":
            env.append((name, value))
    for e in args.env:
        name, eq, value = e.partition("=")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            p.error(f"--env {e}: not a variable name")
        if not eq:
            value = os.environ.get(name, "")
        env.append((name, value))
    args.env = env
    return args


class Interrupted(Exception):
    """A signal asked this script to stop: qemu is killed on the way out."""


def on_signal(signum, frame):
    raise Interrupted(signum)


def main():
    args = parse_args()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, on_signal)
    try:
        with Lock():
            version, kdir = fetch_kernel()
            initramfs = build_initramfs(version, kdir)
            accel, why = choose_accel(args, version, kdir, initramfs)
        say(f"{accel.upper()} ({why}), kernel {version}")
        moddir = kdir / "lib" / "modules" / version
        tmpdir = tempfile.gettempdir()
        if re.search(r"[\s,]", tmpdir):
            tmpdir = "/tmp"
        with tempfile.TemporaryDirectory(prefix="torus-guest.", dir=tmpdir) as ctl:
            ctlp = Path(ctl)
            (ctlp / "cmd").write_text(command_script(args.command, args.env))
            (ctlp / "modules").write_text(str(moddir))
            for i, share in enumerate(args.share):
                (ctlp / f"share{i}").write_text(share)
            if args.nbd_disk:
                check_nbd_server(args.nbd_disk)
                (ctlp / "nbd-disk").write_text(args.nbd_disk["uri"] + "\n")
            if args.net:
                (ctlp / "net").write_text("user\n")
            for attempt in range(1, BOOT_ATTEMPTS + 1):
                hang = attempt <= args.test_hang[0]
                bound = args.test_hang[1] if hang else args.boot_timeout
                status, console, elapsed = boot(args, version, kdir, initramfs, accel, ctlp,
                                                timeout=args.timeout, boot_timeout=bound,
                                                hang=hang)
                if not console.boot_hung:
                    break
                marks = {m: t - console.start_time for m, t in console.seen.items()}
                say(boot_hang_text(bound, marks, not console.tail.strip()))
                if not args.verbose:
                    show_console(console, 10 if after_hung_boot(attempt) == "retry" else 30)
                if after_hung_boot(attempt) == "fail":
                    say(f"{attempt} boots hung: giving up (exit {EXIT_GUEST})")
                    return EXIT_GUEST
                say("booting once more (nothing of the command had run)")
            run_mark = console.seen.get(b"torus-guest: running")
            if args.verbose and run_mark:
                booted = run_mark - console.start_time
                marks = [f"{m.decode()} at {console.seen[m] - console.start_time:.1f} s"
                         for m in (b"Linux version", b"Run /init") if m in console.seen]
                say(f"booted in {booted:.1f} s ({', '.join(marks)}), "
                    f"command and shutdown {elapsed - booted:.1f} s")
            if console.broken:
                return 128 + signal.SIGPIPE
            if status is None:
                say(f"timed out after {args.timeout:g} s: killed qemu "
                    f"({'the command was running' if run_mark else 'the guest had not started the command'})")
                if not args.verbose:
                    show_console(console)
                return EXIT_TIMEOUT
            line = console.status.tail.decode(errors="replace").strip().splitlines()
            line = line[-1] if line else ""
            if line.startswith("error "):
                say(f"the guest failed before running the command: {line[6:]}")
                show_console(console)
                return EXIT_GUEST
            if not re.match(r"^status [0-9]+$", line):
                say(f"the guest stopped without the command's exit status (qemu exit {status})")
                if console.qemu_stderr.strip():
                    # (without the --nbd-disk's -blockdev JSON it quotes)
                    say("qemu said: " + re.sub(r"-blockdev \{.*\}: ", "", console.qemu_stderr.strip()))
                    if args.nbd_disk and re.search(r"nbd|connect|export", console.qemu_stderr, re.I):
                        say(f"is the NBD server for --nbd-disk {args.nbd_disk['uri']} running on the host, "
                            "with that export?")
                show_console(console)
                return EXIT_GUEST
            return int(line.split()[1])
    except GuestError as e:
        say(str(e))
        return EXIT_GUEST
    except Interrupted as e:
        say(f"stopped by signal {e.args[0]}; qemu was killed")
        return 128 + e.args[0]


def show_console(console, count=30):
    text = console.tail.decode(errors="replace").replace("\r", "")
    lines = [line for line in text.splitlines() if line.strip()][-count:]
    if lines:
        say("the guest's console (last lines):")
        for line in lines:
            print("  | " + line, file=sys.stderr)
    sys.stderr.flush()
