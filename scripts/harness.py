#!/usr/bin/env python3
"""Starting servers, running fio and reading its JSON: the one copy of that
machinery, for scripts/rerun-documents, scripts/bench.sh (through
scripts/benchlib.sh and benchlib.py) and the shell tests (tests/lib.sh).
Standard library only. Scripts in scripts/ import it as `import harness`;
shell code uses the command line:

  harness.py free-port
      print a TCP port on 127.0.0.1 that nothing listens on
  harness.py wait-socket PATH [SECONDS] [--pid PID] [--what TEXT]
  harness.py wait-port PORT [SECONDS] [--pid PID] [--what TEXT] [--host HOST]
      wait (default 10 s) for a Unix socket to appear / a TCP port to accept;
      with --pid, stop waiting as soon as that process has gone
  harness.py fio-summary FILE [--percentiles] [--job NAME | --all-jobs]
      "metric value" lines of one fio run (JSON, group_reporting: one job;
      --job: the jobs named NAME; --all-jobs: every job together; fio's
      messages before the JSON are skipped): iops bw_mib cpu_us_per_io
      clat_mean_us lat_mean_us cpu_pct ios runtime_s
  harness.py fio-messages FILE
      what fio wrote to its --output file before the JSON object
  harness.py cpu-ticks PID
      utime + stime of PID in clock ticks (exit 1 when it has gone)
  harness.py tls-certificates DIR [--host NAME]... [--client CN]
      a CA, a server certificate (for localhost and 127.0.0.1 unless --host
      names others) and a client certificate in DIR, for nbdkit
      --tls-certificates=DIR and libnbd's tls-certificates=DIR (certtool)
  harness.py tls-psk FILE [--user NAME]
      a PSK file for NAME (default torus), for nbdkit --tls-psk=FILE and
      libnbd's tls-psk-file=FILE with the same user name (psktool)
  harness.py libnbd-home HOME DIR
      DIR's client files copied to HOME/.pki/libnbd, where libnbd looks for
      certificates when it is given none and does not run as root (root's
      is /etc/pki/libnbd)

Exit status: 0 done; 1 failed (the message is on stderr); 2 usage; 3 the
--pid process was gone before it was ready and its exit status is not
known here (it is its parent's: a shell gets it with `wait PID`).

Python:
  free_port(), wait_socket(path, timeout, proc=None), wait_port(port,
  timeout, proc=None): proc is a Popen (or a pid); a dead server fails at
  once with a message naming its command and exit status.
  nbdkit(), nbd_shim(), tcmu_shim(), nbd_server(), qemu_nbd(),
  redis_server(), tcp_to_unix() (a socat relay): start a server and wait
  until it is ready; each returns
  a Server (.uri, .pid, .stop(), a context manager). Common keywords: log (a path or an open
  file for its output; None: inherit ours), log_header, what, pin (CPUs
  for taskset -c), cwd, env, timeout (for readiness), ready (False: call
  .wait_ready() yourself).
  run_fio(args, json=True, env=None, timeout=None, ...) -> FioRun;
  load_fio_json(path_or_text); fio_summary(data, all_jobs=False, jobname=None);
  fio_figure(data, kind, ddir); clat_percentiles(data);
  merged_clat_percentiles(data, pcts).
  tls_certificates(dir), tls_psk(path, user), libnbd_home(home, dir),
  nbdkit(..., tls_certificates=DIR or tls_psk=FILE): TLS-only servers.
  parse_size(text), proc_cpu_ticks(pid), reexec_for_matplotlib(script,
  argv, marker): small pieces the scripts share.
"""

import argparse
import ipaddress
import json as _json
import os
import re
import shlex
import shutil
import signal
import socket as _socket
import stat
import subprocess
import sys
import tempfile
import time

LOOPBACK = "127.0.0.1"
POLL = 0.05          # seconds between readiness checks


class HarnessError(Exception):
    """A server or a fio run that did not work out; the message says why."""


class ServerError(HarnessError):
    pass


class ProcessGone(ServerError):
    """The watched process has gone and its exit status is unknown here (it
    was not our child)."""


class FioError(HarnessError):
    pass


class FioJsonError(FioError, ValueError):
    """fio's output holds no usable JSON, or not the figures asked for."""


# ------------------------------------------------------------ processes

def _cmdline(argv):
    if isinstance(argv, (str, bytes)):
        return argv if isinstance(argv, str) else argv.decode(errors="replace")
    return " ".join(shlex.quote(str(a)) for a in argv)


def status_text(returncode):
    """A Popen returncode in words: 'exit status 1', 'killed by signal 9
    (SIGKILL)' for -9."""
    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "?"
        return f"killed by signal {-returncode} ({name})"
    return f"exit status {returncode}"


class PidWatch:
    """Popen's poll()/returncode/args for a process that is not our child
    (the CLI's --pid): alive while /proc/PID is there and not a zombie; a
    zombie's exit status is read from /proc, a reaped one's is unknown."""

    def __init__(self, pid):
        self.pid = int(pid)
        self.returncode = None
        self.gone = False
        try:
            with open(f"/proc/{self.pid}/cmdline", "rb") as f:
                self.args = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            self.args = []

    def poll(self):
        if self.gone:
            return self.returncode
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            self.gone = True
            return None
        if fields[0] not in ("Z", "X"):
            return None
        self.gone = True
        if len(fields) >= 50:             # field 52, exit_code (Linux 3.5+)
            code = int(fields[-1])
            self.returncode = -(code & 0x7F) if code & 0x7F else (code >> 8) & 0xFF
        return self.returncode


def _as_proc(proc):
    if proc is None or hasattr(proc, "poll"):
        return proc
    return PidWatch(proc)


def _dead(proc):
    """True when the watched process has ended."""
    if proc is None:
        return False
    rc = proc.poll()
    return rc is not None or getattr(proc, "gone", False)


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
    proc = _as_proc(proc)
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        if _dead(proc):
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
        """The server's process id (a daemon's, from its pid file, once known)."""
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
            return None

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
                    while not _dead(watch) and time.monotonic() < deadline:
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


def nbdkit(plugin, *args, socket=None, port=None, host=LOOPBACK, filters=(), export=None,
           extra=(), program="nbdkit", tls_certificates=None, tls_psk=None, **kw):
    """nbdkit PLUGIN ARGS in the foreground (--exit-with-parent) on the Unix
    socket SOCKET or on HOST:PORT (a free port when neither is given), with
    --filter=F for each of FILTERS and EXTRA options before the plugin.
    EXPORT only goes into the URI (nbdkit serves any export name).
    TLS_CERTIFICATES (a directory from tls_certificates()) or TLS_PSK (a
    file from tls_psk()) make it refuse any client without TLS
    (--tls=require); .uri is then nbds:// or nbds+unix:// (the client's
    credentials are the caller's to add)."""
    socket, port = _listen(socket, port, host)
    argv = [program, "--foreground", "--exit-with-parent"]
    argv += ["-U", socket] if socket is not None else ["--ipaddr", host, "--port", str(port)]
    argv += nbdkit_tls_args(tls_certificates, tls_psk)
    argv += [f"--filter={f}" for f in filters]
    argv += list(extra) + [plugin] + [str(a) for a in args]
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


# -------------------------------------------------------------- TLS keys

# The files of a certificates directory, as nbdkit (server-*) and libnbd
# (client-*) look for them; ca-key.pem signs the other two.
TLS_CLIENT_FILES = ("ca-cert.pem", "client-cert.pem", "client-key.pem")
TLS_FILES = ("ca-key.pem", "ca-cert.pem", "server-key.pem", "server-cert.pem",
             "client-key.pem", "client-cert.pem")


def _gnutls_tool(argv, doing):
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    except FileNotFoundError:
        raise HarnessError(f"{argv[0]} not found: it comes with Debian's gnutls-bin "
                           f"(scripts/deps.sh installs it)") from None
    if r.returncode != 0:
        raise HarnessError(f"{doing} failed ({status_text(r.returncode)}): "
                           f"{_cmdline(argv)}\n{(r.stderr or r.stdout).strip()}")


def _is_address(host):
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def tls_certificates(directory, hosts=("localhost", LOOPBACK), client="torus-client",
                     days=30, certtool="certtool"):
    """A certificate authority and, signed by it, a server certificate for
    HOSTS (names and IP addresses) and a client certificate whose common
    name is CLIENT, made with certtool into DIRECTORY (created if needed)
    as TLS_FILES: the directory serves both nbdkit --tls-certificates and
    libnbd's tls-certificates. ECDSA keys: quick to make. Returns
    DIRECTORY."""
    os.makedirs(directory, exist_ok=True)
    addrs = [h for h in hosts if _is_address(h)]
    names = [h for h in hosts if h not in addrs]
    templates = {
        "ca": ["cn = torus test CA", "ca", "cert_signing_key"],
        "server": [f"cn = {(names or addrs or ['localhost'])[0]}", "tls_www_server",
                   "encryption_key", "signing_key"]
        + [f"dns_name = {n}" for n in names] + [f"ip_address = {a}" for a in addrs],
        "client": [f"cn = {client}", "tls_www_client", "encryption_key", "signing_key"],
    }
    for who in ("ca", "server", "client"):
        key = os.path.join(directory, f"{who}-key.pem")
        cert = os.path.join(directory, f"{who}-cert.pem")
        info = os.path.join(directory, f"{who}.info")
        with open(info, "w") as f:
            f.write("\n".join(templates[who] + [f"expiration_days = {days}"]) + "\n")
        try:
            _gnutls_tool([certtool, "--generate-privkey", "--key-type=ecdsa",
                          "--outfile", key], f"making the {who} key")
            os.chmod(key, 0o600)
            if who == "ca":
                sign = ["--generate-self-signed"]
            else:
                sign = ["--generate-certificate",
                        "--load-ca-certificate", os.path.join(directory, "ca-cert.pem"),
                        "--load-ca-privkey", os.path.join(directory, "ca-key.pem")]
            _gnutls_tool([certtool] + sign + ["--load-privkey", key, "--template", info,
                                              "--outfile", cert],
                         f"making the {who} certificate")
        finally:
            os.unlink(info)
    return directory


def tls_psk(path, user="torus", psktool="psktool"):
    """A PSK file at PATH holding a random key for USER, made with psktool
    (nbdkit --tls-psk=PATH; a client gives the same file and user name).
    Returns PATH."""
    if os.path.exists(path):
        os.unlink(path)       # psktool adds to a file; one user per file here
    _gnutls_tool([psktool, "-u", user, "-p", path], f"making the PSK file {path}")
    return path


def libnbd_home(home, certificates):
    """A HOME for a libnbd client that cannot be given a certificates
    directory (fio's built-in nbd engine: libnbd refuses a URI's
    tls-certificates unless the program allows local files): the client's
    files of CERTIFICATES copied to HOME/.pki/libnbd, where libnbd looks
    when none is given. Returns HOME."""
    pki = os.path.join(home, ".pki", "libnbd")
    os.makedirs(pki, exist_ok=True)
    for name in TLS_CLIENT_FILES:
        src = os.path.join(certificates, name)
        if not os.path.exists(src):
            raise HarnessError(f"{certificates} has no {name}: make the directory with "
                               f"tls_certificates() (harness.py tls-certificates DIR)")
        shutil.copyfile(src, os.path.join(pki, name))
    os.chmod(os.path.join(pki, "client-key.pem"), 0o600)
    return home


# the export each nbd-shim profile serves by default
SHIM_EXPORTS = {"torus": "torus", "zeroos": "default"}


def nbd_shim(program, profile, backend=None, size=None, export=None, socket=None, port=None,
             host=LOOPBACK, extra=(), timeline=None, **kw):
    """The NBD shim PROGRAM (build/shims/nbd/nbd-shim) with --profile PROFILE
    on SOCKET or HOST:PORT (a free port when neither is given); BACKEND, SIZE,
    EXPORT and TIMELINE (a directory for its records, docs/timeline.md)
    become --backend, --size, --export and --timeline, EXTRA follows. The
    URI names EXPORT, or the profile's default export."""
    socket, port = _listen(socket, port, host)
    argv = [program, "--profile", profile, "--listen",
            f"unix:{socket}" if socket is not None else f"tcp:{host}:{port}"]
    if export is not None:
        argv += ["--export", export]
    if size is not None:
        argv += ["--size", str(size)]
    if backend is not None:
        argv += ["--backend", backend]
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


def tcmu_shim(program, socket, backend=None, size=None, extra=(), timeline=None, **kw):
    """The TCMU handler host PROGRAM (build/shims/tcmu/tcmu-shim) on the Unix
    socket SOCKET; BACKEND, SIZE and TIMELINE (a directory for its records,
    docs/timeline.md) become --backend, --size and --timeline, EXTRA follows
    (--block-size, --max-transfer, -v ...). .uri is the engine's
    tcmu+unix:///?socket=SOCKET."""
    argv = [program, "--socket", socket]
    if size is not None:
        argv += ["--size", str(size)]
    if backend is not None:
        argv += ["--backend", backend]
    if timeline is not None:
        argv += ["--timeline", timeline]
    argv += [str(a) for a in extra]
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
    WORKDIR/nbd-server.pid: .pid and .stop() go through that file."""
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
    redis://HOST:PORT, .address HOST:PORT (what nbd-shim's redis backend
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


# ------------------------------------------------------------------ fio

def _is_text(path_or_text):
    return isinstance(path_or_text, bytes) or (
        isinstance(path_or_text, str) and ("{" in path_or_text or "\n" in path_or_text))


def _read(path_or_text):
    """(text, name): a str holding '{' or a newline (or bytes) is fio's
    output itself, anything else a path to it."""
    if isinstance(path_or_text, bytes):
        return path_or_text.decode(errors="replace"), "fio's output"
    if _is_text(path_or_text):
        return path_or_text, "fio's output"
    path = os.fspath(path_or_text)
    with open(path, errors="replace") as f:
        return f.read(), path


def _json_starts(text):
    """Where fio's JSON object may start: each '{' that begins a line, then
    the first '{' anywhere."""
    starts = [0] if text.startswith("{") else []
    i = text.find("\n{")
    while i >= 0:
        starts.append(i + 1)
        i = text.find("\n{", i + 1)
    first = text.find("{")
    if first >= 0 and first not in starts:
        starts.append(first)
    return starts


def load_fio_json(path_or_text, name=None):
    """fio's JSON output as an object. fio (and an engine) may print
    messages before the JSON object, and some versions text after it: both
    are skipped. PATH_OR_TEXT is a path, or the output itself (a str with
    '{' or a newline in it, or bytes). NAME is used in messages."""
    text, default_name = _read(path_or_text)
    return parse_fio_json(text, name or default_name)


def parse_fio_json(text, name="fio's output"):
    """load_fio_json() of TEXT, always fio's output itself."""
    start, obj, error = _locate_json(text)
    if start is not None:
        return obj
    if error is None:
        raise FioJsonError(f"{name}: no JSON object in fio's output")
    raise FioJsonError(f"{name}: fio's JSON does not parse: {error}")


def _locate_json(text):
    """(start, object, None) of fio's JSON object in TEXT, or (None, None,
    the first decoding error or None when nothing looked like JSON)."""
    decoder = _json.JSONDecoder()
    error = None
    for start in _json_starts(text):
        try:
            obj, _ = decoder.raw_decode(text[start:])
        except ValueError as e:
            error = error or e
            continue
        if isinstance(obj, dict):
            return start, obj, None
    return None, None, error


def fio_messages(path_or_text):
    """What fio wrote before its JSON object (all of it when there is none)."""
    text, _ = _read(path_or_text)
    return _messages(text)


def _messages(text):
    start, _, _ = _locate_json(text)
    return text if start is None else text[:start]


DDIRS = ("read", "write", "trim")


def fio_summary(data, name="fio's output", percentiles=False, all_jobs=False, jobname=None):
    """The figures of one fio run with group_reporting (exactly one job; with
    ALL_JOBS, every job of the run together; with JOBNAME, the jobs of that
    name together), read, write and trim together:
    iops, bw_mib (summed), cpu_us_per_io (fio's usr+sys % / 100 * job
    runtime, summed, / I/Os: the fio process's CPU per I/O), clat_mean_us and
    lat_mean_us (weighted by I/Os), cpu_pct (over the longest job), ios,
    runtime_s (the longest job's). With PERCENTILES, also DDIR_clat_pNN_us
    for each direction that did I/O (clat_percentiles())."""
    jobs = data.get("jobs") or []
    if jobname is not None:
        jobs = [j for j in jobs if j.get("jobname") == jobname]
        if not jobs:
            raise FioJsonError(f"{name}: no job named {jobname!r} in fio's output")
        all_jobs = True
    if len(jobs) != 1 and not all_jobs:
        raise FioJsonError(f"{name}: expected one job (group_reporting), got {len(jobs)}")
    if not jobs:
        raise FioJsonError(f"{name}: no jobs in fio's output")
    for job in jobs:
        if job.get("error"):
            raise FioJsonError(f"{name}: fio job {job.get('jobname')} error {job['error']}")
    ios = iops = bw = clat = lat = cpu_s = 0.0
    for job in jobs:
        job_ios = 0
        for ddir in DDIRS:
            d = job.get(ddir) or {}
            n = d.get("total_ios", 0)
            if not n:
                continue
            job_ios += n
            iops += d["iops"]
            bw += d["bw_bytes"]
            clat += d["clat_ns"]["mean"] * n
            lat += d["lat_ns"]["mean"] * n
        ios += job_ios
        cpu_s += (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * job["job_runtime"] / 1000.0
    if not ios:
        raise FioJsonError(f"{name}: the job did no I/O")
    runtime_s = max(job["job_runtime"] for job in jobs) / 1000.0
    out = {
        "iops": iops,
        "bw_mib": bw / 2**20,
        "cpu_us_per_io": cpu_s / ios * 1e6,
        "clat_mean_us": clat / ios / 1e3,
        "lat_mean_us": lat / ios / 1e3,
        "cpu_pct": 100.0 * cpu_s / runtime_s if runtime_s else 0.0,
        "ios": ios,
        "runtime_s": runtime_s,
    }
    if percentiles:
        for ddir, pcts in clat_percentiles({"jobs": jobs}).items():
            for p, us in pcts.items():
                out[f"{ddir}_clat_{p}_us"] = us
    return out


def _pct_name(key):
    # fio's "99.900000" -> "p99.9"
    return "p" + (f"{float(key):.6f}".rstrip("0").rstrip("."))


def clat_percentiles(data):
    """{ddir: {"p50": us, "p99.9": us, ...}} from fio's clat_ns percentiles,
    for each direction of each job that did I/O (later jobs overwrite
    earlier ones: meant for one job)."""
    out = {}
    for job in data.get("jobs") or []:
        for ddir in DDIRS:
            d = job.get(ddir) or {}
            pct = (d.get("clat_ns") or {}).get("percentile")
            if not d.get("total_ios") or not pct:
                continue
            out[ddir] = {_pct_name(k): v / 1e3 for k, v in
                         sorted(pct.items(), key=lambda kv: float(kv[0]))}
    return out


def merged_clat_percentiles(data, percentiles=(50.0, 99.0, 99.9)):
    """({"p50": us, ...}, how): completion-latency percentiles over every
    job and direction of a run together. From fio's latency histograms
    (clat_ns "bins", present with --output-format=json+) when there are
    any: how is "bins"; otherwise from fio's own percentiles of the
    direction that did the most I/O: how is "DDIR"."""
    bins = {}
    for job in data.get("jobs") or []:
        for ddir in DDIRS:
            for k, n in (((job.get(ddir) or {}).get("clat_ns") or {}).get("bins") or {}).items():
                bins[int(k)] = bins.get(int(k), 0) + n
    total = sum(bins.values())
    if total:
        out, keys, acc, i = {}, sorted(bins), 0, 0
        for p in sorted(percentiles):
            want = p / 100.0 * total
            while i < len(keys) and acc + bins[keys[i]] < want:
                acc += bins[keys[i]]
                i += 1
            out[_pct_name(p)] = keys[min(i, len(keys) - 1)] / 1e3
        return out, "bins"
    best, most = None, 0
    for job in data.get("jobs") or []:
        for ddir in DDIRS:
            n = (job.get(ddir) or {}).get("total_ios", 0)
            if n > most:
                best, most = ddir, n
    per = clat_percentiles(data).get(best, {})
    return {_pct_name(p): per.get(_pct_name(p)) for p in percentiles}, best


def fio_figure(data, kind, ddir, job=None, scale=None):
    """One figure over the jobs of a fio run (those named JOB, when given),
    in direction DDIR: 'iops' (summed), 'bw_MB' (10^6 bytes/s, summed),
    'bw_MiB', or 'elapsed' (the longest job's seconds; with SCALE, a dict
    with doc_amount, scaled to that many bytes from the bytes done)."""
    jobs = data.get("jobs") or []
    if job:
        jobs = [j for j in jobs if j.get("jobname") == job]
    if not jobs:
        raise FioJsonError(f"no fio job {job or ''} in the output")
    for j in jobs:
        if j.get("error"):
            raise FioJsonError(f"fio job {j.get('jobname')} failed with error {j['error']}")
    d = [j.get(ddir) or {} for j in jobs]
    if kind == "iops":
        return sum(x.get("iops", 0.0) for x in d)
    if kind == "bw_MB":
        return sum(x.get("bw_bytes", 0) for x in d) / 1e6
    if kind == "bw_MiB":
        return sum(x.get("bw_bytes", 0) for x in d) / 2**20
    if kind == "elapsed":
        seconds = max(j.get("job_runtime", 0) for j in jobs) / 1000.0
        done = sum(x.get("io_bytes", 0) for x in d)
        if not done:
            raise FioJsonError("no I/O done")
        # scaled to the document's amount of data
        return seconds * (scale["doc_amount"] / done) if scale else seconds
    raise ValueError(kind)


class FioRun:
    """A finished fio run: returncode, data (the parsed JSON, or None),
    output (the path of fio's --output, if kept), log (the path of its
    messages, if any), text (what fio printed, when neither took it)."""

    def __init__(self, returncode, data=None, output=None, log=None, text=None):
        self.returncode = returncode
        self.data = data
        self.output = output
        self.log = log
        self.text = text


def run_fio(args, json=True, env=None, timeout=None, *, fio="fio", output=None, log=None,
            cwd=None, pin=None, progress=False, check=True):
    """Run FIO with ARGS (a list, without the program) and return a FioRun.

    json: add --output-format=json and --output=OUTPUT (a temporary file,
      removed after reading, when OUTPUT is None), and parse it (.data).
    env: variables set over ours; a value None removes one.
    log: a path for fio's stdout and stderr, which starts with the
      command line (and ENV); without it they are captured into .text.
    progress: leave fio's stdout on our terminal (its --eta line), and
      clear that line afterwards.
    pin: CPUs for taskset -c.
    check: a non-zero exit raises FioError naming fio's last messages (from
      the log and from before the JSON); a timeout always raises FioError.
    """
    argv = [fio] + [str(a) for a in args]
    tmp = None
    if json:
        if output is None:
            fd, tmp = tempfile.mkstemp(prefix="fio-", suffix=".json")
            os.close(fd)
        argv[1:1] = ["--output-format=json", f"--output={output or tmp}"]
    elif output is not None:
        argv[1:1] = [f"--output={output}"]
    out_path = output or tmp
    if pin is not None:
        argv = ["taskset", "-c", str(pin)] + argv
    full_env = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = str(v)
    shown_env = {k: v for k, v in (env or {}).items() if v is not None}
    logf = None
    try:
        if log is not None:
            logf = open(log, "w")
            logf.write(" ".join(f"{k}={v}" for k, v in sorted(shown_env.items())) + " " +
                       " ".join(argv) + "\n")
            logf.flush()
            stdout, stderr = (None if progress else logf), logf
        else:
            stdout = None if progress else subprocess.PIPE
            stderr = subprocess.STDOUT if not progress else subprocess.PIPE
        try:
            r = subprocess.run(argv, env=full_env, stdout=stdout, stderr=stderr,
                               stdin=subprocess.DEVNULL, timeout=timeout, cwd=cwd,
                               errors="replace" if log is None else None,
                               text=log is None)
        except subprocess.TimeoutExpired:
            raise FioError(f"fio did not finish within {timeout} s")
        finally:
            if progress:
                sys.stdout.write("\r\033[K")
                sys.stdout.flush()
            if logf is not None:
                logf.close()
        text = None
        if log is None:
            text = (r.stdout or "") + (r.stderr or "")
        if r.returncode != 0:
            if check:
                raise FioError(_fio_failure(r.returncode, log, out_path, text))
            return FioRun(r.returncode, None, output, log, text)
        data = load_fio_json(out_path, name=os.path.basename(out_path)) if json else None
        return FioRun(0, data, output, log, text)
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _fio_failure(rc, log, output, text):
    """'fio exited with status N: its last three messages (see LOG)'."""
    said = []
    sources = [(log, 1)] if log else []
    if output:
        sources.append((output, 0))
    for path, skip in sources:
        try:
            with open(path, errors="replace") as f:
                t = f.read()
        except OSError:
            continue
        if path == output:
            t = _messages(t)
        said += [l.strip() for l in t.splitlines()[skip:] if l.strip()]
    if text:
        said += [l.strip() for l in text.splitlines() if l.strip()]
    said = list(dict.fromkeys(said))[-3:]
    status = f"status {rc}" if rc > 0 else status_text(rc)
    return (f"fio exited with {status}"
            + (f": {' / '.join(said)}" if said else "")
            + (f" (see {os.path.basename(log)})" if log else ""))


# ------------------------------------------------------------------ small pieces

_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text):
    """Bytes from '64M', '2GiB', '4k', '512' (binary units); ValueError
    naming the text otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (a number with K, M, G or T, e.g. 64M, 2G)")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


def proc_cpu_ticks(pid):
    """utime + stime of PID in clock ticks, or None when it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # the fields after the command, which may hold spaces and ')'
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def reexec_for_matplotlib(script, argv, marker):
    """The pictures need matplotlib (Debian: python3-matplotlib, for
    /usr/bin/python3). When this interpreter lacks it (pyenv, a venv), exec
    SCRIPT with ARGV under the system one, once (the environment variable
    MARKER stops a loop); otherwise return."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    system = "/usr/bin/python3"
    if os.environ.get(marker) or not os.access(system, os.X_OK) or \
            os.path.realpath(sys.executable) == os.path.realpath(system):
        return
    os.environ[marker] = "1"
    os.execv(system, [system, os.path.abspath(script)] + list(argv))


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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="harness.py", description=__doc__.split("\nPython:")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("free-port", help="print a free TCP port on 127.0.0.1")
    for kind in ("socket", "port"):
        p = sub.add_parser(f"wait-{kind}", help=f"wait for a {'Unix socket' if kind == 'socket' else 'TCP port'}")
        if kind == "socket":
            p.add_argument("path")
        else:
            p.add_argument("port", type=int)
            p.add_argument("--host", default=LOOPBACK)
        p.add_argument("seconds", type=float, nargs="?", default=10.0)
        p.add_argument("--pid", type=int, help="the server's process: fail as soon as it has gone")
        p.add_argument("--what", help="the server, for messages (default: its command line)")
    p = sub.add_parser("fio-summary", help="metric lines of one fio JSON output")
    p.add_argument("file")
    p.add_argument("--percentiles", action="store_true")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--job", help="only the jobs of this name (a run without group_reporting)")
    which.add_argument("--all-jobs", action="store_true", help="every job of the run together")
    p = sub.add_parser("fio-messages", help="what fio wrote before its JSON")
    p.add_argument("file")
    p = sub.add_parser("cpu-ticks", help="utime + stime of a process, in clock ticks")
    p.add_argument("pid", type=int)
    p = sub.add_parser("tls-certificates", help="a CA, server and client certificates in DIR")
    p.add_argument("dir")
    p.add_argument("--host", action="append",
                   help="a name or address the server certificate is for (repeatable; "
                   "default localhost and 127.0.0.1)")
    p.add_argument("--client", default="torus-client", help="the client certificate's CN")
    p = sub.add_parser("tls-psk", help="a PSK file for one user")
    p.add_argument("file")
    p.add_argument("--user", default="torus")
    p = sub.add_parser("libnbd-home", help="a HOME whose .pki/libnbd holds DIR's client files")
    p.add_argument("home")
    p.add_argument("dir")
    args = ap.parse_args(argv)

    if args.cmd == "free-port":
        print(free_port())
    elif args.cmd == "wait-socket":
        return _cli_wait(args, "socket")
    elif args.cmd == "wait-port":
        return _cli_wait(args, "port")
    elif args.cmd == "fio-summary":
        with open(args.file, errors="replace") as f:
            data = parse_fio_json(f.read(), args.file)
        for k, v in fio_summary(data, args.file, args.percentiles, args.all_jobs,
                                jobname=args.job).items():
            print(f"{k} {v:.6g}")
    elif args.cmd == "fio-messages":
        with open(args.file, errors="replace") as f:
            sys.stdout.write(_messages(f.read()))
    elif args.cmd == "cpu-ticks":
        ticks = proc_cpu_ticks(args.pid)
        if ticks is None:
            print(f"harness: process {args.pid} has gone", file=sys.stderr)
            return 1
        print(ticks)
    elif args.cmd == "tls-certificates":
        tls_certificates(args.dir, tuple(args.host or ("localhost", LOOPBACK)), args.client)
    elif args.cmd == "tls-psk":
        tls_psk(args.file, args.user)
    elif args.cmd == "libnbd-home":
        libnbd_home(args.home, args.dir)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (HarnessError, ValueError, KeyError, OSError) as e:
        print(f"harness: {e}" if not isinstance(e, ServerError) else e, file=sys.stderr)
        sys.exit(1)
