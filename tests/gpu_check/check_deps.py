#!/usr/bin/env python3
"""Whether the GPU check's build would find every header and library on the GPU machine's image,
which has the C and C++ runtime's headers, the CUDA toolkit and nothing else of Debian's -dev
packages: each file the build of the targets read must be the toolkit's, the compiler's, the C
library's (dpkg names its package), ours, or in the dependencies folder that prepare-gpu-deps
fills, at the same path under include/ or lib/. Reads ninja's recorded dependencies and commands.

usage: check_deps.py BUILD DEPS TOOLKIT TARGET...
"""
import os
import re
import shlex
import subprocess
import sys

# Debian packages the image has: the C library's and the compiler's own headers and libraries.
IMAGE_PACKAGES = re.compile(r"^(libc6-dev|linux-libc-dev|libcrypt-dev|libstdc\+\+-\d+-dev|libgcc-\d+-dev|gcc-\d+)"
                            r"(:\w+)?$")
INCLUDE_ROOTS = ("/usr/local/include/", "/usr/include/x86_64-linux-gnu/", "/usr/include/")
LIB_ROOTS = ("/usr/local/lib/", "/usr/lib/x86_64-linux-gnu/", "/usr/lib/")


def ninja(build, *args):
    r = subprocess.run(["ninja", "-C", build] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("check_deps.py: ninja %s failed:\n%s%s" % (" ".join(args), r.stdout, r.stderr))
    return r.stdout


def objects_and_libraries(build, targets):
    """The objects the targets' compile commands write, and the absolute library paths their links read."""
    objects, libraries = set(), set()
    for line in ninja(build, "-t", "commands", *targets).splitlines():
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        for i, w in enumerate(words):
            if w == "-o" and i + 1 < len(words) and words[i + 1].endswith(".o"):
                objects.add(words[i + 1])
            elif os.path.isabs(w) and re.search(r"\.(a|so)(\.\d+)*$", w):
                libraries.add(w)
    return objects, libraries


def headers_of(build, objects):
    headers = set()
    out = ninja(build, "-t", "deps", *sorted(objects)) if objects else ""
    for line in out.splitlines():
        if line.startswith("    "):
            path = line.strip()
            headers.add(os.path.normpath(path if os.path.isabs(path) else os.path.join(build, path)))
    return headers


def owners(paths):
    """{path: Debian package} for the paths dpkg knows."""
    found = {}
    paths = sorted(paths)
    for i in range(0, len(paths), 200):
        r = subprocess.run(["dpkg", "-S"] + paths[i:i + 200], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            pkgs, _, path = line.partition(": ")
            for p in pkgs.split(", "):
                found.setdefault(path.strip(), p.strip())
    return found


def relative_to(path, roots):
    for root in roots:
        if path.startswith(root):
            return path[len(root):]
    return None


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    build, deps, toolkit = (os.path.realpath(a) for a in argv[1:4])
    targets = argv[4:]
    source = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ours = (source + os.sep, build + os.sep, toolkit + os.sep, "/usr/lib/gcc/", "/usr/include/c++/")
    objects, libraries = objects_and_libraries(build, targets)
    headers = headers_of(build, objects)
    if not objects or not headers:
        print("FAILED: ninja recorded no compile (or no header) of %d targets: nothing was checked" % len(targets))
        return 1
    problems = []
    for kind, files, roots, sub in (("header", headers, INCLUDE_ROOTS, "include"),
                                    ("library", libraries, LIB_ROOTS, "lib")):
        outside = {f for f in files if not os.path.realpath(f).startswith(ours) and not f.startswith(ours)}
        # The toolkit's nccl.h is not on every image: the GPU machine takes it from DEPS or python3's NCCL.
        outside |= {f for f in files if os.path.basename(f) == "nccl.h"}
        packages = owners(outside)
        for f in sorted(outside):
            if IMAGE_PACKAGES.match(packages.get(f, "")) and os.path.basename(f) != "nccl.h":
                continue
            rel = relative_to(f, roots) if kind == "header" else os.path.basename(f)
            if os.path.basename(f) == "nccl.h":
                rel = "nccl.h"
            if rel and os.path.exists(os.path.join(deps, sub, rel)):
                continue
            problems.append("%s %s (%s) is read by the build, but the GPU image lacks it and %s has no %s/%s: "
                            "tools/gpu/prepare-gpu-deps must copy it" %
                            (kind, f, packages.get(f, "no Debian package"), deps, sub, rel or os.path.basename(f)))
    print("checked %d headers and %d libraries of %d objects for %d targets against %s" %
          (len(headers), len(libraries), len(objects), len(targets), deps))
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
