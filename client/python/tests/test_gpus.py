"""The GPU the daemon gives a job: the client makes it the job's device.

Run: /usr/bin/python3 -m unittest discover -s client/python/tests
"""

import contextlib
import io
import os
import sys
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import salus_client  # noqa: E402
from salus_client import gpu  # noqa: E402
from fakedaemon import FakeDaemon  # noqa: E402


def fake_torch(initialized, calls, allocated_mib=0):
    """A stand-in torch whose CUDA is (or is not yet) initialized, on device 0."""
    mib = 1024 * 1024

    class Props:
        total_memory = 16000 * mib

    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        is_initialized=lambda: initialized,
        set_device=lambda i: calls.append(("set_device", i)),
        current_device=lambda: 0,
        get_device_properties=lambda i: Props(),
        set_per_process_memory_fraction=lambda f: calls.append(("fraction", f)),
        synchronize=lambda: None,
        memory_allocated=lambda: allocated_mib * mib,
        max_memory_allocated=lambda: 0,
        reset_peak_memory_stats=lambda: None,
        empty_cache=lambda: None,
    )
    return types.SimpleNamespace(cuda=cuda)


class GPUTest(unittest.TestCase):
    def setUp(self):
        env = mock.patch.dict(os.environ)
        env.start()
        self.addCleanup(env.stop)
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        self.calls = []

    def open(self, torch, daemon, **kw):
        d = daemon.start()
        self.addCleanup(d.stop)
        err = io.StringIO()
        with mock.patch.dict(sys.modules, {"torch": torch}), contextlib.redirect_stderr(err):
            s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=d.address, **kw)
        self.addCleanup(s.close)
        return s, d, err.getvalue()

    def test_masks_before_cuda_starts_without_torch(self):
        s, d, err = self.open(None, FakeDaemon(gpus=[3]))
        self.assertEqual(s.gpus, [3])
        self.assertEqual(s.device, "cuda:0")
        self.assertEqual(os.environ["CUDA_VISIBLE_DEVICES"], "3")
        self.assertIn("job 'j' runs on GPU 3: CUDA_VISIBLE_DEVICES=3, device cuda:0", err)
        self.assertNotIn("gpus", d.requests("j", "open")[0], "one GPU is the default: not sent")

    def test_masks_when_torch_has_not_initialized_cuda(self):
        s, _, _ = self.open(fake_torch(False, self.calls), FakeDaemon(gpus=[1]))
        self.assertEqual(os.environ["CUDA_VISIBLE_DEVICES"], "1")
        self.assertEqual(s.device, "cuda:0")
        self.assertNotIn(("set_device", 1), self.calls)
        self.assertTrue(s.cuda)
        self.assertIn(("fraction", 1000.0 / 16000), self.calls, "capped on the given GPU")

    def test_no_cuda_device_with_a_cpu_torch(self):
        # Debian's python3-torch is a CPU build: torch.version.cuda is None. The job
        # was given a GPU, but its device is None, so model.to(sess.device or "cpu")
        # runs on the CPU rather than fail with "Torch not compiled with CUDA".
        cpu_torch = types.SimpleNamespace(version=types.SimpleNamespace(cuda=None),
                                          cuda=types.SimpleNamespace(is_available=lambda: False,
                                                                     is_initialized=lambda: False))
        s, _, err = self.open(cpu_torch, FakeDaemon(gpus=[2]))
        self.assertEqual(s.gpus, [2])
        self.assertIsNone(s.device)
        self.assertIn("this PyTorch has no CUDA: it runs on the CPU", err)

    def test_torch_imported_after_the_open(self):
        s, _, _ = self.open(None, FakeDaemon(gpus=[1]))
        self.assertEqual(os.environ["CUDA_VISIBLE_DEVICES"], "1")
        with mock.patch.dict(sys.modules, {"torch": None}):
            self.assertFalse(s.cuda, "no torch yet")
        with mock.patch.dict(sys.modules, {"torch": fake_torch(False, self.calls)}):
            with s.iteration():
                pass
            self.assertTrue(s.cuda)
        self.assertIn(("fraction", 1000.0 / 16000), self.calls, "capped at the first iteration")

    def test_set_device_once_cuda_is_up(self):
        s, _, err = self.open(fake_torch(True, self.calls), FakeDaemon(gpus=[2]))
        self.assertNotIn("CUDA_VISIBLE_DEVICES", os.environ)
        self.assertIn(("set_device", 2), self.calls)
        self.assertEqual(s.device, "cuda:2")
        self.assertIn("torch.cuda.set_device(2)", err)

    def test_stays_where_its_tensors_are(self):
        s, _, err = self.open(fake_torch(True, self.calls, allocated_mib=500), FakeDaemon(gpus=[2]))
        self.assertNotIn(("set_device", 2), self.calls)
        self.assertIsNone(s.device)
        self.assertIn("holds tensors on cuda:0 already", err)
        self.assertIn("gave it GPU 2", err)

    def test_already_on_its_gpu(self):
        s, _, err = self.open(fake_torch(True, self.calls, allocated_mib=500), FakeDaemon(gpus=[0]))
        self.assertEqual(s.device, "cuda:0")
        self.assertIn("runs on GPU 0: device cuda:0", err)

    def test_set_device_within_an_existing_mask(self):
        os.environ["CUDA_VISIBLE_DEVICES"] = "2,3"
        s, _, _ = self.open(fake_torch(True, self.calls), FakeDaemon(gpus=[3]))
        self.assertIn(("set_device", 1), self.calls)
        self.assertEqual(s.device, "cuda:1")
        self.assertEqual(os.environ["CUDA_VISIBLE_DEVICES"], "2,3")

    def test_hidden_gpu_is_left_alone(self):
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        s, _, err = self.open(fake_torch(True, self.calls), FakeDaemon(gpus=[3]))
        self.assertIsNone(s.device)
        self.assertEqual(self.calls.count(("set_device", 3)), 0)
        self.assertIn("hides GPU 3", err)

    def test_gang(self):
        s, d, err = self.open(None, FakeDaemon(gpus=[0, 1]), gpus=2)
        self.assertEqual(d.requests("j", "open")[0]["gpus"], 2)
        self.assertEqual(s.gpus, [0, 1])
        self.assertEqual(os.environ["CUDA_VISIBLE_DEVICES"], "0,1")
        self.assertIn("runs on GPUs 0,1", err)

    def test_nothing_when_emulated_or_not_said_or_off(self):
        for daemon, kw in [(FakeDaemon(gpus=[1], emulated=True), {}), (FakeDaemon(), {}),
                           (FakeDaemon(gpus=[1]), {"select_gpu": False})]:
            s, _, err = self.open(None, daemon, **kw)
            self.assertNotIn("CUDA_VISIBLE_DEVICES", os.environ)
            self.assertIsNone(s.device)
            self.assertEqual(err, "")
            s.close()

    def test_bad_gpus(self):
        for bad in (0, -1, 1.5, True, "2"):
            with self.assertRaises(ValueError):
                salus_client.Session(name="j", persistent=1, ephemeral=1, gpus=bad)

    def test_use_gpus_replacing_a_mask_says_so(self):
        env = {"CUDA_VISIBLE_DEVICES": "5"}
        with mock.patch.dict(sys.modules, {"torch": None}):
            how, device, note = gpu.use_gpus([1], environ=env)
        self.assertEqual((how, device, env["CUDA_VISIBLE_DEVICES"]), ("CUDA_VISIBLE_DEVICES", "cuda:0", "1"))
        self.assertIn("replacing CUDA_VISIBLE_DEVICES=5", note)


if __name__ == "__main__":
    unittest.main()


class EnvironmentTest(unittest.TestCase):
    """A Kubernetes claim's configuration reaches the session through the environment."""

    def setUp(self):
        env = mock.patch.dict(os.environ)
        env.start()
        self.addCleanup(env.stop)
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)

    def test_figures_not_given_come_from_the_environment(self):
        os.environ.update({"SALUS_DECLARED_S": "120", "SALUS_PERSISTENT_MIB": "900", "SALUS_EPHEMERAL_MIB": "300",
                           "SALUS_PRIORITY": "2", "SALUS_CLAIM": "uid-1"})
        d = FakeDaemon(gpus=[0]).start()
        self.addCleanup(d.stop)
        with contextlib.redirect_stderr(io.StringIO()), mock.patch.dict(sys.modules, {"torch": None}):
            s = salus_client.Session(name="k", address=d.address, priority=5, share=3)
        self.addCleanup(s.close)
        req = d.requests("k", "open")[0]
        self.assertEqual((req["declared_s"], req["persistent_mib"], req["ephemeral_mib"]), (120, 900, 300))
        self.assertEqual(req["priority"], 5, "a figure given wins over the environment")
        self.assertEqual(req["claim"], "uid-1")
        self.assertEqual(req["share"], 3)

    def test_a_bad_variable_is_named(self):
        os.environ["SALUS_PERSISTENT_MIB"] = "lots"
        with self.assertRaisesRegex(ValueError, r"\$SALUS_PERSISTENT_MIB='lots' is not a number"):
            salus_client.Session(name="k", ephemeral=1, address="/nonexistent")
