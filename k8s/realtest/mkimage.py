#!/usr/bin/env python3
"""Writes a one-layer OCI image archive (what `ctr images import` reads) from
files of this machine, for the kubelet stage of scripts/test-k8s-real.sh: the
stage has no registry, so its images (the sandbox's pause, the chart's salus and
busybox, the training client's Python) are made here from the tree's static
binaries and Debian's files. Standard library only.

    mkimage.py --name salus.local/salus:test --out salus.tar \
        --entrypoint /usr/local/bin/salus --user 65532:65532 \
        /tmp/bin/salus=/usr/local/bin/salus ...

Each mapping is SRC=DEST: a file, or a directory copied whole; --libs-of
BINARY adds the shared libraries ldd lists for it, at the same paths.
"""

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile


def fail(msg):
    sys.exit("mkimage: " + msg)


def ldd(binary):
    """The shared libraries of binary (and its loader), as ldd lists them."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if out.returncode != 0:
        fail("ldd %s: %s" % (binary, out.stderr.strip() or out.stdout.strip()))
    libs = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) > parts.index("=>") + 1 and parts[parts.index("=>") + 1].startswith("/"):
            libs.append(parts[parts.index("=>") + 1])
        elif parts and parts[0].startswith("/"):
            libs.append(parts[0])
    return libs


def add(tar, src, dest, seen):
    """Adds src at dest (a file, a symlink as a link, a directory whole) and its parents."""
    dest = "/" + dest.strip("/")
    parts = dest.strip("/").split("/")
    for i in range(1, len(parts)):
        d = "/".join(parts[:i])
        if d not in seen:
            seen.add(d)
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(ti)
    name = dest.lstrip("/")
    if name in seen:
        return
    seen.add(name)
    if os.path.islink(src) and os.path.dirname(os.path.realpath(src)) != os.path.dirname(src):
        # A link out of its directory (/lib64/ld-linux...): copy what it points to.
        src = os.path.realpath(src)
    st = os.lstat(src)
    ti = tarfile.TarInfo(name)
    ti.mode = st.st_mode & 0o7777
    if os.path.islink(src):
        ti.type, ti.linkname = tarfile.SYMTYPE, os.readlink(src)
        tar.addfile(ti)
    elif os.path.isdir(src):
        ti.type = tarfile.DIRTYPE
        tar.addfile(ti)
        for entry in sorted(os.listdir(src)):
            if entry == "__pycache__":
                continue
            add(tar, os.path.join(src, entry), dest + "/" + entry, seen)
    elif os.path.isfile(src):
        ti.size = st.st_size
        with open(src, "rb") as f:
            tar.addfile(ti, f)
    else:
        fail("%s is neither a file, a directory nor a link" % src)


def blob(layout, data, media):
    digest = hashlib.sha256(data).hexdigest()
    layout["blobs/sha256/" + digest] = data
    return {"mediaType": media, "digest": "sha256:" + digest, "size": len(data)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", required=True, help="the image's reference, e.g. salus.local/salus:test")
    ap.add_argument("--out", required=True, help="the OCI archive to write")
    ap.add_argument("--entrypoint", action="append", default=[], help="the entrypoint, one argument each")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE")
    ap.add_argument("--user", default="")
    ap.add_argument("--libs-of", action="append", default=[], help="add the shared libraries of this binary")
    ap.add_argument("--dir", action="append", default=[], help="an empty directory (mode 1777) to make")
    ap.add_argument("files", nargs="+", help="SRC=DEST")
    a = ap.parse_args()

    buf = io.BytesIO()
    seen = set()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for m in a.files:
            if "=" not in m:
                fail("%s: give SRC=DEST" % m)
            src, dest = m.split("=", 1)
            if not os.path.lexists(src):
                fail("%s does not exist" % src)
            add(tar, src, dest, seen)
        for b in a.libs_of:
            for lib in ldd(b):
                add(tar, lib, lib, seen)
        for d in a.dir:
            ti = tarfile.TarInfo(d.strip("/"))
            ti.type, ti.mode = tarfile.DIRTYPE, 0o1777
            tar.addfile(ti)
    layer = buf.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()

    layout = {}
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Entrypoint": a.entrypoint, "Env": a.env + ["PATH=/usr/local/bin:/usr/bin:/bin"],
                         "User": a.user},
              "rootfs": {"type": "layers", "diff_ids": [diff_id]}}
    cdesc = blob(layout, json.dumps(config, sort_keys=True).encode(), "application/vnd.oci.image.config.v1+json")
    ldesc = blob(layout, layer, "application/vnd.oci.image.layer.v1.tar")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": cdesc, "layers": [ldesc]}
    mdesc = blob(layout, json.dumps(manifest, sort_keys=True).encode(), "application/vnd.oci.image.manifest.v1+json")
    mdesc["annotations"] = {"io.containerd.image.name": a.name, "org.opencontainers.image.ref.name": a.name}
    layout["oci-layout"] = json.dumps({"imageLayoutVersion": "1.0.0"}).encode()
    layout["index.json"] = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                                       "manifests": [mdesc]}).encode()
    with tarfile.open(a.out, "w") as out:
        for name in ["blobs", "blobs/sha256"]:
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            out.addfile(ti)
        for name, data in layout.items():
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode = len(data), 0o644
            out.addfile(ti, io.BytesIO(data))
    print("mkimage: %s (%d MiB) in %s" % (a.name, len(layer) >> 20, a.out))


if __name__ == "__main__":
    main()
