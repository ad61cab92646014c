"""Indented plan JSON, byte for byte what ``json.dumps(value, indent=N)`` writes, several times faster.

Python's json module encodes in C only without ``indent``; with it, every value goes through the
pure-Python encoder. A plan is mostly long lists of numbers and of small flat objects (buffer
references), so this writes each such list from its compact C encoding with a few ``str.replace``
calls, and walks only the rest in Python. A list is taken whole only when counting its ``,``,
``:`` and brackets proves that no string in it holds one of them or an escape; else it is walked.
``dumps_text`` goes further for the compiler's own compact text, whose strings it vouches for: it
cuts those lists out of the text before parsing, so only the plan's skeleton is parsed and walked.
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


# A list of numbers, or of flat non-empty objects, in compact text.
_LIST_SPAN = re.compile(r"\[(?:\{[^\[\]{}]+\}(?:,\{[^\[\]{}]+\})*|-?\d+(?:,-?\d+)*)\]")
_MARK = "\x01"  # a cut-out list's place in the skeleton: "\x01<index>"
_NOT_PLAIN = re.compile(r'[\[\]{},:"\\\x00-\x1f\x7f-\U0010ffff]')


def plain_string(text):
    """Whether json.dumps writes text as is between quotes, and no separator or bracket is in it."""
    return isinstance(text, str) and _NOT_PLAIN.search(text) is None


def dumps_text(text, indent=2):
    """``json.dumps(json.loads(text), indent=indent)`` for compact text (no whitespace, "," and ":"
    as separators) in which every string is plain (``plain_string``): the caller vouches for that,
    as the plan emitter can for its own vocabulary. Lists of numbers and of flat objects are cut
    out, the rest is parsed and walked, and each list is written back from its text."""
    spans = []

    def cut(match):
        spans.append(match.group(0))
        return '"\\u0001%d"' % (len(spans) - 1)

    out = []
    _skeleton(json.loads(_LIST_SPAN.sub(cut, text)), "\n", " " * indent, out, spans)
    return "".join(out)


def _skeleton(value, outer, step, out, spans):
    kind = type(value)
    if kind is str and value[:1] == _MARK:
        out.append(_span(spans[int(value[1:])], outer, step))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = outer + step
        separator = "{" + inner
        for key, v in value.items():
            out.append(separator + json.encoder.encode_basestring_ascii(key) + ": ")
            _skeleton(v, inner, step, out, spans)
            separator = "," + inner
        out.append(outer + "}")
    elif kind is list:
        if not value:
            out.append("[]")
            return
        inner = outer + step
        separator = "[" + inner
        for v in value:
            out.append(separator)
            _skeleton(v, inner, step, out, spans)
            separator = "," + inner
        out.append(outer + "]")
    else:
        out.append(_WRITERS[kind](value))


def _span(text, outer, step):
    """A cut-out list, indented: its items at outer + step, an object's keys one step further."""
    inner = outer + step
    if text[1] != "{":
        return "[" + inner + text[1:-1].replace(",", "," + inner) + outer + "]"
    deeper = inner + step
    body = text[2:-2].replace("},{", "\0").replace(",", "," + deeper).replace(":", ": ")
    return "[" + inner + "{" + deeper + body.replace("\0", inner + "}," + inner + "{" + deeper) + inner + "}" + outer + "]"


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
