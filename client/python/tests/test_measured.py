"""The client reports what it measured (the ``measured`` op) to a daemon that takes
it, once, after ``report_after`` iterations; never to one that does not."""

import os
import sys
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import salus_client  # noqa: E402
from salus_client.session import measurement  # noqa: E402
from fakedaemon import FakeDaemon  # noqa: E402


class MeasurementTest(unittest.TestCase):
    def test_median_leaves_out_the_first(self):
        m = measurement([5.0, 0.1, 0.3, 0.2])
        self.assertEqual(m, {"iterations": 4, "iter_s": 0.2})
        self.assertEqual(measurement([0.4])["iter_s"], 0.4)
        self.assertEqual(measurement([9.0, 0.1, 0.3])["iter_s"], 0.2)

    def test_memory_only_when_measured_and_consistent(self):
        m = measurement([0.1, 0.1], peak_mib=800.12345, persistent_mib=300.0)
        self.assertEqual((m["peak_mib"], m["persistent_mib"]), (800.123, 300.0))
        self.assertNotIn("peak_mib", measurement([0.1, 0.1]))
        self.assertNotIn("iter_s", measurement([0.1, float("nan")]))
        # persistent can never be reported above the peak
        self.assertEqual(measurement([0.1], 100.0, 120.0)["persistent_mib"], 100.0)


class ReportTest(unittest.TestCase):
    def run_job(self, daemon, n, **kw):
        s = salus_client.Session(name="j", persistent=1, ephemeral=1, address=daemon.address,
                                 batch_size=32, model="cnn", **kw)
        for _ in range(n):
            with s.iteration():
                pass
        s.close()
        return s

    def test_reports_once_after_report_after(self):
        with FakeDaemon(accepts_measured=True) as d:
            s = self.run_job(d, 7, report_after=3)
            ops = d.ops("j")
            self.assertEqual(ops.count("measured"), 1)
            # after the third end, before the fourth begin
            self.assertEqual(ops[:8], ["open", "begin", "end", "begin", "end", "begin", "end", "measured"])
            req = d.requests("j", "measured")[0]
            self.assertEqual(req["iterations"], 3)
            self.assertGreater(req["iter_s"], 0)
            self.assertNotIn("peak_mib", req)  # no CUDA here
            self.assertEqual(s.measured["iterations"], 3)
            self.assertEqual(d.requests("j", "open")[0]["batch_size"], 32)

    def test_short_job_reports_at_close(self):
        with FakeDaemon(accepts_measured=True) as d:
            self.run_job(d, 2, report_after=5)
            self.assertEqual(d.ops("j")[-2:], ["measured", "close"])
            self.assertEqual(d.requests("j", "measured")[0]["iterations"], 2)

    def test_old_daemon_is_never_sent_it(self):
        with FakeDaemon() as d:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                s = self.run_job(d, 6, report_after=2)
            self.assertNotIn("measured", d.ops("j"))
            self.assertIsNone(s.measured)
            self.assertEqual(d.sessions["j"], "finished")

    def test_label_goes_with_declared_memory(self):
        with FakeDaemon() as d:
            s = salus_client.Session(name="j", persistent=1, ephemeral=2, address=d.address, label="cnn")
            s.close()
            self.assertEqual(d.requests("j", "open")[0]["model"], "cnn")

    def test_cuda_reports_peak_and_persistent(self):
        # A stand-in for torch.cuda's allocator statistics: iteration i peaks at
        # 500 + 10 i MiB and leaves 200 + i MiB allocated.
        from salus_client import gpu
        state = {"i": 0}
        fakes = dict(cuda_available=lambda: True, synchronize=lambda: None, release_cached=lambda: None,
                     cap_to_lane=lambda mib: 0.5, reset_peak=lambda: state.update(i=state["i"] + 1),
                     peak_mib=lambda: 500.0 + 10 * state["i"], allocated_mib=lambda: 200.0 + state["i"])
        for name, fn in fakes.items():
            self.addCleanup(setattr, gpu, name, getattr(gpu, name))
            setattr(gpu, name, fn)
        with FakeDaemon(accepts_measured=True) as d:
            self.run_job(d, 4, report_after=3)
            req = d.requests("j", "measured")[0]
            self.assertEqual((req["peak_mib"], req["persistent_mib"], req["iterations"]), (530.0, 203.0, 3))

    def test_report_after_zero_never_reports(self):
        with FakeDaemon(accepts_measured=True) as d:
            self.run_job(d, 4, report_after=0)
            self.assertNotIn("measured", d.ops("j"))


if __name__ == "__main__":
    unittest.main()
