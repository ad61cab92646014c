#!/usr/bin/env python3
"""Totals test results over every suite of Meson build directories.

A test may write JUnit XML to <builddir>/test-results/<name>.xml; its
cases are counted one by one. A test without XML counts as one case,
passed or failed by its exit status. A test whose process failed while
its XML shows no failure adds one failure, so nothing is lost.

Prints the failures, then "N passed, N failed"; exits 1 on a failure.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
import script_options  # noqa: E402 - after the path it lives on


def count_junit(path):
    """Returns (passed, failed, failure names) from a JUnit XML file."""
    root = ET.parse(path).getroot()
    passed, failed, names = 0, 0, []
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            names.append(case.get("classname", "") + "::" + case.get("name", ""))
        else:
            passed += 1
    return passed, failed, names


def summarize(build_dir):
    log = os.path.join(build_dir, "meson-logs", "testlog.json")
    if not os.path.exists(log):
        return 0, 1, [f"{build_dir}: no test log (meson test did not run)"]
    passed, failed, failures = 0, 0, []
    with open(log) as f:
        for line in f:
            entry = json.loads(line)
            # Meson names a test "project:suite / name" when suites are
            # set; the XML uses the bare name.
            name = entry["name"].rsplit(" / ", 1)[-1]
            result = entry["result"]
            ok = result in ("OK", "EXPECTEDFAIL", "SKIP")
            xml_path = os.path.join(build_dir, "test-results", name + ".xml")
            if os.path.exists(xml_path):
                try:
                    p, fl, names = count_junit(xml_path)
                except ET.ParseError as e:
                    p, fl, names = 0, 1, [f"{name}: unreadable JUnit XML ({e})"]
                passed += p
                failed += fl
                failures += [f"{name}: {n}" for n in names]
                if not ok and fl == 0:
                    failed += 1
                    failures.append(f"{name}: process ended with {result} (return code {entry.get('returncode')})")
            elif result == "SKIP":
                continue
            elif ok:
                passed += 1
            else:
                failed += 1
                failures.append(f"{name}: {result} (return code {entry.get('returncode')})")
    return passed, failed, failures


def main(argv):
    script_options.handle(argv, __doc__)
    if len(argv) < 2:
        print("usage: test_summary.py BUILD_DIR [BUILD_DIR...]", file=sys.stderr)
        return 2
    total_passed, total_failed, all_failures = 0, 0, []
    for build_dir in argv[1:]:
        p, f, names = summarize(build_dir)
        total_passed += p
        total_failed += f
        all_failures += names
    for n in all_failures:
        print("FAILED " + n)
    print(f"{total_passed} passed, {total_failed} failed")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
