#!/usr/bin/env python3
"""What the executor kernel compiles to, checked without a GPU (suite gpu-double).

Reads the PTX the build kept (nvcc -keep) and checks its instructions, its local memory and the
loops of its data-moving handlers (no 64-bit division or remainder, four 16-byte loads in flight in
copies and reductions); ptxas -v gives spills and stack frames. A strict build already fails on any spill, so then ptxas runs for
the first datatype only. Prints one line per datatype and arch, and every failing function.

usage: check_device_code.py PTXAS PTX_DIR ARCHS TYPES STRICT
  ARCHS: the gpu_archs option (80,90); TYPES: the compiled datatypes (f32,f16,...); STRICT: 0 or 1
"""
import os
import re
import subprocess
import sys
import tempfile
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


# The handlers that move data in loops: copies and puts, reductions, packets, switch-channel ops.
LOOP_HANDLERS = re.compile(r"::(copyOp|get|put|reduce|reduceElements|copyPackets|unpackPackets|putPacketsOp|"
                           r"readPutPackets|reducePackets|groupReduce|groupStore|groupStorePackets)[<(]")
# Where the 16-byte copies and reductions run: copy, put and get, and reduce's vector loop.
IN_FLIGHT = re.compile(r"::(copyOp|get|put|reduce)\(")
DIVISION_64 = re.compile(r"^\s*(?:@!?%p\d+\s+)?(?:div|rem)(?:\.\w+)*\.[us]64\b", re.M)
LOAD_16 = re.compile(r"^\s*(?:@!?%p\d+\s+)?ld\.global(?:\.\w+)*\.(?:v4\.[bsuf]32|v2\.[bsuf]64)\b")
CALL = re.compile(r"^\s*(?:@!?%p\d+\s+)?call(?:\.uni)?\s+(?:\([^)]*\),\s*)?(\w+)")
# What may sit between loads issued back to back: address arithmetic and debug lines.
BETWEEN_LOADS = re.compile(r"^\s*(?:\.loc\b|//|$|(?:add|sub|mul|mad|shl|mov|cvt|cvta)(?:\.\w+)*\s+%rd)")


def loops(body):
    """The bodies (lists of lines) of the loops of a PTX function: from a label to a branch back to it."""
    lines = body.splitlines()
    labels = {}
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"^\s*(\$\w+):", line)
        if m:
            labels[m.group(1)] = i
            continue
        m = re.search(r"\bbra(?:\.uni)?\s+(\$\w+);", line)
        if m and m.group(1) in labels:
            out.append(lines[labels[m.group(1)]:i + 1])
    return out


def divides(name, funcs, seen):
    """Whether function `name`, or one it calls, has a 64-bit division or remainder."""
    if name in seen or name not in funcs:
        return False
    seen.add(name)
    body = funcs[name]
    if DIVISION_64.search(body):
        return True
    return any(divides(m.group(1), funcs, seen) for m in map(CALL.match, body.splitlines()) if m)


def loads_in_flight(loop):
    """The most 16-byte global loads a loop issues back to back: nothing but address arithmetic
    between them, so none waits for another's data."""
    best = run = 0
    for line in loop:
        if LOAD_16.match(line):
            run += 1
            best = max(best, run)
        elif not BETWEEN_LOADS.match(line):
            run = 0
    return best


def divisions_in(loop, files):
    """The 64-bit divisions and remainders of a loop's own lines, each with the source file of the
    nearest .loc before it, except the proxy FIFO's slot index (fifo_device.hpp: one per request
    pushed, not per byte moved, for a FIFO of any size)."""
    found, source = [], "?"
    for line in loop:
        m = re.match(r"^\s*\.loc\s+(\d+)\s", line)
        if m:
            source = os.path.basename(files.get(m.group(1), "?"))
        elif DIVISION_64.match(line) and source != "fifo_device.hpp":
            found.append(source)
    return found


def loop_checks(ptx, short, arch):
    """(failures, summary) of the data-moving handlers' loops: no 64-bit division or remainder in
    any loop, directly or in a function it calls; copies and reductions keep 4 loads in flight."""
    failures = []
    funcs = ptx_functions(ptx)
    files = dict(re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', ptx, re.M))
    names = list(funcs)
    checked = 0
    flight = {}
    for mangled, name in zip(names, demangle(names)):
        if not LOOP_HANDLERS.search(name):
            continue
        checked += 1
        for loop in loops(funcs[mangled]):
            callees = [m.group(1) for m in map(CALL.match, loop) if m]
            sources = divisions_in(loop, files) + [c for c in callees if divides(c, funcs, set())]
            if sources:
                failures.append("%s sm_%s: %s has a 64-bit division or remainder in a loop (%s)" %
                                (short, arch, name[:110], sources[0][:60]))
                break
        if IN_FLIGHT.search(name):
            flight[name] = max([loads_in_flight(lp) for lp in loops(funcs[mangled])] or [0])
            # fp8 reductions keep two: their emulated lane math spills with four.
            want = 2 if short.startswith("f8") and "::reduce(" in name else 4
            if flight[name] < want:
                failures.append("%s sm_%s: %s keeps %d 16-byte loads in flight per thread, not %d" %
                                (short, arch, name[:110], flight[name], want))
    if checked == 0:
        failures.append("%s sm_%s: no copy, reduce or packet handler found" % (short, arch))
    return failures, "%d handlers' loops; 16-byte loads in flight: %s" % (
        checked, "/".join(sorted({str(v) for v in flight.values()})) or "-")


def kept_ptx(ptx_dir, short, arch, single_arch):
    """The PTX nvcc -keep left: named per arch, or without one when the build targets one arch."""
    names = ["kernel_inst_%s.compute_%s.ptx" % (short, arch)]
    if single_arch:
        names.append("kernel_inst_%s.ptx" % short)
    for name in names:
        path = os.path.join(ptx_dir, name)
        if os.path.isfile(path):
            return path
    print("FAILED: %s is missing: build the executor first (ninja)" % os.path.join(ptx_dir, names[0]))
    sys.exit(1)


def local_memory(ptx, short, arch):
    """Functions other than the kernel entry that declare local memory: a local array indexed at run
    time, or a local whose address escapes."""
    failures = []
    funcs = ptx_functions(ptx)
    names = list(funcs)
    for mangled, name in zip(names, demangle(names)):
        body = funcs[mangled]
        if re.search(r"^\s*\.local\b", body, re.M) and not re.search(r"^(?:\.visible\s+|\.weak\s+)*\.entry", body):
            failures.append("%s sm_%s: %s declares local memory" % (short, arch, name[:110]))
    return failures


def spin_loops(body):
    """Text of every loop of a PTX function that sleeps (__nanosleep): the spins."""
    lines = body.splitlines()
    labels, loops = {}, []
    for i, line in enumerate(lines):
        m = re.match(r"^(\$\w+):", line.strip())
        if m:
            labels[m.group(1)] = i
        m = re.search(r"\bbra(?:\.uni)?\s+(\$\w+);", line)
        if m and labels.get(m.group(1), i) < i:
            text = "\n".join(lines[labels[m.group(1)]:i + 1])
            if "nanosleep" in text:
                loops.append(text)
    return loops


ABORT_LOAD = re.compile(r"ld\.(?:relaxed\.sys|acquire\.sys|volatile)(?:\.global)?\.[bu]32\s")
POLL_MASK = re.compile(r"and\.b32\s+%r\d+,\s*%r\d+,\s*(0x[0-9a-fA-F]+|\d+);")


def abort_polls(ptx, short, arch):
    """Spin loops that read a 32-bit host-visible word (an abort flag: the polled data are 64-bit
    counters and packets) more often than once per 1024 polls: the nearest poll-count mask before
    the load must be at least 1023."""
    failures = []
    funcs = ptx_functions(ptx)
    names = list(funcs)
    for mangled, name in zip(names, demangle(names)):
        often = []
        for loop in spin_loops(funcs[mangled]):
            for m in ABORT_LOAD.finditer(loop):
                masks = POLL_MASK.findall(loop[:m.start()])
                mask = int(masks[-1], 0) if masks else 0
                if mask < 1023:
                    often.append(mask + 1)
        if often:
            failures.append("%s sm_%s: %s reads an abort flag in %d spin(s) every %d polls (at most every 1024)"
                            % (short, arch, name[:110], len(often), min(often)))
    return failures


def check_registers(ptxas, ptx_file, short, arch, scratch):
    """(summary line, failures) of ptxas -v for one datatype at one arch."""
    cubin = os.path.join(scratch, "%s_sm%s.cubin" % (short, arch))
    log = run([ptxas, "-arch=sm_%s" % arch, "-v", ptx_file, "-o", cubin])
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
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    ptxas, ptx_dir, archs, types, strict = sys.argv[1:6]
    archs = [a.strip() for a in archs.split(",") if a.strip()]
    types = [t.strip() for t in types.split(",") if t.strip()]
    failures = []
    jobs = max(1, os.cpu_count() or 1)
    ptx_files = {(short, arch): kept_ptx(ptx_dir, short, arch, len(archs) == 1) for short in types for arch in archs}

    # Instruction checks on f32, f16 and bf16 at sm_90, which multimem needs.
    # Data-moving handlers use 16-byte global accesses, half and bfloat16
    # reductions use packed math, and switch-channel ops use multimem for the
    # types the switch reduces.
    ptx = {}
    if "90" in archs:
        for short in ("f32", "f16", "bf16"):
            if short in types:
                with open(ptx_files[(short, "90")]) as f:
                    ptx[short] = f.read()

    def handlers(short, pattern):
        funcs = ptx_functions(ptx[short])
        names = list(funcs)
        return {d: funcs[m] for m, d in zip(names, demangle(names)) if re.search(pattern, d)}

    def need(short, pattern, instruction, why):
        if short not in ptx:
            return
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
    if "90" not in archs:
        print("note: sm_90 is not built, so the instruction checks (multimem among them) did not run")

    # Local memory, for every compiled datatype at every target arch: none
    # but the kernel entry may declare any. The entry's frame is the
    # interpreter object, which out-of-line handlers reach through `this`.
    # Spins read their abort flag rarely: every waiting thread of thousands
    # of warps polls, and the host's flag is across PCIe.
    # The handlers' loops: no 64-bit division, 4 loads in flight.
    loop_lines = []
    for (short, arch), path in sorted(ptx_files.items()):
        with open(path) as f:
            text = f.read()
        failures += local_memory(text, short, arch)
        failures += abort_polls(text, short, arch)
        fails, summary = loop_checks(text, short, arch)
        failures += fails
        loop_lines.append("  %-7s sm_%s: %s" % (short, arch, summary))
    print("loops of the copy, reduce and packet handlers (no 64-bit division or remainder; loads in flight):")
    print("\n".join(loop_lines))

    # Spills and stack frames from ptxas -v. A strict build fails on any
    # spill of any datatype already, so one datatype shows the table there.
    sample = "f32" if "f32" in types else types[0] if types else None
    pairs = sorted(ptx_files) if strict != "1" else [(sample, a) for a in archs] if sample else []
    with tempfile.TemporaryDirectory() as scratch:
        with ThreadPoolExecutor(jobs) as pool:
            results = list(pool.map(lambda p: check_registers(ptxas, ptx_files[p], p[0], p[1], scratch), pairs))
    print("ptxas -v of the executor kernel (every function: spills, stack frames)%s:" %
          ("; the strict build rejected any spill of every datatype" if strict == "1" else ""))
    for line, fails in results:
        print("  " + line)
        failures += fails
    if not pairs:
        failures.append("no datatype or arch to check (TYPES %r, ARCHS %r)" % (sys.argv[4], sys.argv[3]))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("device code checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
