#!/usr/bin/env python3
"""Plants: one mistake a reviewer would fear, put into a scratch copy of the sources, and the
tests named for it run against it; each plant must be caught (its tests fail).

A plant is a file in Tests/plants/ (NAME.plant):

    why: what the mistake is, in a line
    file: Sources/…/File.swift
    tests: a `swift test --filter` pattern (the tests that must catch it)
    --- find
    the exact lines as they are in the file (once)
    --- replace
    the lines with the mistake

Usage (run before a release; not in CI's time budget):

    scripts/plants.sh [NAME …]        # every plant, or the ones named

Each run writes its outcomes into docs/PLANTS.md (a row per plant: the outcome, the tests that
caught it, the commit and date of the run); plants not run keep their row, and rows of plants that
no longer exist are dropped.

The copy is built once (`swift build --build-tests`), then each plant is applied, the changed
module built again, its tests run and the file put back. Each plant ends as one of: caught,
MISSED (a missing test, to be written), no longer applies (its `find` is not in the file once),
does not build.
"""
import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_plant(path):
    header, sections, current = {}, {}, None
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("--- "):
            current = line[4:].strip()
            sections[current] = []
        elif current:
            sections[current].append(line)
        elif ":" in line:
            key, _, value = line.partition(":")
            header[key.strip()] = value.strip()
    find = "\n".join(sections.get("find", [])).rstrip("\n")
    replace = "\n".join(sections.get("replace", [])).rstrip("\n")
    return header, find, replace


def run(command, cwd, log):
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("$ " + " ".join(command) + "\n")
        handle.flush()
        return subprocess.run(command, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT).returncode


RECORD = os.path.join(ROOT, "docs", "PLANTS.md")
RECORD_HEAD = """# Plants

Each plant is a mistake a reviewer would fear, put into a scratch copy of the sources; the tests
named for it must fail. A missed plant is a missing test, to be written. `scripts/plants.sh`
(every plant) or `scripts/plants.sh NAME …` (the ones named) writes this table; see
`Tests/plants/` for each plant's lines and `scripts/plants.py` for how a plant is run.

"""


def read_record():
    """The record's rows, by plant name: [outcome, tests, commit, date]."""
    rows = {}
    if not os.path.exists(RECORD):
        return rows
    for line in open(RECORD, encoding="utf-8"):
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) == 6 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[2:]
    return rows


def write_record(names_all, rows, whys):
    caught = sum(1 for name in names_all if rows.get(name, [""])[0] == "caught")
    lines = [RECORD_HEAD, f"{caught} of {len(names_all)} plants caught.\n\n",
             "| plant | the mistake | outcome | tests that must catch it | commit | run |\n",
             "|---|---|---|---|---|---|\n"]
    for name in names_all:
        outcome, tests, commit, date = rows.get(name, ["not run", "", "", ""])
        lines.append(f"| `{name}` | {whys[name]} | {outcome} | {tests} | {commit} | {date} |\n")
    open(RECORD, "w", encoding="utf-8").write("".join(lines))


def main():
    folder = os.path.join(ROOT, "Tests", "plants")
    every = sorted(name[:-6] for name in os.listdir(folder) if name.endswith(".plant"))
    names = sys.argv[1:] or every
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if subprocess.run(["git", "status", "--porcelain", "--", "Sources", "Tests", "Package.swift"], cwd=ROOT,
                      capture_output=True, text=True).stdout.strip():
        commit += " (uncommitted changes)"
    today = datetime.date.today().isoformat()
    scratch = os.environ.get("WORKER_PLANTS_DIR", "/tmp/worker-plants")
    copy = os.path.join(scratch, "src")
    log = os.path.join(scratch, "plants.log")
    os.makedirs(scratch, exist_ok=True)
    open(log, "w").close()
    # The sources as committed, in a copy of their own (its build folder kept between runs).
    subprocess.run(["rsync", "-a", "--delete", "--exclude", ".build*", "--exclude", ".git", ROOT + "/", copy + "/"], check=True)
    if run(["swift", "build", "--build-tests"], copy, log) != 0:
        raise SystemExit(f"the copy does not build as it is: {log}")
    results = []
    for name in names:
        header, find, replace = read_plant(os.path.join(folder, name + ".plant"))
        target = os.path.join(copy, header["file"])
        original = open(target, encoding="utf-8").read()
        if not find or original.count(find) != 1:
            results.append((name, "no longer applies", header.get("why", "")))
            continue
        try:
            open(target, "w", encoding="utf-8").write(original.replace(find, replace))
            if run(["swift", "build", "--build-tests"], copy, log) != 0:
                outcome = "does not build"
            else:
                failed = run(["swift", "test", "--skip-build", "--filter", header["tests"]], copy, log) != 0
                outcome = "caught" if failed else "MISSED"
        finally:
            open(target, "w", encoding="utf-8").write(original)
        results.append((name, outcome, header.get("why", "")))
        print(f"{name}: {outcome}", flush=True)
    run(["swift", "build", "--build-tests"], copy, log)
    rows = read_record()
    headers = {name: read_plant(os.path.join(folder, name + ".plant"))[0] for name in every}
    for name, outcome, _ in results:
        rows[name] = [outcome, "`" + headers[name].get("tests", "").replace("|", "\\|") + "`", commit, today]
    write_record(every, rows, {name: header.get("why", "").replace("|", "\\|") for name, header in headers.items()})
    caught = sum(1 for _, outcome, _ in results if outcome == "caught")
    print(f"\n{caught} of {len(results)} plants caught (log: {log})")
    for name, outcome, why in results:
        print(f"  {outcome:18} {name}: {why}")
    sys.exit(0 if caught == len(results) else 1)


if __name__ == "__main__":
    main()
