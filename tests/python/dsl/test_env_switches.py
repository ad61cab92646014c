"""The package's environment switches are parsed as the runtime parses its parameters, so bad values are
rejected one way: the runtime's boolean spellings, empty = unset, and anything else an InvalidArgumentError
worded as the runtime's, naming the variable, the value and what is accepted."""
import pytest

from mscclpp import plan_verify
from mscclpp.errors import InvalidArgumentError
from mscclpp.language.internal import locations


@pytest.mark.parametrize("text, expected", [("", True), ("1", True), ("ON", True), ("yes", True), ("0", False),
                                            ("False", False), ("off", False), (" no ", False)])
def test_dsl_verify_spellings(monkeypatch, text, expected):
    monkeypatch.setenv("MSCCLPP_DSL_VERIFY", text)
    assert plan_verify.verification_enabled() is expected
    assert plan_verify.verification_enabled(not expected) is (not expected)  # an explicit flag wins


@pytest.mark.parametrize("text, expected", [("", False), ("0", False), ("false", False), ("1", True), ("true", True)])
def test_source_locations_spellings(monkeypatch, text, expected):
    monkeypatch.setenv("MSCCLPP_DSL_SOURCE_LOCATIONS", text)
    assert locations.enabled() is expected


@pytest.mark.parametrize("name, check, default", [("MSCCLPP_DSL_VERIFY", plan_verify.verification_enabled, 1),
                                                  ("MSCCLPP_DSL_SOURCE_LOCATIONS", locations.enabled, 0)])
def test_a_bad_value_is_rejected_naming_it(monkeypatch, name, check, default):
    monkeypatch.setenv(name, "maybe")
    with pytest.raises(InvalidArgumentError) as error:
        check()
    assert str(error.value) == (f"{name}='maybe' is not valid: expected a boolean (1/0, true/false, yes/no, on/off) "
                                f"(default {default})")
