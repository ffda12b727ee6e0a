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

The copy is built once (`swift build --build-tests`), then each plant is applied, the changed
module built again, its tests run and the file put back. Each plant ends as one of: caught,
MISSED (a missing test, to be written), no longer applies (its `find` is not in the file once),
does not build.
"""
import os
import shutil
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


def main():
    folder = os.path.join(ROOT, "Tests", "plants")
    names = sys.argv[1:] or sorted(name[:-6] for name in os.listdir(folder) if name.endswith(".plant"))
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
    caught = sum(1 for _, outcome, _ in results if outcome == "caught")
    print(f"\n{caught} of {len(results)} plants caught (log: {log})")
    for name, outcome, why in results:
        print(f"  {outcome:18} {name}: {why}")
    sys.exit(0 if caught == len(results) else 1)


if __name__ == "__main__":
    main()
