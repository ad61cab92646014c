"""to_json(indent=N) writes what json.dumps(plan, indent=N) writes, byte for byte, by its own faster
writer (mscclpp/language/internal/indent.py): plans of the examples, and values whose strings hold
separators, escapes and non-ASCII text, which the writer must not take apart."""
import json

import allreduce_allpairs
import allreduce_packets
import pytest

from mscclpp.language.internal import indent


@pytest.mark.parametrize("build", [allreduce_allpairs.build, allreduce_packets.build], ids=lambda b: b.__module__)
@pytest.mark.parametrize("width", [2, 4])
def test_plan_text_equals_json_dumps(build, width):
    program = build(num_gpus=4, instances=2) if build is allreduce_allpairs.build else build(num_gpus=4)
    plan = json.loads(program.to_json(indent=None))
    assert program.to_json(indent=width) == json.dumps(plan, indent=width)


TRICKY = [
    {}, [], [{}], [[]], "x", 3, None, [0.1, 1e300, True, None, 7],
    {"a": [{"x": "a,b"}]},
    [{"a": 1}, {"b": "c:d"}],
    [{"a": "}"}, {"b": "{"}],
    [{"a": "},{"}, {"b": 1}],
    [{"a": "\u00e9\"\\"}],
    [{"a": None, "b": False, "c": 1.5}],
    [{"a": 1}, {"b": [1]}],
    [{"a": 1}, 2, "three"],
    {"k": {"k2": [{"a": [1, {"b": []}]}]}},
    {1: 2, "x": [3]},
]


def test_every_preset_and_example_plan_through_the_text_path():
    # to_json(indent=2) of the compiler's own text cuts lists out before parsing (dumps_text).
    from mscclpp.dsl.presets import catalog

    checked = 0
    for preset in catalog()[::5]:
        program = preset.build()
        if hasattr(program, "post_process_operations"):
            text = program.to_json(indent=None)
            assert program.to_json(indent=2) == json.dumps(json.loads(text), indent=2), preset.name
            assert indent.dumps_text(text, 3) == json.dumps(json.loads(text), indent=3)
            checked += 1
    assert checked >= 20


def test_a_name_or_tag_with_separators_takes_the_object_path():
    for name, tags in (("odd, name: [1]", ()), ("plain", ("t{a}g",)), ("caf\u00e9", ()), ('q"uote', ())):
        program = allreduce_allpairs.build(name=name, num_gpus=2)
        program.tags = list(tags)
        assert program.to_json(indent=2) == json.dumps(json.loads(program.to_json(indent=None)), indent=2)


@pytest.mark.parametrize("text, plain", [("allreduce_ll_n4_ip", True), ("x y", True), ("a:b", False), ("a,b", False),
                                         ("[", False), ("}", False), ('"', False), ("\\", False), ("\u00e9", False),
                                         ("\x01", False), ("\n", False)])
def test_plain_strings_hold_no_separator_escape_or_control(text, plain):
    assert indent.plain_string(text) is plain


def _nested(depth):
    value = [1, {"a": []}]
    for level in range(depth):
        value = {"k": [value, level]} if level % 2 else [{"x": level}, value]
    return value


# Values whose strings are plain: every bracket, comma and colon in their compact text is structure.
PLAIN_SHAPES = [
    {}, [], [{}], [[]], [[], {}], {"a": {}}, [{"a": 1}, {}], [{}, {"a": 1}], [{"a": {"b": 1}}],
    [{"a": 1}, {"b": {"c": []}}], [1, {"a": 1}], [{"a": 1}, 2, "three"], [[1, 2], [3]], [True, None, "x y"],
    [{"a": 1}, 3, {"b": 2}], [{"a": 1}, {"b": 2}, 3], [{"a": 1, "b": [2]}, {"c": 3}],
    {"k": {"k2": [{"a": [1, {"b": []}]}]}}, {"a": [{"b": [{}]}], "c": -4}, _nested(40),
]


@pytest.mark.parametrize("value", PLAIN_SHAPES, ids=lambda v: repr(v)[:40])
def test_plain_text_shapes_equal_json_dumps(value):
    text = json.dumps(value, separators=(",", ":"))
    for width in (0, 1, 2, 3):
        assert indent.dumps_text(text, width) == json.dumps(value, indent=width)


@pytest.mark.parametrize("value", TRICKY, ids=repr)
def test_tricky_values_equal_json_dumps(value):
    for width in (0, 2, 3):
        assert indent.dumps(value, width) == json.dumps(value, indent=width)
