#!/usr/bin/env python3
"""Unit tests of scripts/tls.py: certificates and PSK files made here,
served by nbdkit --tls=require (servers.py), and the command line.
"""

import os
import shutil
import subprocess
import unittest

from testlib import Tmp, main, script
import servers
import tls


TLS_TOOLS = all(shutil.which(t) for t in ("certtool", "psktool", "nbdkit", "nbdinfo"))
TLS_NEEDS = "needs certtool and psktool (gnutls-bin), nbdkit and nbdinfo"


class Tls(Tmp):
    """Credentials made here, and TLS-only nbdkit servers that take them and
    refuse what they should (nbdinfo is the client: libnbd, as the engine's
    transport=libnbd and fio's nbd engine)."""

    def nbdinfo(self, uri, env=None):
        r = subprocess.run(["nbdinfo", "--size", uri], capture_output=True, text=True,
                           env=env, timeout=30)
        return r.returncode, r.stdout.strip(), r.stderr.strip()

    @unittest.skipUnless(TLS_TOOLS, TLS_NEEDS)
    def test_certificates(self):
        certs = tls.tls_certificates(self.path("pki"))
        self.assertEqual(sorted(os.listdir(certs)), sorted(tls.TLS_FILES))
        for key in ("ca-key.pem", "server-key.pem", "client-key.pem"):
            self.assertEqual(os.stat(os.path.join(certs, key)).st_mode & 0o077, 0, key)
        other = tls.tls_certificates(self.path("other"))
        sock = self.path("t.sock")
        with servers.nbdkit("null", "size=1M", socket=sock, tls_certificates=certs) as u, \
                servers.nbdkit("null", "size=1M", tls_certificates=certs,
                               log=self.path("k.log")) as t:
            self.assertEqual(u.uri, f"nbds+unix:///?socket={sock}")
            self.assertRegex(t.uri, r"^nbds://127\.0\.0\.1:\d+$")
            self.assertIn(f"--tls-certificates={certs}", t.argv)
            self.assertEqual(self.nbdinfo(f"{u.uri}&tls-certificates={certs}"),
                             (0, "1048576", ""))
            # over TCP the server's certificate must name 127.0.0.1
            self.assertEqual(self.nbdinfo(f"{t.uri}?tls-certificates={certs}"),
                             (0, "1048576", ""))
            rc, _, err = self.nbdinfo(f"{t.uri}?tls-certificates={other}")
            self.assertEqual(rc, 1)
            self.assertIn("certificate verification", err)
            rc, _, err = self.nbdinfo(t.uri.replace("nbds:", "nbd:"))
            self.assertEqual(rc, 1)
            self.assertIn("server requires TLS", err)

    @unittest.skipUnless(TLS_TOOLS, TLS_NEEDS)
    def test_psk(self):
        psk = tls.tls_psk(self.path("keys.psk"), "alice")
        with open(psk) as f:
            self.assertRegex(f.read(), r"^alice:[0-9a-f]{64}\n$")
        tls.tls_psk(psk, "bob")       # made again: one user, a new key
        with open(psk) as f:
            self.assertRegex(f.read(), r"^bob:[0-9a-f]{64}\n$")
        with servers.nbdkit("null", "size=1M", tls_psk=psk, log=self.path("k.log")) as t:
            self.assertIn(f"--tls-psk={psk}", t.argv)
            host = t.uri[len("nbds://"):]
            self.assertEqual(self.nbdinfo(f"nbds://bob@{host}?tls-psk-file={psk}"),
                             (0, "1048576", ""))
            rc, _, err = self.nbdinfo(f"nbds://alice@{host}?tls-psk-file={psk}")
            self.assertEqual(rc, 1)
            self.assertIn("alice", err)

    @unittest.skipUnless(TLS_TOOLS, TLS_NEEDS)
    def test_libnbd_home(self):
        certs = tls.tls_certificates(self.path("pki"))
        home = tls.libnbd_home(self.path("home"), certs)
        pki = os.path.join(home, ".pki", "libnbd")
        self.assertEqual(sorted(os.listdir(pki)), sorted(tls.TLS_CLIENT_FILES))
        for name in tls.TLS_CLIENT_FILES:
            with open(os.path.join(pki, name)) as a, open(os.path.join(certs, name)) as b:
                self.assertEqual(a.read(), b.read())
        self.assertEqual(os.stat(os.path.join(pki, "client-key.pem")).st_mode & 0o077, 0)
        with self.assertRaises(tls.HarnessError) as cm:
            tls.libnbd_home(self.path("home2"), self.path("none"))
        self.assertIn("has no ca-cert.pem: make the directory with tls_certificates()",
                      str(cm.exception))

    def test_missing_tool_and_both(self):
        with self.assertRaises(tls.HarnessError) as cm:
            tls.tls_psk(self.path("k.psk"), psktool="no-such-psktool")
        self.assertEqual(str(cm.exception), "no-such-psktool not found: it comes with "
                         "Debian's gnutls-bin (scripts/deps.sh installs it)")
        with self.assertRaises(ValueError):
            servers.nbdkit_tls_args("certs", "k.psk")
        self.assertEqual(servers.nbdkit_tls_args(), [])

    @unittest.skipUnless(TLS_TOOLS, TLS_NEEDS)
    def test_cli(self):
        def cli(*args):
            return script("tls.py", *args, timeout=30)
        r = cli("tls-certificates", self.path("pki"), "--host", "example.test",
                "--client", "carol")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        r = subprocess.run(["certtool", "-i", "--infile", self.path("pki/server-cert.pem")],
                           capture_output=True, text=True)
        self.assertIn("DNSname: example.test", r.stdout)
        self.assertNotIn("IPAddress", r.stdout)
        r = cli("tls-psk", self.path("k.psk"), "--user", "dave")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        with open(self.path("k.psk")) as f:
            self.assertTrue(f.read().startswith("dave:"))
        r = cli("libnbd-home", self.path("home"), self.path("pki"))
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertTrue(os.path.exists(self.path("home/.pki/libnbd/client-key.pem")))
        r = cli("libnbd-home", self.path("home"), self.path("none"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("has no ca-cert.pem", r.stderr)


if __name__ == "__main__":
    main()
