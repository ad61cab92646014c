"""Indented plan JSON, byte for byte what ``json.dumps(value, indent=N)`` writes, several times faster.

Python's json module encodes in C only without ``indent``; with it, every value goes through the
pure-Python encoder. A plan is mostly long lists of numbers and of small flat objects (buffer
references), so this writes each such list from its compact C encoding with a few ``str.replace``
calls, and walks only the rest in Python. A list is taken whole only when counting its ``,``,
``:`` and brackets proves that no string in it holds one of them or an escape; else it is walked.
"""
import json

_compact = json.JSONEncoder(separators=(",", ":")).encode
_encode = json.JSONEncoder().encode
_WRITERS = {
    str: json.encoder.encode_basestring_ascii,
    int: int.__repr__,
    bool: lambda b: "true" if b else "false",
    type(None): lambda _: "null",
    float: _encode,
}

_SCALAR_SET = {str, int, float, bool, type(None)}


class _Unusual(Exception):
    """A value this writer leaves to json.dumps: a key that is not a string, a type JSON lacks."""


def dumps(value, indent=2):
    """``json.dumps(value, indent=indent)``."""
    out = []
    try:
        _write(value, "\n", " " * indent, out)
    except _Unusual:
        return json.dumps(value, indent=indent)
    return "".join(out)


def _write(value, outer, step, out):
    kind = type(value)
    if kind is dict:
        _dict(value, outer, step, out)
    elif kind is list:
        _list(value, outer, step, out)
    elif kind in _WRITERS:
        out.append(_WRITERS[kind](value))
    else:
        raise _Unusual()


def _dict(value, outer, step, out):
    if not value:
        out.append("{}")
        return
    if not set(map(type, value)) <= {str}:
        raise _Unusual()
    inner = outer + step
    writers = _WRITERS
    escape = json.encoder.encode_basestring_ascii
    append = out.append
    separator = "{" + inner
    for key, v in value.items():
        kind = type(v)
        if kind in writers:
            append(separator + escape(key) + ": " + writers[kind](v))
        else:
            append(separator + escape(key) + ": ")
            _write(v, inner, step, out)
        separator = "," + inner
    append(outer + "}")


def _list(value, outer, step, out):
    if not value:
        out.append("[]")
        return
    inner = outer + step
    kinds = set(map(type, value))
    if kinds == {int}:
        out.append("[" + inner + ("," + inner).join(map(int.__repr__, value)) + outer + "]")
        return
    if kinds <= {int, float, bool}:  # numbers: no string can hide a separator
        out.append("[" + inner + _compact(value)[1:-1].replace(",", "," + inner) + outer + "]")
        return
    if kinds == {dict}:
        text = _flat_dicts(value, inner, step)
        if text is not None:
            out.append("[" + inner + text + outer + "]")
            return
    separator = "[" + inner
    for v in value:
        out.append(separator)
        _write(v, inner, step, out)
        separator = "," + inner
    out.append(outer + "]")


def _flat_dicts(value, outer, step):
    """The items of a list of non-empty objects with string keys and scalar values, written at
    ``outer``; None when that does not hold or a string holds a separator or an escape."""
    # Cheap guesses before encoding (objects of one size, the first one flat); the counts decide.
    sizes = set(map(len, value))
    if len(sizes) != 1 or 0 in sizes or not set(map(type, value[0].values())) <= _SCALAR_SET:
        return None
    n = len(value)
    keys = n * sizes.pop()
    full = _compact(value)
    if (
        full.count(":") != keys
        or full.count(",") != keys - 1
        or full.count("{") != n
        or full.count("}") != n
        or full.count("[") != 1
        or full.count("]") != 1
        or "\\" in full
    ):
        return None
    inner = outer + step
    # The counts prove every separator is structural: "},{" lies only between objects.
    body = full[2:-2].replace("},{", "\0").replace(",", "," + inner).replace(":", ": ")
    return "{" + inner + body.replace("\0", outer + "}," + outer + "{" + inner) + outer + "}"
