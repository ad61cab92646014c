"""The compiler's op names are the runtime's: mscclpp.language.internal.op_table mirrors
runtime/plan/op_table.def row for row, and the compiler's sources and output use only its names."""
import ast
import glob
import json
import os
import re

from dsl_test_support import REFERENCE_DIR, REPO

from mscclpp.language.internal import op_table

OP_TABLE_DEF = os.path.join(REPO, "runtime", "plan", "op_table.def")
LANGUAGE_DIR = os.path.join(REPO, "dsl_compiler", "mscclpp", "language")
OP_MODULES = ("internal/ops.py", "internal/passes.py", "channel.py", "rank.py")
ROW = re.compile(r'^MSCCLPP_OP\((\w+), "([^"]*)", (true|false)\)\s*$')


def _def_rows():
    rows = []
    with open(OP_TABLE_DEF) as f:
        for number, line in enumerate(f, 1):
            if line.startswith("MSCCLPP_OP"):
                match = ROW.match(line)
                assert match, f"op_table.def:{number}: not of the form MSCCLPP_OP(Enum, \"name\", true|false): {line!r}"
                rows.append(op_table.OpSpec(match.group(1), match.group(2), match.group(3) == "true"))
    return tuple(rows)


def test_python_table_equals_op_table_def():
    rows = _def_rows()
    assert len(rows) > 30
    expected = "".join(f'    OpSpec("{r.enum_name}", "{r.name}", {r.packet}),\n' for r in rows)
    assert op_table.OPS == rows, (
        "dsl_compiler/mscclpp/language/internal/op_table.py differs from runtime/plan/op_table.def; its OPS "
        "rows must be:\n" + expected)
    assert len(op_table.OP_NAMES) == len(rows)  # names are unique
    assert op_table.PACKET_OP_NAMES == {r.name for r in rows if r.packet}


def test_def_parser_sees_every_row():
    # Every MSCCLPP_OP line of the table is a row the comparison saw (none skipped by a format change).
    with open(OP_TABLE_DEF) as f:
        lines = [line for line in f if "MSCCLPP_OP(" in line and not line.lstrip().startswith("//")]
    assert len(lines) == len(_def_rows())


def _name_like(node):
    """Whether an expression is an op name variable: name, op_name, put_name, x.name."""
    if isinstance(node, ast.Name):
        return node.id in ("name", "op_name", "put_name", "strict_name", "relaxed_name")
    return isinstance(node, ast.Attribute) and node.attr == "name"


def _strings(node):
    """String constants of an expression (through tuples and conditional expressions)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _strings(element)
    elif isinstance(node, ast.IfExp):
        yield from _strings(node.body)
        yield from _strings(node.orelse)


# Compiler helpers whose leading arguments are op names (how many of them).
_OP_NAME_ARGUMENTS = {"_memory_sync": 2, "_port_sync": 1, "_copy": 1, "_store": 1}
_JSON_NAME = re.compile(r'"name":"([a-z_]+)"')


def _op_names_in_source(path):
    """(line, name) of every op name the compiler's source spells out."""
    tree = ast.parse(open(path).read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and (_name_like(node.left) or any(_name_like(c) for c in node.comparators)):
            for side in [node.left] + node.comparators:
                for s in _strings(side):
                    yield s.lineno, s.value
        elif isinstance(node, ast.Assign) and any(_name_like(t) for t in node.targets):
            for s in _strings(node.value):
                yield s.lineno, s.value
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_PUT_OP_NAMES" for t in node.targets):
            for value in node.value.values:
                yield value.lineno, value.value
        elif isinstance(node, ast.Call):
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            for arg in node.args[: _OP_NAME_ARGUMENTS.get(function, 0)]:
                for s in _strings(arg):
                    yield s.lineno, s.value
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in _JSON_NAME.finditer(node.value):
                yield node.lineno, match.group(1)


def test_compiler_sources_spell_only_table_names():
    # The modules that make plan ops (other modules compare names of collectives and the like).
    sources = [os.path.join(LANGUAGE_DIR, *m.split("/")) for m in OP_MODULES]
    seen, unknown = set(), []
    for path in sources:
        for line, name in _op_names_in_source(path):
            seen.add(name)
            if name not in op_table.OP_NAMES:
                unknown.append(f"{os.path.relpath(path, REPO)}:{line}: '{name}'")
    assert unknown == [], "op names the runtime's table does not have:\n" + "\n".join(unknown)
    # The scan reaches the compiler's ops (a refactor that hid them from it would make this test vacuous).
    assert {"nop", "barrier", "get", "glre", "glres", "pipeline", "rppkt", "recspkt", "signal", "rlxwait"} <= seen


def test_compiled_plans_use_only_table_names():
    # plans/ is the presets' output (test_presets checks it byte for byte) and
    # the reference corpus is what our compiler reproduces (test_equivalence):
    # together they exercise every op family the compiler emits.
    files = glob.glob(os.path.join(REPO, "plans", "*.json")) + glob.glob(os.path.join(REFERENCE_DIR, "*.json"))
    assert files
    used = set()
    for path in files:
        with open(path) as f:
            plan = json.load(f)
        for gpu in plan["gpus"]:
            for tb in gpu["threadblocks"]:
                for op in tb["ops"]:
                    used.add(op["name"])
                    for inner in op.get("ops", ()):  # a pipeline's body
                        used.add(inner["name"])
    assert used - op_table.OP_NAMES == set()
    assert len(used) >= 25
