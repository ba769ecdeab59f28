"""The processes the scripts start, in words: the error every helper
raises when one does not work out (HarnessError), an exit status and a
command line for messages, and a process's CPU ticks. Standard library
only; servers.py, fio_json.py and tls.py build on it."""

import shlex
import signal

LOOPBACK = "127.0.0.1"


class HarnessError(Exception):
    """A server, a fio run or a tool that did not work out; the message says
    why."""


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
