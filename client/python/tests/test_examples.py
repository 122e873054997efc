"""The example PyTorch jobs (examples/) under the fake daemon. Skipped without torch."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)

from fakedaemon import FakeDaemon  # noqa: E402


def _has_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def run_example(script, *args, timeout=900):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script)] + list(args),
                       capture_output=True, text=True, timeout=timeout)
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return p.returncode, lines, p.stderr


@unittest.skipUnless(_has_torch(), "PyTorch is not importable by %s" % sys.executable)
class ExamplesTest(unittest.TestCase):
    def setUp(self):
        self.d = FakeDaemon(policy="fair").start()
        self.addCleanup(self.d.stop)

    def check_training(self, model, iterations):
        rc, lines, err = run_example("train.py", "--model", model, "--iterations", str(iterations),
                                     "--salus", self.d.address, "--job", model)
        self.assertEqual(rc, 0, err)
        start, iters, done = lines[0], [l for l in lines if l["ev"] == "iter"], lines[-1]
        self.assertEqual((start["ev"], start["policy"], start["lane"]), ("start", "fair", 0))
        self.assertEqual(len(iters), iterations)
        self.assertTrue(all(l["s"] > 0 and l["wait_us"] is not None for l in iters))
        self.assertLess(done["loss_last"], done["loss_first"], "the loss must go down")
        self.assertEqual(self.d.sessions[model], "finished")
        opened = self.d.requests(model, "open")[0]
        self.assertGreater(opened["persistent_mib"], 0)
        self.assertGreater(opened["ephemeral_mib"], 0)
        self.assertEqual(len(self.d.requests(model, "end")), iterations)

    def test_cnn(self):
        self.check_training("cnn", 10)

    def test_resnet18(self):
        self.check_training("resnet18", 8)

    def test_mlp(self):
        self.check_training("mlp", 10)

    def test_alone_prints_times(self):
        rc, lines, err = run_example("train.py", "--model", "mlp", "--iterations", "3")
        self.assertEqual(rc, 0, err)
        self.assertEqual([l["ev"] for l in lines], ["start", "iter", "iter", "iter", "done"])
        self.assertIsNone(lines[0]["salus"])

    def test_inference_loop(self):
        rc, lines, err = run_example("infer.py", "--model", "cnn", "--requests", "4",
                                     "--pause-ms", "5", "--salus", self.d.address, "--job", "inf")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len([l for l in lines if l["ev"] == "request"]), 4)
        self.assertEqual(self.d.requests("inf", "open")[0]["kind"], "infer")
        self.assertEqual(self.d.sessions["inf"], "finished")

    def test_daemon_dies_mid_training(self):
        d = FakeDaemon(die_after_begins=3).start()
        self.addCleanup(d.stop)
        rc, lines, err = run_example("train.py", "--model", "mlp", "--iterations", "8",
                                     "--salus", d.address)
        self.assertEqual(rc, 3, err)
        gone = [l for l in lines if l["ev"] == "daemon_gone"]
        self.assertEqual(len(gone), 1)
        self.assertEqual(gone[0]["i"], 3)
        self.assertIn(d.address, gone[0]["error"])

    def test_daemon_dies_and_the_job_goes_on_alone(self):
        d = FakeDaemon(die_after_begins=2).start()
        self.addCleanup(d.stop)
        rc, lines, err = run_example("train.py", "--model", "mlp", "--iterations", "6",
                                     "--salus", d.address, "--on-daemon-gone", "continue")
        self.assertEqual(rc, 0, err)
        # The session carries on alone from the begin that found the daemon gone.
        self.assertEqual(lines[-1]["iterations"], 6, "every iteration, the rest of them ungated")
        gone = [l for l in lines if l["ev"] == "daemon_gone"]
        self.assertEqual([l["i"] for l in gone], [2])


if __name__ == "__main__":
    unittest.main()


README = os.path.join(ROOT, "client", "python", "README.md")
MINIMAL = os.path.join(ROOT, "examples", "minimal.py")


def _code(line):
    """A line without its trailing comment and blanks."""
    return line.split("  #")[0].rstrip()


class MinimalDiffTest(unittest.TestCase):
    """The client README's diff is real: its added and context lines are examples/minimal.py's,
    and it changes as many lines as the README says."""

    def test_readme_diff_matches_minimal_py(self):
        with open(README) as f:
            text = f.read()
        start = text.index("```diff\n") + len("```diff\n")
        diff = text[start:text.index("```", start)].splitlines()
        with open(MINIMAL) as f:
            code = [_code(l) for l in f.read().splitlines()]
        added = [l[1:] for l in diff if l.startswith("+")]
        removed = [l[1:] for l in diff if l.startswith("-")]
        context = [l[1:] for l in diff if l.startswith(" ") and l.strip() != "..."]
        for line in added + context:
            self.assertIn(_code(line), code, "the README's diff line %r is not in examples/minimal.py" % line)
        for line in removed:
            self.assertNotIn(_code(line), code)
        # The README: 5 lines, of which 1 is changed and 4 are added (2 of them optional).
        self.assertEqual((len(added), len(removed)), (5, 1))
        self.assertTrue("five lines in all" in text.lower(), "the README states the count")


@unittest.skipUnless(_has_torch(), "PyTorch is not importable by %s" % sys.executable)
class MinimalTest(unittest.TestCase):
    def test_runs_under_the_daemon(self):
        d = FakeDaemon().start()
        self.addCleanup(d.stop)
        env = dict(os.environ, SALUS_ADDR=d.address)
        p = subprocess.run([sys.executable, MINIMAL], capture_output=True, text=True, timeout=900, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [json.loads(l) for l in p.stdout.splitlines()]
        evals = [l for l in lines if l["ev"] == "eval"]
        self.assertEqual([l["step"] for l in evals], [9, 19, 29, 39])
        self.assertLess(evals[-1]["loss"], evals[0]["loss"] * 1.5)
        self.assertEqual(lines[-1], {"ev": "done", "steps": 40})
        job = [j for j in d.sessions if j.startswith("minimal-")]
        self.assertEqual(len(job), 1)
        self.assertEqual(d.ops(job[0]), ["open"] + ["begin", "end"] * 40 + ["close"])
        self.assertEqual(d.sessions[job[0]], "finished")
