#!/usr/bin/env python3
"""Prints the ninja targets the tests of one Meson suite need, so CI
can build a sanitizer configuration's suite without building all.

    ninja -C BUILD $(python3 tools/ci/ci_suite_targets.py BUILD SUITE)
"""
import json
import os
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
import script_options  # noqa: E402 - after the path it lives on


def introspect(build_dir, what):
    out = subprocess.run(["meson", "introspect", what, build_dir], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main(argv):
    script_options.handle(argv, __doc__)
    if len(argv) != 3:
        print("usage: ci_suite_targets.py BUILD_DIR SUITE", file=sys.stderr)
        return 2
    build_dir, suite = argv[1], argv[2]
    files_by_id = {}
    for target in introspect(build_dir, "--targets"):
        files_by_id[target["id"]] = target["filename"]
    wanted = set()
    for test in introspect(build_dir, "--tests"):
        if not any(s == suite or s.endswith(":" + suite) for s in test["suite"]):
            continue
        for dep in test.get("depends", []):
            wanted.update(files_by_id.get(dep, []))
        exe = test["cmd"][0]
        if exe.startswith(os.path.abspath(build_dir)):
            wanted.add(exe)
    if not wanted:
        print(f"no tests in suite '{suite}'", file=sys.stderr)
        return 1
    root = os.path.abspath(build_dir)
    print(" ".join(sorted(os.path.relpath(p, root) for p in wanted)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
