#!/usr/bin/env python3
"""The tests of one Meson suite, for tools/gpu/gpu-check: the ninja targets they need, their names,
and one test run as `meson test` runs it, under the check's own bounds. Reads the build's
introspection files, so it needs no meson process.

  gpu_tests.py targets BUILD SUITE [TARGET...]      ninja targets of the suite's tests and of the named executables
                                                    and shared libraries
  gpu_tests.py list BUILD SUITE                     the suite's tests, one a line: name and Meson timeout
  gpu_tests.py run BUILD NAME LOGDIR TIMEOUT_S      runs one test in BUILD with its arguments and environment;
                                                    MSCCLPP_TIMEOUT_S at most TIMEOUT_S, JUnit files into LOGDIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
import script_options  # noqa: E402 - after the path it lives on


def load(build, what):
    path = os.path.join(build, "meson-info", "intro-%s.json" % what)
    if not os.path.isfile(path):
        sys.exit("gpu_tests.py: %s is missing: %s is not a configured Meson build" % (path, build))
    with open(path) as f:
        return json.load(f)


def in_suite(test, suite):
    return any(s == suite or s.endswith(":" + suite) for s in test["suite"])


def targets(build, suite, executables):
    root = os.path.abspath(build)
    files_by_id, files_by_name = {}, {}
    for t in load(build, "targets"):
        files_by_id[t["id"]] = t["filename"]
        if t["type"] in ("executable", "shared library"):
            files_by_name.setdefault(t["name"], []).extend(t["filename"])
    wanted = set()
    tests = [t for t in load(build, "tests") if in_suite(t, suite)]
    if not tests:
        sys.exit("gpu_tests.py: no tests in suite '%s' in %s" % (suite, build))
    for test in tests:
        for dep in test.get("depends", []):
            wanted.update(files_by_id.get(dep, []))
        if test["cmd"][0].startswith(root + os.sep):
            wanted.add(test["cmd"][0])
    for name in executables:
        if name not in files_by_name:
            sys.exit("gpu_tests.py: %s has no executable or shared library named %s" % (build, name))
        wanted.update(files_by_name[name])
    return sorted(os.path.relpath(p, root) for p in wanted)


def run(build, name, logdir, timeout_s):
    root = os.path.abspath(build)
    found = [t for t in load(build, "tests") if t["name"] == name]
    if not found:
        sys.exit("gpu_tests.py: no test named %s in %s" % (name, build))
    test = found[0]
    if test.get("should_fail"):
        sys.exit("gpu_tests.py: %s is expected to fail, which this runner does not invert" % name)
    env = dict(os.environ)
    for key, value in test["env"].items():
        # Meson prepends the folders of the build's shared libraries; the
        # machine's own (the driver's, a double's) stay after them.
        if key == "LD_LIBRARY_PATH" and os.environ.get(key):
            value = value + os.pathsep + os.environ[key]
        env[key] = value
    own = env.get("MSCCLPP_TIMEOUT_S")
    if not own or float(own) <= 0 or float(own) > timeout_s:
        env["MSCCLPP_TIMEOUT_S"] = str(timeout_s)
    results = os.path.join(root, "test-results") + os.sep
    cmd = [os.path.join(logdir, os.path.basename(a)) if a.startswith(results) else a for a in test["cmd"]]
    os.makedirs(logdir, exist_ok=True)
    os.chdir(test.get("workdir") or root)
    sys.stdout.flush()
    # The test replaces this process, so the caller's time limit reaches it directly.
    os.execvpe(cmd[0], cmd, env)


def main(argv):
    script_options.handle(argv, __doc__)
    if len(argv) >= 4 and argv[1] == "targets":
        print(" ".join(targets(argv[2], argv[3], argv[4:])))
        return 0
    if len(argv) == 4 and argv[1] == "list":
        for t in load(argv[2], "tests"):
            if in_suite(t, argv[3]):
                print(t["name"], t["timeout"])
        return 0
    if len(argv) == 6 and argv[1] == "run":
        run(argv[2], argv[3], argv[4], int(argv[5]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
