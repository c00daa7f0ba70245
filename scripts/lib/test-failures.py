#!/usr/bin/env python3
"""Prints each failed test of nextest's JUnit reports (the paths given) with its panic message,
without the backtrace and the test harness's own lines, so that the end of a long log says why
every test failed. A CI log is cut to its last lines, so the failures share a budget of lines:
each shows the start of its panic message, the lines of it that name an error, and its end.
Prints nothing for a report that does not exist (its lane did not get to run nextest) and exits
0: the exit status of the run is scripts/test's."""
import re
import sys
import xml.etree.ElementTree as ET

BUDGET = 60  # lines for all failures together
MOST = 24  # lines for one failure
EDGE = 3  # lines kept from the start and from the end of a message
TELLING = re.compile(r"error|fail|panicked|refused|timed out|not ready|no space", re.I)


def panic_message(text):
    """The lines from the first panic to the backtrace (the whole text when nothing panicked)."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if "panicked at" in l), 0)
    kept = []
    for line in lines[start:]:
        if line.strip() == "stack backtrace:" or line.startswith("note: run with"):
            break
        if line.strip():
            kept.append(line)
    return kept


def shortened(lines, most):
    if len(lines) <= most:
        return lines
    chosen = set(range(EDGE)) | set(range(len(lines) - EDGE, len(lines)))
    for i, line in enumerate(lines):
        if len(chosen) >= most:
            break
        if TELLING.search(line):
            chosen.add(i)
    out, last = [], -1
    for i in sorted(chosen):
        if i != last + 1:
            out.append("[…]")
        out.append(lines[i])
        last = i
    return out


def failures(paths):
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as why:
            print(f"{path}: no report ({why})")
            continue
        for case in root.iter("testcase"):
            failure = case.find("failure")
            if failure is None:
                failure = case.find("error")
            if failure is None:
                continue
            err = case.find("system-err")
            out = case.find("system-out")
            text = (err.text if err is not None and err.text else "") or (
                out.text if out is not None and out.text else ""
            ) or (failure.text or "")
            yield f"{case.get('classname')} {case.get('name')}", panic_message(text)


def main(paths):
    found = list(failures(paths))
    if not found:
        return
    print(f"{len(found)} failed:")
    for name, _ in found:
        print(f"  {name}")
    each = max(EDGE * 2 + 2, min(MOST, BUDGET // len(found)))
    # The shortest first: a long message cut by the log's excerpt costs the least.
    for name, lines in sorted(found, key=lambda f: len(f[1])):
        print(f"\n* {name}")
        for line in shortened(lines, each):
            print(f"    {line}")


if __name__ == "__main__":
    main(sys.argv[1:])
