#!/usr/bin/env python3
"""The scripts' shared command line: one entry for shell code over
servers.py (starting and waiting for servers), fio_json.py (fio's JSON)
and tls.py (TLS credentials), with their subcommands under their own
names; and the two pieces every entry point uses: parse_size() for size
arguments and reexec_for_matplotlib(). Standard library only.

  harness.py free-port | wait-socket | wait-port | exec | cpu-ticks ...
      servers.py's (servers.py --help)
  harness.py fio-summary | fio-messages ...
      fio_json.py's
  harness.py tls-certificates | tls-psk | libnbd-home ...
      tls.py's

Exit status: 0 done; 1 failed (the message is on stderr); 2 usage; 3 the
--pid process of a wait was gone before it was ready (servers.py).
"""

import os
import re
import sys

import fio_json
import servers
import tls
from procs import cli_main, exit_with

_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text):
    """Bytes from '64M', '2GiB', '4k', '512' (binary units); ValueError
    naming the text otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (a number with K, M, G or T, e.g. 64M, 2G)")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


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

MODULES = (servers, fio_json, tls)


def main(argv=None):
    return cli_main("harness.py", __doc__, MODULES, argv, epilog=__doc__.split("\n\n", 1)[1])


if __name__ == "__main__":
    exit_with(main, "harness")
