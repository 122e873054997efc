"""The client installs with pip (pyproject.toml) and imports from where it was installed.

Skipped when pip is missing for this interpreter. Builds from a copy of client/python,
so the source tree is left without build output, with the README's command: build
isolation on (pip's default) and no package index, which works because the client's
build backend (_build/backend.py) needs nothing but the standard library.
"""

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
sys.path.insert(0, CLIENT)

import salus_client  # noqa: E402


def _can_build():
    for mod in ("pip",):
        p = subprocess.run([sys.executable, "-c", "import " + mod], capture_output=True)
        if p.returncode != 0:
            return False
    return True


class StandardLibraryOnlyTest(unittest.TestCase):
    @unittest.skipUnless(hasattr(sys, "stdlib_module_names"), "needs Python 3.10 or later")
    def test_imports(self):
        pkg = os.path.join(CLIENT, "salus_client")
        for name in sorted(os.listdir(pkg)):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(pkg, name)) as f:
                tree = ast.parse(f.read(), name)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    mods = [node.module]
                else:
                    continue
                for m in mods:
                    top = m.split(".")[0]
                    # torch is imported lazily, only when present (gpu.py).
                    self.assertTrue(top in sys.stdlib_module_names or top == "torch",
                                    "%s imports %s, which is not in the standard library" % (name, m))


@unittest.skipUnless(_can_build(), "pip is missing for %s" % sys.executable)
class InstallTest(unittest.TestCase):
    def test_pip_install(self):
        tmp = tempfile.mkdtemp(prefix="salus-install-")
        self.addCleanup(shutil.rmtree, tmp, True)
        src, target = os.path.join(tmp, "src"), os.path.join(tmp, "site")
        shutil.copytree(CLIENT, src, ignore=shutil.ignore_patterns(
            "tests", "build", "*.egg-info", "__pycache__"))
        # The README's `pip install ./client/python`, offline: --no-index proves that
        # the build needs nothing from an index (setuptools would have been fetched).
        p = subprocess.run([sys.executable, "-m", "pip", "install",
                            "--no-index", "--disable-pip-version-check", "--quiet",
                            "--target", target, src],
                           capture_output=True, text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # A fresh interpreter that sees only the installed copy (not client/python).
        probe = ("import importlib.metadata as md, os, salus_client\n"
                 "print(os.path.dirname(salus_client.__file__))\n"
                 "print(salus_client.__version__)\n"
                 "print(md.version('salus-client'))\n"
                 "print(md.metadata('salus-client')['Requires-Python'])\n"
                 "print(salus_client.Session.iterate.__name__)\n")
        env = dict(os.environ, PYTHONPATH=target)
        p = subprocess.run([sys.executable, "-s", "-c", probe], capture_output=True, text=True,
                           cwd=tmp, env=env, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        where, version, dist_version, requires, iterate = p.stdout.split()
        self.assertEqual(where, os.path.join(target, "salus_client"))
        self.assertEqual(version, salus_client.__version__)
        self.assertEqual(dist_version, salus_client.__version__)
        self.assertEqual(requires, ">=3.9")
        self.assertEqual(iterate, "iterate")


if __name__ == "__main__":
    unittest.main()
