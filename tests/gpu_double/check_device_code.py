#!/usr/bin/env python3
"""What the executor kernel compiles to, checked without a GPU (suite gpu-double).

Compiles the kernel to PTX with nvcc, assembles it with ptxas -v, and checks its instructions,
spills and stack frames; main says what each check demands. Prints one line per datatype and arch,
and every failing function, so the test log reports it.

usage: check_device_code.py NVCC PTXAS KERNEL_TEMPLATE OUTDIR ARCHS TYPES -- INCLUDE_ARGS...
  ARCHS: comma list of SM versions (the gpu_archs option, e.g. 80,90)
  TYPES: comma list of SHORT=CTYPE (the datatypes the build compiles, e.g. f32=float,f16=__half)
"""
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(" ".join(cmd) + "\n" + r.stdout + r.stderr)
        sys.exit(1)
    return r.stdout + r.stderr


def demangle(names):
    r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return r.stdout.splitlines() if r.returncode == 0 else names


def ptx_functions(ptx):
    """{mangled name: text} of every .entry / .func of a PTX file (declarations give way to bodies)."""
    out = {}
    starts = [(m.start(), m.group(1)) for m in
              re.finditer(r"^(?:\.visible\s+|\.weak\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?(\w+)", ptx, re.M)]
    for i, (pos, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(ptx)
        if len(ptx[pos:end]) > len(out.get(name, "")):
            out[name] = ptx[pos:end]
    return out


def ptxas_table(log):
    """([(demangled name, is entry, stack, spill stores, spill loads)], [registers of each entry])
    from ptxas -v output."""
    rows, registers, entries, name = [], [], set(), None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            entries.add(m.group(1))
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            rows.append((name, name in entries, int(m.group(1)), int(m.group(2)), int(m.group(3))))
            name = None
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m:
            registers.append(int(m.group(1)))
    names = demangle([r[0] for r in rows])
    return [(n,) + r[1:] for n, r in zip(names, rows)], registers


def kernel_source(template, outdir, short, ctype, arch):
    src = os.path.join(outdir, "kernel_inst_%s_sm%s.cu" % (short, arch))
    with open(template) as f:
        text = f.read()
    with open(src, "w") as f:
        f.write(text.replace("@TYPE@", ctype).replace("@SHORT@", short))
    return src


def compile_ptx(nvcc, template, outdir, includes, short, ctype, arch):
    out = os.path.join(outdir, "kernel_%s_sm%s.ptx" % (short, arch))
    src = kernel_source(template, outdir, short, ctype, arch)
    run([nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-O2", "-arch=sm_%s" % arch, "-ptx", "-o", out, src] +
        includes)
    return out


def check_registers(ptxas, ptx_file, short, arch):
    """(summary line, failures) of ptxas -v for one datatype at one arch."""
    log = run([ptxas, "-arch=sm_%s" % arch, "-v", ptx_file, "-o", ptx_file[:-4] + ".cubin"])
    table, registers = ptxas_table(log)
    failures = []
    for name, entry, stack, st, ld in table:
        if st or ld:
            failures.append("%s sm_%s: %s spills %d bytes (stores) / %d (loads)" % (short, arch, name[:110], st, ld))
        if stack and not entry:
            failures.append("%s sm_%s: %s has a %d-byte stack frame (local memory)" % (short, arch, name[:110], stack))
    if not table:
        failures.append("%s sm_%s: ptxas -v reported no function" % (short, arch))
    spilling = [r for r in table if r[3] or r[4]]
    entry_stack = sorted({r[2] for r in table if r[1]})
    line = ("%-7s sm_%s: %3d functions, %d spill (max %d B stored, %d B loaded), largest non-entry frame %d B, "
            "entry frame %s B, registers %s" %
            (short, arch, len(table), len(spilling), max([r[3] for r in table], default=0),
             max([r[4] for r in table], default=0), max([r[2] for r in table if not r[1]], default=0),
             "/".join(map(str, entry_stack)), "/".join(map(str, sorted(set(registers))))))
    return line, failures


def main():
    nvcc, ptxas, template, outdir, archs, types = sys.argv[1:7]
    includes = sys.argv[sys.argv.index("--") + 1:]
    archs = [a.strip() for a in archs.split(",") if a.strip()]
    types = [tuple(t.split("=", 1)) for t in types.split(",") if t.strip()]
    os.makedirs(outdir, exist_ok=True)
    failures = []
    jobs = max(1, os.cpu_count() or 1)

    # Instruction checks on f32, f16 and bf16 at sm_90, which multimem needs.
    # Data-moving handlers use 16-byte global accesses, half and bfloat16
    # reductions use packed math, and switch-channel ops use multimem for the
    # types the switch reduces.
    inst_types = [("f32", "float"), ("f16", "__half"), ("bf16", "__nv_bfloat16")]
    with ThreadPoolExecutor(jobs) as pool:
        ptx_files = dict(zip([t[0] for t in inst_types],
                             pool.map(lambda t: compile_ptx(nvcc, template, outdir, includes, t[0], t[1], "90"),
                                      inst_types)))
    ptx = {}
    for short, path in ptx_files.items():
        with open(path) as f:
            ptx[short] = f.read()

    def handlers(short, pattern):
        funcs = ptx_functions(ptx[short])
        names = list(funcs)
        return {d: funcs[m] for m, d in zip(names, demangle(names)) if re.search(pattern, d)}

    def need(short, pattern, instruction, why):
        hs = handlers(short, pattern)
        if not hs:
            failures.append("%s: no function matches %s" % (short, pattern))
        for name, body in hs.items():
            if instruction not in body:
                failures.append("%s: %s has no %s (%s)" % (short, name[:110], instruction, why))

    for short in ptx:
        need(short, r"::reduce\(", "ld.global.v4", "16-byte loads of the sources")
        need(short, r"::reduce\(", "st.global.v4", "16-byte stores of the result")
        need(short, r"::copyOp\(", "ld.global.v4", "16-byte copy")
    need("f32", r"OpSum>::groupReduce\(", "multimem.ld_reduce", "the switch reduces f32 sums")
    need("f32", r"OpSum>::groupReduce\(", "multimem.st", "the switch broadcasts the result")
    need("f16", r"OpMax>::groupReduce\(", "multimem.ld_reduce", "the switch reduces f16 max")
    need("f32", r"::groupStore\(", "multimem.st", "the switch broadcasts")
    need("f16", r"OpSum>::reduce\(", "f16x2", "packed half sums")
    need("bf16", r"OpSum>::reduce\(", "bf16x2", "packed bfloat16 sums")
    need("f16", r"OpSum>::reducePackets<mscclpp::LL16Packet>", "f16x2", "packed half sums of packet payloads")

    # Spills and local memory, for every compiled datatype at every target arch.
    # No function may spill, and none but the kernel entry may have a stack
    # frame: a local array indexed at run time, or a local whose address
    # escapes, lives in local memory like a spill. The entry's frame is the
    # interpreter object, which out-of-line handlers reach through `this`; its
    # size is printed. Each pair is one nvcc and one ptxas run; the sm_90 PTX
    # above is reused.
    def registers_of(pair):
        (short, ctype), arch = pair
        path = ptx_files.get(short) if arch == "90" else None
        if path is None:
            path = compile_ptx(nvcc, template, outdir, includes, short, ctype, arch)
        return check_registers(ptxas, path, short, arch)

    pairs = [(t, a) for t in types for a in archs]
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(registers_of, pairs))
    print("ptxas -v of the executor kernel, per datatype and arch (every function: spills, stack frames):")
    for line, fails in results:
        print("  " + line)
        failures += fails
    if not pairs:
        failures.append("no datatype or arch to check (TYPES %r, ARCHS %r)" % (sys.argv[6], sys.argv[5]))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("device code checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
