"""Tests that the client sends nothing to a socket another user took: the default
socket served by another uid than the user's or root's, and a reconnection to a
socket served by another uid than the one that served the session. They need root
(to play the other user, uid 65534) and Linux (SO_PEERCRED).

Run: /usr/bin/python3 -m unittest discover -s client/python/tests
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import salus_client  # noqa: E402
from salus_client import protocol  # noqa: E402

SQUATTER = r"""
import os, socket, sys
path, out = sys.argv[1], sys.argv[2]
os.setgid(65534); os.setuid(65534)
s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(16)
print("ready", flush=True)
n = 0
while True:
    c, _ = s.accept()
    c.settimeout(2.0)
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            n += len(b)
            with open(out, "w") as f:
                f.write(str(n))
    except OSError:
        pass
    c.close()
"""


@unittest.skipUnless(hasattr(os, "getuid") and os.getuid() == 0 and hasattr(protocol.socket, "SO_PEERCRED"),
                     "needs root (to play another user) and SO_PEERCRED")
class SquattedSocketTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="salus-squat-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        os.chmod(self.dir, 0o777)
        self.path = os.path.join(self.dir, "salus.sock")
        self.got = os.path.join(self.dir, "received")
        self.p = subprocess.Popen([sys.executable, "-c", SQUATTER, self.path, self.got],
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.p.wait)
        self.addCleanup(self.p.kill)
        self.assertEqual(self.p.stdout.readline().strip(), "ready")
        saved = os.environ.pop("SALUS_ADDR", None)
        self.addCleanup(lambda: saved is not None and os.environ.__setitem__("SALUS_ADDR", saved))
        old = protocol._default_path
        protocol._default_path = lambda: self.path
        self.addCleanup(setattr, protocol, "_default_path", old)

    def received(self):
        time.sleep(0.1)
        try:
            with open(self.got) as f:
                return f.read()
        except OSError:
            return ""

    def test_the_default_socket_of_another_user_is_refused(self):
        for address in (None, "auto"):
            with self.assertRaises(salus_client.DaemonUnavailable) as cm:
                salus_client.Session(name="secret-job", persistent=1, ephemeral=1, address=address)
            self.assertEqual(cm.exception.code, "untrusted")
            self.assertIn("uid 65534", str(cm.exception))
        self.assertEqual(self.received(), "")

    def test_a_reconnection_to_another_uid_is_refused(self):
        with self.assertRaises(salus_client.DaemonUnavailable) as cm:
            protocol.Connection(self.path, expect_uid=0)
        self.assertIn("uid 65534", str(cm.exception))
        self.assertEqual(self.received(), "")
        # A socket named explicitly, first connection: the user chose it.
        c = protocol.Connection(self.path)
        self.assertEqual(c.peer_uid, 65534)
        c.close()


if __name__ == "__main__":
    unittest.main()
