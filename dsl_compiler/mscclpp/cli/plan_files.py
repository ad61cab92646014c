"""Reading plan files for ``list`` and ``show``: where plans live, what each serves, a summary."""
import json
import os

MAX = 2**64 - 1


def human_bytes(n):
    if n >= MAX:
        return "max"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
        if n + 1 >= size and (n + 1) % size == 0:
            return f"{(n + 1) // size}{unit}-1"
    return f"{n}B"


def describe(path):
    """One plan file as a dict of what it serves, or {"file", "error"}."""
    try:
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
        return {
            "file": path,
            "name": plan["name"],
            "collective": plan["collective"],
            "ranks": len(plan["gpus"]),
            "protocol": plan["protocol"],
            "inplace": bool(plan["inplace"]),
            "min": plan.get("min_message_size", 0),
            "max": plan.get("max_message_size", MAX),
            "tags": list(plan.get("tags", [])),
            "root": plan.get("root"),
        }
    except (OSError, ValueError, KeyError, TypeError) as error:
        return {"file": path, "error": f"{type(error).__name__}: {error}"}


def list_plans(directories, out, err, named=(), optional=()):
    """Prints the plans of the directories on out, and on err every file that cannot be read and
    every directory that is missing or unreadable. Returns 1 when a file is unreadable or a
    directory in ``named`` (given explicitly, as --dir or $MSCCLPP_PLAN_DIR) is missing, else 0.
    Other absent directories are noted, but for those in ``optional`` (the user's plan cache,
    absent until something is written there), which are passed over."""
    rows, problems, notes, searched = [], [], [], []
    for directory in directories:
        if not os.path.isdir(directory):
            what = f"{directory}: no such plan directory"
            if directory in named:
                problems.append(what)
            elif directory not in optional:
                notes.append(what)
            continue
        try:
            names = sorted(os.listdir(directory))
        except OSError as error:
            problems.append(f"{directory}: cannot be read ({error.strerror})")
            continue
        searched.append(directory)
        for name in names:
            if name.endswith(".json"):
                row = describe(os.path.join(directory, name))
                if "error" in row:
                    problems.append(f"{row['file']}: unreadable ({row['error']})")
                else:
                    rows.append(row)
    if rows:
        print(f"{'name':<34} {'collective':<13} {'ranks':>5} {'proto':<6} {'inplace':<7} {'sizes':<17} tags", file=out)
    for row in rows:
        sizes = f"{human_bytes(row['min'])}..{human_bytes(row['max'])}"
        extra = ",".join(row["tags"]) + (f" root={row['root']}" if row["root"] is not None else "")
        print(
            f"{row['name']:<34} {row['collective']:<13} {row['ranks']:>5} {row['protocol']:<6} "
            f"{'yes' if row['inplace'] else 'no':<7} {sizes:<17} {extra}",
            file=out,
        )
    where = ", ".join(searched) if searched else "no plan directory"
    print(f"{len(rows)} plan(s) in {where}" + (f"; {len(problems)} problem(s), see standard error" if problems else ""),
          file=out)
    for line in notes:
        print(f"note: {line}", file=err)
    for line in problems:
        print(f"error: {line}", file=err)
    return 1 if problems else 0


def _op_text(op):
    name = op["name"]
    if name == "pipeline":
        inner = " ".join(_op_text(o) for o in op.get("ops", []))
        it = op.get("iter_context", {})
        return f"pipeline(unit={it.get('unit_size')}, chunks={it.get('num_chunks')})[{inner}]"
    # How many peers the op serves: "rresx7" reads and writes seven.
    width = len(op.get("channel_ids", [])) or sum(1 for ref in op.get("dst_buff", []) if "buffer_id" in ref)
    width = width or sum(1 for ref in op.get("src_buff", []) if "buffer_id" in ref)
    return f"{name}x{width}" if width > 1 else name


def _compress(words):
    """'nop put put put' -> 'nop put*3'."""
    result = []
    for word in words:
        if result and result[-1][0] == word:
            result[-1][1] += 1
        else:
            result.append([word, 1])
    return " ".join(w if n == 1 else f"{w}*{n}" for w, n in result)


def show(path, out):
    with open(path, encoding="utf-8") as f:
        plan = json.load(f)
    d = describe(path)
    print(
        f"{plan['name']}: {plan['collective']} on {len(plan['gpus'])} rank(s), protocol {plan['protocol']}, "
        f"{'in place' if plan['inplace'] else 'out of place'}, sizes {human_bytes(d['min'])}..{human_bytes(d['max'])}"
        + (f", tags {','.join(d['tags'])}" if d["tags"] else "")
        + (f", root {d['root']}" if d["root"] is not None else ""),
        file=out,
    )
    for gpu in plan["gpus"]:
        channels = []
        for ch in gpu.get("channels", []):
            if ch["channel_type"] == "switch":
                channels.append(f"switch({ch['buffer_type']}:{len(ch['rank_groups'][0]['ranks'])} ranks)")
            else:
                channels.append(f"{ch['channel_type']}->{_compress([str(p) for p in ch['connected_to']])}")
        print(
            f"rank {gpu['id']}: chunks in/out/scratch {gpu['input_chunks']}/{gpu['output_chunks']}/{gpu['scratch_chunks']}, "
            f"{len(gpu['threadblocks'])} threadblock(s), channels [{'; '.join(channels)}], "
            f"{len(gpu.get('remote_buffers', []))} remote buffer(s), {len(gpu.get('semaphores', []))} semaphore(s)",
            file=out,
        )
        for tb in gpu["threadblocks"]:
            print(f"  tb {tb['id']}: {_compress([_op_text(op) for op in tb['ops']])}", file=out)
    return 0
