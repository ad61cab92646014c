"""The Python exceptions cover the C API's one status enum (runtime/include/mscclpp/status.h) value for
value, so a status the runtime returns always maps to its own exception class."""
import os
import re

from dsl_test_support import REPO

from mscclpp import errors

STATUS_H = os.path.join(REPO, "runtime", "include", "mscclpp", "status.h")


def _c_statuses():
    with open(STATUS_H) as f:
        text = f.read()
    body = re.search(r"typedef enum mscclppStatus \{(.*?)\} mscclppStatus;", text, re.S).group(1)
    return {int(value): name for name, value in re.findall(r"\b(mscclpp\w+) = (-?\d+)", body)}


def test_every_error_status_has_its_exception_class():
    statuses = _c_statuses()
    assert statuses[0] == "mscclppSuccess" and len(statuses) >= 13
    errors_by_status = {value: name for value, name in statuses.items() if value != 0}
    assert set(errors._BY_STATUS) == set(errors_by_status), "errors.py and status.h list different statuses"
    for value, name in errors_by_status.items():
        cls = errors._BY_STATUS[value]
        assert cls.status == value and "mscclpp" + cls.code == name, (value, name, cls)
        assert cls.__name__ in errors.__all__


def test_error_for_status_picks_its_class_keeps_unknown_values():
    assert isinstance(errors.error_for_status(-12, "dup"), errors.AlreadyExistsError)
    assert isinstance(errors.error_for_status(-11, "gone"), LookupError)
    unknown = errors.error_for_status(-99, "what")
    assert type(unknown) is errors.MscclppError and unknown.status == -99 and "unknown status -99" in str(unknown)
