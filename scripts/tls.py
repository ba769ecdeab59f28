"""TLS credentials for TLS-only servers and their clients: a CA with
server and client certificates (certtool), PSK files (psktool), and a
libnbd client's HOME. Standard library only; nbdkit's options for them
are servers.nbdkit_tls_args().

Command line (harness.py offers it too):

  tls.py tls-certificates DIR [--host NAME]... [--client CN]
      a CA, a server certificate (for localhost and 127.0.0.1 unless --host
      names others) and a client certificate in DIR, for nbdkit
      --tls-certificates=DIR and libnbd's tls-certificates=DIR (certtool)
  tls.py tls-psk FILE [--user NAME]
      a PSK file for NAME (default torus), for nbdkit --tls-psk=FILE and
      libnbd's tls-psk-file=FILE with the same user name (psktool)
  tls.py libnbd-home HOME DIR
      DIR's client files copied to HOME/.pki/libnbd, where libnbd looks for
      certificates when it is given none and does not run as root (root's
      is /etc/pki/libnbd)
"""

import ipaddress
import os
import shutil
import subprocess
import sys

from procs import LOOPBACK, HarnessError, cli_main, cmdline as _cmdline, exit_with, status_text


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
                               f"tls_certificates() (tls.py tls-certificates DIR)")
        shutil.copyfile(src, os.path.join(pki, name))
    os.chmod(os.path.join(pki, "client-key.pem"), 0o600)
    return home


# ------------------------------------------------------------------ CLI

def add_cli(sub):
    """This module's subcommands on the argparse subparsers SUB (harness.py
    offers them too)."""
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


def run_cli(args):
    """Run the subcommand add_cli() parsed into ARGS; its exit status."""
    if args.cmd == "tls-certificates":
        tls_certificates(args.dir, tuple(args.host or ("localhost", LOOPBACK)), args.client)
    elif args.cmd == "tls-psk":
        tls_psk(args.file, args.user)
    elif args.cmd == "libnbd-home":
        libnbd_home(args.home, args.dir)
    return 0


def main(argv=None):
    return cli_main("tls.py", __doc__, (sys.modules[__name__],), argv)


if __name__ == "__main__":
    exit_with(main, "tls")
