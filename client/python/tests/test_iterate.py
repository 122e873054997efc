"""Session.iterate: ``for batch in sess.iterate(loader)`` gates each step like
``with sess.iteration():``, against the in-process fake daemon."""

import os
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
sys.path.insert(0, CLIENT)
sys.path.insert(0, HERE)

import salus_client  # noqa: E402
from fakedaemon import FakeDaemon  # noqa: E402


class IterateTest(unittest.TestCase):
    def setUp(self):
        self.d = FakeDaemon().start()
        self.addCleanup(self.d.stop)

    def session(self, name="j"):
        s = salus_client.Session(name=name, persistent=1, ephemeral=1, address=self.d.address)
        self.addCleanup(s.close)
        return s

    def loader(self, job, n, log):
        """Yield 0..n-1, logging the job's ops so far at each fetch."""
        for i in range(n):
            log.append(("fetch", i, self.d.ops(job)[-1]))
            yield i

    def test_one_iteration_per_item(self):
        s = self.session()
        fetched, seen = [], []
        for batch in s.iterate(self.loader("j", 4, fetched)):
            seen.append((batch, self.d.ops("j")[-1]))
            time.sleep(0.002)
        self.assertEqual(seen, [(i, "begin") for i in range(4)], "each body runs inside a begun iteration")
        self.assertEqual([op for _, _, op in fetched], ["open", "end", "end", "end"],
                         "each item is fetched outside the gate")
        self.assertEqual(s.iterations_done, 4)
        s.close()
        self.assertEqual(self.d.ops("j"), ["open"] + ["begin", "end"] * 4 + ["close"])
        durations = [r["duration_s"] for r in self.d.requests("j", "end")]
        self.assertTrue(all(0.002 <= x < 1.0 for x in durations), durations)

    def test_same_wire_as_the_with_form(self):
        a, b = self.session("a"), self.session("b")
        for _ in a.iterate(range(3)):
            pass
        for _ in range(3):
            with b.iteration():
                pass
        a.close()
        b.close()
        strip = lambda reqs: [{k: v for k, v in r.items() if k not in ("id", "duration_s", "job")} for r in reqs]
        for op in ("begin", "end"):
            self.assertEqual(strip(self.d.requests("a", op)), strip(self.d.requests("b", op)))

    def test_empty_loader_begins_nothing(self):
        s = self.session()
        for _ in s.iterate([]):
            self.fail("no items")
        self.assertEqual(self.d.ops("j"), ["open"])

    def test_break_ends_the_iteration_and_frees_the_lane(self):
        s, other = self.session("j"), self.session("other")
        for i in s.iterate(range(100)):
            if i == 2:
                break
        self.assertEqual(self.d.ops("j"), ["open"] + ["begin", "end"] * 3)
        # The lane is free: another job's iteration is granted at once.
        done = threading.Event()

        def run_other():
            with other.iteration():
                pass
            done.set()

        threading.Thread(target=run_other, daemon=True).start()
        self.assertTrue(done.wait(5), "the lane is still held after break")
        # The session goes on with another loop.
        for _ in s.iterate(range(2)):
            pass
        self.assertEqual(s.iterations_done, 5)

    def test_exception_in_the_body_ends_the_iteration_and_propagates(self):
        s = self.session()
        with self.assertRaises(KeyError):
            for i in s.iterate(range(5)):
                if i == 1:
                    raise KeyError("step failed")
        self.assertEqual(self.d.ops("j"), ["open"] + ["begin", "end"] * 2)
        s.close()
        self.assertEqual(self.d.sessions["j"], "finished")

    def test_loader_exception_holds_no_lane(self):
        s = self.session()

        def broken():
            yield 0
            raise IOError("disk gone")

        with self.assertRaises(IOError):
            for _ in s.iterate(broken()):
                pass
        self.assertEqual(self.d.ops("j"), ["open", "begin", "end"])

    def test_end_iteration_runs_the_rest_of_the_body_ungated(self):
        s = self.session()
        marks = []
        for i in s.iterate(range(6)):
            marks.append(("step", i, self.d.ops("j")[-1]))
            if i % 3 == 2:  # every 3 iterations: evaluate and checkpoint, not holding the lane
                self.assertTrue(s.end_iteration())
                self.assertFalse(s.end_iteration(), "already ended")
                marks.append(("eval", i, self.d.ops("j")[-1]))
        self.assertEqual([m for m in marks if m[0] == "eval"], [("eval", 2, "end"), ("eval", 5, "end")])
        self.assertTrue(all(op == "begin" for kind, _, op in marks if kind == "step"))
        self.assertEqual(self.d.ops("j"), ["open"] + ["begin", "end"] * 6, "one end per iteration")
        self.assertEqual(s.iterations_done, 6)
        self.assertFalse(s.end_iteration(), "outside iterate")

    def test_closed_session(self):
        s = self.session()
        s.close()
        with self.assertRaises(salus_client.SalusError):
            s.iterate(range(3))

    def test_close_inside_the_loop(self):
        s = self.session()
        for i in s.iterate(range(5)):
            if i == 1:
                s.close(finished=False)
                break
        self.assertEqual(self.d.ops("j"), ["open", "begin", "end", "begin", "close"])
        self.assertEqual(self.d.sessions["j"], "closed early")

    def test_daemon_dies(self):
        d = FakeDaemon(die_after_begins=3).start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="k", persistent=1, ephemeral=1, address=d.address)
        done = 0
        with self.assertRaises(salus_client.DaemonGone):
            for _ in s.iterate(range(10)):
                done += 1
        self.assertEqual(done, 3, "the fourth begin finds the daemon gone")
        self.assertFalse(s.close())


if __name__ == "__main__":
    unittest.main()
