#!/usr/bin/env python3
"""What the executor kernel compiles to, checked without a GPU (suite gpu-double).

Compiles the kernel translation unit for sm_90 to PTX with nvcc, once per datatype it checks, then
assembles it with ptxas -v, and checks:
  * the op handlers that move data use 16-byte global accesses (ld.global.v4 / st.global.v4);
  * reductions of half and bfloat16 use packed math (f16x2 / bf16x2 instructions);
  * switch-channel ops use the switch (multimem.ld_reduce and multimem.st) for the types it reduces;
  * no spills (ptxas "spill stores/loads") in the kernel entry and the data-movement handlers.
It prints ptxas's per-function stack and spill table, so the test log reports it.

usage: check_device_code.py NVCC PTXAS KERNEL_TEMPLATE OUTDIR -- INCLUDE_ARGS...
"""
import os
import re
import subprocess
import sys


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
    """[(demangled name, stack, spill stores, spill loads)] from ptxas -v output."""
    rows, name = [], None
    for line in log.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            rows.append((name, int(m.group(1)), int(m.group(2)), int(m.group(3))))
            name = None
    names = demangle([r[0] for r in rows])
    return [(n,) + r[1:] for n, r in zip(names, rows)]


def main():
    nvcc, ptxas, template, outdir = sys.argv[1:5]
    includes = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(outdir, exist_ok=True)
    text = open(template).read()
    failures = []
    ptx = {}
    for ctype, short in [("float", "f32"), ("__half", "f16"), ("__nv_bfloat16", "bf16")]:
        src = os.path.join(outdir, "kernel_inst_%s.cu" % short)
        open(src, "w").write(text.replace("@TYPE@", ctype).replace("@SHORT@", short))
        out = os.path.join(outdir, "kernel_%s.ptx" % short)
        run([nvcc, "-std=c++17", "--expt-relaxed-constexpr", "-O2", "-arch=sm_90", "-ptx", "-o", out, src] + includes)
        ptx[short] = open(out).read()

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

    log = run([ptxas, "-arch=sm_90", "-v", os.path.join(outdir, "kernel_f32.ptx"), "-o",
               os.path.join(outdir, "kernel_f32.cubin")])
    table = ptxas_table(log)
    print("ptxas -v, sm_90, executor kernel (float): stack bytes, spill stores, spill loads per function")
    for name, stack, st, ld in table:
        print("  %4d %4d %4d  %s" % (stack, st, ld, name[:140]))
    # The op loop and the handlers that move data must not spill (the packet-wait handlers are
    # reported above; see docs/cuda-backend.md).
    strict = re.compile(r"executorKernel<|::(reduce|copyOp|get|put|groupReduce|groupStore|signal|wait|flush|"
                        r"copyPackets<[^>]*>|putPacketsOp<[^>]*>|startPipeline|nextIteration)\(|stageBlock\(")
    for name, stack, st, ld in table:
        if strict.search(name) and (st or ld):
            failures.append("ptxas: %s spills %d bytes (stores) / %d (loads)" % (name[:110], st, ld))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("device code checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
