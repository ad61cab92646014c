"""Test names read as short facts: every Catch2 TEST_CASE and SECTION name and every Python test
function name under tests/ is at most 60 characters. A longer name fails the test, which lists it."""
import os
import re

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TESTS = os.path.join(REPO_ROOT, "tests")
LIMIT = 60

# A Catch2 name: one or more adjacent string literals, which may start on the next line.
CATCH2_NAME = re.compile(r'\b(?:TEST_CASE|SECTION)\(\s*((?:"(?:[^"\\\n]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
PYTHON_TEST = re.compile(r"^\s*(?:async\s+)?def\s+(test_\w+)", re.M)
SKIPPED = (os.path.join(TESTS, "data"), os.path.join(TESTS, "fuzz", "corpus"))


def catch2_names(text):
    """The TEST_CASE and SECTION names of a C++ source, with their line numbers."""
    for match in CATCH2_NAME.finditer(text):
        name = "".join(LITERAL.findall(match.group(1)))
        yield text.count("\n", 0, match.start()) + 1, name


def python_names(text):
    """The test function names of a Python source, with their line numbers."""
    for match in PYTHON_TEST.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, match.group(1)


def all_test_names():
    """(path relative to the repository, line, name) of every test name under tests/."""
    found = []
    for folder, dirs, files in os.walk(TESTS):
        dirs[:] = sorted(d for d in dirs if os.path.join(folder, d) not in SKIPPED)
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith((".cc", ".cu", ".cpp")):
                scan = catch2_names
            elif name.endswith(".py"):
                scan = python_names
            else:
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            found += [(os.path.relpath(path, REPO_ROOT), line, test) for line, test in scan(text)]
    return found


def test_no_test_name_is_over_60_characters():
    long_names = [f"{path}:{line}: {len(name)} characters: {name}" for path, line, name in all_test_names()
                  if len(name) > LIMIT]
    assert not long_names, f"test names over {LIMIT} characters:\n" + "\n".join(long_names)


def test_the_scan_finds_both_kinds_of_name():
    names = all_test_names()
    assert sum(path.endswith(".cc") for path, _, _ in names) > 300
    assert sum(path.endswith(".py") for path, _, _ in names) > 150
    here = os.path.relpath(os.path.abspath(__file__), REPO_ROOT)
    assert (here, "test_no_test_name_is_over_60_characters") in {(path, name) for path, _, name in names}


def test_catch2_names_are_read_whole():
    text = 'TEST_CASE(\n    "a name " "in two parts", "[tag]") {\n  SECTION("one \\"quoted\\" word") {}\n}\n'
    assert list(catch2_names(text)) == [(1, "a name in two parts"), (3, 'one \\"quoted\\" word')]
    assert list(catch2_names('DYNAMIC_SECTION(kind << "x") {}')) == []

