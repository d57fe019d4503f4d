#!/usr/bin/python3
"""Fails naming every Catch2 test case whose name its ctest test cannot carry to Catch2.

Each TEST_CASE is a ctest test that runs its executable with the name as the test spec
(catch_discover_tests in tests/CMakeLists.txt). `--warn NoTests` there turns a spec that matches
nothing into a failure; this check catches the names that would break the spec before they run,
and the one case that flag cannot see: a leading `~` makes the spec an exclusion, so every case
but the named one runs and ctest reports Passed.
"""
import pathlib
import re
import sys

CASE = re.compile(r'\b(?:TEST_CASE|SCENARIO|TEST_CASE_METHOD\s*\(\s*\w+\s*,)\s*\(?\s*"((?:[^"\\]|\\.)*)"')


def problem(name):
    if ";" in name:
        return "';' splits it into two ctest tests (a CMake list), each matching nothing"
    if "\\" in name:
        return "'\\' is Catch2's escape in a test spec"
    if name.count("[") != name.count("]"):
        return "an unbalanced '[' or ']' merges it with the following names (a CMake list)"
    if name.startswith("~") or name.startswith("exclude:"):
        return "a leading '~' or 'exclude:' makes the spec an exclusion: every other case would run"
    if name.startswith("#"):
        return "a leading '#' makes the spec a file tag"
    return None


def main(root):
    bad = []
    for path in sorted(pathlib.Path(root).rglob("*.cpp")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in CASE.finditer(text):
            name = re.sub(r"\\(.)", r"\1", m.group(1))
            why = problem(name)
            if why:
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{path}:{line}: TEST_CASE(\"{name}\"): {why}")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
