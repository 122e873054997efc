"""Tests of the client's side of the daemon's access control: the token an open over
TCP carries, and the codes of an evicted session, an unauthorized open and a draining
daemon.

Run: /usr/bin/python3 -m unittest discover -s client/python/tests
"""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import salus_client  # noqa: E402
from fakedaemon import FakeDaemon  # noqa: E402

TOKEN = "0123456789abcdef"


class TokenTest(unittest.TestCase):
    def setUp(self):
        self.d = FakeDaemon(tcp=True, token=TOKEN).start()
        self.addCleanup(self.d.stop)
        saved = {k: os.environ.pop(k, None) for k in ("SALUS_TOKEN", "SALUS_TOKEN_FILE")}

        def restore():
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v
        self.addCleanup(restore)

    def session(self, name, **kw):
        return salus_client.Session(name=name, persistent=1, ephemeral=1, address=self.d.address, **kw)

    def test_without_a_token_the_open_is_refused(self):
        with self.assertRaises(salus_client.Unauthorized) as cm:
            self.session("none")
        self.assertEqual(cm.exception.code, "unauthorized")
        self.assertIsInstance(cm.exception, salus_client.Rejected)
        self.assertNotIn("token", self.d.requests("none", "open")[0])

    def test_a_wrong_token_is_refused(self):
        with self.assertRaises(salus_client.Unauthorized):
            self.session("wrong", token="guess")

    def test_token_argument(self):
        with self.session("arg", token=TOKEN) as s:
            with s.iteration():
                pass
        self.assertEqual(self.d.requests("arg", "open")[0]["token"], TOKEN)
        self.assertEqual(self.d.sessions, {"arg": "finished"})

    def test_token_file_argument_and_environment(self):
        path = os.path.join(tempfile.mkdtemp(), "token")
        with open(path, "w") as f:
            f.write(TOKEN + "\n")
        self.session("file", token_file=path).close()
        os.environ["SALUS_TOKEN_FILE"] = path
        self.session("envfile").close()
        del os.environ["SALUS_TOKEN_FILE"]
        os.environ["SALUS_TOKEN"] = TOKEN
        self.session("env").close()
        self.assertEqual(self.d.sessions, {"file": "finished", "envfile": "finished", "env": "finished"})
        self.assertEqual(salus_client.resolve_token("explicit", path), "explicit")

    def test_unreadable_token_file(self):
        with self.assertRaises(salus_client.SalusError) as cm:
            self.session("missing", token_file="/nonexistent/salus/token")
        self.assertIn("/nonexistent/salus/token", str(cm.exception))


class ClaimTest(unittest.TestCase):
    """A Kubernetes claim's secret: $SALUS_CLAIM_SECRET goes with $SALUS_CLAIM, and an open
    without it is refused with claim_denied (PermissionDenied)."""

    SECRET = "c" * 64

    def setUp(self):
        self.d = FakeDaemon(claims={"uid-1": self.SECRET}).start()
        self.addCleanup(self.d.stop)
        saved = {k: os.environ.pop(k, None) for k in ("SALUS_CLAIM", "SALUS_CLAIM_SECRET")}

        def restore():
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v
        self.addCleanup(restore)
        os.environ["SALUS_CLAIM"] = "uid-1"

    def test_secret_from_the_environment(self):
        os.environ["SALUS_CLAIM_SECRET"] = self.SECRET + "\n"
        salus_client.Session(name="pod", persistent=1, ephemeral=1, address=self.d.address).close()
        opened = self.d.requests("pod", "open")[0]
        self.assertEqual((opened["claim"], opened["claim_secret"]), ("uid-1", self.SECRET))
        self.assertEqual(self.d.sessions, {"pod": "finished"})

    def test_without_the_secret_the_open_is_refused(self):
        with self.assertRaises(salus_client.PermissionDenied) as cm:
            salus_client.Session(name="thief", persistent=1, ephemeral=1, address=self.d.address)
        self.assertEqual(cm.exception.code, "claim_denied")
        self.assertNotIn("claim_secret", self.d.requests("thief", "open")[0])

    def test_no_claim_no_secret_sent(self):
        del os.environ["SALUS_CLAIM"]
        os.environ["SALUS_CLAIM_SECRET"] = self.SECRET
        salus_client.Session(name="plain", persistent=1, ephemeral=1, address=self.d.address).close()
        self.assertNotIn("claim_secret", self.d.requests("plain", "open")[0])


class EvictedTest(unittest.TestCase):
    def test_evicted_session_raises_evicted(self):
        d = FakeDaemon().start()
        self.addCleanup(d.stop)
        s = salus_client.Session(name="hog", persistent=1, ephemeral=1, address=d.address)
        with s.iteration():
            pass
        d.evict("hog")
        with self.assertRaises(salus_client.Evicted) as cm:
            with s.iteration():
                pass
        self.assertEqual(cm.exception.code, "evicted")
        self.assertIsInstance(cm.exception, salus_client.SessionLost)
        s.close()


if __name__ == "__main__":
    unittest.main()
