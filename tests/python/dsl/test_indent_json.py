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


@pytest.mark.parametrize("value", TRICKY, ids=repr)
def test_tricky_values_equal_json_dumps(value):
    for width in (0, 2, 3):
        assert indent.dumps(value, width) == json.dumps(value, indent=width)
