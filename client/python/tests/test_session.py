"""Tests of the salus Python client against an in-process fake daemon.

Run: /usr/bin/python3 -m unittest discover -s client/python/tests
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
sys.path.insert(0, CLIENT)
sys.path.insert(0, HERE)

import salus_client  # noqa: E402
from salus_client import gpu, session as session_mod  # noqa: E402
from fakedaemon import FakeDaemon  # noqa: E402


def _free_tcp_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class AddressTest(unittest.TestCase):
    def test_forms(self):
        r = salus_client.resolve_address
        self.assertEqual(r("/tmp/x.sock"), ("unix", "/tmp/x.sock"))
        self.assertEqual(r("unix:/tmp/x.sock"), ("unix", "/tmp/x.sock"))
        self.assertEqual(r("unix:///tmp/x.sock"), ("unix", "/tmp/x.sock"))
        self.assertEqual(r("127.0.0.1:7071"), ("tcp", ("127.0.0.1", 7071)))
        self.assertEqual(r("tcp://localhost:9"), ("tcp", ("localhost", 9)))
        self.assertEqual(r(":7071"), ("tcp", ("127.0.0.1", 7071)))
        with self.assertRaises(ValueError):
            r("nonsense")

    def test_env_then_default(self):
        old = os.environ.pop("SALUS_ADDR", None)
        try:
            self.assertEqual(salus_client.resolve_address(), ("unix", salus_client.DEFAULT_SOCKET))
            os.environ["SALUS_ADDR"] = "127.0.0.1:1234"
            self.assertEqual(salus_client.resolve_address(), ("tcp", ("127.0.0.1", 1234)))
        finally:
            os.environ.pop("SALUS_ADDR", None)
            if old is not None:
                os.environ["SALUS_ADDR"] = old


class SessionTest(unittest.TestCase):
    def setUp(self):
        self.d = FakeDaemon().start()
        self.addCleanup(self.d.stop)

    def test_round_trip(self):
        s = salus_client.Session(name="j1", total_time=12, persistent=500, ephemeral=1500,
                                 address=self.d.address, iterations=5)
        self.assertTrue(s.opened)
        self.assertEqual((s.lane, s.lane_mib, s.policy, s.lease_ms), (0, 1000.0, "fifo", 10000))
        for _ in range(5):
            with s.iteration():
                time.sleep(0.002)
        self.assertTrue(s.close())
        self.assertFalse(s.close(), "a second close does nothing")
        self.assertEqual(self.d.ops("j1"), ["open"] + ["begin", "end"] * 5 + ["close"])
        opened = self.d.requests("j1", "open")[0]
        self.assertEqual((opened["version"], opened["persistent_mib"], opened["ephemeral_mib"],
                          opened["declared_s"], opened["iterations"]), (1, 500.0, 1500.0, 12.0, 5))
        durations = [r["duration_s"] for r in self.d.requests("j1", "end")]
        self.assertTrue(all(0.002 <= d < 1.0 for d in durations), durations)
        self.assertEqual(self.d.sessions, {"j1": "finished"})
        self.assertEqual(s.iterations_done, 5)

    def test_tcp(self):
        d = FakeDaemon(tcp=True).start()
        self.addCleanup(d.stop)
        with salus_client.Session(name="t", persistent=1, ephemeral=1, address=d.address) as s:
            with s.iteration():
                pass
        self.assertEqual(d.sessions, {"t": "finished"})

    def test_context_manager_closes_not_finished_on_exception(self):
        with self.assertRaises(ZeroDivisionError):
            with salus_client.Session(name="boom", persistent=1, ephemeral=1, address=self.d.address) as s:
                with s.iteration():
                    pass
                with s.iteration():
                    1 / 0
        # The failing iteration still ended (the lane is not held), then the session closed early.
        self.assertEqual(self.d.ops("boom"), ["open", "begin", "end", "begin", "end", "close"])
        self.assertEqual(self.d.sessions, {"boom": "closed early"})
        self.assertTrue(s.closed)
        with self.assertRaises(salus_client.SalusError):
            s.iteration()

    def test_rejected(self):
        d = FakeDaemon(reject={"huge"}).start()
        self.addCleanup(d.stop)
        with self.assertRaises(salus_client.Rejected) as cm:
            salus_client.Session(name="huge", persistent=1e9, ephemeral=1, address=d.address)
        self.assertIn("cannot fit", str(cm.exception))
        self.assertEqual(cm.exception.code, "rejected")

    def test_cpu_needs_declared_memory(self):
        with self.assertRaises(ValueError) as cm:
            salus_client.Session(name="x", address=self.d.address)
        self.assertIn("persistent=", str(cm.exception))

    def test_model_instead_of_memory(self):
        with salus_client.Session(name="m", model="resnet50_50", address=self.d.address):
            pass
        self.assertEqual(self.d.requests("m", "open")[0]["model"], "resnet50_50")
        self.assertNotIn("persistent_mib", self.d.requests("m", "open")[0])

    def test_two_sessions_take_turns(self):
        a = salus_client.Session(name="a", persistent=1, ephemeral=1, address=self.d.address)
        b = salus_client.Session(name="b", persistent=1, ephemeral=1, address=self.d.address)
        for _ in range(3):
            with a.iteration():
                pass
            with b.iteration():
                pass
        a.close()
        b.close()
        self.assertEqual(self.d.sessions, {"a": "finished", "b": "finished"})


class NoDaemonTest(unittest.TestCase):
    def test_missing_socket(self):
        path = os.path.join(tempfile.mkdtemp(), "nobody.sock")
        t0 = time.monotonic()
        with self.assertRaises(salus_client.DaemonUnavailable) as cm:
            salus_client.Session(name="x", persistent=1, ephemeral=1, address=path)
        self.assertLess(time.monotonic() - t0, 2.0)
        msg = str(cm.exception)
        self.assertIn(path, msg)
        self.assertIn("salus serve", msg)
        self.assertIsInstance(cm.exception, ConnectionError)

    def test_refused_tcp(self):
        addr = "127.0.0.1:%d" % _free_tcp_port()
        with self.assertRaises(salus_client.DaemonUnavailable) as cm:
            salus_client.Session(name="x", persistent=1, ephemeral=1, address=addr)
        self.assertIn(addr, str(cm.exception))

    def test_stale_socket_file(self):
        # A socket file left by a dead daemon: connection refused, not a hang.
        path = os.path.join(tempfile.mkdtemp(), "stale.sock")
        dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dead.bind(path)
        dead.close()
        with self.assertRaises(salus_client.DaemonUnavailable):
            salus_client.Session(name="x", persistent=1, ephemeral=1, address=path)


class DaemonDiesTest(unittest.TestCase):
    def test_dies_mid_run(self):
        d = FakeDaemon(die_after_begins=3).start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address)
        done = 0
        with self.assertRaises(salus_client.DaemonGone) as cm:
            for _ in range(10):
                with s.iteration():
                    done += 1
        self.assertEqual(done, 3, "the fourth begin finds the daemon gone")
        self.assertIn(d.address, str(cm.exception))
        # The training loop decides: here it closes (which must not raise) and goes on alone.
        self.assertFalse(s.close())

    def test_dies_inside_a_step(self):
        d = FakeDaemon().start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address)
        with self.assertRaises(salus_client.DaemonGone):
            with s.iteration():
                d.die()
                time.sleep(0.05)
        s.close()

    def test_polite_shutdown(self):
        d = FakeDaemon().start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address)
        with s.iteration():
            pass
        d.shutdown()
        with self.assertRaises(salus_client.DaemonGone):
            with s.iteration():
                pass
        s.close()

    def test_step_exception_wins_over_daemon_gone(self):
        d = FakeDaemon().start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address)
        with self.assertRaises(KeyError):
            with s.iteration():
                d.die()
                time.sleep(0.05)
                raise KeyError("step failed")
        s.close()


class RefusalTermsTest(unittest.TestCase):
    def test_refusal_names_the_sessions_arguments(self):
        # The daemon's refusal names protocol fields (declared_s); the Python user
        # wrote total_time=: the error says both.
        d = FakeDaemon(reject=["j"], reject_why="open \"j\": policy srtf orders jobs by their declared GPU time, "
                                                "and this job declared none: send declared_s (seconds)").start()
        self.addCleanup(d.stop)
        with self.assertRaises(salus_client.Rejected) as cm:
            salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address)
        self.assertIn("declared_s (Session's total_time=)", str(cm.exception))


class HeartbeatTest(unittest.TestCase):
    def test_heartbeat_keeps_a_long_iteration_alive(self):
        # An iteration three leases long: the session survives only by its
        # heartbeats (every lease/3). The lease is long enough that a busy machine
        # delaying the heartbeat thread by a few hundred ms does not lose it.
        d = FakeDaemon(lease_ms=900).start()
        self.addCleanup(d.stop)
        with salus_client.Session(name="slow", persistent=1, ephemeral=1, address=d.address) as s:
            with s.iteration():
                time.sleep(2.7)
        beats = d.requests("slow", "heartbeat")
        self.assertGreaterEqual(len(beats), 3, "heartbeats kept the session alive past three leases")
        self.assertEqual(d.sessions, {"slow": "finished"})

    def test_without_heartbeat_the_lease_expires(self):
        d = FakeDaemon(lease_ms=100).start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="mute", persistent=1, ephemeral=1, address=d.address,
                                 heartbeat=False)
        with self.assertRaises(salus_client.SessionLost) as cm:
            with s.iteration():
                time.sleep(0.4)
        self.assertEqual(cm.exception.code, "lost")
        self.assertTrue(d.sessions["mute"].startswith("lost"))
        s.close()

    def test_heartbeat_stops_at_close(self):
        d = FakeDaemon(lease_ms=60).start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="h", persistent=1, ephemeral=1, address=d.address)
        s.close()
        self.assertFalse(s._hb_thread.is_alive())


class FakeCudaTest(unittest.TestCase):
    """The CUDA paths, with a stand-in torch module whose allocator is scripted."""

    def setUp(self):
        self.allocated = 0.0
        self.peak = 0.0
        self.calls = []
        mib = 1024 * 1024
        test = self

        class Props:
            total_memory = 16000 * mib

        cuda = types.SimpleNamespace(
            is_available=lambda: True,
            synchronize=lambda: test.calls.append("sync"),
            memory_allocated=lambda: test.allocated * mib,
            max_memory_allocated=lambda: test.peak * mib,
            reset_peak_memory_stats=lambda: setattr(test, "peak", test.allocated),
            empty_cache=lambda: test.calls.append("empty_cache"),
            current_device=lambda: 0,
            get_device_properties=lambda i: Props(),
            set_per_process_memory_fraction=lambda f: test.calls.append(("fraction", f)),
        )
        self._saved = sys.modules.get("torch")
        sys.modules["torch"] = types.SimpleNamespace(cuda=cuda)
        self.addCleanup(self._restore)

    def _restore(self):
        if self._saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self._saved

    def step(self, floor_after, peak):
        self.peak = max(self.peak, peak)
        self.allocated = floor_after

    def test_measures_then_opens_and_caps(self):
        d = FakeDaemon(lane_mib=4000.0, release_cache=True).start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="g", address=d.address, measure_iterations=2)
        self.assertFalse(s.opened)
        self.assertEqual(d.ops("g"), [])
        self.allocated = 100.0  # weights
        with s.iteration():
            self.step(floor_after=300.0, peak=900.0)  # optimizer state appears after step 1
        self.assertFalse(s.opened)
        with s.iteration():
            self.step(floor_after=300.0, peak=1300.0)
        self.assertTrue(s.opened)
        opened = d.requests("g", "open")[0]
        self.assertEqual(opened["persistent_mib"], 300.0)
        self.assertEqual(opened["ephemeral_mib"], 1000.0)  # 1300 peak over a 300 floor
        self.assertIn(("fraction", 0.25), self.calls)
        self.calls.clear()
        with s.iteration():
            self.step(floor_after=300.0, peak=1200.0)
        self.assertEqual(self.calls, ["sync", "empty_cache"], "the daemon asked for cache release")
        end = d.requests("g", "end")[0]
        self.assertEqual(end["peak_mib"], 1200.0)
        s.close()
        self.assertEqual(d.ops("g"), ["open", "begin", "end", "close"])

    def test_no_release_unless_asked(self):
        d = FakeDaemon().start()
        self.addCleanup(d.stop)
        with salus_client.Session(name="g", persistent=1, ephemeral=1, address=d.address) as s:
            with s.iteration():
                pass
        self.assertNotIn("empty_cache", self.calls)
        self.assertIn(("fraction", 1000.0 / 16000), self.calls)


_CHILD = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {client!r})
    import salus_client
    s = salus_client.Session(name="child", persistent=1, ephemeral=1, address={addr!r})
    mode = {mode!r}
    with s.iteration():
        pass
    if mode == "signal":
        print("ready", flush=True)
        while True:
            with s.iteration():
                time.sleep(0.01)
    if mode == "raise":
        raise RuntimeError("training failed")
    # mode == "exit": leave without calling close()
""")


def _default_signals():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class ProcessExitTest(unittest.TestCase):
    """Sessions are closed on normal exit, on an uncaught exception and on SIGTERM/SIGINT."""

    def run_child(self, mode, sig=None):
        d = FakeDaemon().start()
        self.addCleanup(d.stop)
        code = _CHILD.format(client=CLIENT, addr=d.address, mode=mode)
        # The child starts with the default dispositions of SIGINT and SIGTERM, whatever
        # this process inherited: a test runner started in the background of a shell
        # without job control ignores SIGINT, and a child would inherit that (Python
        # then keeps it ignored, as the client does: test_sigint_ignored_keeps_the_session).
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals)
        if sig is not None:
            self.assertEqual(p.stdout.readline().strip(), "ready")
            p.send_signal(sig)
        out, err = p.communicate(timeout=300)
        self.assertTrue(d.wait_for(lambda: d.sessions.get("child") not in (None, "open")))
        return p.returncode, err, d.sessions["child"]

    def test_normal_exit_closes_finished(self):
        rc, err, state = self.run_child("exit")
        self.assertEqual(rc, 0, err)
        self.assertEqual(state, "finished")

    def test_uncaught_exception_closes_not_finished(self):
        rc, err, state = self.run_child("raise")
        self.assertEqual(rc, 1)
        self.assertIn("training failed", err)
        self.assertEqual(state, "closed early")

    def test_sigterm_closes_and_still_terminates(self):
        rc, err, state = self.run_child("signal", signal.SIGTERM)
        self.assertEqual(rc, -signal.SIGTERM, err)
        self.assertIn(state, ("closed early", "lost: connection closed"))

    def test_sigint_closes_and_raises_keyboard_interrupt(self):
        rc, err, state = self.run_child("signal", signal.SIGINT)
        self.assertIn("KeyboardInterrupt", err)
        self.assertNotEqual(rc, 0)
        self.assertIn(state, ("closed early", "lost: connection closed"))


if __name__ == "__main__":
    unittest.main()


class ReconnectTest(unittest.TestCase):
    """A daemon that can recover sessions (recover_ms in its open reply) and dies:
    the client reconnects, resumes, or carries on alone, or gives up."""

    def test_reconnects_and_resumes(self):
        d1 = FakeDaemon(recover_ms=5000).start()
        self.addCleanup(d1.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d1.address)
        self.assertEqual(s.recover_ms, 5000)
        with s.iteration():
            pass
        d1.die()
        restarted = []

        def restart():
            time.sleep(0.3)
            restarted.append(FakeDaemon(recover_ms=5000, address=d1.address,
                                        resume_tokens=d1.resume_tokens).start())

        t = threading.Thread(target=restart)
        t.start()
        self.addCleanup(lambda: restarted and restarted[0].die())
        for _ in range(3):
            with s.iteration():  # the first begin finds the daemon gone, and waits for its return
                pass
        t.join()
        d2 = restarted[0]
        self.assertTrue(s.resumed)
        self.assertEqual(d2.ops("j"), ["open", "begin", "end", "begin", "end", "begin", "end"])
        opened = d2.requests("j", "open")[0]
        self.assertTrue(opened["resume"])
        first = d1.requests("j", "open")[0]
        self.assertEqual(len(first["resume_token"]), 64, "a random token sent with the first open")
        self.assertEqual(opened["resume_token"], first["resume_token"], "the resume presents it")
        self.assertEqual((opened["persistent_mib"], opened["ephemeral_mib"]), (1.0, 1.0))
        self.assertTrue(s.close())
        self.assertEqual(d2.sessions, {"j": "finished"})

    def test_restart_is_resumed_not_ended(self):
        # SIGTERM to a daemon with a journal: it says "restarting" and keeps the session;
        # the client reconnects and resumes, even with on_daemon_gone="continue" (which
        # used to end the job at a polite stop) and carries on under the new daemon.
        d1 = FakeDaemon(recover_ms=5000).start()
        self.addCleanup(d1.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d1.address,
                                 on_daemon_gone="continue")
        with s.iteration():
            pass
        d1.restart()
        d2 = FakeDaemon(recover_ms=5000, address=d1.address, resume_tokens=d1.resume_tokens).start()
        self.addCleanup(d2.die)
        for _ in range(2):
            with s.iteration():
                pass
        self.assertTrue(s.resumed)
        self.assertFalse(s.alone, "it resumed under the new daemon, not alone")
        self.assertEqual(d2.ops("j"), ["open", "begin", "end", "begin", "end"])
        self.assertTrue(s.close())
        self.assertEqual(d2.sessions, {"j": "finished"})

    def test_dies_inside_a_step_and_comes_back(self):
        d1 = FakeDaemon(recover_ms=5000).start()
        self.addCleanup(d1.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d1.address)
        with s.iteration():
            d1.die()
            d2 = FakeDaemon(recover_ms=5000, address=d1.address, resume_tokens=d1.resume_tokens).start()
            self.addCleanup(d2.die)
        # The end found the daemon gone: it resumed, and the iteration counts as ended.
        self.assertEqual(s.iterations_done, 1)
        with s.iteration():
            pass
        self.assertEqual(d2.ops("j"), ["open", "begin", "end"])
        s.close()

    def test_resume_refused_without_the_token(self):
        # The restarted daemon knows another token for the job (the session is someone
        # else's): the resume is refused with resume_denied, which is final.
        d1 = FakeDaemon(recover_ms=5000).start()
        self.addCleanup(d1.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d1.address)
        d1.die()
        d2 = FakeDaemon(recover_ms=5000, address=d1.address, resume_tokens={"j": "0" * 64}).start()
        self.addCleanup(d2.die)
        t0 = time.monotonic()
        with self.assertRaises(salus_client.PermissionDenied) as cm:
            with s.iteration():
                pass
        self.assertEqual(cm.exception.code, "resume_denied")
        self.assertIsInstance(cm.exception, salus_client.Rejected)
        self.assertLess(time.monotonic() - t0, 2.0, "no retrying a refusal")
        self.assertEqual(len(d2.requests("j", "open")), 1)
        s.close()

    def test_stays_away_and_the_job_goes_on_alone(self):
        d = FakeDaemon(recover_ms=300).start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address,
                                 on_daemon_gone="continue")
        with s.iteration():
            pass
        d.die()
        t0 = time.monotonic()
        for _ in range(3):
            with s.iteration():
                pass
        self.assertGreaterEqual(time.monotonic() - t0, 0.25, "it tried for the recover window first")
        self.assertTrue(s.alone)
        self.assertEqual(s.iterations_done, 4)
        self.assertFalse(s.close(), "nobody to tell")

    def test_stays_away_and_the_job_stops(self):
        d = FakeDaemon(recover_ms=300).start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address)
        d.die()
        t0 = time.monotonic()
        with self.assertRaises(salus_client.DaemonGone) as cm:
            with s.iteration():
                pass
        self.assertGreaterEqual(time.monotonic() - t0, 0.25)
        self.assertIn("did not come back", str(cm.exception))
        t0 = time.monotonic()
        self.assertFalse(s.close())
        self.assertLess(time.monotonic() - t0, 0.2, "given up: close does not wait for the daemon again")

    def test_shutdown_is_final(self):
        d = FakeDaemon(recover_ms=5000).start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address)
        d.shutdown()
        t0 = time.monotonic()
        with self.assertRaises(salus_client.DaemonGone) as cm:
            with s.iteration():
                pass
        self.assertEqual(cm.exception.code, "shutdown")
        self.assertLess(time.monotonic() - t0, 1.0)
        s.close()

    def test_reconnect_zero_never_reconnects(self):
        d = FakeDaemon(recover_ms=5000).start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address, reconnect=0)
        d.die()
        t0 = time.monotonic()
        with self.assertRaises(salus_client.DaemonGone):
            with s.iteration():
                pass
        self.assertLess(time.monotonic() - t0, 1.0)
        s.close()


class IgnoredSigintTest(unittest.TestCase):
    """A process started with SIGINT ignored (a shell's background job, a launcher's
    child) keeps its session on SIGINT: the Ctrl-C was meant for someone else."""

    def test_sigint_ignored_keeps_the_session(self):
        d = FakeDaemon().start()
        self.addCleanup(d.stop)
        code = _CHILD.format(client=CLIENT, addr=d.address, mode="signal")
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        p.send_signal(signal.SIGINT)
        begins = len(d.requests("child", "begin"))
        # However slowly a busy machine runs the child, it keeps iterating: wait
        # for five more begins (the promise), not for a time (the machine's speed).
        self.assertTrue(d.wait_for(lambda: len(d.requests("child", "begin")) > begins + 5, timeout=60),
                        "it keeps iterating under the daemon")
        self.assertIsNone(p.poll(), "the child must not stop on an ignored SIGINT")
        self.assertEqual(d.sessions["child"], "open")
        p.send_signal(signal.SIGTERM)  # SIGTERM is not ignored: it still closes and terminates
        p.communicate(timeout=300)
        self.assertEqual(p.returncode, -signal.SIGTERM)
        self.assertTrue(d.wait_for(lambda: d.sessions.get("child") != "open"))
