"""A PEP 517 build backend for salus-client in the standard library alone.

The client has no dependencies, so building it needs none either: with this
backend (pyproject.toml's build-backend, found through backend-path) `pip install
./client/python` works where no package index can be reached, which a backend
from an index (setuptools, fetched into pip's isolated build environment) does not.
It builds a pure-Python wheel of the package salus_client and an sdist; the
version is salus_client.__version__.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

NAME = "salus_client"
DIST = "salus_client"  # the distribution salus-client, normalized for file names
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _version():
    with open(os.path.join(ROOT, NAME, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', f.read(), re.M)
    if not m:
        raise RuntimeError("salus_client/__init__.py has no __version__")
    return m.group(1)


def _metadata():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\n"
            "Name: salus-client\n"
            "Version: %s\n"
            "Summary: Run a PyTorch (or any) training loop under the salus GPU-sharing daemon, one iteration at a time\n"
            "Requires-Python: >=3.9\n"
            "Classifier: Programming Language :: Python :: 3\n"
            "Classifier: Operating System :: POSIX :: Linux\n"
            "Description-Content-Type: text/markdown\n"
            "\n%s" % (_version(), readme))


def _sources():
    pkg = os.path.join(ROOT, NAME)
    return sorted(n for n in os.listdir(pkg) if n.endswith(".py"))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = "%s-%s.dist-info" % (DIST, _version())
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return info


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    info = "%s-%s.dist-info" % (DIST, version)
    name = "%s-%s-py3-none-any.whl" % (DIST, version)
    files = []
    for src in _sources():
        with open(os.path.join(ROOT, NAME, src), "rb") as f:
            files.append(("%s/%s" % (NAME, src), f.read()))
    files.append((info + "/METADATA", _metadata().encode("utf-8")))
    files.append((info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: salus_client _build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(p, d) for p, d in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files:
            z.writestr(zipfile.ZipInfo(p, date_time=(2020, 1, 1, 0, 0, 0)), d)
    return name


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (DIST, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "_build/backend.py"] + [NAME + "/" + s for s in _sources()]:
            t.add(os.path.join(ROOT, rel), arcname=base + "/" + rel)
        pkg_info = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        t.addfile(ti, io.BytesIO(pkg_info))
    return name
