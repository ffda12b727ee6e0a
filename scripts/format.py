#!/usr/bin/env python3
"""Formats the Swift sources (Package.swift, Sources/, Tests/) with `swift format` and the
repository's .swift-format, and carries every plant (Tests/plants/) across: its `find` and
`replace` are rewritten to the formatted text, so that each plant still puts the same mistake
into the same place.

    scripts/format.py           # format in place, plants carried
    scripts/format.py --check   # what CI runs: `swift format lint --strict`, nothing written

A plant that cannot be carried (its `find` not once in its file before, or the formatted
mistake not a change of one place) is named, and the run exits 1 with the sources formatted.
"""
import difflib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plants import ROOT, read_plant  # noqa: E402

PATHS = ["Package.swift", "Sources", "Tests"]
CONFIG = os.path.join(ROOT, ".swift-format")


def formatted(text, name):
    """`text` as `swift format` writes it (the file named `name`)."""
    return subprocess.run(["swift", "format", "--configuration", CONFIG, "--assume-filename", name, "-"],
                          input=text, capture_output=True, text=True, check=True, cwd=ROOT).stdout


def carried(before, after):
    """The shortest find/replace pair that turns `before` into `after`, found once in `before`."""
    old, new = before.split("\n"), after.split("\n")
    codes = [code for code in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if code[0] != "equal"]
    if not codes:
        return None
    start, end, new_start, new_end = codes[0][1], codes[-1][2], codes[0][3], codes[-1][4]
    while True:
        find = "\n".join(old[start:end])
        if find and before.count(find) == 1:
            replace = "\n".join(new[new_start:new_end])
            if before.replace(find, replace, 1) == after:
                return find, replace
        if start == 0 and end == len(old):
            return None
        # More context, a line each side, until the place is named once.
        if start > 0:
            start, new_start = start - 1, new_start - 1
        if end < len(old):
            end, new_end = end + 1, new_end + 1


def main():
    if "--check" in sys.argv[1:]:
        sys.exit(subprocess.run(["swift", "format", "lint", "--strict", "--configuration", CONFIG, "-r", *PATHS],
                                cwd=ROOT).returncode)
    plants_dir = os.path.join(ROOT, "Tests", "plants")
    plants = []
    problems = []
    for name in sorted(os.listdir(plants_dir)):
        if not name.endswith(".plant"):
            continue
        path = os.path.join(plants_dir, name)
        header, find, replace = read_plant(path)
        if not header["file"].endswith(".swift"):
            continue  # the formatter does not touch it, so the plant stays as it is
        source = open(os.path.join(ROOT, header["file"]), encoding="utf-8").read()
        if source.count(find) != 1:
            problems.append(f"{name}: its find is not once in {header['file']}")
            continue
        plants.append((path, header["file"], source.replace(find, replace, 1)))
    subprocess.run(["swift", "format", "--in-place", "--configuration", CONFIG, "-r", *PATHS], cwd=ROOT, check=True)
    for path, file, planted in plants:
        source = open(os.path.join(ROOT, file), encoding="utf-8").read()
        pair = carried(source, formatted(planted, file))
        if pair is None:
            problems.append(f"{os.path.basename(path)}: the formatted mistake is not one change of {file}")
            continue
        text = open(path, encoding="utf-8").read()
        head = text[:text.index("--- find\n")]
        with open(path, "w", encoding="utf-8") as out:
            out.write(f"{head}--- find\n{pair[0]}\n--- replace\n{pair[1]}\n")
    for problem in problems:
        print(problem, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
