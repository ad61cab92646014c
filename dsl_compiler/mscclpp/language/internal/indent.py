"""Indented plan JSON, byte for byte what ``json.dumps(value, indent=N)`` writes, several times faster.

Python's json module encodes in C only without ``indent``; with it, every value goes through the
pure-Python encoder. A plan is mostly long lists of numbers and of small flat objects (buffer
references), so this writes each such list from its compact C encoding with a few ``str.replace``
calls, and walks only the rest in Python. A list is taken whole only when counting its ``,``,
``:`` and brackets proves that no string in it holds one of them or an escape; else it is walked.
``dumps_text`` goes further for the compiler's own compact text, whose strings it vouches for: it
indents that text as text, without parsing it.
"""
import json
import re

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


_NOT_PLAIN = re.compile(r'[\[\]{},:"\\\x00-\x1f\x7f-\U0010ffff]')
_CLOSE_OR_BRACE = re.compile(r"([{}\]])")


def plain_string(text):
    """Whether json.dumps writes text as is between quotes, and no separator or bracket is in it."""
    return isinstance(text, str) and _NOT_PLAIN.search(text) is None


def dumps_text(text, indent=2):
    """``json.dumps(json.loads(text), indent=indent)`` for compact text (no whitespace, "," and ":"
    as separators, integers only) in which every string is plain (``plain_string``): the caller
    vouches for that, as the plan emitter can for its own vocabulary.

    Then every bracket, brace, comma and colon is structure, so the text is indented as text: split
    at "[", each list that holds no other list is written whole with ``str.replace`` (numbers, or
    objects without nested objects), and only the rest is walked token by token, tracking depth."""
    step = " " * indent
    lines = ["\n" + step * depth for depth in range(32)]  # lines[d]: a new line at depth d
    out = []
    append = out.append
    walked = {}  # (text, depth) -> (its indented text, the depth after it)
    parts = text.replace(":", ": ").split("[")
    depth = 0
    rest = parts[0]
    for number, part in enumerate(parts):
        if number:  # part follows a "[" opening a list at depth
            if depth + 3 >= len(lines):
                lines += [lines[-1] + step * k for k in range(1, 33)]
            close = part.find("]")
            if close == 0:
                append("[]")
                rest = part[1:]
            elif close > 0 and (part.find("{", 0, close) < 0 or _flat_objects(part, close)):
                inner = lines[depth + 1]
                if part[0] != "{":  # scalars
                    append("[" + inner + part[:close].replace(",", "," + inner) + lines[depth] + "]")
                else:
                    deeper = lines[depth + 2]
                    # Every comma to a new line, then the ones between objects back out a level.
                    body = part[1 : close - 1].replace(",", "," + deeper)
                    body = body.replace("}," + deeper + "{", inner + "}," + inner + "{" + deeper)
                    append("[" + inner + "{" + deeper + body + inner + "}" + lines[depth] + "]")
                rest = part[close + 1 :]
            else:  # a list holding lists, or objects holding objects: walked below
                depth += 1
                append("[" + lines[depth])
                rest = part
        if not rest:
            continue
        if "{" not in rest and "}" not in rest and "]" not in rest:
            append(rest.replace(",", "," + lines[depth]))
            continue
        # The text between lists repeats (the keys of every op): each (text, depth) is walked once.
        key = (rest, depth)
        known = walked.get(key)
        if known is None:
            pieces = []
            depth = _walk(rest, depth, lines, step, pieces)
            known = walked[key] = ("".join(pieces), depth)
        else:
            depth = known[1]
        append(known[0])
    return "".join(out)


def _walk(text, depth, lines, step, out):
    """Indents text holding braces and "]" (no "["), starting at depth; returns the depth after it."""
    tokens = _CLOSE_OR_BRACE.split(text)  # text, then (structure character, text) pairs
    if tokens[0]:
        out.append(tokens[0].replace(",", "," + lines[depth]))
    i, n = 1, len(tokens)
    while i < n:
        mark, token = tokens[i], tokens[i + 1]
        if mark == "{":
            if not token and i + 2 < n and tokens[i + 2] == "}":
                out.append("{}")
                i += 2
                token = tokens[i + 1]
            else:
                depth += 1
                if depth + 3 >= len(lines):
                    lines += [lines[-1] + step * k for k in range(1, 33)]
                out.append("{" + lines[depth])
        else:
            depth -= 1
            out.append(lines[depth] + mark)
        if token:
            out.append(token.replace(",", "," + lines[depth]))
        i += 2
    return depth


def _flat_objects(part, close):
    """Whether part[:close] (the items of a list holding no list, some "{" among them) is non-empty
    objects holding no object: it starts with "{" and ends with "}", holds no "{}", and every "{" but
    the first follows "},"."""
    return (
        part[0] == "{"
        and part[close - 1] == "}"
        and part.find("{}", 0, close) < 0
        and part.count("{", 0, close) == part.count("},{", 0, close) + 1
    )


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
