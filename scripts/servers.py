#!/usr/bin/env python3
"""Starting servers and waiting for them: the one copy of that machinery,
for scripts/compare, rerun-documents, the bench and the shell tests
(tests/lib.sh, through the command line below). Standard library only.

Python: free_port(), wait_socket(path, timeout, proc=None),
wait_port(port, timeout, proc=None): proc is a Popen (or a pid); a dead
server fails at once with a message naming its command and exit status.
nbdkit(), nbd_shim(), tcmu_shim(), nbd_server(), qemu_nbd(),
redis_server(), tcp_to_unix() (a socat relay): start a server and wait
until it is ready; each returns a Server (.uri, .pid, .stop(), a context
manager). Common keywords: log (a path or an open file for its output;
None: inherit ours), log_header, what, pin (CPUs for taskset -c), cwd,
env, timeout (for readiness), ready (False: call .wait_ready() yourself).
nbdkit_argv() and tcmu_shim_argv() are the command lines they run.

Command line (shell code):

  servers.py free-port
      print a TCP port on 127.0.0.1 that nothing listens on
  servers.py wait-socket PATH [SECONDS] [--pid PID] [--what TEXT]
  servers.py wait-port PORT [SECONDS] [--pid PID] [--what TEXT] [--host HOST]
      wait (default 10 s) for a Unix socket to appear / a TCP port to accept;
      with --pid, stop waiting as soon as that process has gone
  servers.py exec nbdkit SOCKET [OPTIONS...] PLUGIN [ARGS...]
  servers.py exec tcmu-shim SOCKET PROGRAM [OPTIONS...]
      become that server (exec: the caller's background pid is the
      server's), with the options nbdkit() / tcmu_shim() give it; wait for
      it with wait-socket --pid
  servers.py nbd-server IMAGE WORKDIR [--export NAME] [--server-defaults]
      start nbd-server (it daemonizes) exporting IMAGE on a free loopback
      port, its config and pid file in WORKDIR; print "PORT PID"
  servers.py cpu-ticks PID
      utime + stime of PID in clock ticks (exit 1 when it has gone)

Exit status: 0 done; 1 failed (the message is on stderr); 2 usage; 3 the
--pid process was gone before it was ready and its exit status is not
known here (it is its parent's: a shell gets it with `wait PID`).
"""

import argparse
import os
import signal
import socket as _socket
import stat
import subprocess
import sys
import time

from procs import LOOPBACK, HarnessError, PidWatch, cli_main, cmdline as _cmdline, ended, \
    exit_with, ppid, proc_cpu_ticks, status_text, watched

POLL = 0.05          # seconds between readiness checks


class ServerError(HarnessError):
    prefixed = False      # the message names the server


class ProcessGone(ServerError):
    """The watched process has gone and its exit status is unknown here (it
    was not our child)."""


def _died(proc, what, before, log=None):
    cmd = _cmdline(proc.args) if proc.args else f"process {proc.pid}"
    if what is None:
        what = cmd
    rc = proc.returncode
    msg = f"{what} exited before {before}"
    if rc is not None:
        msg += f" ({status_text(rc)})"
    if what != cmd and proc.args:
        msg += f"; command: {cmd}"
    if log:
        msg += f"; see {log}"
    return (ServerError if rc is not None else ProcessGone)(msg)


def _logname(log):
    if log is None:
        return None
    if isinstance(log, (str, os.PathLike)):
        return os.fspath(log)
    name = getattr(log, "name", None)
    return name if isinstance(name, str) else None


# ------------------------------------------------------------ readiness

def free_port(host=LOOPBACK):
    """A TCP port on HOST that nothing listens on (the kernel's choice)."""
    with _socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _wait_until(ready, timeout, proc, what, doing, log, late):
    """Poll READY() until it is true. PROC dying first fails at once,
    naming WHAT and what it was DOING; after TIMEOUT seconds, LATE(what)
    is the message."""
    proc = watched(proc)
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        if ended(proc):
            raise _died(proc, what, doing, _logname(log))
        if time.monotonic() >= deadline:
            raise ServerError(late(what))
        time.sleep(POLL)


def wait_socket(path, timeout=10.0, proc=None, what=None, log=None):
    """Wait up to TIMEOUT seconds for the Unix socket PATH to appear. With
    PROC (a Popen or a pid), fail at once if that process ends first."""
    def ready():
        try:
            return stat.S_ISSOCK(os.stat(path).st_mode)
        except OSError:
            return False

    _wait_until(ready, timeout, proc, what, f"creating socket {path}", log,
                lambda w: f"socket {path} did not appear within {timeout:g} s"
                if w is None else
                f"{w} did not create socket {path} within {timeout:g} s")


def wait_port(port, timeout=10.0, proc=None, what=None, host=LOOPBACK, log=None):
    """Wait up to TIMEOUT seconds for HOST:PORT to accept a connection. With
    PROC (a Popen or a pid), fail at once if that process ends first."""
    def ready():
        try:
            with _socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            return False

    _wait_until(ready, timeout, proc, what, f"listening on {host}:{port}", log,
                lambda w: f"nothing listens on {host}:{port} within {timeout:g} s"
                if w is None else
                f"{w} did not listen on {host}:{port} within {timeout:g} s")


# -------------------------------------------------------------- servers

class Server:
    """One server process started by this module. .uri, .pid, .argv, .what,
    .proc (the Popen); .stop() ends it (SIGTERM, then SIGKILL after
    `timeout`), and so does leaving a `with` block."""

    def __init__(self, argv, *, uri, what=None, socket=None, port=None, host=LOOPBACK,
                 log=None, log_header=False, cwd=None, env=None, pin=None,
                 timeout=10.0, ready=True, daemon=False, pidfile=None):
        self.argv = [str(a) for a in argv]
        if pin is not None:
            self.argv = ["taskset", "-c", str(pin)] + self.argv
        self.uri = uri
        self.what = what
        self.socket = socket
        self.port = port
        self.host = host
        self.timeout = timeout
        self.daemon = daemon           # forks a daemon and exits 0 (nbd-server)
        self.pidfile = pidfile         # where that daemon writes its pid
        self._own_log = None
        if isinstance(log, (str, os.PathLike)):
            log = self._own_log = open(log, "a")
        self.log = log
        if log is not None and log_header:
            log.write(f"--- {what or os.path.basename(self.argv[0])}: {' '.join(self.argv)}\n")
            log.flush()
        full_env = None
        if env is not None:
            full_env = dict(os.environ)
            for k, v in env.items():
                if v is None:
                    full_env.pop(k, None)
                else:
                    full_env[k] = str(v)
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=log, cwd=cwd, env=full_env)
        except OSError as e:
            self._close_log()
            raise ServerError(f"cannot start {what or self.argv[0]}: {e}; "
                              f"command: {_cmdline(self.argv)}") from e
        if ready:
            self.wait_ready()

    @property
    def pid(self):
        """The server's process id (a daemon's, once known)."""
        if self.pidfile:
            pid = self._daemon_pid()
            if pid:
                return pid
        return self.proc.pid

    def _daemon_pid(self):
        try:
            with open(self.pidfile) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            pass
        # nbd-server 3.24 writes no pid file: its daemon keeps the
        # launcher's command line (and so do the children it forks per
        # client, whose parent has it too)
        cmds = {}
        for d in os.listdir("/proc"):
            if d.isdigit() and int(d) != self.proc.pid:
                w = PidWatch(d)
                if w.args == self.argv and w.poll() is None and not w.gone:
                    cmds[w.pid] = ppid(w.pid)
        return next((pid for pid, ppid in sorted(cmds.items()) if ppid not in cmds), None)

    def wait_ready(self, timeout=None):
        """Wait until the socket or port is there; on failure stop what was
        started and raise ServerError."""
        timeout = self.timeout if timeout is None else timeout
        watch = self.proc
        if self.daemon:
            watch = _LauncherWatch(self.proc)
        try:
            if self.socket is not None:
                wait_socket(self.socket, timeout, watch, self.what, self.log)
            elif self.port is not None:
                wait_port(self.port, timeout, watch, self.what, self.host, self.log)
        except HarnessError:
            self.stop()
            raise
        return self

    def terminate(self):
        """Send SIGTERM, do not wait (stop_all() uses it)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout=10.0):
        self.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.pidfile:
            pid = self._daemon_pid()
            if pid:
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
                else:
                    watch = PidWatch(pid)
                    deadline = time.monotonic() + timeout
                    while not ended(watch) and time.monotonic() < deadline:
                        time.sleep(POLL)
        self._close_log()

    def _close_log(self):
        if self._own_log is not None:
            self._own_log.close()
            self._own_log = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        return f"<Server {self.what or self.argv[0]} pid {self.proc.pid} {self.uri}>"


class _LauncherWatch:
    """A daemonizing server's launcher: exiting 0 is how it hands over to
    the daemon; any other exit is a failure."""

    def __init__(self, proc):
        self.proc = proc
        self.pid = proc.pid
        self.args = proc.args
        self.returncode = None

    def poll(self):
        rc = self.proc.poll()
        if rc:
            self.returncode = rc
            return rc
        return None


def stop_all(servers, timeout=10.0):
    """Stop several servers: SIGTERM to each first, then wait for each."""
    servers = list(servers)
    for s in servers:
        s.terminate()
    for s in servers:
        s.stop(timeout)


def _listen(socket, port, host):
    """(socket, port) with a free loopback port when neither is given."""
    if socket is None and port is None:
        port = free_port(host)
    return socket, port


def _nbd_uri(socket, port, host, export):
    if socket is not None:
        return f"nbd+unix:///{export or ''}?socket={socket}"
    return f"nbd://{host}:{port}" + (f"/{export}" if export else "")


def nbdkit_argv(plugin, *args, socket=None, port=None, host=LOOPBACK, filters=(), extra=(),
                program="nbdkit", tls_certificates=None, tls_psk=None):
    """nbdkit's command line for nbdkit(): in the foreground
    (--exit-with-parent) on the Unix socket SOCKET or on HOST:PORT, with
    --filter=F for each of FILTERS and EXTRA options before the plugin."""
    argv = [program, "--foreground", "--exit-with-parent"]
    argv += ["-U", socket] if socket is not None else ["--ipaddr", host, "--port", str(port)]
    argv += nbdkit_tls_args(tls_certificates, tls_psk)
    argv += [f"--filter={f}" for f in filters]
    return argv + [str(a) for a in extra] + [plugin] + [str(a) for a in args]


def nbdkit(plugin, *args, socket=None, port=None, host=LOOPBACK, filters=(), export=None,
           extra=(), program="nbdkit", tls_certificates=None, tls_psk=None, **kw):
    """nbdkit PLUGIN ARGS (nbdkit_argv()) on the Unix socket SOCKET or on
    HOST:PORT (a free port when neither is given).
    EXPORT only goes into the URI (nbdkit serves any export name).
    TLS_CERTIFICATES (a directory from tls.tls_certificates()) or TLS_PSK (a
    file from tls.tls_psk()) make it refuse any client without TLS
    (--tls=require); .uri is then nbds:// or nbds+unix:// (the client's
    credentials are the caller's to add)."""
    socket, port = _listen(socket, port, host)
    argv = nbdkit_argv(plugin, *args, socket=socket, port=port, host=host, filters=filters,
                       extra=extra, program=program, tls_certificates=tls_certificates,
                       tls_psk=tls_psk)
    kw.setdefault("what", f"nbdkit {plugin}" + (" (TLS)" if tls_certificates or tls_psk else ""))
    uri = _nbd_uri(socket, port, host, export)
    if tls_certificates or tls_psk:
        uri = uri.replace("nbd", "nbds", 1)
    return Server(argv, uri=uri, socket=socket, port=port, host=host, **kw)


def nbdkit_tls_args(certificates=None, psk=None):
    """nbdkit's options for a TLS-only server with the certificates in
    CERTIFICATES or the keys in the PSK file PSK ([] when neither)."""
    if certificates and psk:
        raise ValueError("nbdkit takes certificates or a PSK file, not both")
    if certificates:
        return ["--tls=require", f"--tls-certificates={os.path.abspath(certificates)}"]
    if psk:
        return ["--tls=require", f"--tls-psk={os.path.abspath(psk)}"]
    return []


# the export each nbd-shim profile serves by default (torus: coreos's old spelling)
SHIM_EXPORTS = {"coreos": "torus", "torus": "torus", "zeroos": "default"}


def nbd_shim(program, profile, store=None, size=None, export=None, socket=None, port=None,
             host=LOOPBACK, extra=(), timeline=None, **kw):
    """The NBD shim PROGRAM (build/shims/nbd/nbd-shim) with --profile PROFILE
    on SOCKET or HOST:PORT (a free port when neither is given); STORE, SIZE,
    EXPORT and TIMELINE (a directory for its records, docs/timeline.md)
    become --store, --size, --export and --timeline, EXTRA follows. The
    URI names EXPORT, or the profile's default export."""
    socket, port = _listen(socket, port, host)
    argv = [program, "--profile", profile, "--listen",
            f"unix:{socket}" if socket is not None else f"tcp:{host}:{port}"]
    if export is not None:
        argv += ["--export", export]
    if size is not None:
        argv += ["--size", str(size)]
    if store is not None:
        argv += ["--store", store]
    if timeline is not None:
        argv += ["--timeline", timeline]
    argv += [str(a) for a in extra]
    kw.setdefault("what", f"nbd-shim {profile}")
    uri_export = export if export is not None else SHIM_EXPORTS.get(profile, "")
    return Server(argv, uri=_nbd_uri(socket, port, host, uri_export), socket=socket,
                  port=port, host=host, **kw)


def tcp_to_unix(socket, port=None, host=LOOPBACK, **kw):
    """socat relaying each TCP connection to HOST:PORT (a free port when not
    given) to the Unix socket SOCKET, byte for byte, so that something that
    can only reach TCP (a qemu guest through its user-mode network) reaches a
    server on a Unix socket. .uri is tcp://HOST:PORT."""
    port = port if port is not None else free_port(host)
    argv = ["socat", f"TCP-LISTEN:{port},bind={host},reuseaddr,fork",
            f"UNIX-CONNECT:{socket}"]
    kw.setdefault("what", f"socat tcp:{host}:{port} -> unix:{socket}")
    return Server(argv, uri=f"tcp://{host}:{port}", port=port, host=host, **kw)


def tcmu_shim_argv(program, socket, store=None, size=None, extra=(), timeline=None):
    """tcmu-shim's command line for tcmu_shim()."""
    argv = [program, "--socket", socket]
    if size is not None:
        argv += ["--size", str(size)]
    if store is not None:
        argv += ["--store", store]
    if timeline is not None:
        argv += ["--timeline", timeline]
    return argv + [str(a) for a in extra]


def tcmu_shim(program, socket, store=None, size=None, extra=(), timeline=None, **kw):
    """The TCMU handler host PROGRAM (build/shims/tcmu/tcmu-shim) on the Unix
    socket SOCKET; STORE, SIZE and TIMELINE (a directory for its records,
    docs/timeline.md) become --store, --size and --timeline, EXTRA follows
    (--block-size, --max-transfer, -v ...). .uri is the engine's
    tcmu+unix:///?socket=SOCKET."""
    argv = tcmu_shim_argv(program, socket, store, size, extra, timeline)
    kw.setdefault("what", "tcmu-shim")
    return Server(argv, uri=f"tcmu+unix:///?socket={socket}", socket=socket, **kw)


NBD_SERVER_OPTIONS = {"flush": "true", "fua": "true", "trim": "true"}


def nbd_server(image, workdir, size=None, port=None, host=LOOPBACK, export="default",
               options=None, generic=None, program="nbd-server", **kw):
    """The official nbd-server exporting the file IMAGE as EXPORT on
    HOST:PORT (a free port when not given), from a config file it writes in
    WORKDIR (nbd-server.conf; OPTIONS go into the export's section, by
    default flush, fua and trim; GENERIC into [generic]). With SIZE, IMAGE is
    made a sparse file of that size. nbd-server forks a daemon that writes
    WORKDIR/nbd-server.pid (or, 3.24, does not: then it is found by its
    command line): .pid and .stop() go through it."""
    port = free_port(host) if port is None else port
    if size is not None:
        with open(image, "wb") as f:
            f.truncate(size)
    conf = os.path.join(workdir, "nbd-server.conf")
    pidfile = os.path.join(workdir, "nbd-server.pid")
    lines = ["[generic]", f"\tport = {port}", f"\tlistenaddr = {host}", "\tallowlist = false"]
    lines += [f"\t{k} = {v}" for k, v in (generic or {}).items()]
    lines += [f"[{export}]", f"\texportname = {image}"]
    lines += [f"\t{k} = {v}" for k, v in (NBD_SERVER_OPTIONS if options is None
                                          else options).items()]
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    kw.setdefault("what", "nbd-server")
    return Server([program, "-C", conf, "-p", pidfile],
                  uri=_nbd_uri(None, port, host, export), port=port, host=host,
                  daemon=True, pidfile=pidfile, **kw)


def qemu_nbd(image, socket=None, port=None, host=LOOPBACK, export=None, fmt="raw", extra=(),
             program="qemu-nbd", **kw):
    """qemu-nbd serving IMAGE (format FMT) persistently (-t) on SOCKET or
    HOST:PORT (a free port when neither is given), as EXPORT (-x); EXTRA
    (e.g. -e 4, --discard=unmap) before the image."""
    socket, port = _listen(socket, port, host)
    argv = [program, "-t", "-f", fmt]
    argv += ["-k", socket] if socket is not None else ["-b", host, "-p", str(port)]
    if export is not None:
        argv += ["-x", export]
    argv += [str(a) for a in extra] + [image]
    kw.setdefault("what", "qemu-nbd")
    return Server(argv, uri=_nbd_uri(socket, port, host, export), socket=socket, port=port,
                  host=host, **kw)


def redis_server(datadir, port=None, host=LOOPBACK, extra=(), program="redis-server", **kw):
    """redis-server in the foreground on HOST:PORT (a free port when not
    given), no persistence, its files in DATADIR (made if missing). .uri is
    redis://HOST:PORT, .address HOST:PORT (what nbd-shim's redis store
    takes)."""
    port = free_port(host) if port is None else port
    os.makedirs(datadir, exist_ok=True)
    argv = [program, "--port", str(port), "--bind", host, "--save", "", "--appendonly", "no",
            "--dir", datadir, "--daemonize", "no", "--protected-mode", "no"]
    argv += [str(a) for a in extra]
    kw.setdefault("what", "redis-server")
    srv = Server(argv, uri=f"redis://{host}:{port}", port=port, host=host, **kw)
    srv.address = f"{host}:{port}"
    return srv


# ------------------------------------------------------------------ CLI

def _cli_wait(args, kind):
    try:
        if kind == "socket":
            wait_socket(args.path, args.seconds, args.pid, args.what)
        else:
            wait_port(args.port, args.seconds, args.pid, args.what, args.host)
    except ProcessGone as e:
        print(e, file=sys.stderr)
        return 3
    return 0


def _cli_exec(args):
    """Become the server ARGS name (os.execvp: the pid stays the caller's
    child's)."""
    rest = list(args.args)
    if args.server == "nbdkit":
        extra = []
        while rest and rest[0].startswith("-"):
            extra.append(rest.pop(0))
        if not rest:
            raise SystemExit("servers.py exec nbdkit: no plugin: give nbdkit's options, "
                             "then the plugin and its arguments (e.g. memory 64M)")
        argv = nbdkit_argv(rest[0], *rest[1:], socket=args.socket, extra=extra)
    else:
        if not rest or rest[0].startswith("-"):
            raise SystemExit("servers.py exec tcmu-shim: give the program first "
                             "(build/shims/tcmu/tcmu-shim), then its options")
        argv = tcmu_shim_argv(rest[0], args.socket, extra=rest[1:])
    sys.stdout.flush()
    os.execvp(argv[0], argv)


def add_cli(sub):
    """This module's subcommands on the argparse subparsers SUB (harness.py
    offers them too)."""
    sub.add_parser("free-port", help="print a free TCP port on 127.0.0.1")
    for kind in ("socket", "port"):
        p = sub.add_parser(f"wait-{kind}",
                           help=f"wait for a {'Unix socket' if kind == 'socket' else 'TCP port'}")
        if kind == "socket":
            p.add_argument("path")
        else:
            p.add_argument("port", type=int)
            p.add_argument("--host", default=LOOPBACK)
        p.add_argument("seconds", type=float, nargs="?", default=10.0)
        p.add_argument("--pid", type=int, help="the server's process: fail as soon as it has gone")
        p.add_argument("--what", help="the server, for messages (default: its command line)")
    p = sub.add_parser("exec", help="become a server (nbdkit, tcmu-shim) on a Unix socket")
    p.add_argument("server", choices=("nbdkit", "tcmu-shim"))
    p.add_argument("socket")
    p.add_argument("args", nargs=argparse.REMAINDER,
                   help="nbdkit: its options, the plugin and its arguments; "
                   "tcmu-shim: the program, then its options")
    p = sub.add_parser("nbd-server", help="start nbd-server (a daemon) exporting IMAGE on a free "
                       "loopback port; print its port and pid")
    p.add_argument("image")
    p.add_argument("workdir", help="where its config and pid file go")
    p.add_argument("--export", default="default")
    p.add_argument("--server-defaults", action="store_true",
                   help="nbd-server's own defaults (no trim, no FUA) instead of "
                   + ", ".join(NBD_SERVER_OPTIONS))
    p = sub.add_parser("cpu-ticks", help="utime + stime of a process, in clock ticks")
    p.add_argument("pid", type=int)


def run_cli(args):
    """Run the subcommand add_cli() parsed into ARGS; its exit status."""
    if args.cmd == "free-port":
        print(free_port())
    elif args.cmd in ("wait-socket", "wait-port"):
        return _cli_wait(args, args.cmd[5:])
    elif args.cmd == "exec":
        _cli_exec(args)
    elif args.cmd == "nbd-server":
        # a daemon: it outlives this process; the caller stops it by its pid
        srv = nbd_server(os.path.abspath(args.image), args.workdir, export=args.export,
                         options={} if args.server_defaults else None, log=os.devnull)
        print(srv.port, srv.pid)
    elif args.cmd == "cpu-ticks":
        ticks = proc_cpu_ticks(args.pid)
        if ticks is None:
            print(f"servers: process {args.pid} has gone", file=sys.stderr)
            return 1
        print(ticks)
    return 0


def main(argv=None):
    return cli_main("servers.py", __doc__, (sys.modules[__name__],), argv,
                    epilog=__doc__.split("Command line (shell code):")[1])


if __name__ == "__main__":
    exit_with(main, "servers")
