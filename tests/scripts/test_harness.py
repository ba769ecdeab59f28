#!/usr/bin/env python3
"""Unit tests of scripts/harness.py: fio's JSON behind a preamble, the
summary's figures, free ports, waiting for sockets and ports (and failing at
once, with the command and its exit status, when the server died), the
command line, the server starters that can run here (nbdkit, the shim), and
TLS: certificates and PSK files made here, served by nbdkit --tls=require.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

SRC = os.environ.get("TORUS_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "..", "..")
BUILD = os.environ.get("TORUS_BUILD", os.path.join(SRC, "build"))
HARNESS = os.path.join(SRC, "scripts", "harness.py")
sys.path.insert(0, os.path.join(SRC, "scripts"))
import harness  # noqa: E402


def fio_json(jobs):
    return {"fio version": "fio-3.33", "jobs": jobs}


def ddir(ios, iops, bw, clat_mean, lat_mean, io_bytes=0, pct=None):
    d = {"total_ios": ios, "iops": iops, "bw_bytes": bw, "io_bytes": io_bytes,
         "clat_ns": {"mean": clat_mean}, "lat_ns": {"mean": lat_mean}}
    if pct:
        d["clat_ns"]["percentile"] = pct
    return d


ONE_JOB = fio_json([{
    "jobname": "j", "error": 0, "job_runtime": 2000, "usr_cpu": 10.0, "sys_cpu": 15.0,
    "read": ddir(3000, 1500.0, 1500 * 4096, 40000.0, 41000.0,
                 pct={"50.000000": 38912, "99.000000": 70144, "99.900000": 120320}),
    "write": ddir(1000, 500.0, 500 * 4096, 60000.0, 62000.0),
    "trim": ddir(0, 0.0, 0, 0.0, 0.0),
}])


class Tmp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test-harness.")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def path(self, name):
        return os.path.join(self.tmp, name)


class FioJson(Tmp):
    PREAMBLE = ("torus: no uri: starting nbdkit memory on /tmp/x.sock\n"
                "fio: engine says {not json} here\n"
                "{broken\n")

    def test_preamble_text(self):
        text = self.PREAMBLE + json.dumps(ONE_JOB, indent=2) + "\ntrailing words\n"
        self.assertEqual(harness.load_fio_json(text), ONE_JOB)
        self.assertEqual(harness.fio_messages(text), self.PREAMBLE)

    def test_preamble_file(self):
        p = self.path("out.json")
        with open(p, "w") as f:
            f.write(self.PREAMBLE + json.dumps(ONE_JOB, indent=2))
        self.assertEqual(harness.load_fio_json(p), ONE_JOB)
        self.assertEqual(harness.fio_messages(p), self.PREAMBLE)

    def test_no_json(self):
        p = self.path("none.json")
        with open(p, "w") as f:
            f.write("fio: engine not loadable\n")
        with self.assertRaisesRegex(harness.FioJsonError, "none.json: no JSON object"):
            harness.load_fio_json(p)
        with self.assertRaises(ValueError):      # what benchlib's callers catch
            harness.load_fio_json("fio: nothing\n")

    def test_summary_formulas(self):
        s = harness.fio_summary(ONE_JOB)
        ios = 4000
        self.assertEqual(s["ios"], ios)
        self.assertEqual(s["iops"], 2000.0)
        self.assertEqual(s["bw_mib"], 2000 * 4096 / 2**20)
        self.assertEqual(s["cpu_pct"], 25.0)
        self.assertEqual(s["runtime_s"], 2.0)
        self.assertEqual(s["cpu_us_per_io"], 25.0 / 100.0 * 2.0 / ios * 1e6)
        self.assertEqual(s["clat_mean_us"], (40000.0 * 3000 + 60000.0 * 1000) / ios / 1e3)
        self.assertEqual(s["lat_mean_us"], (41000.0 * 3000 + 62000.0 * 1000) / ios / 1e3)
        self.assertEqual(list(s), ["iops", "bw_mib", "cpu_us_per_io", "clat_mean_us",
                                   "lat_mean_us", "cpu_pct", "ios", "runtime_s"])
        p = harness.fio_summary(ONE_JOB, percentiles=True)
        self.assertEqual(p["read_clat_p50_us"], 38.912)
        self.assertEqual(p["read_clat_p99.9_us"], 120.32)
        self.assertNotIn("write_clat_p50_us", p)

    def test_summary_refuses(self):
        with self.assertRaisesRegex(harness.FioJsonError, "expected one job"):
            harness.fio_summary(fio_json([]))
        bad = json.loads(json.dumps(ONE_JOB))
        bad["jobs"][0]["error"] = 5
        with self.assertRaisesRegex(harness.FioJsonError, "error 5"):
            harness.fio_summary(bad)

    def test_figures(self):
        two = fio_json([
            {"jobname": "a", "job_runtime": 1000, "write": ddir(1, 100.0, 10**6, 0, 0, 4096)},
            {"jobname": "a", "job_runtime": 3000, "write": ddir(1, 50.0, 2 * 10**6, 0, 0, 4096)},
            {"jobname": "b", "job_runtime": 9000, "write": ddir(1, 1.0, 1, 0, 0, 1)},
        ])
        self.assertEqual(harness.fio_figure(two, "iops", "write", "a"), 150.0)
        self.assertEqual(harness.fio_figure(two, "bw_MB", "write", "a"), 3.0)
        self.assertEqual(harness.fio_figure(two, "bw_MiB", "write", "a"), 3 * 10**6 / 2**20)
        self.assertEqual(harness.fio_figure(two, "elapsed", "write", "a"), 3.0)
        self.assertEqual(harness.fio_figure(two, "elapsed", "write", "a",
                                            {"doc_amount": 8192 * 10}), 30.0)
        with self.assertRaisesRegex(harness.FioError, "no fio job c"):
            harness.fio_figure(two, "iops", "write", "c")

    def test_cli_summary(self):
        p = self.path("out.json")
        with open(p, "w") as f:
            f.write(self.PREAMBLE + json.dumps(ONE_JOB))
        out = subprocess.run([sys.executable, HARNESS, "fio-summary", p], check=True,
                             capture_output=True, text=True).stdout
        lines = dict(l.split() for l in out.splitlines())
        self.assertEqual(lines["iops"], "2000")
        self.assertEqual(lines["cpu_us_per_io"], f"{25.0 / 100.0 * 2.0 / 4000 * 1e6:.6g}")


class Ports(Tmp):
    def test_free_port(self):
        port = harness.free_port()
        self.assertTrue(1024 <= port < 65536)
        with self.assertRaises(OSError):         # nothing listens there
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        with socket.socket() as s:               # and it can be bound
            s.bind(("127.0.0.1", port))

    def test_cli_free_port(self):
        out = subprocess.run([sys.executable, HARNESS, "free-port"], check=True,
                             capture_output=True, text=True).stdout
        self.assertTrue(out.strip().isdigit())

    def test_wait_port(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            harness.wait_port(s.getsockname()[1], 2)
        port = harness.free_port()
        t0 = time.monotonic()
        with self.assertRaisesRegex(harness.ServerError,
                                    f"nothing listens on 127.0.0.1:{port} within 0.3 s"):
            harness.wait_port(port, 0.3)
        self.assertLess(time.monotonic() - t0, 3)


class WaitSocket(Tmp):
    def test_appears(self):
        p = self.path("s.sock")

        def listen_later():
            time.sleep(0.2)
            s = socket.socket(socket.AF_UNIX)
            s.bind(p)
            self.addCleanup(s.close)
        threading.Thread(target=listen_later).start()
        harness.wait_socket(p, 5)

    def test_timeout(self):
        p = self.path("never.sock")
        with self.assertRaisesRegex(harness.ServerError,
                                    f"socket {p} did not appear within 0.2 s"):
            harness.wait_socket(p, 0.2)
        with open(p, "w"):
            pass                                  # a plain file is not a socket
        with self.assertRaisesRegex(harness.ServerError, "did not appear"):
            harness.wait_socket(p, 0.1)

    def test_dead_process(self):
        """A server that died fails the wait at once, with its command and
        exit status, not after the timeout."""
        proc = subprocess.Popen(["sh", "-c", "echo cannot start >&2; exit 3"],
                                stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        with self.assertRaises(harness.ServerError) as cm:
            harness.wait_socket(self.path("s.sock"), 30, proc)
        self.assertLess(time.monotonic() - t0, 5)
        msg = str(cm.exception)
        self.assertIn("sh -c 'echo cannot start >&2; exit 3' exited before creating socket", msg)
        self.assertIn("(exit status 3)", msg)
        self.assertNotIsInstance(cm.exception, harness.ProcessGone)

    def test_dead_process_named(self):
        proc = subprocess.Popen(["sh", "-c", "kill -9 $$"])
        with self.assertRaises(harness.ServerError) as cm:
            harness.wait_port(harness.free_port(), 30, proc, what="the server",
                              log="/x/servers.log")
        msg = str(cm.exception)
        self.assertRegex(msg, r"^the server exited before listening on 127\.0\.0\.1:\d+ "
                              r"\(killed by signal 9 \(SIGKILL\)\); command: sh -c 'kill -9 \$\$'; "
                              r"see /x/servers.log$")

    def test_cli_dead_pid(self):
        """Shell code passes --pid. A dead child its parent has not reaped
        yet (a zombie) gives its exit status; one already reaped (as a shell
        does at once) ends the wait with status 3, the shell adds it."""
        def wait(pid):
            return subprocess.run([sys.executable, HARNESS, "wait-socket", self.path("s.sock"),
                                   "30", "--pid", str(pid), "--what", "my server"],
                                  capture_output=True, text=True, timeout=20)
        proc = subprocess.Popen(["sh", "-c", "exit 4"])
        t0 = time.monotonic()
        r = wait(proc.pid)                        # not reaped: a zombie
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("my server exited before creating socket", r.stderr)
        self.assertIn("(exit status 4)", r.stderr)
        self.assertEqual(proc.wait(), 4)
        r = wait(proc.pid)                        # reaped
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("my server exited before creating socket", r.stderr)
        self.assertLess(time.monotonic() - t0, 10)

    def test_cli_timeout(self):
        r = subprocess.run([sys.executable, HARNESS, "wait-port", str(harness.free_port()),
                            "0.2"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("nothing listens on 127.0.0.1:", r.stderr)


class Servers(Tmp):
    @unittest.skipUnless(shutil.which("nbdkit"), "nbdkit is not installed")
    def test_nbdkit_unix_and_tcp(self):
        sock = self.path("k.sock")
        with harness.nbdkit("memory", "size=1M", socket=sock, export="e") as srv:
            self.assertEqual(srv.uri, f"nbd+unix:///e?socket={sock}")
            self.assertTrue(os.path.exists(f"/proc/{srv.pid}"))
            pid = srv.pid
        self.assertIsNotNone(srv.proc.returncode)
        with harness.nbdkit("memory", "size=1M", log=self.path("k.log")) as srv:
            self.assertRegex(srv.uri, r"^nbd://127\.0\.0\.1:\d+$")
            socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
        self.assertNotEqual(pid, srv.pid)

    @unittest.skipUnless(shutil.which("nbdkit"), "nbdkit is not installed")
    def test_nbdkit_fails_clearly(self):
        log = self.path("k.log")
        with self.assertRaises(harness.ServerError) as cm:
            harness.nbdkit("no-such-plugin", socket=self.path("k.sock"), log=log)
        msg = str(cm.exception)
        self.assertIn("nbdkit no-such-plugin exited before creating socket", msg)
        self.assertIn("exit status 1", msg)
        self.assertIn("command: nbdkit --foreground --exit-with-parent -U", msg)
        self.assertIn(f"see {log}", msg)

    @unittest.skipUnless(shutil.which("nbdkit") and shutil.which("taskset")
                         and os.cpu_count() >= 2, "needs nbdkit, taskset and 2 CPUs")
    def test_pinned(self):
        with harness.nbdkit("null", "size=1M", socket=self.path("k.sock"), pin=1) as srv:
            with open(f"/proc/{srv.pid}/status") as f:
                cpus = [l.split()[1] for l in f if l.startswith("Cpus_allowed_list")]
            self.assertEqual(cpus, ["1"])

    def test_shim(self):
        shim = os.path.join(BUILD, "shims", "nbd", "nbd-shim")
        if not os.access(shim, os.X_OK):
            self.skipTest(f"no shim at {shim}")
        with harness.nbd_shim(shim, "zeroos", backend="memory", size="1M",
                              socket=self.path("z.sock")) as srv:
            self.assertEqual(srv.uri, f"nbd+unix:///default?socket={self.path('z.sock')}")

    def test_tcmu_shim(self):
        shim = os.path.join(BUILD, "shims", "tcmu", "tcmu-shim")
        if not os.access(shim, os.X_OK):
            self.skipTest(f"no handler host at {shim}")
        sock = self.path("t.sock")
        with harness.tcmu_shim(shim, sock, backend="memory", size="1M") as srv:
            self.assertEqual(srv.uri, f"tcmu+unix:///?socket={sock}")
            self.assertTrue(os.path.exists(sock))
        self.assertFalse(os.path.exists(sock))


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
        certs = harness.tls_certificates(self.path("pki"))
        self.assertEqual(sorted(os.listdir(certs)), sorted(harness.TLS_FILES))
        for key in ("ca-key.pem", "server-key.pem", "client-key.pem"):
            self.assertEqual(os.stat(os.path.join(certs, key)).st_mode & 0o077, 0, key)
        other = harness.tls_certificates(self.path("other"))
        sock = self.path("t.sock")
        with harness.nbdkit("null", "size=1M", socket=sock, tls_certificates=certs) as u, \
                harness.nbdkit("null", "size=1M", tls_certificates=certs,
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
        psk = harness.tls_psk(self.path("keys.psk"), "alice")
        with open(psk) as f:
            self.assertRegex(f.read(), r"^alice:[0-9a-f]{64}\n$")
        harness.tls_psk(psk, "bob")       # made again: one user, a new key
        with open(psk) as f:
            self.assertRegex(f.read(), r"^bob:[0-9a-f]{64}\n$")
        with harness.nbdkit("null", "size=1M", tls_psk=psk, log=self.path("k.log")) as t:
            self.assertIn(f"--tls-psk={psk}", t.argv)
            host = t.uri[len("nbds://"):]
            self.assertEqual(self.nbdinfo(f"nbds://bob@{host}?tls-psk-file={psk}"),
                             (0, "1048576", ""))
            rc, _, err = self.nbdinfo(f"nbds://alice@{host}?tls-psk-file={psk}")
            self.assertEqual(rc, 1)
            self.assertIn("alice", err)

    @unittest.skipUnless(TLS_TOOLS, TLS_NEEDS)
    def test_libnbd_home(self):
        certs = harness.tls_certificates(self.path("pki"))
        home = harness.libnbd_home(self.path("home"), certs)
        pki = os.path.join(home, ".pki", "libnbd")
        self.assertEqual(sorted(os.listdir(pki)), sorted(harness.TLS_CLIENT_FILES))
        for name in harness.TLS_CLIENT_FILES:
            with open(os.path.join(pki, name)) as a, open(os.path.join(certs, name)) as b:
                self.assertEqual(a.read(), b.read())
        self.assertEqual(os.stat(os.path.join(pki, "client-key.pem")).st_mode & 0o077, 0)
        with self.assertRaises(harness.HarnessError) as cm:
            harness.libnbd_home(self.path("home2"), self.path("none"))
        self.assertIn("has no ca-cert.pem: make the directory with tls_certificates()",
                      str(cm.exception))

    def test_missing_tool_and_both(self):
        with self.assertRaises(harness.HarnessError) as cm:
            harness.tls_psk(self.path("k.psk"), psktool="no-such-psktool")
        self.assertEqual(str(cm.exception), "no-such-psktool not found: it comes with "
                         "Debian's gnutls-bin (scripts/deps.sh installs it)")
        with self.assertRaises(ValueError):
            harness.nbdkit_tls_args("certs", "k.psk")
        self.assertEqual(harness.nbdkit_tls_args(), [])

    @unittest.skipUnless(TLS_TOOLS, TLS_NEEDS)
    def test_cli(self):
        def cli(*args):
            return subprocess.run([sys.executable, HARNESS] + list(args),
                                  capture_output=True, text=True, timeout=30)
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


class RunFio(Tmp):
    @unittest.skipUnless(shutil.which("fio"), "fio is not installed")
    def test_null_engine(self):
        log = self.path("fio.log")
        r = harness.run_fio(["--name=n", "--ioengine=null", "--rw=read", "--bs=4k",
                             "--size=1m"], env={"TORUS_UNUSED": "1"}, timeout=60, log=log,
                            cwd=self.tmp)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(harness.fio_summary(r.data)["ios"], 256)
        with open(log) as f:
            self.assertTrue(f.readline().startswith("TORUS_UNUSED=1 fio --output-format=json"))

    @unittest.skipUnless(shutil.which("fio"), "fio is not installed")
    def test_failure_names_fio_messages(self):
        with self.assertRaisesRegex(harness.FioError, r"fio exited with status 1: .*"
                                                      r"no-such-engine"):
            harness.run_fio(["--name=n", "--ioengine=no-such-engine", "--size=1m"],
                            timeout=60, cwd=self.tmp)


class SmallPieces(Tmp):
    def test_parse_size(self):
        self.assertEqual(harness.parse_size("64M"), 64 << 20)
        self.assertEqual(harness.parse_size(" 2 GiB "), 2 << 30)
        self.assertEqual(harness.parse_size("4k"), 4096)
        with self.assertRaisesRegex(ValueError, "not a size: '1.5G'"):
            harness.parse_size("1.5G")

    def test_cpu_ticks(self):
        busy = subprocess.Popen([sys.executable, "-c", "import time\nt=time.process_time()\n"
                                 "while time.process_time() - t < 0.3: pass\ninput()"],
                                stdin=subprocess.PIPE)
        time.sleep(1.0)
        ticks = harness.proc_cpu_ticks(busy.pid)
        out = subprocess.run([sys.executable, HARNESS, "cpu-ticks", str(busy.pid)],
                             capture_output=True, text=True)
        busy.communicate(b"\n")
        self.assertGreaterEqual(ticks, 0.2 * os.sysconf("SC_CLK_TCK"))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertGreaterEqual(int(out.stdout), ticks)
        self.assertIsNone(harness.proc_cpu_ticks(busy.pid))
        gone = subprocess.run([sys.executable, HARNESS, "cpu-ticks", str(busy.pid)],
                              capture_output=True, text=True)
        self.assertEqual((gone.returncode, gone.stderr.strip()),
                         (1, f"harness: process {busy.pid} has gone"))

    def test_summary_all_jobs(self):
        two = fio_json([
            {"jobname": "a", "job_runtime": 1000, "usr_cpu": 10.0, "sys_cpu": 0.0,
             "write": ddir(100, 100.0, 10**6, 0, 0, 4096)},
            {"jobname": "b", "job_runtime": 2000, "usr_cpu": 5.0, "sys_cpu": 5.0,
             "write": ddir(300, 150.0, 2 * 10**6, 0, 0, 4096)}])
        with self.assertRaisesRegex(harness.FioJsonError, "expected one job"):
            harness.fio_summary(two)
        s = harness.fio_summary(two, all_jobs=True)
        self.assertEqual((s["ios"], s["iops"], s["runtime_s"]), (400, 250.0, 2.0))
        # 0.1 * 1 s + 0.1 * 2 s of fio's CPU
        self.assertAlmostEqual(s["cpu_us_per_io"], 0.3 / 400 * 1e6)
        self.assertAlmostEqual(s["cpu_pct"], 15.0)

    def test_summary_one_job_by_name(self):
        two = fio_json([
            {"jobname": "on", "job_runtime": 1000, "usr_cpu": 10.0, "sys_cpu": 0.0,
             "read": ddir(100, 100.0, 10**6, 0, 0, 4096)},
            {"jobname": "off", "job_runtime": 1000, "usr_cpu": 5.0, "sys_cpu": 5.0,
             "read": ddir(300, 300.0, 10**6, 0, 0, 4096)}])
        on = harness.fio_summary(two, jobname="on")
        self.assertEqual((on["ios"], on["iops"]), (100, 100.0))
        self.assertAlmostEqual(on["cpu_us_per_io"], 0.1 / 100 * 1e6)
        with self.assertRaisesRegex(harness.FioJsonError, "no job named 'of' in fio's output"):
            harness.fio_summary(two, jobname="of")
        path = os.path.join(self.tmp, "two.json")
        with open(path, "w") as f:
            json.dump(two, f)
        out = subprocess.run([sys.executable, HARNESS, "fio-summary", path, "--job", "off"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("ios 300\n", out.stdout)
        both = subprocess.run([sys.executable, HARNESS, "fio-summary", path, "--all-jobs"],
                              capture_output=True, text=True)
        self.assertIn("ios 400\n", both.stdout)
        clash = subprocess.run([sys.executable, HARNESS, "fio-summary", path, "--job", "on",
                                "--all-jobs"], capture_output=True, text=True)
        self.assertEqual(clash.returncode, 2)
        self.assertIn("not allowed with argument", clash.stderr)


if __name__ == "__main__":
    # meson runs it through tests/pyrun.py, which exits 77 on a skipped case
    unittest.main(verbosity=2)
