"""The processes the scripts start, in words: the error every helper
raises when one does not work out (HarnessError), an exit status and a
command line for messages, a process's CPU ticks and parent, watching a
process that is not our child (PidWatch), letting one end (let_end); and
the command-line frame of servers.py, fio_json.py, tls.py and harness.py
(cli_main, exit_with). Standard library only; servers.py, fio_json.py and
tls.py build on it."""

import argparse
import shlex
import signal
import subprocess
import sys

LOOPBACK = "127.0.0.1"


class HarnessError(Exception):
    """A server, a fio run or a tool that did not work out; the message says
    why."""
    # exit_with() puts the script's name before the message
    prefixed = True


def cmdline(argv):
    """ARGV as a shell would show it (a str or bytes as it is)."""
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


def proc_cpu_ticks(pid):
    """utime + stime of PID in clock ticks, or None when it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # the fields after the command, which may hold spaces and ')'
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


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


def ppid(pid):
    """The parent of PID, or None when it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def watched(proc):
    """PROC as something to poll(): a Popen as it is, a pid as a PidWatch."""
    if proc is None or hasattr(proc, "poll"):
        return proc
    return PidWatch(proc)


def ended(proc):
    """True when the watched process has ended."""
    if proc is None:
        return False
    rc = proc.poll()
    return rc is not None or getattr(proc, "gone", False)


def let_end(proc, grace):
    """Give the Popen PROC GRACE seconds to end by itself, then SIGTERM and
    GRACE seconds more, then SIGKILL; it is reaped in every case."""
    try:
        proc.wait(grace)
        return
    except subprocess.TimeoutExpired:
        proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cli_main(prog, doc, modules, argv=None, epilog=None):
    """Parse ARGV (default: the command line) into the subcommands MODULES
    offer (each has add_cli(subparsers) and run_cli(args)) and run the one
    given; its exit status. DOC's first paragraph describes PROG."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0], epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    owner = {}
    for m in modules:
        before = set(sub.choices)
        m.add_cli(sub)
        owner.update(dict.fromkeys(set(sub.choices) - before, m))
    args = ap.parse_args(argv)
    return owner[args.cmd].run_cli(args)


def exit_with(main, name):
    """Exit with MAIN()'s status; a HarnessError, ValueError, KeyError or
    OSError becomes one line on stderr, "NAME: message", and status 1."""
    try:
        sys.exit(main())
    except (HarnessError, ValueError, KeyError, OSError) as e:
        print(f"{name}: {e}" if getattr(e, "prefixed", True) else e, file=sys.stderr)
        sys.exit(1)
