#!/usr/bin/env python3
"""The pip install test: `pip install SOURCE` into a fresh venv, meson-python building the whole
project for the CPU backend, then the installed package used as a user would: outside the source
tree, with no MSCCL++ variable set.

usage: pip_install_test.py SOURCE_DIR WORK_DIR JUNIT_XML

WORK_DIR keeps meson-python's build folder between runs; the venv is made afresh each time. Each
step is one JUnit test case; the exit status is 1 when any failed. The install is skipped when pip
cannot reach a package index for meson-python, the only thing this test needs from the network.
"""
import json
import os
import sys
import tempfile

from install_steps import Steps, must, run

_OFFLINE = ("No matching distribution found for meson-python", "Could not find a version that satisfies",
            "Failed to establish a new connection", "Temporary failure in name resolution")


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    source, work_dir, junit = argv[1:]
    os.makedirs(work_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="mscclpp-pip-test.")
    venv = os.path.join(scratch, "venv")
    python = os.path.join(venv, "bin", "python")
    # A user's environment: nothing of ours, an empty plan cache, run outside the source tree.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MSCCLPP_", "NCCL_")) and k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")}
    env.update(MSCCLPP_CACHE_DIR=os.path.join(scratch, "cache"), PYTHONDONTWRITEBYTECODE="1")
    state = {}
    steps = Steps("pip")
    step = steps.step

    def py(*args, **kw):
        return must([python, *args], " ".join(args[:2]), env=kw.pop("env", env), cwd=scratch, **kw)

    @step("pip install SOURCE into a fresh venv (meson-python, -Dgpu=disabled)")
    def _install():
        must([sys.executable, "-m", "venv", venv], "python3 -m venv")
        rc, out, err = run([python, "-m", "pip", "install", "--no-input", source, "-Csetup-args=-Dgpu=disabled",
                            f"-Cbuild-dir={os.path.join(work_dir, 'build')}"], env=env, cwd=scratch, timeout=1800)
        if rc != 0 and any(marker in out + err for marker in _OFFLINE):
            return "pip cannot reach a package index for meson-python (no network)"
        if rc != 0:
            raise AssertionError(f"pip install failed (exit {rc}):\n{out[-4000:]}{err[-4000:]}")
        state["package"] = py("-c", "import mscclpp, os; print(os.path.dirname(mscclpp.__file__))").strip()

    @step("the package holds the runtime, the shim and its replace-mode copy, the tools and the plans")
    def _layout():
        package = state["package"]
        if not package.startswith(venv):
            raise AssertionError(f"mscclpp imported from {package}, not from the venv {venv}")
        for rel in ("lib/libmscclpp.so.0", "lib/libmscclpp_nccl.so.0", "lib/mscclpp-nccl/libnccl.so.2",
                    "bin/mscclpp-info", "bin/mscclpp-plan", "bin/mscclpp-emulate", "bin/mscclpp-perf",
                    "_install_paths.py"):
            if not os.path.isfile(os.path.join(package, rel)):
                raise AssertionError(f"not installed: {rel}")
        expected = sorted(f for f in os.listdir(os.path.join(source, "plans")) if f.endswith(".json"))
        installed = sorted(os.listdir(os.path.join(package, "plans")))
        if installed != expected:
            raise AssertionError(f"{len(installed)} plans installed, plans/ has {len(expected)}")

    @step("import mscclpp finds its runtime and the installed plans with no variable, and selects a plan")
    def _import():
        out = py("-c", "import mscclpp, json\n"
                       "from mscclpp import _paths, _runtime_lib\n"
                       "r = mscclpp.ExecutionPlanRegistry()\n"
                       "c = r.select('allreduce', 4, 4, 1, 2, 1 << 20, dtype='float32')\n"
                       "print(json.dumps({'runtime': _paths.library_file(_runtime_lib.load()), 'plans': len(r.plans()),"
                       " 'chosen': c.name, 'sources': sorted({p.source.rsplit('/', 1)[0] for p in r.plans()})}))")
        got = json.loads(out)
        package = state["package"]
        if os.path.realpath(got["runtime"]) != os.path.realpath(os.path.join(package, "lib", "libmscclpp.so.0")):
            raise AssertionError(f"the runtime came from {got['runtime']}")
        if got["plans"] != len(os.listdir(os.path.join(package, "plans"))) or got["chosen"] != "allreduce_allpairs_n4_oop":
            raise AssertionError(f"registry: {got}")
        if [os.path.realpath(s) for s in got["sources"]] != [os.path.realpath(os.path.join(package, "plans"))]:
            raise AssertionError(f"plans registered from {got['sources']}")

    @step("python3 -m mscclpp list, --version, verify, explain, and the console scripts")
    def _cli():
        listed = py("-m", "mscclpp", "list")
        if f"{len(os.listdir(os.path.join(state['package'], 'plans')))} plan(s) in" not in listed:
            raise AssertionError(f"list printed:\n{listed[-2000:]}")
        if py("-m", "mscclpp", "--version").strip() != "mscclpp 0.1.0":
            raise AssertionError("--version")
        plan = os.path.join(state["package"], "plans", "allreduce_ll_n2_ip.json")
        if "PROVEN (allreduce_ll_n2_ip" not in py("-m", "mscclpp", "verify", plan):
            raise AssertionError("verify (mscclpp-plan verify) did not say PROVEN")
        script = must([os.path.join(venv, "bin", "mscclpp"), "--version"], "mscclpp --version", env=env)
        if script.strip() != "mscclpp 0.1.0":
            raise AssertionError(f"the console script printed {script!r}")
        explained = py("-m", "mscclpp", "explain", "--collective", "allreduce", "--ranks", "4", "--bytes", "4K",
                       "--inplace")
        if "runs: 'allreduce_ll_n4_ip'" not in explained or "(installed defaults)" not in explained:
            raise AssertionError(f"explain printed:\n{explained[-2000:]}")
        # The C++ tools on the venv's PATH, as a user finds them.
        on_path = dict(env, PATH=os.path.join(venv, "bin") + os.pathsep + env.get("PATH", ""))
        for tool in ("mscclpp-plan", "mscclpp-emulate", "mscclpp-info", "mscclpp-perf"):
            version = must([os.path.join(venv, "bin", tool), "--version"], f"{tool} --version", env=on_path)
            if version.strip() != f"{tool} (MSCCL++) 0.1.0":
                raise AssertionError(f"{tool} --version printed {version!r}")
        perf = must([os.path.join(venv, "bin", "mscclpp-perf"), "-g", "2", "-b", "4K", "-e", "8K", "-n", "2", "-w", "1", "-R", "1"],
                    "mscclpp-perf", env=dict(on_path, MSCCLPP_BACKEND="cpu"))
        if "Out of bounds values : 0 OK" not in perf:
            raise AssertionError(f"mscclpp-perf printed:\n{perf[-2000:]}")

    client = os.path.join(source, "tests", "python", "integration", "nccl_ctypes_client.py")

    def run_client(extra, log, scope="handle"):
        cenv = dict(env, MSCCLPP_BACKEND="cpu", NCCL_DEBUG="INFO", NCCL_DEBUG_FILE=log, **extra)
        out = py(client, "allreduce", scope, env=cenv, timeout=120)
        result = json.loads(out.strip().splitlines()[-1])
        with open(log, encoding="utf-8") as f:
            text = f.read()
        if not result["correct"] or "plan allreduce_ll_n2_oop ran" not in text:
            raise AssertionError(f"client: {result}\nlog:\n{text[-2000:]}")
        return result

    @step("--nccl-dir (replace mode) and --shim-path (LD_PRELOAD) serve a ctypes NCCL client through a plan")
    def _shim():
        nccl_dir = py("-m", "mscclpp", "--nccl-dir").strip()
        replaced = run_client({"LD_LIBRARY_PATH": nccl_dir}, os.path.join(scratch, "replace.log"))
        if os.path.dirname(replaced["library"]) != nccl_dir:
            raise AssertionError(f"libnccl.so.2 came from {replaced['library']}, not {nccl_dir}")
        shim = py("-m", "mscclpp", "--shim-path").strip()
        # Preloaded, the shim answers the calls a program linked against NCCL makes (the global scope).
        preloaded = run_client({"LD_PRELOAD": shim}, os.path.join(scratch, "preload.log"), scope="global")
        if os.path.realpath(preloaded["library"]) != os.path.realpath(shim):
            raise AssertionError(f"ncclGetVersion came from {preloaded['library']}, not the preloaded {shim}")

    return steps.finish(junit, scratch)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
