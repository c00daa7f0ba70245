#!/usr/bin/env python3
"""Prints each failed test of nextest's JUnit reports (the paths given) with its panic message,
without the backtrace and the test harness's own lines, so that the end of a long log says why
every test failed. Prints nothing for a report that does not exist (its lane did not get to
run nextest) and exits 0: the exit status of the run is scripts/test's."""
import sys
import xml.etree.ElementTree as ET

SHOWN = 40  # lines of a failure's output, from its end


def useful(text):
    lines = []
    for line in text.splitlines():
        if line.strip() in ("stack backtrace:",) or line.startswith("note: run with"):
            break
        lines.append(line)
    return [l for l in lines if l.strip()][-SHOWN:]


def main(paths):
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
            print(f"\n* {case.get('classname')} {case.get('name')}: {failure.get('message') or failure.get('type') or 'failed'}")
            err = case.find("system-err")
            out = case.find("system-out")
            text = (err.text if err is not None and err.text else "") or (
                out.text if out is not None and out.text else ""
            ) or (failure.text or "")
            for line in useful(text):
                print(f"    {line}")


if __name__ == "__main__":
    main(sys.argv[1:])
