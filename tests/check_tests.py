#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when ctest would run, or ran, fewer tests than the build tree defines.

  check_tests.py BUILD [--junit FILE] [-- CTEST_ARGS...]

Before the run: every gtest executable and every named test of BUILD/tests/test_manifest.txt
(written by tests/CMakeLists.txt) must appear in `ctest --show-only=json-v1`, at least one test
per executable, and no `*_NOT_BUILT` placeholder. With --junit (ctest --output-junit of the
run): the run must hold exactly as many test cases as ctest lists with the same arguments (e.g. -LE gpu;
options that do not select tests, such as -j, change nothing), so that no test silently drops
out. Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def listed(build, selection):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1", *selection],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out).get("tests", [])


def main():
    # Everything after "--" goes to ctest as is (argparse cannot take it after an option).
    argv = sys.argv[1:]
    selection = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--junit")
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.selection = selection
    manifest_path = os.path.join(args.build, "tests", "test_manifest.txt")
    errors = []
    if not os.path.exists(manifest_path):
        print(f"check_tests: {manifest_path} is missing: the build defines no tests "
              "(configured with GCOMPUTE_BUILD_TESTS=OFF?)", file=sys.stderr)
        return 1
    executables, names = [], []
    for line in open(manifest_path):
        kind, _, value = line.rstrip("\n").partition(" ")
        (executables if kind == "executable" else names).append(value)

    tests = listed(args.build, [])
    if not tests:
        errors.append("ctest lists no tests")
    by_name = {t["name"] for t in tests}
    commands = {}
    for t in tests:
        if t.get("command"):
            commands.setdefault(os.path.realpath(t["command"][0]), []).append(t["name"])
        if t["name"].endswith("_NOT_BUILT"):
            errors.append(f"{t['name']}: its executable was not built, so its tests are unknown")
    for exe in executables:
        if not commands.get(os.path.realpath(exe)):
            errors.append(f"{exe}: no tests discovered")
    for name in names:
        if name not in by_name:
            errors.append(f"test {name} is defined but ctest does not list it")

    selected = listed(args.build, args.selection) if args.selection else tests
    if args.junit:
        root = ET.parse(args.junit).getroot()
        ran = len(root.findall(".//testcase"))
        if ran != len(selected):
            errors.append(f"ctest ran {ran} tests but lists {len(selected)} for this selection")
    if errors:
        for e in errors:
            print(f"check_tests: {e}", file=sys.stderr)
        return 1
    what = f"ran all {len(selected)}" if args.junit else f"{len(selected)} selected"
    print(f"check_tests: {len(tests)} tests defined ({len(executables)} gtest executables, "
          f"{len(names)} named tests); {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
