#!/usr/bin/env python3
"""Unpacks MSCCL++'s reference plans (tests/data/reference-plans/mscclpp.tar.xz) for the tests.

    tests/support/reference_plans.py DEST     unpacks into DEST/mscclpp unless it already holds this archive

Meson unpacks them into the build folder at configure time; a test run by hand imports directory(),
which takes MSCCLPP_REFERENCE_PLANS when set and otherwise unpacks into a folder under the system's
temporary folder, named by the archive's digest so a changed archive is unpacked again.
"""
import hashlib
import os
import sys
import tarfile
import tempfile

ARCHIVE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "reference-plans",
                       "mscclpp.tar.xz")


def _digest():
    with open(ARCHIVE, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def unpack(dest):
    """Unpacks the archive into dest (dest/mscclpp/...) unless dest's stamp names this archive already."""
    digest = _digest()
    stamp = os.path.join(dest, ".digest")
    try:
        with open(stamp) as f:
            if f.read().strip() == digest:
                return dest
    except OSError:
        pass
    os.makedirs(dest, exist_ok=True)
    # Into a fresh folder beside dest, then renamed, so a test never sees half an archive.
    staging = tempfile.mkdtemp(prefix=".unpack-", dir=dest)
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(staging, filter="data")
    target = os.path.join(dest, "mscclpp")
    if os.path.isdir(target):
        os.rename(target, staging + ".old")
    os.rename(os.path.join(staging, "mscclpp"), target)
    for leftover in (staging, staging + ".old"):
        if os.path.isdir(leftover):
            for root, dirs, files in os.walk(leftover, topdown=False):
                for name in files:
                    os.unlink(os.path.join(root, name))
                for name in dirs:
                    os.rmdir(os.path.join(root, name))
            os.rmdir(leftover)
    with open(stamp, "w") as f:
        f.write(digest + "\n")
    return dest


def directory():
    """The folder holding mscclpp/committed and mscclpp/generated."""
    given = os.environ.get("MSCCLPP_REFERENCE_PLANS")
    if given:
        return given
    return unpack(os.path.join(tempfile.gettempdir(), "mscclpp-reference-plans-" + _digest()))


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    if len(sys.argv) != 2:
        print("usage: reference_plans.py DEST", file=sys.stderr)
        sys.exit(2)
    unpack(sys.argv[1])
