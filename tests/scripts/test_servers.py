#!/usr/bin/env python3
"""Unit tests of scripts/servers.py: free ports, waiting for sockets and
ports (and failing at once, with the command and its exit status, when
the server died), the server starters that can run here (nbdkit, the
shims), a process's CPU ticks, and the command line (exec included).
"""

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import unittest

from testlib import BUILD, SCRIPTS, Tmp, main, script
import servers


class Ports(Tmp):
    def test_free_port(self):
        port = servers.free_port()
        self.assertTrue(1024 <= port < 65536)
        with self.assertRaises(OSError):         # nothing listens there
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        with socket.socket() as s:               # and it can be bound
            s.bind(("127.0.0.1", port))

    def test_cli_free_port(self):
        out = script("servers.py", "free-port", check=True).stdout
        self.assertTrue(out.strip().isdigit())

    def test_wait_port(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            servers.wait_port(s.getsockname()[1], 2)
        port = servers.free_port()
        t0 = time.monotonic()
        with self.assertRaisesRegex(servers.ServerError,
                                    f"nothing listens on 127.0.0.1:{port} within 0.3 s"):
            servers.wait_port(port, 0.3)
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
        servers.wait_socket(p, 5)

    def test_timeout(self):
        p = self.path("never.sock")
        with self.assertRaisesRegex(servers.ServerError,
                                    f"socket {p} did not appear within 0.2 s"):
            servers.wait_socket(p, 0.2)
        with open(p, "w"):
            pass                                  # a plain file is not a socket
        with self.assertRaisesRegex(servers.ServerError, "did not appear"):
            servers.wait_socket(p, 0.1)

    def test_dead_process(self):
        """A server that died fails the wait at once, with its command and
        exit status, not after the timeout."""
        proc = subprocess.Popen(["sh", "-c", "echo cannot start >&2; exit 3"],
                                stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        with self.assertRaises(servers.ServerError) as cm:
            servers.wait_socket(self.path("s.sock"), 30, proc)
        self.assertLess(time.monotonic() - t0, 5)
        msg = str(cm.exception)
        self.assertIn("sh -c 'echo cannot start >&2; exit 3' exited before creating socket", msg)
        self.assertIn("(exit status 3)", msg)
        self.assertNotIsInstance(cm.exception, servers.ProcessGone)

    def test_dead_process_named(self):
        proc = subprocess.Popen(["sh", "-c", "kill -9 $$"])
        with self.assertRaises(servers.ServerError) as cm:
            servers.wait_port(servers.free_port(), 30, proc, what="the server",
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
            return script("servers.py", "wait-socket", self.path("s.sock"), "30", "--pid", pid,
                          "--what", "my server", timeout=20)
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
        r = script("servers.py", "wait-port", servers.free_port(), "0.2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("nothing listens on 127.0.0.1:", r.stderr)


class Servers(Tmp):
    @unittest.skipUnless(shutil.which("nbdkit"), "nbdkit is not installed")
    def test_nbdkit_unix_and_tcp(self):
        sock = self.path("k.sock")
        with servers.nbdkit("memory", "size=1M", socket=sock, export="e") as srv:
            self.assertEqual(srv.uri, f"nbd+unix:///e?socket={sock}")
            self.assertTrue(os.path.exists(f"/proc/{srv.pid}"))
            pid = srv.pid
        self.assertIsNotNone(srv.proc.returncode)
        with servers.nbdkit("memory", "size=1M", log=self.path("k.log")) as srv:
            self.assertRegex(srv.uri, r"^nbd://127\.0\.0\.1:\d+$")
            socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
        self.assertNotEqual(pid, srv.pid)

    @unittest.skipUnless(shutil.which("nbdkit"), "nbdkit is not installed")
    def test_nbdkit_fails_clearly(self):
        log = self.path("k.log")
        with self.assertRaises(servers.ServerError) as cm:
            servers.nbdkit("no-such-plugin", socket=self.path("k.sock"), log=log)
        msg = str(cm.exception)
        self.assertIn("nbdkit no-such-plugin exited before creating socket", msg)
        self.assertIn("exit status 1", msg)
        self.assertIn("command: nbdkit --foreground --exit-with-parent -U", msg)
        self.assertIn(f"see {log}", msg)

    @unittest.skipUnless(shutil.which("nbdkit") and shutil.which("taskset")
                         and os.cpu_count() >= 2, "needs nbdkit, taskset and 2 CPUs")
    def test_pinned(self):
        with servers.nbdkit("null", "size=1M", socket=self.path("k.sock"), pin=1) as srv:
            with open(f"/proc/{srv.pid}/status") as f:
                cpus = [l.split()[1] for l in f if l.startswith("Cpus_allowed_list")]
            self.assertEqual(cpus, ["1"])

    def test_shim(self):
        shim = os.path.join(BUILD, "shims", "nbd", "nbd-shim")
        if not os.access(shim, os.X_OK):
            self.skipTest(f"no shim at {shim}")
        with servers.nbd_shim(shim, "zeroos", store="memory", size="1M",
                              socket=self.path("z.sock")) as srv:
            self.assertEqual(srv.uri, f"nbd+unix:///default?socket={self.path('z.sock')}")

    def test_tcmu_shim(self):
        shim = os.path.join(BUILD, "shims", "tcmu", "tcmu-shim")
        if not os.access(shim, os.X_OK):
            self.skipTest(f"no handler host at {shim}")
        sock = self.path("t.sock")
        with servers.tcmu_shim(shim, sock, store="memory", size="1M") as srv:
            self.assertEqual(srv.uri, f"tcmu+unix:///?socket={sock}")
            self.assertTrue(os.path.exists(sock))
        self.assertFalse(os.path.exists(sock))



class Exec(Tmp):
    """servers.py exec: the shell tests start nbdkit and tcmu-shim with it;
    the process it leaves is the server itself, with nbdkit_argv()'s
    options."""

    @unittest.skipUnless(shutil.which("nbdkit"), "nbdkit is not installed")
    def test_nbdkit(self):
        sock = self.path("k.sock")
        proc = subprocess.Popen([sys.executable, os.path.join(SCRIPTS, "servers.py"), "exec",
                                 "nbdkit", sock,
                                 "--filter=delay", "memory", "1M", "rdelay=0"])
        self.addCleanup(proc.wait)
        self.addCleanup(proc.terminate)
        servers.wait_socket(sock, 10, proc)
        with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        self.assertEqual(argv[1:], servers.nbdkit_argv("memory", "1M", "rdelay=0", socket=sock,
                                                       filters=["delay"])[1:])

    def test_refuses(self):
        for args, said in ((["nbdkit", "s.sock", "--filter=log"], "no plugin"),
                           (["tcmu-shim", "s.sock", "--size", "1M"], "give the program")):
            r = script("servers.py", "exec", *args, timeout=30)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(said, r.stderr)


class NbdServerCli(Tmp):
    @unittest.skipUnless(shutil.which("nbd-server"), "nbd-server is not installed")
    def test_daemon_port_and_pid(self):
        """servers.py nbd-server: the daemon outlives the command, which
        prints its port and its pid (nbd-server writes no pid file)."""
        img = self.path("d.img")
        with open(img, "wb") as f:
            f.truncate(1 << 20)
        r = script("servers.py", "nbd-server", img, self.tmp, "--export", "d",
                   "--server-defaults", timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        port, pid = map(int, r.stdout.split())
        self.addCleanup(os.kill, pid, 15)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            self.assertEqual(f.read().split(b"\0")[0], b"nbd-server")
        servers.wait_port(port, 10)
        with open(self.path("nbd-server.conf")) as f:
            conf = f.read()
        self.assertIn("[d]", conf)
        self.assertNotIn("trim", conf)


class CpuTicks(Tmp):
    def test_cpu_ticks(self):
        busy = subprocess.Popen([sys.executable, "-c", "import time\nt=time.process_time()\n"
                                 "while time.process_time() - t < 0.3: pass\ninput()"],
                                stdin=subprocess.PIPE)
        time.sleep(1.0)
        ticks = servers.proc_cpu_ticks(busy.pid)
        out = script("servers.py", "cpu-ticks", busy.pid)
        busy.communicate(b"\n")
        self.assertGreaterEqual(ticks, 0.2 * os.sysconf("SC_CLK_TCK"))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertGreaterEqual(int(out.stdout), ticks)
        self.assertIsNone(servers.proc_cpu_ticks(busy.pid))
        gone = script("servers.py", "cpu-ticks", busy.pid)
        self.assertEqual((gone.returncode, gone.stderr.strip()),
                         (1, f"servers: process {busy.pid} has gone"))


if __name__ == "__main__":
    main()
