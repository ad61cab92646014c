"""The step runner of the install tests (install_test.py, pip_install_test.py): each step is one
JUnit test case; a step fails on AssertionError (or any crash), is skipped when it returns a reason,
and every step after a failed first step (the install itself) is skipped."""
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET


class Step:
    def __init__(self, name):
        self.name, self.failure, self.skipped, self.seconds = name, None, None, 0.0


def run(cmd, env=None, cwd=None, timeout=600):
    """Runs cmd; returns (returncode, stdout, stderr)."""
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def must(cmd, what, **kw):
    rc, out, err = run(cmd, **kw)
    if rc != 0:
        raise AssertionError(f"{what} failed (exit {rc}): {' '.join(cmd)}\n{out}{err}")
    return out


class Steps:
    def __init__(self, suite):
        self.suite, self.steps = suite, []

    def step(self, name):
        """Decorator: runs the function now, as the step `name`."""
        def wrap(fn):
            s = Step(name)
            t = time.monotonic()
            if any(x.failure or x.skipped for x in self.steps[:1]):  # nothing works without the install
                s.skipped = "the install step did not pass"
            else:
                try:
                    skip = fn()
                    if isinstance(skip, str):
                        s.skipped = skip
                except AssertionError as e:
                    s.failure = str(e)
                except Exception as e:  # a crash of the step itself is a failure too
                    s.failure = f"{type(e).__name__}: {e}"
            s.seconds = time.monotonic() - t
            self.steps.append(s)
            print(f"{'SKIP' if s.skipped else 'FAIL' if s.failure else 'ok'}: {name} ({s.seconds:.1f} s)" +
                  (f": {s.skipped}" if s.skipped else f"\n{s.failure}" if s.failure else ""), flush=True)
            return fn
        return wrap

    def write_junit(self, path):
        suite = ET.Element("testsuite", name=self.suite, tests=str(len(self.steps)),
                           failures=str(sum(1 for s in self.steps if s.failure)),
                           skipped=str(sum(1 for s in self.steps if s.skipped)))
        for s in self.steps:
            case = ET.SubElement(suite, "testcase", classname=self.suite, name=s.name, time=f"{s.seconds:.3f}")
            if s.failure:
                ET.SubElement(case, "failure", message=s.failure.splitlines()[0][:200]).text = s.failure
            elif s.skipped:
                ET.SubElement(case, "skipped", message=s.skipped)
        root = ET.Element("testsuites")
        root.append(suite)
        ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)

    def failed(self):
        return any(s.failure for s in self.steps)

    def finish(self, junit, scratch):
        """Writes the JUnit file, removes the test's scratch folder; the exit status (1 when a step failed)."""
        self.write_junit(junit)
        shutil.rmtree(scratch, ignore_errors=True)
        return 1 if self.failed() else 0
