#!/usr/bin/env python3
"""The install test: installs this build into a temporary folder and builds a program outside the
tree (examples/external/) against the installed headers and library through pkg-config only.

usage: install_test.py BUILD_DIR SOURCE_DIR PREFIX LIBDIR INCLUDEDIR NVCC JUNIT_XML

Each step is one JUnit test case in JUNIT_XML, named by what it checks; the exit status is 1 when
any failed. The nvcc step is skipped when NVCC does not exist.
"""
import concurrent.futures
import os
import subprocess
import sys
import tempfile

from install_steps import Steps, must, run


def main(argv):
    if len(argv) != 8:
        print(__doc__, file=sys.stderr)
        return 2
    build, source, prefix, libdir, includedir, nvcc, junit = argv[1:]
    work = tempfile.mkdtemp(prefix="mscclpp-install-test.")
    dest = os.path.join(work, "dest")
    root = dest + prefix  # the staged prefix
    lib_path = libdir if os.path.isabs(libdir) else os.path.join(prefix, libdir)
    inc_path = includedir if os.path.isabs(includedir) else os.path.join(prefix, includedir)
    staged_lib, staged_inc = dest + lib_path, dest + inc_path
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = os.path.join(staged_lib, "pkgconfig")
    env["LD_LIBRARY_PATH"] = staged_lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    external = os.path.join(source, "examples", "external")
    state = {}
    steps = Steps("install")
    step = steps.step

    @step("meson install --destdir stages the library, headers and pkg-config file")
    def _install():
        must(["meson", "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", dest], "meson install")
        for path in [os.path.join(staged_lib, "libmscclpp.so"), os.path.join(staged_lib, "pkgconfig", "mscclpp.pc"),
                     os.path.join(staged_inc, "mscclpp", "mscclpp.hpp"),
                     os.path.join(staged_inc, "mscclpp", "host_launch.hpp")]:
            if not os.path.exists(path):
                raise AssertionError(f"not installed: {path}")

    @step("pkg-config flags name only installed and toolkit folders")
    def _flags():
        define = ["--define-variable=prefix=" + root]
        cflags = must(["pkg-config"] + define + ["--cflags", "mscclpp"], "pkg-config --cflags", env=env).split()
        libs = must(["pkg-config"] + define + ["--libs", "mscclpp"], "pkg-config --libs", env=env).split()
        state["cflags"], state["libs"] = cflags, libs
        for flag in cflags + libs:
            for tree in (os.path.realpath(source), os.path.realpath(build)):
                if tree in flag:
                    raise AssertionError(f"pkg-config flag {flag} points into {tree}")
        if "-I" + staged_inc not in cflags:
            raise AssertionError(f"-I{staged_inc} missing from the cflags {cflags}")
        if "-L" + staged_lib not in libs or "-lmscclpp" not in libs:
            raise AssertionError(f"-L{staged_lib} -lmscclpp missing from the libs {libs}")
        for flag in cflags:
            if not flag.startswith("-I"):
                raise AssertionError(f"unexpected compile flag {flag} (a broken pkg-config file?)")

    @step("every installed header compiles on its own with the pkg-config flags only")
    def _headers():
        if "cflags" not in state:
            return "no pkg-config flags"
        headers = sorted(os.listdir(os.path.join(staged_inc, "mscclpp")))

        def compile_one(h):
            is_c = h.endswith(".h")
            cmd = (["cc", "-std=c11"] if is_c else ["c++", "-std=c++17"]) + \
                ["-fsyntax-only", "-Wall", "-Wextra", "-x", "c" if is_c else "c++", "-"] + state["cflags"]
            p = subprocess.run(cmd, input=f"#include <mscclpp/{h}>\n", capture_output=True, text=True, timeout=300)
            return h, p.returncode, p.stderr

        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            for h, rc, err in pool.map(compile_one, headers):
                if rc != 0:
                    failures.append(f"mscclpp/{h}:\n{err}")
        if len(headers) < 20:
            raise AssertionError(f"only {len(headers)} headers installed: {headers}")
        if failures:
            raise AssertionError("headers that do not compile on their own:\n" + "\n".join(failures))

    def check_output(out, lines, program):
        if out.splitlines() != lines:
            raise AssertionError(f"{program} printed:\n{out}\nexpected:\n" + "\n".join(lines))

    hello_lines = [f"external: rank {r}: memory channel (SHM) and port channel (TCP) delivered 256 words: OK"
                   for r in range(2)]

    @step("examples/external/hello.cc built with c++ and pkg-config runs correctly")
    def _hello():
        if "cflags" not in state:
            return "no pkg-config flags"
        exe = os.path.join(work, "hello")
        must(["c++", "-std=c++17", "-Wall", "-Wextra", os.path.join(external, "hello.cc"), "-o", exe] +
             state["cflags"] + state["libs"] + ["-pthread"], "compiling hello.cc")
        rc, out, err = run([exe], env=env, timeout=300)
        if rc != 0:
            raise AssertionError(f"hello exited {rc}:\n{out}{err}")
        check_output(out, hello_lines, "hello")

    @step("the Python package and the default plans are installed and work together")
    def _python_and_plans():
        plans_dir = os.path.join(root, "share", "mscclpp", "plans")
        expected = sorted(f for f in os.listdir(os.path.join(source, "plans")) if f.endswith(".json"))
        installed = sorted(f for f in os.listdir(plans_dir) if f.endswith(".json")) if os.path.isdir(plans_dir) else []
        if installed != expected:
            raise AssertionError(f"{plans_dir} holds {len(installed)} plans, plans/ has {len(expected)}")
        packages = [d for d, _, files in os.walk(dest) if d.endswith(os.sep + "mscclpp") and "__init__.py" in files]
        if len(packages) != 1:
            raise AssertionError(f"expected one installed mscclpp package under {dest}, found {packages}")
        # Where the interpreter looks (python.install_env=auto), not under the prefix where it would not be found.
        site = os.path.dirname(packages[0])[len(dest):]
        looks = must([sys.executable, "-c", "import sys; print('\\n'.join(sys.path))"],
                     "the interpreter's sys.path", env={k: v for k, v in env.items() if k != "PYTHONPATH"}).split("\n")
        if site not in looks:
            raise AssertionError(f"meson install put the package in {site}, which is not on the interpreter's sys.path")
        # The installed package alone (not the source tree), with no MSCCL++
        # variable: it must find the staged library through its _install_paths
        # module, and the runtime the staged default plans relative to its own
        # file. An empty plan cache keeps this user's own plans out.
        penv = {k: v for k, v in env.items() if not k.startswith("MSCCLPP_") and k != "LD_LIBRARY_PATH"}
        penv.update(PYTHONPATH=os.path.dirname(packages[0]), PYTHONDONTWRITEBYTECODE="1",
                    MSCCLPP_CACHE_DIR=os.path.join(work, "empty-cache"))
        program = (
            "import mscclpp, os\n"
            "from mscclpp import _paths\n"
            "assert os.path.realpath(mscclpp.__file__).startswith(os.path.realpath(%r)), mscclpp.__file__\n"
            "assert os.path.isfile(_paths.shim_path()) and _paths.shim_path().startswith(%r), _paths.shim_path()\n"
            "from mscclpp.cli.program_runner import run_program\n"
            "assert '\"allreduce\"' in run_program(%r, ['num_gpus=4'], 'build').to_json()\n"
            "choice = mscclpp.ExecutionPlanRegistry().select('allreduce', 4, 4, 1, 2, 1 << 20, dtype=mscclpp.DataType.float32)\n"
            "print(choice.plan.name)\n"
            % (dest, dest, os.path.join(source, "examples", "dsl", "allreduce_allpairs.py")))
        rc, out, err = run([sys.executable, "-c", program], env=penv, cwd=work, timeout=300)
        if rc != 0:
            raise AssertionError(f"the installed package failed (exit {rc}):\n{out}{err}")
        if out.strip() != "allreduce_allpairs_n4_oop":
            raise AssertionError(f"the registry chose {out.strip()!r} from the installed plans, expected allreduce_allpairs_n4_oop")

    @step("the staged tools, shim and replace-mode copy find the staged default plans from their own folders")
    def _plans_from_every_file():
        # The plan layer is linked into libmscclpp.so, the shim (libdir), its
        # replace-mode copy (libdir/mscclpp-nccl) and, statically, the tools
        # (bindir): each must find <datadir>/mscclpp/plans relative to itself.
        plans_dir = os.path.normpath(os.path.join(root, "share", "mscclpp", "plans"))
        expected = len([f for f in os.listdir(plans_dir) if f.endswith(".json")])
        clean = {k: v for k, v in env.items() if not k.startswith("MSCCLPP_") and k != "LD_LIBRARY_PATH"}
        clean["MSCCLPP_CACHE_DIR"] = os.path.join(work, "empty-cache")
        out = must([os.path.join(root, "bin", "mscclpp-info")], "the staged mscclpp-info", env=clean)
        if f"plan directory:    {plans_dir}\n" not in out + "\n":
            raise AssertionError(f"the staged mscclpp-info does not name {plans_dir} (present):\n{out}")
        count = "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).mscclppPlanCount())"
        for library in (os.path.join(staged_lib, "libmscclpp.so.0"), os.path.join(staged_lib, "libmscclpp_nccl.so.0"),
                        os.path.join(staged_lib, "mscclpp-nccl", "libnccl.so.2")):
            found = must([sys.executable, "-c", count, library], f"counting the plans of {library}", env=clean).strip()
            if found != str(expected):
                raise AssertionError(f"{library} registered {found} plans, {plans_dir} holds {expected}")

    have_nvcc = os.access(nvcc, os.X_OK)

    @step("the external Meson project finds mscclpp through pkg-config, builds and runs")
    def _meson_project():
        ext_build = os.path.join(work, "external-build")
        # The project's own prefix must be the staged one: meson reads the .pc
        # file as written (its prefix is the final one), so point pkg-config at
        # the staged tree with a sysroot-like override of `prefix`.
        menv = dict(env)
        menv["PKG_CONFIG"] = os.path.join(work, "pkg-config-staged")
        with open(menv["PKG_CONFIG"], "w") as f:
            f.write(f"#!/bin/sh\nexec pkg-config --define-variable=prefix='{root}' \"$@\"\n")
        os.chmod(menv["PKG_CONFIG"], 0o755)
        if have_nvcc:
            menv["PATH"] = os.path.dirname(nvcc) + ":" + menv.get("PATH", "")
        else:  # keep an nvcc elsewhere on PATH out of it: the CUDA half is covered by the next step
            menv["CUDACXX"] = "/nonexistent/nvcc"
        must(["meson", "setup", ext_build, external], "meson setup of the external project", env=menv)
        must(["ninja", "-C", ext_build, "-j2"], "building the external project", env=menv, timeout=900)
        rc, out, err = run([os.path.join(ext_build, "hello")], env=env, timeout=300)
        if rc != 0:
            raise AssertionError(f"the external project's hello exited {rc}:\n{out}{err}")
        check_output(out, hello_lines, "hello (meson)")
        cuda_exe = os.path.join(ext_build, "hello_cuda")
        if have_nvcc and not os.path.exists(cuda_exe):
            raise AssertionError("nvcc exists but the external project did not build hello_cuda")
        state["cuda_exe"] = cuda_exe if os.path.exists(cuda_exe) else None

    @step("examples/external/hello_cuda.cu built with nvcc runs correctly")
    def _hello_cuda():
        if not have_nvcc:
            return f"no nvcc at {nvcc}"
        exe = state.get("cuda_exe")
        if exe is None:
            if "cflags" not in state:
                return "no pkg-config flags"
            exe = os.path.join(work, "hello_cuda")
            must([nvcc, "-std=c++17", "--expt-relaxed-constexpr", os.path.join(external, "hello_cuda.cu"), "-o", exe] +
                 state["cflags"] + state["libs"], "compiling hello_cuda.cu with nvcc", timeout=900)
        rc, out, err = run([exe], env=env, timeout=300)
        if rc != 0:
            raise AssertionError(f"hello_cuda exited {rc}:\n{out}{err}")
        lines = out.splitlines()
        if len(lines) != 2 or not all(l.startswith(f"external_cuda: rank {r}: memory-channel kernels on ") and
                                      l.endswith(": OK") for r, l in enumerate(lines)):
            raise AssertionError(f"hello_cuda printed:\n{out}")

    return steps.finish(junit, work)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
